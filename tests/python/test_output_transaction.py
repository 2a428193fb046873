"""One output transaction for every file a run writes (issue 36,
gdal/gg_output.c): the raster with gdal_coreg's -fit JSON and -prm lines,
gdal_insar's and gdal_ptsel's band files (-mask, -filter), gdal_xcorr's
-table, the -mode gmtsar offsets file and gdal_quicklook's PNG are written
under temporary names and put in place in one commit step.  Whatever
happens -- a failure while files are put in place, SIGINT or SIGTERM at any
moment, a second run writing the same destination at the same time -- the
destinations hold either the old set or one run's new set, whole, and no
temporary is left."""
import hashlib
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from osgeo import gdal

from conftest import BIN, REPO

sys.path.insert(0, os.path.dirname(__file__))
from test_xcorr import speckle_pair, write_slc  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(REPO / "gdal_plugins" / "python")] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
INPUTS = {"c1.tif", "c2.tif", "c3.tif", "master.PRM", "master.SLC", "aligned.PRM", "aligned.SLC",
          "aligned2.PRM", "aligned2.SLC"}


def _write(path, array, dtype):
    ds = gdal.GetDriverByName("GTiff").Create(str(path), array.shape[1], array.shape[0], 1, dtype)
    ds.GetRasterBand(1).WriteArray(array)
    ds = None


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """c1, c2 (c1 + noise) and c3 (c1 moved by a pixel across + noise): runs
    on c2 and on c3 differ in every file they write.  A GMTSAR pair and a
    second aligned SLC shifted by two lines."""
    folder = tmp_path_factory.mktemp("tx")
    rng = np.random.default_rng(36)
    n = 384
    base = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    for k, name in enumerate(("c1", "c2", "c3")):
        z = np.roll(base, k // 2, axis=1) + 0.3 * (rng.standard_normal(base.shape) +
                                                  1j * rng.standard_normal(base.shape))
        _write(folder / f"{name}.tif", z.astype("c8"), gdal.GDT_CFloat32)
    s1, s2 = speckle_pair(256, 320, 1.0, 1.0, 0.8)
    write_slc(folder, "master", s1)
    write_slc(folder, "aligned", s2)
    write_slc(folder, "aligned2", np.roll(s2, 2, axis=0))
    return folder


CO = ["-window", 32, 32, "-search", 6, 6, "-skip", 24, 24]


def _case(name, second):
    """(argv, destination names) of a case's run on the second source
    `second` (c2: the new set; c3: the old set)."""
    dev = ["-q", "-device", "cpu"]
    if name == "coreg":
        return ([BIN / "gdal_coreg", *dev, *CO, "c1.tif", f"{second}.tif", "o.tif", "-fit", "o.json",
                 "-prm", "o.prm"], ["o.tif", "o.json", "o.prm"])
    if name == "insar":
        return ([BIN / "gdal_insar", *dev, "c1.tif", f"{second}.tif", "o.tif"],
                [f"o_{p}.tif" for p in ("interferogram", "coherence", "amplitude")])
    if name == "ptsel":
        other = "c3" if second == "c2" else "c2"
        return ([BIN / "gdal_ptsel", *dev, "-slc", "-mask", "-window", 5, "-filter", "f", "c1.tif",
                 f"{second}.tif", f"{other}.tif", "o.tif"],
                [f"o_{b}.tif" for b in ("tau_max", "ps_mask")] +
                [f"f/o_filtered_{k}.tif" for k in (1, 2, 3)])
    if name == "xcorr-table":
        return ([BIN / "gdal_xcorr", *dev, *CO, "c1.tif", f"{second}.tif", "o.tif", "-table",
                 "o.csv"], ["o.tif", "o.csv"])
    if name == "gmtsar":
        aligned = "aligned.PRM" if second == "c2" else "aligned2.PRM"
        return ([BIN / "gdal_xcorr", "-mode", "gmtsar", "master.PRM", aligned, "-nx", 4, "-ny", 4, "-xsearch", 16, "-ysearch", 16,
                 "-device", "cpu", "-o", "o.dat"], ["o.dat"])
    if name == "quicklook":
        return ([sys.executable, "-m", "geogpu.quicklook", "-q", f"{second}.tif", "q.png"],
                ["q.png"])
    raise KeyError(name)


CASES = ["coreg", "insar", "ptsel", "xcorr-table", "gmtsar", "quicklook"]


def _run(argv, cwd, env=ENV):
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=300)


def _state(folder, names):
    """The destinations' hashes (None: absent) and every other file that is
    not an input (a temporary, a put-aside old file)."""
    h = {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() if (folder / n).exists()
         else None for n in names}
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and str(p.relative_to(folder)) not in names
                  and p.name not in INPUTS)
    return h, left


@pytest.fixture(params=CASES)
def case(request, data, tmp_path):
    """A folder with the inputs (linked), the case's old set in place, and
    its old and new sets' hashes."""
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "f").mkdir()
    for name in INPUTS:
        os.link(data / name, folder / name)
    sets = {}
    for which in ("c2", "c3"):  # new set, then the old one left in place
        argv, names = _case(request.param, which)
        p = _run(argv, folder)
        assert p.returncode == 0, p.stderr
        sets[which], left = _state(folder, names)
        assert not left, left
    assert all(sets["c2"][n] != sets["c3"][n] for n in names), "the two sets must differ"
    return request.param, folder, names, sets["c3"], sets["c2"]


def test_a_failed_commit_changes_nothing(case):
    """GG_FAULT=commit:K fails the K-th file put in place: the files put in
    place before it are taken back, the old set is as it was, one ERROR
    line names the file, no temporary or put-aside file is left."""
    name, folder, names, old, _new = case
    argv, _ = _case(name, "c2")
    for k in range(1, len(names) + 1):
        p = _run(argv, folder, env=dict(ENV, GG_FAULT=f"commit:{k}"))
        errors = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
        assert p.returncode != 0, f"commit:{k} did not fail"
        assert len(errors) == 1 and "injected fault" in errors[0], p.stderr
        assert _state(folder, names) == (old, []), f"commit:{k}"


def test_a_failed_commit_creates_nothing(case):
    name, folder, names, _old, _new = case
    for n in names:
        (folder / n).unlink()
    argv, _ = _case(name, "c2")
    p = _run(argv, folder, env=dict(ENV, GG_FAULT=f"commit:{len(names)}"))
    assert p.returncode != 0
    assert _state(folder, names) == ({n: None for n in names}, [])


def _temporary(folder, pid):
    """A temporary of process pid under folder (gg_output's names), or None."""
    for p in folder.rglob(f"*.tmp{pid}*"):
        return p
    return None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_interrupted_while_writing(case, sig):
    """The signal as soon as the run's first temporary exists: the old set
    (or the new one, when the run got to its commit step meanwhile), every
    temporary removed (gdal_coreg's -fit/-prm temporaries were left,
    and gdal_quicklook's PNG on SIGTERM)."""
    name, folder, names, old, new = case
    argv, _ = _case(name, "c2")
    proc = subprocess.Popen([str(a) for a in argv], cwd=folder, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + 120
    seen = None
    while seen is None and proc.poll() is None and time.monotonic() < end:
        seen = _temporary(folder, proc.pid)
        time.sleep(0.001)
    if seen is not None:
        proc.send_signal(sig)
    proc.communicate(timeout=120)
    if seen is None:
        pytest.skip("the run ended before a temporary was seen")
    now, left = _state(folder, names)
    assert now in (old, new) and not left, left


def test_interrupted_at_random_moments(case):
    """SIGINT or SIGTERM at random moments over the whole run, repeated:
    each time either the old set or the new one, whole, and no temporary."""
    name, folder, names, old, new = case
    argv, _ = _case(name, "c2")
    argv_old, _ = _case(name, "c3")
    t0 = time.monotonic()
    _run(argv, folder)
    duration = time.monotonic() - t0
    rng = random.Random(36)
    for trial in range(8):
        if _state(folder, names)[0] != old:
            assert _run(argv_old, folder).returncode == 0
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        delay = rng.uniform(0.0, 1.2 * duration)
        proc = subprocess.Popen([str(a) for a in argv], cwd=folder, env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(sig)
        proc.wait(timeout=120)
        now, left = _state(folder, names)
        assert now in (old, new) and not left, \
            f"trial {trial}: {sig.name} after {delay:.3f} s (rc {proc.returncode}): " \
            f"{'a mixed set' if now not in (old, new) else ''} {left}"


@pytest.mark.parametrize("name", ["coreg", "xcorr-table", "insar"])
def test_concurrent_writers_end_with_one_set(data, tmp_path, name):
    """Two runs writing one destination set at once (different sources):
    both succeed and the set is one run's, whole (it was a mix in 1 of 15
    gdal_coreg and 1 of 30 gdal_xcorr trials)."""
    folder = tmp_path / "w"
    folder.mkdir()
    for n in INPUTS:
        os.link(data / n, folder / n)
    runs = [_case(name, which)[0] for which in ("c2", "c3")]
    names = _case(name, "c2")[1]
    sets = []
    for argv in runs:
        assert _run(argv, folder).returncode == 0
        sets.append(_state(folder, names)[0])
    for trial in range(10):
        procs = [subprocess.Popen([str(a) for a in argv], cwd=folder, env=ENV,
                                  stderr=subprocess.PIPE) for argv in runs]
        errs = [p.communicate(timeout=300)[1] for p in procs]
        assert all(p.returncode == 0 for p in procs), errs
        now, left = _state(folder, names)
        assert now in sets and not left, f"trial {trial}: a mixed set {left}"


def test_old_side_files_go_with_the_old_destination(data, tmp_path):
    """An existing destination's side file that the new run does not write
    (statistics in o.tif.aux.xml) is removed with the old raster: it would
    describe the new one."""
    for n in ("c1.tif", "c2.tif"):
        os.link(data / n, tmp_path / n)
    argv = [BIN / "gdal_multilook", "-q", "-device", "cpu", "-looks", 2, 2, "c1.tif", "o.tif"]
    assert _run(argv, tmp_path).returncode == 0
    (tmp_path / "o.tif.aux.xml").write_text("<PAMDataset><Metadata><MDI key=\"STALE\">1</MDI>"
                                            "</Metadata></PAMDataset>")
    assert _run(argv, tmp_path).returncode == 0
    assert not (tmp_path / "o.tif.aux.xml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c1.tif", "c2.tif", "o.tif"]


def test_a_vrt_destination_keeps_the_files_it_refers_to(data, tmp_path):
    """Replacing o.vrt that refers to o.tif (not an input of the run) removes
    o.vrt only: a VRT's file list names its sources, which are not its
    side files."""
    os.link(data / "c1.tif", tmp_path / "c1.tif")
    os.link(data / "c2.tif", tmp_path / "o.tif")
    gdal.Translate(str(tmp_path / "o.vrt"), str(tmp_path / "o.tif"), format="VRT")
    argv = [BIN / "gdal_multilook", "-q", "-device", "cpu", "-looks", 2, 2, "-of", "VRT",
            "c1.tif", "o.vrt"]
    p = _run(argv, tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "o.tif").read_bytes() == (data / "c2.tif").read_bytes()
