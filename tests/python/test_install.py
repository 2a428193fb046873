"""`cmake --install <build> --prefix P` writes only under P, in GDAL's layout
(the plugin in P/lib/gdalplugins, libraries in P/lib, utilities in P/bin), and
what it installed works from there by itself: GDAL programs given
GDAL_DRIVER_PATH=P/lib/gdalplugins load the GG and FMCW drivers without any
error, and the utilities run without LD_LIBRARY_PATH or GG_* variables,
giving the build tree's pixels."""
import os
import runpy
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()

# an environment with nothing of the build tree or of geogpu in it
CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"),
             "LANG": "C.UTF-8"}


def _system_plugin_dir():
    try:
        p = subprocess.run(["gdal-config", "--plugindir"], capture_output=True, text=True)
        if p.returncode == 0 and Path(p.stdout.strip()).is_dir():  # GDAL >= 3.7
            return Path(p.stdout.strip())
    except FileNotFoundError:
        pass
    return Path("/usr/lib/x86_64-linux-gnu/gdalplugins")


def _listing(folder):
    """Names, sizes and modification times: what an install there would change."""
    if not folder.is_dir():
        return {}
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def _plugin_destination():
    """The plugin folder the build's install script writes to."""
    script = BUILD / "gdal_plugins" / "cmake_install.cmake"
    assert script.exists(), f"{script} absent: the build is not configured"
    for line in script.read_text().splitlines():
        if "file(INSTALL DESTINATION" in line and "gdalplugins" in line:
            return line.split('DESTINATION "', 1)[1].split('"', 1)[0]
    raise AssertionError(f"no plugin install rule in {script}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = _plugin_destination()
    # Never let this test write into a system folder (it may run as root):
    # a build configured before the plugin moved under the prefix fails here.
    assert dest.startswith("${CMAKE_INSTALL_PREFIX}/"), (
        f"the build installs the plugin outside the prefix ({dest}): reconfigure {BUILD}")
    prefix = tmp_path_factory.mktemp("prefix")
    system = _system_plugin_dir()
    before = _listing(system)
    env = {k: v for k, v in os.environ.items() if k != "DESTDIR"}
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _listing(system) == before, f"cmake --install --prefix changed {system}"
    return prefix, r.stdout


def test_everything_under_the_prefix(installed):
    prefix, out = installed
    written = [l.split(": ", 1)[1] for l in out.splitlines()
               if l.startswith(("-- Installing: ", "-- Up-to-date: "))]
    assert written
    outside = [w for w in written if not Path(w).resolve().is_relative_to(prefix.resolve())]
    assert not outside, f"installed outside {prefix}: {outside}"
    assert (prefix / "lib" / "gdalplugins" / "gdal_GeoGPU.so").is_file()
    assert (prefix / "lib" / "libgeogpu.so.0").exists()
    assert (prefix / "lib" / "libgeogpu_gdal.so.0").exists()
    assert os.access(prefix / "bin" / "gdal_multilook", os.X_OK)
    assert list(prefix.glob("share/man/man1/gdal_multilook.1"))
    # the hint of how GDAL programs find the plugin
    assert f"GDAL_DRIVER_PATH={prefix}/lib/gdalplugins" in out
    # the installed Python package knows where the plugin went
    inst = list(prefix.glob("lib/python3*/dist-packages/geogpu/_install.py"))
    assert len(inst) == 1, inst
    where = runpy.run_path(str(inst[0]))
    assert Path(where["PLUGIN_DIR"]) == prefix / "lib" / "gdalplugins"


def test_runpaths_are_relative(installed):
    prefix, _ = installed
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf not installed (binutils)")
    for f in (prefix / "lib" / "gdalplugins" / "gdal_GeoGPU.so", prefix / "lib" / "libgeogpu_gdal.so.0",
              prefix / "bin" / "gdal_multilook"):
        d = subprocess.run([readelf, "-d", str(f)], capture_output=True, text=True).stdout
        paths = [l.split("[", 1)[1].rstrip("]") for l in d.splitlines() if "RUNPATH" in l or "RPATH" in l]
        assert paths, f"{f} has no RUNPATH"
        for entry in paths[0].split(":"):
            assert entry.startswith("$ORIGIN"), f"{f}: RUNPATH entry {entry} is not relative"


def test_gdal_loads_the_installed_plugin_cleanly(installed):
    prefix, _ = installed
    env = dict(CLEAN_ENV, GDAL_DRIVER_PATH=str(prefix / "lib" / "gdalplugins"))
    p = subprocess.run(["gdalinfo", "--formats"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", p.stderr
    names = {l.split()[0] for l in p.stdout.splitlines()[1:] if l.strip()}
    assert {"GG", "FMCW"} <= names, p.stdout


def test_installed_utility_runs_alone(installed):
    prefix, _ = installed
    p = subprocess.run([str(prefix / "bin" / "gdal_multilook"), "--version"], capture_output=True,
                       text=True, env=CLEAN_ENV, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "geogpu" in p.stdout and p.stderr == "", p.stdout + p.stderr


def test_installed_utility_gives_build_tree_pixels(installed, tmp_path):
    prefix, _ = installed
    rng = np.random.default_rng(35)
    a = (rng.random((48, 64)) * 100 + 1).astype(np.float32)
    src = tmp_path / "in.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(src), 64, 48, 1, gdal.GDT_Float32)
    ds.SetGeoTransform([500000, 10, 0, 4000000, 0, -10])
    ds.GetRasterBand(1).WriteArray(a)
    ds = None
    outs = {}
    for name, exe, env in (("build", BUILD / "bin" / "gdal_multilook", None),
                           ("installed", prefix / "bin" / "gdal_multilook", CLEAN_ENV)):
        out = tmp_path / f"{name}.tif"
        p = subprocess.run([str(exe), "-q", "-device", "cpu", "-looks", "2", "2", str(src), str(out)],
                           capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 0 and "ERROR" not in p.stderr, f"{name}: {p.stderr}"
        outs[name] = gdal.Open(str(out)).ReadAsArray()
    expect = a.reshape(24, 2, 32, 2).mean(axis=(1, 3))
    assert outs["build"].shape == (24, 32)
    np.testing.assert_allclose(outs["build"], expect, rtol=1e-6)
    assert np.array_equal(outs["installed"], outs["build"])
