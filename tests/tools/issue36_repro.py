#!/usr/bin/python3
"""Tries the cases of issue 36 still open after the input-identity work
against a build and lists which reproduce.  Not a test (the pytests in
tests/python are); a quick survey, a few seconds to a minute per case:

    GG_BUILD_DIR=build /usr/bin/python3 tests/tools/issue36_repro.py [case ...]
"""
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
BIN = BUILD / "bin"
os.environ["GDAL_DRIVER_PATH"] = str(BUILD / "lib")
os.environ["PYTHONPATH"] = str(REPO / "gdal_plugins" / "python")
import numpy as np  # noqa: E402
from osgeo import gdal  # noqa: E402

gdal.UseExceptions()
CASES = {}


def case(f):
    CASES[f.__name__] = f
    return f


def write(path, a, t):
    ds = gdal.GetDriverByName("GTiff").Create(str(path), a.shape[1], a.shape[0], 1, t)
    ds.GetRasterBand(1).WriteArray(a)
    ds = None


def slcs(d, n=3, size=512, seed=36):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((size, size)) + 1j * rng.standard_normal((size, size))
    for k in range(n):  # c3 shifted by a pixel: every output of c1/c3 differs from c1/c2's
        z = np.roll(base, k // 2, axis=1) + 0.3 * (rng.standard_normal(base.shape) +
                                                  1j * rng.standard_normal(base.shape))
        write(d / f"c{k + 1}.tif", z.astype("c8"), gdal.GDT_CFloat32)


INPUTS = ("c1.tif", "c2.tif", "c3.tif")


def state(d, names):
    """Hashes of the named files (None: absent) and any other file left
    beside them (temporaries)."""
    h = {n: hashlib.sha256((d / n).read_bytes()).hexdigest() if (d / n).exists() else None
         for n in names}
    left = sorted(str(p.relative_to(d)) for p in d.rglob("*")
                  if p.is_file() and str(p.relative_to(d)) not in names and p.name not in INPUTS)
    return h, left


def run(argv, cwd):
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)


def interrupted(argv, cwd, names, produce_new, n=12, lo=0.0, hi=1.5):
    """Old set in place, then n runs interrupted at random moments; reports
    runs that left a mix or temporaries."""
    r = run(argv, cwd)
    assert r.returncode == 0, r.stderr
    new, _ = state(cwd, names)
    bad = []
    for i in range(n):
        sig = random.choice([signal.SIGINT, signal.SIGTERM])
        produce_new(cwd)          # the old set, consistent
        old, _ = state(cwd, names)
        assert all(old[k] != new[k] for k in names), "the two sets must differ in every file"
        p = subprocess.Popen([str(a) for a in argv], cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(lo, hi))
        p.send_signal(sig)
        p.wait()
        now, left = state(cwd, names)
        mixed = now not in (old, new)
        if mixed or left:
            bad.append(f"run {i} ({sig.name}, rc {p.returncode}): mixed={mixed} left={left}")
    return bad


@case
def signals_coreg():
    d = Path(tempfile.mkdtemp())
    slcs(d)
    argv = [BIN / "gdal_coreg", "-q", "-device", "cpu", "c1.tif", "c2.tif", "o.tif",
            "-fit", "o.json", "-prm", "o.prm"]
    alt = [BIN / "gdal_coreg", "-q", "-device", "cpu", "c1.tif", "c3.tif", "o.tif",
           "-fit", "o.json", "-prm", "o.prm"]
    return interrupted(argv, d, ["o.tif", "o.json", "o.prm"], lambda c: run(alt, c), hi=2.5)


@case
def signals_insar():
    d = Path(tempfile.mkdtemp())
    slcs(d, size=1024)
    argv = [BIN / "gdal_insar", "-q", "-device", "cpu", "c1.tif", "c2.tif", "o.tif"]
    alt = [BIN / "gdal_insar", "-q", "-device", "cpu", "c1.tif", "c3.tif", "o.tif"]
    names = ["o_interferogram.tif", "o_coherence.tif", "o_amplitude.tif"]
    return interrupted(argv, d, names, lambda c: run(alt, c))


@case
def signals_ptsel():
    d = Path(tempfile.mkdtemp())
    slcs(d, size=512)
    (d / "f").mkdir()
    argv = [BIN / "gdal_ptsel", "-q", "-device", "cpu", "-slc", "-mask", "-window", 5,
            "-filter", "f", "c1.tif", "c2.tif", "c3.tif", "o.tif"]
    alt = [BIN / "gdal_ptsel", "-q", "-device", "cpu", "-slc", "-mask", "-window", 7,
           "-filter", "f", "c1.tif", "c2.tif", "c3.tif", "o.tif"]
    names = [f"o_{b}.tif" for b in ("tau_max", "ps_mask")]
    names += [f"f/o_filtered_{k}.tif" for k in (1, 2, 3)]
    return interrupted(argv, d, names, lambda c: run(alt, c))


@case
def signals_xcorr_table():
    d = Path(tempfile.mkdtemp())
    slcs(d, size=1024)
    argv = [BIN / "gdal_xcorr", "-q", "-device", "cpu", "c1.tif", "c2.tif", "o.tif",
            "-table", "o.csv"]
    alt = [BIN / "gdal_xcorr", "-q", "-device", "cpu", "c1.tif", "c3.tif", "o.tif",
           "-table", "o.csv"]
    return interrupted(argv, d, ["o.tif", "o.csv"], lambda c: run(alt, c))


@case
def signals_quicklook():
    d = Path(tempfile.mkdtemp())
    slcs(d, n=2, size=1024)
    argv = [sys.executable, "-m", "geogpu.quicklook", "c1.tif", "q.png"]
    alt = [sys.executable, "-m", "geogpu.quicklook", "c2.tif", "q.png"]
    return interrupted(argv, d, ["q.png"], lambda c: run(alt, c), hi=2.0)


def concurrent(argv_a, argv_b, d, names, n=15):
    sets = []
    for argv in (argv_a, argv_b):
        r = run(argv, d)
        assert r.returncode == 0, r.stderr
        sets.append(state(d, names)[0])
    bad = []
    for i in range(n):
        pa = subprocess.Popen([str(a) for a in argv_a], cwd=d, stderr=subprocess.DEVNULL)
        pb = subprocess.Popen([str(a) for a in argv_b], cwd=d, stderr=subprocess.DEVNULL)
        ra, rb = pa.wait(), pb.wait()
        now, left = state(d, names)
        if (ra == 0 and rb == 0 and now not in sets) or left:
            bad.append(f"trial {i}: mixed set={now not in sets} left={left}")
    return bad


@case
def concurrent_coreg():
    d = Path(tempfile.mkdtemp())
    slcs(d, size=384)
    common = ["o.tif", "-fit", "o.json", "-prm", "o.prm"]
    co = [BIN / "gdal_coreg", "-q", "-device", "cpu", "-window", 32, 32, "-search", 6, 6,
          "-skip", 24, 24]
    a = co + ["c1.tif", "c2.tif"] + common
    b = co + ["c1.tif", "c3.tif"] + common
    return concurrent(a, b, d, ["o.tif", "o.json", "o.prm"])


@case
def concurrent_xcorr():
    d = Path(tempfile.mkdtemp())
    slcs(d, size=256)
    a = [BIN / "gdal_xcorr", "-q", "-device", "cpu", "c1.tif", "c2.tif", "o.tif", "-table", "o.csv"]
    b = [BIN / "gdal_xcorr", "-q", "-device", "cpu", "c1.tif", "c3.tif", "o.tif", "-table", "o.csv"]
    return concurrent(a, b, d, ["o.tif", "o.csv"])


@case
def shared_handle_threads():
    d = Path(tempfile.mkdtemp())
    rng = np.random.default_rng(1)
    write(d / "r.tif", rng.random((1024, 1024)).astype("f4"), gdal.GDT_Float32)
    bad = []
    for name in (f"GG:multilook:looks=2x2:device=cpu:{d}/r.tif", f"GG:rotate:angle=10:device=cpu:{d}/r.tif"):
        ref = gdal.Open(name).ReadAsArray()
        for trial in range(3):
            ds = gdal.Open(name)
            out = [None] * 4

            def work(k):
                b = ds.GetRasterBand(1)
                acc = np.zeros_like(ref)
                for y in range(0, ref.shape[0], 64):
                    yy = (y + 64 * 4 * k) % ref.shape[0]
                    acc[yy:yy + 64] = b.ReadAsArray(0, yy, ref.shape[1], min(64, ref.shape[0] - yy))
                out[k] = acc
            ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            wrong = sum(not np.array_equal(o, ref, equal_nan=True) for o in out)
            if wrong:
                bad.append(f"{name.split(':')[1]} trial {trial}: {wrong} of 4 threads got other pixels")
            ds = None
    return bad


@case
def overflow_to_inf():
    d = Path(tempfile.mkdtemp())
    write(d / "big.tif", np.full((64, 64), 3.4e38, "f4"), gdal.GDT_Float32)
    r = run([BIN / "gdal_multilook", "-q", "-device", "cpu", "-looks", 2, 2, "big.tif", "o.tif"], d)
    if r.returncode == 0:
        a = gdal.Open(str(d / "o.tif")).ReadAsArray()
        if not np.isfinite(a).all():
            return [f"exit 0 with {int((~np.isfinite(a)).sum())} non-finite pixels, stderr {r.stderr!r}"]
    return []


@case
def nested_gg_message():
    s = "/nonexistent.tif"
    for _ in range(3000):
        s = "GG:rotate:angle=0:" + s
    r = run([BIN / "gdal_multilook", "-q", "-device", "cpu", "-looks", 2, 2, s, "/tmp/o36.tif"], "/tmp")
    n = len(r.stderr)
    return [f"{n} bytes of stderr"] if n > 4096 else []


@case
def radnorm_huge_vrt():
    d = Path(tempfile.mkdtemp())
    write(d / "s.tif", np.ones((16, 16), "f4"), gdal.GDT_Float32)
    (d / "huge.vrt").write_text(
        '<VRTDataset rasterXSize="1000000" rasterYSize="1000000"><VRTRasterBand dataType="Float32" band="1">'
        '<SimpleSource><SourceFilename relativeToVRT="1">s.tif</SourceFilename><SourceBand>1</SourceBand>'
        '</SimpleSource></VRTRasterBand></VRTDataset>')
    p = subprocess.Popen([str(BIN / "gdal_radnorm"), "-q", "-device", "cpu", "huge.vrt", "o.tif"],
                         cwd=d, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=10)
        return [] if p.returncode != 0 else ["exit 0?"]
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return ["still running after 10 s without a word"]


@case
def ortho_truncated_cause():
    d = Path(tempfile.mkdtemp())
    run([BIN / "bench_ortho_make", d, 200, 160], d)
    gdal.Translate(str(d / "scene.tif"), str(d / "scene.vrt"))  # RPCs kept
    data = (d / "scene.tif").read_bytes()
    (d / "scene.tif").write_bytes(data[: len(data) // 3])
    r = run([BIN / "gdal_ortho", "-q", "-device", "cpu", "scene.tif", "-dem", "dem.vrt", "o.tif"], d)
    errs = [ln for ln in r.stderr.splitlines() if "ERROR" in ln]
    return [f"empty cause: {e}" for e in errs if e.rstrip().endswith("failed:")] + \
        ([f"{len(errs)} ERROR lines"] if len(errs) != 1 else [])


@case
def ortho_polar_grid():
    d = Path(tempfile.mkdtemp())
    run([BIN / "bench_ortho_make", d, 200, 160], d)
    (d / "pole.vrt").write_text((d / "scene.vrt").read_text().replace('"LAT_OFF">45.2<',
                                                                      '"LAT_OFF">89.9<'))
    t = time.monotonic()
    r = run([BIN / "gdal_ortho", "-q", "-device", "cpu", "-t_srs", "EPSG:3263", "-tr", 5, 5,
             "pole.vrt", "o.tif"], d)
    took = time.monotonic() - t
    return [] if "work limit" in r.stderr else [f"{took:.1f} s before: {r.stderr.strip()[:200]}"]


@case
def gmtsar_negative_field():
    sys.path.insert(0, str(REPO / "tests" / "python"))
    d = Path(tempfile.mkdtemp())
    from test_xcorr import speckle_pair, write_slc
    s1, s2 = speckle_pair(128, 160, 1.0, 1.0, 0.8)
    write_slc(d, "master", s1)
    write_slc(d, "aligned", s2)
    prm = (d / "master.PRM").read_text().replace("num_rng_bins = 128", "num_rng_bins = -128")
    (d / "master.PRM").write_text(prm)
    r = run([BIN / "gdal_xcorr", "-mode", "gmtsar", "master.PRM", "aligned.PRM", "-nx", 2, "-ny", 2,
             "-device", "cpu"], d)
    return [r.stderr.strip()] if "missing" in r.stderr else []


if __name__ == "__main__":
    names = sys.argv[1:] or list(CASES)
    for name in names:
        t = time.monotonic()
        try:
            bad = CASES[name]()
        except Exception as e:  # a case that cannot even run says so
            bad = [f"could not run: {e!r}"]
        print(f"{'REPRODUCES' if bad else 'fixed     '} {name} ({time.monotonic() - t:.0f} s)")
        for b in bad:
            print("    " + b)
        sys.stdout.flush()
