"""The geogpu Python package (gdal_plugins/python/geogpu): numpy arrays in and
out for every op through libgeogpu (ctypes), against the float64 references
(reference.py) and bit for bit against the gdal_* utilities on the same
device; stack ops with several arrays in and several products out; device
listing and contexts; errors as exceptions carrying the library's message;
the tile API (the unit of a Dask run); GG: strings, .ggvrt and open_gg; and
the package installed by cmake --install (DESTDIR)."""
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

import reference as ref

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
PKG = REPO / "gdal_plugins" / "python"
# the library of the build under test, whatever else is around
os.environ["GG_LIBRARY"] = str(BUILD / "lib")
sys.path.insert(0, str(PKG))

import geogpu  # noqa: E402

ND = -9999.0


def load(path, band=1):
    return ref_read(path, band)[0]


def ref_read(path, band=1):
    ds = gdal.Open(str(path))
    b = ds.GetRasterBand(band)
    return b.ReadAsArray(), b.GetNoDataValue(), b.GetDescription(), ds.GetGeoTransform()


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def real_image(make, rng, H=29, W=37):
    a = make.real(rng, H, W, nodata=ND)
    a[0:4, 0:4] = ND  # a whole block without a valid sample
    return a


# ------------------------------------------------------------------ library

def test_library_and_ops():
    """The package loads the build's libgeogpu and lists its ops with their
    option tables (what run() accepts)."""
    assert Path(geogpu.library_path).resolve().parent == (BUILD / "lib").resolve()
    assert geogpu.version() == "0.1.0"
    names = geogpu.ops()
    for n in ("multilook", "rotate", "radnorm", "coherence", "ptsel"):
        assert n in names
    for n in names:
        info = geogpu.op_info(n)
        assert info.description and info.inputs != 0
        keys = [o.key for o in info.options]
        assert "srcnodata" in keys and "dstnodata" in keys
        for o in info.options:
            assert o.type in ("int", "float", "size", "bool", "string"), (n, o)
    assert geogpu.op_info("multilook").inputs == 1
    assert geogpu.op_info("coherence").inputs == 2
    assert geogpu.op_info("ptsel").inputs == -1


def test_format_option():
    f = geogpu.format_option
    assert f((4, 2), "size") == "4x2" and f(3, "size") == "3x3" and f("4x4", "size") == "4x4"
    assert f(True) == "yes" and f(False) == "no"
    assert f([1, 3]) == "1,3" and f(2.5) == "2.5" and f(7) == "7" and f(float("nan")) == "nan"


def test_devices_and_contexts():
    devs = geogpu.devices()
    assert devs and devs[0].spec == "cpu" and devs[0].backend == "cpu" and devs[0].description
    with geogpu.Context("cpu") as ctx:
        assert ctx.backend == "cpu"
        assert ctx.device_name.startswith("cpu")
        free, total = ctx.memory()
        assert 0 < free <= total
        assert ctx.plan_rows(100, 50, 8.0) >= 1
    assert "closed" in repr(ctx)
    with pytest.raises(ValueError):
        ctx.backend


@pytest.mark.opencl
def test_opencl_context():
    specs = [d.spec for d in geogpu.devices()]
    assert any(s.startswith("opencl:") for s in specs), specs
    with geogpu.Context("opencl") as ctx:
        assert ctx.backend == "opencl"
        assert ctx.device_name.startswith("opencl:")


# ------------------------------------------------- ops vs reference and utility

@pytest.mark.parametrize("lx,ly", [(4, 4), (3, 2), (37, 1)])
def test_multilook_real(gg, make, rng, tmp_path, device, lx, ly):
    a = real_image(make, rng)
    out = geogpu.run("multilook", a, looks=(lx, ly), nodata=ND, device=device)
    want, invalid = ref.multilook(a, lx, ly, nodata=ND)
    assert out.dtype == np.float32 and out.shape == (29 // ly, 37 // lx)
    err = ref.check_product(out, want, invalid, ND, ref.TOL["multilook"],
                            what=f"geogpu.run multilook {lx}x{ly} on {device}", min_count=1)
    gg.record_error("multilook/python", device, err)
    # the utility on the same data and device: the same bits
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    gg.run("gdal_multilook", "-q", "-device", device, "-looks", lx, ly, src, tmp_path / "o.tif")
    assert same(out, load(tmp_path / "o.tif"))


@pytest.mark.parametrize("complex_mean", [False, True], ids=["intensity", "complex"])
def test_multilook_complex(gg, make, rng, tmp_path, device, complex_mean):
    z = make.complex(rng, 30, 40, nodata=ND)
    out = geogpu.run("multilook", z, looks="3x2", complex=complex_mean, nodata=ND, device=device)
    want, invalid = ref.multilook(z, 3, 2, nodata=ND, complex_mean=complex_mean)
    assert out.dtype == (np.complex64 if complex_mean else np.float32)
    ref.check_product(out, want, invalid, ND, ref.TOL["multilook"], what="complex multilook")
    src = gg.write(tmp_path / "in.tif", z, nodata=ND)
    opts = ["-complex"] if complex_mean else []
    gg.run("gdal_multilook", "-q", "-device", device, "-looks", 3, 2, *opts, src, tmp_path / "o.tif")
    assert same(out, load(tmp_path / "o.tif"))


def test_rotate(gg, make, rng, tmp_path, device):
    a = make.real(rng, 31, 43, nodata=ND)
    gt = (1000.0, 2.0, 0.0, 5000.0, 0.0, -2.0)
    out, info = geogpu.run("rotate", a, angle=30, scale=1.5, nodata=ND, geotransform=gt,
                           device=device, return_info=True)
    want, invalid, ambiguous = ref.rotate(a, 30, 1.5, nodata=ND)
    err = ref.check_product(out, want, invalid, ND, ref.TOL["rotate"], ignore=ambiguous,
                            what=f"rotate on {device}", min_valid=0.05)
    gg.record_error("rotate/python", device, err)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND, gt=gt)
    gg.run("gdal_rotate", "-q", "-device", device, "-angle", 30, "-scale", 1.5, src, tmp_path / "o.tif")
    got, nd, _, ogt = ref_read(tmp_path / "o.tif")
    assert same(out, got)
    assert info.geotransform == pytest.approx(ogt, rel=1e-12, abs=1e-9)
    assert info.nodata == [ND] and info.types == ["Float32"]


@pytest.mark.parametrize("levels", [None, 200], ids=["float", "levels200"])
def test_radnorm(gg, make, rng, tmp_path, device, levels):
    a = make.real(rng, 33, 27) * np.linspace(0.5, 2.0, 27)[None, :].astype(np.float32)  # a gain
    a[rng.random(a.shape) < 0.04] = ND
    out = geogpu.run("radnorm", a, coef=35, levels=levels, nodata=ND, device=device)
    F, invalid = ref.radnorm(a, 35, nodata=ND)
    if levels is None:
        ref.check_product(out, F, invalid, ND, ref.TOL["radnorm"], what="radnorm")
    else:
        assert out.dtype == np.uint8
        q, ambiguous = ref.quantise(F, invalid, levels)
        assert np.array_equal(out == 255, invalid)
        off = (out.astype(np.int64) != q) & ~invalid & ~ambiguous
        assert not off.any(), f"{int(off.sum())} pixels on the wrong level"
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    opts = ["-levels", levels] if levels else []
    gg.run("gdal_radnorm", "-q", "-device", device, "-coef", 35, *opts, src, tmp_path / "o.tif")
    assert same(out, load(tmp_path / "o.tif"))


def test_multiband_input(make, rng, device):
    """A 3-D array is processed band by band, like a multi-band raster."""
    a = np.stack([make.real(rng, 20, 24) for _ in range(3)])
    out = geogpu.run("multilook", a, looks=(2, 2), device=device)
    assert out.shape == (3, 10, 12)
    for b in range(3):
        assert same(out[b], geogpu.run("multilook", a[b], looks=(2, 2), device=device))
        want, invalid = ref.multilook(a[b], 2, 2)
        ref.check_product(out[b], want, invalid, math.nan, ref.TOL["multilook"])


def correlated(make, rng, H=33, W=41):
    s1 = make.complex(rng, H, W, nan=0).astype(np.complex128)
    noise = make.complex(rng, H, W, nan=0).astype(np.complex128)
    rho = np.linspace(0.1, 0.95, W)[None, :]
    s2 = rho * s1 * np.exp(1j * 0.7) + np.sqrt(1 - rho ** 2) * noise
    s1, s2 = s1.astype(np.complex64), s2.astype(np.complex64)
    s1.real[rng.random((H, W)) < 0.03] = ND
    s2.imag[rng.random((H, W)) < 0.03] = np.nan
    return s1, s2


def test_coherence_stack_op(gg, make, rng, tmp_path, device):
    """Two arrays in, three named products out (interferogram CFloat32,
    coherence and amplitude Float32), each against the reference and the
    utility's per-product files."""
    s1, s2 = correlated(make, rng)
    prod, info = geogpu.run("coherence", s1, s2, window=(5, 3), looks=(2, 1), nodata=ND,
                            device=device, return_info=True)
    assert list(prod) == ["interferogram", "coherence", "amplitude"]
    assert info.types == ["CFloat32", "Float32", "Float32"]
    want = ref.coherence(s1, s2, window=(5, 3), looks=(2, 1), nodata=ND)
    for name, arr in prod.items():
        w, invalid = want[name]
        nd = info.nodata[info.names.index(name)]
        assert math.isnan(nd)  # coherence products do not take the input's nodata
        ok = ~invalid
        assert np.array_equal(ref.is_nodata(arr, nd), invalid), name
        d = np.abs(arr[ok].astype(w.dtype) - w[ok])
        err = float(np.max(d / np.abs(w[ok]) if name == "amplitude" else d))
        assert err <= ref.TOL[name], f"{name}: {err:.3e}"
    p = gg.write(tmp_path / "p.tif", s1, nodata=ND)
    s = gg.write(tmp_path / "s.tif", s2, nodata=ND)
    gg.run("gdal_insar", "-q", "-device", device, "-window", 5, 3, "-looks", 2, 1, p, s,
           tmp_path / "ins.tif")
    for name, arr in prod.items():
        got, _, desc, _ = ref_read(tmp_path / f"ins_{name}.tif")
        assert desc == name and same(arr, got), name


def test_ptsel_several_arrays(gg, make, rng, tmp_path, device):
    """One or more arrays stacked band by band (2-D and 3-D mixed), products
    tau_max, best_dx, best_dy (Float32) and ps_mask (Byte)."""
    n, H, W = 5, 17, 21
    z = (rng.rayleigh(1.0, (n, H, W)) * np.exp(1j * rng.uniform(-3, 3, (n, H, W)))).astype(np.complex64)
    screen = rng.uniform(-3, 3, (n, 1, 1))
    coherent = rng.random((H, W)) < 0.4
    z = np.where(coherent, np.abs(z) * np.exp(1j * (screen + 0.3 * rng.normal(size=z.shape))),
                 z).astype(np.complex64)
    z.real[rng.random(z.shape) < 0.03] = np.nan
    prod = geogpu.run("ptsel", z[0], z[1:3], z[3], z[4], window=5, offsets=True, mask=True,
                      threshold=0.6, device=device)
    assert list(prod) == ["tau_max", "best_dx", "best_dy", "ps_mask"]
    assert prod["ps_mask"].dtype == np.uint8
    tau, invalid, _ = ref.ptsel(z, window=5)
    assert np.array_equal(np.isnan(prod["tau_max"]), invalid)
    assert np.nanmax(np.abs(prod["tau_max"] - tau)) <= ref.TOL["ptsel"]
    ok = ~invalid
    assert np.array_equal(prod["ps_mask"][ok], (prod["tau_max"][ok] >= 0.6).astype(np.uint8))
    assert np.all(prod["ps_mask"][invalid] == 255)
    assert 0 < prod["ps_mask"][ok].sum() < ok.sum(), "test data must hold PS and non-PS pixels"
    # the same stack through the utility, one file per band (mixed types)
    paths = [gg.write(tmp_path / f"e{k}.tif", z[k]) for k in range(n)]
    gg.run("gdal_ptsel", "-q", "-device", device, "-window", 5, "-threshold", 0.6, "-offsets",
           "-mask", *paths, tmp_path / "ps.tif")
    for name, arr in prod.items():
        assert same(arr, load(tmp_path / f"ps_{name}.tif")), name


def test_xcorr_op(gg, rng, tmp_path, device):
    """An op that landed after the package was written (xcorr) runs with no
    Python change: its seven products identical to gdal_xcorr's, the
    offsets those of the shift applied."""
    H, W = 160, 168
    a = rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))
    ky, kx = np.fft.fftfreq(H)[:, None], np.fft.fftfreq(W)[None, :]
    b = np.fft.ifft2(np.fft.fft2(a) * np.exp(-2j * np.pi * (kx * 3 + ky * -2)))
    a, b = a.astype(np.complex64), b.astype(np.complex64)
    prod = geogpu.run("xcorr", a, b, window=(32, 32), search=(8, 8), skip=(32, 32), device=device)
    assert list(prod)[:3] == ["offset_down", "offset_across", "snr"] and len(prod) == 7
    assert abs(np.nanmedian(prod["offset_across"]) - 3) < 0.1
    assert abs(np.nanmedian(prod["offset_down"]) + 2) < 0.1
    p = gg.write(tmp_path / "p.tif", a)
    s = gg.write(tmp_path / "s.tif", b)
    gg.run("gdal_xcorr", "-q", "-device", device, "-window", 32, 32, "-search", 8, 8, "-skip",
           32, 32, p, s, tmp_path / "x.tif")
    for k, (name, arr) in enumerate(prod.items(), 1):
        got, _, desc, _ = ref_read(tmp_path / "x.tif", k)
        assert desc == name and same(arr, got), name


@pytest.mark.opencl
def test_cpu_opencl_agree(make, rng):
    a = make.real(rng, 40, 50)
    for op, kw in (("multilook", {"looks": (3, 3)}), ("rotate", {"angle": 17, "scale": 0.8}),
                   ("radnorm", {"coef": 2})):
        c = geogpu.run(op, a, device="cpu", **kw)
        o = geogpu.run(op, a, device="opencl", **kw)
        ok = ~np.isnan(c)
        assert np.array_equal(ok, ~np.isnan(o)), op
        assert ref.rel_l2(o, c, ok) <= ref.TOL[op], op


def test_blocked_paths_identical(make, rng, monkeypatch):
    """Square blocks (rotate prefers them) and device passes sized from a
    small device memory (GG_DEVICE_MEMORY) give the same bits as one pass."""
    a = make.real(rng, 700, 600)
    whole = geogpu.run("rotate", a, angle=12, context=geogpu.Context("cpu"))
    ml = geogpu.run("multilook", a, looks=(2, 2), context=geogpu.Context("cpu"))
    monkeypatch.setenv("GG_DEVICE_MEMORY", "1MB")
    with geogpu.Context("cpu") as small:
        prep = geogpu.Op("rotate", angle=12).prepare(a.shape)
        assert len(list(prep.blocks())) == 4  # 600x700 output in 512 blocks
        assert small.plan_rows(600, 700, prep.bytes_per_pixel) < 700
        assert same(whole, geogpu.run("rotate", a, angle=12, context=small))
        assert same(ml, geogpu.run("multilook", a, looks=(2, 2), context=small))


def test_tile_api(make, rng):
    """Prepared.source_window + run_band_tile / run_tile compute one output
    window from its input window: the crop of the whole result."""
    a = make.real(rng, 60, 70)
    op = geogpu.Op("multilook", looks=(3, 2))
    full = op.run(a, device="cpu")
    prep = op.prepare(a.shape)
    ctx = geogpu.context_for("cpu")
    dst = (4, 5, 10, 7)
    sx, sy, sw, sh = prep.source_window(*dst)
    assert (sx, sy, sw, sh) == (12, 10, 30, 14)
    tile = prep.run_band_tile(ctx, 0, a[sy:sy + sh, sx:sx + sw], (sx, sy, sw, sh), dst)
    assert same(tile, full[5:12, 4:14])
    s1, s2 = correlated(make, rng)
    cop = geogpu.Op("coherence", window=(5, 5))
    cfull = cop.run(s1, s2, device="cpu")
    cp = cop.prepare(s1.shape, complex_input=True, bands=2)
    dst = (10, 8, 12, 9)
    sx, sy, sw, sh = cp.source_window(*dst)
    assert (sx, sy, sw, sh) == (8, 6, 16, 13)  # halo of 2 each side
    tiles = cp.run_tile(ctx, [s[sy:sy + sh, sx:sx + sw] for s in (s1, s2)], (sx, sy, sw, sh), dst)
    for t, name in zip(tiles, cfull):
        assert same(t, cfull[name][8:17, 10:22]), name


def test_progress_and_cancel(make, rng):
    a = make.real(rng, 40, 40)
    seen = []
    geogpu.run("radnorm", a, coef=2, device="cpu", progress=lambda f: seen.append(f))
    assert seen and seen[-1] == pytest.approx(1.0) and seen == sorted(seen)
    with pytest.raises(geogpu.CancelledError):
        geogpu.run("multilook", a, looks=(2, 2), device="cpu", progress=lambda f: False)


# ------------------------------------------------------------------- errors

@pytest.mark.parametrize("call,exc,words", [
    (lambda a: geogpu.run("multilok", a), geogpu.ArgumentError, ["unknown operation", "multilook"]),
    (lambda a: geogpu.run("multilook", a, looks="abc"), geogpu.ArgumentError, ["looks", "abc"]),
    (lambda a: geogpu.run("multilook", a, looks=(80, 8)), geogpu.ArgumentError, ["larger than"]),
    (lambda a: geogpu.run("multilook", a, lookz=4), geogpu.ArgumentError, ["unknown option", "lookz"]),
    (lambda a: geogpu.run("rotate", a, scale=-1), geogpu.ArgumentError, ["scale"]),
    (lambda a: geogpu.run("radnorm", a, levels=900), geogpu.ArgumentError, ["levels"]),
    (lambda a: geogpu.run("coherence", a), geogpu.ArgumentError, ["takes 2 input arrays"]),
    (lambda a: geogpu.run("coherence", a.astype(np.complex64), a), geogpu.UnsupportedError,
     ["mix real and complex"]),
    (lambda a: geogpu.run("multilook", a[None, None]), geogpu.ArgumentError, ["dimensions"]),
    (lambda a: geogpu.run("coherence", a.astype(np.complex64), a[:5].astype(np.complex64)),
     geogpu.ArgumentError, ["match in size"]),
    (lambda a: geogpu.run("multilook", a, looks=2, device="cuad"), geogpu.ArgumentError,
     ["unknown device", "cuad"]),
    (lambda a: geogpu.run("multilook", np.array(["x", "y"]).reshape(1, 2), looks=1),
     geogpu.UnsupportedError, ["data type"]),
])
def test_errors(make, rng, call, exc, words):
    a = make.real(rng, 12, 14)
    with pytest.raises(exc) as e:
        call(a)
    msg = str(e.value)
    for w in words:
        assert w in msg, f"'{w}' not in '{msg}'"
    assert isinstance(e.value, geogpu.GeogpuError) and e.value.status.startswith("GG_ERR_")


def test_unavailable_backend():
    if any(d.backend == "cuda" for d in geogpu.devices()):
        pytest.skip("a CUDA device is present here")
    with pytest.raises(geogpu.UnavailableError) as e:
        geogpu.Context("cuda")
    assert "cuda" in str(e.value) and e.value.status == "GG_ERR_UNAVAILABLE"


# -------------------------------------------------------------- GG datasets

def test_gg_string():
    s = geogpu.gg_string("multilook", "slc.tif", looks=(4, 4), complex=True)
    assert s == "GG:multilook:looks=4x4:complex=yes:slc.tif"
    assert geogpu.gg_string("coherence", ["a.tif", "b.tif"], window=(5, 3), device="opencl:0:0") == \
        "GG:coherence:window=5x3:device=opencl:0:0:a.tif,b.tif"
    assert geogpu.gg_string("ptsel", ["s.tif"], conj=[1, 3], mask=True) == \
        "GG:ptsel:conj=1,3:mask=yes:s.tif"
    for bad in (lambda: geogpu.gg_string("multilook", ["a,b.tif", "c.tif"], looks=2),
                lambda: geogpu.gg_string("multilook", "looks=2.tif", looks=2)):
        with pytest.raises(geogpu.ArgumentError, match="GG: string"):
            bad()
    with pytest.raises(geogpu.ArgumentError, match="looks"):
        geogpu.gg_string("multilook", "a.tif", looks="zz")


def test_open_gg(gg, make, rng, tmp_path, device):
    """open_gg gives the product as a gdal.Dataset: the pixels of the
    utility and of geogpu.run; names a GG: string cannot carry go through
    a .ggvrt in memory."""
    a = real_image(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    ds = geogpu.open_gg("multilook", src, looks=(3, 2), device=device)
    assert ds.GetDriver().ShortName == "GG"
    got = ds.GetRasterBand(1).ReadAsArray()
    assert same(got, geogpu.run("multilook", a, looks=(3, 2), nodata=ND, device=device))
    gg.run("gdal_multilook", "-q", "-device", device, "-looks", 3, 2, src, tmp_path / "o.tif")
    assert same(got, load(tmp_path / "o.tif"))
    ds = None
    # awkward names: a comma, a name that reads like an option
    odd = tmp_path / "looks=2,x.tif"
    shutil.copy(src, odd)
    ds = geogpu.open_gg("multilook", odd, looks=(3, 2), device=device)
    assert same(ds.ReadAsArray(), got)
    ds = None
    # a stack op on two inputs
    s1, s2 = correlated(make, rng)
    p = gg.write(tmp_path / "p,1.tif", s1, nodata=ND)
    s = gg.write(tmp_path / "s.tif", s2, nodata=ND)
    ds = geogpu.open_gg("coherence", p, s, window=(3, 3), device=device)
    descs = [ds.GetRasterBand(b).GetDescription() for b in range(1, ds.RasterCount + 1)]
    assert descs == ["interferogram", "coherence", "amplitude"]
    prod = geogpu.run("coherence", s1, s2, window=(3, 3), nodata=ND, device=device)
    assert same(ds.GetRasterBand(2).ReadAsArray(), prod["coherence"])
    ds = None


def test_write_ggvrt(gg, make, rng, tmp_path):
    a = make.real(rng, 20, 30)
    src = gg.write(tmp_path / "in & <x>.tif", a)
    path = geogpu.write_ggvrt(tmp_path / "p.ggvrt", "rotate", [src], angle=10)
    text = path.read_text()
    assert "&amp;" in text and "&lt;x&gt;" in text and 'operation="rotate"' in text
    ds = gdal.Open(str(path))
    assert same(ds.ReadAsArray(), geogpu.run("rotate", a, angle=10, device=os.environ.get("GG_DEVICE") or "auto"))
    ds = None


def test_errors_through_gdal(tmp_path):
    """GDAL's own failure (an input that does not exist) comes through with
    GDAL's message naming the file."""
    with pytest.raises(Exception, match="missing.tif"):
        geogpu.open_gg("multilook", tmp_path / "missing.tif", looks=2)


# --------------------------------------------------------------- installed

def test_build_tree_and_installed(tmp_path):
    """Usable from the source tree with PYTHONPATH, and installed by
    cmake --install (staged with DESTDIR): the installed package finds the
    installed libgeogpu by itself, gdal_quicklook runs."""
    code = ("import numpy as np, geogpu; a = np.arange(48, dtype=np.float32).reshape(6, 8) + 1;"
            "o = geogpu.run('multilook', a, looks=(2, 2), device='cpu');"
            "print(geogpu.library_path); print(float(o[0, 0]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GG_")}
    env["GG_BUILD_DIR"] = str(BUILD)
    env["PYTHONPATH"] = str(PKG)
    p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[1] == "5.5"  # mean of 1, 2, 9, 10
    dest = tmp_path / "dest"
    r = subprocess.run(["cmake", "--install", str(BUILD)], capture_output=True, text=True,
                       env={**os.environ, "DESTDIR": str(dest)})
    assert r.returncode == 0, r.stderr
    inits = list(dest.rglob("dist-packages/geogpu/__init__.py"))
    assert len(inits) == 1, inits
    site = inits[0].parent.parent
    assert (site / "geogpu" / "_install.py").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GG_")}
    env["PYTHONPATH"] = str(site)
    p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.split()[0]).resolve().is_relative_to(dest.resolve()), p.stdout
    assert p.stdout.split()[1] == "5.5"
    ql = list(dest.rglob("bin/gdal_quicklook"))
    assert ql and os.access(ql[0], os.X_OK)
    h = subprocess.run([str(ql[0]), "--help"], capture_output=True, text=True, env=env)
    assert h.returncode == 0 and "Usage: gdal_quicklook" in h.stdout
    # a man page for every installed utility that has a docs page (one the
    # build has seen: pages are generated at build time)
    man = {p.name for p in dest.rglob("share/man/man1/*.1")}
    built = max(p.stat().st_mtime for p in (BUILD / "share" / "man" / "man1").glob("*.1"))
    programs = {p.name for p in ql[0].parent.glob("gdal_*")}
    documented = {p + ".1" for p in programs if (REPO / "docs" / f"{p}.md").exists() and
                  (REPO / "docs" / f"{p}.md").stat().st_mtime <= built}
    assert "gdal_multilook.1" in documented and "gdal_quicklook.1" in documented
    assert documented <= man, f"man pages missing: {documented - man}"
    assert list(dest.rglob("qgis/python/plugins/geogpu_processing/metadata.txt"))
