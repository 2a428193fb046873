"""Finding and loading libgeogpu, and the ctypes prototypes of geogpu.h.

Only this module knows C.  The library is looked for, in order:

1. ``GG_LIBRARY``: the path of libgeogpu.so (or of the folder holding it);
2. ``GG_BUILD_DIR``: a build tree, ``<GG_BUILD_DIR>/lib``;
3. the install location recorded by ``cmake --install`` (``_install.py``);
4. the build tree next to a source checkout (``<repo>/build/lib``) when the
   package is used from ``gdal_plugins/python``;
5. the dynamic loader's own search (``LD_LIBRARY_PATH``, ld.so.cache).

The first candidate that exists is loaded; a candidate that exists but fails
to load is an error (it is never skipped silently).
"""
import ctypes
import os
from pathlib import Path

__all__ = ["lib", "library_path", "plugin_dirs", "utility_dirs", "GGTile", "GGWindow",
           "GGRasterInfo", "GG_FLOAT32", "GG_CFLOAT32", "GG_BYTE", "STATUS_NAMES"]

SONAME = "libgeogpu.so.0"

# gg_status, in the order of geogpu.h
STATUS_NAMES = ["GG_OK", "GG_ERR_ARGUMENT", "GG_ERR_NOMEM", "GG_ERR_DEVICE", "GG_ERR_UNAVAILABLE",
                "GG_ERR_UNSUPPORTED", "GG_ERR_IO", "GG_ERR_CANCELLED", "GG_ERR_INTERNAL"]

# gg_type
GG_FLOAT32, GG_CFLOAT32, GG_BYTE = 1, 2, 3

_PACKAGE_DIR = Path(__file__).resolve().parent


def _installed():
    """The locations cmake --install recorded, or None in a source tree."""
    try:
        from . import _install  # written by cmake --install
    except ImportError:
        return None
    return _install


def _source_repo():
    """<repo> when the package runs from <repo>/gdal_plugins/python."""
    repo = _PACKAGE_DIR.parents[2] if len(_PACKAGE_DIR.parents) > 2 else None
    if repo and (repo / "include" / "geogpu.h").is_file():
        return repo
    return None


def _candidates():
    """(path, origin) pairs to try, best first."""
    out = []
    env = os.environ.get("GG_LIBRARY")
    if env:
        p = Path(env)
        out.append((p / SONAME if p.is_dir() else p, "GG_LIBRARY"))
    build = os.environ.get("GG_BUILD_DIR")
    if build:
        out.append((Path(build) / "lib" / SONAME, "GG_BUILD_DIR"))
    inst = _installed()
    if inst is not None:
        out.append((Path(inst.LIBDIR) / SONAME, "install"))
    repo = _source_repo()
    if repo is not None:
        out.append((repo / "build" / "lib" / SONAME, "source tree build/"))
    return out


def _load():
    tried = []
    for path, origin in _candidates():
        if path.exists():
            try:
                return ctypes.CDLL(str(path)), str(path)
            except OSError as e:
                raise ImportError(f"geogpu: cannot load {path} (from {origin}): {e}") from None
        tried.append(f"{path} ({origin})")
    try:  # the loader's own search path
        return ctypes.CDLL(SONAME), SONAME
    except OSError:
        tried.append(f"{SONAME} (loader path)")
    raise ImportError("geogpu: libgeogpu not found; set GG_LIBRARY to libgeogpu.so or "
                      "GG_BUILD_DIR to a build folder.  Tried: " + "; ".join(tried))


lib, library_path = _load()


def _lib_folder():
    """The folder libgeogpu was loaded from (the loader's choice resolved)."""
    if os.sep in library_path:
        return Path(library_path).resolve().parent
    # loaded by soname: ask the loader where from
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if SONAME in line or "libgeogpu.so" in line:
                    return Path(line.split()[-1]).parent
    except OSError:
        pass
    return None


def plugin_dirs():
    """Folders that may hold gdal_GeoGPU.so, best first."""
    out = []
    folder = _lib_folder()
    if folder is not None:
        out.append(folder)                      # build tree: next to libgeogpu
    inst = _installed()
    if inst is not None:
        out.append(Path(inst.PLUGIN_DIR))
    return [p for p in out if (p / "gdal_GeoGPU.so").exists()]


def utility_dirs():
    """Folders that may hold the gdal_* utilities of this libgeogpu, best first."""
    out = []
    folder = _lib_folder()
    if folder is not None:
        out.append(folder.parent / "bin")       # <build>/bin or <prefix>/bin
    inst = _installed()
    if inst is not None:
        out.append(Path(inst.BINDIR))
    return [p for p in out if p.is_dir()]


# ------------------------------------------------------------ structures

class GGTile(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("type", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("stride", ctypes.c_size_t), ("x0", ctypes.c_int),
                ("y0", ctypes.c_int)]


class GGWindow(ctypes.Structure):
    _fields_ = [("x0", ctypes.c_int), ("y0", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int)]


class GGRasterInfo(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("bands", ctypes.c_int),
                ("type", ctypes.c_int), ("geotransform", ctypes.c_double * 6),
                ("has_geotransform", ctypes.c_int), ("has_nodata", ctypes.c_int),
                ("nodata", ctypes.c_double)]


# ------------------------------------------------------------ prototypes

_c = ctypes
_vp, _cp, _int, _dbl, _sz = _c.c_void_p, _c.c_char_p, _c.c_int, _c.c_double, _c.c_size_t
_PROTOTYPES = {
    # name: (restype, argtypes)
    "gg_status_string": (_cp, [_int]),
    "gg_version": (_cp, []),
    "gg_type_size": (_sz, [_int]),
    "gg_context_create": (_int, [_cp, _c.POINTER(_vp), _cp, _sz]),
    "gg_context_destroy": (None, [_vp]),
    "gg_context_backend": (_cp, [_vp]),
    "gg_context_device_name": (_cp, [_vp]),
    "gg_context_notice": (_cp, [_vp]),
    "gg_context_last_error": (_cp, [_vp]),
    "gg_context_memory": (_int, [_vp, _c.POINTER(_sz), _c.POINTER(_sz)]),
    "gg_device_check": (_int, [_cp, _cp, _sz]),
    "gg_list_devices": (_int, [_cp, _sz]),
    "gg_plan_rows": (_int, [_vp, _int, _int, _dbl, _int, _c.POINTER(_int)]),
    "gg_op_names": (_c.POINTER(_cp), []),
    "gg_op_description": (_cp, [_cp]),
    "gg_op_option_list": (_cp, [_cp]),
    "gg_op_input_count": (_int, [_cp]),
    "gg_op_new": (_int, [_cp, _c.POINTER(_vp), _cp, _sz]),
    "gg_op_free": (None, [_vp]),
    "gg_op_name": (_cp, [_vp]),
    "gg_op_set": (_int, [_vp, _cp, _cp]),
    "gg_op_options_string": (_int, [_vp, _cp, _sz]),
    "gg_op_last_error": (_cp, [_vp]),
    "gg_op_prepare": (_int, [_vp, _c.POINTER(GGRasterInfo), _c.POINTER(GGRasterInfo)]),
    "gg_op_source_window": (_int, [_vp, _c.POINTER(GGWindow), _c.POINTER(GGWindow)]),
    "gg_op_prefers_tiles": (_int, [_vp]),
    "gg_op_needs_stats": (_int, [_vp]),
    "gg_op_accumulate": (_int, [_vp, _vp, _int, _c.POINTER(GGTile)]),
    "gg_op_reset_stats": (_int, [_vp, _int]),
    "gg_op_finish_stats": (_int, [_vp, _vp, _int]),
    "gg_op_run": (_int, [_vp, _vp, _int, _c.POINTER(GGTile), _c.POINTER(GGTile)]),
    "gg_op_is_stack": (_int, [_vp]),
    "gg_op_band_type": (_int, [_vp, _int]),
    "gg_op_band_name": (_cp, [_vp, _int]),
    "gg_op_band_nodata": (_dbl, [_vp, _int]),
    "gg_op_run_stack": (_int, [_vp, _vp, _c.POINTER(GGTile), _int, _c.POINTER(GGTile), _int]),
    "gg_op_bytes_per_pixel": (_dbl, [_vp]),
}

for _name, (_res, _args) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def text(b):
    """A C string from the library as str ('' for NULL)."""
    return b.decode("utf-8", "replace") if b else ""
