"""RPC + DEM orthorectification from numpy (gg_ortho_*): the geometry of
``gdalwarp -rpc -to RPC_DEM=... -et 0`` (and of gdal_ortho) on the device.

    rpc = ds.GetMetadata("RPC")                  # GDAL's RPC metadata domain
    out = geogpu.ortho(image, rpc, geotransform=(6.05, 1e-4, 0, 45.26, 0, -1e-4),
                       size=(800, 600), dem=dem, dem_geotransform=dem_gt,
                       resampling="bilinear", device="opencl")

The output grid is given by its geotransform and size (width, height), in
WGS84 longitude/latitude unless ``dst_srs`` names another CRS; the DEM is a
2-D array of heights above the ellipsoid with its geotransform (WGS84 unless
``dem_srs``).  Other CRSs need GDAL's osr (imported only then).  No DEM:
the constant height ``rpc_height``.

gdal_ortho and ``GG:ortho:`` take their options (files, CRSs, gdalwarp's
grid flags) from one table in C; ``ortho_options()`` reads it,
``ortho_arguments(**options)`` and ``ortho_string(scene, **options)`` write
gdal_ortho's flags and the GG:ortho: string of the same keyword arguments,
checked by the setter both use:

    args = geogpu.ortho_arguments(dem="dem.tif", t_srs="EPSG:32632", tr=(10, 10))
    ds = gdal.Open(geogpu.ortho_string("scene.tif", dem="dem.tif", t_srs="EPSG:32632",
                                       tr=(10, 10)))
"""
import ctypes
import math

import numpy as np

from ._lib import (GG_BYTE, GG_FLOAT32, GG_INT16, GG_UINT16, HAVE, GGOption,
                   GGOrthoDem, GGOrthoGrid, GGOrthoImage, GGOrthoOptions, GGOrthoRpc, gdal_layer,
                   lib, text)
from .device import context_for
from .errors import ArgumentError, GeogpuError, UnsupportedError, raise_for_status
from .ops import format_option, options_of_table

__all__ = ["ortho", "rpc_model", "rpc_forward", "RPC_KEYS", "ortho_options", "ortho_arguments",
           "ortho_string"]

RPC_KEYS = ("LINE_OFF", "SAMP_OFF", "LAT_OFF", "LONG_OFF", "HEIGHT_OFF", "LINE_SCALE",
            "SAMP_SCALE", "LAT_SCALE", "LONG_SCALE", "HEIGHT_SCALE")
RPC_COEFS = ("LINE_NUM_COEFF", "LINE_DEN_COEFF", "SAMP_NUM_COEFF", "SAMP_DEN_COEFF")
_METHODS = {"near": 0, "nearest": 0, "bilinear": 1, "cubic": 2}
_TYPES = {np.dtype(np.uint8): GG_BYTE, np.dtype(np.uint16): GG_UINT16,
          np.dtype(np.int16): GG_INT16, np.dtype(np.float32): GG_FLOAT32}
_PLANES = 5
_F64P = ctypes.POINTER(ctypes.c_double)


def _number(rpc, key):
    v = rpc.get(key, rpc.get(key.lower()))
    if v is None:
        raise ArgumentError(f"ortho: RPC {key} is missing", 1)
    try:
        return float(str(v).split()[0]) if isinstance(v, str) else float(v)
    except (ValueError, IndexError):
        raise ArgumentError(f"ortho: RPC {key} is not a number: {v!r}", 1) from None


def _coefs(rpc, key):
    v = rpc.get(key, rpc.get(key.lower()))
    if v is None:
        raise ArgumentError(f"ortho: RPC {key} is missing", 1)
    try:
        c = [float(t) for t in v.split()] if isinstance(v, str) else [float(t) for t in v]
    except (ValueError, TypeError):
        raise ArgumentError(f"ortho: RPC {key} has a value that is not a number", 1) from None
    if len(c) != 20:
        raise ArgumentError(f"ortho: RPC {key} has {len(c)} coefficients, 20 expected", 1)
    return c


def rpc_model(rpc):
    """The library's RPC00B model from a dict as GDAL's RPC metadata domain
    (``ds.GetMetadata("RPC")``: LINE_OFF ... HEIGHT_SCALE, and the four
    20-coefficient lists as space-separated strings or sequences)."""
    if isinstance(rpc, GGOrthoRpc):
        return rpc
    if not isinstance(rpc, dict):
        raise ArgumentError("ortho: rpc must be a dict like GDAL's RPC metadata domain", 1)
    m = GGOrthoRpc()
    for k in RPC_KEYS:
        setattr(m, k.lower(), _number(rpc, k))
    for k, f in zip(RPC_COEFS, ("line_num", "line_den", "samp_num", "samp_den")):
        getattr(m, f)[:] = _coefs(rpc, k)
    return m


def rpc_forward(rpc, lon, lat, h):
    """Image position (pixel, line) of ground points, GDAL's convention
    (0, 0 is the top-left corner of the first pixel): the library's float64
    RFM.  lon, lat (deg), h (m above the ellipsoid): scalars or arrays."""
    m = rpc_model(rpc)
    lon, lat, h = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (lon, lat, h)))
    px, ln = np.empty(lon.shape), np.empty(lon.shape)
    x, y = ctypes.c_double(), ctypes.c_double()
    for i, (a, b, c) in enumerate(zip(lon.ravel(), lat.ravel(), h.ravel())):
        lib.gg_ortho_rpc_forward(ctypes.byref(m), float(a), float(b), float(c), ctypes.byref(x),
                                 ctypes.byref(y))
        px.flat[i], ln.flat[i] = x.value, y.value
    return (px, ln) if px.ndim else (float(px), float(ln))


def _transform(src_srs, dst_srs):
    """An osr transformation (traditional GIS axis order), or None for
    WGS84 -> WGS84."""
    if src_srs is None and dst_srs is None:
        return None
    from osgeo import osr

    def srs(s):
        r = osr.SpatialReference()
        if s is None:
            r.ImportFromEPSG(4326)
        elif r.SetFromUserInput(str(s)) != 0:
            raise ArgumentError(f"ortho: unknown CRS '{s}'", 1)
        r.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
        return r
    return osr.CoordinateTransformation(srs(src_srs), srs(dst_srs))


def _apply(ct, x, y):
    if ct is None:
        return x, y
    pts = np.asarray(ct.TransformPoints(np.column_stack([x, y]).tolist()), np.float64)
    return pts[:, 0], pts[:, 1]


def _image(image):
    a = np.asarray(image)
    if a.ndim not in (2, 3) or a.size == 0:
        raise ArgumentError(f"ortho: image must be (rows, cols) or (bands, rows, cols), got "
                            f"shape {a.shape}", 1)
    if np.iscomplexobj(a):
        raise ArgumentError("ortho: complex images are not supported", 5)
    if a.dtype not in _TYPES:
        a = a.astype(np.float32)
    planes = a[None] if a.ndim == 2 else a
    return [np.ascontiguousarray(p) for p in planes], a.ndim == 2, a.dtype


def ortho(image, rpc, geotransform, size, dem=None, dem_geotransform=None, dst_srs=None,
          dem_srs=None, resampling="near", dem_interp="bilinear", rpc_height=0.0,
          height_scale=1.0, dem_missing=None, dem_nodata=None, src_nodata=None, dst_init=0.0,
          dtype=None, step=8, scale=None, device=None, context=None):
    """Orthorectifies image (2-D, or 3-D bands first; Byte, UInt16, Int16 or
    Float32 -- other types as Float32) with its RPC model onto the grid
    geotransform/size = (width, height).

    dem, dem_geotransform: heights (2-D) and their geotransform (GDAL's
    corner convention); dem_nodata: the DEM's nodata; dem_missing: the
    height where the DEM has none (else such pixels stay dst_init).
    rpc_height: added to the DEM (the height without a DEM); height_scale:
    DEM multiplier.  resampling / dem_interp: near, bilinear, cubic.
    src_nodata: image value left out of the resampling.  dtype: output type
    (default: the image's).  step: spacing of the exact coordinate grid the
    device interpolates (exact for lon/lat grids; 8 keeps projected grids
    well below 1e-6 px).  scale: (x, y) ratios of output to source
    resolution for downsampling (gdalwarp's kernel scales: below 0.95 the
    bilinear and cubic kernels are stretched as gdalwarp's); None: 1, 1.
    Returns the ortho image like the input (2-D or (bands, rows, cols))."""
    planes, two_d, in_dtype = _image(image)
    model = rpc_model(rpc)
    try:
        W, H = (int(v) for v in size)
    except (TypeError, ValueError):
        raise ArgumentError("ortho: size must be (width, height)", 1) from None
    if W < 1 or H < 1:
        raise ArgumentError(f"ortho: bad output size {W}x{H}", 1)
    gt = [float(v) for v in geotransform]
    if len(gt) != 6 or not all(math.isfinite(v) for v in gt):
        raise ArgumentError("ortho: geotransform must be 6 finite numbers", 1)
    out_dtype = np.dtype(dtype) if dtype is not None else planes[0].dtype
    if out_dtype not in _TYPES:
        raise ArgumentError(f"ortho: output type {out_dtype} not supported (uint8, uint16, int16, "
                            "float32)", 5)
    for name, v in (("resampling", resampling), ("dem_interp", dem_interp)):
        if v not in _METHODS:
            raise ArgumentError(f"ortho: {name} must be near, bilinear or cubic, not '{v}'", 1)
    step = int(step)
    if step < 1:
        raise ArgumentError("ortho: step must be >= 1", 1)

    opt = GGOrthoOptions(_METHODS[resampling], _METHODS[dem_interp], float(rpc_height),
                         float(height_scale), dem_missing is not None,
                         float(dem_missing or 0.0), src_nodata is not None,
                         float(src_nodata or 0.0), float(dst_init))
    demw, dem_arr, dem_inv = GGOrthoDem(), None, None
    if dem is not None:
        dem_arr = np.ascontiguousarray(np.asarray(dem, np.float64))
        if dem_arr.ndim != 2 or dem_arr.size == 0:
            raise ArgumentError(f"ortho: dem must be a 2-D array, got shape {dem_arr.shape}", 1)
        if dem_geotransform is None:
            raise ArgumentError("ortho: a dem needs its dem_geotransform", 1)
        g = [float(v) for v in dem_geotransform]
        det = g[1] * g[5] - g[2] * g[4]
        if len(g) != 6 or det == 0 or not math.isfinite(det):
            raise ArgumentError("ortho: dem_geotransform is not invertible", 1)
        # inverse geotransform: geo -> DEM pixel (corner convention)
        dem_inv = (g, det)
        dh, dw = dem_arr.shape
        demw = GGOrthoDem(dem_arr.ctypes.data_as(_F64P), dw, dh, 0, 0, dw, dh,
                          dem_nodata is not None, float(dem_nodata or 0.0))

    ctx = context if context is not None else context_for(device)
    if context is not None and device is not None:
        raise ArgumentError("give device or context, not both", 1)
    sess = ctypes.c_void_p()
    raise_for_status(lib.gg_ortho_session_create(ctx.handle, ctypes.byref(model),
                                                  ctypes.byref(demw) if dem is not None else None,
                                                  ctypes.byref(opt), ctypes.byref(sess)),
                     ctx.last_error or "ortho: cannot start a session")
    if scale is not None:
        try:
            sx, sy = (float(v) for v in scale)
        except (TypeError, ValueError):
            lib.gg_ortho_session_destroy(sess)
            raise ArgumentError("ortho: scale must be (x, y)", 1) from None
        if not HAVE["gg_ortho_session_set_scale"]:
            lib.gg_ortho_session_destroy(sess)
            raise GeogpuError("ortho: this libgeogpu has no kernel scales "
                              "(gg_ortho_session_set_scale)", 5)
        code = lib.gg_ortho_session_set_scale(sess, sx, sy)
        if code:
            lib.gg_ortho_session_destroy(sess)
            raise_for_status(code, ctx.last_error or f"ortho: bad scale {scale}")
    to_ll = _transform(dst_srs, None) if dst_srs is not None else None
    to_dem = _transform(None, dem_srs) if dem_srs is not None else None
    outs = [np.full((H, W), dst_init, out_dtype) for _ in planes]
    try:
        rows = max(step, (256 // step) * step)
        for y0 in range(0, H, rows):
            h = min(rows, H - y0)
            nodes, nx, ny = _nodes(gt, W, y0, h, step, to_ll, to_dem, dem_inv,
                                   model.long_off)
            grid = GGOrthoGrid(nodes.ctypes.data_as(_F64P), nx, ny, step)
            for b, p in enumerate(planes):
                src = GGOrthoImage(p.ctypes.data, _TYPES[p.dtype], 0, 0, p.shape[1], p.shape[0],
                                   p.shape[1], p.shape[1], p.shape[0])
                block = outs[b][y0:y0 + h]
                missed = ctypes.c_int()
                raise_for_status(lib.gg_ortho_session_run(
                    sess, ctypes.byref(grid), ctypes.byref(src), block.ctypes.data,
                    _TYPES[out_dtype], W, h, W, ctypes.byref(missed)),
                    ctx.last_error or "ortho failed")
                if missed.value:  # the window is the whole image: cannot happen
                    raise GeogpuError("ortho: a sample fell outside the source window", 8)
    finally:
        lib.gg_ortho_session_destroy(sess)
    return outs[0] if two_d else np.stack(outs)


def _nodes(gt, W, y0, h, step, to_ll, to_dem, dem_inv, lon_ref):
    """The 5 planes of exact coordinates (lon, lat, DEM x, DEM y, vertical
    shift) at every step-th output pixel centre of the block of rows
    y0 .. y0 + h - 1, node (i, j) at block pixel ((i - 1) step, (j - 1) step)."""
    nx, ny = (W - 1) // step + 4, (h - 1) // step + 4
    i, j = np.meshgrid(np.arange(nx), np.arange(ny))
    px = ((i - 1) * step + 0.5).ravel().astype(np.float64)
    py = (y0 + (j - 1) * step + 0.5).ravel().astype(np.float64)
    x = gt[0] + px * gt[1] + py * gt[2]
    y = gt[3] + px * gt[4] + py * gt[5]
    lon, lat = _apply(to_ll, x, y)
    planes = np.zeros((_PLANES, nx * ny), np.float64)
    if dem_inv is not None:
        g, det = dem_inv
        gx, gy = _apply(to_dem, lon, lat)
        ex, ey = gx - g[0], gy - g[3]
        planes[2] = (g[5] * ex - g[2] * ey) / det
        planes[3] = (-g[4] * ex + g[1] * ey) / det
    # continuous longitudes across the antimeridian (the RFM wraps them)
    lon = np.where(lon - lon_ref > 180.0, lon - 360.0,
                   np.where(lon - lon_ref < -180.0, lon + 360.0, lon))
    planes[0], planes[1] = lon, lat
    return np.ascontiguousarray(planes), nx, ny


# ------------------------------------------- gdal_ortho's and GG:ortho:'s options

def _ortho_table():
    """libgeogpu_gdal with the prototypes of ortho's option table
    (gg_ortho_options.h), or ArgumentError where the GDAL layer was not built."""
    layer = gdal_layer()
    if layer is None:
        raise UnsupportedError("ortho's options: libgeogpu_gdal (the GDAL layer) is not built",
                               5)
    so = layer[0]
    if not getattr(so, "_ortho_table_set", False):
        so.ggo_options_table.restype = ctypes.POINTER(GGOption)
        so.ggo_options_table.argtypes = [ctypes.POINTER(ctypes.c_int)]
        so.ggo_option_flag_values.restype = ctypes.c_int
        so.ggo_option_flag_values.argtypes = [ctypes.POINTER(GGOption),
                                              ctypes.POINTER(ctypes.c_char_p)]
        so.ggo_check_options.restype = ctypes.c_int
        so.ggo_check_options.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                         ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p,
                                         ctypes.c_size_t]
        so._ortho_table_set = True
    return so


def ortho_options():
    """The options of gdal_ortho and GG:ortho: as OpOption (key, type,
    default, description, flag, minimum, maximum, choices, required), from
    their one description in C (gg_ortho_options.c): what gdal_ortho's flags,
    --help and --describe, the GG:ortho: keys and QGIS's parameters use."""
    so = _ortho_table()
    n = ctypes.c_int()
    table = so.ggo_options_table(ctypes.byref(n))
    return options_of_table(table, n.value)


def _flag_values(key):
    """How many values the flag of key takes (C: ggo_option_flag_values)."""
    so = _ortho_table()
    n = ctypes.c_int()
    table = so.ggo_options_table(ctypes.byref(n))
    for k in range(n.value):
        if text(table[k].key) == key:
            return so.ggo_option_flag_values(ctypes.byref(table[k]), None)
    raise KeyError(key)


def _ortho_values(options):
    """{key: GG:ortho: value} of keyword arguments, checked by the C setter
    every front end goes through (ArgumentError with its message)."""
    table = {o.key: o for o in ortho_options()}
    values = {}
    for key, v in options.items():
        if v is None:
            continue
        o = table.get(key)
        if o is None:
            raise ArgumentError(f"ortho: '{key}' is not an option of ortho (options: "
                                f"{', '.join(table)})", 1)
        values[key] = format_option(v, o.type)
    keys = (ctypes.c_char_p * max(len(values), 1))(*[k.encode() for k in values])
    vals = (ctypes.c_char_p * max(len(values), 1))(*[v.encode() for v in values.values()])
    err = ctypes.create_string_buffer(1024)
    if _ortho_table().ggo_check_options(len(values), keys, vals, err, len(err)):
        raise ArgumentError(f"ortho: {err.value.decode(errors='replace')}", 1)
    return values


def ortho_arguments(**options):
    """gdal_ortho's flags for options given as keyword arguments (the
    GG:ortho: keys: dem="dem.tif", t_srs="EPSG:32632", tr=(10, 10), r="cubic",
    ts=(640, 480), srcnodata=[1, 2, 3], ...), checked as gdal_ortho checks
    them: ["-dem", "dem.tif", "-t_srs", "EPSG:32632", "-tr", "10", "10", ...]."""
    values = _ortho_values(options)
    flags = {o.key: o.flag for o in ortho_options()}
    args = []
    for key, v in values.items():
        n = _flag_values(key)
        if n == 0:  # a switch: its flag for yes, nothing for no
            args += [flags[key]] if v.lower() in ("yes", "true", "on", "1") else []
            continue
        parts = v.replace("x", ",").split(",") if n > 1 else [v]
        if n > 1 and len(parts) == 1:
            parts = parts * n  # "N" for both
        if key in ("srcnodata", "dstnodata"):
            parts = [v.replace(",", " ")]  # one argument, as gdalwarp's
        args += [flags[key]] + parts
    return args


def ortho_string(scene, device=None, **options):
    """The GG:ortho: connection string of scene with options given as
    keyword arguments (as ortho_arguments), checked as GDAL will check them."""
    values = _ortho_values(options)
    parts = ["GG", "ortho"] + [f"{k}={v}" for k, v in values.items()]
    if device:
        parts.append(f"device={device}")
    return ":".join(parts) + ":" + str(scene)
