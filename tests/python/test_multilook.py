"""gdal_multilook against the float64 reference (reference.multilook)."""
import math

import numpy as np
import pytest

import reference as ref

TOL = ref.TOL["multilook"]
ND = -9999.0


def multilook(gg, tmp_path, src, device, *opts, name="ml.tif", env=None):
    out = tmp_path / name
    gg.run("gdal_multilook", "-q", "-device", device, *opts, src, out, env=env)
    return out


def real_input(make, rng, H=29, W=37, nodata=ND):
    a = make.real(rng, H, W, nodata=nodata)
    # one whole 4x4 block and one 3x2 block without any valid sample
    a[0:4, 0:4] = nodata if nodata is not None else np.nan
    a[10:12, 9:12] = np.nan
    return a


@pytest.mark.parametrize("lx,ly", [(4, 4), (3, 2), (5, 7), (1, 1), (37, 1), (37, 29)], ids=lambda v: str(v))
def test_real(gg, make, rng, tmp_path, device, lx, ly):
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, gt, dt = gg.read(multilook(gg, tmp_path, src, device, "-looks", lx, ly))
    want, invalid = ref.multilook(a, lx, ly, nodata=ND)
    assert dt == "Float32"
    assert out.shape == (29 // ly, 37 // lx)
    gg.check_nodata_value(nd, ND, "input nodata carried over")
    if lx == ly == 4:
        assert invalid[0, 0], "test data must hold an all-invalid block"
    err = ref.check_product(out, want, invalid, ND, TOL, what=f"multilook {lx}x{ly} on {device}", min_count=1)
    gg.record_error("multilook", device, err)


def test_no_nodata_gives_nan(gg, make, rng, tmp_path, device):
    """Without an input nodata value, empty blocks are NaN."""
    a = real_input(make, rng, nodata=None)
    src = gg.write(tmp_path / "in.tif", a)
    out, nd, _, _ = gg.read(multilook(gg, tmp_path, src, device, "-looks", 2, 2))
    want, invalid = ref.multilook(a, 2, 2)
    assert invalid.any()
    gg.check_nodata_value(nd, math.nan)
    err = ref.check_product(out, want, invalid, math.nan, TOL, what=f"multilook NaN on {device}")
    gg.record_error("multilook", device, err)


def test_dstnodata(gg, make, rng, tmp_path, device):
    a = real_input(make, rng)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, nd, _, _ = gg.read(multilook(gg, tmp_path, src, device, "-looks", 4, 4, "-dstnodata", -1))
    want, invalid = ref.multilook(a, 4, 4, nodata=ND)
    gg.check_nodata_value(nd, -1.0, "-dstnodata")
    err = ref.check_product(out, want, invalid, -1.0, TOL, what=f"multilook -dstnodata on {device}")
    gg.record_error("multilook", device, err)


def test_srcnodata(gg, make, rng, tmp_path, device):
    """-srcnodata declares a nodata value the input file does not carry."""
    a = real_input(make, rng, nodata=-5.0)
    src = gg.write(tmp_path / "in.tif", a)  # no nodata in the file
    out, nd, _, _ = gg.read(multilook(gg, tmp_path, src, device, "-looks", 4, 4, "-srcnodata", -5))
    want, invalid = ref.multilook(a, 4, 4, nodata=-5.0)
    gg.check_nodata_value(nd, -5.0, "-srcnodata")
    err = ref.check_product(out, want, invalid, -5.0, TOL, what=f"multilook -srcnodata on {device}")
    gg.record_error("multilook", device, err)


def complex_input(make, rng, H=29, W=37):
    z = make.complex(rng, H, W, nodata=ND)
    z[0:3, 0:4] = ND  # covers a whole 3x2 and 4x3 block: no valid sample
    return z


def test_complex_intensity(gg, make, rng, tmp_path, device):
    z = complex_input(make, rng)
    src = gg.write(tmp_path / "slc.tif", z, nodata=ND)
    out, nd, _, dt = gg.read(multilook(gg, tmp_path, src, device, "-looks", 3, 2))
    want, invalid = ref.multilook(z, 3, 2, nodata=ND)
    assert dt == "Float32", "complex input without -complex gives intensity (Float32)"
    assert invalid[0, 0]
    err = ref.check_product(out, want, invalid, ND, TOL, what=f"multilook intensity on {device}")
    gg.record_error("multilook/complex", device, err)


def test_complex_mean(gg, make, rng, tmp_path, device):
    z = complex_input(make, rng)
    src = gg.write(tmp_path / "slc.tif", z, nodata=ND)
    out, nd, _, dt = gg.read(multilook(gg, tmp_path, src, device, "-looks", 3, 2, "-complex"))
    want, invalid = ref.multilook(z, 3, 2, nodata=ND, complex_mean=True)
    assert dt == "CFloat32"
    err = ref.check_product(out, want, invalid, ND, TOL, what=f"multilook -complex on {device}")
    gg.record_error("multilook/complex", device, err)


def test_geotransform(gg, make, rng, tmp_path):
    a = make.real(rng)
    gt = (431000.0, 12.5, 1.75, 5120000.0, -2.25, -7.5)  # rotated/sheared on purpose
    src = gg.write(tmp_path / "in.tif", a, gt=gt)
    _, _, got, _ = gg.read(multilook(gg, tmp_path, src, "cpu", "-looks", 5, 3))
    np.testing.assert_allclose(got, ref.multilook_geotransform(gt, 5, 3), rtol=1e-12, atol=1e-9)


def test_small_device_memory(gg, make, rng, tmp_path, device):
    """GG_DEVICE_MEMORY caps the device memory the library may plan with
    (geogpu.h: for tests of the blocked paths): the result is the same."""
    a = real_input(make, rng, H=201, W=37)
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    out, _, _, _ = gg.read(multilook(gg, tmp_path, src, device, "-looks", 3, 2,
                                     env={"GG_DEVICE_MEMORY": "8K"}))
    want, invalid = ref.multilook(a, 3, 2, nodata=ND)
    err = ref.check_product(out, want, invalid, ND, TOL, what=f"multilook GG_DEVICE_MEMORY=8K on {device}")
    gg.record_error("multilook", device, err)


@pytest.mark.opencl
@pytest.mark.parametrize("kind", ["real", "intensity", "complex"])
def test_cpu_opencl_agreement(gg, make, rng, tmp_path, kind):
    if kind == "real":
        a, opts = real_input(make, rng, H=61, W=83), []
    else:
        a, opts = complex_input(make, rng, H=61, W=83), (["-complex"] if kind == "complex" else [])
    src = gg.write(tmp_path / "in.tif", a, nodata=ND)
    cpu = gg.read(multilook(gg, tmp_path, src, "cpu", "-looks", 4, 3, *opts, name="cpu.tif"))[0]
    ocl = gg.read(multilook(gg, tmp_path, src, "opencl", "-looks", 4, 3, *opts, name="ocl.tif"))[0]
    cpu_nd = ref.is_nodata(cpu, ND)
    assert cpu_nd.any() and not cpu_nd.all()
    err = ref.check_product(ocl, cpu, cpu_nd, ND, TOL, what=f"multilook {kind}: opencl vs cpu")
    gg.record_error("multilook", "ocl~cpu", err)
