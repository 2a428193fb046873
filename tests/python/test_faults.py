"""Fault injection (GG_FAULT, gpu/fault.c) through every utility: a device
allocation, a kernel launch, a host<->device transfer, an FFT, an input read
or an output write that fails at its N-th call must end in a clean error
(exit 1, one ERROR line naming the failure, nothing left in the output
folder, the input untouched) or, when the run never reaches the N-th call,
in the same output as a run without faults.  The first call of every kind a
utility uses must be reached (N = 1 fails).

Kinds per utility: the device kinds (alloc, launch, transfer) everywhere;
fft where the algorithm runs FFTs; read where the input is read through a
fault point (the GG driver, the FMCW reader, GMTSAR's SLC reader,
gdal_ortho's scene reader); write where the output goes through gg_app's
writer, gdal_xcorr -mode gmtsar's table writer or gdal_ortho's pipelined
writer (docs/reliability.md)."""
import numpy as np
import pytest

import reliability_data as rd

DEV = ("alloc", "launch", "transfer")
IO = ("read", "write")

# id -> (program, argv with {placeholders}; {out} is the output, appended
# at the end unless the argv names it, kinds)
UTILITIES = {
    "gdal_multilook": ("gdal_multilook", ["-looks", 2, 2, "{a}"], DEV + IO),
    "gdal_rotate": ("gdal_rotate", ["-angle", 30, "{a}"], DEV + IO),
    "gdal_radnorm": ("gdal_radnorm", ["-coef", 35, "{a}"], DEV + IO),
    "gdal_insar": ("gdal_insar", ["{za}", "{zb}"], DEV + IO),
    "gdal_ptsel": ("gdal_ptsel", ["-window", 5, "{stack}"], DEV + IO),
    "gdal_xcorr": ("gdal_xcorr", [*rd.XCORR_OPTS, "{p}", "{s}"], DEV + ("fft",) + IO),
    "gdal_xcorr-gmtsar": ("gdal_xcorr", ["-mode", "gmtsar", "{mprm}", "{aprm}", *rd.GMTSAR_OPTS,
                                         "-o", "{out}"], DEV + ("fft",) + IO),
    "gdal_coreg": ("gdal_coreg", [*rd.XCORR_OPTS, "{p}", "{s}"], DEV + ("fft",) + IO),
    "gdal_ortho": ("gdal_ortho", ["{scene}"], DEV + IO),
    "gdal_fmcw": ("gdal_fmcw", ["{nc}"], DEV + ("fft",) + IO),
    "gdal_quicklook": ("gdal_quicklook", ["GG:multilook:looks=2x2:{a}"], DEV + ("read",)),
}
ALL_KINDS = DEV + ("fft",) + IO
OUT_NAME = {"gdal_xcorr-gmtsar": "freq.dat", "gdal_quicklook": "out.png"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from conftest import GG, random_complex, random_real
    rng = np.random.default_rng(909)
    indir = tmp_path_factory.mktemp("faults_in")
    GG.write(indir / "a.tif", random_real(rng, 33, 41))
    GG.write(indir / "za.tif", random_complex(rng, 33, 41))
    GG.write(indir / "zb.tif", random_complex(rng, 33, 41))
    GG.write(indir / "stack.tif", [random_complex(rng, 33, 41) for _ in range(4)])
    rd.write_slc_pair(indir, rng)
    rd.write_gmtsar_pair(indir, rng)
    rd.write_rpc_scene(indir / "scene.tif", rng)
    GG.run("gdal_fmcw", "-simulate", *rd.FMCW_SMALL, "-q", indir / "raw.nc")
    return indir


def _argv(utility, indir, out, device):
    prog, args, _ = UTILITIES[utility]
    subst = {"a": indir / "a.tif", "za": indir / "za.tif", "zb": indir / "zb.tif",
             "stack": indir / "stack.tif", "p": indir / "p.tif", "s": indir / "s.tif",
             "mprm": indir / "master.PRM", "aprm": indir / "aligned.PRM",
             "scene": indir / "scene.tif", "nc": indir / "raw.nc", "out": out}
    argv = [str(a).format(**{k: str(v) for k, v in subst.items()}) for a in args]
    if "{out}" not in args:
        argv.append(str(out))
    if prog == "gdal_quicklook":
        return [prog, "-q"] + argv  # no -device: the GG: product reads GG_DEVICE
    mode = argv[:2] if argv[:2] == ["-mode", "gmtsar"] else []  # must come first
    return [prog] + mode + ["-q", "-device", device] + argv[len(mode):]


def _env(utility, device, extra=None):
    e = {"GG_DEVICE": device} if utility == "gdal_quicklook" else {}
    e.update(extra or {})
    return e


def _bands(path):
    from osgeo import gdal
    ds = gdal.Open(str(path))
    arrs = [ds.GetRasterBand(i + 1).ReadAsArray() for i in range(ds.RasterCount)]
    ds = None
    return arrs


def _outputs(folder):
    """File name -> content of every file a run wrote into folder: the bands
    of a raster, the bytes of anything else (the .dat table, a PNG)."""
    res = {}
    for p in sorted(folder.iterdir()):
        res[p.name] = p.read_bytes() if p.suffix in (".dat", ".png") else _bands(p)
    return res


def _same(a, b, gg):
    if a.keys() != b.keys():
        return False
    for f in a:
        if isinstance(a[f], bytes):
            if a[f] != b[f]:
                return False
        elif len(a[f]) != len(b[f]) or not all(gg.same_bits(x, y) for x, y in zip(a[f], b[f])):
            return False
    return True


# Known gaps (utility, kind) -> reason; xfail while listed.
KNOWN = {}
CASES = [pytest.param(u, k, marks=pytest.mark.xfail(reason=KNOWN[(u, k)], strict=False))
         if (u, k) in KNOWN else (u, k)
         for u in UTILITIES for k in ALL_KINDS if k in UTILITIES[u][2]]


@pytest.mark.parametrize("utility,kind", CASES)
def test_fault(gg, inputs, tmp_path, device, utility, kind):
    out_name = OUT_NAME.get(utility, "out.tif")
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    gg.run(*_argv(utility, inputs, ref_dir / out_name, device), env=_env(utility, device))
    reference = _outputs(ref_dir)
    assert reference
    before = gg.snapshot(inputs)
    failed_at = []
    for n in (1, 2, 3, 7):
        outdir = tmp_path / f"out_{n}"
        outdir.mkdir()
        p = gg.run(*_argv(utility, inputs, outdir / out_name, device), check=False,
                   env=_env(utility, device, {"GG_FAULT": f"{kind}:{n}"}))
        assert "Traceback" not in p.stderr and p.returncode in (0, 1), (
            f"{kind}:{n}: exit {p.returncode}\n{p.stderr}")
        if p.returncode == 1:
            failed_at.append(n)
            errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
            assert errors and any("injected fault" in l for l in errors), (
                f"{kind}:{n}: no ERROR line names the injected fault:\n{p.stderr}")
            assert list(outdir.iterdir()) == [], f"{kind}:{n}: output or temporary left behind"
        else:
            assert _same(_outputs(outdir), reference, gg), f"{kind}:{n}: the run succeeded with a different output"
        assert gg.snapshot(inputs) == before, f"{kind}:{n}: an input was modified"
    assert 1 in failed_at, f"GG_FAULT={kind}:1 was never reached by {utility}"


def test_fault_spec_unknown_kind_is_ignored(gg, inputs, tmp_path):
    """A misspelt kind injects nothing (the run succeeds normally)."""
    gg.run(*_argv("gdal_multilook", inputs, tmp_path / "o.tif", "cpu"), env={"GG_FAULT": "allok:1"})
    assert np.isfinite(_bands(tmp_path / "o.tif")[0]).any()


@pytest.mark.parametrize("utility", [u for u in UTILITIES if u != "gdal_quicklook"])
def test_auto_falls_back_to_cpu_with_notice(gg, inputs, tmp_path, utility):
    """-device auto where no GPU opens (here: no CUDA, OpenCL only on the
    CPU through PoCL) runs on the CPU, says so once, and writes what
    -device cpu writes.  Skipped where a GPU is present (gdal_multilook,
    the reference, prints no notice)."""
    probe = gg.run("gdal_multilook", "-device", "auto", "-looks", 2, 2, inputs / "a.tif",
                   tmp_path / "probe.tif")
    if "no GPU device found" not in probe.stderr:
        pytest.skip("a GPU device opened under auto: no fallback to observe")
    out_name = OUT_NAME.get(utility, "out.tif")
    ref, auto = tmp_path / "ref", tmp_path / "auto"
    ref.mkdir()
    auto.mkdir()
    gg.run(*_argv(utility, inputs, ref / out_name, "cpu"))
    argv = [a for a in _argv(utility, inputs, auto / out_name, "auto") if a != "-q"]
    p = gg.run(*argv)
    assert sum("no GPU device found, using the CPU" in l for l in p.stderr.splitlines()) == 1, p.stderr
    assert _same(_outputs(auto), _outputs(ref), gg)


@pytest.mark.parametrize("utility", ["gdal_multilook", "gdal_rotate", "gdal_radnorm", "gdal_insar",
                                     "gdal_ptsel"])
def test_named_device_that_cannot_start(gg, inputs, tmp_path, utility):
    """A device named by -device that cannot start (OpenCL platform 99: none
    has it) ends the run cleanly, the same with -v, which starts it before
    the first read, as without, where its start overlaps the first reads:
    exit 1, one ERROR line naming the device, nothing left in the output
    folder, the input untouched."""
    before = gg.snapshot(inputs)
    lines = []
    for verbose in ([], ["-v"]):
        outdir = tmp_path / f"out{len(verbose)}"
        outdir.mkdir()
        argv = _argv(utility, inputs, outdir / "out.tif", "opencl:99")
        p = gg.run(argv[0], *verbose, *argv[1:], check=False)
        errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
        assert p.returncode == 1 and len(errors) == 1, p.stderr
        assert "cannot start device 'opencl:99'" in errors[0], p.stderr
        assert list(outdir.iterdir()) == [], "output or temporary left behind"
        lines.append(errors[0])
    assert lines[0] == lines[1]
    assert gg.snapshot(inputs) == before


def test_ortho_host_allocation_faults(gg, inputs, tmp_path):
    """GG_FAULT=hostalloc:N fails the N-th host allocation of gdal_ortho's
    scene set-up and blocks (gdal/gg_ortho_scene.c), as memory running out
    under ulimit -v would (an unchecked one segfaulted): each run until one
    no longer reaches the fault ends with one ERROR line saying 'out of
    memory' and an empty output folder, or with the fault-free output."""
    argv = lambda out: _argv("gdal_ortho", inputs, out, "cpu")  # noqa: E731
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    gg.run(*argv(ref_dir / "out.tif"))
    reference = _outputs(ref_dir)
    failed = 0
    for n in range(1, 60):
        outdir = tmp_path / f"out_{n}"
        outdir.mkdir()
        p = gg.run(*argv(outdir / "out.tif"), check=False, env={"GG_FAULT": f"hostalloc:{n}"})
        assert p.returncode in (0, 1), f"hostalloc:{n}: exit {p.returncode}\n{p.stderr}"
        if p.returncode == 0:
            assert _same(_outputs(outdir), reference, gg), f"hostalloc:{n}: another output"
            break
        failed += 1
        errors = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
        assert len(errors) == 1 and "out of memory" in errors[0], f"hostalloc:{n}:\n{p.stderr}"
        assert list(outdir.iterdir()) == [], f"hostalloc:{n}: output or temporary left behind"
    else:
        pytest.fail("every run reached a failing allocation")
    assert failed >= 3, f"only {failed} host allocations were reached"
