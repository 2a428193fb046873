"""gdal_warp from Python: gdalwarp's command line and answer on the device
(docs/gdal_warp.md), run in this process by the GDAL layer's ``gg_warp_run``
(include/geogpu_gdal.h) -- Python builds the command line, C does the rest.

    geogpu.warp(["scene.tif"], "scene_3857.tif", t_srs="EPSG:3857", r="cubic")
    geogpu.warp(["coherence.vrt"], "coh_ll.tif", geoloc=True, t_srs="EPSG:4326",
                tr=(1e-4, 1e-4), r="bilinear", device="cuda")

Keyword arguments are gdal_warp's options by their keys (``warp_options()``,
from the option table in C): a number or a string for a flag of one value,
a sequence for several (``tr=(10, 10)``, ``te=(xmin, ymin, xmax, ymax)``),
True for a switch (``tps=True``), a dict or a sequence of "NAME=VALUE" for
the repeatable ``to``, ``wo`` and ``co``, and a sequence of numbers for the
nodata lists.  ``of``, ``overwrite`` and ``device`` as in gdal_warp.
"""
import ctypes

from ._lib import GGOption, gdal_layer
from .errors import ArgumentError, GeogpuError, UnsupportedError
from .ops import options_of_table

__all__ = ["warp", "warp_options", "warp_arguments"]


def _layer():
    layer = gdal_layer()
    if layer is None:
        raise UnsupportedError("warp: libgeogpu_gdal (the GDAL layer) is not built", 5)
    so = layer[0]
    if not getattr(so, "_warp_set", False):
        so.gg_warp_run.restype = ctypes.c_int
        so.gg_warp_run.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                   ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        so.ggw_options_table.restype = ctypes.POINTER(GGOption)
        so.ggw_options_table.argtypes = [ctypes.POINTER(ctypes.c_int)]
        so._warp_set = True
    return so


def warp_options():
    """gdal_warp's options as OpOption (key, type, default, description,
    flag, ...), from their one description in C (gg_warp_options.c): what
    its flags, --help, --describe and QGIS's parameters use."""
    so = _layer()
    n = ctypes.c_int()
    return options_of_table(so.ggw_options_table(ctypes.byref(n)), n.value)


_REPEATED = ("to", "wo", "co")


def _pairs(key, v):
    if isinstance(v, dict):
        return [f"{k}={x}" for k, x in v.items()]
    if isinstance(v, str):
        return [v]
    return [str(x) for x in v]


def warp_arguments(**options):
    """gdal_warp's flags for keyword arguments: t_srs="EPSG:3857",
    tr=(10, 10), r="cubic", tps=True, to={"RPC_DEM": "dem.tif"}, ...;
    ArgumentError for a key that is not an option."""
    table = {o.key: o for o in warp_options()}
    args = []
    for key, v in options.items():
        if v is None or v is False:
            continue
        if key in ("co", "of", "overwrite"):
            if key == "of":
                args += ["-of", str(v)]
            elif key == "overwrite":
                args.append("-overwrite")
            else:
                for p in _pairs(key, v):
                    args += ["-co", p]
            continue
        o = table.get(key)
        if o is None:
            raise ArgumentError(f"warp: '{key}' is not an option of gdal_warp (options: "
                                f"{', '.join(sorted(table))}, co, of, overwrite)", 1)
        if key in _REPEATED:
            for p in _pairs(key, v):
                args += [o.flag, p]
        elif v is True:
            args.append(o.flag)
        elif key in ("srcnodata", "dstnodata") and not isinstance(v, (str, int, float)):
            args += [o.flag, " ".join(str(x) for x in v)]
        elif isinstance(v, (list, tuple)):
            args += [o.flag] + [repr(x) if isinstance(x, float) else str(x) for x in v]
        else:
            args += [o.flag, repr(v) if isinstance(v, float) else str(v)]
    return args


def warp(sources, dst, device=None, quiet=True, **options):
    """Warps sources (a path or a sequence of paths, mosaicked in order) into
    dst as gdal_warp does; returns dst.  Raises ArgumentError for a bad
    option or input, GeogpuError for any other failure, with gdal_warp's
    message; nothing is left at dst then."""
    so = _layer()
    srcs = [str(sources)] if isinstance(sources, (str, bytes)) or hasattr(sources, "__fspath__") \
        else [str(s) for s in sources]
    argv = ["gdal_warp"] + warp_arguments(**options)
    if device:
        argv += ["-device", str(device)]
    if quiet:
        argv.append("-q")
    argv += srcs + [str(dst)]
    c_argv = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    err = ctypes.create_string_buffer(2048)
    rc = so.gg_warp_run(len(argv), c_argv, None, err, len(err))
    if rc != 0:
        msg = err.value.decode(errors="replace") or "gdal_warp failed"
        usage = "see --help" in msg or "not supported" in msg or "cannot open" in msg
        raise (ArgumentError if usage else GeogpuError)(msg, 1 if usage else 8)
    return dst
