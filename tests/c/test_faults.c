/* test_faults.c -- every op under injected device faults (GG_FAULT, gpu/
 * fault.c): an allocation, a kernel launch, a transfer or an FFT failing at
 * its N-th call must give an error status whose message names the injected
 * fault, free everything (the sanitizer build checks leaks) and never
 * crash; a run that never reaches the N-th call must give the fault-free
 * result bit for bit.
 *
 * GG_FAULT is read once per process, so each case runs in a child: this
 * program re-executes itself as "test_faults --child DEVICE" with GG_FAULT
 * set.  Ops: the five tile ops and xcorr (the FFT correlation of gdal_xcorr
 * and gdal_coreg).  The child prints one line per op, "<op> ok <checksum>" or
 * "<op> failed", and exits 0; anything else (a wrong message, a crash, a
 * leak report) makes it exit non-zero. */
#define _GNU_SOURCE
#include "check.h"

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#define W 45
#define H 31
#define NSTACK 4

typedef struct {
    const char *name;
    const char *opts[4]; /* key, value pairs */
    int ninputs;         /* rasters (bands of a stack op) */
    gg_type type;
} op_case;

static const op_case CASES[] = {
    {"multilook", {"looks", "2x3"}, 1, GG_FLOAT32},
    {"rotate", {"angle", "30"}, 1, GG_FLOAT32},
    {"radnorm", {"coef", "35"}, 1, GG_FLOAT32},
    {"coherence", {"window", "5x3"}, 2, GG_CFLOAT32},
    {"ptsel", {"window", "5", "offsets", "yes"}, NSTACK, GG_CFLOAT32},
    /* gdal_xcorr's and gdal_coreg's device work: FFT correlation */
    {"xcorr", {"window", "16x16", "search", "4x4"}, 2, GG_CFLOAT32},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

/* Runs one op on deterministic data; 0 ok (checksum in *sum), 1 failed
 * cleanly, 2 failed with a message that does not name the fault. */
static int run_case(gg_context *ctx, const op_case *c, uint64_t *sum, char *why, size_t whylen)
{
    gg_op *op = NULL;
    char err[512];
    int rc = 0;
    float *in = NULL;
    gg_tile *src = NULL, *dst = NULL;
    void **outs = NULL;
    int nout = 0;
    if (gg_op_new(c->name, &op, err, sizeof err) != GG_OK) {
        snprintf(why, whylen, "gg_op_new: %s", err);
        return 2;
    }
    for (int k = 0; k < 4 && c->opts[k]; k += 2)
        gg_op_set(op, c->opts[k], c->opts[k + 1]);
    const int stack = gg_op_is_stack(op);
    gg_raster_info info = {W, H, stack ? c->ninputs : 1, c->type, {0, 1, 0, 0, 0, -1}, 1, 0, 0},
                   out;
    if (gg_op_prepare(op, &info, &out) != GG_OK) {
        snprintf(why, whylen, "prepare: %s", gg_op_last_error(op));
        gg_op_free(op);
        return 2;
    }
    const int comps = c->type == GG_CFLOAT32 ? 2 : 1;
    const size_t plane = (size_t)W * H * comps;
    in = malloc((size_t)c->ninputs * plane * sizeof(float));
    unsigned long long r = 12345;
    for (size_t i = 0; i < (size_t)c->ninputs * plane; i++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        in[i] = 0.5f + (float)(r >> 40) / (float)(1 << 24) * 9.0f;
        if (comps == 2 && (i & 1))
            in[i] -= 5.0f;
    }
    nout = stack ? out.bands : 1;
    src = calloc((size_t)c->ninputs, sizeof *src);
    dst = calloc((size_t)nout, sizeof *dst);
    outs = calloc((size_t)nout, sizeof *outs);
    for (int k = 0; k < c->ninputs; k++)
        src[k] = (gg_tile){in + (size_t)k * plane, c->type, W, H, W, 0, 0};
    for (int b = 0; b < nout; b++) {
        const gg_type t = stack ? gg_op_band_type(op, b) : out.type;
        outs[b] = calloc((size_t)out.width * out.height, gg_type_size(t));
        dst[b] = (gg_tile){outs[b], t, out.width, out.height, (size_t)out.width, 0, 0};
    }
    gg_status s = GG_OK;
    if (stack) {
        s = gg_op_run_stack(ctx, op, src, c->ninputs, dst, nout);
    } else if (c->ninputs == 1) {
        if (gg_op_needs_stats(op)) {
            s = gg_op_accumulate(ctx, op, 0, &src[0]);
            if (s == GG_OK)
                s = gg_op_finish_stats(ctx, op, 0);
        }
        gg_window dw = {0, 0, out.width, out.height}, sw;
        gg_op_source_window(op, &dw, &sw);
        gg_tile sv = {in + ((size_t)sw.y0 * W + sw.x0) * comps, c->type, sw.width, sw.height, W,
                      sw.x0, sw.y0};
        if (s == GG_OK)
            s = gg_op_run(ctx, op, 0, &sv, &dst[0]);
    }
    if (s == GG_OK) {
        uint64_t h = 1469598103934665603ULL;
        for (int b = 0; b < nout; b++)
            h = fnv(h, outs[b], (size_t)out.width * out.height * gg_type_size(dst[b].type));
        *sum = h;
    } else {
        const char *m1 = gg_op_last_error(op), *m2 = gg_context_last_error(ctx);
        const int named = (m1 && strstr(m1, "injected fault")) || (m2 && strstr(m2, "injected fault"));
        rc = named ? 1 : 2;
        if (!named)
            snprintf(why, whylen, "status %d, messages '%s' / '%s'", (int)s, m1 ? m1 : "",
                     m2 ? m2 : "");
    }
    for (int b = 0; b < nout; b++)
        free(outs[b]);
    free(outs);
    free(dst);
    free(src);
    free(in);
    gg_op_free(op);
    return rc;
}

static int child(const char *device)
{
    gg_context *ctx = NULL;
    char err[512];
    if (gg_context_create(device, &ctx, err, sizeof err) != GG_OK) {
        /* context creation itself allocates: a clean failure is fine */
        printf("context %s\n", strstr(err, "injected fault") ? "failed" : err);
        return strstr(err, "injected fault") ? 0 : 3;
    }
    int bad = 0;
    for (int i = 0; i < NCASES; i++) {
        uint64_t sum = 0;
        char why[1100] = "";
        const int rc = run_case(ctx, &CASES[i], &sum, why, sizeof why);
        if (rc == 0)
            printf("%s ok %016llx\n", CASES[i].name, (unsigned long long)sum);
        else if (rc == 1)
            printf("%s failed\n", CASES[i].name);
        else {
            printf("%s BAD %s\n", CASES[i].name, why);
            bad = 1;
        }
    }
    gg_context_destroy(ctx);
    fflush(stdout);
    return bad ? 4 : 0;
}

/* Runs the child with GG_FAULT=fault (NULL: none); its stdout into out.
 * Returns its exit status, or 128 + signal. */
static int spawn(const char *self, const char *device, const char *fault, char *out, size_t outlen)
{
    int fd[2];
    if (pipe(fd))
        return -1;
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        if (fault)
            setenv("GG_FAULT", fault, 1);
        else
            unsetenv("GG_FAULT");
        execl(self, self, "--child", device, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t k;
    while ((k = read(fd[0], out + n, outlen - 1 - n)) > 0 && n + 1 < outlen)
        n += (size_t)k;
    out[n] = '\0';
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The checksum the child printed for op, or NULL if it did not succeed. */
static const char *sum_of(const char *out, const char *op, char *buf)
{
    char key[64];
    snprintf(key, sizeof key, "%s ok ", op);
    const char *p = strstr(out, key);
    if (!p)
        return NULL;
    snprintf(buf, 17, "%s", p + strlen(key));
    return buf;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child"))
        return child(argv[2]);
    /* the program's real path: the backends are found next to it */
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = '\0';
    char devs[8][32];
    const int nd = test_devices(devs, 8);
    static const char *const kinds[] = {"alloc", "launch", "transfer", "fft"};
    for (int d = 0; d < nd; d++) {
        char ref[4096], got[4096], a[17], b[17];
        int rc = spawn(self, devs[d], NULL, ref, sizeof ref);
        CHECK(rc == 0, "%s: fault-free child exit %d:\n%s", devs[d], rc, ref);
        if (rc != 0)
            continue;
        for (int i = 0; i < NCASES; i++)
            CHECK(sum_of(ref, CASES[i].name, a), "%s: %s fails without faults:\n%s", devs[d],
                  CASES[i].name, ref);
        for (int k = 0; k < (int)(sizeof kinds / sizeof kinds[0]); k++) {
            int failures = 0, reached_end = 0;
            for (int n = 1; n <= 400 && !reached_end; n++) {
                char spec[64];
                snprintf(spec, sizeof spec, "%s:%d", kinds[k], n);
                rc = spawn(self, devs[d], spec, got, sizeof got);
                CHECK(rc == 0, "%s GG_FAULT=%s: child exit %d (crash, leak or bad message):\n%s",
                      devs[d], spec, rc, got);
                reached_end = 1;
                for (int i = 0; i < NCASES; i++) {
                    const char *g = sum_of(got, CASES[i].name, b), *r = sum_of(ref, CASES[i].name, a);
                    if (!g) {
                        failures++;
                        reached_end = 0;
                    } else {
                        CHECK(r && !strcmp(g, r), "%s GG_FAULT=%s: %s succeeded with another result",
                              devs[d], spec, CASES[i].name);
                    }
                }
            }
            CHECK(failures > 0, "%s: no %s fault was ever reached", devs[d], kinds[k]);
            CHECK(reached_end, "%s: %s faults still hit after 400 calls", devs[d], kinds[k]);
            printf("%-8s %-9s faults: %d op runs failed cleanly\n", devs[d], kinds[k], failures);
        }
    }
    return check_summary("test_faults");
}
