"""gdal_ptsel (the GG `ptsel` operation) against a float64 implementation of
the PtSel paper's O(n^2) pair sum (reference.ptsel): stacks given as several
files or one multi-band file, -slc, -conj, -window, -mindist, -threshold,
-offsets, -mask, the GG: connection string, the real psps stack, and bad
input."""
import math
import os
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

import reference as ref

ND = -9999.0
N, H, W = 6, 19, 25
NO_EPOCH = (3, 4)       # no valid epoch: nodata in both modes
ONE_EPOCH = (2, W - 3)  # one valid epoch: tau 1 (interferograms), nodata (SLCs)
TOL = ref.TOL["ptsel"]

PSPS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "psps_houston"
PSPS_REF_DATE = "20180115"


def random_stack(rng, n=N, H=H, W=W):
    """n epochs: 30 % of the pixels follow a common per-epoch phase screen
    (high tau between them), the others have random phases; random
    amplitudes; zero, NaN, Inf and nodata samples sprinkled in."""
    amp = rng.rayleigh(1.0, (n, H, W)) + 0.05
    phase = rng.uniform(-np.pi, np.pi, (n, H, W))
    screen = rng.uniform(-np.pi, np.pi, (n, 1, 1))
    coherent = rng.random((H, W)) < 0.3
    phase = np.where(coherent, screen + 0.4 * rng.normal(size=(n, H, W)), phase)
    z = (amp * np.exp(1j * phase)).astype(np.complex64)
    z[rng.random(z.shape) < 0.03] = 0
    z.real[rng.random(z.shape) < 0.03] = np.nan
    z.imag[rng.random(z.shape) < 0.02] = np.inf
    z.real[rng.random(z.shape) < 0.03] = ND
    z[:, NO_EPOCH[0], NO_EPOCH[1]] = np.nan
    z[:, ONE_EPOCH[0], ONE_EPOCH[1]] = 0
    z[2, ONE_EPOCH[0], ONE_EPOCH[1]] = 0.5 - 2j
    return z


LAYOUTS = {"files": [1] * N, "multiband": [N], "mixed": [2, 1, 3]}


def write_stack(gg, folder, z, layout):
    """The stack as files of LAYOUTS[layout] bands each, in order."""
    folder.mkdir(exist_ok=True)
    paths, b = [], 0
    for k, nb in enumerate(LAYOUTS[layout]):
        paths.append(gg.write(folder / f"{layout}{k}.tif", [z[i] for i in range(b, b + nb)], nodata=ND))
        b += nb
    assert b == len(z)
    return paths


def per_band(dst, name):
    """<dst stem>_<band name><ext>"""
    return dst.with_name(f"{dst.stem}_{name}{dst.suffix}")


def check_tau(out, want, invalid, nodata, what):
    """Identical nodata masks, largest absolute error within TOL."""
    got_nd = ref.is_nodata(out, nodata)
    bad = got_nd != invalid
    assert not bad.any(), (f"{what}: nodata mask differs at {int(bad.sum())} pixels, first (row, col) "
                           f"{tuple(int(i) for i in np.argwhere(bad)[0])}")
    ok = ~invalid
    assert np.isfinite(out[ok]).all() and (out[ok] >= 0).all() and (out[ok] <= 1).all()
    err = float(np.max(np.abs(out[ok].astype(np.float64) - want[ok])))
    assert err <= TOL, f"{what}: max absolute error {err:.3e} > {TOL:g}"
    return err


def ptsel(gg, device, srcs, dst, *opts):
    gg.run("gdal_ptsel", "-q", "-device", device, *opts, *srcs, dst)
    return dst


@pytest.mark.parametrize("mode,layout", [("ifg", "files"), ("ifg", "multiband"), ("slc", "files"),
                                         ("slc", "multiband")])
def test_tau_max(gg, rng, tmp_path, device, mode, layout):
    z = random_stack(rng)
    srcs = write_stack(gg, tmp_path / "in", z, layout)
    slc = mode == "slc"
    out, nd, gt, dt = gg.read(ptsel(gg, device, srcs, tmp_path / "tau.tif", "-window", 5,
                                    *(["-slc"] if slc else [])))
    assert dt == "Float32" and out.shape == (H, W)
    gg.check_nodata_value(nd, math.nan, "tau_max: NaN by default, not the input's nodata")
    assert np.array_equal(gt, gg.read(srcs[0])[2]), "geotransform must be the input's"
    want, invalid, _ = ref.ptsel(z, 5, slc=slc, nodata=ND)
    assert invalid[NO_EPOCH] and np.isnan(out[NO_EPOCH])
    if slc:
        assert invalid[ONE_EPOCH], "SLCs: an arc needs two common valid epochs"
    else:
        # the one-valid-epoch caveat: an arc with m = 1 has tau = 1
        assert abs(want[ONE_EPOCH] - 1) < 1e-12 and out[ONE_EPOCH] == 1
    assert 0.05 < np.mean(want[~invalid] >= 0.71) < 0.95, "test data must hold PS and non-PS pixels"
    err = check_tau(out, want, invalid, math.nan, f"tau_max {mode} {layout} on {device}")
    gg.record_error(f"ptsel/max-abs-{mode}", device, err)


def test_layouts_identical(gg, rng, tmp_path, device):
    """Sources are stacked band by band in the order given: single-band
    files, one multi-band file and a mix give the same bits."""
    z = random_stack(rng)
    got = {}
    for layout in LAYOUTS:
        srcs = write_stack(gg, tmp_path / layout, z, layout)
        dst = ptsel(gg, device, srcs, tmp_path / f"{layout}.tif", "-window", 5, "-offsets")
        got[layout] = [gg.read(dst, b)[0] for b in (1, 2, 3)]
    for layout in ("multiband", "mixed"):
        for b in range(3):
            assert gg.same_bits(got[layout][b], got["files"][b]), f"{layout} band {b + 1} differs from files"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 4,
                    reason="one stack reader here: the threaded reads take half the processors")
def test_stack_readers(gg, rng, tmp_path):
    """The GG driver reads a stack window with several threads (half the
    processors it may use, up to 8), each with its own handle on the input
    files, in row slices of at least 16 rows: the same bits as one reader
    (the process pinned to one processor), for multi-band and single-band
    files and a VRT among them, and right against the float64 reference."""
    n, h, w = 6, 150, 41
    z = random_stack(rng, n=n, H=h, W=w)
    srcs = write_stack(gg, tmp_path / "in", z, "mixed")
    vrt = tmp_path / "in" / "second.vrt"  # a VRT reopens like a file
    gdal.Translate(str(vrt), str(srcs[1]), format="VRT")
    srcs[1] = vrt
    got = {}
    one = min(os.sched_getaffinity(0))
    for name, pin in (("threads", []), ("one", ["taskset", "-c", str(one)])):
        dst = tmp_path / f"{name}.tif"
        gg.run(*pin, "gdal_ptsel", "-q", "-device", "cpu", "-window", 5, *srcs, dst)
        got[name] = gg.read(dst)[0]
    assert gg.same_bits(got["threads"], got["one"]), "several readers differ from one"
    want, invalid, _ = ref.ptsel(z, 5, slc=False, nodata=ND)
    check_tau(got["threads"], want, invalid, math.nan, "tau_max with several readers")


def test_stack_read_as_it_lies(gg, rng, tmp_path, device):
    """A one-file stack that lies in its file as the op reads it (GTiff,
    uncompressed, pixel-interleaved, in strips) is read without RasterIO
    and handed over pixel-interleaved (gg_stack_rows.cpp); band-interleaved,
    compressed, tiled or big-endian files go through RasterIO; strips of
    several rows (the last one short), one strip and a BigTIFF are read as
    they lie.  Every one gives the same bits."""
    n, h, w = 5, 40, 300
    z = random_stack(rng, n=n, H=h, W=w)
    plain = gg.write(tmp_path / "pixel.tif", [z[i] for i in range(n)], nodata=ND)
    assert gdal.Info(str(plain), format="json")["metadata"]["IMAGE_STRUCTURE"]["INTERLEAVE"] == "PIXEL"
    others = {}
    for name, co in (("band", ["INTERLEAVE=BAND"]), ("deflate", ["COMPRESS=DEFLATE"]),
                     ("tiled", ["TILED=YES"]), ("big_endian", ["ENDIANNESS=BIG"])):
        others[name] = tmp_path / f"{name}.tif"
        gdal.Translate(str(others[name]), str(plain), creationOptions=co)
    lying = {}
    for name, co in (("strips7", ["BLOCKYSIZE=7"]), ("one_strip", [f"BLOCKYSIZE={h}"]),
                     ("bigtiff", ["BIGTIFF=YES", "BLOCKYSIZE=3"])):
        lying[name] = tmp_path / f"{name}.tif"
        gdal.Translate(str(lying[name]), str(plain), creationOptions=co)

    def run(src, name):
        dst = tmp_path / f"tau_{name}.tif"
        p = gg.run("gdal_ptsel", "-q", "-device", device, "-window", 5, "-offsets", src, dst,
                   env={"CPL_DEBUG": "GG"})
        how = [l for l in p.stderr.splitlines() if "stack read" in l]
        return [gg.read(dst, b)[0] for b in (1, 2, 3)], how

    got, how = run(plain, "raw")
    assert how and all("as it lies in its file" in l for l in how), how
    for name, src in lying.items():
        other, how = run(src, name)
        assert how and all("as it lies in its file" in l for l in how), (name, how)
        for b in range(3):
            assert gg.same_bits(got[b], other[b]), f"{name}: band {b + 1} differs"
    for name, src in others.items():
        other, how = run(src, name)
        assert how and all("through RasterIO" in l for l in how), (name, how)
        for b in range(3):
            assert gg.same_bits(got[b], other[b]), f"{name}: band {b + 1} differs from the raw read"
    want, invalid, _ = ref.ptsel(z, 5, slc=False, nodata=ND)
    check_tau(got[0], want, invalid, math.nan, f"tau_max read as it lies on {device}")


@pytest.mark.opencl
def test_several_devices(gg, rng, tmp_path):
    """-device cpu,opencl spreads strips over both devices (a worker thread
    each): the same bits as one device, for one file and for per-band files."""
    z = random_stack(rng)
    srcs = write_stack(gg, tmp_path / "in", z, "files")
    one = ptsel(gg, "cpu", srcs, tmp_path / "one.tif", "-window", 5, "-mask")
    two = ptsel(gg, "cpu,opencl", srcs, tmp_path / "two.tif", "-window", 5, "-mask")
    for band in ("tau_max", "ps_mask"):
        a, b = gg.read(per_band(one, band), 1)[0], gg.read(per_band(two, band), 1)[0]
        assert gg.same_bits(a, b), f"{band}: two devices differ from one"
    solo = ptsel(gg, "cpu", srcs, tmp_path / "solo.tif", "-window", 5)
    duo = ptsel(gg, "cpu,cpu", srcs, tmp_path / "duo.tif", "-window", 5)
    assert gg.same_bits(gg.read(solo, 1)[0], gg.read(duo, 1)[0]), "cpu,cpu differs from cpu"


def test_filter_folder(gg, rng, tmp_path, device):
    """-filter <outdir>: one CFloat32 file per stack band in outdir, unit-bounded
    phasors, tau_max unchanged; a missing folder is refused before any work."""
    z = random_stack(rng)
    srcs = write_stack(gg, tmp_path / "in", z, "files")
    outdir = tmp_path / "filtered"
    outdir.mkdir()
    plain = ptsel(gg, device, srcs, tmp_path / "plain.tif", "-window", 5)
    dst = ptsel(gg, device, srcs, tmp_path / "f.tif", "-window", 5, "-filter", outdir)
    names = sorted(p.name for p in outdir.iterdir())
    assert names == sorted(f"f_filtered_{k}.tif" for k in range(1, z.shape[0] + 1)), names
    assert gg.same_bits(gg.read(per_band(dst, "tau_max"), 1)[0], gg.read(plain, 1)[0])
    f1 = gg.read(outdir / "f_filtered_1.tif", 1)[0]
    assert np.iscomplexobj(f1) and np.nanmax(np.abs(f1)) <= 1.0 + 1e-6
    r = gg.run("gdal_ptsel", "-q", "-device", device, "-filter", tmp_path / "nope", *srcs,
               tmp_path / "g.tif", check=False)
    assert r.returncode == 1 and "does not exist" in r.stderr
    assert not list(tmp_path.glob("g*"))


OPTION_CASES = {
    "window3": (["-window", 3], dict(window=3)),
    "window7-mindist2": (["-window", 7, "-mindist", 2], dict(window=7, mindist=2.0)),
    "window5-mindist1.5": (["-window", 5, "-mindist", 1.5], dict(window=5, mindist=1.5)),
    "default-window11": ([], dict(window=11)),
    "slc-window7-mindist2": (["-slc", "-window", 7, "-mindist", 2], dict(window=7, mindist=2.0, slc=True)),
}


@pytest.mark.parametrize("case", OPTION_CASES)
def test_window_mindist(gg, rng, tmp_path, device, case):
    opts, kw = OPTION_CASES[case]
    z = random_stack(rng)
    srcs = write_stack(gg, tmp_path / "in", z, "multiband")
    out = gg.read(ptsel(gg, device, srcs, tmp_path / "tau.tif", *opts))[0]
    want, invalid, _ = ref.ptsel(z, nodata=ND, **kw)
    err = check_tau(out, want, invalid, math.nan, f"tau_max {case} on {device}")
    gg.record_error(f"ptsel/max-abs-{'slc' if kw.get('slc') else 'ifg'}", device, err)


def test_mindist_boundary():
    """Neighbours exactly at mindist are kept, closer ones skipped."""
    offs = ref.ptsel_offsets(7, 2.0)
    assert (2, 0) in offs and (0, -2) in offs and (1, 1) not in offs and (1, 0) not in offs
    assert len(offs) == 49 - 1 - 8


def test_conj(gg, rng, tmp_path, device):
    """-conj 2,5 on a stack whose bands 2 and 5 have the other orientation
    gives the result of the harmonised stack."""
    z = random_stack(rng)
    flipped = z.copy()
    flipped[[1, 4]] = np.conj(flipped[[1, 4]])
    srcs = write_stack(gg, tmp_path / "flipped", flipped, "files")
    out = gg.read(ptsel(gg, device, srcs, tmp_path / "conj.tif", "-window", 5, "-conj", "2,5"))[0]
    want, invalid, _ = ref.ptsel(z, 5, nodata=ND)
    want_c, invalid_c, _ = ref.ptsel(flipped, 5, conj=(2, 5), nodata=ND)
    assert np.array_equal(invalid, invalid_c) and np.allclose(want[~invalid], want_c[~invalid], atol=1e-12)
    mixed, _, _ = ref.ptsel(flipped, 5, nodata=ND)
    assert np.nanmax(np.abs(mixed - want)) > 0.05, "test data: mixed orientations must change tau"
    err = check_tau(out, want, invalid, math.nan, f"tau_max -conj on {device}")
    gg.record_error("ptsel/max-abs-ifg", device, err)
    harmonised = write_stack(gg, tmp_path / "harmonised", z, "multiband")
    plain = gg.read(ptsel(gg, device, harmonised, tmp_path / "plain.tif", "-window", 5))[0]
    assert gg.same_bits(out, plain), "conjugating bands on input must equal -conj exactly"


def test_offsets_and_mask(gg, rng, tmp_path, device):
    """-offsets alone: one 3-band Float32 file.  -offsets -mask: one file per
    band (<stem>_tau_max, _best_dx, _best_dy, _ps_mask), the mask Byte
    1/0/255 with tau_max >= threshold; the offsets point at a neighbour
    whose tau is tau_max."""
    z = random_stack(rng)
    srcs = write_stack(gg, tmp_path / "in", z, "multiband")
    thr = 0.6
    (tmp_path / "one").mkdir()
    one = ptsel(gg, device, srcs, tmp_path / "one" / "off.tif", "-window", 7, "-offsets")
    assert [p.name for p in one.parent.iterdir()] == ["off.tif"]
    ds = gdal.Open(str(one))
    assert [ds.GetRasterBand(b + 1).GetDescription() for b in range(ds.RasterCount)] == \
        ["tau_max", "best_dx", "best_dy"]
    assert all(ds.GetRasterBand(b + 1).DataType == gdal.GDT_Float32 for b in range(3))
    ds = None

    (tmp_path / "four").mkdir()
    dst = ptsel(gg, device, srcs, tmp_path / "four" / "ps.tif", "-window", 7, "-offsets", "-mask",
                "-threshold", thr)
    names = ["tau_max", "best_dx", "best_dy", "ps_mask"]
    assert sorted(p.name for p in dst.parent.iterdir()) == sorted(per_band(dst, n).name for n in names)
    for b, name in enumerate(names[:3]):
        assert gg.same_bits(gg.read(per_band(dst, name))[0], gg.read(one, b + 1)[0]), name

    want, invalid, arcs = ref.ptsel(z, 7, nodata=ND)
    tau = gg.read(per_band(dst, "tau_max"))[0]
    err = check_tau(tau, want, invalid, math.nan, f"tau_max -offsets -mask on {device}")
    gg.record_error("ptsel/max-abs-ifg", device, err)

    mask, mask_nd, _, mask_dt = gg.read(per_band(dst, "ps_mask"))
    assert mask_dt == "Byte" and mask_nd == 255
    assert (mask[invalid] == 255).all() and set(np.unique(mask[~invalid])) <= {0, 1}
    assert np.array_equal(mask[~invalid] == 1, tau[~invalid] >= np.float32(thr)), \
        "mask != (tau_max >= threshold)"
    sure = ~invalid & (np.abs(want - thr) > TOL)
    assert np.array_equal(mask[sure] == 1, want[sure] >= thr), "mask disagrees with the reference"
    assert 0 < (mask == 1).sum() < (~invalid).sum()

    dx, dx_nd, _, _ = gg.read(per_band(dst, "best_dx"))
    dy = gg.read(per_band(dst, "best_dy"))[0]
    gg.check_nodata_value(dx_nd, math.nan, "best_dx")
    assert np.isnan(dx[invalid]).all() and np.isnan(dy[invalid]).all()
    allowed = set(ref.ptsel_offsets(7))
    for y, x in zip(*np.nonzero(~invalid)):
        off = (int(dx[y, x]), int(dy[y, x]))
        assert off == (dx[y, x], dy[y, x]) and off in allowed, f"({y}, {x}): offset {off} not an arc"
        t = arcs[off][y, x]
        assert not np.isnan(t) and abs(t - want[y, x]) <= TOL, (
            f"({y}, {x}): best offset {off} has reference tau {t}, tau_max is {want[y, x]}")


def test_connection_string(gg, rng, tmp_path, device):
    """GG:ptsel:window=5:a.tif,b.tif,c.tif is bit-identical to the utility,
    the extra bands too."""
    z = random_stack(rng, n=3)
    srcs = [gg.write(tmp_path / f"{n}.tif", z[i], nodata=ND) for i, n in enumerate("abc")]
    util = ptsel(gg, device, srcs, tmp_path / "util.tif", "-window", 5)
    conn = f"GG:ptsel:window=5:{srcs[0]},{srcs[1]},{srcs[2]}"
    gg.run("gdal_translate", "-q", "--config", "GG_DEVICE", device, conn, tmp_path / "gg.tif")
    a, a_nd, a_gt, a_dt = gg.read(util)
    b, b_nd, b_gt, b_dt = gg.read(tmp_path / "gg.tif")
    assert a_dt == b_dt == "Float32" and gg.same_bits(a, b) and np.array_equal(a_gt, b_gt)
    assert math.isnan(a_nd) and math.isnan(b_nd)

    dst = ptsel(gg, device, srcs, tmp_path / "all.tif", "-window", 5, "-offsets", "-mask")
    gdal.SetConfigOption("GG_DEVICE", device)
    try:
        ds = gdal.Open(f"GG:ptsel:window=5:offsets=yes:mask=yes:{srcs[0]},{srcs[1]},{srcs[2]}")
        got = {ds.GetRasterBand(i + 1).GetDescription(): ds.GetRasterBand(i + 1).ReadAsArray()
               for i in range(ds.RasterCount)}
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)
    assert list(got) == ["tau_max", "best_dx", "best_dy", "ps_mask"]
    for name, arr in got.items():
        assert gg.same_bits(arr, gg.read(per_band(dst, name))[0]), f"GG:ptsel {name} differs on {device}"
    assert gg.same_bits(got["tau_max"], a)


def test_ggvrt(gg, rng, tmp_path):
    """-of GGVRT -mask: one .ggvrt with every band (no per-band files)."""
    z = random_stack(rng)
    srcs = write_stack(gg, tmp_path / "in", z, "mixed")
    vrt = tmp_path / "ps.ggvrt"
    gg.run("gdal_ptsel", "-q", "-of", "GGVRT", "-window", 5, "-mask", *srcs, vrt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "ps.ggvrt"]
    assert vrt.read_text().count("<Input") == 3
    dst = ptsel(gg, "cpu", srcs, tmp_path / "ps.tif", "-window", 5, "-mask")
    gdal.SetConfigOption("GG_DEVICE", "cpu")
    try:
        ds = gdal.Open(str(vrt))
        assert ds.RasterCount == 2
        for b, name in enumerate(["tau_max", "ps_mask"]):
            assert gg.same_bits(ds.GetRasterBand(b + 1).ReadAsArray(), gg.read(per_band(dst, name))[0]), name
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)


@pytest.mark.parametrize("layout", ["multiband", "files"])
def test_vrt_output(gg, rng, tmp_path, layout):
    """-of VRT keeps tau_max and the Byte ps_mask in one file."""
    z = random_stack(rng)
    srcs = write_stack(gg, tmp_path / "in", z, layout)
    dst = ptsel(gg, "cpu", srcs, tmp_path / "ps.tif", "-window", 5, "-mask")
    vrt = ptsel(gg, "cpu", srcs, tmp_path / "ps.vrt", "-window", 5, "-mask", "-of", "VRT")
    assert not per_band(vrt, "ps_mask").exists()
    gdal.SetConfigOption("GG_DEVICE", "cpu")
    try:
        ds = gdal.Open(str(vrt))
        got = [ds.GetRasterBand(b + 1).ReadAsArray() for b in range(2)]
        ds = None
    finally:
        gdal.SetConfigOption("GG_DEVICE", None)
    for arr, name in zip(got, ["tau_max", "ps_mask"]):
        assert gg.same_bits(arr, gg.read(per_band(dst, name))[0]), f"VRT band {name}"


# --------------------------------------------------------- real psps stack

@pytest.fixture(scope="module")
def psps(gg, tmp_path_factory):
    """The psps Houston stack (92 interferograms, 200x200) as one multi-band
    GeoTIFF: bands in chronological order of the non-reference date, the
    DATE_20180115 group conjugated with -conj.  Returns run(device, *opts)
    -> (tau_max, ps_mask), computed once per device and options."""
    igrams = PSPS / "igrams"
    if not igrams.is_dir():
        pytest.skip(f"real data folder {igrams} absent")

    def other_date(name):
        a, b = name[:-4].split("_")
        assert PSPS_REF_DATE in (a, b), name
        return b if a == PSPS_REF_DATE else a

    names = sorted((p.name for p in igrams.glob("*.int")), key=other_date)
    assert len(names) == 92
    conj = [i + 1 for i, n in enumerate(names) if n.endswith(f"_{PSPS_REF_DATE}.int")]
    assert len(conj) == 29
    stack = np.stack([np.fromfile(igrams / n, dtype="<c8").reshape(200, 200) for n in names])
    assert np.isfinite(stack.view(np.float32)).all() and (stack != 0).all()
    folder = tmp_path_factory.mktemp("psps")
    src = gg.write(folder / "psps.tif", list(stack))
    done = {}

    def run(device, *opts, crop=None):
        key = (device, opts, crop)
        if key not in done:
            s = src
            if crop is not None:
                s = folder / f"crop{crop}.tif"
                if not s.exists():
                    gg.write(s, list(stack[:, :crop, :crop]))
            dst = folder / f"ps_{len(done)}.tif"
            gg.run("gdal_ptsel", "-q", "-device", device, *opts, "-conj", ",".join(map(str, conj)),
                   "-mask", s, dst)
            done[key] = (gg.read(per_band(dst, "tau_max"))[0], gg.read(per_band(dst, "ps_mask"))[0])
        return done[key]

    run.stack, run.conj = stack, conj
    return run


def test_psps_regression(gg, psps, device):
    """Window 11, threshold 0.71: 248 of the 40000 pixels (0.62 %)."""
    tau, mask = psps(device, "-window", 11)
    assert tau.shape == (200, 200) and np.isfinite(tau).all()
    assert int((tau >= np.float32(0.71)).sum()) == 248
    assert int((mask == 1).sum()) == 248 and int((mask == 0).sum()) == 40000 - 248
    assert (tau >= np.float32(0.71)).mean() == 248 / 40000 == 0.0062


@pytest.mark.opencl
def test_psps_devices_agree(gg, psps):
    cpu, _ = psps("cpu", "-window", 11)
    ocl, _ = psps("opencl", "-window", 11)
    err = float(np.max(np.abs(cpu.astype(np.float64) - ocl)))
    gg.record_error("ptsel/psps-cpu-vs-opencl", "opencl", err)
    assert err <= TOL, f"tau_max cpu vs opencl on psps: {err:.3e}"


def test_psps_crop_reference(gg, psps, device):
    """A 24x24 crop of the real stack (n = 92) against the O(n^2) reference."""
    tau, _ = psps(device, "-window", 5, crop=24)
    want, invalid, _ = ref.ptsel(psps.stack[:, :24, :24], 5, conj=psps.conj)
    assert not invalid.any()
    err = check_tau(tau, want, invalid, math.nan, f"psps crop on {device}")
    gg.record_error("ptsel/max-abs-psps", device, err)


# ------------------------------------------------------------------ bad input

def assert_refused(gg, argv, keywords, indir, outdir):
    """Runs argv, which must fail: exit status 1, exactly one ERROR line that
    holds every keyword ("a|b": either), no file in outdir (no output, no
    per-band file, no temporary), the inputs in indir untouched."""
    before = gg.snapshot(indir)
    p = gg.run(*argv, check=False)
    assert p.returncode == 1, (f"exit code {p.returncode} (expected 1)\nstdout:\n{p.stdout}\n"
                               f"stderr:\n{p.stderr}")
    errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
    assert len(errors) == 1, f"expected one ERROR line:\n{p.stderr}"

    def names(line, keyword):
        return any(k.lower() in line.lower() for k in keyword.split("|"))
    assert all(names(errors[0], k) for k in keywords), (
        f"the ERROR line does not name the problem ({keywords}):\n{p.stderr}")
    assert "Traceback" not in p.stderr and "Segmentation" not in p.stderr
    assert sorted(x.name for x in outdir.iterdir()) == [], "output (or temporary) file left behind"
    assert gg.snapshot(indir) == before, "an input was modified or a file was added next to it"


# id -> (argv with placeholders {<input stem>}, {nosuch} and {out}; keywords the ERROR line
# must contain)
BAD = {
    "size-mismatch": (["gdal_ptsel", "{a}", "{small}", "{c}", "{out}"], ["small.tif", "size"]),
    "size-mismatch-mask": (["gdal_ptsel", "-mask", "-offsets", "{a}", "{small}", "{out}"],
                           ["small.tif", "size"]),
    "real-and-complex": (["gdal_ptsel", "{a}", "{real}", "{out}"], ["real.tif", "complex"]),
    "real-inputs": (["gdal_ptsel", "{real}", "{real2}", "{out}"], ["complex"]),
    "one-epoch": (["gdal_ptsel", "{a}", "{out}"], ["2 epochs", "got 1"]),
    "one-epoch-mask": (["gdal_ptsel", "-mask", "{a}", "{out}"], ["2 epochs"]),
    "window-even": (["gdal_ptsel", "-window", 10, "{a}", "{b}", "{out}"], ["window", "10"]),
    "window-oversized": (["gdal_ptsel", "-window", 21, "{a}", "{b}", "{out}"], ["window 21", "larger"]),
    "window-oversized-mask": (["gdal_ptsel", "-mask", "-window", 25, "{a}", "{b}", "{out}"],
                              ["window 25", "larger"]),
    "missing-member": (["gdal_ptsel", "{a}", "{nosuch}", "{c}", "{out}"], ["nosuch.tif"]),
    "missing-member-mask": (["gdal_ptsel", "-mask", "{a}", "{nosuch}", "{out}"], ["nosuch.tif"]),
    "not-a-raster": (["gdal_ptsel", "{a}", "{notraster}", "{out}"], ["notraster.tif"]),
    "conj-out-of-range": (["gdal_ptsel", "-conj", "2,4", "{a}", "{b}", "{c}", "{out}"], ["conj", "4"]),
    "conj-syntax": (["gdal_ptsel", "-conj", "2,,3", "{a}", "{b}", "{out}"], ["conj"]),
    "mindist-excludes-all": (["gdal_ptsel", "-window", 3, "-mindist", 2, "{a}", "{b}", "{out}"], ["mindist"]),
    "threshold-zero": (["gdal_ptsel", "-threshold", 0, "{a}", "{b}", "{out}"], ["threshold"]),
    "threshold-above-one": (["gdal_ptsel", "-threshold", 1.5, "{a}", "{b}", "{out}"], ["threshold"]),
    "gg-size-mismatch": (["gdal_translate", "GG:ptsel:window=5:{a},{small}", "{out}"], ["small.tif", "size"]),
    "gg-missing-member": (["gdal_translate", "GG:ptsel:window=5:{a},{nosuch}", "{out}"], ["nosuch.tif"]),
    "gg-one-epoch": (["gdal_translate", "GG:ptsel:window=5:{a}", "{out}"], ["2 epochs"]),
    "gg-window-even": (["gdal_translate", "GG:ptsel:window=10:{a},{b}", "{out}"], ["window"]),
}


@pytest.fixture
def bad_folders(gg, make, rng, tmp_path):
    """Inputs (20x23 complex a, b, c; a 19x23 small.tif; real rasters; a
    text file named .tif) and an empty output folder."""
    indir, outdir = tmp_path / "in", tmp_path / "out"
    indir.mkdir()
    outdir.mkdir()
    for n in ("a", "b", "c"):
        gg.write(indir / f"{n}.tif", make.complex(rng, 20, 23), nodata=ND)
    gg.write(indir / "small.tif", make.complex(rng, 19, 23))
    gg.write(indir / "real.tif", make.real(rng, 20, 23))
    gg.write(indir / "real2.tif", make.real(rng, 20, 23))
    (indir / "notraster.tif").write_text("this is not a raster\n")
    return indir, outdir


def refuse(gg, folders, argv, keywords):
    """A BAD case (placeholders {<input stem>}, {nosuch}, {out}) on the
    bad_folders fixture must be refused (assert_refused)."""
    indir, outdir = folders
    names = {p.stem: p for p in indir.iterdir()}
    names.update(nosuch=indir / "nosuch.tif", out=outdir / "out.tif")
    assert_refused(gg, [str(a).format(**names) for a in argv], keywords, indir, outdir)


@pytest.mark.parametrize("case", BAD)
def test_bad_input(gg, bad_folders, case):
    refuse(gg, bad_folders, *BAD[case])
