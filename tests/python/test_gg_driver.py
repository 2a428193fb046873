"""GDAL integration: the GG driver (connection strings, .ggvrt), the utilities'
GDAL conventions (--config, -device, progress, -q, -of GGVRT)."""
import re

import numpy as np
import pytest
from osgeo import gdal

import reference as ref

ND = -9999.0

# name -> (utility, utility options, GG: options, complex input?)
PRODUCTS = {
    "multilook": ("gdal_multilook", ["-looks", 4, 4], "looks=4x4", False),
    "multilook-complex": ("gdal_multilook", ["-looks", 3, 2, "-complex"], "looks=3x2:complex=yes", True),
    "rotate": ("gdal_rotate", ["-angle", 30, "-scale", 1.5], "angle=30:scale=1.5", False),
    "rotate-outsize": ("gdal_rotate", ["-angle", -17.3, "-scale", 0.8, "-outsize", 45, 21],
                       "angle=-17.3:scale=0.8:outsize=45x21", False),
    "radnorm": ("gdal_radnorm", ["-coef", 35], "coef=35", False),
    "radnorm-levels": ("gdal_radnorm", ["-coef", 8, "-levels", 16], "coef=8:levels=16", False),
}
OP = {k: k.split("-")[0] for k in PRODUCTS}


@pytest.fixture
def source(gg, make, rng, tmp_path):
    """Factory: a 37x29 input with NaN and nodata (complex for the complex products)."""
    def build(product):
        if PRODUCTS[product][3]:
            a = make.complex(rng, nodata=ND)
        else:
            a = make.real(rng, nodata=ND)
        return gg.write(tmp_path / "in.tif", a, nodata=ND), a
    return build


def run_utility(gg, product, src, out, *extra):
    util, opts, _, _ = PRODUCTS[product]
    return gg.run(util, *extra, *opts, src, out)


def connection(product, src):
    return f"GG:{OP[product]}:{PRODUCTS[product][2]}:{src}"


def assert_same_raster(gg, a_path, b_path, what):
    a, a_nd, a_gt, a_dt = gg.read(a_path)
    b, b_nd, b_gt, b_dt = gg.read(b_path)
    assert a_dt == b_dt, f"{what}: data type {a_dt} vs {b_dt}"
    assert gg.same_bits(a, b), f"{what}: pixels differ"
    assert np.array_equal(a_gt, b_gt), f"{what}: geotransform {a_gt} vs {b_gt}"
    assert (a_nd == b_nd) or (a_nd != a_nd and b_nd != b_nd), f"{what}: nodata {a_nd} vs {b_nd}"


def test_formats_lists_gg(gg):
    p = gg.run("gdalinfo", "--formats")
    assert re.search(r"^\s*GG\s+-raster-", p.stdout, re.M), "GG is missing from gdalinfo --formats"


@pytest.mark.parametrize("product", PRODUCTS)
def test_translate_matches_utility(gg, source, tmp_path, device, product):
    src, _ = source(product)
    run_utility(gg, product, src, tmp_path / "util.tif", "-q", "-device", device)
    gg.run("gdal_translate", "-q", "--config", "GG_DEVICE", device, connection(product, src),
           tmp_path / "gg.tif")
    assert_same_raster(gg, tmp_path / "util.tif", tmp_path / "gg.tif",
                       f"gdal_translate GG:{OP[product]} vs utility on {device}")


@pytest.mark.parametrize("product", PRODUCTS)
def test_python_open(gg, source, tmp_path, device, product):
    src, a = source(product)
    run_utility(gg, product, src, tmp_path / "util.tif", "-q", "-device", device)
    want, want_nd, want_gt, want_dt = gg.read(tmp_path / "util.tif")
    gdal.SetConfigOption("GG_DEVICE", device)
    try:
        ds = gdal.Open(connection(product, src))
        band = ds.GetRasterBand(1)
        assert (ds.RasterXSize, ds.RasterYSize) == (want.shape[1], want.shape[0])
        assert gdal.GetDataTypeName(band.DataType) == want_dt
        assert np.array_equal(ds.GetGeoTransform(), want_gt)
        got = band.ReadAsArray()
        # a window read, too: blocks are computed lazily and independently
        win = band.ReadAsArray(3, 2, want.shape[1] - 5, want.shape[0] - 4)
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)
    assert gg.same_bits(got, want), f"gdal.Open(GG:{OP[product]}) differs from the utility's output"
    assert gg.same_bits(win, want[2:-2, 3:-2])


@pytest.mark.parametrize("product", PRODUCTS)
def test_ggvrt(gg, source, tmp_path, product):
    src, _ = source(product)
    vrt = tmp_path / "out.ggvrt"
    p = run_utility(gg, product, src, vrt, "-q", "-of", "GGVRT", "-device", "cpu")
    assert p.stdout == ""
    text = vrt.read_text()
    assert "<GGVRTDataset" in text and len(text) < 4096
    run_utility(gg, product, src, tmp_path / "util.tif", "-q", "-device", "cpu")
    want = gg.read(tmp_path / "util.tif")[0]
    gdal.SetConfigOption("GG_DEVICE", "cpu")
    try:
        ds = gdal.Open(str(vrt))
        assert ds.GetDriver().ShortName == "GG"
        got = ds.GetRasterBand(1).ReadAsArray()
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)
    assert gg.same_bits(got, want), ".ggvrt reads differently from the utility's output"
    gg.run("gdal_translate", "-q", "--config", "GG_DEVICE", "cpu", vrt, tmp_path / "from_vrt.tif")
    assert_same_raster(gg, tmp_path / "util.tif", tmp_path / "from_vrt.tif", "gdal_translate .ggvrt")


def test_ggvrt_moves_with_its_input(gg, source, tmp_path):
    """A .ggvrt written next to its input, named relatively, refers to it
    relatively: the pair can move together."""
    src, _ = source("multilook")
    gg.run("gdal_multilook", "-q", "-of", "GGVRT", "-looks", 4, 4, src.name, "ml.ggvrt", cwd=tmp_path)
    moved = tmp_path / "moved"
    moved.mkdir()
    src.rename(moved / src.name)
    (tmp_path / "ml.ggvrt").rename(moved / "ml.ggvrt")
    gg.run("gdal_translate", "-q", "--config", "GG_DEVICE", "cpu", moved / "ml.ggvrt", tmp_path / "a.tif")
    gg.run("gdal_multilook", "-q", "-device", "cpu", "-looks", 4, 4, moved / src.name, tmp_path / "b.tif")
    assert_same_raster(gg, tmp_path / "a.tif", tmp_path / "b.tif", "moved .ggvrt")


@pytest.mark.parametrize("how", ["--config", "-device", "env"])
def test_device_selection(gg, source, tmp_path, how):
    src, a = source("multilook")
    out = tmp_path / "out.tif"
    if how == "--config":
        gg.run("gdal_multilook", "-q", "--config", "GG_DEVICE", "cpu", "-looks", 4, 4, src, out)
    elif how == "-device":
        gg.run("gdal_multilook", "-q", "-device", "cpu", "-looks", 4, 4, src, out)
    else:
        gg.run("gdal_multilook", "-q", "-looks", 4, 4, src, out, env={"GG_DEVICE": "cpu"})
    got = gg.read(out)[0]
    want, invalid = ref.multilook(a, 4, 4, nodata=ND)
    ref.check_product(got, want, invalid, ND, ref.TOL["multilook"], what=f"device via {how}")


@pytest.mark.parametrize("product", ["multilook", "rotate", "radnorm"])
def test_progress(gg, source, tmp_path, product):
    src, _ = source(product)
    p = run_utility(gg, product, src, tmp_path / "out.tif", "-device", "cpu")
    assert gg.progress in p.stdout, f"no GDAL progress line in stdout: {p.stdout!r}"
    assert "ERROR" not in p.stderr


@pytest.mark.parametrize("product", ["multilook", "rotate", "radnorm"])
def test_quiet(gg, source, tmp_path, product):
    src, _ = source(product)
    p = run_utility(gg, product, src, tmp_path / "out.tif", "-q", "-device", "cpu")
    assert p.stdout == "", f"-q printed {p.stdout!r}"
    assert (tmp_path / "out.tif").exists()


def test_gdalinfo_lazy_open(gg, source):
    """gdalinfo on a connection string describes the product (size, type)."""
    src, _ = source("multilook")
    # a name relative to the current directory, as users type it
    p = gg.run("gdalinfo", "--config", "GG_DEVICE", "cpu", connection("multilook", src.name), cwd=src.parent)
    assert "Driver: GG" in p.stdout
    assert "Size is 9, 7" in p.stdout
    assert "Type=Float32" in p.stdout


@pytest.mark.parametrize("product", ["multilook", "rotate", "radnorm"])
def test_multiband(gg, make, rng, tmp_path, product):
    """Every band is processed on its own (radnorm: its own statistics)."""
    bands = [make.real(rng, nodata=ND), make.real(rng, lo=20.0, hi=900.0, nodata=ND)]
    src = gg.write(tmp_path / "in.tif", bands, nodata=ND)
    run_utility(gg, product, src, tmp_path / "out.tif", "-q", "-device", "cpu")
    for i, a in enumerate(bands):
        out = gg.read(tmp_path / "out.tif", band=i + 1)[0]
        if product == "multilook":
            want, invalid = ref.multilook(a, 4, 4, nodata=ND)
        elif product == "rotate":
            want, invalid, _ = ref.rotate(a, 30, 1.5, nodata=ND)
        else:
            want, invalid = ref.radnorm(a, 35, nodata=ND)
        ref.check_product(out, want, invalid, ND, ref.TOL[product], what=f"{product} band {i + 1}",
                          min_valid=0.05)
