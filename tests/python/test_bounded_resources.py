"""Bounded resources: with a device-memory budget far smaller than the input
(GG_DEVICE_MEMORY) every utility works through the block planner's blocks
and writes bit-identical outputs; on a large input the peak host memory
stays far below the input's size."""
import shutil
import subprocess
import sys

import numpy as np
import pytest
from osgeo import gdal

import reliability_data as rd

UTILITIES = {
    "gdal_multilook": ["-looks", 3, 2, "{r}"],
    "gdal_rotate": ["-angle", 25, "{r}"],
    "gdal_radnorm": ["-coef", 35, "{r}"],
    "gdal_insar": ["-window", 5, 5, "{c1}", "{c2}"],
    "gdal_ptsel": ["-window", 7, "-offsets", "{s}"],
    "gdal_xcorr": ["-window", 16, 16, "-search", 4, 4, "-skip", 8, 8, "{c1}", "{c2}"],
    "gdal_ortho": ["{o}"],
    "gdal_fmcw": ["{nc}"],
}
# the budget: far below what the whole job needs, above one block row
BUDGET = {"gdal_xcorr": "8M", "gdal_ortho": "1M", "gdal_fmcw": "1M"}


@pytest.fixture
def inputs(gg, make, rng, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    H, W = 150, 170
    gg.write(d / "r.tif", make.real(rng, H, W))
    base = make.complex(rng, H, W, nan=0)
    gg.write(d / "c1.tif", base)
    gg.write(d / "c2.tif", np.roll(base, (1, 2), axis=(0, 1)) + 0.3 * make.complex(rng, H, W, nan=0))
    gg.write(d / "s.tif", [make.complex(rng, H, W) for _ in range(5)])
    res = {k: str(d / f"{k}.tif") for k in ("r", "c1", "c2", "s")}
    # an RPC scene whose output (~400 x 330 Float32) is many 1M blocks
    res["o"] = str(rd.write_rpc_scene(d / "o.tif", rng, 400, 320))
    gg.run("gdal_fmcw", "-simulate", "-sectors", 36, "-sweeps", 64, "-samples", 512, "-gates", 256,
           "-q", d / "raw.nc")
    res["nc"] = str(d / "raw.nc")
    return res


def _outputs(folder):
    res = {}
    for p in sorted(folder.iterdir()):
        ds = gdal.Open(str(p))
        res[p.name] = [ds.GetRasterBand(i + 1).ReadAsArray() for i in range(ds.RasterCount)]
        ds = None
    return res


@pytest.mark.parametrize("utility", UTILITIES)
def test_small_device_memory_same_output(gg, inputs, tmp_path, device, utility):
    outs = {}
    small = BUDGET.get(utility, "256K")
    for budget in (None, small):
        out = tmp_path / f"out_{budget}"
        out.mkdir()
        args = [str(a).format(**inputs) for a in UTILITIES[utility]]
        gg.run(utility, "-q", "-device", device, *args, out / "o.tif",
               env={"GG_DEVICE_MEMORY": budget} if budget else None)
        outs[budget] = _outputs(out)
    a, b = outs[None], outs[small]
    assert a.keys() == b.keys()
    for f in a:
        assert all(gg.same_bits(x, y) for x, y in zip(a[f], b[f])), f"{utility} {f}: blocked run differs"


# Measures a command's peak RSS from a small intermediate process: Linux
# records the peak of the address space a process leaves at exec, so a
# child spawned straight from this (large) test process would report this
# process's peak as its own.
_PEAK = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _peak_rss_mib(gg, src, out):
    exe = shutil.which("gdal_multilook", path=str(gg.build / "bin"))
    p = subprocess.run([sys.executable, "-c", _PEAK, exe, "-q", "-device", "cpu", "--config",
                        "GDAL_CACHEMAX", "32", "-looks", "4", "4", str(src), str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return int(p.stdout.split()[-1]) / 1024


def test_peak_host_memory_bounded(gg, tmp_path):
    """The peak resident memory of a run does not grow with the input: an
    input 4x taller (256 MiB against 64 MiB; GDAL's block cache at 32 MiB
    through --config) costs at most 24 MiB more."""
    peaks = {}
    W = 4096
    row = np.linspace(1.0, 2.0, W, dtype=np.float32)
    for H in (4096, 16384):
        src = tmp_path / f"in{H}.tif"
        ds = gdal.GetDriverByName("GTiff").Create(str(src), W, H, 1, gdal.GDT_Float32, ["TILED=YES"])
        for y in range(0, H, 1024):
            ds.GetRasterBand(1).WriteArray(np.tile(row, (1024, 1)) * (1 + y / H), 0, y)
        ds = None
        peaks[H] = _peak_rss_mib(gg, src, tmp_path / f"o{H}.tif")
        out = gdal.Open(str(tmp_path / f"o{H}.tif"))
        assert (out.RasterXSize, out.RasterYSize) == (W // 4, H // 4)
        out = None
        src.unlink()
    assert peaks[16384] - peaks[4096] < 24, f"peak RSS {peaks} MiB: grows with the input"
