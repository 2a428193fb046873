"""Turning what a utility wrote into the outputs the user asked for.

A utility that writes several products (gdal_insar, gdal_ptsel -mask) puts
them either as bands of <dst> or, when their types differ, one band per
file <dst stem>_<band name><ext>.  The provider runs it on a temporary <dst>
in the folder of the first requested output and then gives every requested
product its own file: a rename when the product is exactly one such file in
the requested format, else a gdal.Translate of its bands.  Leftovers are
deleted.  Only GDAL (osgeo) is used here, no QGIS.
"""
import glob
import os
from pathlib import Path

from osgeo import gdal


def driver_for(path):
    """The GDAL driver GDAL's utilities would pick for a file name: the first
    writable raster driver listing the extension, else GTiff."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext:
        for i in range(gdal.GetDriverCount()):
            d = gdal.GetDriver(i)
            md = d.GetMetadata() or {}
            if md.get("DCAP_RASTER") != "YES" or not (md.get("DCAP_CREATE") == "YES" or
                                                       md.get("DCAP_CREATECOPY") == "YES"):
                continue
            if ext in (md.get("DMD_EXTENSIONS") or "").lower().split():
                return d
    return gdal.GetDriverByName("GTiff")


def _bands_of(path):
    ds = gdal.Open(str(path))
    return [ds.GetRasterBand(b).GetDescription() for b in range(1, ds.RasterCount + 1)]


def written_files(tmp_dst, since=None):
    """Every file the run produced for tmp_dst: tmp_dst itself and
    <stem>_<band><ext> files (modified at or after ``since``, a time.time(),
    when given: older files of a similar name are not the run's)."""
    tmp_dst = Path(tmp_dst)
    out = [tmp_dst] if tmp_dst.exists() else []
    out += sorted(tmp_dst.parent.glob(f"{glob.escape(tmp_dst.stem)}_*{tmp_dst.suffix}"))
    if since is not None:
        out = [f for f in out if f.stat().st_mtime >= since - 1.0]
    return out


def band_sources(tmp_dst):
    """band name -> (file, 1-based band) over everything written."""
    src = {}
    for f in written_files(tmp_dst):
        for b, name in enumerate(_bands_of(f), 1):
            src.setdefault(name, (f, b))
    return src


def delete(path):
    """Deletes a dataset with its driver (side-car files too)."""
    path = str(path)
    if not os.path.exists(path):
        return
    try:
        drv = gdal.IdentifyDriver(path)
        if drv is not None:
            drv.Delete(path)
    except RuntimeError:
        pass
    if os.path.exists(path):
        os.unlink(path)
    if os.path.exists(path + ".aux.xml"):
        os.unlink(path + ".aux.xml")


def distribute(tmp_dst, requests, creation_options=()):
    """requests: [(band names, destination path)].  Gives each destination
    its bands; raises RuntimeError naming a band the run did not write.
    Removes everything written under tmp_dst afterwards."""
    tmp_dst = Path(tmp_dst)
    try:
        src = band_sources(tmp_dst)
        for bands, dest in requests:
            missing = [b for b in bands if b not in src]
            if missing:
                raise RuntimeError(f"the utility wrote no band {', '.join(missing)} "
                                   f"(found: {', '.join(src) or 'nothing'})")
            files = {src[b][0] for b in bands}
            f0 = src[bands[0]][0]
            whole_file = (len(files) == 1 and [src[b][1] for b in bands] ==
                          list(range(1, len(_bands_of(f0)) + 1)))
            drv = driver_for(dest)
            if whole_file and driver_for(f0).ShortName == drv.ShortName:
                delete(dest)
                drv.Rename(str(dest), str(f0))
                continue
            if len(files) == 1:
                ds = gdal.Open(str(f0))
            else:  # one band per file: stack them
                vrt = str(tmp_dst) + f".{os.getpid()}.vrt"
                ds = gdal.BuildVRT(vrt, [str(src[b][0]) for b in bands], separate=True)
                ds = None
                ds = gdal.Open(vrt)
            band_list = [src[b][1] for b in bands] if len(files) == 1 else list(range(1, len(bands) + 1))
            tmp_out = Path(dest).with_name(f".{Path(dest).name}.tmp{os.getpid()}{Path(dest).suffix}")
            out = gdal.Translate(str(tmp_out), ds, format=drv.ShortName, bandList=band_list,
                                 creationOptions=list(creation_options))
            if out is None:
                raise RuntimeError(f"cannot write {dest}: {gdal.GetLastErrorMsg()}")
            for k, b in enumerate(bands, 1):  # keep the band names
                out.GetRasterBand(k).SetDescription(b)
            out = None
            ds = None
            delete(dest)
            drv.Rename(str(dest), str(tmp_out))
    finally:
        for f in written_files(tmp_dst):
            delete(f)
        for v in tmp_dst.parent.glob(f"{tmp_dst.name}.*.vrt"):
            v.unlink()
