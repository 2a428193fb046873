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

__all__ = ["version", "library_path", "ops", "op_info", "Op", "OpInfo", "OpOption", "OutputInfo",
           "Prepared", "run", "format_option", "devices", "Device", "Context", "context_for",
           "check_device", "GeogpuError", "ArgumentError", "DeviceError", "UnavailableError",
           "UnsupportedError", "CancelledError", "gg_string", "ggvrt_xml", "write_ggvrt",
           "open_gg", "ensure_gg_driver"]

__version__ = "0.1.0"


def version():
    """The version of the loaded libgeogpu ("0.1.0")."""
    return _text(_lib_handle.gg_version())
