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
# InSAR products (the tolerances, largest per-pixel errors, not L2):
# absolute for coherence, interferogram and tau_max, relative for amplitude.
TOL.update({"coherence": 1e-5, "interferogram": 1e-5, "amplitude": 1e-5, "ptsel": 1e-5})


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


# ----------------------------------------------------------------- coherence

def _window_sum(x, hx, hy):
    """Sum of x over the (2hx+1) x (2hy+1) window centred on every pixel,
    clipped to the raster (samples outside count as absent)."""
    H, W = x.shape
    pad = np.zeros((H + 2 * hy, W + 2 * hx), x.dtype)
    pad[hy:hy + H, hx:hx + W] = x
    s = np.zeros_like(x)
    for dy in range(2 * hy + 1):
        for dx in range(2 * hx + 1):
            s += pad[dy:dy + H, dx:dx + W]
    return s


def coherence(s1, s2, window=(5, 5), looks=(1, 1), nodata=None):
    """Interferogram, boxcar coherence and amplitude of a primary s1 and a
    secondary s2 (complex), on the look grid of ``looks`` = (x, y).

    A sample counts when s1 and s2 are both valid.  Output pixel (X, Y) has
    the look block [X*lx, X*lx+lx) x [Y*ly, Y*ly+ly) (partial blocks
    dropped) and the window centre (X*lx + (lx-1)//2, Y*ly + (ly-1)//2);
    the wx x wy window around it is clipped to the raster.
      interferogram = mean over the block of s1*conj(s2)
      coherence     = |sum s1 conj(s2)| / sqrt(sum|s1|^2 sum|s2|^2), <= 1
      amplitude     = sqrt(sqrt(mean|s1|^2 * mean|s2|^2))
    (coherence and amplitude sums over the window).  Returns a dict
    name -> (values, invalid)."""
    s1, s2 = np.asarray(s1), np.asarray(s2)
    H, W = s1.shape
    lx, ly = looks
    hx, hy = window[0] // 2, window[1] // 2
    Ho, Wo = H // ly, W // lx
    v = valid_mask(s1, nodata) & valid_mask(s2, nodata)
    z1 = np.where(v, s1.astype(np.complex128), 0)
    z2 = np.where(v, s2.astype(np.complex128), 0)
    cross = z1 * np.conj(z2)
    p1, p2 = np.abs(z1) ** 2, np.abs(z2) ** 2
    n = v.astype(np.float64)

    def block(x):
        return x[: Ho * ly, : Wo * lx].reshape(Ho, ly, Wo, lx).sum(axis=(1, 3))

    out = {}
    nb = block(n)
    bad = nb == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        ifg = block(cross) / np.where(bad, 1, nb)
    out["interferogram"] = (np.where(bad, np.nan, ifg), bad)

    cy = np.arange(Ho) * ly + (ly - 1) // 2
    cx = np.arange(Wo) * lx + (lx - 1) // 2

    def at_centres(x):
        return _window_sum(x, hx, hy)[np.ix_(cy, cx)]

    S12, P1, P2, N = at_centres(cross), at_centres(p1), at_centres(p2), at_centres(n)
    den = np.sqrt(P1 * P2)
    bad = (N == 0) | (den == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        coh = np.minimum(np.abs(S12) / den, 1.0)
        amp = np.sqrt(np.sqrt((P1 / N) * (P2 / N)))
    out["coherence"] = (np.where(bad, np.nan, coh), bad)
    bad = N == 0
    out["amplitude"] = (np.where(bad, np.nan, amp), bad)
    return out


# --------------------------------------------------------------------- ptsel

def ptsel_offsets(window, mindist=1.0):
    """The arcs of a centre: (dx, dy) with |dx|, |dy| <= window//2, in
    row-major window order, without the centre and without the neighbours
    closer than mindist (dx^2 + dy^2 < mindist^2)."""
    h = window // 2
    return [(dx, dy) for dy in range(-h, h + 1) for dx in range(-h, h + 1)
            if (dx, dy) != (0, 0) and dx * dx + dy * dy >= mindist * mindist]


def ptsel(stack, window=11, mindist=1.0, slc=False, conj=(), nodata=None):
    """PtSel: for every pixel C the largest temporal coherence tau of the
    arcs (C, N) to its neighbours N (ptsel_offsets, inside the raster), by
    the paper's pair sum, O(n^2) per arc:

      u = z/|z| per sample (epochs listed in ``conj``, 1-based, conjugated
      first); a sample that is zero, NaN/Inf or has a real part == nodata
      is left out; a_i = u_C,i conj(u_N,i) over the m epochs valid at both
      ends;
      interferograms (reference last):
        tau = |sum_i a_i + sum_{i<j} a_i conj(a_j)| / (m(m+1)/2), m >= 1
      SLCs (slc=True):
        tau = |sum_{k<l} a_k conj(a_l)| / (m(m-1)/2), m >= 2

    ``stack`` is (n, H, W).  Returns (tau_max, invalid, arcs): tau_max NaN
    where no arc is valid; arcs maps every (dx, dy) to its tau array (NaN
    where that arc is not valid or leaves the raster)."""
    z = np.asarray(stack)
    n, H, W = z.shape
    valid = np.stack([valid_mask(b, nodata) for b in z]) & (z != 0)
    zz = z.astype(np.complex128)
    for b in set(conj):
        zz[b - 1] = np.conj(zz[b - 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(valid, zz / np.abs(zz), 0)
    arcs = {}
    for dx, dy in ptsel_offsets(window, mindist):
        uN = np.zeros_like(u)
        vN = np.zeros_like(valid)
        ys, yd = slice(max(dy, 0), H + min(dy, 0)), slice(max(-dy, 0), H + min(-dy, 0))
        xs, xd = slice(max(dx, 0), W + min(dx, 0)), slice(max(-dx, 0), W + min(-dx, 0))
        uN[:, yd, xd] = u[:, ys, xs]  # uN[:, y, x] = u[:, y+dy, x+dx]
        vN[:, yd, xd] = valid[:, ys, xs]
        both = valid & vN
        a = np.where(both, u * np.conj(uN), 0)
        m = both.sum(axis=0).astype(np.float64)
        pairs = np.zeros((H, W), np.complex128)
        for i in range(n - 1):  # every pair term a_i conj(a_j), j > i
            pairs += (a[i][None] * np.conj(a[i + 1:])).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            if slc:
                tau = np.abs(pairs) / (m * (m - 1) / 2)
                ok = m >= 2
            else:
                tau = np.abs(a.sum(axis=0) + pairs) / (m * (m + 1) / 2)
                ok = m >= 1
        arcs[(dx, dy)] = np.where(ok, tau, np.nan)
    allt = np.stack(list(arcs.values()))
    invalid = np.all(np.isnan(allt), axis=0)
    tau_max = np.where(invalid, np.nan, np.nanmax(np.where(np.isnan(allt), -1.0, allt), axis=0))
    return tau_max, invalid, arcs


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
