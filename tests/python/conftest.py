"""End-to-end tests of geogpu through GDAL: the GG driver (gdal_GeoGPU.so) and
the gdal_multilook / gdal_rotate / gdal_radnorm utilities.

Run with Debian's interpreter (python3-gdal):

    /usr/bin/python3 -m pytest tests/python

The build directory is $GG_BUILD_DIR, else <repo>/build.  Its lib/ holds the
plugin and libgeogpu (+ backends), its bin/ the utilities.
"""
import math
import os
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
LIB = BUILD / "lib"
BIN = BUILD / "bin"
DATA = REPO / "autotest_data"

# GDAL looks for plugins when the driver manager starts, so this must come
# before the first `from osgeo import gdal`.
os.environ["GDAL_DRIVER_PATH"] = str(LIB)
os.environ["PATH"] = str(BIN) + os.pathsep + os.environ.get("PATH", "")
# Tests pick devices explicitly; an inherited GG_DEVICE would blur that.
os.environ.pop("GG_DEVICE", None)
os.environ.pop("GG_DEVICE_MEMORY", None)

from osgeo import gdal  # noqa: E402

gdal.UseExceptions()

import reference  # noqa: E402

UTILITIES = ("gdal_multilook", "gdal_rotate", "gdal_radnorm")
PROGRESS = "0...10...20...30...40...50...60...70...80...90...100 - done."

# ------------------------------------------------------------------ devices


def _opencl_absence():
    """Why OpenCL tests cannot run here, or None when they must run.  Only a
    real absence counts: the backend library not built, or no OpenCL ICD
    installed.  A backend that is present but fails is a test failure."""
    if not (LIB / "libgeogpu_opencl.so").exists():
        return f"OpenCL backend not built ({LIB / 'libgeogpu_opencl.so'} absent)"
    vendors = Path(os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors"))
    if vendors.is_dir() and not any(vendors.glob("*.icd")):
        return f"no OpenCL ICD installed ({vendors} has no *.icd)"
    return None


OPENCL_ABSENT = _opencl_absence()
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("opencl", id="opencl", marks=pytest.mark.opencl)]


def pytest_configure(config):
    config.addinivalue_line("markers", "opencl: needs the OpenCL backend (skipped only when it is absent)")


def pytest_collection_modifyitems(config, items):
    if OPENCL_ABSENT is None:
        return
    skip = pytest.mark.skip(reason=OPENCL_ABSENT)
    for item in items:
        if item.get_closest_marker("opencl"):
            item.add_marker(skip)


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# ------------------------------------------------------------ product check

def _check_product():
    problems = []
    if not (LIB / "gdal_GeoGPU.so").exists():
        problems.append(f"plugin {LIB / 'gdal_GeoGPU.so'} not built")
    for u in UTILITIES:
        if not (BIN / u).exists():
            problems.append(f"utility {BIN / u} not built")
    if gdal.GetDriverByName("GG") is None:
        problems.append(f"GDAL driver GG not registered (GDAL_DRIVER_PATH={LIB})")
    return "; ".join(problems) or None


@pytest.fixture(scope="session")
def _product_problem():
    return _check_product()


def _autotest_files():
    return {str(p.relative_to(DATA)): p.stat().st_size for p in DATA.rglob("*") if p.is_file()}


@pytest.fixture(scope="session", autouse=True)
def _autotest_data_untouched():
    """Inputs are never modified: no test may write into autotest_data/
    (e.g. a .aux.xml that GDAL's PAM writes next to an input whose
    statistics were computed).  Copy the data to tmp_path first."""
    before = _autotest_files()
    yield
    after = _autotest_files()
    added = sorted(set(after) - set(before))
    changed = sorted(k for k in before if k in after and after[k] != before[k])
    assert not added and not changed, (
        f"tests wrote into autotest_data/: added {added}, changed {changed}")


@pytest.fixture(autouse=True)
def _require_product(_product_problem):
    """The product must be built: its absence fails tests (it does not skip them)."""
    if _product_problem:
        pytest.fail(f"geogpu is not built in {BUILD}: {_product_problem} "
                    "(build it, or set GG_BUILD_DIR)", pytrace=False)


# -------------------------------------------------------- error bookkeeping

_ERRORS = {}


def record_error(op, dev, err):
    """Keeps the largest measured error per (op, device) for the summary."""
    key = (op, dev)
    _ERRORS[key] = max(_ERRORS.get(key, 0.0), float(err))


def pytest_terminal_summary(terminalreporter):
    if not _ERRORS:
        return
    tr = terminalreporter
    tr.section("geogpu: largest relative L2 errors against the float64 references")
    for (op, dev), err in sorted(_ERRORS.items()):
        tol = reference.TOL.get(op.split("/")[0], float("nan"))
        tr.write_line(f"  {op:28s} {dev:8s} {err:.3e}   (tolerance {tol:g})")


# ----------------------------------------------------------------- helpers


class GG:
    """Helpers shared by the tests (a fixture, so test files stay standalone)."""

    build = BUILD
    data = DATA
    progress = PROGRESS
    record_error = staticmethod(record_error)

    # ---- processes
    @staticmethod
    def run(*args, check=True, env=None, cwd=None, timeout=120):
        """Runs a command (utilities found on <build>/bin first)."""
        args = [str(a) for a in args]
        e = dict(os.environ)
        if env:
            e.update(env)
        exe = shutil.which(args[0], path=e["PATH"])
        assert exe, f"{args[0]} not found on PATH"
        p = subprocess.run([exe] + args[1:], capture_output=True, text=True, env=e,
                           cwd=cwd, timeout=timeout)
        if check:
            if p.returncode != 0:
                raise AssertionError(
                    f"{' '.join(args)} failed with exit code {p.returncode}\n"
                    f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
            errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
            assert not errors, f"{' '.join(args)} succeeded but reported errors:\n{p.stderr}"
        return p

    # ---- rasters
    @staticmethod
    def write(path, arr, nodata=None, gt=None, fmt="GTiff"):
        """Writes a 2-D float32/complex64 array (or a list of them: bands)."""
        bands = arr if isinstance(arr, (list, tuple)) else [arr]
        a0 = np.asarray(bands[0])
        dt = gdal.GDT_CFloat32 if np.iscomplexobj(a0) else gdal.GDT_Float32
        H, W = a0.shape
        ds = gdal.GetDriverByName(fmt).Create(str(path), W, H, len(bands), dt)
        ds.SetGeoTransform(gt if gt is not None else (500000.0, 10.0, 0.0, 4000000.0, 0.0, -10.0))
        for i, b in enumerate(bands):
            band = ds.GetRasterBand(i + 1)
            if nodata is not None:
                band.SetNoDataValue(nodata)
            band.WriteArray(np.asarray(b))
        ds.FlushCache()
        ds = None
        return Path(path)

    @staticmethod
    def read(path, band=1):
        """(array, nodata, geotransform, GDAL data type name) of a raster."""
        ds = gdal.Open(str(path))
        b = ds.GetRasterBand(band)
        a = b.ReadAsArray()
        nd = b.GetNoDataValue()
        gt = ds.GetGeoTransform()
        dt = gdal.GetDataTypeName(b.DataType)
        ds = None
        return a, nd, gt, dt

    @staticmethod
    def snapshot(folder):
        """Name -> (bytes, mtime_ns) of every file below folder."""
        folder = Path(folder)
        return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
                for p in sorted(folder.rglob("*")) if p.is_file()}

    @staticmethod
    def same_bits(a, b):
        """Bit-identical arrays (NaN payloads included)."""
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()

    @staticmethod
    def check_nodata_value(got, expected, what=""):
        """The output band's nodata equals the expected one (NaN: the band
        may declare NaN, or nothing, since NaN pixels are invalid anyway)."""
        if math.isnan(expected):
            assert got is None or math.isnan(got), f"{what}: band nodata {got}, expected NaN"
        else:
            assert got is not None and got == expected, f"{what}: band nodata {got}, expected {expected}"


@pytest.fixture(scope="session")
def gg():
    return GG()


# ------------------------------------------------------------- test data


def random_real(rng, H=29, W=37, lo=0.5, hi=10.0, nan=0.04, nodata=None, nodata_frac=0.04):
    """Positive random float32 data (never all zero) with NaN and nodata
    sprinkled in."""
    a = rng.uniform(lo, hi, (H, W)).astype(np.float32)
    a[rng.random((H, W)) < nan] = np.nan
    if nodata is not None:
        a[rng.random((H, W)) < nodata_frac] = nodata
    assert np.nanmax(np.abs(a)) > 0
    return a


def random_complex(rng, H=29, W=37, nan=0.03, nodata=None, nodata_frac=0.03):
    """Random complex64 data with NaN/Inf parts and nodata real parts."""
    z = (rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))).astype(np.complex64)
    z.real[rng.random((H, W)) < nan] = np.nan
    z.imag[rng.random((H, W)) < nan] = np.inf
    if nodata is not None:
        z.real[rng.random((H, W)) < nodata_frac] = nodata
    return z


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name: reproducible, distinct per test."""
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


@pytest.fixture
def make():
    """Access to the data generators from the tests."""
    class M:
        real = staticmethod(random_real)
        complex = staticmethod(random_complex)
    return M
