"""gdal_radnorm against the float64 reference (reference.radnorm), and the
property it exists for: removing row and column gains."""
import math

import numpy as np
import pytest

import reference as ref

TOL = ref.TOL["radnorm"]
ND = -9999.0


def radnorm(gg, tmp_path, src, device, coef, *opts, name="rn.tif", env=None):
    out = tmp_path / name
    gg.run("gdal_radnorm", "-q", "-device", device, "-coef", coef, *opts, src, out, env=env)
    return out


def gains(rng, n, lo=0.3, hi=3.0):
    """Positive gain profile: a smooth trend times random ripple."""
    t = np.linspace(0.0, 1.0, n)
    return (lo + (hi - lo) * t ** 2) * rng.uniform(0.8, 1.25, n)


def real_input(make, rng, H=29, W=37, nodata=ND):
    """Gain-modulated positive data with NaN and nodata sprinkled in, one row
    without any valid pixel (R undefined), one column of negative values
    (C < 0, so R*C <= 0 there), and a negative, a tiny and a huge pixel."""
    a = make.real(rng, H, W, nodata=nodata)
    keep = np.isnan(a) | (a == nodata)  # NaN and nodata stay as they are
    a = np.where(keep, a, a * gains(rng, H)[:, None] * gains(rng, W)[None, :]).astype(np.float32)
    a[:, 7] = -rng.uniform(1.0, 2.0, H).astype(np.float32)
    a[5, :] = nodata if nodata is not None else np.nan
    a[2, 3], a[3, 4], a[4, 2] = -1.0, 1e-3, 40.0 * np.nanmax(a)  # F < 0, F ~ 0, F large
    return a


@pytest.mark.parametrize("coef", [35.0, 0.25])
def test_real(gg, make, rng, tmp_path, device, coef):
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, _, dt = gg.read(radnorm(gg, tmp_path, src, device, coef))
    want, invalid = ref.radnorm(a, coef, nodata=ND)
    assert dt == "Float32"
    assert invalid[5].all() and invalid[:, 7].all()
    gg.check_nodata_value(nd, ND)
    err = ref.check_product(out, want, invalid, ND, TOL, what=f"radnorm coef={coef} on {device}")
    gg.record_error("radnorm", device, err)


def test_complex_amplitude(gg, make, rng, tmp_path, device):
    """Complex input is normalised on its amplitude |z|."""
    z = make.complex(rng, nodata=ND)
    g = (gains(rng, 29)[:, None] * gains(rng, 37)[None, :])
    with np.errstate(invalid="ignore"):  # Inf/NaN parts stay invalid
        z = np.where(z.real == ND, z, z * g).astype(np.complex64)
    src = gg.write(tmp_path / "slc.tif", z, nodata=ND)
    out, nd, _, dt = gg.read(radnorm(gg, tmp_path, src, device, 3))
    want, invalid = ref.radnorm(z, 3, nodata=ND)
    assert dt == "Float32"
    err = ref.check_product(out, want, invalid, ND, TOL, what=f"radnorm complex on {device}")
    gg.record_error("radnorm/complex", device, err)


def test_no_nodata_gives_nan(gg, make, rng, tmp_path, device):
    a = real_input(make, rng, nodata=None)
    src = gg.write(tmp_path / "in.tif", a)
    out, nd, _, _ = gg.read(radnorm(gg, tmp_path, src, device, 35))
    want, invalid = ref.radnorm(a, 35)
    gg.check_nodata_value(nd, math.nan)
    err = ref.check_product(out, want, invalid, math.nan, TOL, what=f"radnorm NaN on {device}")
    gg.record_error("radnorm", device, err)


def test_dstnodata(gg, make, rng, tmp_path, device):
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, _, _ = gg.read(radnorm(gg, tmp_path, src, device, 35, "-dstnodata", -1))
    want, invalid = ref.radnorm(a, 35, nodata=ND)
    gg.check_nodata_value(nd, -1.0)
    err = ref.check_product(out, want, invalid, -1.0, TOL, what=f"radnorm -dstnodata on {device}")
    gg.record_error("radnorm", device, err)


def check_levels(out, F, invalid, levels, nodata, what):
    """Byte levels equal the reference's except where F is within float32
    rounding of a half-integer; the nodata mask matches exactly."""
    q, ambiguous = ref.quantise(F, invalid, levels)
    assert out.dtype == np.uint8, what
    got_nd = out == nodata
    assert (got_nd == invalid).all(), f"{what}: nodata mask differs at {int((got_nd != invalid).sum())} pixels"
    wrong = (out.astype(np.int64) != q) & ~invalid & ~ambiguous
    assert not wrong.any(), (
        f"{what}: {int(wrong.sum())} wrong levels, e.g. F={F[wrong][0]!r} gave {out[wrong][0]}, expected {q[wrong][0]}")
    assert ambiguous.sum() <= 0.01 * (~invalid).sum(), f"{what}: {int(ambiguous.sum())} half-integer ties"
    return q


@pytest.mark.parametrize("levels,coef", [(16, 8.0), (2, 0.7), (255, 100.0)])
def test_levels(gg, make, rng, tmp_path, device, levels, coef):
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, _, dt = gg.read(radnorm(gg, tmp_path, src, device, coef, "-levels", levels))
    assert dt == "Byte"
    assert nd == 255, "quantised output has nodata 255 by default"
    F, invalid = ref.radnorm(a, coef, nodata=ND)
    q = check_levels(out, F, invalid, levels, 255, f"radnorm -levels {levels} on {device}")
    assert q[~invalid].min() == 0 and F[~invalid].min() < 0, "test data must reach the lower clamp"
    assert levels == 255 or F[~invalid].max() > levels, "test data must reach the upper clamp"


def test_levels_dstnodata(gg, make, rng, tmp_path, device):
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, _, _ = gg.read(radnorm(gg, tmp_path, src, device, 8, "-levels", 16, "-dstnodata", 200))
    assert nd == 200
    F, invalid = ref.radnorm(a, 8, nodata=ND)
    check_levels(out, F, invalid, 16, 200, f"radnorm -levels 16 -dstnodata 200 on {device}")


def test_separable_image_is_flat(gg, rng, tmp_path, device):
    """I = g(y) h(x): the gains are all there is, so F = coef everywhere."""
    H, W = 41, 53
    a = (gains(rng, H)[:, None] * gains(rng, W)[None, :]).astype(np.float32)
    src = gg.write(tmp_path / "in.tif", a)
    out = gg.read(radnorm(gg, tmp_path, src, device, 35))[0]
    err = ref.rel_l2(out, np.full((H, W), 35.0))
    assert err <= TOL, f"separable image: F is not flat (relative L2 {err:.3e})"
    gg.record_error("radnorm", device, err)


def gain_free_sigma(rng, g, h, eps=0.5):
    """A random, non-separable texture sigma with mean 1 that carries no
    structure along the gains: every row of (sigma - 1) is orthogonal to h
    and to the constant, every column to g and to the constant.  Then for
    I = g(y) h(x) sigma the row/column means are exactly g(y) mean(h) and
    h(x) mean(g), so radnorm must return exactly coef * sigma / mean(sigma)."""
    H, W = len(g), len(h)
    S = rng.standard_normal((H, W))
    qx, _ = np.linalg.qr(np.stack([h, np.ones(W)], axis=1))
    qy, _ = np.linalg.qr(np.stack([g, np.ones(H)], axis=1))
    S = S - (S @ qx) @ qx.T
    S = S - qy @ (qy.T @ S)
    assert np.abs(S @ h).max() < 1e-9 and np.abs(g @ S).max() < 1e-9
    sigma = 1.0 + eps * S / np.abs(S).max()
    assert abs(sigma.mean() - 1.0) < 1e-12 and sigma.min() >= 1.0 - eps
    assert np.linalg.matrix_rank(sigma - sigma.mean()) > 2  # not separable
    return sigma


def test_gains_removed(gg, rng, tmp_path, device):
    """I = g(y) h(x) sigma with random positive gains: F = coef * sigma / mean(sigma)."""
    H, W, coef = 47, 61, 35.0
    g, h = gains(rng, H), gains(rng, W)
    sigma = gain_free_sigma(rng, g, h)
    a = (g[:, None] * h[None, :] * sigma).astype(np.float32)
    src = gg.write(tmp_path / "in.tif", a)
    out = gg.read(radnorm(gg, tmp_path, src, device, coef))[0]
    ratio = out.astype(np.float64) * sigma.mean() / (coef * sigma)
    assert np.abs(ratio - 1.0).max() < 1e-5, f"gains not removed: F*mean(sigma)/(coef*sigma) in " \
        f"[{ratio.min():.7f}, {ratio.max():.7f}]"
    # and the gains are gone: the output profiles are flat
    assert np.abs(out.mean(axis=1) / coef - 1).max() < 1e-5
    assert np.abs(out.mean(axis=0) / coef - 1).max() < 1e-5
    gg.record_error("radnorm", device, ref.rel_l2(out, coef * sigma / sigma.mean()))


def test_small_device_memory(gg, make, rng, tmp_path, device):
    """GG_DEVICE_MEMORY caps the device memory the library may plan with
    (geogpu.h: for tests of the blocked paths): the result is the same."""
    a = real_input(make, rng, H=173, W=37)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out = gg.read(radnorm(gg, tmp_path, src, device, 35, env={"GG_DEVICE_MEMORY": "8K"}))[0]
    want, invalid = ref.radnorm(a, 35, nodata=ND)
    err = ref.check_product(out, want, invalid, ND, TOL, what=f"radnorm GG_DEVICE_MEMORY=8K on {device}")
    gg.record_error("radnorm", device, err)


@pytest.mark.opencl
@pytest.mark.parametrize("kind", ["real", "complex", "levels"])
def test_cpu_opencl_agreement(gg, make, rng, tmp_path, kind):
    if kind == "complex":
        a = make.complex(rng, 61, 83, nodata=ND)
    else:
        a = real_input(make, rng, H=61, W=83)
    opts = ["-levels", 16] if kind == "levels" else []
    coef = 8 if kind == "levels" else 35
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    cpu = gg.read(radnorm(gg, tmp_path, src, "cpu", coef, *opts, name="cpu.tif"))[0]
    ocl = gg.read(radnorm(gg, tmp_path, src, "opencl", coef, *opts, name="ocl.tif"))[0]
    if kind == "levels":
        assert ((cpu == 255) == (ocl == 255)).all()
        F, invalid = ref.radnorm(a, coef, nodata=ND)
        _, ambiguous = ref.quantise(F, invalid, 16)
        assert ((cpu == ocl) | ambiguous).all(), "quantised levels differ between cpu and opencl"
        return
    cpu_nd = ref.is_nodata(cpu, ND)
    assert cpu_nd.any() and not cpu_nd.all()
    err = ref.check_product(ocl, cpu, cpu_nd, ND, TOL, what=f"radnorm {kind}: opencl vs cpu")
    gg.record_error("radnorm", "ocl~cpu", err)
