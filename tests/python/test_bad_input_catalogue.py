"""The bad-input catalogue shared by every utility (docs/reliability.md):
empty and non-raster input files, NaN-, Inf- and nodata-filled inputs, a
destination folder that does not exist, one that cannot be written to
(read-only) and one that fills up (a file-size limit, as a full disk), and
absurd option values of the utilities added after the first five.  Each
case has one expected outcome: a clean error (exit 1, an ERROR line naming
the problem, nothing left in the output folder, the inputs untouched) or,
for invalid-filled inputs, a successful run whose outputs are entirely
invalid (nodata or NaN).  Utility-specific cases named in each utility's
issue are in its own test file (test_xcorr, test_coreg, test_ortho,
test_fmcw, test_quicklook)."""
import math
import os
import resource
import shutil
import signal
import subprocess

import numpy as np
import pytest
from osgeo import gdal

import reliability_data as rd

# utility -> (program, argv with {r} (real), {c1} {c2} (a correlated complex
# pair), {s} (complex stack), {o} (RPC scene), {nc} (FMCW raw file),
# {m} {a} (GMTSAR PRMs), {out}; the output is appended unless named)
UTILITIES = {
    "gdal_multilook": ("gdal_multilook", ["-looks", 2, 2, "{r}"]),
    "gdal_rotate": ("gdal_rotate", ["-angle", 30, "{r}"]),
    "gdal_radnorm": ("gdal_radnorm", ["-coef", 35, "{r}"]),
    "gdal_insar": ("gdal_insar", ["{c1}", "{c2}"]),
    "gdal_ptsel": ("gdal_ptsel", ["-window", 5, "{s}"]),
    "gdal_xcorr": ("gdal_xcorr", [*rd.XCORR_OPTS, "{c1}", "{c2}"]),
    "gdal_xcorr-gmtsar": ("gdal_xcorr", ["-mode", "gmtsar", "{m}", "{a}", *rd.GMTSAR_OPTS, "-o", "{out}"]),
    "gdal_coreg": ("gdal_coreg", [*rd.XCORR_OPTS, "{c1}", "{c2}"]),
    "gdal_ortho": ("gdal_ortho", ["{o}"]),
    "gdal_fmcw": ("gdal_fmcw", ["{nc}"]),
    # Metek MRR-2 raw spectra (the real file), as GeoTIFF and as CfRadial
    "gdal_fmcw-mrr2": ("gdal_fmcw", ["-average", 60, "{mrr}"]),
    "gdal_fmcw-cfradial": ("gdal_fmcw", ["-of", "CfRadial", "{mrr}"]),
    "gdal_quicklook": ("gdal_quicklook", ["{r}"]),
    # the GG driver inside GDAL's own gdal_translate (GG_DEVICE picks the device)
    "gg_driver": ("gdal_translate", ["{gg}"]),
}
# where the output goes is the program's business: gdal_translate is GDAL's
# (it writes in place, with no temporary), the others use gg_app's writer
DEST = [u for u in UTILITIES if u != "gg_driver"]
OUT_NAME = {"gdal_xcorr-gmtsar": "freq.dat", "gdal_quicklook": "o.png", "gdal_fmcw-cfradial": "o.nc"}
# the inputs each utility reads (replaced by a bad file in test_not_a_raster)
READS = {"gdal_xcorr-gmtsar": ("m",), "gdal_ortho": ("o",), "gdal_fmcw": ("nc",),
         "gdal_fmcw-mrr2": ("mrr",), "gdal_fmcw-cfradial": ("mrr",)}
RASTER_INPUTS = ("r", "c1", "c2", "s", "o")
# invalid-filled rasters: utilities whose inputs are rasters of values
# (not gdal_fmcw's int16 counts or GMTSAR's int16 files)
FILLED = [u for u in UTILITIES if not u.startswith("gdal_fmcw") and u != "gdal_xcorr-gmtsar"]
# invalid-filled input: every utility succeeds with all-invalid outputs,
# except these, which need valid pixels to compute anything at all
FILL_ERRORS = {"gdal_radnorm": "no valid pixels", "gdal_coreg": "window",
               "gdal_quicklook": "no valid"}
ND = -9999.0


def _write(path, arrays, dtype, nodata=None, rpc=None):
    H, W = arrays[0].shape
    ds = gdal.GetDriverByName("GTiff").Create(str(path), W, H, len(arrays), dtype)
    if rpc:
        ds.SetMetadata(rpc, "RPC")
    for i, a in enumerate(arrays):
        b = ds.GetRasterBand(i + 1)
        if nodata is not None:
            b.SetNoDataValue(nodata)
        b.WriteArray(a)
    ds = None


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from conftest import GG, random_complex, random_real
    rng = np.random.default_rng(3)
    d = tmp_path_factory.mktemp("catalogue_in")
    H, W = 48, 56
    s1, s2 = rd.speckle_pair(rng, H, W)
    good = {
        "r": ([random_real(rng, H, W, nan=0)], gdal.GDT_Float32, None),
        "c1": ([s1.astype(np.complex64)], gdal.GDT_CFloat32, None),
        "c2": ([s2.astype(np.complex64)], gdal.GDT_CFloat32, None),
        "s": ([random_complex(rng, H, W, nan=0) for _ in range(4)], gdal.GDT_CFloat32, None),
        "o": ([rng.uniform(100, 1000, (40, 48)).astype(np.float32)], gdal.GDT_Float32,
              rd.rpc_metadata(48, 40)),
    }
    for k, (arrs, dt, rpc) in good.items():
        _write(d / f"{k}.tif", arrs, dt, rpc=rpc)
        _write(d / f"nan_{k}.tif", [np.full_like(a, np.nan) for a in arrs], dt, rpc=rpc)
        _write(d / f"inf_{k}.tif", [np.full_like(a, np.inf) for a in arrs], dt, rpc=rpc)
        _write(d / f"nodata_{k}.tif", [np.full_like(a, ND) for a in arrs], dt, nodata=ND, rpc=rpc)
    _write(d / "small.tif", [s1[:40].astype(np.complex64)], gdal.GDT_CFloat32)  # 40 rows, not 48
    rd.write_gmtsar_pair(d, rng)
    GG.run("gdal_fmcw", "-simulate", *rd.FMCW_SMALL, "-q", d / "nc.nc")
    shutil.copy(GG.data / "mrr2_spectra" / "0308.raw.gz", d / "mrr.raw.gz")
    (d / "empty.tif").write_bytes(b"")
    (d / "text.tif").write_text("this is not a raster\n")
    return d


def _names(d, sub=None):
    names = {k: str(d / f"{k}.tif") for k in RASTER_INPUTS}
    names.update(m=str(d / "master.PRM"), a=str(d / "aligned.PRM"), nc=str(d / "nc.nc"),
                 small=str(d / "small.tif"), mrr=str(d / "mrr.raw.gz"))
    names.update(sub or {})
    names.setdefault("gg", f"GG:multilook:looks=2x2:{names['r']}")  # gg_driver's source
    return names


def _argv(utility, d, out, sub=None):
    prog, args = UTILITIES[utility]
    names = {**_names(d, sub), "out": str(out)}
    argv = [str(a).format(**names) for a in args]
    if "{out}" not in args:
        argv.append(str(out))
    dev = {"gdal_quicklook": [],
           "gdal_translate": ["--config", "GG_DEVICE", "cpu"]}.get(prog, ["-device", "cpu"])
    mode = argv[:2] if argv[:2] == ["-mode", "gmtsar"] else []  # must come first
    return [prog] + mode + ["-q"] + dev + argv[len(mode):]


def _out(utility, folder):
    return folder / OUT_NAME.get(utility, "o.tif")


def _clean_failure(gg, p, outdir, words, before, d):
    assert p.returncode == 1, f"exit {p.returncode}\n{p.stderr}"
    errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
    assert errors, f"no ERROR line:\n{p.stderr}"
    assert any(all(any(alt.lower() in l.lower() for alt in w.split("|")) for w in words)
               for l in errors), f"no ERROR line names {words}:\n{p.stderr}"
    assert "Traceback" not in p.stderr
    if outdir is not None and outdir.exists():
        assert list(outdir.iterdir()) == [], "output or temporary left behind"
    assert gg.snapshot(d) == before, "an input was modified"


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize("kind", ["empty", "text"])
def test_not_a_raster(gg, inputs, tmp_path, utility, kind):
    out = tmp_path / "out"
    out.mkdir()
    bad = str(inputs / f"{kind}.tif")
    before = gg.snapshot(inputs)
    keys = READS.get(utility, ("r", "c1", "s"))
    p = gg.run(*_argv(utility, inputs, _out(utility, out), {k: bad for k in keys}), check=False)
    _clean_failure(gg, p, out, [f"{kind}.tif"], before, inputs)


def _all_invalid(path, init=None):
    """Every pixel of every band is NaN, +-Inf or the band's nodata (or
    init: gdal_ortho's, as gdalwarp's, value of output pixels no source
    pixel maps to when the source declares no nodata)."""
    if path.suffix == ".png":
        return None
    ds = gdal.Open(str(path))
    bad = []
    for b in range(1, ds.RasterCount + 1):
        band = ds.GetRasterBand(b)
        a = band.ReadAsArray()
        nd = band.GetNoDataValue()
        vals = a.real if np.iscomplexobj(a) else a
        invalid = ~np.isfinite(vals) | (vals == nd if nd is not None and not math.isnan(nd) else False)
        if init is not None:
            invalid |= vals == init
        if not invalid.all():
            bad.append(f"band {b} ({band.GetDescription()}): {(~invalid).sum()} valid pixels")
    ds = None
    return bad


@pytest.mark.parametrize("utility", FILLED)
@pytest.mark.parametrize("fill", ["nan", "inf", "nodata"])
def test_invalid_filled(gg, inputs, tmp_path, utility, fill):
    """An input whose every sample is NaN, +Inf, or its band's nodata value
    gives all-invalid outputs (never numbers made up from nothing), or a
    clean error from the utilities that need valid pixels."""
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    sub = {k: str(inputs / f"{fill}_{k}.tif") for k in RASTER_INPUTS}
    p = gg.run(*_argv(utility, inputs, _out(utility, out), sub), check=False)
    if utility in FILL_ERRORS:
        _clean_failure(gg, p, out, [FILL_ERRORS[utility]], before, inputs)
        return
    assert p.returncode == 0, p.stderr
    files = sorted(out.iterdir())
    assert files, "no output"
    for f in files:
        bad = _all_invalid(f, 0.0 if utility == "gdal_ortho" and fill != "nodata" else None)
        assert not bad, f"{f.name} from {fill}-filled input: {bad}"
    assert gg.snapshot(inputs) == before


@pytest.mark.parametrize("utility", DEST)
def test_missing_destination_folder(gg, inputs, tmp_path, utility):
    before = gg.snapshot(inputs)
    missing = tmp_path / "no" / "such" / "folder"
    p = gg.run(*_argv(utility, inputs, _out(utility, missing)), check=False)
    _clean_failure(gg, p, missing, [], before, inputs)
    assert not (tmp_path / "no").exists()


def _read_only_folder(tmp_path):
    """A folder this process cannot create files in: a chmod 555 folder, or
    for root (whom permissions do not stop) a folder of the read-only sysfs."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    for cand in ("/sys/kernel", "/proc/sys"):
        probe = os.path.join(cand, f".gg_probe{os.getpid()}")
        try:
            open(probe, "w").close()
            os.unlink(probe)
        except OSError:
            return __import__("pathlib").Path(cand)
    pytest.skip("no read-only folder available to root here")


@pytest.mark.parametrize("utility", DEST)
def test_read_only_destination(gg, inputs, tmp_path, utility):
    ro = _read_only_folder(tmp_path)
    before = gg.snapshot(inputs)
    listing = sorted(os.listdir(ro))
    p = gg.run(*_argv(utility, inputs, _out(utility, ro)), check=False)
    _clean_failure(gg, p, None, [], before, inputs)
    assert sorted(os.listdir(ro)) == listing, "something was created in the read-only folder"


def _limit_file_size():
    # a file-size limit makes writes fail with EFBIG, as a full disk does
    # (ENOSPC); ignore SIGXFSZ so the write fails instead of killing us
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


@pytest.mark.parametrize("utility", DEST)
def test_full_destination(gg, inputs, tmp_path, utility):
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    argv = _argv(utility, inputs, _out(utility, out))
    exe = shutil.which(argv[0], path=str(gg.build / "bin"))
    p = subprocess.run([exe] + argv[1:], capture_output=True, text=True,
                       preexec_fn=_limit_file_size, timeout=120)
    _clean_failure(gg, p, out, [], before, inputs)


# absurd options: id -> (utility, options replacing / added to the
# defaults, keywords one ERROR line must all contain; "a|b": either).  More
# cases of the first five utilities are in test_bad_input.py.
ABSURD = {
    "multilook-looks-negative": ("gdal_multilook", ["-looks", -2, 2], ["-looks"]),
    "multilook-looks-huge": ("gdal_multilook", ["-looks", 2147483647, 2147483647], ["looks", "larger"]),
    "multilook-looks-overflow": ("gdal_multilook", ["-looks", 2147483648, 2], ["-looks"]),
    "rotate-angle-inf": ("gdal_rotate", ["-angle", "inf"], ["angle"]),
    "rotate-outsize-zero": ("gdal_rotate", ["-outsize", 0, 0], ["-outsize"]),
    "rotate-outsize-negative": ("gdal_rotate", ["-outsize", -5, 10], ["-outsize"]),
    "rotate-outsize-huge": ("gdal_rotate", ["-outsize", 2000000000, 2000000000], ["outsize"]),
    "radnorm-coef-nan": ("gdal_radnorm", ["-coef", "nan"], ["coef"]),
    "radnorm-coef-negative": ("gdal_radnorm", ["-coef", -1e308], ["coef"]),
    "radnorm-levels-negative": ("gdal_radnorm", ["-levels", -4], ["levels"]),
    "insar-window-zero": ("gdal_insar", ["-window", 0, 0], ["-window"]),
    "insar-window-negative": ("gdal_insar", ["-window", -3, 3], ["-window"]),
    "insar-looks-zero": ("gdal_insar", ["-looks", 0, 1], ["-looks"]),
    "insar-looks-huge": ("gdal_insar", ["-looks", 1000, 1000], ["looks", "larger"]),
    "ptsel-window-zero": ("gdal_ptsel", ["-window", 0], ["window"]),
    "ptsel-window-negative": ("gdal_ptsel", ["-window", -5], ["window"]),
    "ptsel-window-huge": ("gdal_ptsel", ["-window", 2147483647], ["window", "larger"]),
    "ptsel-mindist-negative": ("gdal_ptsel", ["-mindist", -1], ["mindist"]),
    "xcorr-window-zero": ("gdal_xcorr", ["-window", 0, 0], ["window"]),
    "xcorr-window-negative": ("gdal_xcorr", ["-window", -16, 16], ["window"]),
    "xcorr-search-huge": ("gdal_xcorr", ["-search", 100000, 100000], ["larger than|search"]),
    "xcorr-ovs-zero": ("gdal_xcorr", ["-ovs", 0], ["ovs"]),
    "xcorr-minvalid-nan": ("gdal_xcorr", ["-minvalid", "nan"], ["minvalid"]),
    # int overflow of the window arithmetic (found by auditing for UBSan,
    # tests/fuzz/corpus/fuzz_op_options/ubsan_xcorr_*)
    "xcorr-search-overflow": ("gdal_xcorr", ["-search", 2000000000, 2000000000], ["search"]),
    "xcorr-skip-overflow": ("gdal_xcorr", ["-skip", 2000000000, 2000000000, "-count", 2, 2], ["skip"]),
    "gmtsar-nx-zero": ("gdal_xcorr-gmtsar", ["-nx", 0], ["-nx"]),
    "gmtsar-ysearch-abc": ("gdal_xcorr-gmtsar", ["-ysearch", "abc"], ["-ysearch"]),
    "gmtsar-xsearch-huge": ("gdal_xcorr-gmtsar", ["-xsearch", 65536], ["fit|larger"]),
    "coreg-order-4": ("gdal_coreg", ["-order", 4], ["order"]),
    "coreg-kcut-zero": ("gdal_coreg", ["-kcut", 0], ["kcut"]),
    "coreg-snr-nan": ("gdal_coreg", ["-snr", "nan"], ["snr"]),
    "coreg-window-zero": ("gdal_coreg", ["-window", 0, 0], ["window"]),
    "coreg-interp-unknown": ("gdal_coreg", ["-interp", "lanczos"], ["interp|lanczos"]),
    "ortho-tr-zero": ("gdal_ortho", ["-tr", 0, 0], ["-tr"]),
    "ortho-ts-negative": ("gdal_ortho", ["-ts", -5, 10], ["-ts"]),
    "ortho-ts-huge": ("gdal_ortho", ["-ts", 2000000000, 2000000000], ["too large"]),
    "ortho-ts-not-a-number": ("gdal_ortho", ["-ts", "640px", 480], ["-ts", "not a number"]),
    "ortho-ts-fraction": ("gdal_ortho", ["-ts", 640.5, 480], ["-ts", "whole numbers"]),
    # grids past 1e9 pixels a side (found by fuzz_rpc as an int overflow)
    "ortho-tr-tiny": ("gdal_ortho", ["-tr", 1e-12, 1e-12], ["too large"]),
    "ortho-te-huge": ("gdal_ortho", ["-te", -1e300, -1e300, 1e300, 1e300], ["too large"]),
    "ortho-te-inverted": ("gdal_ortho", ["-te", 10, 10, 0, 0], ["-te"]),
    "ortho-grid-step-zero": ("gdal_ortho", ["-grid_step", 0], ["-grid_step"]),
    # NaN passed the range check into an int cast (fuzz_app_options/ubsan_ortho_grid_step_nan)
    "ortho-grid-step-nan": ("gdal_ortho", ["-grid_step", "nan"], ["-grid_step"]),
    "ortho-r-unknown": ("gdal_ortho", ["-r", "lanczos"], ["lanczos"]),
    "ortho-t-srs-nonsense": ("gdal_ortho", ["-t_srs", "EPSG:nonsense"], ["t_srs"]),
    "fmcw-grid-zero": ("gdal_fmcw", ["-grid", 0], ["-grid"]),
    "fmcw-grid-negative": ("gdal_fmcw", ["-grid", -25], ["-grid"]),
    "fmcw-max-range-without-grid": ("gdal_fmcw", ["-max_range", 5000], ["-max_range"]),
    "fmcw-products-unknown": ("gdal_fmcw", ["-products", "DBZ,XYZ"], ["XYZ"]),
    "quicklook-size-zero": ("gdal_quicklook", ["-size", 0], ["size"]),
    "quicklook-kind-unknown": ("gdal_quicklook", ["-kind", "nonsense"], ["kind|nonsense"]),
    "quicklook-band-too-large": ("gdal_quicklook", ["-b", 9], ["band|-b"]),
}


@pytest.mark.parametrize("case", ABSURD)
def test_absurd_option(gg, inputs, tmp_path, case):
    utility, opts, words = ABSURD[case]
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    argv = _argv(utility, inputs, _out(utility, out))
    # the options go right after the program's own -q/-device: later flags
    # of the same name (the defaults) are replaced by removing them first
    prog_opts = argv[1:]
    flag = str(opts[0])
    if flag in prog_opts:
        i = prog_opts.index(flag)
        n = len(opts)
        del prog_opts[i:i + n]
    argv = [argv[0]] + [str(o) for o in opts] + prog_opts
    if utility == "gdal_xcorr-gmtsar":  # -mode gmtsar must come first
        argv.remove("-mode")
        argv.remove("gmtsar")
        argv[1:1] = ["-mode", "gmtsar"]
    p = gg.run(*argv, check=False)
    _clean_failure(gg, p, out, words, before, inputs)


# inputs that differ in size: id -> (utility, inputs replaced, keywords)
# (gdal_xcorr -mode gmtsar takes pairs of different sizes as GMTSAR does:
# tests/python/test_xcorr.py)
MISMATCHED = {
    "gdal_insar": ("gdal_insar", {"c2": "{small}"}, ["small.tif", "size"]),
    "gdal_ptsel": ("gdal_ptsel", {"s": "{c1}", "extra": "{small}"}, ["small.tif", "size"]),
    "gdal_xcorr": ("gdal_xcorr", {"c2": "{small}"}, ["small.tif", "size"]),
    "gdal_coreg": ("gdal_coreg", {"c2": "{small}"}, ["size", "56x40"]),
    "gg_driver": ("gg_driver", {"gg": "GG:coherence:window=3x3:products=coherence:{c1},{small}"},
                  ["small.tif", "size"]),
}
# a real (detected) raster where complex SLCs are required
WRONG_TYPE = {
    "gdal_insar": ("gdal_insar", {"c1": "{r}", "c2": "{r}"}, ["complex"]),
    "gdal_ptsel": ("gdal_ptsel", {"s": "{r}", "extra": "{r}"}, ["complex"]),
    "gdal_xcorr": ("gdal_xcorr", {"c2": "{r}"}, ["complex"]),
    "gdal_coreg": ("gdal_coreg", {"c1": "{r}"}, ["r.tif", "complex"]),
    "gg_driver": ("gg_driver", {"gg": "GG:coherence:window=3x3:products=coherence:{r},{r}"}, ["complex"]),
}


def _substitute(inputs, utility, sub):
    """sub's values name other inputs ({small}); "extra" is one more
    operand before the output (a second member of a gdal_ptsel stack)."""
    names = _names(inputs)
    sub = {k: v.format(**names) for k, v in sub.items()}
    return sub, sub.pop("extra", None)


@pytest.mark.parametrize("case,table", [(c, "mismatched") for c in MISMATCHED] +
                         [(c, "wrong_type") for c in WRONG_TYPE])
def test_mismatched_or_wrong_type(gg, inputs, tmp_path, case, table):
    """Inputs of different sizes, or a real raster where complex SLCs are
    needed: one ERROR line naming the problem (and the input, where the
    message can), nothing written."""
    utility, sub, words = (MISMATCHED if table == "mismatched" else WRONG_TYPE)[case]
    sub, extra = _substitute(inputs, utility, sub)
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    argv = _argv(utility, inputs, _out(utility, out), sub)
    if extra:
        argv.insert(-1, extra)
    p = gg.run(*argv, check=False)
    _clean_failure(gg, p, out, words, before, inputs)


def test_insar_huge_window_is_the_whole_image(gg, inputs, tmp_path):
    """A coherence window far larger than the image (2^31 - 1 samples) is
    clipped to the raster (docs/gdal_insar.md), without overflow: every
    pixel's coherence is the whole image's, computed here in float64."""
    a = gdal.Open(str(inputs / "c1.tif")).ReadAsArray().astype(np.complex128)
    b = a + 0.6 * gdal.Open(str(inputs / "c2.tif")).ReadAsArray()  # partly coherent with a
    _write(tmp_path / "b.tif", [b.astype(np.complex64)], gdal.GDT_CFloat32)
    b = b.astype(np.complex64).astype(np.complex128)
    argv = _argv("gdal_insar", inputs, tmp_path / "o.tif", {"c2": str(tmp_path / "b.tif")})
    argv[1:1] = ["-window", "2147483647", "2147483647"]
    p = gg.run(*argv, check=False)
    assert p.returncode == 0, p.stderr
    ref = abs((a * b.conj()).sum()) / math.sqrt((abs(a) ** 2).sum() * (abs(b) ** 2).sum())
    coh = gdal.Open(str(tmp_path / "o_coherence.tif")).ReadAsArray()
    assert coh.shape == a.shape and 0.3 < ref < 0.99
    np.testing.assert_allclose(coh, ref, rtol=1e-5)


# finite inputs whose product is past the output type's range (issue 36):
# ops treat infinite inputs as invalid, so an infinite output is an overflow
OVERFLOW = {
    "multilook-real-3.4e38": ("gdal_multilook", np.full((32, 32), 3.4e38, np.float32),
                              ["-looks", "2", "2"]),
    "multilook-intensity-1e20": ("gdal_multilook", np.full((32, 32), 1e20 + 1e20j, np.complex64),
                                 ["-looks", "2", "2"]),
    "insar-1e20": ("gdal_insar", np.full((32, 32), 1e20 + 1e20j, np.complex64), ["-window", "3", "3"]),
}


@pytest.mark.parametrize("case", list(OVERFLOW))
def test_overflow_to_inf_is_an_error(gg, tmp_path, case):
    """exit 1, one ERROR line saying the product overflows its type (it
    exited 0 with a raster of Inf), no output."""
    utility, array, opts = OVERFLOW[case]
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    _write(src / "big.tif", [array],
           gdal.GDT_CFloat32 if np.iscomplexobj(array) else gdal.GDT_Float32)
    before = gg.snapshot(src)
    srcs = [src / "big.tif"] * (2 if utility == "gdal_insar" else 1)
    p = gg.run(utility, "-q", "-device", "cpu", *opts, *srcs, out / "o.tif", check=False)
    _clean_failure(gg, p, out, ["overflows", "o.tif"], before, src)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


# work estimated before any heavy set-up (issue 36, gg_work_limit.h): a
# product or grid whose reads and writes pass GG_WORK_LIMIT (256 GiB by
# default) stops at once with one line, instead of starting hours of work
def _huge_vrt(folder, size=1000000):
    _write(folder / "s.tif", [np.ones((16, 16), np.float32)], gdal.GDT_Float32)
    (folder / "huge.vrt").write_text(
        f'<VRTDataset rasterXSize="{size}" rasterYSize="{size}">'
        '<VRTRasterBand dataType="Float32" band="1"><SimpleSource>'
        '<SourceFilename relativeToVRT="1">s.tif</SourceFilename><SourceBand>1</SourceBand>'
        '</SimpleSource></VRTRasterBand></VRTDataset>')
    return folder / "huge.vrt"


@pytest.mark.parametrize("utility", ["gdal_radnorm", "gdal_multilook", "gdal_rotate"])
def test_work_past_the_limit_stops_at_once(gg, tmp_path, utility):
    """A 10^6 x 10^6 VRT (3.6 TiB of Float32): one line naming the work and
    the limit, exit 1, no output, within seconds (gdal_radnorm started
    hours of work without a word)."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    opts = {"gdal_radnorm": ["-coef", "30"], "gdal_multilook": ["-looks", "2", "2"],
            "gdal_rotate": ["-angle", "10"]}[utility]
    huge = _huge_vrt(src)
    before = gg.snapshot(src)
    p = gg.run(utility, "-q", "-device", "cpu", *opts, huge, out / "o.tif", check=False,
               timeout=30)
    _clean_failure(gg, p, out, ["work limit", "GG_WORK_LIMIT none", "TiB"], before, src)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_work_limit_is_stated_and_overridden(gg, tmp_path):
    """GG_WORK_LIMIT sets the limit (--config or the environment), none
    lifts it; a value that is not a size is refused."""
    _write(tmp_path / "r.tif", [np.ones((64, 64), np.float32)], gdal.GDT_Float32)
    ml = ["gdal_multilook", "-q", "-device", "cpu", "-looks", "2", "2", tmp_path / "r.tif"]
    p = gg.run(*ml, "--config", "GG_WORK_LIMIT", "16K", tmp_path / "o.tif", check=False)
    assert p.returncode == 1 and "past the work limit of 16 KiB" in p.stderr, p.stderr
    assert not (tmp_path / "o.tif").exists()
    p = gg.run(*ml, tmp_path / "o.tif", check=False, env={"GG_WORK_LIMIT": "16K"})
    assert p.returncode == 1 and "work limit" in p.stderr, p.stderr
    gg.run(*ml, "--config", "GG_WORK_LIMIT", "20K", tmp_path / "o.tif")  # 16 + 4 KiB: fits
    gg.run(*ml, "--config", "GG_WORK_LIMIT", "none", tmp_path / "o2.tif")
    p = gg.run(*ml, "--config", "GG_WORK_LIMIT", "lots", tmp_path / "o3.tif", check=False)
    assert p.returncode == 1 and "GG_WORK_LIMIT 'lots' is not a size" in p.stderr, p.stderr


def test_ortho_polar_grid_past_the_limit_stops_at_once(gg, tmp_path):
    """RPCs near a pole with -t_srs EPSG:3263 -tr 5 5: a grid of petabytes,
    refused before the set-up that took seconds and a gigabyte."""
    subprocess.run(["bench_ortho_make", str(tmp_path), "200", "160"], check=True,
                   capture_output=True)  # on PATH: <build>/bin
    vrt = (tmp_path / "scene.vrt").read_text()
    (tmp_path / "pole.vrt").write_text(vrt.replace('"LAT_OFF">45.2<', '"LAT_OFF">89.9<'))
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(tmp_path / "out")
    p = gg.run("gdal_ortho", "-q", "-device", "cpu", "-t_srs", "EPSG:3263", "-tr", "5", "5",
               tmp_path / "pole.vrt", out / "o.tif", check=False, timeout=30)
    _clean_failure(gg, p, out, ["output grid", "work limit", "-tr"], before, out)


def test_deeply_nested_gg_string_message_is_cut_short(gg, tmp_path):
    """A 3000-deep GG: string that cannot open: one ERROR line of at most
    1000 characters, the string cut in its middle, the cause kept at the
    end (its message echoed 1.1 MB, later 2 KB cut before the cause)."""
    _write(tmp_path / "r.tif", [np.ones((16, 16), np.float32)], gdal.GDT_Float32)
    name = str(tmp_path / "r.tif")
    for _ in range(3000):
        name = "GG:rotate:angle=0:" + name
    p = gg.run("gdal_multilook", "-q", "-device", "cpu", "-looks", "2", "2", name,
               tmp_path / "o.tif", check=False)
    errors = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
    assert p.returncode == 1 and len(errors) == 1, p.stderr[:2000]
    assert len(errors[0]) < 1000 and "characters] ..." in errors[0], errors[0][:2000]
    assert errors[0].rstrip().endswith(("nested more than 16 deep (does a .ggvrt reference "
                                        "itself?)")), errors[0]
    assert not (tmp_path / "o.tif").exists()
    gdal.PushErrorHandler("CPLQuietErrorHandler")
    try:
        with pytest.raises(RuntimeError) as e:
            gdal.Open(name)
    finally:
        gdal.PopErrorHandler()
    assert len(str(e.value)) < 1000, str(e.value)[:2000]


# side outputs (gdal_xcorr -table, gdal_coreg -fit and -prm) whose folder
# cannot be written: a clean error and no output at all, as for the raster
SIDE = {
    "xcorr-table": ("gdal_xcorr", "-table", "t.csv", ["t.csv"]),
    "coreg-fit": ("gdal_coreg", "-fit", "fit.json", ["fit.json"]),
    "coreg-prm": ("gdal_coreg", "-prm", "s.PRM", ["s.PRM"]),
}


@pytest.mark.parametrize("case", list(SIDE))
@pytest.mark.parametrize("where", ["missing", "read_only"])
def test_unwritable_side_output(gg, inputs, tmp_path, case, where):
    utility, flag, name, words = SIDE[case]
    folder = tmp_path / "no" / "such" if where == "missing" else _read_only_folder(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    argv = _argv(utility, inputs, _out(utility, out))
    argv[1:1] = [flag, str(folder / name)]
    p = gg.run(*argv, check=False)
    _clean_failure(gg, p, out, words, before, inputs)
    assert len([l for l in p.stderr.splitlines() if l.strip()]) == 1, p.stderr


# gdal_fmcw -simulate: counts and the seed are whole numbers in range before
# any cast to int (fuzz_app_options/ubsan_fmcw_simulate_*)
SIMULATE_ABSURD = {
    "sectors-huge": (["-sectors", "1e10"], ["-sectors"]),
    "gates-past-int": (["-gates", 3e9], ["-gates"]),
    "sweeps-fraction": (["-sweeps", 16.5], ["-sweeps"]),
    "seed-negative": (["-seed", -1], ["-seed"]),
    "seed-past-2-64": (["-seed", 1e30], ["-seed"]),
    "target-nan": (["-target", "nan,45,30"], ["-target"]),
}


@pytest.mark.parametrize("case", SIMULATE_ABSURD)
def test_fmcw_simulate_absurd(gg, inputs, tmp_path, case):
    opts, words = SIMULATE_ABSURD[case]
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    p = gg.run("gdal_fmcw", "-simulate", *rd.FMCW_SMALL, *[str(o) for o in opts], "-q",
               out / "sim.nc", check=False)
    _clean_failure(gg, p, out, words, before, inputs)


# GMTSAR PRM values that fed int arithmetic unchecked: id -> (PRM line
# replaced in the aligned PRM, or in both with "both:", keywords)
BAD_PRM = {
    # num_valid_az x num_patches overflowed int (fuzz_prm/ubsan_height_overflow)
    "patches-overflow": ("both:num_patches = 33554432", ["num_patches"]),
    # sscanf "%d" read 2^32 + 128 as 128: a 128-wide image, silently
    "rng-bins-past-int": ("both:num_rng_bins = 4294967424", ["num_rng_bins"]),
    # PRF inf: the azimuth stretch floor(y * inf) was cast to int
    "prf-inf": ("PRF = inf", ["PRF"]),
    # finite PRFs a factor 1e9 apart: the stretch alone overflows int
    "prf-ratio": ("PRF = 1e12", ["PRF"]),
    # shifts far past the image overflowed the patch positions
    "rshift-huge": ("rshift = 2147483647", ["rshift"]),
}


@pytest.mark.parametrize("case", BAD_PRM)
def test_gmtsar_bad_prm(gg, inputs, tmp_path, case):
    line, words = BAD_PRM[case]
    both = line.startswith("both:")
    line = line.removeprefix("both:")
    key = line.split("=")[0].strip()
    d = tmp_path / "prm"
    d.mkdir()
    names = []
    for name in ("master", "aligned"):
        text = (inputs / f"{name}.PRM").read_text()
        if both or name == "aligned":
            text = "".join(f"{line}\n" if l.split("=")[0].strip() == key else l + "\n"
                           for l in text.splitlines())
        text = text.replace(f"SLC_file = {name}.SLC", f"SLC_file = {inputs / name}.SLC")
        (d / f"{name}.PRM").write_text(text)
        names.append(str(d / f"{name}.PRM"))
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    p = gg.run("gdal_xcorr", "-mode", "gmtsar", *names, *rd.GMTSAR_OPTS, "-q", "-device", "cpu",
               "-o", out / "freq.dat", check=False)
    _clean_failure(gg, p, out, words, before, inputs)
