"""The safe output path (gdal/gg_output.c): a run interrupted by SIGINT or
SIGTERM while it writes leaves no temporary file and no partial output,
and an existing output is left as it was."""
import signal
import subprocess
import time

import pytest

from conftest import BIN


def _wait_for_temporary(proc, folder, stem, timeout=60):
    """The hidden temporary '.<stem>.tmp<pid>.*' once the process created it
    (None if the process ended first)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        found = list(folder.glob(f".{stem}.tmp{proc.pid}*"))
        if found:
            return found[0]
        time.sleep(0.002)
    return None


def _interrupted(argv, folder, stem, sig):
    """Runs argv, sends sig as soon as its temporary exists; returns the
    exit status and the temporary's name."""
    proc = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    tmp = _wait_for_temporary(proc, folder, stem)
    if tmp is not None and proc.poll() is None:
        proc.send_signal(sig)
    proc.communicate(timeout=120)
    return proc.returncode, tmp


@pytest.fixture(scope="module")
def ortho_scene(tmp_path_factory):
    """A 3000 x 3000 RPC scene and its DEM (bench_ortho_make): about two
    seconds of gdal_ortho on the CPU, time enough to be interrupted."""
    folder = tmp_path_factory.mktemp("scene")
    subprocess.run([str(BIN / "bench_ortho_make"), str(folder), "3000", "3000", "3"],
                   check=True, capture_output=True)
    return folder


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_ortho_interrupted_leaves_nothing(ortho_scene, tmp_path, sig):
    out = tmp_path / "out"
    out.mkdir()
    (out / "ortho.tif").write_bytes(b"an older output, kept as it is")
    argv = [str(BIN / "gdal_ortho"), "-q", "-device", "cpu", str(ortho_scene / "scene.vrt"),
            "-dem", str(ortho_scene / "dem.vrt"), str(out / "ortho.tif")]
    rc, tmp = _interrupted(argv, out, "ortho", sig)
    assert tmp is not None, "the run ended before its temporary appeared"
    assert rc == -sig, rc
    assert sorted(p.name for p in out.iterdir()) == ["ortho.tif"]
    assert (out / "ortho.tif").read_bytes() == b"an older output, kept as it is"


@pytest.fixture(scope="module")
def big_slc(tmp_path_factory):
    """A 3000 x 3000 CFloat32 raster (gg_make_input): a second or more of
    gdal_rotate on the CPU."""
    path = tmp_path_factory.mktemp("slc") / "slc.tif"
    subprocess.run([str(BIN / "gg_make_input"), "-size", "3000x3000", "-type", "CFloat32",
                    "-seed", "5", str(path)], check=True, capture_output=True)
    return path


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_utility_interrupted_leaves_nothing(big_slc, tmp_path, sig):
    """gg_app's utilities: the same for a block-by-block written output, new
    (no output before) and replacing an existing one."""
    for existing in (False, True):
        out = tmp_path / f"out{int(existing)}"
        out.mkdir()
        if existing:
            (out / "rot.tif").write_bytes(b"an older output")
        argv = [str(BIN / "gdal_rotate"), "-q", "-device", "cpu", "-angle", "10", str(big_slc),
                str(out / "rot.tif")]
        rc, tmp = _interrupted(argv, out, "rot", sig)
        assert tmp is not None, "the run ended before its temporary appeared"
        assert rc == -sig, rc
        assert sorted(p.name for p in out.iterdir()) == (["rot.tif"] if existing else [])
        if existing:
            assert (out / "rot.tif").read_bytes() == b"an older output"
