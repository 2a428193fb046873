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
            assert o.type in ("int", "float", "size", "bool", "choice", "string"), (n, o)
            assert o.type != "choice" or (o.choices and o.default in o.choices), (n, o)
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


def test_host_buffer():
    """Context.host_buffer: writable memory of the size asked (page-locked
    on CUDA), freed by close() or with its context."""
    with geogpu.Context("cpu") as ctx:
        buf = ctx.host_buffer(3 << 20)
        assert len(buf) == 3 << 20
        a = np.frombuffer(buf.array, np.float32)
        a[:] = np.arange(a.size, dtype=np.float32)
        assert a[123456] == 123456 and a.size == (3 << 20) // 4
        buf.close()
        assert len(buf) == 0
        kept = ctx.host_buffer(4096)
    assert len(kept) == 0  # closed with the context, before it


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
    Python change: its eight products identical to gdal_xcorr's, the
    offsets those of the shift applied."""
    H, W = 160, 168
    a = rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))
    ky, kx = np.fft.fftfreq(H)[:, None], np.fft.fftfreq(W)[None, :]
    b = np.fft.ifft2(np.fft.fft2(a) * np.exp(-2j * np.pi * (kx * 3 + ky * -2)))
    a, b = a.astype(np.complex64), b.astype(np.complex64)
    prod = geogpu.run("xcorr", a, b, window=(32, 32), search=(8, 8), skip=(32, 32), device=device)
    assert list(prod)[:3] == ["offset_down", "offset_across", "snr"] and len(prod) == 8
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


@pytest.mark.parametrize("device", ["cpu", pytest.param("opencl", marks=pytest.mark.opencl)])
def test_tile_api_submit_collect(rng, device):
    """Prepared.submit_tile / collect (asynchronous runs, two in flight,
    collected one behind): ptsel tiles from band planes and from a
    pixel-interleaved array equal run_tile's bit for bit; a tile too large
    for one device pass runs at once and is still collected in order;
    coherence (no asynchronous path) runs at submit."""
    n, H, W = 5, 33, 41
    z = (rng.normal(size=(n, H, W)) + 1j * rng.normal(size=(n, H, W))).astype(np.complex64)
    z.real[rng.random(z.shape) < 0.02] = np.nan
    il = np.ascontiguousarray(np.moveaxis(z, 0, 2))  # rows x columns x bands
    op = geogpu.Op("ptsel", window=5, offsets=True, mask=True)
    prep = op.prepare((H, W), complex_input=True, bands=n)
    ctx = geogpu.context_for(device)
    tiles = [(x, y, min(15, W - x), min(12, H - y)) for y in range(0, H, 12) for x in range(0, W, 15)]
    want, got = [], []
    for dst in tiles:
        sx, sy, sw, sh = prep.source_window(*dst)
        want.append(prep.run_tile(ctx, [z[b, sy:sy + sh, sx:sx + sw] for b in range(n)],
                                  (sx, sy, sw, sh), dst))
    for k, dst in enumerate(tiles):
        sx, sy, sw, sh = prep.source_window(*dst)
        planes = [z[b, sy:sy + sh, sx:sx + sw] for b in range(n)]
        out = [np.full((dst[3], dst[2]), 7, o.dtype) for o in want[k]]
        data = planes if k % 2 else il[sy:sy + sh, sx:sx + sw]
        prep.submit_tile(ctx, data, (sx, sy, sw, sh), dst, out)
        got.append(out)
        if prep.in_flight() == 2:
            prep.collect(ctx)
    prep.collect_all(ctx)
    assert prep.in_flight() == 0 and len(tiles) == 9
    for w, g in zip(want, got):
        assert all(same(a, b) for a, b in zip(w, g))
    # each tile collected as soon as it is submitted: its kernels must wait
    # for its upload and its download for its kernels (on PoCL a barrier
    # on the main queue did not hold the kernels back: wrong pixels)
    for k, dst in enumerate(tiles):
        sx, sy, sw, sh = prep.source_window(*dst)
        out = [np.full((dst[3], dst[2]), 7, o.dtype) for o in want[k]]
        prep.submit_tile(ctx, [z[b, sy:sy + sh, sx:sx + sw] for b in range(n)],
                         (sx, sy, sw, sh), dst, out)
        prep.collect(ctx)
        assert all(same(a, b) for a, b in zip(want[k], out)), f"tile {k} collected at once"

    assert np.count_nonzero(np.isfinite(want[4][0])) > 100  # tau_max computed
    with pytest.raises(geogpu.ArgumentError, match="no tile in flight"):
        prep.collect(ctx)
    sx, sy, sw, sh = prep.source_window(*tiles[0])
    prep.submit_tile(ctx, il[sy:sy + sh, sx:sx + sw], (sx, sy, sw, sh), tiles[0], got[0])
    with pytest.raises(geogpu.ArgumentError, match="this op's runs in flight"):
        prep.run_tile_interleaved(ctx, il, (0, 0, W, H), (0, 0, W, H))
    prep.collect(ctx)
    # on a small device, a tile of several passes runs at once (after
    # collecting the tile in flight); the order of collects is kept
    os.environ["GG_DEVICE_MEMORY"] = "64KB"
    try:
        small = geogpu.Context(device)
    finally:
        del os.environ["GG_DEVICE_MEMORY"]
    big = (0, 0, W, H)
    order = [tiles[0], big, tiles[4]]
    assert small.plan_rows(15, 12, prep.bytes_per_pixel) >= 12
    assert small.plan_rows(W, H, prep.bytes_per_pixel) < H
    outs = []
    for dst in order:
        sx, sy, sw, sh = prep.source_window(*dst)
        outs.append([np.full((dst[3], dst[2]), 7, o.dtype) for o in want[0]])
        prep.submit_tile(small, il[sy:sy + sh, sx:sx + sw], (sx, sy, sw, sh), dst, outs[-1])
    assert prep.in_flight() == 2  # the first was collected before the big one ran
    prep.collect_all(small)
    sx, sy, sw, sh = prep.source_window(*big)
    whole = prep.run_tile_interleaved(ctx, il, (sx, sy, sw, sh), big)
    for w, g in zip([want[0], whole, want[4]], outs):
        assert all(same(a, b) for a, b in zip(w, g))
    small.close()
    s1 = z[0]
    cop = geogpu.Op("coherence", window=(3, 3)).prepare((H, W), complex_input=True, bands=2)
    dst = (3, 4, 20, 10)
    sx, sy, sw, sh = cop.source_window(*dst)
    planes = [s1[sy:sy + sh, sx:sx + sw], z[1, sy:sy + sh, sx:sx + sw]]
    ref_tiles = cop.run_tile(ctx, planes, (sx, sy, sw, sh), dst)
    out = [np.empty_like(t) for t in ref_tiles]
    cop.submit_tile(ctx, planes, (sx, sy, sw, sh), dst, out)
    cop.collect(ctx)
    assert all(same(a, b) for a, b in zip(ref_tiles, out))


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
    # the distributed subpackage, installed whole: its command line starts
    assert (site / "geogpu" / "distributed" / "tiling.py").exists()
    d = subprocess.run(["/usr/bin/python3", "-m", "geogpu.distributed", "--help"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert d.returncode == 0 and "python3 -m geogpu.distributed" in d.stdout, d.stderr
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


# =============================================================================
# Flat APIs (capabilities that are not ops): orthorectification, FMCW and
# MRR-2, GMTSAR-mode xcorr, the coregistration fit.  Each against an
# independent float64 reference written here, or the utility on the same
# data, on cpu and opencl.
# =============================================================================

# ------------------------------------------------------------- ortho

def rpc00b_terms(L, P, H):
    """The 20 RPC00B monomials (GDAL's / NITF's order) of normalised
    longitude L, latitude P and height H."""
    return np.stack([np.ones_like(L), L, P, H, L * P, L * H, P * H, L * L, P * P, H * H,
                     P * L * H, L ** 3, L * P * P, L * H * H, L * L * P, P ** 3, P * H * H,
                     L * L * H, P * P * H, H ** 3])


def ref_rfm(rpc, lon, lat, h):
    """Independent float64 forward RFM: (pixel, line) with GDAL's corner
    convention (the RPC's integer is a pixel centre: + 0.5)."""
    f = {k: float(v) for k, v in rpc.items() if "COEFF" not in k}
    c = {k: np.array([float(t) for t in v.split()]) for k, v in rpc.items() if "COEFF" in k}
    L = (lon - f["LONG_OFF"]) / f["LONG_SCALE"]
    P = (lat - f["LAT_OFF"]) / f["LAT_SCALE"]
    H = (h - f["HEIGHT_OFF"]) / f["HEIGHT_SCALE"]
    t = rpc00b_terms(np.asarray(L, float), np.asarray(P, float), np.asarray(H, float))
    samp = np.tensordot(c["SAMP_NUM_COEFF"], t, 1) / np.tensordot(c["SAMP_DEN_COEFF"], t, 1)
    line = np.tensordot(c["LINE_NUM_COEFF"], t, 1) / np.tensordot(c["LINE_DEN_COEFF"], t, 1)
    return (samp * f["SAMP_SCALE"] + f["SAMP_OFF"] + 0.5,
            line * f["LINE_SCALE"] + f["LINE_OFF"] + 0.5)


def small_rpc(w, h):
    """A scene of w x h pixels around (6.1 E, 45.2 N): rotation, parallax
    (height terms) and non-linear terms."""
    ln, ld, sn, sd = (np.zeros(20) for _ in range(4))
    ln[[0, 1, 2, 3, 7, 10]] = [0.003, -0.04, -1.01, 0.06, 0.004, 0.002]
    sn[[0, 1, 2, 3, 4, 8]] = [-0.002, 1.02, 0.05, -0.09, 0.003, -0.002]
    ld[[0, 1, 2]] = [1.0, 0.001, -0.0008]
    sd[[0, 1, 3]] = [1.0, -0.0005, 0.0003]
    j = lambda a: " ".join(f"{v:.17g}" for v in a)  # noqa: E731
    return {"LINE_OFF": str(h / 2), "SAMP_OFF": str(w / 2), "LAT_OFF": "45.2",
            "LONG_OFF": "6.1", "HEIGHT_OFF": "1000", "LINE_SCALE": str(h / 2),
            "SAMP_SCALE": str(w / 2), "LAT_SCALE": "0.004", "LONG_SCALE": "0.006",
            "HEIGHT_SCALE": "800", "LINE_NUM_COEFF": j(ln), "LINE_DEN_COEFF": j(ld),
            "SAMP_NUM_COEFF": j(sn), "SAMP_DEN_COEFF": j(sd)}


def textured(rng, h, w, lo=500, hi=3000):
    from scipy import ndimage
    t = ndimage.gaussian_filter(rng.standard_normal((h, w)), 1.5)
    return (lo + (hi - lo) * (t - t.min()) / (t.max() - t.min())).astype(np.float32)


ORTHO_GT = (6.0925, 0.00005, 0.0, 45.2045, 0.0, -0.00005)   # 300 x 180 lon/lat grid
ORTHO_SIZE = (300, 180)


def test_rpc_forward_against_float64():
    rpc = small_rpc(160, 120)
    rng = np.random.default_rng(5)
    lon = 6.1 + rng.uniform(-0.006, 0.006, 50)
    lat = 45.2 + rng.uniform(-0.004, 0.004, 50)
    h = rng.uniform(200, 1800, 50)
    px, ln = geogpu.rpc_forward(rpc, lon, lat, h)
    rx, ry = ref_rfm(rpc, lon, lat, h)
    assert np.abs(px - rx).max() < 1e-9 and np.abs(ln - ry).max() < 1e-9
    assert np.ptp(px) > 50 and np.ptp(ln) > 50  # the points spread over the scene


def test_ortho_flat_terrain_against_reference(device):
    """No DEM (constant height), nearest neighbour: every output pixel is
    the source pixel the float64 RFM of its centre falls in."""
    rng = np.random.default_rng(11)
    img = textured(rng, 120, 160)
    rpc = small_rpc(160, 120)
    out = geogpu.ortho(img, rpc, ORTHO_GT, ORTHO_SIZE, rpc_height=1300.0, device=device)
    assert out.shape == (180, 300) and out.dtype == np.float32
    W, H = ORTHO_SIZE
    X, Y = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
    lon = ORTHO_GT[0] + X * ORTHO_GT[1]
    lat = ORTHO_GT[3] + Y * ORTHO_GT[5]
    sx, sy = ref_rfm(rpc, lon, lat, np.full_like(lon, 1300.0))
    inside = (sx >= 0) & (sx < 160) & (sy >= 0) & (sy < 120)
    ref_img = np.zeros((H, W), np.float32)
    ref_img[inside] = img[sy[inside].astype(int), sx[inside].astype(int)]
    assert 0.2 < inside.mean() < 0.95  # the grid sees the scene and beyond
    agree = (out == ref_img).mean()
    assert agree > 0.999, f"only {agree:.4%} of pixels match the float64 reference"
    assert np.std(out[inside]) > 100


def write_rpc_scene(path, img, rpc):
    ds = gdal.GetDriverByName("GTiff").Create(str(path), img.shape[1], img.shape[0], 1,
                                              gdal.GDT_Float32)
    ds.SetMetadata(rpc, "RPC")
    ds.GetRasterBand(1).WriteArray(img)
    ds = None
    return path


@pytest.fixture(scope="module")
def ortho_scene(tmp_path_factory):
    from scipy import ndimage
    d = tmp_path_factory.mktemp("ortho_py")
    rng = np.random.default_rng(3)
    img = textured(rng, 120, 160)
    rpc = small_rpc(160, 120)
    res = 1 / 3600 / 4
    dem = 1000 + 500 * ndimage.gaussian_filter(rng.standard_normal((240, 300)), 8)
    dem = (1000 + 600 * (dem - dem.mean()) / np.abs(dem - dem.mean()).max()).astype(np.float32)
    dgt = (6.088, res, 0.0, 45.209, 0.0, -res)
    ds = gdal.GetDriverByName("GTiff").Create(str(d / "dem.tif"), 300, 240, 1, gdal.GDT_Float32)
    ds.SetGeoTransform(dgt)
    ds.SetProjection('GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],'
                     'PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]]')
    ds.GetRasterBand(1).WriteArray(dem)
    ds = None
    return d, img, rpc, dem, dgt, write_rpc_scene(d / "scene.tif", img, rpc)


@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
def test_ortho_dem_matches_utility(gg, ortho_scene, device, r):
    """With a DEM: the numpy wrapper gives gdal_ortho's image (same device,
    same grid, -t_srs EPSG:4326) to float32 rounding."""
    d, img, rpc, dem, dgt, scene = ortho_scene
    W, H = ORTHO_SIZE
    te = (ORTHO_GT[0], ORTHO_GT[3] + H * ORTHO_GT[5], ORTHO_GT[0] + W * ORTHO_GT[1], ORTHO_GT[3])
    dst = d / f"util_{r}_{device}.tif"
    gg.run("gdal_ortho", "-q", "-device", device, "-dem", d / "dem.tif", "-t_srs", "EPSG:4326",
           "-te", *te, "-ts", W, H, "-r", r, scene, dst)
    util = load(dst)
    out = geogpu.ortho(img, rpc, ORTHO_GT, ORTHO_SIZE, dem=dem, dem_geotransform=dgt,
                       resampling=r, device=device)
    assert out.shape == util.shape
    filled = util != 0
    assert filled.mean() > 0.2 and np.std(util[filled]) > 100
    assert np.array_equal(out != 0, filled)
    assert np.abs(out - util).max() <= 1e-3 * np.abs(util).max()


@pytest.mark.parametrize("r", ["bilinear", "cubic"])
def test_ortho_downsampling_scales_match_utility(gg, ortho_scene, r):
    """A coarser grid than the scene: with gdalwarp's kernel scales (which
    gdal_ortho -v reports) the wrapper gives gdal_ortho's stretched-kernel
    image; without them (scale 1) the image is a different, sharper one."""
    import re
    d, img, rpc, dem, dgt, scene = ortho_scene
    W, H = 75, 45
    gt = (ORTHO_GT[0], 0.0002, 0.0, ORTHO_GT[3], 0.0, -0.0002)
    te = (gt[0], gt[3] + H * gt[5], gt[0] + W * gt[1], gt[3])
    p = gg.run("gdal_ortho", "-v", "-device", "cpu", "-dem", d / "dem.tif", "-t_srs",
               "EPSG:4326", "-te", *te, "-ts", W, H, "-r", r, scene, d / f"down_{r}.tif")
    m = re.search(r"kernel scales ([0-9.]+) ([0-9.]+)", p.stderr + p.stdout)
    if m is None:
        pytest.skip("this gdal_ortho does not report kernel scales")
    scale = (float(m.group(1)), float(m.group(2)))
    assert max(scale) < 0.95  # really downsampling
    util = load(d / f"down_{r}.tif")
    out = geogpu.ortho(img, rpc, gt, (W, H), dem=dem, dem_geotransform=dgt, resampling=r,
                       scale=scale, device="cpu")
    filled = util != 0
    assert filled.mean() > 0.3 and np.array_equal(out != 0, filled)
    assert np.abs(out - util).max() <= 1e-3 * np.abs(util).max()
    sharp = geogpu.ortho(img, rpc, gt, (W, H), dem=dem, dem_geotransform=dgt, resampling=r,
                         device="cpu")
    assert np.abs(sharp - util)[filled].max() > 1.0  # the scales matter
    with pytest.raises(geogpu.ArgumentError):
        geogpu.ortho(img, rpc, gt, (W, H), scale=3)


def test_ortho_multiband_types_and_projected_grid(ortho_scene):
    """Bands first in, bands first out, UInt16 kept; a UTM output grid
    (dst_srs) gives the same picture as the lon/lat one resampled there."""
    d, img, rpc, dem, dgt, scene = ortho_scene
    u16 = np.round(img).astype(np.uint16)
    two = np.stack([u16, (3000 - u16).astype(np.uint16)])
    out = geogpu.ortho(two, rpc, ORTHO_GT, ORTHO_SIZE, dem=dem, dem_geotransform=dgt,
                       device="cpu")
    assert out.shape == (2, 180, 300) and out.dtype == np.uint16
    valid = out[0] != 0
    assert np.array_equal(out[1][valid].astype(int), 3000 - out[0][valid].astype(int))
    # the same ground in UTM 32N: the centre pixel lands on the same source sample
    from osgeo import osr
    wgs, utm = osr.SpatialReference(), osr.SpatialReference()
    wgs.ImportFromEPSG(4326)
    utm.ImportFromEPSG(32632)
    for s in (wgs, utm):
        s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    cx, cy, _ = osr.CoordinateTransformation(wgs, utm).TransformPoint(6.1, 45.2)
    gt = (cx - 50 * 2.0, 2.0, 0.0, cy + 50 * 2.0, 0.0, -2.0)
    o_utm = geogpu.ortho(u16, rpc, gt, (100, 100), dem=dem, dem_geotransform=dgt,
                         dst_srs="EPSG:32632", device="cpu")
    o_ll = geogpu.ortho(u16, rpc, (6.1 - 0.5e-5, 1e-5, 0, 45.2 + 0.5e-5, 0, -1e-5), (1, 1),
                        dem=dem, dem_geotransform=dgt, device="cpu")
    assert o_utm[50, 50] == o_ll[0, 0] and o_ll[0, 0] != 0


def test_ortho_errors(ortho_scene):
    d, img, rpc, dem, dgt, scene = ortho_scene
    bad = dict(rpc)
    del bad["LINE_SCALE"]
    with pytest.raises(geogpu.ArgumentError, match="LINE_SCALE"):
        geogpu.ortho(img, bad, ORTHO_GT, ORTHO_SIZE)
    bad = dict(rpc, SAMP_NUM_COEFF="1 2 3")
    with pytest.raises(geogpu.ArgumentError, match="20 expected"):
        geogpu.ortho(img, bad, ORTHO_GT, ORTHO_SIZE)
    with pytest.raises(geogpu.ArgumentError, match="dem_geotransform"):
        geogpu.ortho(img, rpc, ORTHO_GT, ORTHO_SIZE, dem=dem)
    with pytest.raises(geogpu.ArgumentError, match="resampling"):
        geogpu.ortho(img, rpc, ORTHO_GT, ORTHO_SIZE, resampling="lanczos")
    with pytest.raises(geogpu.ArgumentError, match="scale is zero"):
        geogpu.ortho(img, dict(rpc, LAT_SCALE="0"), ORTHO_GT, ORTHO_SIZE, device="cpu")


# ------------------------------------------------------------- FMCW

FMCW_SMALL = dict(n_samples=128, n_sweeps=32, n_gates=48)


def test_fmcw_params_and_info():
    p = geogpu.fmcw_params(**FMCW_SMALL, window_range="hann")
    assert p["n_gates"] == 48 and p["window_range"] == 1 and p["carrier_hz"] == 9.4e9
    info = geogpu.fmcw_info(p)
    c = 299792458.0
    assert info["range_resolution"] == pytest.approx(c / (2 * p["bandwidth_hz"]))
    assert info["wavelength"] == pytest.approx(c / p["carrier_hz"])
    assert info["nyquist_velocity"] == pytest.approx(c / p["carrier_hz"] / (4 * p["sweep_time_s"]))
    assert info["sector_values"] == 6 * 32 * 128
    with pytest.raises(geogpu.ArgumentError, match="n_gates"):
        geogpu.fmcw_params(n_samples=128, n_sweeps=32, n_gates=500)
    with pytest.raises(geogpu.ArgumentError, match="unknown parameter"):
        geogpu.fmcw_params(gates=3)


def test_fmcw_chain_recovers_simulated_truth(device):
    """Simulated sectors with exact Gaussian spectra (no speckle) and
    rectangular windows, fields constant over 8-gate blocks: the chain gives
    back reflectivity, velocity, ZDR and LDR where the SNR is >= 20 dB (the
    tolerances of the C accuracy test), and nodata where there is no echo."""
    p = geogpu.fmcw_params(n_samples=128, n_sweeps=128, n_gates=48, window_range="rect",
                           window_doppler="rect")
    G = p["n_gates"]
    va = geogpu.fmcw_info(p)["nyquist_velocity"]
    blocks = [np.nan, 22.0, 30.0, 40.0, 26.0, 35.0]
    dbz = np.repeat(np.array(blocks, np.float32), 8)
    vel = np.repeat(np.array([0, -0.5, 0.3, 0.6, -0.2, 0.1]) * va, 8)
    zdr = np.repeat(np.array([0, 0.5, 1.0, 2.5, 0.2, 1.5]), 8)
    sectors = np.stack([geogpu.fmcw_simulate(p, dbz=dbz, vel=vel, zdr=zdr, ldr=-20, width=1.0,
                                             noise_counts=2.0, exponential=False, seed=s)
                        for s in (11, 22, 33)])
    assert sectors.dtype == np.int16 and sectors.shape == (3, 3, 2, 128, 128)
    assert np.abs(sectors).max() > 100
    r = geogpu.fmcw_process(sectors, p, products="DBZ,VEL,ZDR,LDR", device=device)
    assert set(r) == {"DBZ", "VEL", "ZDR", "LDR", "flags"} and list(r["flags"]) == [0, 0, 0]
    checked = 0
    for g in range(8, G):
        if g % 8 in (0, 1, 6, 7):
            continue  # next to a block edge
        snr = geogpu.fmcw_sim_snr_db(p, g, dbz[g], noise_counts=2.0)
        if snr - zdr[g] - 20 < 20:  # the weakest channel used (HV for LDR)
            continue
        checked += 1
        assert np.abs(r["DBZ"][:, g] - dbz[g]).max() < 0.5, g
        assert np.abs(r["VEL"][:, g] - vel[g]).max() < 0.1, g
        assert np.abs(r["ZDR"][:, g] - zdr[g]).max() < 0.2, g
        assert np.abs(r["LDR"][:, g] + 20).max() < 0.2, g
    assert checked >= 12
    # no echo: nodata, or noise far below the weather (min_snr -20 lets some through)
    quiet = r["DBZ"][:, 2:6]
    assert np.all((quiet == geogpu.fmcw.NODATA) | (quiet < -30)) and \
        (quiet == geogpu.fmcw.NODATA).mean() >= 0.5


@pytest.mark.opencl
def test_fmcw_cpu_opencl_agree():
    p = geogpu.fmcw_params(**FMCW_SMALL)
    dbz = np.linspace(10, 40, p["n_gates"])
    s = geogpu.fmcw_simulate(p, dbz=dbz, vel=2.0, seed=7)
    c = geogpu.fmcw_process(s, p, device="cpu")
    o = geogpu.fmcw_process(s, p, device="opencl")
    assert list(c) == list(o) and len(c) == 11
    for k in geogpu.fmcw.PRODUCTS:
        ok = c[k] != geogpu.fmcw.NODATA
        assert ok.sum() > 20 and np.array_equal(ok, o[k] != geogpu.fmcw.NODATA), k
        assert np.abs(c[k][ok] - o[k][ok]).max() <= 1e-3 * max(1.0, np.abs(c[k][ok]).max()), k


def test_fmcw_bad_sectors():
    p = geogpu.fmcw_params(**FMCW_SMALL)
    s = geogpu.fmcw_simulate(p, dbz=30.0, seed=1)
    z = np.stack([s, s])
    z[1, 1] = 0  # the VV channel all zero
    r = geogpu.fmcw_process(z, p, products="DBZ", device="cpu")
    assert list(r["flags"]) == [0, 1] and np.all(r["DBZ"][1] == geogpu.fmcw.NODATA)
    with pytest.raises(geogpu.ArgumentError, match="int16"):
        geogpu.fmcw_process(s.astype(np.float32), p)
    with pytest.raises(geogpu.ArgumentError, match="expected"):
        geogpu.fmcw_process(s[:, :, :16], p)
    with pytest.raises(geogpu.ArgumentError, match="FOO"):
        geogpu.fmcw_process(s, p, products="DBZ,FOO")


def ref_moments(spec, n_avg, v0, dv):
    """Independent float64 Hildebrand-Sekhon noise and moments of one
    spectrum (the definitions of docs/driver_fmcw.md): noise = mean of the
    largest set of lowest bins with variance <= mean^2 / n_avg; power = sum
    - noise * bins; velocity and width from the contiguous block of bins
    around the peak that ends at two bins in a row at or below the noise."""
    s = np.asarray(spec, np.float64)
    n = s.size
    t = np.sort(s)
    noise, all_noise = t[0], False
    for k in range(1, n + 1):
        m = t[:k].mean()
        if t[:k].var() <= m * m / n_avg:
            noise, all_noise = m, k == n
    power = 0.0 if all_noise else s.sum() - noise * n
    pk = int(np.argmax(s))
    lo = hi = 0
    while hi - lo + 2 < n and (s[(pk + hi + 1) % n] > noise or s[(pk + hi + 2) % n] > noise):
        hi += 1
    while hi - lo + 2 < n and (s[(pk + lo - 1) % n] > noise or s[(pk + lo - 2) % n] > noise):
        lo -= 1
    d = np.arange(lo, hi + 1)
    e = s[(pk + d) % n] - noise
    mu = (e * d).sum() / e.sum()
    v = dv * (pk + mu)
    v -= n * dv * np.floor(v / (n * dv))
    width = dv * np.sqrt(max((e * d * d).sum() / e.sum() - mu * mu, 0.0))
    return noise, power, v0 + v, width


def test_fmcw_spectral_moments_against_reference(device):
    rng = np.random.default_rng(2)
    R, G, B = 2, 6, 64
    sp = rng.exponential(1.0, (R, G, B)).astype(np.float32)   # white noise
    for r in range(R):
        for g in range(1, G):  # gate 0: noise only
            sp[r, g] += (40 * g * np.exp(-0.5 * ((np.arange(B) - 10 - 7 * g) / (1 + g / 2)) ** 2)
                         ).astype(np.float32)
    mom = geogpu.fmcw_spectral_moments(sp, -6.0, 0.19, n_avg=1, device=device)
    assert set(mom) == {"NOISE", "POWER", "SNR", "VEL", "WIDTH"}
    for r in range(R):
        for g in range(1, G):
            noise, power, vel, width = ref_moments(sp[r, g], 1, -6.0, 0.19)
            assert mom["NOISE"][r, g] == pytest.approx(noise, rel=1e-4)
            assert mom["POWER"][r, g] == pytest.approx(power, rel=1e-4)
            assert mom["SNR"][r, g] == pytest.approx(10 * np.log10(power / (noise * B)), abs=1e-3)
            assert mom["VEL"][r, g] == pytest.approx(vel, abs=1e-4)
            assert mom["WIDTH"][r, g] == pytest.approx(width, abs=1e-4)
    # the peaks are where they were put
    assert np.abs(mom["VEL"][:, 1:] - (-6.0 + 0.19 * (10 + 7 * np.arange(1, G)))).max() < 0.1


# MRR-2 (geogpu.mrr2_read / mrr2_products): tests/python/test_mrr2.py


# ------------------------------------------------------------- GMTSAR xcorr

def speckle_pair(rng, H, W, dx, dy, rho=0.85, amp=900.0):
    """Two int16-range SLCs: b is a shifted by (dx across, dy down) plus
    independent speckle (coherence rho)."""
    a = rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))
    n = rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))
    ky, kx = np.fft.fftfreq(H)[:, None], np.fft.fftfreq(W)[None, :]
    sh = np.fft.ifft2(np.fft.fft2(a) * np.exp(-2j * np.pi * (kx * dx + ky * dy)))
    b = rho * sh + np.sqrt(1 - rho ** 2) * n
    return (amp * a).astype(np.complex64), (amp * b).astype(np.complex64)


def write_gmtsar(d, name, z, prf=1000.0):
    iq = np.empty(z.shape + (2,), "<i2")
    iq[..., 0], iq[..., 1] = np.rint(z.real), np.rint(z.imag)
    iq.tofile(d / f"{name}.SLC")
    H, W = z.shape
    (d / f"{name}.PRM").write_text(
        f"SLC_file = {name}.SLC\nnum_rng_bins = {W}\nnum_valid_az = {H}\nnum_patches = 1\n"
        f"PRF = {prf}\nrshift = 0\nashift = 0\n")
    return d / f"{name}.PRM"


def test_xcorr_gmtsar_matches_utility(gg, tmp_path, device):
    """Two numpy SLCs -> GMTSAR's offsets table: the shift put in comes out,
    and gdal_xcorr -mode gmtsar on the same samples prints the same rows."""
    rng = np.random.default_rng(8)
    a, b = speckle_pair(rng, 384, 320, 2.4, -1.7)
    t = geogpu.xcorr_gmtsar(a, b, nx=4, ny=4, xsearch=16, ysearch=16, device=device)
    assert t.shape == (16, 5)
    # GMTSAR's own accuracy on speckle with a fractional shift (azimuth:
    # 1/16 px steps, no range-style interpolation)
    assert abs(np.median(t[:, 1]) - 2.4) < 0.1 and abs(np.median(t[:, 3]) + 1.7) < 0.25
    assert np.all(t[:, 4] > 0)
    m, s = write_gmtsar(tmp_path, "master", a), write_gmtsar(tmp_path, "aligned", b)
    gg.run("gdal_xcorr", "-mode", "gmtsar", m, s, "-nx", 4, "-ny", 4, "-xsearch", 16,
           "-ysearch", 16, "-device", device, "-o", tmp_path / "f.dat", "-q")
    u = np.loadtxt(tmp_path / "f.dat", ndmin=2)
    # the utility prints 3 decimals for offsets, 2 for corr
    np.testing.assert_array_equal(u[:, [0, 2]], t[:, [0, 2]])
    assert np.abs(u[:, [1, 3]] - t[:, [1, 3]]).max() <= 0.0005 + 1e-9
    assert np.abs(u[:, 4] - t[:, 4]).max() <= 0.005 + 1e-9
    # the PRM path reads the same files
    t2 = geogpu.xcorr_gmtsar_prm(m, s, nx=4, ny=4, xsearch=16, ysearch=16, device=device)
    assert same(t, t2)
    assert geogpu.read_prm(m)["width"] == 320


def test_xcorr_gmtsar_errors(tmp_path):
    z = np.ones((64, 64), np.complex64)
    with pytest.raises(geogpu.ArgumentError, match="int16"):
        geogpu.xcorr_gmtsar(z * 1e6, z)
    with pytest.raises(geogpu.ArgumentError, match="complex"):
        geogpu.xcorr_gmtsar(z.real, z.real)
    with pytest.raises(geogpu.ArgumentError, match="xsearch"):
        geogpu.xcorr_gmtsar(z, z, xsearch=0)
    with pytest.raises(geogpu.GeogpuError):
        geogpu.xcorr_gmtsar_prm(tmp_path / "none.PRM", tmp_path / "none.PRM")
    cancelled = []
    rng = np.random.default_rng(1)
    a, b = speckle_pair(rng, 256, 256, 1, 1)
    with pytest.raises(geogpu.CancelledError):
        geogpu.xcorr_gmtsar(a, b, nx=2, ny=4, xsearch=16, ysearch=16, device="cpu",
                            progress=lambda f: cancelled.append(f) is not None)
    assert cancelled  # the callback was called (and returned False)


# ------------------------------------------------------------- coreg fit

def test_coreg_fit_recovers_polynomial_with_outliers():
    """A quadratic warp sampled on a grid with noise and 10 % gross
    outliers: the robust fit finds the polynomial (the float64 least
    squares of the clean points), rejects the outliers, and writes JSON
    and GMTSAR PRM lines that parse back."""
    rng = np.random.default_rng(4)
    X, Y = np.meshgrid(np.arange(20, 1000, 40.0), np.arange(10, 800, 40.0))
    x, y = X.ravel(), Y.ravel()
    M = np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], 1)
    cd = np.array([1.5, 2e-3, -1e-3, 1e-6, -2e-6, 5e-7])
    ca = np.array([-0.7, -1e-3, 3e-3, -5e-7, 1e-6, 2e-6])
    od = M @ cd + rng.normal(0, 0.02, x.size)
    oa = M @ ca + rng.normal(0, 0.02, x.size)
    bad = rng.random(x.size) < 0.1
    od_o, oa_o = od.copy(), oa.copy()
    od_o[bad] += rng.choice([-5, 5], bad.sum())
    oa_o[bad] -= rng.choice([-4, 4], bad.sum())
    snr = np.where(rng.random(x.size) < 0.05, 1.0, 20.0)
    f = geogpu.coreg_fit(x, y, od_o, oa_o, snr=snr, order=2, min_snr=5)
    keep = snr >= 5
    clean = keep & ~bad
    ld = np.linalg.lstsq(M[clean], od[clean], rcond=None)[0]
    la = np.linalg.lstsq(M[clean], oa[clean], rcond=None)[0]
    assert f.order == 2 and f.terms == ("1", "x", "y", "x^2", "xy", "y^2")
    assert f.n_total == x.size and f.n_candidates == keep.sum()
    assert f.n_used_down <= (keep & ~bad).sum() + 2
    d_fit, a_fit = f(x, y)
    assert np.abs(d_fit - M @ ld).max() < 0.01 and np.abs(a_fit - M @ la).max() < 0.01
    assert np.abs(d_fit - M @ cd).max() < 0.05 and f.rms_down < 0.03
    g = geogpu.CoregFit.parse(f.json())
    assert np.allclose(g.down, f.down, rtol=1e-12) and np.allclose(g.across, f.across, rtol=1e-12)
    prm = f.prm_lines()
    for key in ("rshift", "sub_int_r", "stretch_r", "a_stretch_r", "ashift", "sub_int_a",
                "stretch_a", "a_stretch_a"):
        assert key in prm
    h = geogpu.CoregFit.parse("1,2,3;4,5,6")
    assert h(10.0, 20.0) == (1 + 2 * 10 + 3 * 20, 4 + 5 * 10 + 6 * 20)


def test_coreg_fit_from_xcorr_op(rng, device):
    """The xcorr op's dense offsets -> fit points -> an order-1 fit that
    finds the shift applied."""
    H, W = 256, 256
    a = rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))
    ky, kx = np.fft.fftfreq(H)[:, None], np.fft.fftfreq(W)[None, :]
    b = np.fft.ifft2(np.fft.fft2(a) * np.exp(-2j * np.pi * (kx * 2 + ky * -1)))
    prod, info = geogpu.run("xcorr", a.astype(np.complex64), b.astype(np.complex64),
                            window=(32, 32), search=(6, 6), skip=(32, 32), device=device,
                            geotransform=(0, 1, 0, 0, 0, 1), return_info=True)
    pts = geogpu.offset_points(prod, info.geotransform, nodata=info.nodata[0])
    assert pts["x"].size == prod["offset_down"].size
    # window centres (primary pixels, centres at integers) on the skip grid
    assert np.all(np.diff(np.unique(pts["x"])) == 32) and np.all(np.diff(np.unique(pts["y"])) == 32)
    f = geogpu.coreg_fit(**pts, order=1)
    assert f.down[0] == pytest.approx(-1, abs=0.05) and f.across[0] == pytest.approx(2, abs=0.05)
    assert np.abs(f.down[1:]).max() < 1e-3 and np.abs(f.across[1:]).max() < 1e-3


def test_coreg_fit_errors():
    with pytest.raises(geogpu.ArgumentError, match="8 needed"):
        geogpu.coreg_fit([1, 2, 3], [1, 2, 3], [0, 0, 0], [0, 0, 0], order=1)
    with pytest.raises(geogpu.ArgumentError, match="y has"):
        geogpu.coreg_fit([1, 2, 3], [1, 2], [0, 0, 0], [0, 0, 0])
    with pytest.raises(geogpu.ArgumentError):
        geogpu.CoregFit.parse("not a fit")


# ------------------------------------------------------------- docs/python.md

DOC = REPO / "docs" / "python.md"


def runnable_blocks():
    import re
    text = DOC.read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if b.startswith("# runnable")]


def test_docs_name_every_public_function():
    """docs/python.md names every function and class the package exports."""
    text = DOC.read_text()
    missing = [n for n in geogpu.__all__ if f"{n}" not in text]
    assert not missing, f"not documented in docs/python.md: {missing}"
    assert len(runnable_blocks()) >= 7


@pytest.mark.parametrize("k", range(7))
def test_docs_examples_run(tmp_path, k):
    """Every `# runnable` example of docs/python.md runs as written (in a
    fresh interpreter, in a scratch folder)."""
    blocks = runnable_blocks()
    if k >= len(blocks):
        pytest.skip("fewer examples")
    # the examples name data relative to the repository ("../shared/data")
    code = blocks[k].replace("../shared/data", str(REPO.parent / "shared" / "data"))
    env = dict(os.environ, PYTHONPATH=str(PKG), GG_LIBRARY=str(BUILD / "lib"))
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"example {k} failed:\n{blocks[k]}\n{p.stderr}"
    assert p.stdout.strip(), "the example printed nothing"
    print(p.stdout)
