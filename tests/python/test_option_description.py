"""One option description per op (gg_op_options, include/geogpu.h) drives
every front end to the same parameters: the utility's command line (its
--describe JSON, and a run with the flags it lists), the GG: connection
string, the Python package's keyword arguments (geogpu.op_info / Op) and
the QGIS Processing provider (its parameters made from --describe, as QGIS
defines them, and qgis_process runs giving the same op options and pixels).
"""
import json
import os
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
