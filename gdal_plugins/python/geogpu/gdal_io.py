"""GG datasets through GDAL: building GG: connection strings and .ggvrt
files safely, and opening them as gdal.Dataset.

    ds = geogpu.open_gg("multilook", "slc.tif", looks=(4, 4))
    arr = ds.ReadAsArray()
    geogpu.gg_string("coherence", ["a.tif", "b.tif"], window=(5, 5))
    # 'GG:coherence:window=5x5:a.tif,b.tif'

GDAL must see the plugin gdal_GeoGPU.so: set GDAL_DRIVER_PATH before the first
``from osgeo import gdal``, install it into GDAL's plugin folder, or let
``ensure_gg_driver()`` (called by open_gg) load it from next to libgeogpu.
"""
import os
import uuid
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from ._lib import plugin_dirs
from .errors import ArgumentError, GeogpuError
from .ops import Op

__all__ = ["gg_string", "ggvrt_xml", "write_ggvrt", "open_gg", "ensure_gg_driver"]


def _gdal():
    from osgeo import gdal  # imported late: the package works without GDAL
    return gdal


def ensure_gg_driver():
    """Makes sure GDAL has the GG driver, loading gdal_GeoGPU.so from next
    to libgeogpu (or the install plugin folder) if GDAL did not find it.
    Returns the driver; raises GeogpuError when no plugin can be loaded."""
    gdal = _gdal()
    drv = gdal.GetDriverByName("GG")
    if drv is not None:
        return drv
    old = gdal.GetConfigOption("GDAL_DRIVER_PATH")
    for folder in plugin_dirs():
        gdal.SetConfigOption("GDAL_DRIVER_PATH", str(folder))
        try:
            gdal.AllRegister()  # scans the plugin path again; built-ins stay
        finally:
            gdal.SetConfigOption("GDAL_DRIVER_PATH", old)
        drv = gdal.GetDriverByName("GG")
        if drv is not None:
            return drv
    raise GeogpuError("the GDAL driver GG is not available: set GDAL_DRIVER_PATH to the folder "
                      "of gdal_GeoGPU.so before importing osgeo (tried: "
                      f"{', '.join(str(p) for p in plugin_dirs()) or 'no plugin found'})", 4)


def _options(op, options):
    """Op and its canonical options (every value checked by the library)."""
    if isinstance(op, Op):
        return Op(op.name, **{**op.options, **options}) if options else op
    return Op(op, **options)


def _inputs(inputs):
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out = [os.fspath(i) for i in inputs]
    if not out:
        raise ArgumentError("no input dataset", 1)
    if any(not i for i in out):
        raise ArgumentError("empty input dataset name", 1)
    return out


def _string_problem(op, inputs, device):
    """Why op + inputs cannot be written as an unambiguous GG: string, or None."""
    for k, v in op.options.items():
        if ":" in v:
            return f"the value of {k} contains ':'"
    keys = {o.key for o in op.info.options} | {"device"}
    first = inputs[0].split(":", 1)[0]
    if "=" in first and first.split("=", 1)[0].lower() in keys:
        return f"input '{inputs[0]}' starts like an option"
    if device and any(c.isdigit() for c in device) and first.isdigit():
        return f"input '{inputs[0]}' starts like a device index"
    if len(inputs) > 1 and any("," in i for i in inputs):
        return "an input name contains ','"
    if len(inputs) == 1 and "," in inputs[0] and not os.path.exists(inputs[0]):
        return f"input '{inputs[0]}' contains ',' and is not an existing file"
    return None


def gg_string(op, inputs, device=None, **options):
    """The GG: connection string of op on inputs.  op: a name or an Op;
    options as for Op.  Raises ArgumentError for a bad option value or a
    string GDAL would read differently (then use write_ggvrt/open_gg)."""
    op = _options(op, options)
    inputs = _inputs(inputs)
    problem = _string_problem(op, inputs, device)
    if problem:
        raise ArgumentError(f"cannot write a GG: string: {problem} (use a .ggvrt file)", 1)
    parts = ["GG", op.name] + [f"{k}={v}" for k, v in op.options.items()]
    if device:
        parts.append(f"device={device}")
    return ":".join(parts) + ":" + ",".join(inputs)


def _absolute(name):
    """Local files as absolute paths (the .ggvrt may live elsewhere);
    /vsi paths and connection strings as given."""
    if name.startswith("/vsi") or ":" in name.split("/", 1)[0] or not os.path.exists(name):
        return name
    return os.path.abspath(name)


def ggvrt_xml(op, inputs, device=None, **options):
    """The .ggvrt XML of op on inputs (any names: XML-escaped)."""
    op = _options(op, options)
    inputs = _inputs(inputs)
    lines = [f"<GGVRTDataset operation={quoteattr(op.name)}>"]
    for k, v in op.options.items():
        lines.append(f"  <Option name={quoteattr(k)}>{escape(v)}</Option>")
    if device:
        lines.append(f"  <Option name=\"device\">{escape(device)}</Option>")
    for i in inputs:
        lines.append(f"  <Input relativeToVRT=\"0\">{escape(_absolute(i))}</Input>")
    lines.append("</GGVRTDataset>")
    return "\n".join(lines) + "\n"


def write_ggvrt(path, op, inputs, device=None, **options):
    """Writes a .ggvrt file (to a temporary name, then renamed)."""
    path = Path(path)
    xml = ggvrt_xml(op, inputs, device=device, **options)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(xml, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def open_gg(op, *inputs, device=None, open_options=None, **options):
    """Opens op on inputs as a GDAL dataset, computed block by block on the
    device when read (the GG driver).  device: a device spec (else GG_DEVICE,
    else auto).  Keep the dataset referenced while its bands are in use
    (GDAL 3.6 crashes on a band whose dataset was garbage-collected).

        ds = geogpu.open_gg("rotate", "img.tif", angle=30, device="cpu")
    """
    gdal = _gdal()
    ensure_gg_driver()
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = inputs[0]
    op = _options(op, options)
    names = _inputs(list(inputs))
    oo = list(open_options or [])
    if device:
        oo.append(f"DEVICE={device}")
    flags = gdal.OF_RASTER | gdal.OF_VERBOSE_ERROR
    if _string_problem(op, names, None) is None:
        return _checked(gdal, gdal.OpenEx(gg_string(op, names), flags, open_options=oo))
    # names a GG: string cannot carry: the same dataset through a .ggvrt in memory
    vsi = f"/vsimem/geogpu_{uuid.uuid4().hex}.ggvrt"
    gdal.FileFromMemBuffer(vsi, ggvrt_xml(op, names).encode("utf-8"))
    try:
        return _checked(gdal, gdal.OpenEx(vsi, flags, open_options=oo))
    finally:
        gdal.Unlink(vsi)


def _checked(gdal, ds):
    """GDAL without UseExceptions returns None: raise with its message."""
    if ds is None:
        raise GeogpuError(gdal.GetLastErrorMsg() or "GDAL could not open the GG dataset", 1)
    return ds
