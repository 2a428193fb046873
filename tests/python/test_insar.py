"""gdal_insar (the GG `coherence` operation) against the float64 reference
(reference.coherence): interferogram, boxcar coherence and amplitude of
correlated complex pairs, the product-selection flags, the one-file-per-band
rule, .ggvrt, the GG: connection string, and bad input."""
import math

import numpy as np
import pytest
from osgeo import gdal

import reference as ref
from test_ptsel import bad_folders, per_band, refuse  # noqa: F401 (bad_folders: the fixture)

ND = -9999.0
H, W = 35, 41  # odd sizes: looks 2x3 drop a partial column and two partial rows
PRODUCTS = ("interferogram", "coherence", "amplitude")


def correlated_pair(make, rng, H=H, W=W):
    """s2 = rho*s1 + sqrt(1-rho^2)*noise, rho from 0 to 0.98 across the image
    (columns) and a little along it (rows); NaN/Inf samples and nodata real
    parts in both, and a 7x7 hole in s1 that empties whole windows and look
    blocks."""
    s1 = make.complex(rng, H, W, nan=0).astype(np.complex128)
    noise = make.complex(rng, H, W, nan=0).astype(np.complex128)
    rho = np.clip(np.linspace(0.0, 0.98, W)[None, :] * np.linspace(0.9, 1.0, H)[:, None], 0, 1)
    s2 = rho * s1 + np.sqrt(1 - rho ** 2) * noise
    s1, s2 = s1.astype(np.complex64), s2.astype(np.complex64)
    s1.real[rng.random((H, W)) < 0.03] = np.nan
    s2.imag[rng.random((H, W)) < 0.03] = np.inf
    s1.real[rng.random((H, W)) < 0.03] = ND
    s2.real[rng.random((H, W)) < 0.03] = ND
    s1[10:17, 12:19] = np.nan
    return s1, s2


@pytest.fixture
def pair(gg, make, rng, tmp_path):
    """primary.tif, secondary.tif (both with nodata ND) and their arrays."""
    s1, s2 = correlated_pair(make, rng)
    p = gg.write(tmp_path / "primary.tif", s1, nodata=ND)
    s = gg.write(tmp_path / "secondary.tif", s2, nodata=ND)
    return p, s, s1, s2


def check(out, want, invalid, product, nodata, what):
    """Identical nodata masks, then the largest error within the tolerance:
    absolute for coherence and interferogram, relative for amplitude."""
    out = np.asarray(out)
    assert out.shape == want.shape, f"{what}: shape {out.shape}, expected {want.shape}"
    got_nd = ref.is_nodata(out, nodata)
    bad = got_nd != invalid
    assert not bad.any(), (f"{what}: nodata mask differs at {int(bad.sum())} pixels, first (row, col) "
                           f"{tuple(int(i) for i in np.argwhere(bad)[0])}")
    ok = ~invalid
    assert ok.sum() >= 0.5 * ok.size, f"{what}: too few valid pixels ({int(ok.sum())})"
    assert np.isfinite(out[ok]).all(), f"{what}: non-finite values on valid pixels"
    diff = np.abs(out[ok].astype(want.dtype) - want[ok])
    err = float(np.max(diff / np.abs(want[ok]) if product == "amplitude" else diff))
    assert err <= ref.TOL[product], f"{what}: max {'relative' if product == 'amplitude' else 'absolute'} " \
                                    f"error {err:.3e} > {ref.TOL[product]:g}"
    return err


def assert_same_bands(gg, a_path, a_band, b_path, b_band, what):
    a, a_nd, a_gt, a_dt = gg.read(a_path, a_band)
    b, b_nd, b_gt, b_dt = gg.read(b_path, b_band)
    assert a_dt == b_dt, f"{what}: data type {a_dt} vs {b_dt}"
    assert gg.same_bits(a, b), f"{what}: pixels differ"
    assert np.array_equal(a_gt, b_gt), f"{what}: geotransform {a_gt} vs {b_gt}"
    assert (a_nd == b_nd) or (a_nd != a_nd and b_nd != b_nd), f"{what}: nodata {a_nd} vs {b_nd}"


@pytest.mark.parametrize("window,looks", [((5, 5), (1, 1)), ((3, 5), (1, 1)), ((5, 5), (2, 3)),
                                          ((3, 5), (2, 3))],
                         ids=["default", "window3x5", "looks2x3", "window3x5-looks2x3"])
def test_products(gg, pair, tmp_path, device, window, looks):
    """All three products (the default) against the reference, one file per
    product, geotransform scaled by the looks."""
    src1, src2, s1, s2 = pair
    dst = tmp_path / "ins.tif"
    opts = []
    if window != (5, 5):
        opts += ["-window", *window]
    if looks != (1, 1):
        opts += ["-looks", *looks]
    gg.run("gdal_insar", "-q", "-device", device, *opts, src1, src2, dst)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["primary.tif", "secondary.tif"] + [per_band(dst, n).name for n in PRODUCTS]), \
        "expected exactly <stem>_interferogram/_coherence/_amplitude next to the inputs"
    want = ref.coherence(s1, s2, window, looks, nodata=ND)
    gt_in = gg.read(src1)[2]
    if looks == (2, 3):
        assert want["interferogram"][1].any(), "test data must hold an all-invalid look block"
    if window == (5, 5):
        assert want["coherence"][1].any(), "test data must hold an all-invalid window"
    for name in PRODUCTS:
        out, nd, gt, dt = gg.read(per_band(dst, name))
        assert dt == ("CFloat32" if name == "interferogram" else "Float32"), f"{name}: type {dt}"
        assert out.shape == (H // looks[1], W // looks[0])
        gg.check_nodata_value(nd, math.nan, f"{name}: NaN by default, not the input's nodata")
        assert np.array_equal(gt, ref.multilook_geotransform(gt_in, *looks)), f"{name}: geotransform {gt}"
        ds = gdal.Open(str(per_band(dst, name)))
        assert ds.RasterCount == 1 and ds.GetRasterBand(1).GetDescription() == name
        ds = None
        values, invalid = want[name]
        err = check(out, values, invalid, name, math.nan, f"{name} {window} {looks} on {device}")
        gg.record_error(f"{name}/max-{'rel' if name == 'amplitude' else 'abs'}", device, err)
    coh = gg.read(per_band(dst, "coherence"))[0]
    assert np.nanmin(coh) >= 0 and np.nanmax(coh) <= 1


def test_coherence_follows_rho(make, rng):
    """Sanity of the test data: with a large window the coherence tracks rho."""
    s1, s2 = correlated_pair(make, rng)
    want = ref.coherence(s1, s2, (9, 9), nodata=ND)["coherence"][0]
    assert np.nanmean(want[:, :5]) < 0.35 and np.nanmean(want[:, -5:]) > 0.8


def test_dstnodata(gg, pair, tmp_path, device):
    src1, src2, s1, s2 = pair
    dst = tmp_path / "c.tif"
    gg.run("gdal_insar", "-q", "-device", device, "-coherence", "-dstnodata", -1, src1, src2, dst)
    out, nd, _, _ = gg.read(dst)
    gg.check_nodata_value(nd, -1.0, "-dstnodata")
    values, invalid = ref.coherence(s1, s2, nodata=ND)["coherence"]
    check(out, values, invalid, "coherence", -1.0, f"coherence -dstnodata on {device}")


@pytest.mark.parametrize("flags,bands", [
    (["-coherence", "-amplitude"], ["coherence", "amplitude"]),
    (["-amplitude", "-coherence"], ["amplitude", "coherence"]),
    (["-interferogram"], ["interferogram"]),
    (["-amplitude"], ["amplitude"]),
], ids=["coh-amp", "amp-coh", "ifg", "amp"])
def test_product_selection(gg, pair, tmp_path, flags, bands):
    """Products of one type go to the destination itself, in the order of
    the flags; their pixels are those of the all-products run."""
    src1, src2, _, _ = pair
    full = tmp_path / "full" / "all.tif"
    full.parent.mkdir()
    gg.run("gdal_insar", "-q", "-device", "cpu", src1, src2, full)
    out = tmp_path / "sel" / "sel.tif"
    out.parent.mkdir()
    gg.run("gdal_insar", "-q", "-device", "cpu", *flags, src1, src2, out)
    assert [p.name for p in out.parent.iterdir()] == ["sel.tif"], "one file expected, no per-band files"
    ds = gdal.Open(str(out))
    assert ds.RasterCount == len(bands)
    assert [ds.GetRasterBand(i + 1).GetDescription() for i in range(len(bands))] == bands
    want_type = "CFloat32" if bands == ["interferogram"] else "Float32"
    assert all(gdal.GetDataTypeName(ds.GetRasterBand(i + 1).DataType) == want_type for i in range(len(bands)))
    ds = None
    for i, name in enumerate(bands):
        assert_same_bands(gg, out, i + 1, per_band(full, name), 1, f"{' '.join(flags)}: band {name}")


def test_ggvrt(gg, pair, tmp_path):
    """-of GGVRT writes one .ggvrt holding all three products, which reads
    back (Python and gdal_translate) identically to the per-band files."""
    src1, src2, _, _ = pair
    (tmp_path / "files").mkdir()
    gg.run("gdal_insar", "-q", "-device", "cpu", "-window", 3, 5, "-looks", 2, 3, src1, src2,
           tmp_path / "files" / "ins.tif")
    vrt = tmp_path / "ins.ggvrt"
    p = gg.run("gdal_insar", "-q", "-of", "GGVRT", "-window", 3, 5, "-looks", 2, 3, src1, src2, vrt)
    assert p.stdout == ""
    assert sorted(x.name for x in tmp_path.iterdir()) == ["files", "ins.ggvrt", "primary.tif",
                                                          "secondary.tif"]
    text = vrt.read_text()
    assert "<GGVRTDataset" in text and text.count("<Input") == 2
    assert text.index("primary.tif") < text.index("secondary.tif")
    gdal.SetConfigOption("GG_DEVICE", "cpu")
    try:
        ds = gdal.Open(str(vrt))
        assert ds.GetDriver().ShortName == "GG" and ds.RasterCount == 3
        got = [ds.GetRasterBand(i + 1).ReadAsArray() for i in range(3)]
        names = [ds.GetRasterBand(i + 1).GetDescription() for i in range(3)]
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)
    assert names == list(PRODUCTS)
    for name, a in zip(PRODUCTS, got):
        want = gg.read(per_band(tmp_path / "files" / "ins.tif", name))[0]
        assert gg.same_bits(a, want), f".ggvrt band {name} reads differently from the utility's file"
    # gdal_translate of the two real bands (one type, so one GeoTIFF)
    gg.run("gdal_translate", "-q", "--config", "GG_DEVICE", "cpu", "-b", 2, "-b", 3, vrt, tmp_path / "ca.tif")
    for b, name in ((1, "coherence"), (2, "amplitude")):
        assert_same_bands(gg, tmp_path / "ca.tif", b, per_band(tmp_path / "files" / "ins.tif", name), 1,
                          f"gdal_translate .ggvrt band {name}")


@pytest.mark.parametrize("opts,conn", [([], "window=5x5"),
                                       (["-window", 3, 5, "-looks", 2, 3], "window=3x5:looks=2x3")],
                         ids=["5x5", "3x5-looks2x3"])
def test_connection_string(gg, pair, tmp_path, device, opts, conn):
    """GG:coherence:<options>:a.tif,b.tif is bit-identical to the utility."""
    src1, src2, _, _ = pair
    dst = tmp_path / "util.tif"
    gg.run("gdal_insar", "-q", "-device", device, *opts, src1, src2, dst)
    gdal.SetConfigOption("GG_DEVICE", device)
    try:
        ds = gdal.Open(f"GG:coherence:{conn}:{src1},{src2}")
        assert ds.RasterCount == 3
        got = {ds.GetRasterBand(i + 1).GetDescription(): ds.GetRasterBand(i + 1).ReadAsArray()
               for i in range(3)}
        gt = ds.GetGeoTransform()
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)
    for name in PRODUCTS:
        want, _, want_gt, _ = gg.read(per_band(dst, name))
        assert gg.same_bits(got[name], want), f"GG:coherence {name} differs from the utility on {device}"
        assert np.array_equal(gt, want_gt)
    gg.run("gdal_translate", "-q", "--config", "GG_DEVICE", device, "-b", 2,
           f"GG:coherence:{conn}:{src1},{src2}", tmp_path / "coh.tif")
    assert_same_bands(gg, tmp_path / "coh.tif", 1, per_band(dst, "coherence"), 1,
                      f"gdal_translate GG:coherence on {device}")


def test_vrt_output(gg, pair, tmp_path):
    """-of VRT keeps the mixed-type products in one file (no per-band files)."""
    src1, src2, _, _ = pair
    gg.run("gdal_insar", "-q", "-device", "cpu", src1, src2, tmp_path / "ins.tif")
    vrt = tmp_path / "ins.vrt"
    gg.run("gdal_insar", "-q", "-device", "cpu", "-of", "VRT", src1, src2, vrt)
    assert not per_band(vrt, "coherence").exists()
    gdal.SetConfigOption("GG_DEVICE", "cpu")
    try:
        ds = gdal.Open(str(vrt))
        got = ds.GetRasterBand(2).ReadAsArray()
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)
    assert gg.same_bits(got, gg.read(per_band(tmp_path / "ins.tif", "coherence"))[0])


# ------------------------------------------------------------------ bad input

# id -> (argv with placeholders {<input stem>}, {nosuch} and {out}; keywords the ERROR line
# must contain)
BAD = {
    "one-source": (["gdal_insar", "{a}", "{out}"], ["2 source", "got 1"]),
    "three-sources": (["gdal_insar", "{a}", "{b}", "{c}", "{out}"], ["2 source", "got 3"]),
    "real-secondary": (["gdal_insar", "{a}", "{real}", "{out}"], ["real.tif", "Float32"]),
    "real-both": (["gdal_insar", "{real}", "{real2}", "{out}"], ["complex"]),
    "size-mismatch": (["gdal_insar", "{a}", "{small}", "{out}"], ["small.tif", "size"]),
    "missing-secondary": (["gdal_insar", "{a}", "{nosuch}", "{out}"], ["nosuch.tif"]),
    "not-a-raster": (["gdal_insar", "{a}", "{notraster}", "{out}"], ["notraster.tif"]),
    "window-even": (["gdal_insar", "-window", 4, 5, "{a}", "{b}", "{out}"], ["window"]),
    "gg-one-input": (["gdal_translate", "GG:coherence:{a}", "{out}"], ["coherence", "2"]),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input(gg, bad_folders, case):
    refuse(gg, bad_folders, *BAD[case])
