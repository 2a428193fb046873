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
    "gdal_coreg": ["-window", 16, 16, "-search", 4, 4, "-skip", 8, 8, "{c1}", "{c2}"],
    "gdal_ortho": ["{o}"],
    "gdal_fmcw": ["{nc}"],
    # GMTSAR mode (-mode first): location rows in chunks of what fits the memory
    "gdal_xcorr-gmtsar": ["-mode", "gmtsar", "{m}", "{a}", "-nx", 4, "-ny", 12, "-xsearch", 8, "-ysearch", 8,
                          "-o", "{out}"],
}
# the budget: far below what the whole job needs, above one block row
BUDGET = {"gdal_xcorr": "8M", "gdal_coreg": "8M", "gdal_ortho": "1M", "gdal_fmcw": "1M",
          "gdal_xcorr-gmtsar": "64K"}


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
    res["m"], res["a"] = map(str, rd.write_gmtsar_pair(d, rng, 192, 160))
    return res


def _outputs(folder):
    res = {}
    for p in sorted(folder.iterdir()):
        if p.suffix == ".dat":  # GMTSAR's text table
            res[p.name] = [np.frombuffer(p.read_bytes(), np.uint8)]
            continue
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
        args = [str(a).format(**inputs, out=out / "freq.dat") for a in UTILITIES[utility]]
        mode = args[:2] if args[:2] == ["-mode", "gmtsar"] else []  # must come first
        dst = [] if mode else [out / "o.tif"]
        gg.run(utility.split("-")[0], *mode, "-q", "-device", device, *args[len(mode):], *dst,
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


def _peak_rss_mib(gg, src, out, prog="gdal_multilook", opts=("-looks", "4", "4")):
    exe = shutil.which(prog, path=str(gg.build / "bin"))
    srcs = [str(x) for x in src] if isinstance(src, (list, tuple)) else [str(src)]
    p = subprocess.run([sys.executable, "-c", _PEAK, exe, "-q", "-device", "cpu", "--config",
                        "GDAL_CACHEMAX", "32", *opts, *srcs, str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return int(p.stdout.split()[-1]) / 1024


def test_peak_host_memory_bounded(gg, tmp_path):
    """The peak resident memory of a run does not grow with the input: the
    pipeline holds at most three strips (about 64 MiB of source each: one
    read, one computed, one written), so once an input has more strips than
    that, an input twice as tall (512 MiB against 256 MiB; GDAL's block
    cache at 32 MiB through --config) costs at most 24 MiB more."""
    peaks = {}
    W = 4096
    row = np.linspace(1.0, 2.0, W, dtype=np.float32)
    for H in (16384, 32768):
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
    assert peaks[32768] - peaks[16384] < 24, f"peak RSS {peaks} MiB: grows with the input"


def test_peak_host_memory_bounded_stack_op(gg, tmp_path):
    """The same for a stack op with several inputs and per-band outputs
    (gdal_insar: two CFloat32 SLCs, three product files): inputs 4x taller
    (2 x 256 MiB against 2 x 64 MiB) cost at most 48 MiB more.  (Its peak
    levels off near 275 MiB from ~4096 rows of 1024 on: strips of the three
    products, GDAL's block cache; it varies by ~20 MiB from run to run.)"""
    peaks = {}
    W = 1024
    x = np.linspace(0.0, 40.0, W)
    for H in (8192, 32768):
        srcs = [tmp_path / f"s{k}_{H}.tif" for k in (1, 2)]
        for k, src in enumerate(srcs):
            ds = gdal.GetDriverByName("GTiff").Create(str(src), W, H, 1, gdal.GDT_CFloat32, ["TILED=YES"])
            for y in range(0, H, 1024):
                yy = np.arange(y, y + 1024)[:, None] / H
                ds.GetRasterBand(1).WriteArray(((1 + yy) * np.exp(1j * (x[None, :] * (1 + k * 0.01) + yy)))
                                               .astype(np.complex64), 0, y)
            ds = None
        peaks[H] = _peak_rss_mib(gg, srcs, tmp_path / f"o{H}.tif", "gdal_insar", ("-window", "3", "3"))
        out = gdal.Open(str(tmp_path / f"o{H}_coherence.tif"))
        assert (out.RasterXSize, out.RasterYSize) == (W, H)
        out = None
        for f in srcs + sorted(tmp_path.glob(f"o{H}_*.tif")):
            f.unlink()
    assert peaks[32768] - peaks[8192] < 48, f"peak RSS {peaks} MiB: grows with the input"
