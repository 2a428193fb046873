"""scripts/demo.sh on the CPU with the existing build: every step runs, prints
its one line with a figure inside its bound, and writes its quicklooks; a
figure off its bound, or a failing utility, stops the demo naming the step."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import BUILD, REPO

STEPS = ("multilook", "rotate", "radnorm", "coreg", "insar", "warp", "ptsel", "ortho", "mrr2",
         "fmcw")
PNGS = ("slc_multilook", "amp_rotate", "amp_radnorm", "offsets", "coherence", "interferogram",
        "coherence_map", "ps_mask", "ps_tau_max", "ortho", "mrr2_ze", "ppi_dbz")


def _demo(out, device="cpu"):
    env = dict(os.environ, GG_SKIP_SETUP="1", GG_DEVICE=device, GG_DEMO_OUT=str(out),
               GG_BUILD_DIR=str(BUILD))
    return subprocess.run(["bash", str(REPO / "scripts" / "demo.sh")], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return out, _demo(out)


def test_demo_every_step(demo):
    out, r = demo
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("demo: ")]
    assert [ln.split()[1] for ln in lines[:-1]] == list(STEPS), r.stdout
    for ln in lines[:-1]:
        assert "[cpu " in ln and ln.rstrip().endswith(" ms]"), ln
    assert "every step passed" in lines[-1]


def test_demo_figures(demo):
    out, r = demo
    lines = {ln.split()[1]: ln for ln in r.stdout.splitlines() if ln.startswith("demo: ")}
    # the coregistration recovers the applied shift to a few hundredths of a pixel
    fit = json.loads((out / "coreg_fit.json").read_text())
    assert abs(fit["across"][0] - 0.35) < 0.05 and abs(fit["down"][0] + 0.45) < 0.05
    assert abs(fit["across"][1] - 2e-3) < 2e-4
    assert "100.00 % of" in lines["ortho"]          # gdal_ortho = gdalwarp on this scene
    assert "vs gdalwarp 0.0e+00" in lines["warp"]
    assert "max DBZ" in lines["fmcw"] and "max rain rate" in lines["mrr2"]


def test_demo_quicklooks(demo):
    out, _ = demo
    for name in PNGS:
        im = np.asarray(Image.open(out / f"{name}.png").convert("RGB"))
        assert im.shape[0] > 50 and im.shape[1] > 50, name
        assert len(np.unique(im.reshape(-1, 3), axis=0)) > 16, f"{name}.png is nearly blank"


def test_demo_figure_off_fails(demo):
    """The coregistration figure against a warp that was not applied."""
    out, _ = demo
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "demo_figure.py"), "coreg",
                        str(REPO / "autotest_data/winnipeg_slc/winnipeg_hh.slc"),
                        str(out / "coreg_fit.json"), "0.9", "0.002", "-0.45", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "figure off: fitted offsets expected within 0.1 px" in r.stderr


def test_demo_failing_step_named(tmp_path):
    r = _demo(tmp_path, device="cuda:99")
    assert r.returncode != 0
    assert 'step "multilook" FAILED' in r.stderr, r.stderr
    assert "demo: multilook" not in r.stdout
