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

__all__ = ["lib", "library_path", "gdal_layer", "plugin_dirs", "utility_dirs", "GGTile", "GGWindow",
           "GGRasterInfo", "GG_FLOAT32", "GG_CFLOAT32", "GG_BYTE", "GG_UINT16", "GG_INT16",
           "STATUS_NAMES"]

SONAME = "libgeogpu.so.0"

# gg_status, in the order of geogpu.h
STATUS_NAMES = ["GG_OK", "GG_ERR_ARGUMENT", "GG_ERR_NOMEM", "GG_ERR_DEVICE", "GG_ERR_UNAVAILABLE",
                "GG_ERR_UNSUPPORTED", "GG_ERR_IO", "GG_ERR_CANCELLED", "GG_ERR_INTERNAL"]

# gg_type
GG_FLOAT32, GG_CFLOAT32, GG_BYTE, GG_UINT16, GG_INT16 = 1, 2, 3, 4, 5

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


GDAL_SONAME = "libgeogpu_gdal.so.0"
_GDAL_LAYER = {}


def gdal_layer():
    """libgeogpu_gdal (include/geogpu_gdal.h), the GDAL layer built with this
    libgeogpu, loaded from the same folder on first use with its prototypes
    set: (library, path), or None where it was not built (a build without
    GDAL).  Loading it loads GDAL."""
    if "lib" not in _GDAL_LAYER:
        _GDAL_LAYER["lib"] = None
        folder = _lib_folder()
        path = folder / GDAL_SONAME if folder is not None else None
        if path is not None and path.exists():
            so = ctypes.CDLL(str(path))
            so.gg_ortho_run.restype = ctypes.c_int
            so.gg_ortho_run.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
            so.gg_ortho_run_release.restype = None
            so.gg_ortho_run_release.argtypes = []
            so.gg_stack_layout_find.restype = ctypes.c_int
            so.gg_stack_layout_find.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                                ctypes.POINTER(GGStackLayout)]
            # the output transaction (geogpu_gdal.h)
            so.gg_output_set_new.restype = ctypes.c_void_p
            so.gg_output_set_new.argtypes = []
            so.gg_output_set_add.restype = ctypes.c_char_p
            so.gg_output_set_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
            so.gg_output_set_commit.restype = ctypes.c_int
            so.gg_output_set_commit.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
            so.gg_output_set_free.restype = None
            so.gg_output_set_free.argtypes = [ctypes.c_void_p]
            so.gg_output_catch_signals.restype = None
            so.gg_output_catch_signals.argtypes = []
            _GDAL_LAYER["lib"] = (so, str(path))
    return _GDAL_LAYER["lib"]


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


class GGStackLayout(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("row_bytes", ctypes.c_size_t),
                ("bands", ctypes.c_int)]


class GGWindow(ctypes.Structure):
    _fields_ = [("x0", ctypes.c_int), ("y0", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int)]


class GGRasterInfo(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("bands", ctypes.c_int),
                ("type", ctypes.c_int), ("geotransform", ctypes.c_double * 6),
                ("has_geotransform", ctypes.c_int), ("has_nodata", ctypes.c_int),
                ("nodata", ctypes.c_double)]


class GGOption(ctypes.Structure):
    """gg_option (geogpu.h): one option of an op, described once."""
    _fields_ = [("key", ctypes.c_char_p), ("flag", ctypes.c_char_p), ("kind", ctypes.c_int),
                ("min", ctypes.c_double), ("max", ctypes.c_double),
                ("default_value", ctypes.c_char_p), ("choices", ctypes.c_char_p),
                ("help", ctypes.c_char_p), ("required", ctypes.c_int)]


# gg_option_kind, in order
GG_OPTION_KINDS = ("int", "float", "bool", "size", "choice", "string")


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
    "gg_host_alloc": (_int, [_vp, _sz, _c.POINTER(_vp)]),
    "gg_host_free": (None, [_vp, _vp]),
    "gg_op_names": (_c.POINTER(_cp), []),
    "gg_op_description": (_cp, [_cp]),
    "gg_op_options": (_c.POINTER(GGOption), [_cp, _c.POINTER(_int)]),
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
    "gg_op_run_stack_interleaved": (_int, [_vp, _vp, _c.POINTER(GGTile), _int,
                                           _c.POINTER(GGTile), _int]),
    "gg_op_submit_stack": (_int, [_vp, _vp, _c.POINTER(GGTile), _int, _c.POINTER(GGTile), _int]),
    "gg_op_submit_stack_interleaved": (_int, [_vp, _vp, _c.POINTER(GGTile), _int,
                                              _c.POINTER(GGTile), _int]),
    "gg_op_collect": (_int, [_vp, _vp]),
    "gg_op_in_flight": (_int, [_vp]),
    "gg_op_bytes_per_pixel": (_dbl, [_vp]),
}


# ------------------------------------------------- flat APIs (not ops)
# gg_fmcw_*, gg_mrr2_*, gg_ortho_*, gg_xcorr_* (GMTSAR mode), gg_coreg_fit_*:
# capabilities that do not fit the op model; their structures mirror
# geogpu.h member for member (enums are C ints).
_f32p, _f64p = _c.POINTER(_c.c_float), _c.POINTER(_c.c_double)


class GGFmcwParams(_c.Structure):
    _fields_ = [("n_samples", _int), ("n_sweeps", _int), ("n_gates", _int),
                ("carrier_hz", _dbl), ("bandwidth_hz", _dbl), ("sweep_time_s", _dbl),
                ("sample_rate_hz", _dbl), ("radar_constant_h_db", _dbl),
                ("zdr_offset_db", _dbl), ("ldr_offset_db", _dbl), ("range_offset_m", _dbl),
                ("window_range", _int), ("window_doppler", _int), ("clutter_mean", _int),
                ("notch_bins", _int), ("min_snr_db", _dbl), ("n_avg", _int),
                ("max_clipped_fraction", _dbl)]


class GGFmcwField(_c.Structure):
    _fields_ = [(k, _f32p) for k in ("dbz", "zdr", "ldr", "vel", "width", "rhohv", "phidp",
                                      "clutter_db")]


class GGFmcwSim(_c.Structure):
    _fields_ = [("noise_counts", _dbl), ("exponential", _int), ("seed", _c.c_ulonglong)]


class GGMrr2(_c.Structure):
    _fields_ = [("n_records", _int), ("n_gates", _int), ("n_bins", _int), ("cc", _dbl),
                ("height", _f64p), ("tf", _f64p), ("spectra", _f32p),
                ("time", _c.POINTER(_c.c_char * 16)), ("n_spectra", _c.POINTER(_int)),
                ("seconds", _c.POINTER(_c.c_longlong))]


class GGMrr2Options(_c.Structure):
    _fields_ = [("average_s", _dbl), ("min_width", _int), ("frequency_hz", _dbl), ("k2", _dbl)]


class GGOrthoRpc(_c.Structure):
    _fields_ = [(k, _dbl) for k in ("line_off", "samp_off", "lat_off", "long_off", "height_off",
                                    "line_scale", "samp_scale", "lat_scale", "long_scale",
                                    "height_scale")] + \
               [(k, _dbl * 20) for k in ("line_num", "line_den", "samp_num", "samp_den")]


class GGOrthoOptions(_c.Structure):
    _fields_ = [("resampling", _int), ("dem_interp", _int), ("rpc_height", _dbl),
                ("height_scale", _dbl), ("has_dem_missing", _int), ("dem_missing", _dbl),
                ("has_src_nodata", _int), ("src_nodata", _dbl), ("dst_init", _dbl),
                ("has_dst_nodata", _int), ("per_band_nodata", _int)]  # geogpu.h order


class GGOrthoDem(_c.Structure):
    _fields_ = [("data", _f64p), ("width", _int), ("height", _int), ("x0", _int), ("y0", _int),
                ("raster_width", _int), ("raster_height", _int), ("has_nodata", _int),
                ("nodata", _dbl)]


class GGOrthoGrid(_c.Structure):
    _fields_ = [("nodes", _f64p), ("nx", _int), ("ny", _int), ("step", _int)]


class GGOrthoImage(_c.Structure):
    _fields_ = [("data", _vp), ("type", _int), ("x0", _int), ("y0", _int), ("width", _int),
                ("height", _int), ("stride", _sz), ("raster_width", _int),
                ("raster_height", _int)]


class GGXcorrPrm(_c.Structure):
    _fields_ = [("slc_file", _c.c_char * 1024), ("width", _int), ("height", _int), ("prf", _dbl),
                ("rshift", _int), ("ashift", _int), ("has_shift", _int)]


class GGXcorrGmtsarOptions(_c.Structure):
    _fields_ = [(k, _int) for k in ("nx", "ny", "xsearch", "ysearch", "range_interp", "interp",
                                    "noshift")]


class GGXcorrGmtsarRow(_c.Structure):
    _fields_ = [(k, _dbl) for k in ("x", "xoff", "y", "yoff", "corr")]


class GGCoregFitOptions(_c.Structure):
    _fields_ = [("order", _int), ("min_snr", _dbl), ("min_peak", _dbl), ("tukey_c", _dbl),
                ("kcut", _dbl), ("max_iter", _int), ("min_points", _int)]


class GGCoregFit(_c.Structure):
    _fields_ = [("order", _int), ("ncoef", _int), ("down", _dbl * 10), ("across", _dbl * 10),
                ("n_total", _int), ("n_candidates", _int), ("n_used_down", _int),
                ("n_used_across", _int), ("rms_down", _dbl), ("rms_across", _dbl),
                ("sigma_down", _dbl), ("sigma_across", _dbl)]


PROGRESS_FN = _c.CFUNCTYPE(_int, _dbl, _cp, _vp)
_P = _c.POINTER
_PROTOTYPES.update({
    "gg_fmcw_product_name": (_cp, [_int]),
    "gg_fmcw_product_units": (_cp, [_int]),
    "gg_fmcw_product_standard_name": (_cp, [_int]),
    "gg_fmcw_product_index": (_int, [_cp]),
    "gg_fmcw_parse_products": (_int, [_cp, _P(_int), _P(_int), _cp, _sz]),
    "gg_fmcw_params_default": (None, [_P(GGFmcwParams)]),
    "gg_fmcw_params_check": (_int, [_P(GGFmcwParams), _cp, _sz]),
    "gg_fmcw_range_resolution": (_dbl, [_P(GGFmcwParams)]),
    "gg_fmcw_wavelength": (_dbl, [_P(GGFmcwParams)]),
    "gg_fmcw_nyquist_velocity": (_dbl, [_P(GGFmcwParams)]),
    "gg_fmcw_gate_range": (_dbl, [_P(GGFmcwParams), _int]),
    "gg_fmcw_create": (_int, [_vp, _P(GGFmcwParams), _P(_int), _int, _int, _P(_vp)]),
    "gg_fmcw_destroy": (None, [_vp]),
    "gg_fmcw_last_error": (_cp, [_vp]),
    "gg_fmcw_sector_values": (_sz, [_P(GGFmcwParams)]),
    "gg_fmcw_push": (_int, [_vp, _P(_c.c_int16), _int]),
    "gg_fmcw_products": (_int, [_vp, _f32p]),
    "gg_fmcw_sector_flags": (_int, [_vp, _int]),
    "gg_fmcw_spectral_moments": (_int, [_vp, _f32p, _int, _int, _int, _dbl, _dbl, _int, _f32p]),
    "gg_fmcw_simulate": (_int, [_P(GGFmcwParams), _P(GGFmcwSim), _P(GGFmcwField),
                                _P(_c.c_int16), _cp, _sz]),
    "gg_fmcw_sim_snr_db": (_dbl, [_P(GGFmcwParams), _P(GGFmcwSim), _int, _dbl]),
    "gg_fmcw_grid_ppi": (_int, [_P(GGFmcwParams), _f32p, _int, _f64p, _dbl, _dbl, _dbl, _dbl,
                                _int, _f32p]),
    "gg_fmcw_beam": (None, [_dbl, _dbl, _f64p, _f64p]),
    "gg_mrr2_parse": (_int, [_cp, _sz, _P(_P(GGMrr2)), _cp, _sz]),
    "gg_mrr2_free": (None, [_P(GGMrr2)]),
    "gg_mrr2_rows": (_int, [_P(GGMrr2), _dbl, _P(_int)]),
    "gg_mrr2_products": (_int, [_vp, _P(GGMrr2), _P(GGMrr2Options), _f32p]),
    "gg_mrr2_products_dsd": (_int, [_vp, _P(GGMrr2), _P(GGMrr2Options), _f32p, _f32p]),
    "gg_mrr2_drop_table": (_int, [_P(GGMrr2), _P(GGMrr2Options), _f32p]),
    "gg_ortho_session_create": (_int, [_vp, _P(GGOrthoRpc), _P(GGOrthoDem), _P(GGOrthoOptions),
                                       _P(_vp)]),
    "gg_ortho_session_destroy": (None, [_vp]),
    "gg_ortho_session_run": (_int, [_vp, _P(GGOrthoGrid), _P(GGOrthoImage), _vp, _int, _int,
                                    _int, _sz, _P(_int)]),
    "gg_ortho_bytes_per_pixel": (_dbl, [_int, _int, _dbl]),
    "gg_ortho_rpc_forward": (None, [_P(GGOrthoRpc), _dbl, _dbl, _dbl, _f64p, _f64p]),
    "gg_xcorr_prm_read": (_int, [_cp, _P(GGXcorrPrm), _cp, _sz]),
    "gg_xcorr_gmtsar": (_int, [_vp, _P(GGXcorrPrm), _P(GGXcorrPrm), _P(GGXcorrGmtsarOptions),
                               _P(_P(GGXcorrGmtsarRow)), _P(_int), PROGRESS_FN, _vp]),
    "gg_xcorr_free": (None, [_vp]),
    "gg_coreg_fit_options_default": (None, [_P(GGCoregFitOptions)]),
    "gg_coreg_fit_points": (_int, [_f64p, _f64p, _f64p, _f64p, _f64p, _f64p, _int,
                                   _P(GGCoregFitOptions), _P(GGCoregFit), _cp, _sz]),
    "gg_coreg_fit_eval": (_dbl, [_P(GGCoregFit), _int, _dbl, _dbl]),
    "gg_coreg_fit_json": (_int, [_P(GGCoregFit), _cp, _sz]),
    "gg_coreg_fit_prm": (_int, [_P(GGCoregFit), _cp, _sz]),
    "gg_coreg_fit_parse": (_int, [_cp, _P(GGCoregFit), _cp, _sz]),
})

for _name, (_res, _args) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# newer entry points: prototyped when the loaded library has them
# (HAVE[name] tells), so the package still loads an older libgeogpu
_OPTIONAL = {
    "gg_ortho_session_set_scale": (_int, [_vp, _dbl, _dbl]),
}
HAVE = {}
for _name, (_res, _args) in _OPTIONAL.items():
    _f = getattr(lib, _name, None)
    HAVE[_name] = _f is not None
    if _f is not None:
        _f.restype = _res
        _f.argtypes = _args


def text(b):
    """A C string from the library as str ('' for NULL)."""
    return b.decode("utf-8", "replace") if b else ""
