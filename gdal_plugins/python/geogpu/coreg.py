"""Coregistration from numpy: GMTSAR-mode cross-correlation (gg_xcorr_gmtsar)
and the robust polynomial fit of offsets (gg_coreg_fit_*).

    table = geogpu.xcorr_gmtsar(master, aligned, nx=8, ny=8, device="opencl")
    # (n, 5) float64: x, xoff, y, yoff, corr  (the rows of GMTSAR's freq_xcorr.dat)

    fit = geogpu.coreg_fit(x, y, off_down, off_across, snr=snr, order=2)
    fit.down, fit.across          # monomial coefficients (1, x, y, x^2, xy, y^2, ...)
    d, a = fit(x, y)              # the fitted offsets at (x, y)
    fit.prm_lines()               # GMTSAR's rshift/sub_int_r/... lines

The dense offsets of the "xcorr" op (``geogpu.run("xcorr", primary,
secondary, ...)``) become fit points with ``offset_points``.  The quality
mode of cross-correlation is that op; this module adds what is not an op.
"""
import ctypes
import os
import tempfile

import numpy as np

from ._lib import (PROGRESS_FN, GGCoregFit, GGCoregFitOptions, GGXcorrGmtsarOptions,
                   GGXcorrGmtsarRow, GGXcorrPrm, lib, text)
from .device import context_for
from .errors import ArgumentError, CancelledError, raise_for_status

__all__ = ["xcorr_gmtsar", "xcorr_gmtsar_prm", "read_prm", "CoregFit", "coreg_fit",
           "offset_points", "XCORR_COLUMNS"]

XCORR_COLUMNS = ("x", "xoff", "y", "yoff", "corr")
_F64P = ctypes.POINTER(ctypes.c_double)


def _context(device, context):
    if context is not None and device is not None:
        raise ArgumentError("give device or context, not both", 1)
    return context if context is not None else context_for(device)


def _progress_fn(progress):
    """A C progress callback calling progress(fraction) (False: cancel)."""
    if progress is None:
        return PROGRESS_FN()  # NULL

    def call(frac, _msg, _user):
        try:
            return 0 if progress(float(frac)) is False else 1
        except Exception:  # never let an exception cross the C frames
            return 0
    return PROGRESS_FN(call)


# ------------------------------------------------------------------ GMTSAR xcorr

def read_prm(path):
    """A GMTSAR PRM as a dict (slc_file, width, height, prf, rshift, ashift,
    has_shift), checked by the library (SLC file present, not truncated)."""
    prm, err = GGXcorrPrm(), ctypes.create_string_buffer(1024)
    raise_for_status(lib.gg_xcorr_prm_read(os.fsencode(path), ctypes.byref(prm), err, len(err)),
                     text(err.value) or f"cannot read PRM {path}")
    return {"slc_file": text(prm.slc_file), "width": prm.width, "height": prm.height,
            "prf": prm.prf, "rshift": prm.rshift, "ashift": prm.ashift,
            "has_shift": bool(prm.has_shift)}


def _options(nx, ny, xsearch, ysearch, range_interp, interp, noshift):
    for name, v in (("nx", nx), ("ny", ny), ("xsearch", xsearch), ("ysearch", ysearch),
                    ("range_interp", range_interp), ("interp", interp)):
        if int(v) != v or v < 1:
            raise ArgumentError(f"xcorr_gmtsar: {name} must be a positive integer, not {v!r}", 1)
    return GGXcorrGmtsarOptions(int(nx), int(ny), int(xsearch), int(ysearch), int(range_interp),
                                int(interp), 1 if noshift else 0)


def _run_gmtsar(m, a, opt, device, context, progress):
    ctx = _context(device, context)
    rows, nrows = ctypes.POINTER(GGXcorrGmtsarRow)(), ctypes.c_int()
    cb = _progress_fn(progress)
    code = lib.gg_xcorr_gmtsar(ctx.handle, ctypes.byref(m), ctypes.byref(a), ctypes.byref(opt),
                               ctypes.byref(rows), ctypes.byref(nrows), cb, None)
    if code == 7:
        raise CancelledError("xcorr_gmtsar: interrupted", 7)
    raise_for_status(code, ctx.last_error or "xcorr_gmtsar failed")
    try:
        n = nrows.value
        out = np.empty((n, 5), np.float64)
        for i in range(n):
            r = rows[i]
            out[i] = (r.x, r.xoff, r.y, r.yoff, r.corr)
    finally:
        lib.gg_xcorr_free(ctypes.cast(rows, ctypes.c_void_p))
    return out


def xcorr_gmtsar_prm(master_prm, aligned_prm, nx=16, ny=32, xsearch=64, ysearch=64,
                     range_interp=2, interp=16, noshift=False, device=None, context=None,
                     progress=None):
    """GMTSAR's xcorr on two PRM files (as ``gdal_xcorr -mode gmtsar``):
    an (nx * ny, 5) float64 array of x, xoff, y, yoff, corr, azimuth-major."""
    m, a, err = GGXcorrPrm(), GGXcorrPrm(), ctypes.create_string_buffer(1024)
    for prm, path in ((m, master_prm), (a, aligned_prm)):
        raise_for_status(lib.gg_xcorr_prm_read(os.fsencode(path), ctypes.byref(prm), err,
                                               len(err)), text(err.value) or f"bad PRM {path}")
    return _run_gmtsar(m, a, _options(nx, ny, xsearch, ysearch, range_interp, interp, noshift),
                       device, context, progress)


def _int16_iq(arr, what):
    """A complex array as GMTSAR's int16 I/Q samples (values rounded)."""
    a = np.asarray(arr)
    if a.ndim != 2 or a.size == 0:
        raise ArgumentError(f"xcorr_gmtsar: {what} must be a non-empty 2-D array, got shape "
                            f"{a.shape}", 1)
    if not np.iscomplexobj(a):
        raise ArgumentError(f"xcorr_gmtsar: {what} must be complex (an SLC), got {a.dtype}", 1)
    iq = np.empty(a.shape + (2,), np.float64)
    iq[..., 0], iq[..., 1] = a.real, a.imag
    if not np.all(np.isfinite(iq)):
        raise ArgumentError(f"xcorr_gmtsar: {what} has NaN or infinite samples (GMTSAR SLCs are "
                            "int16)", 1)
    iq = np.rint(iq)
    if np.abs(iq).max() > 32767:
        raise ArgumentError(f"xcorr_gmtsar: {what} exceeds the int16 range of GMTSAR SLCs "
                            f"(max |I|,|Q| = {np.abs(iq).max():.6g}); scale it first", 1)
    return iq.astype("<i2" if np.little_endian else "=i2")


def xcorr_gmtsar(master, aligned, nx=16, ny=32, xsearch=64, ysearch=64, range_interp=2,
                 interp=16, prf=1000.0, aligned_prf=None, rshift=0, ashift=0, device=None,
                 context=None, progress=None):
    """GMTSAR's xcorr on two complex arrays (rows = azimuth, cols = range).

    The samples are rounded to int16 I/Q (GMTSAR's SLC format; ArgumentError
    when they do not fit).  prf / aligned_prf: the pulse repetition
    frequencies (the azimuth stretch is (aligned_prf - prf) / prf);
    rshift / ashift: the aligned image's integer shifts (GMTSAR's PRM
    values).  Returns an (nx * ny, 5) float64 array of x, xoff, y, yoff,
    corr (freq_xcorr.dat), azimuth-major."""
    mi, ai = _int16_iq(master, "master"), _int16_iq(aligned, "aligned")
    if mi.shape != ai.shape:
        raise ArgumentError(f"xcorr_gmtsar: master is {mi.shape[1]}x{mi.shape[0]} but aligned is "
                            f"{ai.shape[1]}x{ai.shape[0]}", 1)
    opt = _options(nx, ny, xsearch, ysearch, range_interp, interp, False)
    with tempfile.TemporaryDirectory(prefix="geogpu_xcorr_") as d:
        prms = []
        for name, iq, p, rs, az in (("master", mi, prf, 0, 0),
                                     ("aligned", ai, aligned_prf or prf, rshift, ashift)):
            path = os.path.join(d, name + ".SLC")
            iq.tofile(path)
            prm = GGXcorrPrm()
            prm.slc_file = os.fsencode(path)
            prm.width, prm.height = iq.shape[1], iq.shape[0]
            prm.prf = float(p)
            prm.rshift, prm.ashift, prm.has_shift = int(rs), int(az), 1
            prms.append(prm)
        return _run_gmtsar(prms[0], prms[1], opt, device, context, progress)


# ------------------------------------------------------------------ polynomial fit

_MONOMIALS = ("1", "x", "y", "x^2", "xy", "y^2", "x^3", "x^2y", "xy^2", "y^3")


class CoregFit:
    """A fitted offset polynomial: offset(x, y) = sum_k c_k m_k(x, y) with
    m = 1, x, y, x^2, xy, y^2, x^3, x^2y, xy^2, y^3 (x = pixel/across,
    y = line/down, pixel centres at integers; secondary = primary + offset).

    down, across: the coefficients (3, 6 or 10); counts (n_total,
    n_candidates, n_used_down, n_used_across), rms_* and sigma_* (px)."""

    def __init__(self, native):
        self._f = native
        n = native.ncoef
        self.order = native.order
        self.down = np.array(native.down[:n])
        self.across = np.array(native.across[:n])
        for k in ("n_total", "n_candidates", "n_used_down", "n_used_across", "rms_down",
                  "rms_across", "sigma_down", "sigma_across"):
            setattr(self, k, getattr(native, k))

    @property
    def terms(self):
        return _MONOMIALS[:len(self.down)]

    def __call__(self, x, y):
        """(down, across) offsets at (x, y) (scalars or arrays)."""
        x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
        d, a = np.empty(x.shape), np.empty(x.shape)
        ev = lib.gg_coreg_fit_eval
        for i, (xi, yi) in enumerate(zip(x.ravel(), y.ravel())):
            d.flat[i] = ev(ctypes.byref(self._f), 0, float(xi), float(yi))
            a.flat[i] = ev(ctypes.byref(self._f), 1, float(xi), float(yi))
        return (d, a) if d.ndim else (float(d), float(a))

    def _text(self, fn, what):
        buf = ctypes.create_string_buffer(16384)
        raise_for_status(fn(ctypes.byref(self._f), buf, len(buf)), f"cannot write the fit {what}")
        return text(buf.value)

    def json(self):
        """The fit as JSON text (as gdal_coreg -fit writes)."""
        return self._text(lib.gg_coreg_fit_json, "as JSON")

    def prm_lines(self):
        """GMTSAR's eight PRM lines (rshift, sub_int_r, stretch_r, a_stretch_r,
        ashift, sub_int_a, stretch_a, a_stretch_a) of the linear part."""
        return self._text(lib.gg_coreg_fit_prm, "as PRM lines")

    @classmethod
    def parse(cls, text_):
        """A fit from its JSON text or "d0,d1,...;a0,a1,..." (down;across)."""
        f, err = GGCoregFit(), ctypes.create_string_buffer(1024)
        raise_for_status(lib.gg_coreg_fit_parse(text_.encode(), ctypes.byref(f), err, len(err)),
                         text(err.value) or "cannot parse the fit")
        return cls(f)

    def __repr__(self):
        return (f"<geogpu.CoregFit order {self.order}: {self.n_used_down}/{self.n_total} points "
                f"down, rms {self.rms_down:.3g}/{self.rms_across:.3g} px>")


def _points(v, n, name):
    if v is None:
        return None
    a = np.ascontiguousarray(np.asarray(v, np.float64).ravel())
    if a.size != n:
        raise ArgumentError(f"coreg_fit: {name} has {a.size} values but x has {n}", 1)
    return a


def coreg_fit(x, y, off_down, off_across, snr=None, peak=None, order=1, min_snr=0.0,
              min_peak=0.0, tukey_c=4.685, kcut=3.0, max_iter=50, min_points=0):
    """Robust (IRLS Tukey biweight + k-sigma cut) polynomial fit of offsets
    at points (x, y), float64 on the host (gdal_coreg's fit).  Points with a
    non-finite value, snr < min_snr or peak < min_peak are not used.
    Returns a CoregFit; ArgumentError when too few points remain."""
    x = np.ascontiguousarray(np.asarray(x, np.float64).ravel())
    n = x.size
    y, od, oa = (_points(v, n, k) for v, k in ((y, "y"), (off_down, "off_down"),
                                                  (off_across, "off_across")))
    s, p = _points(snr, n, "snr"), _points(peak, n, "peak")
    o = GGCoregFitOptions()
    lib.gg_coreg_fit_options_default(ctypes.byref(o))
    o.order, o.min_snr, o.min_peak = int(order), float(min_snr), float(min_peak)
    o.tukey_c, o.kcut, o.max_iter, o.min_points = float(tukey_c), float(kcut), int(max_iter), \
        int(min_points)
    f, err = GGCoregFit(), ctypes.create_string_buffer(1024)

    def ptr(a):
        return None if a is None else a.ctypes.data_as(_F64P)
    code = lib.gg_coreg_fit_points(ptr(x), ptr(y), ptr(od), ptr(oa), ptr(s), ptr(p), n,
                                   ctypes.byref(o), ctypes.byref(f), err, len(err))
    raise_for_status(code, text(err.value) or "coreg_fit failed")
    return CoregFit(f)


def offset_points(offsets, geotransform, nodata=None):
    """Fit points from the "xcorr" op's products: offsets is the dict
    ``geogpu.run("xcorr", ...)`` returns and geotransform the one of its
    OutputInfo (run with ``geotransform=(0, 1, 0, 0, 0, 1)`` and
    ``return_info=True``).  Returns dict(x, y, off_down, off_across, snr,
    peak) of 1-D arrays: the window centres in primary pixels (centres at
    integers), as gdal_coreg does; offsets equal to nodata (the op's band
    nodata, OutputInfo.nodata) become NaN, which the fit leaves out."""
    if geotransform is None:
        raise ArgumentError("offset_points: the xcorr output has no geotransform (run the op "
                            "with geotransform=(0, 1, 0, 0, 0, 1))", 1)
    try:
        down, across = offsets["offset_down"], offsets["offset_across"]
        snr, peak = offsets["snr"], offsets["peak"]
    except KeyError as e:
        raise ArgumentError(f"offset_points: no band {e} in the offsets (the xcorr op's dict)",
                            1) from None
    ny, nx = np.asarray(down).shape
    X, Y = np.meshgrid(np.arange(nx) + 0.5, np.arange(ny) + 0.5)
    g = geotransform

    def col(v):
        v = np.asarray(v, np.float64).ravel().copy()
        if nodata is not None and not np.isnan(nodata):
            v[v == nodata] = np.nan
        return v
    return {"x": (g[0] + g[1] * X + g[2] * Y - 0.5).ravel(),
            "y": (g[3] + g[4] * X + g[5] * Y - 0.5).ravel(),
            "off_down": col(down), "off_across": col(across), "snr": col(snr),
            "peak": col(peak)}
