"""gdal_rotate against the float64 reference (reference.rotate)."""
import math

import numpy as np
import pytest

import reference as ref

TOL = ref.TOL["rotate"]
ND = -9999.0

# (angle, scale, outsize or None); 37x29 input, odd and even sizes on purpose
CASES = [
    (30.0, 1.5, None),
    (-17.3, 0.8, None),
    (90.0, 1.0, None),
    (0.0, 1.0, None),     # identity
    (0.0, 2.0, None),     # exact half-pixel ties everywhere
    (180.0, 1.0, None),
    (45.0, 1.2, (45, 21)),
    (33.0, 0.7, (40, 30)),
    (-123.4, 3.1, (16, 12)),
]


def case_id(c):
    return f"a{c[0]:g}_s{c[1]:g}" + (f"_{c[2][0]}x{c[2][1]}" if c[2] else "")


def rotate(gg, tmp_path, src, device, angle, scale, outsize=None, *opts, name="rot.tif", env=None):
    out = tmp_path / name
    size = ["-outsize", *outsize] if outsize else []
    gg.run("gdal_rotate", "-q", "-device", device, "-angle", angle, "-scale", scale, *size, *opts,
           src, out, env=env)
    return out


def real_input(make, rng, H=29, W=37, nodata=ND):
    a = make.real(rng, H, W, nodata=nodata)
    a[12:15, 16:20] = nodata if nodata is not None else np.nan  # a hole in the middle
    return a


def check(gg, out, a, angle, scale, outsize, nodata, device, what):
    Wo, Ho = outsize if outsize else (None, None)
    want, invalid, ambiguous = ref.rotate(a, angle, scale, Wo, Ho, nodata=nodata)
    # the cases are chosen so that no pixel's validity is a rounding-level tie
    assert not ambiguous.any(), f"{what}: {int(ambiguous.sum())} ambiguous pixels: pick other test parameters"
    err = ref.check_product(out, want, invalid, ref.output_nodata(nodata), TOL, what=what, min_valid=0.05)
    gg.record_error("rotate" + ("/complex" if np.iscomplexobj(a) else ""), device, err)
    return want, invalid


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_real(gg, make, rng, tmp_path, device, case):
    angle, scale, outsize = case
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, _, dt = gg.read(rotate(gg, tmp_path, src, device, angle, scale, outsize))
    assert dt == "Float32"
    assert out.shape == ((outsize[1], outsize[0]) if outsize else a.shape)
    gg.check_nodata_value(nd, ND)
    check(gg, out, a, angle, scale, outsize, ND, device, f"rotate {case_id(case)} on {device}")


@pytest.mark.parametrize("case", [CASES[0], CASES[6], CASES[4]], ids=case_id)
def test_complex(gg, make, rng, tmp_path, device, case):
    angle, scale, outsize = case
    z = make.complex(rng, nodata=ND)
    src = gg.write(tmp_path / "slc.tif", z, nodata=ND)
    out, nd, _, dt = gg.read(rotate(gg, tmp_path, src, device, angle, scale, outsize))
    assert dt == "CFloat32", "both parts of complex input are interpolated"
    check(gg, out, z, angle, scale, outsize, ND, device, f"rotate complex {case_id(case)} on {device}")


def test_no_nodata_gives_nan(gg, make, rng, tmp_path, device):
    a = real_input(make, rng, nodata=None)
    src = gg.write(tmp_path / "in.tif", a)
    out, nd, _, _ = gg.read(rotate(gg, tmp_path, src, device, 30, 1.5))
    gg.check_nodata_value(nd, math.nan)
    check(gg, out, a, 30, 1.5, None, None, device, f"rotate NaN on {device}")


def test_dstnodata(gg, make, rng, tmp_path, device):
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, _, _ = gg.read(rotate(gg, tmp_path, src, device, -17.3, 0.8, None, "-dstnodata", -1))
    gg.check_nodata_value(nd, -1.0)
    want, invalid, _ = ref.rotate(a, -17.3, 0.8, nodata=ND)
    err = ref.check_product(out, want, invalid, -1.0, TOL, what=f"rotate -dstnodata on {device}")
    gg.record_error("rotate", device, err)


def test_tie_and_nearest_rule(gg, make, rng, tmp_path, device):
    """Scale 2, angle 0 on 37x29: sx = 9 + X/2, sy = 7 + Y/2 exactly.  With
    input pixel (row r, col 10) nodata, on output row Y = 2r - 14 (fy = 0):
    X=1 samples 9.5 (tie -> nearest col 9, valid; col 10 gets no weight),
    X=2 samples 10 (nearest is the nodata pixel), X=3 samples 10.5 (tie ->
    col 10, nodata)."""
    a = make.real(rng, nan=0.0)
    r = 12
    a[r, 10] = ND
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out = gg.read(rotate(gg, tmp_path, src, device, 0, 2))[0]
    Y = 2 * r - 14
    assert out[Y, 1] == pytest.approx(a[r, 9], rel=1e-6)
    assert out[Y, 2] == ND
    assert out[Y, 3] == ND
    assert out[Y, 4] == pytest.approx(a[r, 11], rel=1e-6)  # samples 11 exactly
    # fy = 0.5 ties go to the lower index: sy = r + 0.5 picks row r, sy = r - 0.5 row r - 1
    assert out[Y + 1, 1] != ND and out[Y + 1, 3] == ND and out[Y - 1, 3] != ND
    check(gg, out, a, 0, 2, None, ND, device, f"rotate ties on {device}")


@pytest.mark.parametrize("W,H", [(1, 29), (37, 1), (2, 2), (1, 1)], ids=lambda v: str(v))
def test_degenerate_sizes(gg, make, rng, tmp_path, device, W, H):
    """One-pixel-wide or -high inputs: the 2x2 cell degenerates (no ix+1)."""
    a = make.real(rng, H, W, nan=0.0)
    src = gg.write(tmp_path / "in.tif", a)
    out = gg.read(rotate(gg, tmp_path, src, device, 30, 0.7, (9, 7)))[0]
    want, invalid, ambiguous = ref.rotate(a, 30, 0.7, 9, 7)
    assert not ambiguous.any()
    err = ref.check_product(out, want, invalid, math.nan, TOL, what=f"rotate {W}x{H} on {device}",
                            min_valid=0.0, min_count=1)
    gg.record_error("rotate", device, err)


GT_CASES = [
    ((500000.0, 10.0, 0.0, 4000000.0, 0.0, -10.0), 30.0, 1.5, None),
    ((431000.0, 12.5, 1.75, 5120000.0, -2.25, -7.5), -17.3, 0.8, (45, 21)),
    ((0.0, 1.0, 0.0, 0.0, 0.0, 1.0), 90.0, 1.0, (40, 30)),
]


@pytest.mark.parametrize("gt,angle,scale,outsize", GT_CASES, ids=["north-up", "sheared", "unit"])
def test_geotransform(gg, make, rng, tmp_path, gt, angle, scale, outsize):
    """Each output pixel centre lies on the ground where the input point it
    samples lies."""
    a = make.real(rng)
    src = gg.write(tmp_path / "in.tif", a, gt=gt)
    _, _, got, _ = gg.read(rotate(gg, tmp_path, src, "cpu", angle, scale, outsize))
    Wo, Ho = outsize if outsize else (None, None)
    dist = ref.rotate_geotransform_check(gt, got, 37, 29, angle, scale, Wo, Ho)
    assert dist < 1e-6, f"output pixel centres are {dist:g} input pixels off their sample points"


def test_multiblock(gg, make, rng, tmp_path, device):
    """An output larger than one processing block (the GG driver computes
    rotations in square blocks of at most 512x512): block edges, source
    windows and their clipping must not show."""
    a = real_input(make, rng, H=530, W=700)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out = gg.read(rotate(gg, tmp_path, src, device, 33, 0.9, (650, 560)))[0]
    check(gg, out, a, 33, 0.9, (650, 560), ND, device, f"rotate multi-block on {device}")


def test_small_device_memory(gg, make, rng, tmp_path, device):
    """GG_DEVICE_MEMORY caps the device memory the library may plan with."""
    a = real_input(make, rng, H=157, W=37)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out = gg.read(rotate(gg, tmp_path, src, device, 33, 0.9, None, env={"GG_DEVICE_MEMORY": "8K"}))[0]
    check(gg, out, a, 33, 0.9, None, ND, device, f"rotate GG_DEVICE_MEMORY=8K on {device}")


@pytest.mark.opencl
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_cpu_opencl_agreement(gg, make, rng, tmp_path, kind):
    a = real_input(make, rng, H=61, W=83) if kind == "real" else make.complex(rng, 61, 83, nodata=ND)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    cpu = gg.read(rotate(gg, tmp_path, src, "cpu", 27.5, 1.3, (70, 64), name="cpu.tif"))[0]
    ocl = gg.read(rotate(gg, tmp_path, src, "opencl", 27.5, 1.3, (70, 64), name="ocl.tif"))[0]
    cpu_nd = ref.is_nodata(cpu, ND)
    assert cpu_nd.any() and not cpu_nd.all()
    err = ref.check_product(ocl, cpu, cpu_nd, ND, TOL, what=f"rotate {kind}: opencl vs cpu")
    gg.record_error("rotate", "ocl~cpu", err)
