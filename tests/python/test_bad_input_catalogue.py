"""The bad-input catalogue shared by every raster utility (docs/reliability.md):
empty and non-raster input files, NaN-filled inputs, a destination folder
that does not exist, and a destination that fills up (a file-size limit,
as a full disk).  Each case has one expected outcome: a clean error (exit 1,
an ERROR line naming the problem, nothing left in the output folder, the
inputs untouched) or, for NaN-filled inputs, a successful run whose outputs
are entirely nodata.  Utility-specific cases (options, sizes, types) are in
each utility's own test file."""
import math
import resource
import signal

import numpy as np
import pytest
from osgeo import gdal

# utility -> argv with {r} (real), {c1} {c2} (complex), {s} (complex stack)
UTILITIES = {
    "gdal_multilook": ["-looks", 2, 2, "{r}"],
    "gdal_rotate": ["-angle", 30, "{r}"],
    "gdal_radnorm": ["-coef", 35, "{r}"],
    "gdal_insar": ["{c1}", "{c2}"],
    "gdal_ptsel": ["-window", 5, "{s}"],
    "gdal_xcorr": ["-window", 16, 16, "-search", 4, 4, "-skip", 8, 8, "{c1}", "{c2}"],
}
# NaN-filled input: every utility succeeds with all-nodata outputs, except
# radnorm, whose gains need valid pixels
NAN_ERRORS = {"gdal_radnorm": "no valid pixels"}


def _write(path, arrays, dtype):
    drv = gdal.GetDriverByName("GTiff")
    H, W = arrays[0].shape
    ds = drv.Create(str(path), W, H, len(arrays), dtype)
    for i, a in enumerate(arrays):
        ds.GetRasterBand(i + 1).WriteArray(a)
    ds = None


@pytest.fixture
def inputs(make, rng, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    H, W = 48, 56
    good = {
        "r": ([make.real(rng, H, W, nan=0)], gdal.GDT_Float32),
        "c1": ([make.complex(rng, H, W, nan=0)], gdal.GDT_CFloat32),
        "c2": ([make.complex(rng, H, W, nan=0)], gdal.GDT_CFloat32),
        "s": ([make.complex(rng, H, W, nan=0) for _ in range(4)], gdal.GDT_CFloat32),
    }
    for k, (arrs, dt) in good.items():
        _write(d / f"{k}.tif", arrs, dt)
        _write(d / f"nan_{k}.tif", [np.full_like(a, np.nan) for a in arrs], dt)
    (d / "empty.tif").write_bytes(b"")
    (d / "text.tif").write_text("this is not a raster\n")
    return d


def _argv(utility, d, out, sub=None):
    names = {k: str(d / f"{k}.tif") for k in ("r", "c1", "c2", "s")}
    if sub:
        names.update(sub)
    return [utility, "-q", "-device", "cpu"] + [str(a).format(**names) for a in UTILITIES[utility]] + [str(out)]


def _clean_failure(gg, p, outdir, words, before, d):
    assert p.returncode == 1, f"exit {p.returncode}\n{p.stderr}"
    errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
    assert errors, f"no ERROR line:\n{p.stderr}"
    assert any(all(w.lower() in l.lower() for w in words) for l in errors), (
        f"no ERROR line names {words}:\n{p.stderr}")
    assert "Traceback" not in p.stderr
    if outdir.exists():
        assert list(outdir.iterdir()) == [], "output or temporary left behind"
    assert gg.snapshot(d) == before, "an input was modified"


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize("kind", ["empty", "text"])
def test_not_a_raster(gg, inputs, tmp_path, utility, kind):
    out = tmp_path / "out"
    out.mkdir()
    bad = str(inputs / f"{kind}.tif")
    before = gg.snapshot(inputs)
    p = gg.run(*_argv(utility, inputs, out / "o.tif", {k: bad for k in ("r", "c1", "s")}), check=False)
    _clean_failure(gg, p, out, [f"{kind}.tif"], before, inputs)


@pytest.mark.parametrize("utility", UTILITIES)
def test_nan_filled(gg, inputs, tmp_path, utility):
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    sub = {k: str(inputs / f"nan_{k}.tif") for k in ("r", "c1", "c2", "s")}
    p = gg.run(*_argv(utility, inputs, out / "o.tif", sub), check=False)
    if utility in NAN_ERRORS:
        _clean_failure(gg, p, out, [NAN_ERRORS[utility]], before, inputs)
        return
    assert p.returncode == 0, p.stderr
    files = sorted(out.iterdir())
    assert files, "no output"
    for f in files:
        ds = gdal.Open(str(f))
        for b in range(1, ds.RasterCount + 1):
            band = ds.GetRasterBand(b)
            a = band.ReadAsArray()
            nd = band.GetNoDataValue()
            vals = a.real if np.iscomplexobj(a) else a
            invalid = np.isnan(vals) | (vals == nd if nd is not None and not math.isnan(nd) else False)
            assert invalid.all(), f"{f.name} band {b}: {(~invalid).sum()} valid pixels from NaN input"
        ds = None
    assert gg.snapshot(inputs) == before


@pytest.mark.parametrize("utility", UTILITIES)
def test_missing_destination_folder(gg, inputs, tmp_path, utility):
    before = gg.snapshot(inputs)
    missing = tmp_path / "no" / "such" / "folder"
    p = gg.run(*_argv(utility, inputs, missing / "o.tif"), check=False)
    _clean_failure(gg, p, missing, [], before, inputs)
    assert not (tmp_path / "no").exists()


def _limit_file_size():
    # a file-size limit makes writes fail with EFBIG, as a full disk does
    # (ENOSPC); ignore SIGXFSZ so the write fails instead of killing us
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


@pytest.mark.parametrize("utility", UTILITIES)
def test_full_destination(gg, inputs, tmp_path, utility):
    import subprocess
    import shutil
    out = tmp_path / "out"
    out.mkdir()
    before = gg.snapshot(inputs)
    argv = _argv(utility, inputs, out / "o.tif")
    exe = shutil.which(argv[0], path=str(gg.build / "bin"))
    p = subprocess.run([exe] + argv[1:], capture_output=True, text=True,
                       preexec_fn=_limit_file_size, timeout=120)
    _clean_failure(gg, p, out, [], before, inputs)
