"""The products on real data (autotest_data/): the Winnipeg SLC (isce3,
Apache-2.0) and a Sentinel-1 amplitude crop (psps, MIT), on every device,
against the float64 references."""
import math
import shutil

import numpy as np
import pytest

import reference as ref

AMP = ("psps_houston", "20180115_amp_crop.tif")
SLC = ("winnipeg_slc", "winnipeg_hh.slc", "winnipeg_hh.hdr")


@pytest.fixture
def data(gg, tmp_path):
    """Copies of the real data (the tests never run on the committed files)."""
    src = tmp_path / "in"
    src.mkdir()
    for folder, *names in (AMP, SLC):
        for n in names:
            shutil.copy(gg.data / folder / n, src / n)
    before = gg.snapshot(src)
    yield src
    assert gg.snapshot(src) == before, "an input file was modified or a file was added next to the inputs"


def load(gg, path):
    a = gg.read(path)[0]
    assert np.isfinite(a).all() and np.abs(a).min() > 0, "real data changed: expected no zero/NaN sample"
    return a


@pytest.mark.parametrize("looks,cplx", [((5, 5), False), ((4, 3), False), ((3, 7), True)],
                         ids=["5x5", "4x3", "3x7-complex"])
def test_multilook_slc(gg, data, tmp_path, device, looks, cplx):
    src = data / "winnipeg_hh.slc"
    z = load(gg, src)
    assert z.dtype == np.complex64 and z.shape == (250, 250)
    out_path = tmp_path / "ml.tif"
    gg.run("gdal_multilook", "-q", "-device", device, "-looks", *looks, *(["-complex"] if cplx else []),
           src, out_path)
    out, nd, _, dt = gg.read(out_path)
    assert dt == ("CFloat32" if cplx else "Float32")
    want, invalid = ref.multilook(z, *looks, complex_mean=cplx)
    assert not invalid.any()
    err = ref.check_product(out, want, invalid, math.nan, ref.TOL["multilook"],
                            what=f"multilook SLC {looks} on {device}")
    gg.record_error("multilook/real-data", device, err)


@pytest.mark.parametrize("levels", [None, 32])
def test_radnorm_amplitude(gg, data, tmp_path, device, levels):
    src = data / AMP[1]
    a = load(gg, src)
    out_path = tmp_path / "rn.tif"
    coef = 16 if levels else 35
    gg.run("gdal_radnorm", "-q", "-device", device, "-coef", coef,
           *(["-levels", levels] if levels else []), src, out_path)
    out, nd, _, dt = gg.read(out_path)
    F, invalid = ref.radnorm(a, coef)
    assert not invalid.any()
    if levels:
        assert dt == "Byte" and nd == 255
        q, ambiguous = ref.quantise(F, invalid, levels)
        wrong = (out.astype(np.int64) != q) & ~ambiguous
        assert not wrong.any(), f"{int(wrong.sum())} wrong levels on {device}"
        assert ambiguous.sum() <= 0.01 * ambiguous.size
        assert len(np.unique(out)) > levels // 2, "the levels should be well used on real data"
        return
    assert dt == "Float32"
    gg.check_nodata_value(nd, math.nan, "no input nodata")
    err = ref.check_product(out, F, invalid, math.nan, ref.TOL["radnorm"],
                            what=f"radnorm amplitude on {device}")
    gg.record_error("radnorm/real-data", device, err)


def test_radnorm_slc(gg, data, tmp_path, device):
    src = data / "winnipeg_hh.slc"
    z = load(gg, src)
    out_path = tmp_path / "rn.tif"
    gg.run("gdal_radnorm", "-q", "-device", device, "-coef", 35, src, out_path)
    out, nd, _, _ = gg.read(out_path)
    F, invalid = ref.radnorm(z, 35)
    err = ref.check_product(out, F, invalid, math.nan, ref.TOL["radnorm"],
                            what=f"radnorm SLC on {device}")
    gg.record_error("radnorm/real-data", device, err)


@pytest.mark.parametrize("angle,scale,outsize", [(30.0, 1.5, None), (-12.0, 0.9, (140, 100))],
                         ids=["a30_s1.5", "a-12_s0.9_140x100"])
def test_rotate_amplitude(gg, data, tmp_path, device, angle, scale, outsize):
    src = data / AMP[1]
    a = load(gg, src)
    out_path = tmp_path / "rot.tif"
    gg.run("gdal_rotate", "-q", "-device", device, "-angle", angle, "-scale", scale,
           *(["-outsize", *outsize] if outsize else []), src, out_path)
    out, nd, _, dt = gg.read(out_path)
    assert dt == "Float32"
    Wo, Ho = outsize if outsize else (None, None)
    want, invalid, ambiguous = ref.rotate(a, angle, scale, Wo, Ho)
    assert not ambiguous.any()
    err = ref.check_product(out, want, invalid, math.nan, ref.TOL["rotate"],
                            what=f"rotate amplitude on {device}")
    gg.record_error("rotate/real-data", device, err)


def test_rotate_slc(gg, data, tmp_path, device):
    src = data / "winnipeg_hh.slc"
    z = load(gg, src)
    out_path = tmp_path / "rot.tif"
    gg.run("gdal_rotate", "-q", "-device", device, "-angle", 20, "-scale", 1.25, src, out_path)
    out, nd, _, dt = gg.read(out_path)
    assert dt == "CFloat32"
    want, invalid, ambiguous = ref.rotate(z, 20, 1.25)
    assert not ambiguous.any()
    err = ref.check_product(out, want, invalid, math.nan, ref.TOL["rotate"],
                            what=f"rotate SLC on {device}")
    gg.record_error("rotate/real-data", device, err)
