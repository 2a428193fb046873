/* fuzz_app_options.c -- libFuzzer target for the command-line parsing of
 * every gdal_* utility: gg_app's shared parser (through each utility's
 * spec and parse_flag) and the utilities that parse on their own
 * (gdal_ortho, gdal_xcorr -mode gmtsar, gdal_coreg, gdal_fmcw -simulate).
 * Each utility's main() is compiled into this target under another name
 * (CMakeLists.txt) and runs with gg_app_parse_only set, so it stops once the
 * command line is parsed: no data opened, no device, nothing written.
 *
 * Input: byte 0 picks the utility, the rest is the argv, one argument per
 * line (at most 64).  GDAL's own generic options (--config, --optfile,
 * --debug, --pause, ...) are dropped: they are GDAL's parser, not ours, and
 * change process-wide state. */
#include "gg_app.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOOL(n) int gg_fuzz_main_##n(int argc, char **argv);
TOOL(gdal_multilook) TOOL(gdal_rotate) TOOL(gdal_radnorm) TOOL(gdal_insar) TOOL(gdal_ptsel)
TOOL(gdal_xcorr) TOOL(gdal_coreg) TOOL(gdal_ortho) TOOL(gdal_fmcw)

static const struct {
    const char *name, *prefix; /* prefix: leading arguments that pick a mode */
    int (*main)(int, char **);
} tools[] = {
    {"gdal_multilook", NULL, gg_fuzz_main_gdal_multilook},
    {"gdal_rotate", NULL, gg_fuzz_main_gdal_rotate},
    {"gdal_radnorm", NULL, gg_fuzz_main_gdal_radnorm},
    {"gdal_insar", NULL, gg_fuzz_main_gdal_insar},
    {"gdal_ptsel", NULL, gg_fuzz_main_gdal_ptsel},
    {"gdal_xcorr", NULL, gg_fuzz_main_gdal_xcorr},
    {"gdal_xcorr", "-mode\ngmtsar", gg_fuzz_main_gdal_xcorr},
    {"gdal_coreg", NULL, gg_fuzz_main_gdal_coreg},
    {"gdal_ortho", NULL, gg_fuzz_main_gdal_ortho},
    {"gdal_fmcw", NULL, gg_fuzz_main_gdal_fmcw},
    {"gdal_fmcw", "-simulate", gg_fuzz_main_gdal_fmcw},
};
#define NTOOLS (sizeof tools / sizeof tools[0])
#define MAXARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    gg_app_parse_only = 1;
    /* usage texts go to stdout; errors to stderr (closed by -close_fd_mask) */
    const int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, 1);
        close(fd);
    }
    return 0;
}

static int add(char **args, int n, const char *s, size_t len)
{
    if (n >= MAXARGS)
        return n;
    if (len >= 2 && s[0] == '-' && s[1] == '-' &&
        !(len == 6 && !memcmp(s, "--help", 6)) && !(len == 9 && !memcmp(s, "--version", 9)))
        return n; /* GDAL's generic options: see above */
    args[n] = malloc(len + 1);
    memcpy(args[n], s, len);
    args[n][len] = '\0';
    return n + 1;
}

static int split(char **args, int n, const char *s, size_t len)
{
    size_t a = 0;
    for (size_t i = 0; i <= len; i++)
        if (i == len || s[i] == '\n') {
            if (i > a || i < len) /* keep empty arguments between newlines */
                n = add(args, n, s + a, i - a);
            a = i + 1;
        }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size)
{
    if (size < 1)
        return 0;
    const size_t t = d[0] % NTOOLS;
    /* argv[argc] must be NULL, and the parsers may be handed a copy */
    char *args[MAXARGS + 8] = {0};
    int n = add(args, 0, tools[t].name, strlen(tools[t].name));
    if (tools[t].prefix)
        n = split(args, n, tools[t].prefix, strlen(tools[t].prefix));
    const char *text = (const char *)d + 1;
    size_t len = size - 1;
    if (memchr(text, '\0', len)) /* C strings: stop at a NUL */
        len = strlen(text);
    n = split(args, n, text, len);
    char *copy[MAXARGS + 8];
    memcpy(copy, args, sizeof args); /* a parser may permute argv */
    tools[t].main(n, copy);
    for (int i = 0; i < n; i++)
        free(args[i]);
    return 0;
}
