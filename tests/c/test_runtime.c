/* test_runtime.c -- contexts, device selection, memory, FFT plans, the
 * block planner, launch configuration and registered file mappings, on
 * every test device. */
#include "check.h"
#include "reference.h"
#include "gpu/runtime.h"
#include "algorithms/kernel_ids.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void test_device_specs(void)
{
    const char *bad[] = {"tpu", "cuda:abc", "opencl:1:2:3", "cpu:0", "cuda:-1", ":", "cuda:"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gg_context *c = (gg_context *)1;
        char err[512] = "";
        gg_status s = gg_context_create(bad[i], &c, err, sizeof err);
        CHECK(s == GG_ERR_ARGUMENT, "'%s' gave %d", bad[i], s);
        CHECK(c == NULL, "'%s' left a context", bad[i]);
        CHECK(strstr(err, "unknown device") != NULL, "'%s': message '%s'", bad[i], err);
    }
    /* auto always opens something; a CPU fallback says so in one line */
    gg_context *c = NULL;
    char err[512] = "";
    CHECK(gg_context_create("auto", &c, err, sizeof err) == GG_OK, "auto: %s", err);
    if (c) {
        const char *b = gg_context_backend(c);
        CHECK(!strcmp(b, "cpu") || !strcmp(b, "cuda") || !strcmp(b, "opencl"), "backend %s", b);
        if (!strcmp(b, "cpu"))
            CHECK(strstr(gg_context_notice(c), "using the CPU") && !strchr(gg_context_notice(c), '\n'),
                  "notice '%s'", gg_context_notice(c));
        gg_context_destroy(c);
    }
    /* GG_DEVICE is the default when no device is named */
    setenv("GG_DEVICE", "cpu", 1);
    CHECK(gg_context_create(NULL, &c, err, sizeof err) == GG_OK, "GG_DEVICE=cpu: %s", err);
    if (c) {
        CHECK(!strcmp(gg_context_backend(c), "cpu"), "GG_DEVICE ignored");
        gg_context_destroy(c);
    }
    unsetenv("GG_DEVICE");
    char list[4096];
    CHECK(gg_list_devices(list, sizeof list) == GG_OK && !strncmp(list, "cpu ", 4), "list: %s", list);
}

static void test_memory(gg_context *ctx, const char *dev)
{
    size_t f = 0, t = 0;
    CHECK(gg_context_memory(ctx, &f, &t) == GG_OK && f > 0 && f <= t, "%s: free %zu total %zu", dev, f, t);
    enum { N = 1000 };
    float src[N], back[N];
    for (int i = 0; i < N; i++)
        src[i] = (float)urand(-5, 5);
    gg_buffer *b = NULL;
    CHECK(gg_buffer_alloc(ctx, sizeof src, &b) == GG_OK, "%s: alloc", dev);
    if (!b)
        return;
    CHECK(gg_buffer_write(ctx, b, 0, src, sizeof src) == GG_OK, "%s: write", dev);
    CHECK(gg_buffer_read(ctx, b, 0, back, sizeof back) == GG_OK, "%s: read", dev);
    CHECK(!memcmp(src, back, sizeof src), "%s: round trip differs", dev);
    /* partial read at an offset */
    CHECK(gg_buffer_read(ctx, b, 40, back, 80) == GG_OK && !memcmp(back, src + 10, 80), "%s: offset read", dev);
    CHECK(gg_buffer_write(ctx, b, 8, src, sizeof src) == GG_ERR_ARGUMENT, "%s: overflowing write accepted", dev);
    /* device-to-device copy and fill through the backend table */
    gg_buffer *c = NULL;
    CHECK(gg_buffer_alloc(ctx, sizeof src, &c) == GG_OK, "%s: alloc 2", dev);
    if (c) {
        const gg_backend *vt = gg_rt_vt(ctx);
        CHECK(vt->copy(gg_rt_dev(ctx), gg_rt_mem(c), 0, gg_rt_mem(b), 0, sizeof src) == 0, "%s: copy", dev);
        CHECK(vt->fill32(gg_rt_dev(ctx), gg_rt_mem(c), 400, 0x3f800000u, 400) == 0, "%s: fill", dev);
        CHECK(gg_rt_finish(ctx) == GG_OK, "%s: finish", dev);
        CHECK(gg_buffer_read(ctx, c, 0, back, sizeof back) == GG_OK, "%s: read copy", dev);
        int ok = 1;
        for (int i = 0; i < N; i++)
            ok &= back[i] == ((i >= 100 && i < 200) ? 1.0f : src[i]);
        CHECK(ok, "%s: copy/fill contents wrong", dev);
        gg_buffer_free(ctx, c);
    }
    gg_buffer_free(ctx, b);
}

/* A pitched 2-D round trip larger than the CUDA backend's pinned staging
 * (4 slots of 8 MiB), so staged transfers reuse their slots; the gaps
 * between rows on the device must stay untouched. */
static void test_large_pitched_copy(gg_context *ctx, const char *dev)
{
    const size_t rows = 3000, row = 12000, hpitch = 12288, dpitch = 12032;
    unsigned char *h = malloc(rows * hpitch), *back = malloc(rows * hpitch);
    gg_buffer *b = NULL;
    if (!h || !back || gg_buffer_alloc(ctx, rows * dpitch, &b) != GG_OK) {
        CHECK(0, "%s: cannot allocate the large copy test", dev);
        free(h);
        free(back);
        return;
    }
    for (size_t i = 0; i < rows * hpitch; i++)
        h[i] = (unsigned char)(urand(0, 256));
    const gg_backend *vt = gg_rt_vt(ctx);
    CHECK(vt->fill32(gg_rt_dev(ctx), gg_rt_mem(b), 0, 0xA5A5A5A5u, rows * dpitch) == 0, "%s: fill", dev);
    CHECK(vt->write2d(gg_rt_dev(ctx), gg_rt_mem(b), 0, dpitch, h, hpitch, row, rows) == 0,
          "%s: large write2d: %s", dev, gg_rt_dev(ctx)->err);
    memset(back, 0, rows * hpitch);
    CHECK(vt->read2d(gg_rt_dev(ctx), gg_rt_mem(b), 0, dpitch, back, hpitch, row, rows) == 0,
          "%s: large read2d: %s", dev, gg_rt_dev(ctx)->err);
    size_t bad = 0;
    for (size_t r = 0; r < rows; r++)
        bad += memcmp(h + r * hpitch, back + r * hpitch, row) != 0;
    CHECK(bad == 0, "%s: %zu rows differ after a large pitched round trip", dev, bad);
    /* the device gap after each row still holds the fill pattern */
    unsigned char gap[32];
    CHECK(gg_buffer_read(ctx, b, 1234 * dpitch + row, gap, sizeof gap) == GG_OK, "%s: gap read", dev);
    int gap_ok = 1;
    for (size_t i = 0; i < sizeof gap; i++)
        gap_ok &= gap[i] == 0xA5;
    CHECK(gap_ok, "%s: write2d wrote between rows", dev);
    gg_buffer_free(ctx, b);
    free(h);
    free(back);
}

static void test_fft(gg_context *ctx, const char *dev)
{
    const struct { int rank, n0, n1, batch; } shapes[] = {
        {1, 64, 1, 3}, {1, 100, 1, 2}, {1, 7, 1, 5}, {2, 48, 40, 2}, {2, 16, 27, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int n[2] = {shapes[s].n0, shapes[s].n1};
        const size_t cnt = (size_t)n[0] * n[1] * shapes[s].batch;
        float *x = malloc(cnt * 8), *y = malloc(cnt * 8);
        double *ref = malloc(cnt * 16);
        for (size_t i = 0; i < 2 * cnt; i++)
            x[i] = (float)urand(-1, 1);
        gg_buffer *b = NULL;
        gg_status st = gg_buffer_alloc(ctx, cnt * 8, &b);
        for (int inverse = 0; inverse < 2 && st == GG_OK; inverse++) {
            /* twice: the second call reuses the cached plan */
            for (int rep = 0; rep < 2; rep++) {
                st = gg_buffer_write(ctx, b, 0, x, cnt * 8);
                if (st == GG_OK)
                    st = gg_fft(ctx, b, shapes[s].rank, n, shapes[s].batch, inverse);
                if (st == GG_OK)
                    st = gg_buffer_read(ctx, b, 0, y, cnt * 8);
                CHECK(st == GG_OK, "%s: fft %s", dev, gg_context_last_error(ctx));
                ref_dft(x, shapes[s].rank, n, shapes[s].batch, inverse, ref);
                size_t mm;
                const double e = ref_rel_l2(y, ref, 2 * cnt, NAN, &mm);
                CHECK(e < 1e-5 && mm == 0, "%s: FFT rank %d %dx%d batch %d inverse %d: rel err %.3g",
                      dev, shapes[s].rank, n[0], n[1], shapes[s].batch, inverse, e);
            }
        }
        gg_buffer_free(ctx, b);
        free(x);
        free(y);
        free(ref);
    }
    /* bad shapes */
    gg_buffer *b = NULL;
    if (gg_buffer_alloc(ctx, 64, &b) == GG_OK) {
        const int n[2] = {64, 64};
        CHECK(gg_fft(ctx, b, 2, n, 1, 0) == GG_ERR_ARGUMENT, "%s: FFT larger than buffer accepted", dev);
        CHECK(gg_fft(ctx, b, 3, n, 1, 0) == GG_ERR_ARGUMENT, "%s: rank 3 accepted", dev);
        gg_buffer_free(ctx, b);
    }
}

static void test_planner(const char *dev)
{
    /* a forced 64 MB device budget is what the planner sees */
    setenv("GG_DEVICE_MEMORY", "64MB", 1);
    gg_context *ctx = NULL;
    char err[512];
    CHECK(gg_context_create(dev, &ctx, err, sizeof err) == GG_OK, "%s: %s", dev, err);
    unsetenv("GG_DEVICE_MEMORY");
    if (!ctx)
        return;
    size_t f, t;
    CHECK(gg_context_memory(ctx, &f, &t) == GG_OK && t <= (64u << 20), "%s: cap ignored (%zu)", dev, t);
    int rows = 0;
    CHECK(gg_plan_rows(ctx, 8192, 100000, 12.0, 0, &rows) == GG_OK, "%s: plan", dev);
    CHECK(rows >= 1 && (double)rows * 8192 * 12.0 <= 0.5 * (double)f + 1, "%s: %d rows exceed budget", dev, rows);
    int rows_h = 0;
    CHECK(gg_plan_rows(ctx, 8192, 100000, 12.0, 10, &rows_h) == GG_OK && rows_h == rows - 20,
          "%s: halo rows %d vs %d", dev, rows_h, rows);
    CHECK(gg_plan_rows(ctx, 100, 50, 4.0, 0, &rows) == GG_OK && rows == 50, "%s: small image %d", dev, rows);
    CHECK(gg_plan_rows(ctx, 1 << 30, 10, 1000.0, 0, &rows) == GG_ERR_NOMEM, "%s: impossible plan accepted", dev);
    gg_context_destroy(ctx);
}

static void test_launch_info(gg_context *ctx, const char *dev)
{
    for (int k = 0; k < GG_K_COUNT; k++) {
        int bx = 0, by = 0;
        double occ = -1;
        CHECK(gg_rt_vt(ctx)->launch_info(gg_rt_dev(ctx), k, &bx, &by, &occ) == 0 && bx >= 1 && by >= 1,
              "%s: launch_info kernel %d", dev, k);
        /* occupancy-derived block sizes reach the kernel's maximum
         * theoretical occupancy on CUDA */
        if (!strcmp(gg_context_backend(ctx), "cuda"))
            CHECK(occ > 0.0 && occ <= 1.0, "%s: kernel %d occupancy %.2f", dev, k, occ);
        printf("  %s kernel %d: block %dx%d occupancy %.2f\n", dev, k, bx, by, occ);
    }
}

/* gg_host_register: a file's pages mapped and registered are uploaded
 * from (read-only) and downloaded into (a writable mapping of a file in
 * /dev/shm) where they lie; the files then hold the bytes.  OpenCL cannot
 * register: GG_ERR_UNSUPPORTED naming the backend. */
static void test_host_register(gg_context *ctx, const char *dev)
{
    int dummy = 0;
    CHECK(gg_host_register(ctx, NULL, 8, 0) == GG_ERR_ARGUMENT, "%s: NULL registered", dev);
    CHECK(gg_host_register(ctx, &dummy, 0, 0) == GG_ERR_ARGUMENT, "%s: 0 bytes registered", dev);
    CHECK(gg_host_register(ctx, &dummy, 4, 8) == GG_ERR_ARGUMENT, "%s: flag 8 accepted", dev);
    gg_host_unregister(ctx, NULL); /* nothing */
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    enum { N = 300000 }; /* 1.2 MB: several pages */
    char pa[64], pb[64];
    snprintf(pa, sizeof pa, "%s/gg_reg_a_XXXXXX", dir);
    snprintf(pb, sizeof pb, "%s/gg_reg_b_XXXXXX", dir);
    const int fa = mkstemp(pa), fb = mkstemp(pb);
    float *src = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    gg_buffer *b = NULL;
    if (fa < 0 || fb < 0 || !src || !back || gg_buffer_alloc(ctx, N * sizeof(float), &b) != GG_OK) {
        CHECK(0, "%s: cannot set up the files", dev);
        goto out;
    }
    for (int i = 0; i < N; i++)
        src[i] = (float)urand(-100, 100);
    CHECK(pwrite(fa, src, N * sizeof(float), 0) == (ssize_t)(N * sizeof(float)) &&
              ftruncate(fb, N * sizeof(float)) == 0, "%s: writing the files", dev);
    void *ma = mmap(NULL, N * sizeof(float), PROT_READ, MAP_SHARED, fa, 0);
    void *mb = mmap(NULL, N * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED, fb, 0);
    if (ma == MAP_FAILED || mb == MAP_FAILED) {
        CHECK(0, "%s: mmap", dev);
        goto out;
    }
    const gg_status ra = gg_host_register(ctx, ma, N * sizeof(float), GG_HOST_READ_ONLY);
    if (!strcmp(gg_context_backend(ctx), "opencl")) {
        CHECK(ra == GG_ERR_UNSUPPORTED && strstr(gg_context_last_error(ctx), "opencl"),
              "%s: register gave %d (%s)", dev, ra, gg_context_last_error(ctx));
    } else {
        const gg_status rb = gg_host_register(ctx, mb, N * sizeof(float), 0);
        CHECK(ra == GG_OK && rb == GG_OK, "%s: register %d %d (%s)", dev, ra, rb,
              gg_context_last_error(ctx));
        if (ra == GG_OK && rb == GG_OK) {
            CHECK(gg_buffer_write(ctx, b, 0, ma, N * sizeof(float)) == GG_OK &&
                      gg_buffer_read(ctx, b, 0, mb, N * sizeof(float)) == GG_OK,
                  "%s: copies through the mappings", dev);
        }
        if (ra == GG_OK)
            gg_host_unregister(ctx, ma);
        if (rb == GG_OK)
            gg_host_unregister(ctx, mb);
        CHECK(pread(fb, back, N * sizeof(float), 0) == (ssize_t)(N * sizeof(float)) &&
                  !memcmp(src, back, N * sizeof(float)),
              "%s: the downloaded file differs from the uploaded one", dev);
    }
    munmap(ma, N * sizeof(float));
    munmap(mb, N * sizeof(float));
out:
    if (b)
        gg_buffer_free(ctx, b);
    if (fa >= 0) {
        close(fa);
        unlink(pa);
    }
    if (fb >= 0) {
        close(fb);
        unlink(pb);
    }
    free(src);
    free(back);
}

/* A sibling: the same device, kept by ctx; buffers of each side by side,
 * filled from host memory page-locked through ctx. */
static void test_sibling(gg_context *ctx, const char *dev)
{
    CHECK(gg_context_sibling(NULL, NULL) == GG_ERR_ARGUMENT, "%s: NULL sibling", dev);
    gg_context *sib = NULL, *again = NULL;
    CHECK(gg_context_sibling(ctx, &sib) == GG_OK && sib && sib != ctx, "%s: sibling: %s", dev,
          gg_context_last_error(ctx));
    if (!sib)
        return;
    CHECK(gg_context_sibling(ctx, &again) == GG_OK && again == sib, "%s: a second sibling",
          dev);
    CHECK(!strcmp(gg_context_backend(sib), gg_context_backend(ctx)) &&
              !strcmp(gg_context_device_name(sib), gg_context_device_name(ctx)),
          "%s: sibling on %s", dev, gg_context_device_name(sib));
    enum { N = 1 << 18 };
    float *a = NULL, *back = malloc(2 * N * sizeof(float));
    gg_buffer *ba = NULL, *bb = NULL;
    const gg_status ha = gg_host_alloc(ctx, 2 * N * sizeof(float), (void **)&a);
    if (ha != GG_OK || !back || gg_buffer_alloc(ctx, N * sizeof(float), &ba) != GG_OK ||
        gg_buffer_alloc(sib, N * sizeof(float), &bb) != GG_OK) {
        CHECK(0, "%s: sibling buffers: %s", dev, gg_context_last_error(sib));
        goto out;
    }
    for (int i = 0; i < 2 * N; i++)
        a[i] = (float)urand(-1000, 1000);
    /* interleaved: each context's copies land in its own buffer */
    CHECK(gg_buffer_write(sib, bb, 0, a + N, N * sizeof(float)) == GG_OK &&
              gg_buffer_write(ctx, ba, 0, a, N * sizeof(float)) == GG_OK &&
              gg_buffer_read(sib, bb, 0, back + N, N * sizeof(float)) == GG_OK &&
              gg_buffer_read(ctx, ba, 0, back, N * sizeof(float)) == GG_OK,
          "%s: sibling copies: %s", dev, gg_context_last_error(sib));
    CHECK(!memcmp(a, back, 2 * N * sizeof(float)), "%s: sibling buffers differ", dev);
out:
    gg_buffer_free(sib, bb);
    gg_buffer_free(ctx, ba);
    if (a)
        gg_host_free(ctx, a);
    free(back);
}

int main(void)
{
    test_device_specs();
    char devs[8][32];
    const int nd = test_devices(devs, 8);
    for (int d = 0; d < nd; d++) {
        gg_context *ctx = NULL;
        char err[512];
        CHECK(gg_context_create(devs[d], &ctx, err, sizeof err) == GG_OK, "%s: %s", devs[d], err);
        if (!ctx)
            continue;
        printf("device %s: %s\n", devs[d], gg_context_device_name(ctx));
        test_memory(ctx, devs[d]);
        test_large_pitched_copy(ctx, devs[d]);
        test_fft(ctx, devs[d]);
        test_launch_info(ctx, devs[d]);
        test_host_register(ctx, devs[d]);
        test_sibling(ctx, devs[d]);
        gg_context_destroy(ctx); /* and its sibling */
        test_planner(devs[d]);
    }
    return check_summary("test_runtime");
}
