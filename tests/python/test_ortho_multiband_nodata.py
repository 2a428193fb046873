"""gdal_ortho's source nodata over several bands against gdalwarp 3.6.2.

gdalwarp merges the bands' validity (GDALWarpOperation's unified source
mask, gdalwarp_lib's UNIFIED_SRC_NODATA):

- with -srcnodata (one value, or one per band) it sets
  UNIFIED_SRC_NODATA=YES: a source pixel is nodata only where *every* band
  matches its nodata value; elsewhere each band's value is data, even when
  it equals that band's nodata value (for the taps and the containing
  pixel alike);
- with the bands' own nodata values (no -srcnodata) its default, PARTIAL:
  an output pixel is dropped where every band of its containing source
  pixel is nodata; otherwise each band resamples over its own valid taps
  (nearest neighbour leaves a band without value where that band is
  nodata).

The scenes have 3 or 4 bands, UInt16 or Float32, each band its own
texture, with holes shared by all bands (the containing-pixel rule),
holes of one or two bands only (where YES and PARTIAL differ), scattered
single nodata pixels per band, and the nodata values also occurring in the
texture.  Checked per band: the same mask as gdalwarp (pixel for pixel)
and every pixel within 1 DN, for near / bilinear / cubic; CPU = OpenCL;
GG:ortho: = gdal_ortho.
"""

import numpy as np
import pytest
from osgeo import gdal
from scipy import ndimage

from test_ortho import add_spikes, smooth_noise, synthetic_rpc, write_dem
from test_ortho_nodata import warp  # gdalwarp -rpc -et 0, as the single-band tests

W, H = 640, 600
ND1 = 1999                      # one value for every band (-srcnodata 1999)
NDS = [1999, 2101, 1888, 2050]  # one per band (inside the texture's 2000 +- 600)
UTM = ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750", "-tr", "4", "4"]
DOWN = ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750", "-tr", "11", "11"]


def write_multiband(path, rng, dtype, nb, nodata, own):
    """nb bands of independent texture; nodata[b] punched into band b."""
    md = synthetic_rpc(W, H)
    gdt = gdal.GDT_UInt16 if dtype == "UInt16" else gdal.GDT_Float32
    ds = gdal.GetDriverByName("GTiff").Create(str(path), W, H, nb, gdt)
    ds.SetMetadata(md, "RPC")
    yy, xx = np.mgrid[0:H, 0:W]
    disc = lambda cy, cx, r: (yy - cy) ** 2 + (xx - cx) ** 2 < r * r  # noqa: E731
    shared = disc(150, 200, 25) | disc(400, 420, 30) | disc(520, 560, 14)
    shared |= rng.random((H, W)) < 0.006
    # holes of some bands only: band b has its own blobs, and bands 0 and 1
    # share one that the others do not have
    own_blobs = [disc(300, 100, 22), disc(260, 330, 26), disc(90, 480, 20), disc(470, 180, 24)]
    pair = disc(340, 520, 28)
    for b in range(nb):
        tex = smooth_noise(rng, (H, W), 2.0) * 9 + smooth_noise(rng, (H, W), 0.7) * 2
        img = 2000 + 600 * tex / np.abs(tex).max()
        img = np.round(img) if dtype == "UInt16" else img
        hole = shared | own_blobs[b] | (rng.random((H, W)) < 0.01)
        if b < 2:
            hole |= pair
        img[hole] = nodata[b]
        band = ds.GetRasterBand(b + 1)
        band.WriteArray(img.astype(np.uint16 if dtype == "UInt16" else np.float32))
        if own:
            band.SetNoDataValue(nodata[b])
    ds = None
    return path


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    d = tmp_path_factory.mktemp("ortho_mb_nodata")
    rng = np.random.default_rng(11)
    out = {"dir": d, "dem": write_dem(d / "dem.tif", rng, 4326)}
    for dtype in ("UInt16", "Float32"):
        for nb in (3, 4):
            out[("one", dtype, nb)] = write_multiband(d / f"one_{dtype}_{nb}.tif", rng, dtype,
                                                      nb, [ND1] * nb, False)
            out[("per", dtype, nb)] = write_multiband(d / f"per_{dtype}_{nb}.tif", rng, dtype,
                                                      nb, NDS[:nb], False)
            out[("own", dtype, nb)] = write_multiband(d / f"own_{dtype}_{nb}.tif", rng, dtype,
                                                      nb, NDS[:nb], True)
    return out


def nodata_args(mode, nb):
    if mode == "one":
        return ["-srcnodata", str(ND1)], [ND1] * nb
    if mode == "per":
        return ["-srcnodata", " ".join(str(v) for v in NDS[:nb])], NDS[:nb]
    return [], NDS[:nb]  # the bands' own values


def read_all(path):
    ds = gdal.Open(str(path))
    a = ds.ReadAsArray().astype(np.float64)
    nd = [ds.GetRasterBand(b + 1).GetNoDataValue() for b in range(ds.RasterCount)]
    ds = None
    return a, nd


def compare_bands(ours, ref, nodata, what):
    a, nda = read_all(ours)
    b, ndb = read_all(ref)
    # a GeoTIFF keeps one nodata value for all bands (the last band's when
    # they differ); gdalwarp still fills and avoids band by band with the
    # per-band values, so the masks below use those
    assert nda == ndb, f"{what}: nodata {nda} vs gdalwarp {ndb}"
    assert ndb[-1] == nodata[-1]
    assert a.shape == b.shape
    for k, nd in enumerate(nodata):
        va, vb = a[k] != nd, b[k] != nd
        assert vb.sum() > 0.3 * vb.size, f"{what} band {k + 1}: gdalwarp footprint almost empty"
        filled = ndimage.binary_fill_holes(vb)
        assert (filled & ~vb).sum() > 0.005 * vb.sum(), f"{what} band {k + 1}: no holes"
        mism = int((va != vb).sum())
        assert mism == 0, (f"{what} band {k + 1}: {mism} pixels ({100 * mism / va.size:.3f} %) "
                           f"with a value in one output only ({int((va & ~vb).sum())} only in "
                           f"gdal_ortho's)")
        both = va & vb
        d = np.abs(a[k] - b[k])[both]
        assert d.max() <= 1.0, f"{what} band {k + 1}: differs from gdalwarp by up to {d.max()}"
        assert np.std(b[k][both]) > 10
    return a, b


def per_band_masks_differ(b, nodata):
    """Whether the reference's bands have different masks (so the test
    sees the band-specific holes, not just the shared ones)."""
    m = [b[k] != nd for k, nd in enumerate(nodata)]
    return any((m[0] != m[k]).sum() > 100 for k in range(1, len(m)))


@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
@pytest.mark.parametrize("mode", ["one", "per", "own"])
@pytest.mark.parametrize("dtype,nb", [("UInt16", 3), ("UInt16", 4), ("Float32", 3),
                                      ("Float32", 4)])
def test_multiband_nodata_matches_gdalwarp(gg, scenes, mode, dtype, nb, r):
    d, dem, src = scenes["dir"], scenes["dem"], scenes[(mode, dtype, nb)]
    args, nodata = nodata_args(mode, nb)
    tag = f"{mode}_{dtype}_{nb}_{r}"
    ref = warp(src, d / f"w_{tag}.tif", dem, r, [*args, *UTM])
    ours = d / f"o_{tag}.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", r, *args, *UTM,
           str(src), str(ours))
    a, b = compare_bands(ours, ref, nodata, f"{mode} {dtype} x{nb} {r}")
    if mode == "own" or r == "near":
        # PARTIAL (and nearest neighbour): the bands' own holes show
        assert per_band_masks_differ(b, nodata), "the band-specific holes are not exercised"


@pytest.mark.parametrize("r", ["bilinear", "cubic"])
@pytest.mark.parametrize("mode", ["one", "own"])
def test_multiband_nodata_downsampling_matches_gdalwarp(gg, scenes, mode, r):
    """Output 2.5x coarser than the source: the stretched kernels with the
    unified (YES) and per-band (PARTIAL) masks."""
    d, dem, src = scenes["dir"], scenes["dem"], scenes[(mode, "UInt16", 3)]
    args, nodata = nodata_args(mode, 3)
    ref = warp(src, d / f"wd_{mode}_{r}.tif", dem, r, [*args, *DOWN])
    ours = d / f"od_{mode}_{r}.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", r, *args, *DOWN,
           str(src), str(ours))
    compare_bands(ours, ref, nodata, f"downsampling {mode} {r}")


def test_unified_rule_is_not_the_per_band_rule(gg, scenes, tmp_path):
    """Not vacuous: on the same scene, -srcnodata (YES) and the bands' own
    nodata (PARTIAL) give different outputs, and each matches gdalwarp's
    (checked above) -- the two rules are really told apart."""
    dem = scenes["dem"]
    src = scenes[("own", "UInt16", 3)]
    o1, o2 = tmp_path / "yes.tif", tmp_path / "partial.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", "bilinear",
           "-srcnodata", " ".join(str(v) for v in NDS[:3]), *UTM, str(src), str(o1))
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", "bilinear", *UTM,
           str(src), str(o2))
    a, _ = read_all(o1)
    b, _ = read_all(o2)
    assert (a != b).sum() > 0.005 * a.size
    ref = warp(src, tmp_path / "w.tif", dem, "bilinear",
               ["-srcnodata", " ".join(str(v) for v in NDS[:3]), *UTM])
    compare_bands(o1, ref, NDS[:3], "YES on a scene with its own nodata")


def test_gg_ortho_multiband_is_gdal_ortho(gg, scenes, tmp_path):
    """GG:ortho: with srcnodata=v1,v2,v3 gives gdal_ortho's pixels and the
    per-band nodata values."""
    dem, src = scenes["dem"], scenes[("per", "UInt16", 3)]
    vals = NDS[:3]
    ours = tmp_path / "o.tif"
    gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(dem), "-r", "cubic", "-srcnodata",
           " ".join(str(v) for v in vals), *UTM, str(src), str(ours))
    conn = ("GG:ortho:" + f"dem={dem}:r=cubic:t_srs=EPSG:32632:te=270800,5007800,273700,5010750:"
            f"tr=4,4:srcnodata={','.join(str(v) for v in vals)}:device=cpu:{src}")
    ds = gdal.Open(conn)
    assert ds is not None, gdal.GetLastErrorMsg()
    g = ds.ReadAsArray().astype(np.float64)
    nd = [ds.GetRasterBand(k + 1).GetNoDataValue() for k in range(3)]
    ds = None
    a, nda = read_all(ours)
    # GG:ortho: reports each band's own; the GeoTIFF keeps the last one,
    # and gdal_ortho, as gdalwarp, leaves the blocks outside the warped
    # window at it: the only difference allowed
    assert nd == [float(v) for v in vals] and nda == [float(vals[-1])] * 3
    for k in range(3):
        diff = a[k] != g[k]
        assert np.all(a[k][diff] == vals[-1]) and np.all(g[k][diff] == vals[k])
        assert np.array_equal(a[k][~diff], g[k][~diff])
        assert (~diff).sum() > 0.9 * diff.size
    assert np.array_equal(a[2], g[2])
    assert all((a[k] == vals[k]).sum() > 100 for k in range(3))


def test_srcnodata_list_errors(gg, scenes, tmp_path):
    src = scenes[("per", "UInt16", 3)]
    r = gg.run("gdal_ortho", "-q", "-device", "cpu", "-dem", str(scenes["dem"]), "-srcnodata",
               "1999 abc", *UTM, str(src), str(tmp_path / "x.tif"), check=False)
    assert r.returncode != 0
    assert "srcnodata" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "x.tif").exists()


@pytest.mark.opencl
@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
@pytest.mark.parametrize("mode", ["one", "own"])
def test_multiband_nodata_cpu_and_opencl_agree(gg, scenes, mode, r):
    d, dem = scenes["dir"], scenes["dem"]
    args, nodata = nodata_args(mode, 4)
    for dtype in ("UInt16", "Float32"):
        outs = []
        for dev in ("cpu", "opencl"):
            o = d / f"dev_{dev}_{mode}_{dtype}_{r}.tif"
            gg.run("gdal_ortho", "-q", "-device", dev, "-dem", str(dem), "-r", r, *args, *UTM,
                   str(scenes[(mode, dtype, 4)]), str(o))
            outs.append(read_all(o)[0])
        a, b = outs
        for k, nd in enumerate(nodata):
            assert ((a[k] != nd) == (b[k] != nd)).all(), f"band {k + 1}: footprints differ"
            assert (a[k] != nd).sum() > 0.3 * a[k].size
            assert np.max(np.abs(a[k] - b[k])) <= 1e-3 * 2600


@pytest.mark.parametrize("spikes", [False, True])
@pytest.mark.parametrize("mode", ["one", "own"])
def test_multiband_window_pipeline_is_resident(gg, scenes, tmp_path, mode, device, spikes):
    """The windowed source (all bands of a window uploaded together, on a
    device too small for the source) gives the resident source's bytes
    (every band of a block in one queued block); also where needles in the
    DEM make blocks run again with more source rows or a wider window."""
    dem, src = scenes["dem"], scenes[(mode, "UInt16", 4)]
    if spikes:
        dem = add_spikes(write_dem(tmp_path / "spikes.tif", np.random.default_rng(7), 4326),
                         3000, 13)
    args, _ = nodata_args(mode, 4)
    outs = []
    for how, env in (("window", {"GG_DEVICE_MEMORY": "1M"}), ("resident", None)):
        o = tmp_path / f"{how}.tif"
        log = gg.run("gdal_ortho", "-q", "-v", "-device", device, "-dem", str(dem), "-r",
                     "cubic", "-grid_step", "8", *args, *UTM, str(src), str(o), env=env).stderr
        assert f"source {'read per block window' if how == 'window' else 'resident'}" in log, log
        assert ("needed" in log) == spikes, log
        outs.append(read_all(o)[0])
    assert np.array_equal(outs[0], outs[1])
    assert (outs[0] != 1999).sum() > 0.3 * outs[0].size
