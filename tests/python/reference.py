"""Float64 numpy references of the airborne-SAR products of geogpu, written
from the specification (not from the C code), one implementation per product,
and the comparison helpers every test uses.

Conventions
-----------
* Arrays are indexed [row, column] = [y, x]; width W = a.shape[1].
* ``nodata=None`` means the input has no nodata value; a NaN nodata is the
  same as none (NaN is invalid anyway).
* Every reference returns ``(values, invalid)``: ``values`` holds float64
  (or complex128) results with NaN where ``invalid`` is True; the caller
  checks the product's nodata value separately.
"""
import math

import numpy as np

# The tolerances: relative L2 error against these references.
TOL = {"multilook": 1e-5, "radnorm": 1e-5, "rotate": 1e-4}


# ------------------------------------------------------------------ validity

def _has_nodata(nodata):
    return nodata is not None and not math.isnan(nodata)


def valid_mask(a, nodata=None):
    """Valid samples: finite and != nodata; complex: both parts finite and
    the real part != nodata."""
    a = np.asarray(a)
    if np.iscomplexobj(a):
        v = np.isfinite(a.real) & np.isfinite(a.imag)
        if _has_nodata(nodata):
            v &= a.real != nodata
    else:
        v = np.isfinite(a)
        if _has_nodata(nodata):
            v &= a != nodata
    return v


def output_nodata(src_nodata=None, dstnodata=None, byte=False):
    """-dstnodata, else the input's nodata, else NaN (255 for Byte output)."""
    if dstnodata is not None:
        return float(dstnodata)
    if byte:
        return 255.0
    if _has_nodata(src_nodata):
        return float(src_nodata)
    return math.nan


# ----------------------------------------------------------------- multilook

def multilook(a, looks_x, looks_y, nodata=None, complex_mean=False):
    """Mean over the valid samples of each non-overlapping looks_x x looks_y
    block (partial edge blocks dropped).  Real input: mean of the values;
    complex input: mean of |z|^2, or the complex mean with complex_mean."""
    a = np.asarray(a)
    H, W = a.shape
    Ho, Wo = H // looks_y, W // looks_x
    a = a[: Ho * looks_y, : Wo * looks_x]
    v = valid_mask(a, nodata)
    if np.iscomplexobj(a):
        z = a.astype(np.complex128)
        x = z if complex_mean else (z.real ** 2 + z.imag ** 2)
    else:
        x = a.astype(np.float64)
    x = np.where(v, x, 0)
    s = x.reshape(Ho, looks_y, Wo, looks_x).sum(axis=(1, 3))
    n = v.reshape(Ho, looks_y, Wo, looks_x).sum(axis=(1, 3))
    invalid = n == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = s / np.where(invalid, 1, n)
    out = np.where(invalid, np.nan, out)
    return out, invalid


def multilook_geotransform(gt, looks_x, looks_y):
    return (gt[0], gt[1] * looks_x, gt[2] * looks_y, gt[3], gt[4] * looks_x, gt[5] * looks_y)


# -------------------------------------------------------------------- rotate

def rotate_map(W, H, angle, scale, Wo=None, Ho=None):
    """Source coordinates (pixel centre i at coordinate i) sampled by every
    output pixel centre: OpenCV getRotationMatrix2D geometry, inverted."""
    Wo = W if Wo is None else Wo
    Ho = H if Ho is None else Ho
    a = math.radians(angle)
    Y, X = np.mgrid[0:Ho, 0:Wo].astype(np.float64)
    dx = X - (Wo - 1) / 2.0
    dy = Y - (Ho - 1) / 2.0
    sx = (W - 1) / 2.0 + (math.cos(a) * dx - math.sin(a) * dy) / scale
    sy = (H - 1) / 2.0 + (math.sin(a) * dx + math.cos(a) * dy) / scale
    return sx, sy


def _cell(c, n):
    """Clamped coordinate -> (lower index, upper index, fraction)."""
    c = np.clip(c, 0.0, n - 1.0)
    i = np.floor(c).astype(np.int64)
    if n >= 2:
        i = np.minimum(i, n - 2)
        i1 = i + 1
    else:
        i = np.zeros_like(i)
        i1 = i
    return i, i1, c - i


# a fraction within this of 0.5 (but not exactly 0.5), or a sample position
# within _EDGE_EPS of the footprint edge, is decided by rounding: the
# product computes the fraction in float32 after a float64 map, so such
# pixels' validity is not part of what the tests can check honestly.
_TIE_EPS = 1e-6
_EDGE_EPS = 1e-9


def rotate(a, angle, scale=1.0, Wo=None, Ho=None, nodata=None):
    """Inverse-mapped bilinear rotation+scaling with nodata handling.
    Returns (values, invalid, ambiguous): ``ambiguous`` marks the pixels whose
    validity hinges on a rounding-level tie (see _TIE_EPS); usually none."""
    a = np.asarray(a)
    H, W = a.shape
    sx, sy = rotate_map(W, H, angle, scale, Wo, Ho)
    inside = (sx >= -0.5) & (sx <= W - 0.5) & (sy >= -0.5) & (sy <= H - 0.5)
    edge = (
        (np.abs(sx + 0.5) < _EDGE_EPS) | (np.abs(sx - (W - 0.5)) < _EDGE_EPS)
        | (np.abs(sy + 0.5) < _EDGE_EPS) | (np.abs(sy - (H - 0.5)) < _EDGE_EPS)
    )
    ix, ix1, fx = _cell(sx, W)
    iy, iy1, fy = _cell(sy, H)
    v = valid_mask(a, nodata)
    z = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    z = np.where(v, z, 0)
    v00, v01, v10, v11 = v[iy, ix], v[iy, ix1], v[iy1, ix], v[iy1, ix1]
    nx = np.where(fx > 0.5, ix1, ix)  # ties go to the lower index
    ny = np.where(fy > 0.5, iy1, iy)
    nearest = v[ny, nx]
    # near-ties: would the other choice of nearest neighbour change validity?
    tie_x = (np.abs(fx - 0.5) < _TIE_EPS) & (fx != 0.5)
    tie_y = (np.abs(fy - 0.5) < _TIE_EPS) & (fy != 0.5)
    alt_x = v[ny, np.where(fx > 0.5, ix, ix1)]
    alt_y = v[np.where(fy > 0.5, iy, iy1), nx]
    ambiguous = inside & ((tie_x & (alt_x != nearest)) | (tie_y & (alt_y != nearest)))
    ambiguous |= edge
    w00 = np.where(v00, (1 - fx) * (1 - fy), 0.0)
    w01 = np.where(v01, fx * (1 - fy), 0.0)
    w10 = np.where(v10, (1 - fx) * fy, 0.0)
    w11 = np.where(v11, fx * fy, 0.0)
    wsum = w00 + w01 + w10 + w11
    ok = inside & nearest
    with np.errstate(invalid="ignore", divide="ignore"):
        val = (w00 * z[iy, ix] + w01 * z[iy, ix1] + w10 * z[iy1, ix] + w11 * z[iy1, ix1]) / wsum
    val = np.where(ok, val, np.nan)
    return val, ~ok, ambiguous


def rotate_geotransform_check(gt_in, gt_out, W, H, angle, scale, Wo=None, Ho=None):
    """Largest distance (in input pixel sizes) between the ground position of
    each output pixel centre (output geotransform) and the ground position
    (input geotransform) of the input point it samples."""
    sx, sy = rotate_map(W, H, angle, scale, Wo, Ho)
    Ho_, Wo_ = sx.shape
    L, P = np.mgrid[0:Ho_, 0:Wo_].astype(np.float64)
    P, L = P + 0.5, L + 0.5  # GDAL: pixel centre of (P, L) at P+0.5, L+0.5
    gx_out = gt_out[0] + gt_out[1] * P + gt_out[2] * L
    gy_out = gt_out[3] + gt_out[4] * P + gt_out[5] * L
    p, l = sx + 0.5, sy + 0.5
    gx_in = gt_in[0] + gt_in[1] * p + gt_in[2] * l
    gy_in = gt_in[3] + gt_in[4] * p + gt_in[5] * l
    pix = math.hypot(gt_in[1], gt_in[4])
    return float(np.max(np.hypot(gx_out - gx_in, gy_out - gy_in)) / pix)


# ------------------------------------------------------------------- radnorm

def radnorm(a, coef, nodata=None):
    """F = coef * I * M / (R(y) * C(x)) on valid pixels (|z| of complex
    input), R/C/M the row/column/global means over valid pixels.  Invalid
    pixels and R*C <= 0 give nodata."""
    a = np.asarray(a)
    v = valid_mask(a, nodata)
    if np.iscomplexobj(a):
        amp = np.abs(a.astype(np.complex128))
    else:
        amp = a.astype(np.float64)
    x = np.where(v, amp, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        R = x.sum(axis=1) / v.sum(axis=1)
        C = x.sum(axis=0) / v.sum(axis=0)
        M = x.sum() / v.sum()
        d = R[:, None] * C[None, :]
        ok = v & np.isfinite(d) & (d > 0)
        F = coef * amp * M / d
    F = np.where(ok, F, np.nan)
    return F, ~ok


def quantise(F, invalid, levels):
    """Byte levels q = clamp(floor(F + 0.5), 0, levels-1).  Returns (q,
    ambiguous): ``ambiguous`` marks F within a float32 rounding of a
    half-integer boundary, where either neighbouring level is right."""
    Fz = np.where(invalid, 0.0, F)
    q = np.clip(np.floor(Fz + 0.5), 0, levels - 1).astype(np.int64)
    frac = (Fz + 0.5) - np.floor(Fz + 0.5)
    tol = 2e-6 * np.maximum(1.0, np.abs(Fz))  # float32 F: a few ulp
    ambiguous = ~invalid & ((frac < tol) | (frac > 1 - tol)) & (Fz > 0.5 - tol) & (Fz < levels - 0.5 + tol)
    return q, ambiguous


# ---------------------------------------------------------------- comparison

def rel_l2(out, ref, where=None):
    """||out - ref|| / ||ref|| over ``where`` (complex: modulus)."""
    out = np.asarray(out).astype(np.complex128 if np.iscomplexobj(out) else np.float64)
    ref = np.asarray(ref)
    if where is not None:
        out, ref = out[where], ref[where]
    den = np.sqrt(np.sum(np.abs(ref) ** 2))
    assert den > 0, "reference is all zero on the compared pixels: the test data is wrong"
    return float(np.sqrt(np.sum(np.abs(out - ref) ** 2)) / den)


def is_nodata(out, nodata):
    """Pixels of a product array equal to its nodata value (NaN-aware;
    complex: a nodata pixel has both parts equal to nodata)."""
    out = np.asarray(out)
    if np.iscomplexobj(out):
        return is_nodata(out.real, nodata) & is_nodata(out.imag, nodata)
    if math.isnan(nodata):
        return np.isnan(out)
    return out == nodata


def check_product(out, ref, invalid, nodata, tol, ignore=None, what="", min_valid=0.1, min_count=10):
    """Asserts that the nodata mask of ``out`` equals ``invalid`` exactly
    (outside ``ignore``) and that the relative L2 error on the valid pixels is
    within ``tol``.  Returns the measured error."""
    out = np.asarray(out)
    assert out.shape == ref.shape, f"{what}: shape {out.shape}, expected {ref.shape}"
    ignore = np.zeros(ref.shape, bool) if ignore is None else ignore
    got_nd = is_nodata(out, nodata)
    bad = (got_nd != invalid) & ~ignore
    assert not bad.any(), (
        f"{what}: nodata mask differs at {int(bad.sum())} pixels, first (row, col) "
        f"{tuple(int(i) for i in np.argwhere(bad)[0])}: product {out[tuple(np.argwhere(bad)[0])]}, "
        f"reference {ref[tuple(np.argwhere(bad)[0])]}")
    cmp = ~invalid & ~ignore & ~got_nd
    assert cmp.sum() >= max(min_count, min_valid * ref.size), (
        f"{what}: too few valid pixels to compare ({int(cmp.sum())} of {ref.size})")
    assert np.isfinite(out[cmp]).all(), f"{what}: non-finite values on valid pixels"
    err = rel_l2(out, ref, cmp)
    assert err <= tol, f"{what}: relative L2 error {err:.3e} > {tol:g}"
    return err
