"""gdal_quicklook: PNG quicklooks of coherence/tau, wrapped phase, amplitude,
offset fields and radar reflectivity.  Checks that the kind is detected from
the band description, that pixels get the colour the colour map gives their
value (not merely "some picture"), that the colour bar is there and runs the
right way, that nodata is grey, that big rasters are averaged down, on real
products of the utilities, and that bad input fails cleanly with no output."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
os.environ["GG_LIBRARY"] = str(BUILD / "lib")
sys.path.insert(0, str(REPO / "gdal_plugins" / "python"))

from PIL import Image  # noqa: E402

from geogpu import colormaps as cm  # noqa: E402
from geogpu import quicklook as ql  # noqa: E402

SLC = REPO / "autotest_data" / "winnipeg_slc" / "winnipeg_hh.slc"
AMP = REPO / "autotest_data" / "psps_houston" / "20180115_amp_crop.tif"


def write(path, bands, names=None, nodata=None, units=None):
    bands = bands if isinstance(bands, list) else [bands]
    a0 = np.asarray(bands[0])
    dt = gdal.GDT_CFloat32 if np.iscomplexobj(a0) else gdal.GDT_Float32
    ds = gdal.GetDriverByName("GTiff").Create(str(path), a0.shape[1], a0.shape[0], len(bands), dt)
    for i, b in enumerate(bands):
        band = ds.GetRasterBand(i + 1)
        band.WriteArray(np.asarray(b))
        if names:
            band.SetDescription(names[i])
        if nodata is not None:
            band.SetNoDataValue(nodata)
        if units:
            band.SetUnitType(units)
    ds = None
    return path


def quicklook(gg, src, dst, *opts):
    gg.run("gdal_quicklook", *opts, src, dst)
    assert Path(dst).exists()
    img = Image.open(dst)
    img.load()
    info = dict(img.text)
    return np.asarray(img.convert("RGB")), info


def box(info, key):
    return tuple(int(v) for v in info[key].split(","))


def image_px(rgb, info, shape, r, c):
    """The displayed colour of data pixel (r, c) (the centre of its cell)."""
    x0, y0, x1, y1 = box(info, "geogpu:image")
    k = (x1 - x0) / shape[1]
    return tuple(int(v) for v in rgb[int(y0 + (r + 0.5) * k), int(x0 + (c + 0.5) * k)])


def lum(rgb):
    rgb = np.asarray(rgb, float)
    return 0.2126 * rgb[..., 0] + 0.7152 * rgb[..., 1] + 0.0722 * rgb[..., 2]


def check_bar(rgb, info, increasing=True):
    """A colour bar: many colours, from bottom to top in order of lightness
    for sequential maps."""
    x0, y0, x1, y1 = box(info, "geogpu:colorbar")
    assert x1 - x0 >= 8 and y1 - y0 >= 100, "colour bar too small"
    col = rgb[y0:y1, (x0 + x1) // 2]
    assert len({tuple(c) for c in col}) >= 10, "colour bar is not a gradient"
    if increasing is not None:
        L = lum(col)
        assert (L[0] < L[-1]) == (not increasing) or (L[-1] < L[0]) == increasing
        assert np.corrcoef(np.arange(len(L)), L)[0, 1] < -0.95, "bar lightness is not monotonic"
    return col


def longest_run(v):
    """Length of the longest run of True in a 1-D boolean array."""
    best = run = 0
    for x in v:
        run = run + 1 if x else 0
        best = max(best, run)
    return best


def check_picture(rgb, info):
    x0, y0, x1, y1 = box(info, "geogpu:image")
    im = rgb[y0:y1, x0:x1]
    assert im.shape[0] >= 100 and im.shape[1] >= 100, "image too small to see"
    assert im.std() > 5, "image is flat"
    return im


# ---------------------------------------------------------------- the kinds

def test_coherence(gg, tmp_path, rng):
    """Left half 0.1, right half 0.9 (plus a noisy strip): each pixel has
    the sequential map's colour of its value; auto-detected from the
    description; colour bar light at the top (1) and dark at the bottom."""
    H, W = 40, 60
    c = np.full((H, W), 0.1, np.float32)
    c[:, W // 2:] = 0.9
    c[30:, :] = rng.uniform(0, 1, (10, W))
    c[5, 5] = -9999
    src = write(tmp_path / "coh.tif", c, ["coherence"], nodata=-9999)
    rgb, info = quicklook(gg, src, tmp_path / "coh.png")
    assert info["geogpu:kind"] == "coherence" and info["geogpu:range"] == "0,1"
    table = cm.sequential()
    assert image_px(rgb, info, c.shape, 10, 10) == tuple(cm.apply(table, c[10, 10]))
    assert image_px(rgb, info, c.shape, 10, 50) == tuple(cm.apply(table, c[10, 50]))
    assert image_px(rgb, info, c.shape, 5, 5) == ql.NODATA_RGB
    check_picture(rgb, info)
    bar = check_bar(rgb, info, increasing=True)
    assert tuple(bar[-1]) == tuple(table[0]) and tuple(bar[0]) == tuple(table[-1])


def test_tau_from_ptsel_is_coherence(gg, tmp_path, rng):
    t = rng.uniform(0, 1, (30, 30)).astype(np.float32)
    src = write(tmp_path / "tau.tif", t, ["tau_max"])
    _, info = quicklook(gg, src, tmp_path / "tau.png")
    assert info["geogpu:kind"] == "coherence"


def test_phase(gg, tmp_path):
    """A complex interferogram with a phase ramp: hue follows the cyclic
    map (brightness from the amplitude, constant here); the bar wraps."""
    H, W = 50, 80
    x = np.arange(W)[None, :]
    phase = np.angle(np.exp(1j * (0.25 * x + 0 * np.arange(H)[:, None])))
    z = (3.0 * np.exp(1j * phase)).astype(np.complex64)
    z[40:, :40] *= 0.1  # darker where the amplitude is low
    src = write(tmp_path / "ifg.tif", z, ["interferogram"])
    rgb, info = quicklook(gg, src, tmp_path / "ifg.png")
    assert info["geogpu:kind"] == "phase"
    table = cm.cyclic()
    for col in (3, 17, 33, 61):
        want = cm.apply(table, (phase[0, col] + np.pi) / (2 * np.pi)).astype(float)
        got = np.array(image_px(rgb, info, z.shape, 10, col), float)
        assert np.abs(got - want).max() <= 1, (col, got, want)
    assert lum(image_px(rgb, info, z.shape, 45, 10)) < 0.6 * lum(image_px(rgb, info, z.shape, 10, 10))
    bar = check_bar(rgb, info, increasing=None)
    assert np.abs(bar[0].astype(int) - bar[-1].astype(int)).max() <= 6, "cyclic bar must wrap"


def test_amplitude_db_stretch(gg, tmp_path, rng):
    """Real amplitude: 20 log10, 2..98 % stretch: darker for smaller values,
    black at the 2nd percentile and below, white at the 98th and above."""
    a = (10 ** rng.uniform(0, 3, (60, 70))).astype(np.float32)
    src = write(tmp_path / "amp.tif", a, ["amplitude"])
    rgb, info = quicklook(gg, src, tmp_path / "amp.png")
    assert info["geogpu:kind"] == "amplitude"
    db = 20 * np.log10(a.astype(float))
    lo, hi = np.percentile(db, [2, 98])
    assert [float(v) for v in info["geogpu:range"].split(",")] == pytest.approx([lo, hi], rel=1e-5)
    r, c = np.unravel_index(np.argmin(a), a.shape)
    assert image_px(rgb, info, a.shape, r, c) == (0, 0, 0)
    r, c = np.unravel_index(np.argmax(a), a.shape)
    assert image_px(rgb, info, a.shape, r, c) == (255, 255, 255)
    vals = rng.choice(a.size, 200, replace=False)
    g = [image_px(rgb, info, a.shape, *np.unravel_index(i, a.shape))[0] for i in vals]
    assert np.corrcoef(db.ravel()[vals], g)[0, 1] > 0.95
    check_picture(rgb, info)
    check_bar(rgb, info, increasing=True)


def test_offsets_arrows(gg, tmp_path, rng):
    """dx/dy bands drawn as arrows over the amplitude band: arrows present
    (their colour), pointing along +x for a field dx=2, dy=0."""
    H, W = 120, 160
    amp = rng.rayleigh(1.0, (H, W)).astype(np.float32)
    dx = np.full((H, W), 2.0, np.float32)
    dy = np.zeros((H, W), np.float32)
    src = write(tmp_path / "off.tif", [dx, dy, amp], ["dx", "dy", "amplitude"])
    rgb, info = quicklook(gg, src, tmp_path / "off.png")
    assert info["geogpu:kind"] == "offsets" and info["geogpu:band"] == "1,2"
    x0, y0, x1, y1 = box(info, "geogpu:image")
    im = rgb[y0:y1, x0:x1].astype(int)
    arrow = (np.abs(im - np.array([255, 210, 0])).sum(axis=-1) <= 30)
    assert arrow.mean() > 0.01, "no arrows drawn"
    # horizontal arrows: long runs of arrow colour along rows, short along columns
    rows = max(longest_run(r) for r in arrow)
    cols = max(longest_run(c) for c in arrow.T)
    assert rows > 2 * cols, (rows, cols)


def test_xcorr_offsets(gg, tmp_path, rng):
    """gdal_xcorr's product (offset_down, offset_across, snr, ...) is drawn
    as arrows (x = across, band 2; y = down, band 1) over its SNR."""
    H, W = 160, 168
    a = rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))
    ky, kx = np.fft.fftfreq(H)[:, None], np.fft.fftfreq(W)[None, :]
    b = np.fft.ifft2(np.fft.fft2(a) * np.exp(-2j * np.pi * (kx * 3.0 + ky * 0.0)))
    p = write(tmp_path / "p.tif", a.astype(np.complex64))
    s = write(tmp_path / "s.tif", b.astype(np.complex64))
    gg.run("gdal_xcorr", "-q", "-device", "cpu", "-window", 32, 32, "-search", 8, 8, "-skip", 32,
           32, p, s, tmp_path / "x.tif")
    rgb, info = quicklook(gg, tmp_path / "x.tif", tmp_path / "x.png")
    assert info["geogpu:kind"] == "offsets" and info["geogpu:band"] == "2,1"
    x0, y0, x1, y1 = box(info, "geogpu:image")
    arrow = np.abs(rgb[y0:y1, x0:x1].astype(int) - np.array([255, 210, 0])).sum(axis=-1) <= 30
    assert max(longest_run(r) for r in arrow) > 2 * max(longest_run(c) for c in arrow.T)


def test_offsets_need_two_bands(gg, tmp_path):
    src = write(tmp_path / "one.tif", np.ones((20, 20), np.float32))
    p = gg.run("gdal_quicklook", "-kind", "offsets", src, tmp_path / "o.png", check=False)
    assert p.returncode == 1 and "two bands" in p.stderr
    assert not (tmp_path / "o.png").exists()


def test_reflectivity_palette(gg, tmp_path):
    """dBZ values get the NWS colour of their 5 dBZ step; below 5 dBZ and
    nodata are the dark background; the bar holds the palette."""
    H, W = 60, 60
    z = np.full((H, W), 2.0, np.float32)
    z[:20, :20], z[:20, 40:], z[40:, :20], z[40:, 40:] = 7.0, 22.0, 52.0, 74.0
    z[30, 30] = -9999
    src = write(tmp_path / "ppi.tif", z, ["DBZ"], nodata=-9999, units="dBZ")
    rgb, info = quicklook(gg, src, tmp_path / "ppi.png")
    assert info["geogpu:kind"] == "reflectivity"
    pal = dict(cm.NWS_DBZ)
    assert image_px(rgb, info, z.shape, 5, 5) == pal[5]
    assert image_px(rgb, info, z.shape, 5, 50) == pal[20]
    assert image_px(rgb, info, z.shape, 50, 5) == pal[50]
    assert image_px(rgb, info, z.shape, 50, 50) == pal[70]
    assert image_px(rgb, info, z.shape, 25, 30) == ql.RADAR_BG
    assert image_px(rgb, info, z.shape, 30, 30) == ql.RADAR_BG
    x0, y0, x1, y1 = box(info, "geogpu:colorbar")
    bar = {tuple(c) for c in rgb[y0:y1, (x0 + x1) // 2]}
    assert {c for _, c in cm.NWS_DBZ} <= bar


def test_velocity(gg, tmp_path):
    """Radial velocity: diverging map symmetric about zero, green toward
    (negative), red away (positive), light neutral at zero."""
    v = np.tile(np.linspace(-8, 8, 81, dtype=np.float32), (40, 1))
    src = write(tmp_path / "vel.tif", v, ["VEL"], units="m/s")
    rgb, info = quicklook(gg, src, tmp_path / "vel.png")
    assert info["geogpu:kind"] == "velocity"
    lo, hi = (float(x) for x in info["geogpu:range"].split(","))
    assert hi == -lo > 0
    r, g, b = image_px(rgb, info, v.shape, 20, 2)
    assert g > r + 40, "negative (toward) must be green"
    r, g, b = image_px(rgb, info, v.shape, 20, 78)
    assert r > g + 40, "positive (away) must be red"
    zero = np.array(image_px(rgb, info, v.shape, 20, 40))
    assert zero.min() > 200 and zero.max() - zero.min() < 20, "zero must be a light neutral"
    check_bar(rgb, info, increasing=None)


def test_fmcw_products(gg, tmp_path):
    """PPIs of gdal_fmcw: DBZ with the reflectivity palette, VEL diverging."""
    raw = tmp_path / "radar.nc"
    gg.run("gdal_fmcw", "-simulate", "-sectors", 36, "-gates", 64, "-sweeps", 16, "-samples", 128,
           "-q", raw)
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-grid", 150, "-products", "DBZ,VEL", raw,
           tmp_path / "ppi.tif")
    rgb, info = quicklook(gg, tmp_path / "ppi_DBZ.tif", tmp_path / "dbz.png")
    assert info["geogpu:kind"] == "reflectivity"
    x0, y0, x1, y1 = box(info, "geogpu:image")
    shown = {tuple(c) for c in rgb[y0:y1, x0:x1].reshape(-1, 3)}
    assert len(shown & {c for _, c in cm.NWS_DBZ}) >= 3, "too few palette colours in a storm PPI"
    assert ql.RADAR_BG in shown  # outside the range ring
    rgb, info = quicklook(gg, tmp_path / "ppi_VEL.tif", tmp_path / "vel.png")
    assert info["geogpu:kind"] == "velocity"
    check_picture(rgb, info)


def test_forced_kind_and_band(gg, tmp_path, rng):
    a = rng.uniform(0, 1, (30, 40)).astype(np.float32)
    src = write(tmp_path / "two.tif", [a * 100, a], ["amplitude", "whatever"])
    _, info = quicklook(gg, src, tmp_path / "c.png", "-kind", "coherence", "-b", "2")
    assert info["geogpu:kind"] == "coherence" and info["geogpu:band"] == "2"


def test_big_raster_averaged(gg, tmp_path, rng):
    a = rng.uniform(1, 2, (300, 2500)).astype(np.float32)
    src = write(tmp_path / "big.tif", a, ["amplitude"])
    rgb, info = quicklook(gg, src, tmp_path / "big.png", "-size", "500")
    x0, y0, x1, y1 = box(info, "geogpu:image")
    assert x1 - x0 == 500 and y1 - y0 == 60


# ------------------------------------------------------------ real products

def test_real_products(gg, tmp_path):
    """The utilities' products on real data: the insar products of the
    Winnipeg SLC against a shifted, noisier copy of itself, the psps
    amplitude, and a GG: string computed on the fly."""
    slc = gdal.Open(str(SLC)).ReadAsArray()
    H, W = slc.shape
    rng = np.random.default_rng(7)
    x = np.arange(W)[None, :]
    noise = (rng.normal(size=slc.shape) + 1j * rng.normal(size=slc.shape)) * np.abs(slc).mean()
    sec = (slc * np.exp(-1j * 0.1 * x) + noise * (x / W)).astype(np.complex64)
    s2 = write(tmp_path / "sec.tif", sec)
    gg.run("gdal_insar", "-q", "-device", "cpu", SLC, s2, tmp_path / "ins.tif")
    kinds = {}
    for prod in ("interferogram", "coherence", "amplitude"):
        rgb, info = quicklook(gg, tmp_path / f"ins_{prod}.tif", tmp_path / f"{prod}.png")
        kinds[prod] = info["geogpu:kind"]
        check_picture(rgb, info)
    assert kinds == {"interferogram": "phase", "coherence": "coherence", "amplitude": "amplitude"}
    rgb, info = quicklook(gg, AMP, tmp_path / "amp.png")
    assert info["geogpu:kind"] == "amplitude"
    check_picture(rgb, info)
    rgb, info = quicklook(gg, f"GG:multilook:looks=2x2:{SLC}", tmp_path / "mli.png")
    check_picture(rgb, info)
    check_bar(rgb, info, increasing=True)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("args,words", [
    (["missing.tif", "o.png"], ["missing.tif"]),
    (["in.tif", "o.jpg"], ["must end in .png"]),
    (["-kind", "rainbow", "in.tif", "o.png"], ["unknown kind", "rainbow"]),
    (["-b", "3", "in.tif", "o.png"], ["band 3"]),
    (["-size", "x", "in.tif", "o.png"], ["-size"]),
    (["in.tif"], ["<src_dataset> <dst.png>"]),
    (["in.tif", "nofolder/o.png"], ["does not exist"]),
    (["-frobnicate", "in.tif", "o.png"], ["unknown option"]),
])
def test_bad_input(gg, tmp_path, args, words):
    write(tmp_path / "in.tif", np.ones((10, 10), np.float32) * np.arange(10))
    p = gg.run("gdal_quicklook", *args, check=False, cwd=tmp_path)
    assert p.returncode == 1
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("ERROR 1: gdal_quicklook:"), p.stderr
    for w in words:
        assert w in line, line
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob(".*png"))


def test_existing_output_kept_on_failure(gg, tmp_path):
    dst = tmp_path / "o.png"
    dst.write_bytes(b"old")
    nan = write(tmp_path / "nan.tif", np.full((10, 10), np.nan, np.float32))
    p = gg.run("gdal_quicklook", nan, dst, check=False)
    assert p.returncode == 1 and "no valid pixel" in p.stderr
    assert dst.read_bytes() == b"old"


# ------------------------------------------------ every product of every utility

@pytest.fixture(scope="module")
def fmcw_polar(tmp_path_factory):
    """gdal_fmcw products of a simulated storm: the polar raster (all ten
    products) and PPIs of ZDR, RHOHV, PHIDP, WIDTH, SNR."""
    from conftest import GG
    d = tmp_path_factory.mktemp("ql_fmcw")
    GG.run("gdal_fmcw", "-simulate", "-sectors", 48, "-gates", 96, "-sweeps", 32, "-samples",
           256, "-q", d / "radar.nc")
    GG.run("gdal_fmcw", "-q", "-device", "cpu", d / "radar.nc", d / "polar.tif")
    GG.run("gdal_fmcw", "-q", "-device", "cpu", "-grid", 120, "-products",
           "ZDR,RHOHV,PHIDP,WIDTH,SNR,LDR", d / "radar.nc", d / "ppi.tif")
    return d


@pytest.mark.parametrize("product,lo,hi", [("ZDR", -2, 6), ("RHOHV", 0.7, 1.0), ("LDR", -35, 0),
                                           ("WIDTH", 0, None), ("SNR", -10, 40),
                                           ("PHIDP", None, None)])
def test_radar_moments(gg, fmcw_polar, tmp_path, product, lo, hi):
    """The other FMCW moments get a colour map and their customary range
    (widened to the data), nodata dark as in a PPI -- not a dB stretch."""
    src = fmcw_polar / f"ppi_{product}.tif"
    rgb, info = quicklook(gg, src, tmp_path / f"{product}.png")
    assert info["geogpu:kind"] == "radar"
    r0, r1 = (float(v) for v in info["geogpu:range"].split(","))
    ds = gdal.Open(str(src))
    band = ds.GetRasterBand(1)
    v = band.ReadAsArray()
    v = v[v != band.GetNoDataValue()]
    if lo is not None:
        assert r0 <= lo and r1 >= hi if hi is not None else r0 <= lo
    p2, p98 = np.percentile(v, [2, 98])
    eps = 1e-5 * max(1.0, abs(p2), abs(p98))  # the range is written with 6 digits
    assert r0 <= p2 + eps and r1 >= p98 - eps, "data outside the colour range"
    im = check_picture(rgb, info)
    # colours, not grey: a colour map was applied
    sat = im.max(axis=2).astype(int) - im.min(axis=2)
    assert (sat > 40).mean() > 0.3
    assert ql.RADAR_BG in {tuple(c) for c in im.reshape(-1, 3)}  # outside the range ring
    check_bar(rgb, info, increasing=True)


def test_polar_fmcw_each_band(gg, fmcw_polar, tmp_path):
    """The polar raster: every band gets the kind of its product."""
    want = {"DBZ": "reflectivity", "VEL": "velocity", "ZDR": "radar", "RHOHV": "radar",
            "WIDTH": "radar", "PHIDP": "radar", "SNRHX": "radar"}
    ds = gdal.Open(str(fmcw_polar / "polar.tif"))
    names = [ds.GetRasterBand(b).GetDescription() for b in range(1, ds.RasterCount + 1)]
    for name, kind in want.items():
        b = names.index(name) + 1
        rgb, info = quicklook(gg, fmcw_polar / "polar.tif", tmp_path / f"p{b}.png", "-b", str(b))
        assert info["geogpu:kind"] == kind, name
        check_picture(rgb, info)


def test_ptsel_mask_and_best_offsets(gg, tmp_path, rng):
    """PtSel's products: the PS mask in two colours with counts in the
    legend, best_dx (signed) on a diverging map symmetric about zero."""
    H, W, n = 60, 70, 8
    phase = rng.uniform(-np.pi, np.pi, (n, H, W))
    ps = rng.random((H, W)) < 0.05
    phase[:, ps] = rng.uniform(-0.1, 0.1, (n, ps.sum())) + np.linspace(0, 2, n)[:, None]
    paths = [write(tmp_path / f"i{k}.tif", np.exp(1j * phase[k]).astype(np.complex64))
             for k in range(n)]
    gg.run("gdal_ptsel", "-q", "-device", "cpu", "-window", 5, "-offsets", "-mask", *paths,
           tmp_path / "ps.tif")
    m = gdal.Open(str(tmp_path / "ps_ps_mask.tif")).ReadAsArray()
    assert 0 < m.sum() < m.size
    rgb, info = quicklook(gg, tmp_path / "ps_ps_mask.tif", tmp_path / "mask.png")
    assert info["geogpu:kind"] == "mask"
    x0, y0, x1, y1 = box(info, "geogpu:image")
    shown = {tuple(c) for c in rgb[y0:y1, x0:x1].reshape(-1, 3)}
    assert shown == {tuple(c) for c in cm.mask()}, "a mask shows exactly its two colours"
    for r, c in [tuple(p) for p in np.argwhere(m == 1)[:5]] + [tuple(np.argwhere(m == 0)[0])]:
        assert image_px(rgb, info, m.shape, r, c) == tuple(cm.mask()[m[r, c]])
    bx0, by0, bx1, by1 = box(info, "geogpu:colorbar")
    assert len({tuple(c) for c in rgb[by0:by1, (bx0 + bx1) // 2]}) == 2
    rgb, info = quicklook(gg, tmp_path / "ps_best_dx.tif", tmp_path / "dx.png")
    assert info["geogpu:kind"] == "amplitude"
    r0, r1 = (float(v) for v in info["geogpu:range"].split(","))
    assert r0 == -r1 and r1 > 0
    check_picture(rgb, info)
    check_bar(rgb, info, increasing=None)


@pytest.mark.parametrize("tool,args", [("gdal_multilook", ["-looks", 3, 3]),
                                       ("gdal_rotate", ["-angle", 30]),
                                       ("gdal_radnorm", ["-coef", 2]),
                                       ("gdal_radnorm", ["-coef", 6, "-levels", 12])])
def test_sar_amplitude_products(gg, tmp_path, rng, tool, args):
    """multilook / rotate / radnorm outputs: an amplitude picture with a
    grey colour bar, textured (not flat), nodata (rotate's corners) grey."""
    from scipy import ndimage
    a = np.exp(ndimage.gaussian_filter(rng.standard_normal((90, 110)), 3) * 4) * \
        rng.exponential(1.0, (90, 110))
    src = write(tmp_path / "amp.tif", a.astype(np.float32))
    dst = tmp_path / "out.tif"
    gg.run(tool, "-q", "-device", "cpu", *[str(v) for v in args], src, dst)
    rgb, info = quicklook(gg, dst, tmp_path / "out.png")
    assert info["geogpu:kind"] == "amplitude"
    im = check_picture(rgb, info)
    col = check_bar(rgb, info, increasing=None)
    assert np.all(col[:, 0] == col[:, 1])  # grey
    assert len({tuple(c) for c in im.reshape(-1, 3)}) >= (8 if "-levels" in args else 50)
    if tool == "gdal_rotate":
        assert image_px(rgb, info, (90, 110), 0, 0) == ql.NODATA_RGB


def test_ortho_image_zero_is_no_image(gg, tmp_path, rng):
    """An orthoimage (UInt16, 0 around the footprint, no nodata value): the
    stretch ignores the fill, which is drawn grey; the caption says so and
    fits the picture."""
    from scipy import ndimage
    a = (1500 + 400 * ndimage.gaussian_filter(rng.standard_normal((120, 150)), 2)).astype(np.uint16)
    a[:, :30] = 0
    a[100:, :] = 0
    ds = gdal.GetDriverByName("GTiff").Create(str(tmp_path / "o.tif"), 150, 120, 1,
                                              gdal.GDT_UInt16)
    ds.GetRasterBand(1).WriteArray(a)
    ds = None
    rgb, info = quicklook(gg, tmp_path / "o.tif", tmp_path / "o.png")
    assert info["geogpu:kind"] == "amplitude"
    r0, r1 = (float(v) for v in info["geogpu:range"].split(","))
    inner = a[a > 0]
    assert r0 >= np.percentile(inner, 1) - 1 and r1 <= inner.max()
    assert image_px(rgb, info, a.shape, 5, 5) == ql.NODATA_RGB
    assert image_px(rgb, info, a.shape, 50, 100) != ql.NODATA_RGB
    check_picture(rgb, info)
    # the caption is inside the canvas: no text pixel touches the right edge
    assert np.all(rgb[:, -2] == ql.PANEL_RGB)
