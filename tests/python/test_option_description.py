"""One option description per op (gg_op_options, include/geogpu.h) drives
every front end to the same parameters: the utility's command line (its
--describe JSON, and a run with the flags it lists), the GG: connection
string, and the Python package's keyword arguments (geogpu.op_info / Op).
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
