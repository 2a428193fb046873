"""Fault injection (GG_FAULT, gpu/fault.c) through every utility: a device
allocation, a kernel launch, a host<->device transfer, an input read or an
output write that fails at its N-th call must end in a clean error (exit 1,
one ERROR line naming the failure, nothing left in the output folder, the
input untouched) or, when the run never reaches the N-th call, in the same
output as a run without faults.  The first call of every kind must be
reached: each utility allocates, launches, transfers, reads and writes."""
import numpy as np
import pytest

KINDS = ("alloc", "launch", "transfer", "read", "write")

# utility -> (argv with {a} {b} {stack} {out}, inputs it needs)
UTILITIES = {
    "gdal_multilook": ["-looks", 2, 2, "{a}"],
    "gdal_rotate": ["-angle", 30, "{a}"],
    "gdal_radnorm": ["-coef", 35, "{a}"],
    "gdal_insar": ["{za}", "{zb}"],
    "gdal_ptsel": ["-window", 5, "{stack}"],
}


@pytest.fixture
def inputs(gg, make, rng, tmp_path):
    indir = tmp_path / "in"
    indir.mkdir()
    gg.write(indir / "a.tif", make.real(rng, 33, 41))
    gg.write(indir / "za.tif", make.complex(rng, 33, 41))
    gg.write(indir / "zb.tif", make.complex(rng, 33, 41))
    gg.write(indir / "stack.tif", [make.complex(rng, 33, 41) for _ in range(4)])
    return indir


def _argv(utility, indir, out, device):
    subst = {"a": indir / "a.tif", "za": indir / "za.tif", "zb": indir / "zb.tif",
             "stack": indir / "stack.tif"}
    args = [str(a).format(**{k: str(v) for k, v in subst.items()}) for a in UTILITIES[utility]]
    return [utility, "-q", "-device", device] + args + [str(out)]


def _bands(path, gg):
    from osgeo import gdal
    ds = gdal.Open(str(path))
    arrs = [ds.GetRasterBand(i + 1).ReadAsArray() for i in range(ds.RasterCount)]
    ds = None
    return arrs


def _outputs(folder, gg):
    """File name -> bands of every raster a run wrote into folder (utilities
    such as gdal_insar write one file per product)."""
    return {p.name: _bands(p, gg) for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("utility", UTILITIES)
@pytest.mark.parametrize("kind", KINDS)
def test_fault(gg, inputs, tmp_path, device, utility, kind):
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    gg.run(*_argv(utility, inputs, ref_dir / "out.tif", device))
    reference = _outputs(ref_dir, gg)
    assert reference
    before = gg.snapshot(inputs)
    failed_at = []
    for n in (1, 2, 3, 7):
        outdir = tmp_path / f"out_{n}"
        outdir.mkdir()
        p = gg.run(*_argv(utility, inputs, outdir / "out.tif", device), check=False,
                   env={"GG_FAULT": f"{kind}:{n}"})
        assert "Traceback" not in p.stderr and p.returncode in (0, 1), (
            f"{kind}:{n}: exit {p.returncode}\n{p.stderr}")
        if p.returncode == 1:
            failed_at.append(n)
            errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
            assert errors and any("injected fault" in l for l in errors), (
                f"{kind}:{n}: no ERROR line names the injected fault:\n{p.stderr}")
            assert list(outdir.iterdir()) == [], f"{kind}:{n}: output or temporary left behind"
        else:
            got = _outputs(outdir, gg)
            assert got.keys() == reference.keys() and all(
                len(got[f]) == len(reference[f]) and
                all(gg.same_bits(g, r) for g, r in zip(got[f], reference[f])) for f in got), (
                f"{kind}:{n}: the run succeeded with a different output")
        assert gg.snapshot(inputs) == before, f"{kind}:{n}: an input was modified"
    assert 1 in failed_at, f"GG_FAULT={kind}:1 was never reached by {utility}"


def test_fault_spec_unknown_kind_is_ignored(gg, inputs, tmp_path):
    """A misspelt kind injects nothing (the run succeeds normally)."""
    gg.run(*_argv("gdal_multilook", inputs, tmp_path / "o.tif", "cpu"), env={"GG_FAULT": "allok:1"})
    assert np.isfinite(_bands(tmp_path / "o.tif", gg)[0]).any()
