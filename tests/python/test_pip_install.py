"""`pip install .` (pyproject.toml, scikit-build-core) into a venv of a Python
that is not Debian's: the wheel holds libgeogpu and the geogpu package, the
numpy API works there without osgeo and without LD_LIBRARY_PATH or GG_*
variables, and with GDAL's bindings built from their sdist the GDAL side (the
GG driver from the wheel's plugin, the wheel's utilities) gives the same
pixels.  A second build without GDAL's development files installs the library
and the numpy API alone.  No FFTW file is copied into the wheel.

The interpreter: $GG_TEST_PYTHON, else pyenv's python3, else a python3 on
PATH that is not Debian's, else one `uv python install` fetches.  Wheels
(numpy, scikit-build-core, GDAL built from its sdist) are cached in
<build>/pip_test/wheels and the two CMake trees in <build>/pip_test, so a
second run is offline and incremental; the first needs the package index.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reference as ref

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
WORK = BUILD / "pip_test"
WHEELS = WORK / "wheels"

# the venv's commands see nothing of the build tree, of Debian's Python or of geogpu
CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"),
             "LANG": "C.UTF-8"}
PROBE = ("import json, sys, sysconfig; print(json.dumps({'version': sys.version_info[:2], "
         "'purelib': sysconfig.get_paths()['purelib'], 'exe': sys.executable}))")


def _describe(python):
    """(version, purelib) of an interpreter, or None when it does not run."""
    try:
        p = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, env=CLEAN_ENV,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return json.loads(p.stdout) if p.returncode == 0 else None


def _not_debian(python):
    """A CPython >= 3.9 whose packages do not go to Debian's dist-packages."""
    d = _describe(python)
    return d is not None and tuple(d["version"]) >= (3, 9) and "dist-packages" not in d["purelib"]


def _candidates():
    env = os.environ.get("GG_TEST_PYTHON")
    if env:
        return [env]
    out = []
    if shutil.which("pyenv"):
        p = subprocess.run(["pyenv", "which", "python3"], capture_output=True, text=True)
        if p.returncode == 0:
            out.append(p.stdout.strip())
    for d in os.environ.get("PATH", "").split(os.pathsep):
        exe = Path(d) / "python3"
        if exe.is_file() and os.access(exe, os.X_OK):
            out.append(str(exe))
    return out


def _uv_python():
    """(a CPython fetched by uv, itself pip-installed under WORK, or None; why not)."""
    uv_dir = WORK / "uv"
    uv = uv_dir / "bin" / "uv"
    if not uv.exists():
        p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(uv_dir),
                            "uv"], capture_output=True, text=True, timeout=600)
        if p.returncode != 0 or not uv.exists():
            return None, "pip could not install uv: " + (p.stderr.strip().splitlines() or [""])[-1]
    env = dict(os.environ, PYTHONPATH=str(uv_dir), UV_PYTHON_INSTALL_DIR=str(WORK / "pythons"))
    p = subprocess.run([str(uv), "python", "install", "3.11"], capture_output=True, text=True,
                       env=env, timeout=900)
    if p.returncode != 0:
        return None, "uv python install 3.11: " + (p.stderr.strip().splitlines() or [""])[-1]
    p = subprocess.run([str(uv), "python", "find", "--managed-python", "3.11"], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0 or not p.stdout.strip():
        return None, "uv python find: " + (p.stderr.strip().splitlines() or [""])[-1]
    return p.stdout.strip(), None


def _python():
    for c in _candidates():
        if _not_debian(c):
            return c
    if os.environ.get("GG_TEST_PYTHON"):
        pytest.fail(f"GG_TEST_PYTHON={os.environ['GG_TEST_PYTHON']} is not a CPython >= 3.9 "
                    "with its own site-packages")
    c, why = _uv_python()
    if c and _not_debian(c):
        return c
    pytest.skip("no Python other than Debian's here (no pyenv, no other python3 on PATH, no "
                f"GG_TEST_PYTHON) and uv could not fetch one ({why or c})")


def _gdal_version():
    exe = shutil.which("gdal-config")
    if exe is None:
        return None
    return subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()


class Venv:
    def __init__(self, python, path):
        self.path = path
        r = subprocess.run([python, "-m", "venv", str(path)], capture_output=True, text=True,
                           env=CLEAN_ENV, timeout=300)
        assert r.returncode == 0, f"{python} -m venv: {r.stderr}"
        self.python = path / "bin" / "python"
        self.site = Path(_describe(str(self.python))["purelib"])

    def env(self, **extra):
        e = dict(CLEAN_ENV, VIRTUAL_ENV=str(self.path), PIP_CACHE_DIR=str(WORK / "pip-cache"),
                 PIP_FIND_LINKS=str(WHEELS), PIP_DISABLE_PIP_VERSION_CHECK="1",
                 PATH=f"{self.path / 'bin'}:{CLEAN_ENV['PATH']}")
        e.update(extra)
        return e

    def pip(self, *args, offline=True, timeout=900, **extra):
        env = self.env(PIP_NO_INDEX="1", **extra) if offline else self.env(**extra)
        return subprocess.run([str(self.python), "-m", "pip", *args], capture_output=True,
                              text=True, env=env, timeout=timeout)

    def run(self, script, *args, cwd):
        """Runs a Python script in the venv, from a folder outside the repository."""
        return subprocess.run([str(self.python), "-c", script, *map(str, args)],
                              capture_output=True, text=True, env=self.env(), cwd=cwd, timeout=600)


def _ok(r, what):
    assert r.returncode == 0, f"{what} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


WHEEL_REQUIREMENTS = ["numpy", "scikit-build-core>=0.10", "wheel", "setuptools<72", "Pillow"]


def _fill_wheels(v):
    """Wheels for this interpreter in WHEELS (from the index the first time):
    the build backend, numpy and Pillow."""
    tag = _tag(v)
    key = hashlib.sha1(" ".join(WHEEL_REQUIREMENTS).encode()).hexdigest()[:8]
    done = WHEELS / f".complete-{tag}-{key}"
    if not done.exists():
        WHEELS.mkdir(parents=True, exist_ok=True)
        r = v.pip("download", "-q", "-d", str(WHEELS), *WHEEL_REQUIREMENTS, offline=False)
        if r.returncode != 0:
            pytest.skip(f"no wheels cached in {WHEELS} for {tag} and the package index is not "
                        f"reachable: {r.stderr.strip().splitlines()[-1:]}")
        done.touch()


def _tag(v):
    return "cp%d%d" % tuple(_describe(str(v.python))["version"])


def _gdal_wheel(v, version):
    """GDAL's bindings for this interpreter, built once from their sdist
    against the system's GDAL and kept in WHEELS."""
    if list(WHEELS.glob(f"GDAL-{version}-{_tag(v)}-*.whl")):
        return
    sdists = WORK / "sdists"
    if not list(sdists.glob(f"[Gg][Dd][Aa][Ll]-{version}.tar.gz")):
        r = v.pip("download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(sdists),
                  f"GDAL=={version}", offline=False)
        if r.returncode != 0:
            pytest.skip(f"GDAL=={version}'s sdist is not cached in {sdists} and the package "
                        f"index is not reachable: {r.stderr.strip().splitlines()[-1:]}")
    # numpy first, or the bindings are built without gdal_array
    _ok(v.pip("install", "-q", "numpy", "wheel", "setuptools<72"), "pip install numpy")
    r = v.pip("wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(WHEELS),
              "--find-links", str(sdists), f"GDAL=={version}", timeout=1800)
    _ok(r, f"building GDAL=={version}'s bindings from the sdist")


def _install_geogpu(v, build_dir, *defines):
    # (--config-settings: -C is pip >= 23.1 only)
    args = ["install", "-q", str(REPO), "--config-settings", f"build-dir={build_dir}"]
    for d in defines:
        args += ["--config-settings", f"cmake.define.{d}"]
    # two compile jobs: the CI machine has two cores
    return _ok(v.pip(*args, timeout=3600, CMAKE_BUILD_PARALLEL_LEVEL="2"), "pip install .")


@pytest.fixture(scope="module")
def python():
    return _python()


@pytest.fixture(scope="module")
def venv_full(python, tmp_path_factory):
    """A venv with numpy and `pip install .` built with GDAL (when gdal-config is here)."""
    v = Venv(python, tmp_path_factory.mktemp("venv") / "full")
    _fill_wheels(v)
    _ok(v.pip("install", "-q", "numpy"), "pip install numpy")
    _install_geogpu(v, WORK / "build-full")
    return v


@pytest.fixture(scope="module")
def venv_nogdal(python, tmp_path_factory):
    """`pip install .` where GDAL's development files are not found, OpenCL off."""
    v = Venv(python, tmp_path_factory.mktemp("venv") / "nogdal")
    _fill_wheels(v)
    # (OpenCL off too: a setting of pyproject.toml overridden, and a shorter build)
    _install_geogpu(v, WORK / "build-nogdal", "CMAKE_DISABLE_FIND_PACKAGE_GDAL=ON",
                    "GG_WITH_OPENCL=OFF")
    return v


def _slc(tmp_path):
    """A complex64 SLC-like array with a few invalid samples, as .npy."""
    rng = np.random.default_rng(352)
    z = (rng.normal(size=(37, 50)) + 1j * rng.normal(size=(37, 50))).astype(np.complex64) * 40
    z[5, 7] = np.nan
    z[20:23, 30:33] = np.nan                    # one whole 3x2 block invalid
    np.save(tmp_path / "slc.npy", z)
    return z


NUMPY_SCRIPT = r"""
import sys
import numpy as np
import geogpu
assert "osgeo" not in sys.modules, "import geogpu imported osgeo"
z = np.load(sys.argv[1])
devices = [d.spec for d in geogpu.devices()]
print("LIBRARY", geogpu.library_path)
print("DEVICES", " ".join(devices))
for dev in ("cpu", "opencl"):
    if dev == "cpu" or any(s.startswith("opencl") for s in devices):
        np.save(f"{sys.argv[2]}/{dev}.npy", geogpu.run("multilook", z, looks=(3, 2), device=dev))
try:
    import osgeo
    print("OSGEO", osgeo.__file__)
except ImportError:
    print("OSGEO none")
"""


def _numpy_api(v, tmp_path):
    """multilook through the venv's geogpu: outputs, library path, devices, osgeo."""
    z = _slc(tmp_path)
    r = _ok(v.run(NUMPY_SCRIPT, tmp_path / "slc.npy", tmp_path, cwd=tmp_path), "the numpy API")
    lines = dict(l.split(" ", 1) for l in r.stdout.splitlines() if " " in l)
    want, invalid = ref.multilook(z, 3, 2)
    assert invalid.sum() == 1
    outs = {}
    for dev in ("cpu", "opencl"):
        f = tmp_path / f"{dev}.npy"
        if f.exists():
            outs[dev] = np.load(f)
            assert outs[dev].dtype == np.float32
            ref.check_product(outs[dev], want, invalid, float("nan"), ref.TOL["multilook"],
                              what=f"multilook on {dev} in the venv")
    assert "cpu" in outs
    return lines, outs


def test_numpy_api_without_osgeo(venv_full, tmp_path):
    lines, outs = _numpy_api(venv_full, tmp_path)
    lib = Path(lines["LIBRARY"])
    assert lib.is_relative_to(venv_full.site / "geogpu"), lib
    assert lines["OSGEO"] == "none"
    if (lib.parent / "libgeogpu_opencl.so").exists() and Path("/etc/OpenCL/vendors").is_dir() \
            and any(Path("/etc/OpenCL/vendors").glob("*.icd")):
        assert "opencl" in outs, f"OpenCL backend in the wheel but unused: {lines['DEVICES']}"


def test_without_gdal_development_files(venv_nogdal, tmp_path):
    pkg = venv_nogdal.site / "geogpu"
    assert (pkg / "lib" / "libgeogpu.so.0").exists()
    assert not (pkg / "lib" / "libgeogpu_opencl.so").exists()
    assert not list(pkg.rglob("libgeogpu_gdal.so*")) and not list(pkg.rglob("gdal_GeoGPU.so"))
    assert not (pkg / "bin").exists() and not (venv_nogdal.path / "bin" / "gdal_multilook").exists()
    lines, _ = _numpy_api(venv_nogdal, tmp_path)
    assert Path(lines["LIBRARY"]).is_relative_to(pkg)


def test_wheel_links_fftw_without_bundling_it(venv_full):
    pkg = venv_full.site / "geogpu"
    bundled = [p for p in venv_full.path.rglob("*") if "fftw" in p.name.lower()]
    assert not bundled, f"FFTW (GPL) copied into the environment: {bundled}"
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf not installed (binutils)")
    d = subprocess.run([readelf, "-d", str(pkg / "lib" / "libgeogpu.so.0")], capture_output=True,
                       text=True).stdout
    needed = [l.split("[", 1)[1].rstrip("]") for l in d.splitlines() if "(NEEDED)" in l]
    assert "libfftw3f.so.3" in needed, needed     # the system's, found by the loader


GDAL_SCRIPT = r"""
import sys
import numpy as np
import geogpu
from osgeo import gdal, gdal_array
gdal.UseExceptions()
z = np.load(sys.argv[1])
src = sys.argv[2] + "/slc.tif"
ds = gdal.GetDriverByName("GTiff").Create(src, z.shape[1], z.shape[0], 1, gdal.GDT_CFloat32)
ds.SetGeoTransform([500000, 10, 0, 4000000, 0, -10])
ds.GetRasterBand(1).WriteArray(z)
ds = None
np.save(sys.argv[2] + "/gg.npy", geogpu.open_gg("multilook", src, looks=(3, 2), device="cpu").ReadAsArray())
np.save(sys.argv[2] + "/run.npy", geogpu.run("multilook", z, looks=(3, 2), device="cpu"))
print("GDAL", gdal.__version__, gdal.__file__)
"""


def test_gdal_side_with_bindings_from_the_sdist(venv_full, tmp_path):
    version = _gdal_version()
    if version is None:
        pytest.skip("gdal-config not found: GDAL's development files are not installed")
    _gdal_wheel(venv_full, version)
    _ok(venv_full.pip("install", "-q", f"GDAL=={version}"), "pip install GDAL (cached wheel)")
    z = _slc(tmp_path)
    r = _ok(venv_full.run(GDAL_SCRIPT, tmp_path / "slc.npy", tmp_path, cwd=tmp_path),
            "the GDAL side in the venv")
    assert Path(r.stdout.split()[-1]).is_relative_to(venv_full.site), r.stdout
    gg, run = np.load(tmp_path / "gg.npy"), np.load(tmp_path / "run.npy")
    want, invalid = ref.multilook(z, 3, 2)
    ref.check_product(gg, want, invalid, float("nan"), ref.TOL["multilook"],
                      what="GG:multilook through the wheel's plugin")
    assert np.array_equal(gg, run, equal_nan=True)
    # the wheel's utility (in the package, launched from the venv's bin/), run with nothing set
    pkg = venv_full.site / "geogpu"
    assert os.access(pkg / "bin" / "gdal_multilook", os.X_OK)
    out = tmp_path / "mli.tif"
    p = subprocess.run([str(venv_full.path / "bin" / "gdal_multilook"), "-q", "-device", "cpu",
                        "-looks", "3", "2", str(tmp_path / "slc.tif"), str(out)],
                       capture_output=True, text=True, env=CLEAN_ENV, timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    r = _ok(venv_full.run("import sys; from osgeo import gdal; import numpy as np; "
                          "np.save(sys.argv[2], gdal.Open(sys.argv[1]).ReadAsArray())",
                          out, tmp_path / "util.npy", cwd=tmp_path), "reading the utility's output")
    assert np.array_equal(np.load(tmp_path / "util.npy"), run, equal_nan=True)
    # python -m geogpu names the wheel's plugin folder, which GDAL programs load cleanly
    r = _ok(venv_full.run("import runpy; runpy.run_module('geogpu', run_name='__main__')",
                          cwd=tmp_path), "python -m geogpu")
    plugin_line = [l for l in r.stdout.splitlines() if l.startswith("GDAL plugin: ")]
    assert plugin_line, r.stdout
    plugins = Path(plugin_line[0].split()[2])
    assert plugins == pkg / "lib" / "gdalplugins", plugin_line
    p = subprocess.run(["gdalinfo", "--formats"], capture_output=True, text=True, timeout=60,
                       env=dict(CLEAN_ENV, GDAL_DRIVER_PATH=str(plugins)))
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert {"GG", "FMCW"} <= {l.split()[0] for l in p.stdout.splitlines()[1:] if l.strip()}
    # gdal_quicklook (made by pip) names what it lacks, then draws with it
    png = tmp_path / "mli.png"
    quicklook = [str(venv_full.path / "bin" / "gdal_quicklook"), "-q", str(out), str(png)]
    if venv_full.run("import PIL", cwd=tmp_path).returncode != 0:
        p = subprocess.run(quicklook, capture_output=True, text=True, env=venv_full.env(),
                           cwd=tmp_path, timeout=120)
        assert p.returncode == 1 and p.stderr.startswith("ERROR 1: gdal_quicklook: needs Pillow"), \
            p.stderr
        assert len(p.stderr.splitlines()) == 1 and not png.exists(), p.stderr
        _ok(venv_full.pip("install", "-q", "Pillow"), "pip install Pillow")
    p = subprocess.run(quicklook, capture_output=True, text=True, env=venv_full.env(), cwd=tmp_path,
                       timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
