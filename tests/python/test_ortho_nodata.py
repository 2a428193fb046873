"""gdal_ortho -srcnodata / -dstnodata against gdalwarp 3.6's masked warp
kernels, on a scene with nodata holes (blobs, scattered single pixels, and
the nodata value also occurring in the texture next to valid pixels):

- an output pixel whose *containing* source pixel is nodata gets no value,
  whatever the other taps of bilinear / cubic hold (GDAL's gate before
  resampling);
- otherwise bilinear renormalises over the valid taps, cubic falls back to
  bilinear when one of its 16 taps is nodata, the stretched kernels
  (downsampling) normalise by the weight of the valid taps;
- on integer outputs a bilinear / cubic value that rounds onto the output
  nodata is moved one step down (nearest neighbour is not);

checked as: the same footprint as gdalwarp (pixel for pixel), every
interior pixel within 1 DN, for near / bilinear / cubic, UInt16 / Float32;
and CPU = OpenCL.  Several bands (gdalwarp's unified mask):
test_ortho_multiband_nodata.py.
"""
import subprocess

import numpy as np
import pytest
from osgeo import gdal
from scipy import ndimage

from test_ortho import synthetic_rpc, write_dem, write_scene

ND = 1999  # inside the texture's range (2000 +- 600): it also occurs as a value
UTM = ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750", "-tr", "4", "4"]
DOWN = ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750", "-tr", "11", "11"]


def punch_holes(path, rng):
    ds = gdal.Open(str(path), gdal.GA_Update)
    a = ds.GetRasterBand(1).ReadAsArray()
    yy, xx = np.mgrid[0:a.shape[0], 0:a.shape[1]]
    for cy, cx, r in [(150, 200, 25), (400, 420, 40), (300, 100, 12), (520, 560, 18)]:
        a[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = ND
    a[rng.random(a.shape) < 0.01] = ND
    ds.GetRasterBand(1).WriteArray(a)
    ds = None
    return path


@pytest.fixture(scope="module")
def holes(tmp_path_factory):
    d = tmp_path_factory.mktemp("ortho_nodata")
    rng = np.random.default_rng(7)
    md = synthetic_rpc(640, 600)
    out = {"dir": d, "dem": write_dem(d / "dem.tif", rng, 4326)}
    for t in ("UInt16", "Float32"):
        out[t] = punch_holes(write_scene(d / f"s_{t}.tif", rng, 640, 600, t, md), rng)
    return out


def read(path):
    ds = gdal.Open(str(path))
    a = ds.GetRasterBand(1).ReadAsArray().astype(np.float64)
    nd = ds.GetRasterBand(1).GetNoDataValue()
    ds = None
    return a, nd


def warp(src, dst, dem, r, args):
    subprocess.run(["gdalwarp", "-q", "-overwrite", "-rpc", "-et", "0", "-wm", "2000", "-r", r,
                    "-to", f"RPC_DEM={dem}", *args, str(src), str(dst)],
                   check=True, capture_output=True)
    return dst


def compare_nodata(ours, ref, nodata, what):
    a, nda = read(ours)
    b, ndb = read(ref)
    assert nda == ndb == nodata, f"{what}: nodata {nda} vs gdalwarp {ndb}"
    assert a.shape == b.shape
    va, vb = a != nodata, b != nodata
    # not vacuous: a real footprint with holes in it
    assert vb.sum() > 0.3 * vb.size, f"{what}: gdalwarp footprint almost empty"
    filled = ndimage.binary_fill_holes(vb)
    assert (filled & ~vb).sum() > 0.005 * vb.sum(), f"{what}: no nodata holes inside the footprint"
    mism = int((va != vb).sum())
    assert mism == 0, (f"{what}: {mism} pixels ({100 * mism / va.size:.3f} %) with a value in "
                       f"one output only ({int((va & ~vb).sum())} only in gdal_ortho's)")
    both = va & vb
    d = np.abs(a - b)[both]
    assert d.max() <= 1.0, f"{what}: differs from gdalwarp by up to {d.max()}"
    assert np.std(b[both]) > 10
    return a


@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
@pytest.mark.parametrize("dtype", ["UInt16", "Float32"])
@pytest.mark.parametrize("grid", ["4m", "11m"])
def test_srcnodata_matches_gdalwarp(gg, holes, r, dtype, grid):
    """Same footprint as gdalwarp pixel for pixel (before the gate, about
    0.25 % of the pixels next to holes differed) and within 1 DN; the 11 m
    grid is 2.5x coarser than the source: gdalwarp's stretched kernels with
    nodata."""
    g = UTM if grid == "4m" else DOWN
    d, src, dem = holes["dir"], holes[dtype], holes["dem"]
    ref = warp(src, d / f"w_{r}_{dtype}_{grid}.tif", dem, r, ["-srcnodata", str(ND), *g])
    ours = d / f"o_{r}_{dtype}_{grid}.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", r, "-srcnodata",
           str(ND), *g, str(src), str(ours))
    compare_nodata(ours, ref, ND, f"srcnodata {r}/{dtype}/{grid}")


@pytest.mark.parametrize("r", ["near", "cubic"])
def test_band_nodata_is_the_default(gg, holes, tmp_path, r):
    """Without -srcnodata, the band's own nodata value is used, as gdalwarp."""
    src = tmp_path / "band_nd.tif"
    gdal.Translate(str(src), str(holes["UInt16"]), noData=ND)
    ref = warp(src, tmp_path / "w.tif", holes["dem"], r, UTM)
    ours = tmp_path / "o.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(holes["dem"]), "-r", r, *UTM,
           str(src), str(ours))
    compare_nodata(ours, ref, ND, f"band nodata {r}")


@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
def test_dstnodata_value_is_avoided_like_gdalwarp(gg, holes, tmp_path, r):
    """-dstnodata equal to a value of the texture: gdalwarp 3.6 moves a
    bilinear / cubic UInt16 result that rounds onto it one step down
    (nearest neighbour keeps it); gdal_ortho the same, so the footprints
    stay equal.  Not vacuous: many pixels of the plain output take it."""
    dem, src = holes["dem"], holes["UInt16"]
    plain = tmp_path / "plain.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", r, "-srcnodata",
           str(ND), "-dstnodata", "7", *UTM, str(src), str(plain))
    p, _ = read(plain)
    vals, counts = np.unique(p[(p != 7)], return_counts=True)
    v = int(vals[np.argmax(counts)])  # the most frequent value of the output
    assert counts.max() > 100
    ref = warp(src, tmp_path / "w.tif", dem, r, ["-srcnodata", str(ND), "-dstnodata", str(v), *UTM])
    ours = tmp_path / "o.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", r, "-srcnodata",
           str(ND), "-dstnodata", str(v), *UTM, str(src), str(ours))
    a = compare_nodata(ours, ref, v, f"dstnodata {v} {r}")
    hit = (p == v)
    if r == "near":
        assert np.all(a[hit] == v), "near: values equal to nodata must stay"
    else:
        assert np.all(a[hit] == v - 1), "bilinear/cubic: values on nodata must move down by 1"


@pytest.mark.opencl
@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
@pytest.mark.parametrize("grid", ["4m", "11m"])
def test_srcnodata_cpu_and_opencl_agree(gg, holes, r, grid):
    g = UTM if grid == "4m" else DOWN
    d, dem = holes["dir"], holes["dem"]
    outs = []
    for dtype in ("UInt16", "Float32"):
        for dev in ("cpu", "opencl"):
            o = d / f"dev_{dev}_{r}_{dtype}_{grid}.tif"
            gg.run("gdal_ortho", "-q", "-device", dev, "-dem", str(dem), "-r", r, "-srcnodata",
                   str(ND), *g, str(holes[dtype]), str(o))
            outs.append(read(o)[0])
    for a, b in (outs[0:2], outs[2:4]):
        assert ((a != ND) == (b != ND)).all(), "footprints differ between cpu and opencl"
        assert (a != ND).sum() > 0.3 * a.size
        assert np.max(np.abs(a - b)) <= 1e-3 * 2600
