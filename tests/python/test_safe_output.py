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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_warp_interrupted_leaves_nothing(ortho_scene, tmp_path, sig):
    """gdal_warp (here its RPC path over the DEM) keeps the old output it was
    told to -overwrite."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "warped.tif").write_bytes(b"an older output, kept as it is")
    argv = [str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-overwrite", "-rpc", "-to",
            f"RPC_DEM={ortho_scene / 'dem.vrt'}", str(ortho_scene / "scene.vrt"),
            str(out / "warped.tif")]
    rc, tmp = _interrupted(argv, out, "warped", sig)
    assert tmp is not None, "the run ended before its temporary appeared"
    assert rc == -sig, rc
    assert sorted(p.name for p in out.iterdir()) == ["warped.tif"]
    assert (out / "warped.tif").read_bytes() == b"an older output, kept as it is"


@pytest.fixture(scope="module")
def fmcw_raw(tmp_path_factory):
    """A simulated raw FMCW file (gdal_fmcw -simulate, a storm): 144 sectors."""
    path = tmp_path_factory.mktemp("fmcw") / "storm.nc"
    subprocess.run([str(BIN / "gdal_fmcw"), "-simulate", "-q", "-sectors", "144", str(path)],
                   check=True, capture_output=True)
    return path


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_fmcw_interrupted_leaves_nothing(fmcw_raw, tmp_path, sig):
    """gdal_fmcw, its products (GeoTIFF and CfRadial) and -simulate (its
    netCDF went to a temporary of its own, left behind by a signal)."""
    runs = {"products.tif": [str(BIN / "gdal_fmcw"), "-q", "-device", "cpu", str(fmcw_raw)],
            "products.nc": [str(BIN / "gdal_fmcw"), "-q", "-device", "cpu", "-of", "CfRadial",
                            str(fmcw_raw)],
            "sim.nc": [str(BIN / "gdal_fmcw"), "-simulate", "-q", "-sectors", "144"]}
    for name, argv in runs.items():
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        (out / name).write_bytes(b"an older output")
        rc, tmp = _interrupted(argv + [str(out / name)], out, name.split(".")[0], sig)
        assert tmp is not None, f"{name}: the run ended before its temporary appeared"
        assert rc == -sig, (name, rc)
        assert sorted(p.name for p in out.iterdir()) == [name]
        assert (out / name).read_bytes() == b"an older output"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_distributed_batch_interrupted_leaves_nothing(ortho_scene, tmp_path, sig):
    """python3 -m geogpu.distributed on its own local cluster: the signal while
    a worker writes a scene cancels the batch, closes the cluster and removes
    the task folders with their temporaries; one ERROR line, the process ends
    as the signal ends it, and a re-run completes the batch."""
    import os
    import sys

    from conftest import BUILD, REPO
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "scene.raw").symlink_to(ortho_scene / "scene.raw")
    scenes = [tmp_path / f"s{k}.vrt" for k in range(3)]
    for s in scenes:
        s.write_text((ortho_scene / "scene.vrt").read_text())
    env = dict(os.environ, PYTHONPATH=str(REPO / "gdal_plugins" / "python"),
               GG_LIBRARY=str(BUILD / "lib"))
    argv = [sys.executable, "-m", "geogpu.distributed", "ortho", "--devices", "cpu,cpu",
            "--threads", "1", "-q", "-outdir", str(out), *map(str, scenes), "--", "-dem",
            str(ortho_scene / "dem.vrt")]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    end = time.monotonic() + 120
    seen = []
    while not seen and proc.poll() is None and time.monotonic() < end:
        seen = [p for p in out.rglob(".*.tmp*")]
        time.sleep(0.01)
    assert seen, "the batch ended before a temporary appeared"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -sig, err
    errors = [ln for ln in err.splitlines() if ln.startswith("ERROR")]
    assert errors == [f"ERROR 1: geogpu.distributed: interrupted ({sig.name}); unfinished "
                      "outputs removed"], err
    assert "Traceback" not in err, err
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    finished = [p for p in left if p.endswith(".tif")]
    assert left == sorted([".geogpu"] + finished + [f".geogpu/{f}.done" for f in finished]), left
    rerun = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(p.name for p in out.glob("*.tif")) == ["s0.tif", "s1.tif", "s2.tif"]
