"""geogpu: GPU-accelerated radar and remote-sensing processing from Python.

numpy arrays in and out, through libgeogpu (ctypes, no rebuild of anything):

    import geogpu
    geogpu.ops()                                     # ops of the library
    geogpu.devices()                                 # devices it can see
    mli = geogpu.run("multilook", slc, looks=(4, 4), device="opencl")
    prod = geogpu.run("coherence", s1, s2, window=(5, 5))   # dict of bands
    with geogpu.Context("cpu") as ctx:
        rot = geogpu.run("rotate", img, angle=30, context=ctx)

and GG datasets through GDAL:

    ds = geogpu.open_gg("radnorm", "amp.tif", coef=35)     # a gdal.Dataset
    geogpu.gg_string("multilook", "slc.tif", looks=(4, 4))  # 'GG:multilook:looks=4x4:slc.tif'

and the capabilities that are not ops (flat C APIs):

    geogpu.ortho(img, rpc, geotransform=gt, size=(w, h), dem=z, dem_geotransform=zgt)
    geogpu.fmcw_process(sectors, params, products="DBZ,VEL")   # int16 I/Q -> products
    geogpu.mrr2_products(geogpu.mrr2_read("0308.raw.gz"), average=60)
    geogpu.xcorr_gmtsar(master, aligned, nx=8, ny=8)           # freq_xcorr.dat rows
    geogpu.coreg_fit(x, y, off_down, off_across, order=2)      # polynomial + PRM lines

Errors raise GeogpuError (ArgumentError, UnavailableError, ...) with the
library's message.  Quicklooks: ``geogpu.quicklook.render`` and the
``gdal_quicklook`` command.  See docs/python.md.
"""
from ._lib import lib as _lib_handle, library_path, text as _text
from .device import Context, Device, check_device, context_for, devices
from .errors import (ArgumentError, CancelledError, DeviceError, GeogpuError, UnavailableError,
                     UnsupportedError)
from .gdal_io import ensure_gg_driver, gg_string, ggvrt_xml, open_gg, write_ggvrt
from .ops import Op, OpInfo, OpOption, OutputInfo, Prepared, format_option, op_info, ops, run
from .coreg import (CoregFit, coreg_fit, offset_points, read_prm, xcorr_gmtsar,
                    xcorr_gmtsar_prm)
from .fmcw import (fmcw_beam, fmcw_grid_ppi, fmcw_info, fmcw_params, fmcw_process,
                   fmcw_sim_snr_db, fmcw_simulate, fmcw_spectral_moments, mrr2_products, mrr2_read)
from .ortho import ortho, ortho_arguments, ortho_options, ortho_string, rpc_forward, rpc_model
from .warp import warp, warp_arguments, warp_options

__all__ = ["version", "library_path", "ops", "op_info", "Op", "OpInfo", "OpOption", "OutputInfo",
           "Prepared", "run", "format_option", "devices", "Device", "Context", "context_for",
           "check_device", "GeogpuError", "ArgumentError", "DeviceError", "UnavailableError",
           "UnsupportedError", "CancelledError", "gg_string", "ggvrt_xml", "write_ggvrt",
           "open_gg", "ensure_gg_driver",
           # flat APIs (not ops): warping, orthorectification, FMCW/MRR-2, GMTSAR xcorr,
           # coreg fit
           "warp", "warp_options", "warp_arguments", "ortho", "ortho_options", "ortho_arguments", "ortho_string", "rpc_model",
           "rpc_forward", "fmcw_params", "fmcw_info", "fmcw_process",
           "fmcw_simulate", "fmcw_sim_snr_db", "fmcw_spectral_moments", "fmcw_grid_ppi",
           "fmcw_beam", "mrr2_read", "mrr2_products", "xcorr_gmtsar", "xcorr_gmtsar_prm",
           "read_prm", "coreg_fit", "CoregFit", "offset_points"]

__version__ = "0.1.0"


def version():
    """The version of the loaded libgeogpu ("0.1.0")."""
    return _text(_lib_handle.gg_version())
