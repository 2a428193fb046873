"""An input is never overwritten, however it is reached (issue 36): every
utility refuses, before writing anything, a destination or side output that
is a file an input reads -- named directly, through a GG: string, a .ggvrt,
a GDAL VRT (nested over a GG: string), a GMTSAR PRM and the SLC it names --
and an existing destination that is not a regular file.  Each refusal is
one ERROR line naming the file, a non-zero exit, the inputs' bytes as they
were and no new file."""
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from osgeo import gdal

from conftest import BIN, REPO

sys.path.insert(0, os.path.dirname(__file__))
from test_xcorr import speckle_pair, write_slc  # noqa: E402


def _digest(folder):
    """Every file under folder with its content hash (the state to keep)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(folder, argv, named):
    """Runs argv in folder; asserts the refusal: non-zero exit, one ERROR
    line naming `named`, and every file in folder unchanged, none added."""
    before = _digest(folder)
    env = dict(os.environ, PYTHONPATH=str(REPO / "gdal_plugins" / "python"))
    p = subprocess.run([str(a) for a in argv], cwd=folder, capture_output=True, text=True,
                       env=env, timeout=120)
    errors = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
    assert p.returncode != 0, p.stderr
    assert len(errors) == 1, p.stderr
    assert str(named) in errors[0], errors[0]
    assert _digest(folder) == before, "an input changed or a file was left"
    return errors[0]


def _write(path, array, dtype):
    ds = gdal.GetDriverByName("GTiff").Create(str(path), array.shape[1], array.shape[0], 1, dtype)
    ds.GetRasterBand(1).WriteArray(array)
    ds = None


@pytest.fixture
def d(tmp_path):
    rng = np.random.default_rng(36)
    _write(tmp_path / "real.tif", rng.random((64, 64)).astype("f4"), gdal.GDT_Float32)
    for name in ("c1", "c2"):
        z = (rng.standard_normal((64, 64)) + 1j * rng.standard_normal((64, 64))).astype("c8")
        _write(tmp_path / f"{name}.tif", z, gdal.GDT_CFloat32)
    return tmp_path


ML = [BIN / "gdal_multilook", "-q", "-device", "cpu", "-looks", 2, 2]


def test_plain_source_still_refused(d):
    msg = _refused(d, ML + ["real.tif", "real.tif"], "real.tif")
    assert "inputs are never overwritten" in msg


def test_gg_connection_string(d):
    msg = _refused(d, ML + [f"GG:rotate:angle=0:{d / 'real.tif'}", d / "real.tif"], "real.tif")
    assert "is read by the source 'GG:rotate" in msg


def test_ggvrt(d):
    subprocess.run([BIN / "gdal_rotate", "-q", "-of", "GGVRT", "-angle", "0", "real.tif",
                    "r.ggvrt"], cwd=d, check=True)
    msg = _refused(d, ML + ["r.ggvrt", "real.tif"], "real.tif")
    assert "source 'r.ggvrt'" in msg


def test_gdal_vrt(d):
    gdal.Translate(str(d / "v.vrt"), str(d / "real.tif"), format="VRT")
    _refused(d, ML + ["v.vrt", "real.tif"], "real.tif")


def test_nested_vrt_over_gg_string(d):
    gdal.Translate(str(d / "n.vrt"), f"GG:rotate:angle=0:{d / 'real.tif'}", format="VRT")
    gdal.Translate(str(d / "nn.vrt"), str(d / "n.vrt"), format="VRT")
    for vrt in ("n.vrt", "nn.vrt"):
        msg = _refused(d, ML + [vrt, "real.tif"], "real.tif")
        assert f"source '{vrt}'" in msg
    # the same source to a new destination still works
    subprocess.run([str(a) for a in ML + ["nn.vrt", "ok.tif"]], cwd=d, check=True)
    assert (d / "ok.tif").exists()


def test_gg_dataset_lists_its_inputs(d):
    """The GG driver's datasets report the files their inputs read."""
    ds = gdal.Open(f"GG:multilook:looks=2x2:GG:rotate:angle=0:{d / 'real.tif'}")
    assert str(d / "real.tif") in ds.GetFileList()


def test_insar_band_file_is_the_primary(d):
    (d / "o_coherence.tif").write_bytes((d / "c1.tif").read_bytes())
    msg = _refused(d, [BIN / "gdal_insar", "-q", "-device", "cpu", "o_coherence.tif", "c2.tif",
                       "o.tif"], "o_coherence.tif")
    assert "band file" in msg


def test_ptsel_mask_and_filter_band_files(d):
    (d / "o_ps_mask.tif").write_bytes((d / "c1.tif").read_bytes())
    _refused(d, [BIN / "gdal_ptsel", "-q", "-device", "cpu", "-mask", "-window", 5,
                 "o_ps_mask.tif", "c2.tif", "o.tif"], "o_ps_mask.tif")
    (d / "f").mkdir()
    (d / "f" / "o_filtered_1.tif").write_bytes((d / "c1.tif").read_bytes())
    _refused(d, [BIN / "gdal_ptsel", "-q", "-device", "cpu", "-window", 5, "-filter", "f",
                 "f/o_filtered_1.tif", "c2.tif", "o.tif"], "o_filtered_1.tif")


CO = [BIN / "gdal_coreg", "-q", "-device", "cpu", "c1.tif", "c2.tif"]


@pytest.mark.parametrize("args, named, words", [
    (["out.tif", "-fit", "c1.tif"], "c1.tif", "read by the source 'c1.tif'"),
    (["out.tif", "-prm", "c2.tif"], "c2.tif", "read by the source 'c2.tif'"),
    (["c2.tif"], "c2.tif", "the destination 'c2.tif' is read by"),
    (["out.tif", "-fit", "out.tif"], "out.tif", "is also the destination"),
    (["out.tif", "-fit", "x.txt", "-prm", "./x.txt"], "x.txt", "is also the -fit file"),
], ids=["fit-input", "prm-input", "dst-input", "fit-dst-new", "fit-prm"])
def test_coreg_side_outputs(d, args, named, words):
    msg = _refused(d, CO + args, named)
    assert words in msg


def test_coreg_fit_is_an_existing_destination(d):
    (d / "out.tif").write_bytes((d / "c1.tif").read_bytes())
    msg = _refused(d, CO + ["out.tif", "-fit", "out.tif"], "out.tif")
    assert "is also the destination" in msg


@pytest.fixture
def gm(tmp_path):
    s1, s2 = speckle_pair(128, 160, 1.0, 1.0, 0.8)
    write_slc(tmp_path, "master", s1)
    write_slc(tmp_path, "aligned", s2)
    return tmp_path


@pytest.mark.parametrize("out, source", [("master.SLC", "master.PRM"), ("aligned.SLC", "aligned.PRM"),
                                         ("master.PRM", "master.PRM"), ("aligned.PRM", "aligned.PRM")])
def test_xcorr_gmtsar_output_is_an_input(gm, out, source):
    msg = _refused(gm, [BIN / "gdal_xcorr", "-mode", "gmtsar", "master.PRM", "aligned.PRM",
                        "-nx", 2, "-ny", 2, "-device", "cpu", "-o", out], out)
    assert f"read by the source '{source}'" in msg


def test_quicklook_same_file(d):
    (d / "q.png").write_bytes((d / "real.tif").read_bytes())
    msg = _refused(d, [sys.executable, "-m", "geogpu.quicklook", "q.png", "q.png"], "q.png")
    assert "inputs are never overwritten" in msg


@pytest.mark.parametrize("dst", ["/dev/null", "/dev/full", "fifo", "folder"])
def test_destination_not_a_regular_file(d, dst):
    if dst.startswith("/dev/") and os.geteuid() != 0:
        pytest.skip("a device is replaced only when the run may unlink it (root)")
    if dst == "fifo":
        os.mkfifo(d / "fifo")
    elif dst == "folder":
        (d / "folder").mkdir()
    target = dst if dst.startswith("/") else str(d / dst)
    msg = _refused(d, ML + ["real.tif", target], target)
    assert "is not a regular file" in msg
    assert os.path.exists(target) and not os.path.isfile(target)
    if dst == "/dev/null":
        assert not os.path.isfile("/dev/null")


def test_xcorr_gmtsar_and_quicklook_refuse_a_device(gm):
    if os.geteuid() != 0:
        pytest.skip("a device is replaced only when the run may unlink it (root)")
    _refused(gm, [BIN / "gdal_xcorr", "-mode", "gmtsar", "master.PRM", "aligned.PRM",
                  "-nx", 2, "-ny", 2, "-device", "cpu", "-o", "/dev/null"], "/dev/null")


def test_ortho_destination_read_by_a_scene_or_the_dem(tmp_path):
    """gdal_ortho: a destination that is the raw file behind the scene's VRT,
    or the DEM, is refused before the scene runs."""
    subprocess.run([str(a) for a in (BIN / "bench_ortho_make", tmp_path, 96, 80)], check=True,
                   capture_output=True)
    raw = next(p.name for p in tmp_path.glob("scene*") if p.suffix != ".vrt")
    orth = [BIN / "gdal_ortho", "-q", "-device", "cpu", "scene.vrt", "-dem", "dem.vrt"]
    msg = _refused(tmp_path, orth + [raw], raw)
    assert "source 'scene.vrt'" in msg and "inputs are never overwritten" in msg
    _refused(tmp_path, orth + ["dem.vrt"], "dem.vrt")
