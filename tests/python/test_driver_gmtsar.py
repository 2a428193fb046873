"""The GMTSAR driver: a GMTSAR PRM file opens as its SLC (raw int16 I/Q,
little-endian, num_rng_bins samples a line, num_valid_az x num_patches
lines), one CInt16 band, every PRM line as metadata; the utilities and GG:
strings take PRM files as they take any raster.

The SLC is real texture: the Winnipeg UAVSAR SLC (autotest_data) scaled to
int16.  The PRM is written as GMTSAR writes them (name, tabs, "= value ").
"""
import os
import subprocess

import numpy as np
import pytest
from osgeo import gdal

from conftest import BIN, DATA

WINNIPEG = DATA / "winnipeg_slc" / "winnipeg_hh.slc"

# a GMTSAR PRM's lines (as make_slc_* / align.csh leave them), in file order
PRM_LINES = [
    ("num_valid_az", "250"), ("nrows", "250"), ("first_line", "1"), ("deskew", "n"),
    ("caltone", "0.000000"), ("st_rng_bin", "1"), ("Flip_iq", "n"), ("offset_video", "n"),
    ("az_res", "0.000000"), ("nlooks", "1"), ("chirp_ext", "0"), ("scnd_rng_mig", "n"),
    ("rng_spec_wgt", "1.000000"), ("rm_rng_band", "0.200000"), ("rm_az_band", "0.000000"),
    ("rshift", "0"), ("ashift", "0"), ("stretch_r", "0"), ("stretch_a", "0"),
    ("a_stretch_r", "0"), ("a_stretch_a", "0"), ("first_sample", "1"), ("SC_identity", "10"),
    ("rng_samp_rate", "64345238.125714"), ("input_file", "S1_20150526_F1.raw"),
    ("num_rng_bins", "250"), ("bytes_per_line", "1000"), ("good_bytes_per_line", "1000"),
    ("PRF", "486.486490"), ("pulse_dur", "5.240481e-05"), ("near_range", "800176.541528"),
    ("num_lines", "250"), ("num_patches", "1"), ("SC_clock_start", "2015146.0787037"),
    ("SC_clock_stop", "2015146.0787641"), ("clock_start", "146.0787037"),
    ("clock_stop", "146.0787641"), ("led_file", "S1_20150526_F1.LED"), ("date", "150526"),
    ("orbdir", "D"), ("lookdir", "R"), ("radar_wavelength", "0.0554658"),
    ("chirp_slope", "1.078230e+12"), ("I_mean", "0"), ("Q_mean", "0"),
    ("SLC_file", "prim.SLC"), ("dtype", "a"), ("SLC_scale", "1.000000"),
]


def prm_text(lines):
    # GMTSAR's layout: the name, tabs, "= ", the value, a trailing blank
    return "".join(f"{k}\t\t= {v} \n" for k, v in lines)


def winnipeg_int16():
    """The Winnipeg SLC scaled to int16 I/Q (peak 20000)."""
    a = np.fromfile(WINNIPEG, np.complex64).reshape(250, 250).astype(np.complex128)
    return a * (20000 / max(np.abs(a.real).max(), np.abs(a.imag).max()))


def write_slc(path, s):
    iq = np.empty(s.shape + (2,), "<i2")
    iq[..., 0] = np.clip(np.round(s.real), -32767, 32767)
    iq[..., 1] = np.clip(np.round(s.imag), -32767, 32767)
    iq.tofile(path)
    return iq[..., 0].astype(np.float64) + 1j * iq[..., 1]


def with_values(lines, **changes):
    out = [(k, str(changes.pop(k))) if k in changes else (k, v) for k, v in lines]
    return out + [(k, str(v)) for k, v in changes.items()]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """prim.PRM/.SLC: Winnipeg; sec.PRM/.SLC: Winnipeg shifted by
    (-0.61, +0.37) px (down, across) in the Fourier domain."""
    d = tmp_path_factory.mktemp("gmtsar")
    s = winnipeg_int16()
    fy, fx = np.fft.fftfreq(250)[:, None], np.fft.fftfreq(250)[None, :]
    shifted = np.fft.ifft2(np.fft.fft2(s) * np.exp(-2j * np.pi * (fy * -0.61 + fx * 0.37)))
    prim = write_slc(d / "prim.SLC", s)
    sec = write_slc(d / "sec.SLC", shifted)
    (d / "prim.PRM").write_text(prm_text(PRM_LINES))
    (d / "sec.PRM").write_text(prm_text(with_values(PRM_LINES, SLC_file="sec.SLC")))
    return d, prim, sec


def gdal_error(path):
    """The error message of opening path (None when it opens)."""
    try:
        gdal.Open(str(path))
    except RuntimeError as e:
        return str(e)
    return None


def test_values_and_metadata(pair, tmp_path):
    d, prim, _ = pair
    ds = gdal.Open(str(d / "prim.PRM"))
    assert ds.GetDriver().ShortName == "GMTSAR"
    assert (ds.RasterXSize, ds.RasterYSize, ds.RasterCount) == (250, 250, 1)
    band = ds.GetRasterBand(1)
    assert band.DataType == gdal.GDT_CInt16
    a = band.ReadAsArray()
    assert np.abs(prim).std() > 100  # real texture, not zeros
    assert np.array_equal(a, prim)
    assert np.array_equal(band.ReadAsArray(37, 101, 60, 23), prim[101:124, 37:97])
    # every PRM line is an item of the default domain, its value trimmed
    assert ds.GetMetadata() == dict(PRM_LINES)
    assert str(d / "prim.SLC") in ds.GetFileList()
    ds = None
    # SLC_file is relative to the PRM's folder, whatever the current folder
    p = subprocess.run(["gdalinfo", "-checksum", str(d / "prim.PRM")], capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 0 and "Type=CInt16" in p.stdout, p.stderr
    # GDAL's own utilities read it: gdal_translate keeps values and metadata
    out = gdal.Translate(str(tmp_path / "prim.tif"), str(d / "prim.PRM"))
    assert np.array_equal(out.ReadAsArray(), prim)
    assert out.GetMetadataItem("radar_wavelength") == "0.0554658"


def test_found_by_stem_patches_and_input_file(pair, tmp_path):
    """No SLC_file: the PRM's name with .SLC, else an input_file naming a
    .SLC; lines are num_valid_az x num_patches."""
    d, prim, _ = pair
    slc = (d / "prim.SLC").read_bytes()
    lines = [(k, v) for k, v in PRM_LINES if k not in ("SLC_file", "input_file")]
    (tmp_path / "stem.SLC").write_bytes(slc)
    (tmp_path / "stem.PRM").write_text(prm_text(
        with_values(lines, num_valid_az=125, num_patches=2)))
    ds = gdal.Open(str(tmp_path / "stem.PRM"))
    assert (ds.RasterXSize, ds.RasterYSize) == (250, 250)
    assert np.array_equal(ds.ReadAsArray(), prim)
    (tmp_path / "IMG-HH.SLC").write_bytes(slc)
    (tmp_path / "other.PRM").write_text(prm_text(lines + [("input_file", "IMG-HH.SLC")]))
    ds = gdal.Open(str(tmp_path / "other.PRM"))
    assert np.array_equal(ds.ReadAsArray(), prim)
    assert str(tmp_path / "IMG-HH.SLC") in ds.GetFileList()


def test_bad_files_one_line_errors(pair, tmp_path):
    d, _, _ = pair
    # a truncated SLC: the error names the file and the bytes missing
    (tmp_path / "short.SLC").write_bytes((d / "prim.SLC").read_bytes()[:1000 * 250 - 4])
    (tmp_path / "short.PRM").write_text(prm_text(with_values(PRM_LINES, SLC_file="short.SLC")))
    e = gdal_error(tmp_path / "short.PRM")
    assert e and "short.SLC" in e and "truncated" in e and "249996 bytes" in e, e
    assert "\n" not in e
    # a PRM naming an SLC that is not there
    (tmp_path / "lost.PRM").write_text(prm_text(with_values(PRM_LINES, SLC_file="lost.SLC")))
    e = gdal_error(tmp_path / "lost.PRM")
    assert e and "lost.SLC" in e and "not found" in e and "\n" not in e, e
    # float I/Q is refused, not misread as int16
    (tmp_path / "f.SLC").write_bytes((d / "prim.SLC").read_bytes() * 2)
    (tmp_path / "f.PRM").write_text(prm_text(with_values(PRM_LINES, SLC_file="f.SLC", dtype="c")))
    e = gdal_error(tmp_path / "f.PRM")
    assert e and "dtype c" in e and "not supported" in e, e
    # read-only
    with pytest.raises(RuntimeError, match="read-only"):
        gdal.Open(str(d / "prim.PRM"), gdal.GA_Update)
    # through a utility: one error line naming the file, exit 1, no output
    out = tmp_path / "ml.tif"
    p = subprocess.run([str(BIN / "gdal_multilook"), "-q", "-looks", "2", "2",
                        str(tmp_path / "short.PRM"), str(out)], capture_output=True, text=True)
    errors = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode != 0 and len(errors) == 1, p.stderr
    assert "short.SLC" in errors[0] and "truncated" in errors[0], errors[0]
    assert not out.exists() and not list(tmp_path.glob("ml*"))
    # the SLC is one of the PRM's files: an output over it is refused
    before = (d / "sec.SLC").read_bytes()
    p = subprocess.run([str(BIN / "gdal_coreg"), "-q", "-device", "cpu", str(d / "prim.PRM"),
                        str(d / "sec.PRM"), str(d / "sec.SLC")], capture_output=True, text=True)
    assert p.returncode != 0 and "read by the source" in p.stderr, p.stderr
    assert (d / "sec.SLC").read_bytes() == before


def test_identify_claims_only_prm(pair, tmp_path):
    d, _, _ = pair
    assert gdal.IdentifyDriver(str(d / "prim.PRM")).ShortName == "GMTSAR"
    hdr = DATA / "winnipeg_slc" / "winnipeg_hh.hdr"
    for text in (hdr.read_text(), "num_rng_bins is 250\n",
                 "a = 1\nb = 2\n",  # name = value, but no num_rng_bins: not a PRM
                 "[section]\nnum_rng_bins = 250\n"):
        (tmp_path / "x.PRM").write_text(text)
        drv = gdal.IdentifyDriver(str(tmp_path / "x.PRM"))
        assert drv is None or drv.ShortName != "GMTSAR", text


def test_utilities_and_gg_strings_take_prm(pair, tmp_path):
    """gdal_xcorr and GG:coherence on the PRMs give what they give on the
    same SLCs as GeoTIFFs, bit for bit; gdal_coreg with its defaults
    recovers the pair's shift."""
    d, prim, sec = pair
    for name in ("prim", "sec"):
        gdal.Translate(str(tmp_path / f"{name}.tif"), str(d / f"{name}.PRM"))
    env = dict(os.environ)
    xc = ["-device", "cpu", "-q", "-window", "48", "48", "-search", "8", "8", "-skip", "32", "32"]
    for src in ("PRM", "tif"):
        folder = d if src == "PRM" else tmp_path
        p = subprocess.run([str(BIN / "gdal_xcorr"), *xc, str(folder / f"prim.{src}"),
                            str(folder / f"sec.{src}"), str(tmp_path / f"off_{src}.tif")],
                           capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr
    a = gdal.Open(str(tmp_path / "off_PRM.tif")).ReadAsArray()
    b = gdal.Open(str(tmp_path / "off_tif.tif")).ReadAsArray()
    assert np.isfinite(a[:2]).mean() > 0.9
    assert np.array_equal(a, b, equal_nan=True)
    # the offsets found are the shift
    assert abs(np.nanmedian(a[0]) + 0.61) < 0.05 and abs(np.nanmedian(a[1]) - 0.37) < 0.05
    c1 = gdal.Open(f"GG:coherence:window=5x5:device=cpu:{d / 'prim.PRM'},{d / 'sec.PRM'}")
    c2 = gdal.Open(f"GG:coherence:window=5x5:device=cpu:{tmp_path / 'prim.tif'},"
                   f"{tmp_path / 'sec.tif'}")
    assert c1.RasterCount == c2.RasterCount
    k1, k2 = c1.ReadAsArray(), c2.ReadAsArray()
    assert np.array_equal(k1, k2, equal_nan=True)
    # gdal_coreg on the PRMs with no option at all (a 250 x 250 pair)
    p = subprocess.run([str(BIN / "gdal_coreg"), "-q", "-device", "cpu", "-fit",
                        str(tmp_path / "fit.json"), str(d / "prim.PRM"), str(d / "sec.PRM"),
                        str(tmp_path / "coreg.tif")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    import json
    fit = json.loads((tmp_path / "fit.json").read_text())
    y, x = np.mgrid[0:250:10, 0:250:10].astype(float)
    down = fit["down"][0] + fit["down"][1] * x + fit["down"][2] * y
    across = fit["across"][0] + fit["across"][1] * x + fit["across"][2] * y
    assert np.abs(down + 0.61).max() < 0.05 and np.abs(across - 0.37).max() < 0.05


def test_utilities_carry_the_driver(pair, tmp_path):
    """Without the plugin on GDAL_DRIVER_PATH every utility still opens PRM
    files (each carries the geogpu drivers): gdal_multilook's intensity
    looks match a float64 reference, gdal_warp resamples the PRM's
    raster."""
    d, prim, sec = pair
    env = dict(os.environ, GDAL_DRIVER_PATH="")
    ml = tmp_path / "ml.tif"
    p = subprocess.run([str(BIN / "gdal_multilook"), "-q", "-device", "cpu", "-looks", "2", "2",
                        str(d / "prim.PRM"), str(ml)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    ref = (np.abs(prim) ** 2).reshape(125, 2, 125, 2).mean(axis=(1, 3))
    got = gdal.Open(str(ml)).ReadAsArray()
    assert np.abs(got - ref).max() / ref.max() < 1e-6
    runs = {
        "gdal_insar": ["-q", "-device", "cpu", d / "prim.PRM", d / "sec.PRM", tmp_path / "i.tif"],
        "gdal_warp": ["-q", "-to", "SRC_METHOD=NO_GEOTRANSFORM", "-to", "DST_METHOD=NO_GEOTRANSFORM",
                      "-ts", "125", "125", d / "prim.PRM", tmp_path / "w.tif"],
        "gdal_rotate": ["-q", "-device", "cpu", "-angle", "10", d / "prim.PRM", tmp_path / "r.tif"],
    }
    for prog, args in runs.items():
        p = subprocess.run([str(BIN / prog)] + [str(a) for a in args], capture_output=True,
                           text=True, env=env)
        assert p.returncode == 0, (prog, p.stderr)
    w = gdal.Open(str(tmp_path / "w.tif"))
    assert (w.RasterXSize, w.RasterYSize) == (125, 125)
    assert np.abs(w.ReadAsArray()).std() > 100
