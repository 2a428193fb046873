"""Every C utility, and the GG driver inside GDAL's gdal_translate, under
valgrind memcheck (CPU backend), on success and on the error paths that
fault injection opens (GG_FAULT): no invalid read or write, no use of
uninitialised memory, no definite leak; no suppression file.  (Leaks
reported as "possibly lost" are libgomp's thread stacks, kept by design.)
gdal_quicklook is a Python program: its C side is the GG driver and
libgeogpu, checked here through the other utilities."""
import shutil

import numpy as np
import pytest

import reliability_data as rd

VALGRIND = shutil.which("valgrind")
pytestmark = pytest.mark.skipif(VALGRIND is None, reason="valgrind not installed (scripts/setup.sh installs it)")

BASE = [None, "alloc:2", "read:2", "write:1"]
# id -> (program, argv with {placeholders} ({out}: the output, appended
# unless named), the GG_FAULT specs to run it under)
UTILITIES = {
    "gdal_multilook": ("gdal_multilook", ["-looks", 2, 2, "{a}"], BASE),
    "gdal_rotate": ("gdal_rotate", ["-angle", 30, "{a}"], BASE),
    "gdal_radnorm": ("gdal_radnorm", ["-coef", 35, "-levels", 16, "{a}"], BASE),
    "gdal_insar": ("gdal_insar", ["-window", 3, 3, "{za}", "{zb}"], BASE),
    "gdal_ptsel": ("gdal_ptsel", ["-window", 5, "-offsets", "-mask", "{stack}"], BASE),
    "gdal_xcorr": ("gdal_xcorr", [*rd.XCORR_OPTS, "-table", "{outdir}/t.csv", "{p}", "{s}"],
                   [None, "fft:3", "read:2", "write:1"]),
    "gdal_xcorr-gmtsar": ("gdal_xcorr", ["-mode", "gmtsar", "{mprm}", "{aprm}", *rd.GMTSAR_OPTS,
                                         "-o", "{out}"], [None, "alloc:2", "read:1", "write:1"]),
    "gdal_coreg": ("gdal_coreg", [*rd.XCORR_OPTS, "-fit", "{outdir}/fit.json", "{p}", "{s}"],
                   [None, "fft:2", "write:1"]),
    "gdal_ortho": ("gdal_ortho", ["{scene}"], [None, "alloc:2", "launch:1", "read:1", "write:1"]),
    "gdal_fmcw": ("gdal_fmcw", ["{nc}"], [None, "alloc:2", "read:2", "write:1"]),
    "gdal_fmcw-grid": ("gdal_fmcw", ["-products", "DBZ,VEL", "-grid", 100, "{nc}"], [None, "read:2"]),
    # the GG driver as a GDAL plugin, through GDAL's own gdal_translate: a
    # GG: connection string and a .ggvrt file (GG_DEVICE picks the device)
    "gdal_translate-gg": ("gdal_translate", ["GG:coherence:window=3x3:products=coherence:{za},{zb}"],
                          [None, "alloc:2", "read:2"]),
    "gdal_translate-ggvrt": ("gdal_translate", ["{ggvrt}"], [None, "launch:1"]),
}
CASES = [(u, f) for u in UTILITIES for f in UTILITIES[u][2]]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from conftest import GG, random_complex, random_real
    rng = np.random.default_rng(77)
    d = tmp_path_factory.mktemp("valgrind_in")
    GG.write(d / "a.tif", random_real(rng, 33, 41, nodata=-9999.0), nodata=-9999.0)
    GG.write(d / "za.tif", random_complex(rng, 33, 41))
    GG.write(d / "zb.tif", random_complex(rng, 33, 41))
    GG.write(d / "stack.tif", [random_complex(rng, 33, 41) for _ in range(4)])
    rd.write_slc_pair(d, rng)
    rd.write_gmtsar_pair(d, rng)
    rd.write_rpc_scene(d / "scene.tif", rng)
    GG.run("gdal_fmcw", "-simulate", *rd.FMCW_SMALL, "-q", d / "raw.nc")
    GG.run("gdal_radnorm", "-q", "-device", "cpu", "-coef", 35, d / "a.tif", d / "radnorm.ggvrt")
    return {"ggvrt": d / "radnorm.ggvrt",
            "a": d / "a.tif", "za": d / "za.tif", "zb": d / "zb.tif", "stack": d / "stack.tif",
            "p": d / "p.tif", "s": d / "s.tif", "mprm": d / "master.PRM", "aprm": d / "aligned.PRM",
            "scene": d / "scene.tif", "nc": d / "raw.nc"}


@pytest.mark.parametrize("utility,fault", CASES)
def test_memcheck(gg, inputs, tmp_path, utility, fault):
    out = tmp_path / "out"
    out.mkdir()
    prog, args, _ = UTILITIES[utility]
    o = out / ("freq.dat" if utility == "gdal_xcorr-gmtsar" else "o.tif")
    subst = {**{k: str(v) for k, v in inputs.items()}, "out": str(o), "outdir": str(out)}
    argv = [str(a).format(**subst) for a in args]
    if "{out}" not in args:
        argv.append(str(o))
    mode = argv[:2] if argv[:2] == ["-mode", "gmtsar"] else []  # must come first
    if prog == "gdal_translate":  # GDAL's program: the GG driver reads GG_DEVICE
        exe, dev = shutil.which(prog), ["--config", "GG_DEVICE", "cpu"]
    else:
        exe, dev = gg.build / "bin" / prog, ["-device", "cpu"]
    p = gg.run(VALGRIND, "-q", "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite", "--show-possibly-lost=no",
               exe, *mode, "-q", *dev, *argv[len(mode):],
               check=False, env={"GG_FAULT": fault} if fault else {}, timeout=600)
    assert p.returncode != 99 and "Invalid " not in p.stderr and "uninitialised" not in p.stderr, (
        f"valgrind found errors ({utility}, GG_FAULT={fault}):\n{p.stderr[-4000:]}")
    if fault is None:
        assert p.returncode == 0, p.stderr
    else:
        assert p.returncode in (0, 1), p.stderr
