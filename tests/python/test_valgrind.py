"""Every utility under valgrind memcheck (CPU backend), on success and on
the error paths that fault injection opens (GG_FAULT): no invalid read or
write, no use of uninitialised memory, no definite leak.  (Leaks reported
as "possibly lost" are libgomp's thread stacks, kept by design.)"""
import shutil

import pytest

VALGRIND = shutil.which("valgrind")
pytestmark = pytest.mark.skipif(VALGRIND is None, reason="valgrind not installed (scripts/setup.sh installs it)")

UTILITIES = {
    "gdal_multilook": ["-looks", 2, 2, "{a}"],
    "gdal_rotate": ["-angle", 30, "{a}"],
    "gdal_radnorm": ["-coef", 35, "-levels", 16, "{a}"],
    "gdal_insar": ["-window", 3, 3, "{za}", "{zb}"],
    "gdal_ptsel": ["-window", 5, "-offsets", "-mask", "{stack}"],
}


@pytest.fixture
def inputs(gg, make, rng, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    gg.write(d / "a.tif", make.real(rng, 33, 41, nodata=-9999.0), nodata=-9999.0)
    gg.write(d / "za.tif", make.complex(rng, 33, 41))
    gg.write(d / "zb.tif", make.complex(rng, 33, 41))
    gg.write(d / "stack.tif", [make.complex(rng, 33, 41) for _ in range(4)])
    return {k: str(d / f"{k}.tif") for k in ("a", "za", "zb", "stack")}


@pytest.mark.parametrize("fault", [None, "alloc:2", "read:2", "write:1"])
@pytest.mark.parametrize("utility", UTILITIES)
def test_memcheck(gg, inputs, tmp_path, utility, fault):
    out = tmp_path / "out"
    out.mkdir()
    args = [str(a).format(**inputs) for a in UTILITIES[utility]]
    p = gg.run(VALGRIND, "-q", "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite", "--show-possibly-lost=no",
               gg.build / "bin" / utility, "-q", "-device", "cpu", *args, out / "o.tif",
               check=False, env={"GG_FAULT": fault} if fault else {}, timeout=600)
    assert p.returncode != 99 and "Invalid " not in p.stderr and "uninitialised" not in p.stderr, (
        f"valgrind found errors ({utility}, GG_FAULT={fault}):\n{p.stderr[-4000:]}")
    if fault is None:
        assert p.returncode == 0, p.stderr
    else:
        assert p.returncode in (0, 1), p.stderr
