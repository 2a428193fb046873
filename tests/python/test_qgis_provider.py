"""The geogpu QGIS Processing provider (gdal_plugins/qgis/geogpu_processing),
headless: the plugin folder copied into a fresh QGIS profile (the "copy the
folder" install), enabled, the utilities' folder given as the provider
setting, every algorithm run with qgis_process under
QT_QPA_PLATFORM=offscreen on small data and its outputs compared with the
utility run directly (same bits) and with the float64 references; GG:
inputs; extent and CRS parameters; errors; and, inside a QGIS application,
GDAL progress reaching the feedback and cancel leaving nothing behind.

Skipped only when QGIS is not installed (scripts/setup.sh installs it)."""
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

import reference as ref

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
PLUGIN_SRC = REPO / "gdal_plugins" / "qgis" / "geogpu_processing"
sys.path.insert(0, str(PLUGIN_SRC.parent))

from geogpu_processing import runner, utilities  # noqa: E402  (pure Python parts)

QGIS_PROCESS = shutil.which("qgis_process.bin") or shutil.which("qgis_process")


def _qgis_absence():
    if QGIS_PROCESS is None:
        return "QGIS is not installed (no qgis_process; apt-get install qgis python3-qgis " \
               "qgis-providers, as scripts/setup.sh does)"
    p = subprocess.run(["/usr/bin/python3", "-c", "import qgis.core"], capture_output=True)
    if p.returncode != 0:
        return "QGIS Python bindings are not installed (apt-get install python3-qgis)"
    return None


QGIS_ABSENT = _qgis_absence()
needs_qgis = pytest.mark.skipif(QGIS_ABSENT is not None, reason=QGIS_ABSENT or "")
ND = -9999.0
SLC = REPO / "autotest_data" / "winnipeg_slc" / "winnipeg_hh.slc"


# ------------------------------------------------------------------ helpers

@pytest.fixture(scope="module")
def qgis(tmp_path_factory):
    """A fresh QGIS profile with the plugin folder copied into it and
    enabled, the utilities' folder set as the provider setting; an
    environment without GG_BUILD_DIR and without <build>/bin on PATH, so
    the setting is what finds the utilities."""
    if QGIS_ABSENT:
        pytest.skip(QGIS_ABSENT)
    root = tmp_path_factory.mktemp("qgis")
    profile = root / "config" / "profiles" / "default"
    plugins = profile / "python" / "plugins"
    shutil.copytree(PLUGIN_SRC, plugins / "geogpu_processing",
                    ignore=shutil.ignore_patterns("__pycache__"))
    ini = profile / "QGIS" / "QGIS3.ini"
    ini.parent.mkdir(parents=True)
    ini.write_text("[PythonPlugins]\ngeogpu_processing=true\n\n[Processing]\n"
                   f"Configuration\\GEOGPU_UTILITIES_FOLDER={BUILD / 'bin'}\n"
                   "Configuration\\GEOGPU_DEVICE=cpu\n")
    xdg = root / "xdg"
    xdg.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GG_")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p).resolve() != (BUILD / "bin").resolve())
    env.update(QT_QPA_PLATFORM="offscreen", QGIS_CUSTOM_CONFIG_PATH=str(root / "config"),
               XDG_RUNTIME_DIR=str(xdg), GDAL_DRIVER_PATH=str(BUILD / "lib"),
               PYTHONWARNINGS="ignore")
    env.pop("QGIS_PLUGINPATH", None)

    class Q:
        pass
    q = Q()
    q.env, q.root, q.plugin = env, root, plugins / "geogpu_processing"

    def run(*args, check=True):
        p = subprocess.run([QGIS_PROCESS] + [str(a) for a in args], capture_output=True,
                           text=True, env=env, timeout=300)
        if check and p.returncode != 0:
            raise AssertionError(f"qgis_process {' '.join(map(str, args))} failed "
                                 f"({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p

    def alg(alg_id, check=True, **params):
        args = ["--json", "run", f"geogpu:{alg_id}", "--"]
        for k, v in params.items():
            for item in (v if isinstance(v, list) else [v]):
                args.append(f"{k}={item}")
        p = run(*args, check=check)
        if not check:
            return p
        start = p.stdout.find("{")
        return json.loads(p.stdout[start:])["results"]

    q.run, q.alg = run, alg
    return q


def load(path, band=1):
    ds = gdal.Open(str(path))
    b = ds.GetRasterBand(band)
    return b.ReadAsArray(), b.GetNoDataValue(), b.GetDescription(), ds.GetGeoTransform(), \
        ds.GetSpatialRef()


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def utility(gg, *args):
    """The utility run directly (the oracle for the provider's output)."""
    gg.run(*[str(a) for a in args])


# ------------------------------------------------------ pure-Python parts

def test_term_progress_parser():
    seen = []
    p = runner.TermProgress(seen.append)
    text = "0...10...20...30...40...50...60...70...80...90...100 - done.\n"
    for k in range(0, len(text), 3):  # arbitrary chunks
        p.feed(text[k:k + 3])
    assert seen[0] == 0 and seen[-1] == 100
    assert seen == sorted(seen) and len(seen) == 41  # every 2.5 %
    assert np.allclose(np.diff(seen), 2.5)


def _describe(program):
    return utilities.describe(BUILD / "bin" / program)


def test_table_matches_utilities():
    """The table cannot drift: every hint names an option key or an own flag
    of the utility's --describe, every product flag is one the utility
    takes, and a table entry with hand-written parameters is a program
    that does not answer --describe (whose --help names every flag)."""
    for u in utilities.UTILITIES:
        exe = BUILD / "bin" / u.program
        assert exe.exists(), f"{exe} not built"
        if not u.described:
            p = subprocess.run([str(exe), "--describe"], capture_output=True, text=True)
            assert p.returncode != 0, f"{u.program} answers --describe: take its parameters " \
                "from it (drop the hand-written params)"
            text = subprocess.run([str(exe), "--help"], capture_output=True, text=True).stdout
            for p in u.params:
                assert p.flag in text, f"{u.program}: {p.flag} not in its --help"
            continue
        assert not u.params, f"{u.program}: parameters come from --describe"
        d = _describe(u.program)
        assert d["program"] == u.program
        keys = {o["key"] for o in d["options"]} | {f["flag"] for f in d["flags"]}
        assert set(u.hints) <= keys, (u.program, set(u.hints) - keys)
        flags = {o["flag"] for o in d["options"] if o["flag"]} | {f["flag"] for f in d["flags"]}
        for pr in u.products:
            if pr.flag:
                assert pr.flag in flags, f"{u.program}: {pr.flag} not in its --describe"
        r = utilities.resolve(u, exe)
        assert r.problem is None and r.params, u.program


def test_parameters_from_describe():
    """Each --describe kind gives its parameter kind, with the table's
    default and range; a switch that sets the opposite of the default
    (-noderamp: deramp=no) is off by default; common and flagless options,
    product flags and hidden flags are not parameters."""
    d = {"operation": "x", "operands": "<a> <b> <dst>", "options": [
        {"key": "n", "flag": "-n", "kind": "int", "min": 1, "max": 9, "default": "3",
         "required": False, "common": False, "help": "n"},
        {"key": "f", "flag": "-f", "kind": "float", "min": 0, "max": None, "default": None,
         "required": False, "common": False, "help": "f"},
        {"key": "w", "flag": "-w", "kind": "size", "min": 1, "max": 99, "default": "5x3",
         "required": True, "common": False, "help": "w"},
        {"key": "deramp", "flag": "-noderamp", "kind": "bool", "default": "yes",
         "switch_value": "no", "required": False, "common": False, "help": "remove the ramp"},
        {"key": "c", "flag": "-c", "kind": "choice", "choices": "p,q,r", "default": "q",
         "required": False, "common": False, "help": "c"},
        {"key": "s", "flag": "-s", "kind": "string", "default": None, "required": False,
         "common": False, "help": "s"},
        {"key": "hidden", "flag": None, "kind": "string", "default": None, "required": False,
         "common": False, "help": "no flag"},
        {"key": "srcnodata", "flag": "-srcnodata", "kind": "float", "default": None,
         "required": False, "common": True, "help": "common"}],
        "flags": [{"flag": "-out", "values": "<file>", "kind": "file", "help": "o"},
                  {"flag": "-dir", "values": "<d>", "kind": "folder", "help": "d"},
                  {"flag": "-dem", "values": "<r>", "kind": "dataset", "help": "r"},
                  {"flag": "-k", "values": "<k>", "kind": "float", "help": "k"},
                  {"flag": "-prod", "values": None, "kind": "bool", "help": "a product"},
                  {"flag": "-mode", "values": "gmtsar", "kind": "choice", "help": "m"}]}
    ps = {p.flag: p for p in utilities.params_from_description(
        d, {"-mode": utilities.Hint(hidden=True)}, skip_flags=["-prod"])}
    assert list(ps) == ["-n", "-f", "-w", "-noderamp", "-c", "-s", "-out", "-dir", "-dem", "-k"]
    n, f, w, sw, c, s = (ps[k] for k in ("-n", "-f", "-w", "-noderamp", "-c", "-s"))
    assert isinstance(n, utilities.Num) and (n.type, n.default, n.minimum, n.maximum) == \
        ("int", 3, 1, 9) and not n.optional
    assert isinstance(f, utilities.Num) and f.type == "float" and f.default is None and f.optional
    assert isinstance(w, utilities.Pair) and w.default == (5, 3) and w.names == ("W_X", "W_Y")
    assert isinstance(sw, utilities.Flag) and sw.name == "NODERAMP" and sw.default is False
    assert sw.key == "deramp" and "deramp=no" in sw.label
    assert isinstance(c, utilities.Enum) and list(c.choices) == ["p", "q", "r"] and c.default == 1
    assert isinstance(s, utilities.Text) and s.optional
    assert [type(ps[k]).__name__ for k in ("-out", "-dir", "-dem", "-k")] == \
        ["FileOut", "Folder", "Dataset", "Num"]
    # the command line: values equal to the table's default left off (but a
    # required option always given), others given
    assert n.args(3) == [] and n.args(4) == ["-n", "4"]
    assert w.args((5, 3)) == ["-w", "5", "3"]
    assert c.args(1) == [] and c.args(2) == ["-c", "r"]
    assert sw.args(False) == [] and sw.args(True) == ["-noderamp"]
    assert ps["-k"].args(0.0) == ["-k", "0.0"]
    u = utilities.from_description("gdal_x", d)
    assert [i.name for i in u.inputs] == ["A", "B"] and u.from_describe and u.common
    u = utilities.from_description("gdal_y", dict(d, operands="<src> [<src>...] <dst>"))
    assert len(u.inputs) == 1 and u.inputs[0].multiple


def test_describe_fallback():
    """A utility without a table entry gets its parameters from its
    --describe: the same parameters as its table entry (whose products
    request some of those flags) and the same inputs."""
    for u in utilities.UTILITIES:
        if not u.described:
            continue
        d = _describe(u.program)
        f = utilities.from_description(u.program, d)
        r = utilities.resolve(u, BUILD / "bin" / u.program)
        # hidden: own flags, and the flags of hidden op options (gdal_ortho's ot)
        flag_of = {o["key"]: o["flag"] for o in d["options"]}
        hidden = {flag_of.get(k, k) for k, h in u.hints.items() if h.hidden}
        assert {p.flag for p in f.params} - hidden == ({p.flag for p in r.params} |
                                              {pr.flag for pr in u.products if pr.flag}) - hidden, \
            u.program
        widget = {flag_of.get(k, k) for k, h in u.hints.items() if h.widget}
        for p in r.params:
            q = [x for x in f.params if x.flag == p.flag][0]
            # a widget hint (a layer, a CRS, an extent) is presentation: the fallback
            # offers the option as the table's text or numbers
            want = (utilities.Text,) if p.flag in widget else (type(p),)
            assert type(q) in want and (q.name, getattr(q, "default", None), q.optional) == \
                (p.name, getattr(p, "default", None), p.optional), p.flag
        assert len(f.inputs) == len(u.inputs) and f.inputs[0].multiple == u.inputs[0].multiple
        assert f.common
    ml = utilities.from_description("gdal_multilook", _describe("gdal_multilook"))
    looks = [p for p in ml.params if p.flag == "-looks"][0]
    assert isinstance(looks, utilities.Pair) and not looks.optional and looks.required


def test_quicklook_kinds_match_the_helper():
    """The provider's Kind choices are gdal_quicklook's kinds (no drift)."""
    sys.path.insert(0, str(REPO / "gdal_plugins" / "python"))
    os.environ.setdefault("GG_LIBRARY", str(BUILD / "lib"))
    from geogpu import quicklook
    assert tuple(utilities.QUICKLOOK_KINDS) == tuple(quicklook.KINDS)


def test_discovery_finds_every_utility():
    found = runner.discover(str(BUILD / "bin"))
    for u in utilities.UTILITIES:
        if u.program != "gdal_quicklook":
            assert u.program in found
    assert all(runner.is_geogpu_utility(p) for p in found.values())
    assert not runner.is_geogpu_utility(shutil.which("gdalinfo"))


def test_metadata():
    md = (PLUGIN_SRC / "metadata.txt").read_text()
    for line in ("hasProcessingProvider=yes", "qgisMinimumVersion=3.22", "name=geogpu"):
        assert line in md.splitlines()


# ------------------------------------------------------------ qgis_process

@needs_qgis
def test_listed(qgis):
    """Every table entry and every geogpu utility beside them is an algorithm."""
    out = qgis.run("list").stdout
    ids = {line.split()[0] for line in out.splitlines() if line.strip().startswith("geogpu:")}
    for u in utilities.UTILITIES:
        assert f"geogpu:{u.name}" in ids, out
    for program in runner.discover(str(BUILD / "bin")):
        assert f"geogpu:{program[5:]}" in ids, f"{program} not offered"
    h = qgis.run("help", "geogpu:multilook").stdout
    for name in ("INPUT", "LOOKS_X", "LOOKS_Y", "COMPLEX", "EXTENT", "DEVICE", "OUTPUT"):
        assert name in h


@needs_qgis
def test_multilook(qgis, gg, make, rng, tmp_path):
    a = make.real(rng, 40, 50, nodata=ND)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    res = qgis.alg("multilook", INPUT=src, LOOKS_X=4, LOOKS_Y=3, OUTPUT=tmp_path / "q.tif")
    assert res["OUTPUT"] == str(tmp_path / "q.tif")
    out, nd, _, gt, _ = load(tmp_path / "q.tif")
    want, invalid = ref.multilook(a, 4, 3, nodata=ND)
    ref.check_product(out, want, invalid, ND, ref.TOL["multilook"], what="QGIS multilook")
    assert gt == pytest.approx((500000.0, 40.0, 0.0, 4000000.0, 0.0, -30.0))
    utility(gg, "gdal_multilook", "-q", "-device", "cpu", "-looks", 4, 3, src, tmp_path / "u.tif")
    assert same(out, load(tmp_path / "u.tif")[0])


@needs_qgis
@pytest.mark.opencl
def test_device_parameter(qgis, gg, make, rng, tmp_path):
    """DEVICE overrides the provider's setting (cpu here)."""
    z = make.complex(rng, 30, 32)
    src = gg.write(tmp_path / "slc.tif", z)
    qgis.alg("multilook", INPUT=src, LOOKS_X=2, LOOKS_Y=2, COMPLEX=1, DEVICE="opencl",
             OUTPUT=tmp_path / "q.tif")
    utility(gg, "gdal_multilook", "-q", "-device", "opencl", "-complex", "-looks", 2, 2, src,
            tmp_path / "u.tif")
    assert same(load(tmp_path / "q.tif")[0], load(tmp_path / "u.tif")[0])


@needs_qgis
def test_rotate_extent_and_crs(qgis, gg, make, rng, tmp_path):
    """EXTENT clips the input first (then the rotation of the clip); ASSIGN_CRS
    sets the outputs' CRS."""
    a = make.real(rng, 60, 80)
    src = gg.write(tmp_path / "in.tif", a)  # 10 m pixels from (500000, 4000000)
    ext = "500100,500500,3999600,3999900"    # xmin,xmax,ymin,ymax: cols 10..50, rows 10..40
    res = qgis.alg("rotate", INPUT=src, ANGLE=25, SCALE=1.2, EXTENT=ext, ASSIGN_CRS="EPSG:32615",
                   OUTPUT=tmp_path / "q.tif")
    out, _, _, gt, srs = load(res["OUTPUT"])
    assert out.shape == (30, 40)
    assert srs is not None and srs.GetAuthorityCode(None) == "32615"
    want, invalid, amb = ref.rotate(a[10:40, 10:50], 25, 1.2)
    ref.check_product(out, want, invalid, math.nan, ref.TOL["rotate"], ignore=amb,
                      what="QGIS rotate of the clip", min_valid=0.05)
    gdal.Translate(str(tmp_path / "clip.tif"), str(src), srcWin=[10, 10, 40, 30])
    utility(gg, "gdal_rotate", "-q", "-device", "cpu", "-angle", 25, "-scale", 1.2,
            tmp_path / "clip.tif", tmp_path / "u.tif")
    u = load(tmp_path / "u.tif")
    assert same(out, u[0]) and gt == pytest.approx(u[3])


@needs_qgis
def test_radnorm_levels(qgis, gg, make, rng, tmp_path):
    a = make.real(rng, 30, 40) * np.linspace(0.5, 2, 40)[None, :].astype(np.float32)
    src = gg.write(tmp_path / "in.tif", a)
    qgis.alg("radnorm", INPUT=src, COEF=100, LEVELS=255, OUTPUT=tmp_path / "q.tif")
    out, nd, *_ = load(tmp_path / "q.tif")
    assert out.dtype == np.uint8 and nd == 255
    F, invalid = ref.radnorm(a, 100)
    q, amb = ref.quantise(F, invalid, 255)
    assert not ((out != q) & ~invalid & ~amb).any()
    utility(gg, "gdal_radnorm", "-q", "-device", "cpu", "-coef", 100, "-levels", 255, src,
            tmp_path / "u.tif")
    assert same(out, load(tmp_path / "u.tif")[0])


@needs_qgis
def test_insar_products(qgis, gg, make, rng, tmp_path):
    """Each product is its own output raster holding its band."""
    s1 = make.complex(rng, 30, 36, nan=0)
    s2 = (0.8 * s1 + 0.3 * make.complex(rng, 30, 36, nan=0)).astype(np.complex64)
    p = gg.write(tmp_path / "p.tif", s1)
    s = gg.write(tmp_path / "s.tif", s2)
    out = tmp_path / "out"
    out.mkdir()
    res = qgis.alg("insar", PRIMARY=p, SECONDARY=s, WINDOW_X=5, WINDOW_Y=3,
                   INTERFEROGRAM=out / "i.tif", COHERENCE=out / "c.tif", AMPLITUDE=out / "a.tif")
    utility(gg, "gdal_insar", "-q", "-device", "cpu", "-window", 5, 3, p, s, tmp_path / "u.tif")
    want = ref.coherence(s1, s2, window=(5, 3))
    for key, name, f in (("INTERFEROGRAM", "interferogram", "i"), ("COHERENCE", "coherence", "c"),
                         ("AMPLITUDE", "amplitude", "a")):
        assert res[key] == str(out / f"{f}.tif")
        arr, _, desc, _, _ = load(res[key])
        assert desc == name
        assert same(arr, load(tmp_path / f"u_{name}.tif")[0]), name
        w, invalid = want[name]
        assert np.nanmax(np.abs(arr[~invalid] - w[~invalid])) <= 1e-4 * max(1, np.abs(w[~invalid]).max())
    # nothing else left in the output folder (no temporaries)
    assert sorted(f.name for f in out.iterdir()) == ["a.tif", "c.tif", "i.tif"]
    # only the coherence asked for: one file, the others not written
    out2 = tmp_path / "out2"
    out2.mkdir()
    qgis.alg("insar", PRIMARY=p, SECONDARY=s, WINDOW_X=5, WINDOW_Y=3, COHERENCE=out2 / "c.tif")
    assert [f.name for f in out2.iterdir()] == ["c.tif"]
    assert same(load(out2 / "c.tif")[0], load(tmp_path / "u_coherence.tif")[0])


@needs_qgis
def test_ptsel_products_and_gg_input(qgis, gg, rng, tmp_path):
    """Several layers stacked in order; tau_max, offsets (2 bands) and the
    Byte mask as three outputs; then a GG: connection string as a layer."""
    n, H, W = 4, 18, 22
    z = (np.exp(1j * rng.uniform(-3, 3, (n, H, W))) * rng.rayleigh(1, (n, H, W))).astype(np.complex64)
    z[:, :, :8] = (np.abs(z[:, :, :8]) * np.exp(1j * rng.uniform(-3, 3, (n, 1, 1)))).astype(np.complex64)
    files = [gg.write(tmp_path / f"e{k}.tif", z[k]) for k in range(n)]
    res = qgis.alg("ptsel", INPUTS=[str(f) for f in files], WINDOW=5, THRESHOLD=0.7,
                   OUTPUT=tmp_path / "tau.tif", OFFSETS=tmp_path / "off.tif",
                   MASK=tmp_path / "mask.tif")
    utility(gg, "gdal_ptsel", "-q", "-device", "cpu", "-window", 5, "-threshold", 0.7,
            "-offsets", "-mask", *files, tmp_path / "u.tif")
    tau = load(res["OUTPUT"])[0]
    assert same(tau, load(tmp_path / "u_tau_max.tif")[0])
    want, invalid, _ = ref.ptsel(z, window=5)
    assert np.nanmax(np.abs(tau - want)) <= ref.TOL["ptsel"]
    off = gdal.Open(res["OFFSETS"])
    assert off.RasterCount == 2
    assert [off.GetRasterBand(b).GetDescription() for b in (1, 2)] == ["best_dx", "best_dy"]
    assert same(off.GetRasterBand(1).ReadAsArray(), load(tmp_path / "u_best_dx.tif")[0])
    assert same(off.GetRasterBand(2).ReadAsArray(), load(tmp_path / "u_best_dy.tif")[0])
    off = None
    mask = load(res["MASK"])[0]
    assert mask.dtype == np.uint8 and same(mask, load(tmp_path / "u_ps_mask.tif")[0])
    assert 0 < (mask == 1).sum() < mask.size
    # a .ggvrt (a GG product computed on read) as the input layer: QGIS
    # opens it through the GG driver
    utility(gg, "gdal_multilook", "-q", "-looks", 2, 2, "-of", "GGVRT", tmp_path / "u_tau_max.tif",
            tmp_path / "ml.ggvrt")
    qgis.alg("multilook", INPUT=tmp_path / "ml.ggvrt", LOOKS_X=1, LOOKS_Y=1,
             OUTPUT=tmp_path / "g.tif")
    want_ml, inv_ml = ref.multilook(tau, 2, 2)
    ref.check_product(load(tmp_path / "g.tif")[0], want_ml, inv_ml, math.nan,
                      ref.TOL["multilook"], what="GG: input through QGIS")


def shifted_pair(rng, H, W, dx, dy):
    """White complex noise and its copy shifted by (dx, dy) pixels (Fourier)."""
    a = rng.normal(size=(H, W)) + 1j * rng.normal(size=(H, W))
    ky, kx = np.fft.fftfreq(H)[:, None], np.fft.fftfreq(W)[None, :]
    b = np.fft.ifft2(np.fft.fft2(a) * np.exp(-2j * np.pi * (kx * dx + ky * dy)))
    return a.astype(np.complex64), b.astype(np.complex64)


@needs_qgis
def test_xcorr(qgis, gg, rng, tmp_path):
    """Offsets of a shifted copy: the eight bands identical to the utility's,
    the offsets near the shift, the optional table written."""
    a, b = shifted_pair(rng, 160, 168, 3, -2)
    p = gg.write(tmp_path / "p.tif", a)
    s = gg.write(tmp_path / "s.tif", b)
    res = qgis.alg("xcorr", PRIMARY=p, SECONDARY=s, WINDOW_X=32, WINDOW_Y=32, SEARCH_X=8,
                   SEARCH_Y=8, SKIP_X=32, SKIP_Y=32, TABLE=tmp_path / "w.csv",
                   OUTPUT=tmp_path / "q.tif")
    utility(gg, "gdal_xcorr", "-q", "-device", "cpu", "-window", 32, 32, "-search", 8, 8,
            "-skip", 32, 32, p, s, tmp_path / "u.tif")
    q, u = gdal.Open(res["OUTPUT"]), gdal.Open(str(tmp_path / "u.tif"))
    assert q.RasterCount == u.RasterCount == 8
    for k in range(1, 9):
        assert same(q.GetRasterBand(k).ReadAsArray(), u.GetRasterBand(k).ReadAsArray()), k
    down = q.GetRasterBand(1).ReadAsArray()
    across = q.GetRasterBand(2).ReadAsArray()
    assert abs(np.nanmedian(across) - 3) < 0.1 and abs(np.nanmedian(down) + 2) < 0.1
    q = u = None
    assert (tmp_path / "w.csv").stat().st_size > 0


@needs_qgis
def test_coreg(qgis, gg, rng, tmp_path):
    """The secondary resampled onto the primary: identical to the utility's,
    equal to the primary inside; the fit written as JSON."""
    a, b = shifted_pair(rng, 160, 168, 3, -2)
    p = gg.write(tmp_path / "p.tif", a)
    s = gg.write(tmp_path / "s.tif", b)
    res = qgis.alg("coreg", PRIMARY=p, SECONDARY=s, WINDOW_X=32, WINDOW_Y=32, SEARCH_X=8,
                   SEARCH_Y=8, SKIP_X=24, SKIP_Y=24, FIT=tmp_path / "fit.json",
                   OUTPUT=tmp_path / "q.tif")
    utility(gg, "gdal_coreg", "-q", "-device", "cpu", "-window", 32, 32, "-search", 8, 8,
            "-skip", 24, 24, p, s, tmp_path / "u.tif")
    q = load(res["OUTPUT"])[0]
    assert same(q, load(tmp_path / "u.tif")[0])
    inner = (slice(20, -20), slice(20, -20))
    d = np.abs(q[inner] - a[inner])
    assert np.nanmedian(d) < 0.05 * np.median(np.abs(a)), "resampled secondary is not the primary"
    assert json.loads((tmp_path / "fit.json").read_text())


@needs_qgis
def test_ortho_extent_and_crs(qgis, gg, tmp_path):
    """Typed CRS and extent parameters: T_SRS, TR and TE (the extent given in
    the target CRS, or in lon/lat and converted to it), a DEM layer; the
    pixels identical to gdal_ortho run with the same numbers."""
    pytest.importorskip("scipy")
    from osgeo import osr
    from test_ortho import synthetic_rpc, write_dem, write_scene
    rng = np.random.default_rng(11)
    scene = write_scene(tmp_path / "scene.tif", rng, 160, 150, "Float32", synthetic_rpc(160, 150))
    dem = write_dem(tmp_path / "dem.tif", rng, 4326)
    wgs, utm = osr.SpatialReference(), osr.SpatialReference()
    wgs.ImportFromEPSG(4326)
    utm.ImportFromEPSG(32632)
    wgs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    utm.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    cx, cy, _ = osr.CoordinateTransformation(wgs, utm).TransformPoint(6.1, 45.2)
    x0, x1, y0, y1 = round(cx) - 600, round(cx) + 600, round(cy) - 400, round(cy) + 400
    res = qgis.alg("ortho", INPUT=scene, DEM=dem, T_SRS="EPSG:32632", TR_X=20, TR_Y=20,
                   TE=f"{x0},{x1},{y0},{y1} [EPSG:32632]", R=1, OUTPUT=tmp_path / "q.tif")
    utility(gg, "gdal_ortho", "-q", "-device", "cpu", "-dem", dem, "-t_srs", "EPSG:32632",
            "-tr", 20, 20, "-te", x0, y0, x1, y1, "-r", "bilinear", scene, tmp_path / "u.tif")
    q, u = load(res["OUTPUT"]), load(tmp_path / "u.tif")
    assert q[0].shape == (40, 60) and same(q[0], u[0])
    assert q[3] == pytest.approx((x0, 20, 0, y1, 0, -20))
    assert q[4].GetAuthorityCode(None) == "32632"
    assert np.isfinite(q[0]).mean() > 0.5
    # the extent in lon/lat: converted to the target CRS before the run
    res = qgis.alg("ortho", INPUT=scene, DEM=dem, T_SRS="EPSG:32632", TR_X=20, TR_Y=20,
                   TE="6.095,6.105,45.197,45.203 [EPSG:4326]", OUTPUT=tmp_path / "ll.tif")
    ds = gdal.Open(res["OUTPUT"])
    gt, W, H = ds.GetGeoTransform(), ds.RasterXSize, ds.RasterYSize
    ds = None
    t = osr.CoordinateTransformation(wgs, utm)
    for lon, lat in ((6.095, 45.197), (6.105, 45.203), (6.095, 45.203), (6.105, 45.197)):
        x, y, _ = t.TransformPoint(lon, lat)
        assert gt[0] - 20 <= x <= gt[0] + W * gt[1] + 20 and gt[3] + H * gt[5] - 20 <= y <= gt[3] + 20


@needs_qgis
def test_warp_geolocation_arrays(qgis, gg, tmp_path):
    """A radar-geometry raster with its real geolocation arrays put on a
    map through the algorithm: T_SRS (a CRS parameter), TR, R, GEOLOC; the
    pixels identical to gdal_warp run with the same numbers."""
    from osgeo import osr
    from conftest import DATA
    from test_warp import _texture
    lon = np.fromfile(DATA / "isce3_topo" / "x_250.rdr", "<f8").reshape(250, 250)
    lat = np.fromfile(DATA / "isce3_topo" / "y_250.rdr", "<f8").reshape(250, 250)
    for n, arr in (("lon", lon), ("lat", lat)):
        ds = gdal.GetDriverByName("GTiff").Create(str(tmp_path / f"{n}.tif"), 250, 250, 1,
                                                  gdal.GDT_Float64)
        ds.GetRasterBand(1).WriteArray(arr)
        ds = None
    wgs84 = osr.SpatialReference()
    wgs84.ImportFromEPSG(4326)
    rdr = tmp_path / "rdr.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(rdr), 250, 250, 1, gdal.GDT_Float32)
    ds.GetRasterBand(1).WriteArray(np.abs(_texture()).astype(np.float32))
    ds.SetMetadata({"X_DATASET": str(tmp_path / "lon.tif"), "X_BAND": "1",
                    "Y_DATASET": str(tmp_path / "lat.tif"), "Y_BAND": "1",
                    "PIXEL_OFFSET": "0", "LINE_OFFSET": "0", "PIXEL_STEP": "1",
                    "LINE_STEP": "1", "SRS": wgs84.ExportToWkt()}, "GEOLOCATION")
    ds = None
    res = qgis.alg("warp", INPUT=rdr, GEOLOC=True, T_SRS="EPSG:32611", TR_X=8, TR_Y=8, R=1,
                   OUTPUT=tmp_path / "q.tif")
    utility(gg, "gdal_warp", "-q", "-device", "cpu", "-geoloc", "-t_srs", "EPSG:32611",
            "-tr", 8, 8, "-r", "bilinear", rdr, tmp_path / "u.tif")
    q, u = load(res["OUTPUT"]), load(tmp_path / "u.tif")
    assert same(q[0], u[0]) and q[3] == pytest.approx(u[3])
    assert q[4].GetAuthorityCode(None) == "32611"
    assert np.count_nonzero(q[0]) > 0.3 * q[0].size
    # transformer options, several in one parameter: each its own -to
    res = qgis.alg("warp", INPUT=rdr, TO="SRC_METHOD=GEOLOC_ARRAY | INSERT_CENTER_LONG=FALSE",
                   T_SRS="EPSG:32611", TR_X=8, TR_Y=8, R=1, OUTPUT=tmp_path / "to.tif")
    assert same(load(res["OUTPUT"])[0], u[0])


@needs_qgis
def test_fmcw(qgis, gg, tmp_path):
    """A raw FMCW file (a file parameter, not a layer): the polar raster as
    OUTPUT, and with GRID one PPI raster per product, every one returned and
    identical to the utility's."""
    raw = tmp_path / "radar.nc"
    gg.run("gdal_fmcw", "-simulate", "-sectors", 24, "-gates", 48, "-sweeps", 16, "-samples", 96,
           "-q", raw)
    res = qgis.alg("fmcw", INPUT=raw, OUTPUT=tmp_path / "polar.tif")
    utility(gg, "gdal_fmcw", "-q", "-device", "cpu", raw, tmp_path / "u_polar.tif")
    q, u = gdal.Open(res["OUTPUT"]), gdal.Open(str(tmp_path / "u_polar.tif"))
    assert q.RasterCount == u.RasterCount >= 8
    for b in range(1, q.RasterCount + 1):
        assert q.GetRasterBand(b).GetDescription() == u.GetRasterBand(b).GetDescription()
        assert same(q.GetRasterBand(b).ReadAsArray(), u.GetRasterBand(b).ReadAsArray())
    q = u = None
    out = tmp_path / "ppi"
    out.mkdir()
    res = qgis.alg("fmcw", INPUT=raw, GRID=250, PRODUCTS="DBZ,VEL", OUTPUT=out / "ppi.tif")
    assert res["FILES"] == [str(out / "ppi_DBZ.tif"), str(out / "ppi_VEL.tif")]
    assert res["OUTPUT"] == str(out / "ppi_DBZ.tif")
    utility(gg, "gdal_fmcw", "-q", "-device", "cpu", "-grid", 250, "-products", "DBZ,VEL", raw,
            tmp_path / "u.tif")
    for prod in ("DBZ", "VEL"):
        a, nd, desc, gt, srs = load(out / f"ppi_{prod}.tif")
        assert desc == prod and srs is not None
        assert same(a, load(tmp_path / f"u_{prod}.tif")[0])
        assert np.isfinite(a[a != nd]).all() and (a != nd).sum() > 0.3 * a.size


@needs_qgis
def test_quicklook(qgis, gg, make, rng, tmp_path):
    c = rng.uniform(0, 1, (40, 50)).astype(np.float32)
    ds = gdal.GetDriverByName("GTiff").Create(str(tmp_path / "coh.tif"), 50, 40, 1, gdal.GDT_Float32)
    ds.GetRasterBand(1).WriteArray(c)
    ds.GetRasterBand(1).SetDescription("coherence")
    ds = None
    res = qgis.alg("quicklook", INPUT=tmp_path / "coh.tif", OUTPUT=tmp_path / "coh.png")
    from PIL import Image
    img = Image.open(res["OUTPUT"])
    assert img.format == "PNG" and img.text["geogpu:kind"] == "coherence"
    assert "geogpu:colorbar" in img.text


@needs_qgis
def test_errors(qgis, gg, make, rng, tmp_path):
    """A bad parameter fails the algorithm with the utility's message and
    leaves no output."""
    src = gg.write(tmp_path / "in.tif", make.real(rng, 20, 20))
    p = qgis.alg("multilook", check=False, INPUT=src, LOOKS_X=100, LOOKS_Y=1,
                 OUTPUT=tmp_path / "q.tif")
    assert p.returncode != 0
    assert "larger than" in p.stdout + p.stderr
    assert not (tmp_path / "q.tif").exists()
    assert not list(tmp_path.glob(".*tmp*"))
    p = qgis.alg("rotate", check=False, INPUT=src, ANGLE=10, DEVICE="cuad",
                 OUTPUT=tmp_path / "r.tif")
    assert p.returncode != 0 and "unknown device 'cuad'" in p.stdout + p.stderr


# ----------------------------------------------- progress and cancel (in QGIS)

SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    from qgis.core import QgsApplication, QgsProcessingFeedback
    app = QgsApplication([], False)
    app.initQgis()
    sys.path.insert(0, "/usr/share/qgis/python/plugins")
    sys.path.insert(0, sys.argv[1])
    import processing
    from processing.core.Processing import Processing
    Processing.initialize()
    from geogpu_processing.provider import GeogpuProvider
    from processing.core.ProcessingConfig import ProcessingConfig
    provider = GeogpuProvider()
    QgsApplication.processingRegistry().addProvider(provider)
    ProcessingConfig.setSettingValue("GEOGPU_UTILITIES_FOLDER", sys.argv[2])
    ProcessingConfig.setSettingValue("GEOGPU_DEVICE", "cpu")

    class Recorder(QgsProcessingFeedback):
        def __init__(self, cancel_at=None):
            super().__init__()
            self.seen, self.cancel_at = [], cancel_at
        def setProgress(self, p):
            self.seen.append(p)
            super().setProgress(p)
            if self.cancel_at is not None and p >= self.cancel_at:
                self.cancel()

    out = {}
    f = Recorder()
    r = processing.run("geogpu:radnorm", {"INPUT": sys.argv[3], "COEF": 2,
                                          "OUTPUT": sys.argv[4]}, feedback=f)
    out["progress"] = f.seen
    # a GG: connection string as a layer (Layer > Add Raster Layer does this)
    from qgis.core import QgsProject, QgsRasterLayer
    lyr = QgsRasterLayer("GG:multilook:looks=2x2:" + sys.argv[3], "gg", "gdal")
    out["gg_layer_valid"] = lyr.isValid()
    QgsProject.instance().addMapLayer(lyr)
    r = processing.run("geogpu:multilook", {"INPUT": lyr, "LOOKS_X": 1, "LOOKS_Y": 1,
                                            "OUTPUT": sys.argv[7]}, feedback=Recorder())
    out["gg_output"] = r["OUTPUT"]
    f = Recorder(cancel_at=10)
    t0 = time.time()
    try:
        r = processing.run("geogpu:ptsel", {"INPUTS": [sys.argv[5]], "WINDOW": 31,
                                            "OUTPUT": sys.argv[6]}, feedback=f)
        out["cancel_result"] = {k: str(v) for k, v in r.items()}
    except Exception as e:
        out["cancel_error"] = str(e)
    out["cancel_seconds"] = time.time() - t0
    out["cancel_progress"] = f.seen
    print("RESULT " + json.dumps(out))
    os._exit(0)  # skip QGIS teardown
""")


@needs_qgis
def test_progress_and_cancel(qgis, gg, rng, tmp_path):
    """GDAL's progress reaches the feedback in 2.5 % steps up to 100; a
    cancel stops the utility and leaves neither output nor temporaries."""
    a = rng.uniform(1, 2, (300, 400)).astype(np.float32)
    src = gg.write(tmp_path / "in.tif", a)
    z = np.exp(1j * rng.uniform(-3, 3, (8, 600, 600))).astype(np.complex64)
    stack = gg.write(tmp_path / "stack.tif", list(z))
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = dict(qgis.env)
    p = subprocess.run(["/usr/bin/python3", str(script), str(qgis.plugin.parent), str(BUILD / "bin"),
                        src, out / "rn.tif", stack, out / "ps.tif", tmp_path / "gg.tif"],
                       capture_output=True, text=True, env=env, timeout=300)
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    assert lines, f"no result:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    res = json.loads(lines[0][7:])
    seen = res["progress"]
    assert seen == sorted(seen) and seen[-1] == 100, seen
    assert {10.0, 50.0, 90.0} <= set(seen) and len(seen) >= 20, seen
    assert (out / "rn.tif").exists()
    assert res["gg_layer_valid"] and res["gg_output"] == str(tmp_path / "gg.tif")
    want, invalid = ref.multilook(a, 2, 2)
    ref.check_product(load(tmp_path / "gg.tif")[0], want, invalid, math.nan, ref.TOL["multilook"],
                      what="a GG: layer in QGIS")
    assert res.get("cancel_result") == {}, res  # a cancelled run gives no outputs
    assert max(res["cancel_progress"]) < 100, res
    assert res["cancel_seconds"] < 60
    assert not (out / "ps.tif").exists()
    left = [f.name for f in out.iterdir() if f.name != "rn.tif"]
    assert not left, f"left behind after cancel: {left}"
