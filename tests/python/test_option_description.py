"""One option description per op (gg_op_options, include/geogpu.h) -- and
one for orthorectification, which is no op (gg_ortho_options.c) -- drives
every front end to the same parameters: the utility's command line (its
--describe JSON, and a run with the flags it lists), the GG: connection
string, the Python package's keyword arguments (geogpu.op_info / Op) and
the QGIS Processing provider (its parameters made from --describe, as QGIS
defines them, and qgis_process runs giving the same op options and pixels).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", ROOT / "build")).resolve()
os.environ["GG_LIBRARY"] = str(BUILD / "lib")  # the build under test
sys.path.insert(0, str(ROOT / "gdal_plugins" / "python"))

import geogpu  # noqa: E402

sys.path.insert(0, str(ROOT / "gdal_plugins" / "qgis"))
from geogpu_processing import utilities as qgis_utilities  # noqa: E402  (pure Python)
from test_qgis_provider import QGIS_ABSENT, qgis  # noqa: E402,F401  (the qgis_process fixture)

# op -> (utility, non-default values as Python keyword arguments, complex input?, inputs)
CASES = {
    "multilook": ("gdal_multilook", {"looks": (3, 2), "complex": True}, True, 1),
    "rotate": ("gdal_rotate", {"angle": 17.5, "scale": 1.25, "outsize": (40, 30)}, False, 1),
    "radnorm": ("gdal_radnorm", {"coef": 35.0, "levels": 16}, False, 1),
    "coherence": ("gdal_insar", {"window": (3, 5), "looks": (1, 2)}, True, 2),
    "ptsel": ("gdal_ptsel", {"window": 5, "mindist": 1.5, "threshold": 0.6, "conj": "2",
                             "slc": True, "offsets": True, "mask": True}, True, 1),
    "xcorr": ("gdal_xcorr", {"window": (16, 16), "search": (4, 4), "skip": (16, 16),
                             "gross": (1, -1), "zoom": 8, "ovs": 16, "deramp": False,
                             "snrwindow": 5, "minvalid": 0.5}, True, 2),
}


def describe(gg, utility):
    return json.loads(gg.run(utility, "--describe").stdout)


def options_metadata(ds):
    """GG_OPTIONS of a GG dataset as a dict (gg_op_options_string)."""
    text = ds.GetMetadataItem("GG_OPTIONS") or ""
    return dict(kv.split("=", 1) for kv in text.split(":") if kv)


def cli_args(described, values):
    """The utility's flags for these values, from its --describe entries."""
    by_key = {o["key"]: o for o in described["options"] if o["operation"] == described["operation"]}
    args = []
    for key, v in values.items():
        o = by_key[key]
        assert o["flag"], f"{key} has no flag in {described['program']}"
        if o["kind"] == "bool":
            assert geogpu.format_option(v) == o["switch_value"], (key, v, o)
            args.append(o["flag"])
        elif o["kind"] == "size":
            args += [o["flag"], str(v[0]), str(v[1])]
        else:
            args += [o["flag"], geogpu.format_option(v, o["kind"])]
    return args


@pytest.fixture
def inputs(gg, make, rng, tmp_path):
    def build(op):
        _, _, is_complex, n = CASES[op]
        H, W = (80, 96) if op == "xcorr" else (29, 37)
        gen = make.complex if is_complex else make.real
        if op == "ptsel":
            return [gg.write(tmp_path / "stack.tif", [gen(rng, H=H, W=W) for _ in range(3)])]
        return [gg.write(tmp_path / f"in{k}.tif", gen(rng, H=H, W=W)) for k in range(n)]
    return build


@pytest.mark.parametrize("op", sorted(CASES))
def test_describe_matches_python(gg, op):
    """--describe (C table through gg_app) and geogpu.op_info (C table through
    ctypes) list the same options with the same flag, kind, range, default,
    choices and required."""
    d = describe(gg, CASES[op][0])
    assert d["operation"] == op and d["inputs"] == geogpu.op_info(op).inputs
    cli = [(o["key"], o["flag"], o["kind"], o["min"], o["max"], o["default"],
            tuple(o["choices"].split(",")) if o["choices"] else None, o["required"])
           for o in d["options"] if o["operation"] == op]
    py = [(o.key, o.flag, o.type, o.minimum, o.maximum, o.default, o.choices, o.required)
          for o in geogpu.op_info(op).options]
    assert cli == py
    assert {"srcnodata", "dstnodata"} <= {k for k, *_ in py}
    # every option the cases set is in the table
    assert set(CASES[op][1]) <= {k for k, *_ in py}


@pytest.mark.parametrize("op", sorted(CASES))
def test_help_lists_every_flag(gg, op):
    """--help names every flag the table gives (and the utility's own)."""
    util = CASES[op][0]
    text = gg.run(util, "--help").stdout
    d = describe(gg, util)
    for o in d["options"]:
        if o["flag"]:
            assert o["flag"] in text, (util, o["flag"])
    for f in d["flags"]:
        assert f["flag"] in text, (util, f["flag"])


@pytest.mark.parametrize("op", sorted(CASES))
def test_front_ends_same_parameters(gg, op, inputs, tmp_path):
    """The same values given as flags (the utility writing a .ggvrt), as a GG:
    string and as Python keyword arguments end as the same op options."""
    util, values, _, _ = CASES[op]
    srcs = [str(p) for p in inputs(op)]
    expected = {}
    for o in geogpu.op_info(op).options:
        if o.key in values:
            expected[o.key] = geogpu.format_option(values[o.key], o.type)

    # Python keyword arguments
    py = geogpu.Op(op, **values)
    assert py.options == expected

    # GG: connection string
    conn = "GG:" + op + ":" + ":".join(f"{k}={v}" for k, v in expected.items()) + ":" + \
        ",".join(srcs)
    ds = gdal.Open(conn)
    assert ds is not None, conn
    assert options_metadata(ds) == expected

    # the utility's flags, from its --describe
    out = tmp_path / "out.ggvrt"
    gg.run(util, "-q", "-of", "GGVRT", *cli_args(describe(gg, util), values), *srcs, out)
    vds = gdal.Open(str(out))
    assert vds is not None
    assert options_metadata(vds) == expected
    assert (vds.RasterXSize, vds.RasterYSize, vds.RasterCount) == \
        (ds.RasterXSize, ds.RasterYSize, ds.RasterCount)


def test_flag_run_matches_gg_string(gg, make, rng, tmp_path):
    """A run with the flags --describe lists computes what the GG: string of
    the same values computes, bit for bit (multilook, CPU)."""
    src = gg.write(tmp_path / "slc.tif", make.complex(rng, nodata=None, nan=0.0))
    values = CASES["multilook"][1]
    out = tmp_path / "ml.tif"
    gg.run("gdal_multilook", "-q", "-device", "cpu",
           *cli_args(describe(gg, "gdal_multilook"), values), src, out)
    ds_out = gdal.Open(str(out))
    got = ds_out.GetRasterBand(1).ReadAsArray()
    ds_gg = gdal.Open(f"GG:multilook:looks=3x2:complex=yes:device=cpu:{src}")
    want = ds_gg.GetRasterBand(1).ReadAsArray()
    assert np.iscomplexobj(got) and np.abs(got).max() > 0
    assert gg.same_bits(got, want)


def test_table_checks_values(gg, tmp_path):
    """gg_op_set checks kind and range from the table, for every front end."""
    with pytest.raises(geogpu.ArgumentError):
        geogpu.Op("radnorm", levels=300)
    with pytest.raises(geogpu.ArgumentError):
        geogpu.Op("resample", interp="lanczos")
    p = gg.run("gdal_radnorm", "-levels", "300", tmp_path / "a.tif", tmp_path / "b.tif",
               check=False)
    assert p.returncode == 1 and "levels" in p.stderr
    p = gg.run("gdal_xcorr", "-zoom", "3", tmp_path / "a.tif", tmp_path / "b.tif",
               tmp_path / "c.tif", check=False)
    assert p.returncode == 1 and "zoom" in p.stderr


# ------------------------------------------------------------------ QGIS

COMMON_KEYS = {"srcnodata", "dstnodata"}  # the provider's generic nodata parameters
QGIS_UTILITIES = sorted({u for u, *_ in CASES.values()} | {"gdal_coreg"})


def qgis_entry(util):
    """The provider's algorithm description of a utility, as it loads it:
    the table entry with its parameters from --describe."""
    u = qgis_utilities.resolve(qgis_utilities.by_program()[util], BUILD / "bin" / util)
    assert u.problem is None, u.problem
    return u


def table_options(util):
    """(op option, its op) of every option the utility takes by flag, from
    the C table through Python (not through --describe)."""
    d = describe_cached(util)
    out = []
    for op in (d["operation"], d["also_operation"]):
        if op:
            out += [(o, op) for o in geogpu.op_info(op).options
                    if o.flag and o.key not in COMMON_KEYS]
    return out


_DESCRIBED = {}


def describe_cached(util):
    if util not in _DESCRIBED:
        _DESCRIBED[util] = qgis_utilities.describe(BUILD / "bin" / util)
    return _DESCRIBED[util]


def _size(text):
    return None if text is None else tuple(int(v) for v in text.split("x"))


@pytest.mark.parametrize("util", QGIS_UTILITIES)
def test_qgis_parameters_match_table(util):
    """Each op option the utility takes by flag is one QGIS parameter (or the
    flag of one of its outputs) with the table's flag, kind, default, range,
    choices and required: the provider restates none of them."""
    u = qgis_entry(util)
    by_flag = {p.flag: p for p in u.params}
    product_flags = {pr.flag for pr in u.products if pr.flag}
    options = table_options(util)
    assert options
    for o, op in options:
        if o.flag in product_flags:
            assert o.type == "bool", (util, o.key)  # an output requested by its flag
            continue
        p = by_flag.get(o.flag)
        assert p is not None, f"{util}: {o.flag} ({op}.{o.key}) is no QGIS parameter"
        assert p.key == o.key and p.required == o.required, (util, o.key)
        assert p.optional == (not o.required and o.default is None and o.type != "bool"), o.key
        if o.type in ("int", "float"):
            assert isinstance(p, qgis_utilities.Num) and p.type == o.type, o.key
            want = None if o.default is None else (int if o.type == "int" else float)(o.default)
            assert (p.default, p.minimum, p.maximum) == (want, o.minimum, o.maximum), o.key
        elif o.type == "size":
            assert isinstance(p, qgis_utilities.Pair) and p.type == "int", o.key
            assert (p.default, p.minimum, p.maximum) == (_size(o.default), o.minimum,
                                                         o.maximum), o.key
        elif o.type == "bool":
            # checked gives the flag, which sets the value --describe names
            sw = [x for x in describe_cached(util)["options"] if x["key"] == o.key][0]
            assert isinstance(p, qgis_utilities.Flag) and p.default is False, o.key
            assert sw["switch_value"] != o.default, o.key
        elif o.type == "choice":
            assert isinstance(p, qgis_utilities.Enum), o.key
            assert tuple(p.choices) == o.choices and p.choices[p.default] == o.default, o.key
        else:
            assert isinstance(p, qgis_utilities.Text) and p.default == o.default, o.key
    # nothing else of the op reaches QGIS
    keys = {o.key for o, _ in options}
    assert {p.key for p in u.params if p.key} <= keys


@pytest.mark.skipif(QGIS_ABSENT is not None, reason=QGIS_ABSENT or "")
@pytest.mark.parametrize("util", QGIS_UTILITIES)
def test_qgis_definitions_match_table(qgis, util):
    """QGIS's own definitions of the parameters (qgis_process --json help):
    the table's default, minimum, maximum, choices and optional, integer
    where the table says int."""
    u = qgis_entry(util)
    p = qgis.run("--json", "help", f"geogpu:{u.name}")
    defs = json.loads(p.stdout[p.stdout.find("{"):])["parameters"]
    big = 1.7976931348623157e308
    by_flag = {p.flag: p for p in u.params}
    for o, _ in table_options(util):
        if o.flag not in by_flag:
            continue
        prm = by_flag[o.flag]
        names = prm.names if isinstance(prm, qgis_utilities.Pair) else (prm.name,)
        for k, name in enumerate(names):
            assert name in defs, f"{util}: {name} not defined in QGIS"
            raw = defs[name]["raw_definition"]
            assert defs[name]["optional"] == prm.optional, name
            if o.type in ("int", "float", "size"):
                assert raw["parameter_type"] == "number", name
                assert raw["data_type"] == (1 if o.type == "float" else 0), name
                want = o.default if o.type != "size" else \
                    (None if o.default is None else _size(o.default)[k])
                assert (raw["default"] is None and want is None) or \
                    float(raw["default"]) == float(want), (name, raw["default"], want)
                assert raw["min"] == (o.minimum if o.minimum is not None else -big), name
                assert raw["max"] == (o.maximum if o.maximum is not None else big), name
            elif o.type == "bool":
                assert raw["parameter_type"] == "boolean" and raw["default"] is False, name
            elif o.type == "choice":
                assert raw["parameter_type"] == "enum", name
                assert tuple(raw["options"]) == o.choices, name
                assert raw["options"][raw["default"]] == o.default, name
            else:
                assert raw["parameter_type"] == "string", name
    for name in ("SRCNODATA", "DSTNODATA"):  # the common options' parameters
        assert name in defs


def qgis_values(util, values):
    """The QGIS parameters for option values given as Python keyword
    arguments: a size as NAME_X/NAME_Y, a switch checked when the value is
    the one its flag sets, a choice by index; options that are output flags
    give the names of the outputs to request."""
    u = qgis_entry(util)
    by_key = {p.key: p for p in u.params if p.key}
    described = {o["key"]: o for o in describe_cached(util)["options"]}
    params, outputs = {}, []
    for key, v in values.items():
        o = described[key]
        p = by_key.get(key)
        if p is None:
            pr = [pr for pr in u.products if pr.flag == o["flag"]]
            assert pr and v is True, (util, key)
            outputs.append(pr[0].name)
        elif isinstance(p, qgis_utilities.Pair):
            params[p.names[0]], params[p.names[1]] = v
        elif isinstance(p, qgis_utilities.Flag):
            assert geogpu.format_option(v) == o["switch_value"], (key, v)
            params[p.name] = 1
        elif isinstance(p, qgis_utilities.Enum):
            params[p.name] = list(p.choices).index(v)
        else:
            params[p.name] = v
    return params, outputs


@pytest.mark.skipif(QGIS_ABSENT is not None, reason=QGIS_ABSENT or "")
@pytest.mark.parametrize("op", ["multilook", "rotate", "radnorm", "xcorr"])
def test_qgis_same_options_as_cli(qgis, gg, op, inputs, tmp_path):
    """The same values as QGIS parameters (qgis_process writing a .ggvrt)
    end as the same op options (GG_OPTIONS) as the flags, the GG: string
    and the Python keyword arguments."""
    util, values, _, _ = CASES[op]
    srcs = [str(p) for p in inputs(op)]
    expected = geogpu.Op(op, **values).options
    params, outputs = qgis_values(util, values)
    assert not outputs
    names = [i.name for i in qgis_entry(util).inputs]
    out = tmp_path / "q.ggvrt"
    res = qgis.alg(qgis_entry(util).name, **dict(zip(names, srcs)), **params, OUTPUT=out)
    assert res["OUTPUT"] == str(out)
    ds = gdal.Open(str(out))
    assert ds is not None and options_metadata(ds) == expected
    cli = tmp_path / "u.ggvrt"
    gg.run(util, "-q", "-of", "GGVRT", *cli_args(describe(gg, util), values), *srcs, cli)
    assert options_metadata(gdal.Open(str(cli))) == expected
    if op == "xcorr":  # its default window and search do not fit the small image
        return
    # the defaults alone: only the required options reach the utility
    res = qgis.alg(qgis_entry(util).name, **dict(zip(names, srcs)),
                   **{k: v for k, v in qgis_values(util, {
                       o.key: (_size(o.default) if o.type == "size" else o.default)
                       for o in geogpu.op_info(op).options if o.required})[0].items()},
                   OUTPUT=tmp_path / "d.ggvrt")
    required = {o.key for o in geogpu.op_info(op).options if o.required}
    assert set(options_metadata(gdal.Open(res["OUTPUT"]))) == required


@pytest.mark.skipif(QGIS_ABSENT is not None, reason=QGIS_ABSENT or "")
@pytest.mark.parametrize("op", ["multilook", "coherence", "ptsel"])
def test_qgis_same_pixels_as_cli(qgis, gg, op, inputs, tmp_path):
    """A qgis_process run with the values as QGIS parameters computes what
    the utility computes with them as flags, bit for bit (CPU)."""
    util, values, _, _ = CASES[op]
    srcs = [str(p) for p in inputs(op)]
    params, outputs = qgis_values(util, values)
    u = qgis_entry(util)
    names = [i.name for i in u.inputs]
    dst = {}
    # the outputs: coherence all three products (the CLI's flags added below),
    # ptsel tau_max and the products its values ask for (offsets, mask)
    want = list(u.products) if op == "coherence" else \
        [pr for pr in u.products if not pr.flag or pr.name in outputs]
    if u.products:
        for pr in want:
            dst[pr.name] = tmp_path / f"q_{pr.name}.tif"
    else:
        dst["OUTPUT"] = tmp_path / "q.tif"
    ins = dict(zip(names, srcs)) if not u.inputs[0].multiple else {names[0]: srcs}
    res = qgis.alg(u.name, **ins, **params, **dst)
    cli = tmp_path / "u.tif"
    flags = [pr.flag for pr in want] if op == "coherence" else []
    gg.run(util, "-q", "-device", "cpu", *cli_args(describe(gg, util), values), *flags, *srcs,
           cli)
    if not want:
        assert gg.same_bits(gdal.Open(res["OUTPUT"]).ReadAsArray(),
                            gdal.Open(str(cli)).ReadAsArray())
        return
    compared = 0
    for pr in want:
        q = gdal.Open(res[pr.name])
        for b, band in enumerate(pr.bands, 1):
            got = q.GetRasterBand(b).ReadAsArray()
            assert q.GetRasterBand(b).GetDescription() == band
            u_ds = gdal.Open(str(tmp_path / f"u_{band}.tif"))  # kept while its band is read
            ref = u_ds.GetRasterBand(1).ReadAsArray()
            assert gg.same_bits(got, ref), (op, band)
            compared += 1
    assert compared >= 3


# ------------------------------------------------------------------ ortho

# Ortho is no op of the registry, but its options are described once too
# (gdal/gg_ortho_options.c): gdal_ortho's flags and --describe, the
# GG:ortho: keys, geogpu.ortho_options / ortho_arguments / ortho_string and
# the QGIS parameters all come from that table.

def ortho_cli_args(described, values):
    """gdal_ortho's flags for values, from its --describe entries alone: a
    number flag takes as many values as its "values" names."""
    import re
    by_key = {o["key"]: o for o in described["options"]}
    args = []
    for key, v in values.items():
        o = by_key[key]
        n = len(re.findall(r"<[^>]+>", o["values"] or "")) \
            if o["kind"] in ("int", "float", "size") else 1
        if n > 1:
            args += [o["flag"]] + [geogpu.format_option(x) for x in v]
        else:
            args += [o["flag"], geogpu.format_option(v, o["kind"])]
    return args


@pytest.fixture
def ortho_case(tmp_path):
    """A scene with RPCs, a DEM, and non-default values of most ortho
    options (as Python keyword arguments)."""
    pytest.importorskip("scipy")
    from osgeo import osr
    from test_ortho import synthetic_rpc, write_dem, write_scene
    rng = np.random.default_rng(32)
    scene = write_scene(tmp_path / "scene.tif", rng, 160, 150, "UInt16", synthetic_rpc(160, 150))
    dem = write_dem(tmp_path / "dem.tif", rng, 4326)
    wgs, utm = osr.SpatialReference(), osr.SpatialReference()
    wgs.ImportFromEPSG(4326)
    utm.ImportFromEPSG(32632)
    wgs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    utm.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    cx, cy, _ = osr.CoordinateTransformation(wgs, utm).TransformPoint(6.1, 45.2)
    x0, y0 = round(cx) - 600, round(cy) - 400
    values = {"dem": str(dem), "t_srs": "EPSG:32632", "te": (x0, y0, x0 + 1200, y0 + 800),
              "tr": (20.0, 20.0), "r": "bilinear", "dem_interp": "cubic", "rpc_height": 12.5,
              "grid_step": 8}
    return scene, values


def test_ortho_describe_matches_python(gg):
    """gdal_ortho --describe (the C table through gg_app) and
    geogpu.ortho_options() (the C table through ctypes) list the same
    options with the same flag, kind, range, default, choices and required;
    the GG:ortho: keys are the table's keys."""
    d = describe(gg, "gdal_ortho")
    assert d["program"] == "gdal_ortho" and d["operation"] == "ortho" and d["inputs"] == 1
    cli = [(o["key"], o["flag"], o["kind"], o["min"], o["max"], o["default"],
            tuple(o["choices"].split(",")) if o["choices"] else None, o["required"])
           for o in d["options"]]
    py = [(o.key, o.flag, o.type, o.minimum, o.maximum, o.default, o.choices, o.required)
          for o in geogpu.ortho_options()]
    assert cli == py
    keys = [k for k, *_ in py]
    assert keys == ["dem", "dem_interp", "dem_missing", "dem_nan_missing", "dem_srs",
                    "rpc_height", "t_srs", "tr", "te", "ts", "r", "srcnodata", "dstnodata", "ot",
                    "grid_step"]
    # the flags of several values say how many
    values = {o["key"]: o["values"] for o in d["options"]}
    assert values["tr"] == "<xres> <yres>" and values["te"].count("<") == 4
    assert [f["flag"] for f in d["flags"]] == ["-outdir"]
    # the GG: error for an unknown key lists the table's keys
    p = subprocess.run(["gdalinfo", "GG:ortho:dme=x.tif:scene.tif"], capture_output=True,
                       text=True)
    assert f"(options: {', '.join(keys)})" in p.stderr


def test_ortho_help_lists_every_flag(gg):
    text = gg.run("gdal_ortho", "--help").stdout
    d = describe(gg, "gdal_ortho")
    for o in d["options"]:
        assert o["flag"] in text, o["flag"]
        assert o["values"] is None if o["kind"] == "bool" else o["values"] in text, o
    for f in d["flags"]:
        assert f["flag"] in text


def test_ortho_front_ends_same_pixels(gg, ortho_case, tmp_path):
    """The same values as gdal_ortho flags (from --describe), as
    geogpu.ortho_arguments, and as a GG:ortho: string (geogpu.ortho_string,
    read by gdal_translate) give the same pixels, bit for bit (CPU)."""
    scene, values = ortho_case
    d = describe(gg, "gdal_ortho")
    args = ortho_cli_args(d, values)
    assert geogpu.ortho_arguments(**values) == args
    gg.run("gdal_ortho", "-q", "-device", "cpu", *args, scene, tmp_path / "cli.tif")
    py_args = geogpu.ortho_arguments(**values)
    gg.run("gdal_ortho", "-q", "-device", "cpu", *py_args, scene, tmp_path / "py.tif")
    conn = geogpu.ortho_string(scene, device="cpu", **values)
    assert conn.startswith("GG:ortho:dem=") and ":tr=20.0,20.0:" in conn
    ds = gdal.Open(conn)
    assert ds is not None, conn
    assert ds.GetMetadataItem("GG_ORTHO_GRID_STEP") == "8"
    gdal.Translate(str(tmp_path / "gg.tif"), ds)
    ds = None
    ref = gdal.Open(str(tmp_path / "cli.tif"))
    want = ref.ReadAsArray()
    assert (ref.RasterXSize, ref.RasterYSize) == (60, 40)
    assert (want != 0).mean() > 0.5
    for name in ("py.tif", "gg.tif"):
        got = gdal.Open(str(tmp_path / name))
        assert got.GetGeoTransform() == ref.GetGeoTransform(), name
        assert gg.same_bits(got.ReadAsArray(), want), name


@pytest.mark.parametrize("key, value, words", [
    ("grid_step", 2.5, "an integer from 1 to 1024"),
    ("grid_step", 0, "an integer from 1 to 1024"),
    ("ts", (640.5, 480), "width and height must be positive whole numbers"),
    ("ts", (2000000000, 5), "2000000000 is too large"),
    ("tr", (0, 0), "resolutions must be positive"),
    ("te", (10, 10, 0, 0), "xmin < xmax and ymin < ymax are needed"),
    ("r", "lanczos", "use near, bilinear or cubic"),
    ("ot", "Float64", "use Byte, UInt16, Int16 or Float32"),
    ("dem_missing", "x", "'x' is not a number"),
    ("srcnodata", "abc", "expected 1 to 256 numbers, one per band"),
])
def test_ortho_table_checks_values(gg, tmp_path, key, value, words):
    """One check for every front end: the flag (named as given), the
    GG:ortho: key (named key=value) and the Python package refuse a value
    with the same words."""
    d = describe(gg, "gdal_ortho")
    args = ortho_cli_args(d, {key: value})
    p = gg.run("gdal_ortho", "-q", *args, tmp_path / "a.tif", tmp_path / "b.tif", check=False)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("ERROR")]
    assert p.returncode == 1 and len(errors) == 1, p.stderr
    assert f"gdal_ortho: {' '.join(args)}: {words}" in errors[0], errors[0]
    v = geogpu.format_option(value) if key != "srcnodata" else value
    p = subprocess.run(["gdalinfo", f"GG:ortho:{key}={v}:{tmp_path / 'a.tif'}"],
                       capture_output=True, text=True)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("ERROR")]
    assert p.returncode != 0 and len(errors) == 1, p.stderr
    assert f"{key}={v}: {words}" in errors[0], errors[0]
    with pytest.raises(geogpu.ArgumentError, match=words.replace("(", r"\(")):
        geogpu.ortho_arguments(**{key: value})


def test_ortho_tr_and_ts_exclude_each_other(gg, tmp_path):
    p = gg.run("gdal_ortho", "-tr", 4, 4, "-ts", 10, 10, tmp_path / "a.tif", tmp_path / "b.tif",
               check=False)
    assert p.returncode == 1 and "-tr and -ts cannot be used together" in p.stderr
    with pytest.raises(geogpu.ArgumentError, match="tr and ts"):
        geogpu.ortho_string("a.tif", tr=(4, 4), ts=(10, 10))


def test_ortho_qgis_parameters_match_table():
    """The QGIS ortho algorithm's parameters come from gdal_ortho --describe:
    each option with a flag (but the common nodata ones, and -ot: the
    DATA_TYPE parameter) is one parameter with the table's default, range
    and choices; the hand-written list is gone."""
    u = qgis_entry("gdal_ortho")
    assert u.described and u.params
    by_flag = {p.flag: p for p in u.params}
    for o in geogpu.ortho_options():
        if o.key in COMMON_KEYS or o.key == "ot":
            assert o.flag not in by_flag, o.key
            continue
        p = by_flag.get(o.flag)
        assert p is not None and p.key == o.key, o.key
        if o.key in ("dem",):
            assert isinstance(p, qgis_utilities.Dataset)
        elif o.key in ("t_srs", "dem_srs"):
            assert isinstance(p, qgis_utilities.Crs)
        elif o.key == "te":
            assert isinstance(p, qgis_utilities.Extent) and p.crs_param == "T_SRS"
        elif o.key in ("tr", "ts"):
            assert isinstance(p, qgis_utilities.Pair) and p.names == (f"{o.key.upper()}_X",
                                                                      f"{o.key.upper()}_Y")
            assert p.type == ("int" if o.type == "size" else o.type)
            assert (p.minimum, p.maximum) == (o.minimum, o.maximum)
        elif o.type == "choice":
            assert isinstance(p, qgis_utilities.Enum) and tuple(p.choices) == o.choices
            assert p.choices[p.default] == o.default
        elif o.type in ("int", "float"):
            assert isinstance(p, qgis_utilities.Num) and p.type == o.type
            want = None if o.default is None else (int if o.type == "int" else float)(o.default)
            assert (p.default, p.minimum, p.maximum) == (want, o.minimum, o.maximum), o.key
    assert "-outdir" not in by_flag  # batch mode: not the algorithm's one OUTPUT


@pytest.mark.skipif(QGIS_ABSENT is not None, reason=QGIS_ABSENT or "")
def test_ortho_qgis_same_pixels_as_cli(qgis, gg, ortho_case, tmp_path):
    """The ortho values as QGIS parameters (qgis_process) give the pixels
    gdal_ortho gives with them as flags."""
    scene, values = ortho_case
    u = qgis_entry("gdal_ortho")
    by_key = {p.key: p for p in u.params if p.key}
    params = {}
    for key, v in values.items():
        p = by_key[key]
        if isinstance(p, qgis_utilities.Pair):
            params[p.names[0]], params[p.names[1]] = v
        elif isinstance(p, qgis_utilities.Extent):
            params[p.name] = f"{v[0]},{v[2]},{v[1]},{v[3]} [{values['t_srs']}]"
        elif isinstance(p, qgis_utilities.Enum):
            params[p.name] = list(p.choices).index(v)
        else:
            params[p.name] = v
    res = qgis.alg("ortho", INPUT=scene, **params, DEVICE="cpu", OUTPUT=tmp_path / "q.tif")
    gg.run("gdal_ortho", "-q", "-device", "cpu", *ortho_cli_args(describe(gg, "gdal_ortho"),
                                                               values), scene, tmp_path / "u.tif")
    q, ref = gdal.Open(res["OUTPUT"]), gdal.Open(str(tmp_path / "u.tif"))
    assert q.GetGeoTransform() == ref.GetGeoTransform()
    assert gg.same_bits(q.ReadAsArray(), ref.ReadAsArray())
