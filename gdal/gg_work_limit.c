/*
 * gg_work_limit.c -- the work estimate against GG_WORK_LIMIT
 * (gg_work_limit.h).
 *
 * MIT licence.
 */
#include "gg_work_limit.h"

#include "cpl_conv.h"
#include "cpl_string.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* "1.5 TiB" */
static const char *size_text(double b, char *buf, size_t len)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (b >= 1024.0 && u < 6) {
        b /= 1024.0;
        u++;
    }
    snprintf(buf, len, u ? "%.3g %s" : "%.0f %s", b, units[u]);
    return buf;
}

/* The limit in bytes; HUGE_VAL: none; -1: not a size. */
static double limit_bytes(const char *s)
{
    if (!s || !*s)
        return GG_WORK_LIMIT_DEFAULT;
    if (EQUAL(s, "none") || EQUAL(s, "no") || EQUAL(s, "off"))
        return HUGE_VAL;
    char *end;
    const double v = strtod(s, &end);
    if (end == s || !(v >= 0) || !isfinite(v))
        return -1;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; break;
    case 'm': case 'M': mul = 1024.0 * 1024; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
    case 'p': case 'P': mul = 1024.0 * 1024 * 1024 * 1024 * 1024; break;
    case 0: break;
    default: return -1;
    }
    if (*end && end[1] && !EQUAL(end + 1, "B") && !EQUAL(end + 1, "iB"))
        return -1;
    return v * mul;
}

int gg_work_limit_check(const char *what, double read_bytes, double write_bytes, char *err,
                        size_t errlen)
{
    const char *s = CPLGetConfigOption("GG_WORK_LIMIT", NULL);
    const double limit = limit_bytes(s);
    if (limit < 0) {
        snprintf(err, errlen, "GG_WORK_LIMIT '%s' is not a size (e.g. 512G, 2T) or none", s);
        return 1;
    }
    if (read_bytes + write_bytes <= limit)
        return 0;
    char r[32], w[32], l[32];
    snprintf(err, errlen,
             "%s would read %s and write %s, past the work limit of %s (GG_WORK_LIMIT); "
             "--config GG_WORK_LIMIT none (or a larger size) runs it",
             what, size_text(read_bytes, r, sizeof r), size_text(write_bytes, w, sizeof w),
             size_text(limit, l, sizeof l));
    return 1;
}
