/* reference.h -- float64 reference implementations of the ops, written
 * from the specification (docs/), independent of the kernels. */
#ifndef GG_TEST_REFERENCE_H
#define GG_TEST_REFERENCE_H
#include <stddef.h>

/* A sample is valid when finite and != nodata (complex: both parts finite,
 * real part != nodata). */
int ref_valid(double v, int has_nodata, double nodata);

/* in: W x H, real (nc = 1) or interleaved complex (nc = 2).
 * mode 0 real mean, 1 intensity, 2 complex mean.  out: (W/lx) x (H/ly) x
 * (mode == 2 ? 2 : 1). */
void ref_multilook(const float *in, int W, int H, int nc, int lx, int ly, int mode,
                   int has_nodata, double nodata, double dst_nodata, double *out);

/* out: Wo x Ho x nc */
void ref_rotate(const float *in, int W, int H, int nc, double angle_deg, double scale, int Wo,
                int Ho, int has_nodata, double nodata, double dst_nodata, double *out);

/* Float output (levels = 0) or quantised levels written as doubles. */
void ref_radnorm(const float *in, int W, int H, int nc, double coef, int levels,
                 int has_nodata, double nodata, double dst_nodata, double *out);

/* Naive double DFT of interleaved complex float data, rank 1 or 2. */
void ref_dft(const float *in, int rank, const int *n, int batch, int inverse, double *out);

/* ||a - b|| / ||b|| over entries where both are valid (not NaN and not
 * nodata); *mask_mismatch counts entries valid in one only. */
double ref_rel_l2(const float *a, const double *b, size_t n, double nodata, size_t *mask_mismatch);

#endif
