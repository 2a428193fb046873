"""Every utility behaves alike on GDAL's conventions: --version names geogpu's and
GDAL's versions and exits 0; --help-general prints GDAL's general options and exits 0;
--help exits 0 and every flag it lists is one the parser knows (never "unknown option");
an unknown flag is refused with one line naming it.

gdal_xcorr (-mode gmtsar) and gdal_fmcw (-simulate) are checked in both modes: each
second mode has its own parser."""
import re
import subprocess

import pytest
from osgeo import gdal

from conftest import BIN, REPO

# the project's version, as CMake gives it to the library
VERSION = re.search(r"project\(geogpu\s+VERSION\s+([\d.]+)",
                    (REPO / "CMakeLists.txt").read_text()).group(1)

UTILITIES = ["gdal_multilook", "gdal_rotate", "gdal_radnorm", "gdal_insar", "gdal_xcorr",
             "gdal_xcorr -mode gmtsar", "gdal_coreg", "gdal_ptsel", "gdal_warp", "gdal_ortho",
             "gdal_fmcw", "gdal_fmcw -simulate", "gdal_quicklook"]


def command(utility):
    prog, *mode = utility.split()
    return [str(BIN / prog), *mode]


def run(utility, *args, cwd=None):
    p = subprocess.run(command(utility) + list(args), capture_output=True, text=True,
                       timeout=60, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("utility", UTILITIES)
def test_version(utility):
    rc, out, err = run(utility, "--version")
    assert rc == 0, err
    prog = utility.split()[0]
    assert re.fullmatch(rf"{prog} \(geogpu {re.escape(VERSION)}\), .*running with GDAL "
                        rf"{re.escape(gdal.__version__)}\n", out), out
    assert err == ""


@pytest.mark.parametrize("utility", UTILITIES)
def test_help_general(utility):
    rc, out, err = run(utility, "--help-general")
    assert rc == 0, err
    assert out.startswith("Generic GDAL utility command options:"), out[:200]
    assert "--config" in out and err == ""


def help_flags(text):
    """The flags --help lists: in the synopsis and at the start of option lines."""
    flags = set()
    usage, _, body = text.partition("\n\n")
    flags |= set(re.findall(r"\[(--?[A-Za-z][\w-]*)", usage))
    flags |= set(re.findall(r"\|\s*(--?[A-Za-z][\w-]*)", usage))   # [-a | -b]
    for line in body.splitlines():
        m = re.match(r"\s{1,8}(--?[A-Za-z][\w-]*)", line)
        if m:
            flags.add(m.group(1))
    return flags


@pytest.mark.parametrize("utility", UTILITIES)
def test_help_lists_only_accepted_flags(utility, tmp_path):
    rc, out, err = run(utility, "--help")
    assert rc == 0 and out.startswith("Usage:"), err
    flags = help_flags(out)
    assert len(flags) >= 4, out   # the parse found the listing
    assert {"--help", "--version"} <= flags, sorted(flags)
    answered = {"--help", "-h", "--version", "--help-general", "--describe", "--formats",
                "--utility_version"}
    unknown = []
    for flag in sorted(flags - answered):
        # the flag alone: a missing value or missing operands is fine here,
        # what may not come is the parser not knowing it
        rc, fout, ferr = run(utility, flag, cwd=tmp_path)
        if "unknown option" in ferr.lower() or "unknown flag" in ferr.lower():
            unknown.append((flag, ferr.strip()))
    assert not unknown, unknown


@pytest.mark.parametrize("utility", UTILITIES)
def test_unknown_flag_refused(utility):
    """Before any input is opened (gdal_coreg refused one only in its resample
    step, after measuring the offsets)."""
    rc, out, err = run(utility, "-no_such_flag", "a", "b", "c")
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "unknown option" in lines[0] and "-no_such_flag" in lines[0], err
    assert lines[0].startswith("ERROR 1: " + utility.split()[0]), err


def test_warp_rpc_errors_name_gdal_warp(tmp_path):
    """gdal_warp -rpc runs gdal_ortho's engine; its error lines name gdal_warp."""
    rc, out, err = run("gdal_warp", "-rpc", str(tmp_path / "missing.tif"),
                       str(tmp_path / "o.tif"))
    assert rc == 1 and err.startswith("ERROR 1: gdal_warp: ") and err.count("\n") == 1, err
    assert not (tmp_path / "o.tif").exists()
