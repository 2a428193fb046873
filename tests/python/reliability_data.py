"""Small inputs for the reliability tests (test_faults, test_valgrind,
test_bad_input_catalogue, test_bounded_resources) of the utilities whose
inputs are more than one raster: an RPC scene (gdal_ortho), a GMTSAR PRM +
SLC pair (gdal_xcorr -mode gmtsar), a correlated SLC pair (gdal_xcorr,
gdal_coreg) and a simulated FMCW raw file (gdal_fmcw).  Every input is
random but never all zero, and small enough for valgrind."""
import numpy as np
from osgeo import gdal


def rpc_metadata(w, h, lat=45.2, lon=6.1):
    """An RPC00B whose image covers ~w x h pixels of ~4 m around (lat, lon),
    slightly rotated, with a height (parallax) term."""
    ln, ld, sn, sd = (np.zeros(20) for _ in range(4))
    ln[[0, 1, 2, 3]] = [0.002, -0.035, -1.02, 0.07]
    sn[[0, 1, 2, 3]] = [-0.001, 1.01, 0.045, -0.11]
    ld[0] = sd[0] = 1.0
    f = lambda a: " ".join(f"{v:.17g}" for v in a)  # noqa: E731
    return {"LINE_OFF": f"{h / 2}", "SAMP_OFF": f"{w / 2}", "LAT_OFF": f"{lat}", "LONG_OFF": f"{lon}",
            "HEIGHT_OFF": "1500", "LINE_SCALE": f"{h / 2}", "SAMP_SCALE": f"{w / 2}",
            "LAT_SCALE": f"{h * 4e-5 / 2}", "LONG_SCALE": f"{w * 5.5e-5 / 2}", "HEIGHT_SCALE": "1200",
            "LINE_NUM_COEFF": f(ln), "LINE_DEN_COEFF": f(ld), "SAMP_NUM_COEFF": f(sn),
            "SAMP_DEN_COEFF": f(sd)}


def write_rpc_scene(path, rng, w=48, h=40, values=None, nodata=None, md=None):
    """A Float32 GeoTIFF with RPCs (values: an array to write instead of
    random positive data)."""
    ds = gdal.GetDriverByName("GTiff").Create(str(path), w, h, 1, gdal.GDT_Float32)
    ds.SetMetadata(rpc_metadata(w, h) if md is None else md, "RPC")
    a = rng.uniform(100, 1000, (h, w)).astype(np.float32) if values is None else values
    b = ds.GetRasterBand(1)
    if nodata is not None:
        b.SetNoDataValue(nodata)
    b.WriteArray(a)
    ds = None
    return path


def speckle_pair(rng, h, w, dx=1.0, dy=-1.0, coh=0.9):
    """Band-limited complex speckle; a feature at x in s1 is at x + dx in s2."""
    a = rng.normal(size=(h, w)) + 1j * rng.normal(size=(h, w))
    b = rng.normal(size=(h, w)) + 1j * rng.normal(size=(h, w))
    A, B = np.fft.fft2(a), np.fft.fft2(b)
    fy, fx = np.fft.fftfreq(h)[:, None], np.fft.fftfreq(w)[None, :]
    keep = (np.abs(fy) < 0.4) & (np.abs(fx) < 0.4)
    s1 = np.fft.ifft2(A * keep)
    s2 = np.fft.ifft2(coh * A * keep * np.exp(-2j * np.pi * (fx * dx + fy * dy)) +
                      np.sqrt(1 - coh ** 2) * B * keep)
    scale = 2000 / np.abs(s1).std()
    return s1 * scale, s2 * scale


def write_slc_pair(folder, rng, h=64, w=64, prefix=""):
    """A correlated CFloat32 GeoTIFF pair: (primary, secondary) paths."""
    s1, s2 = speckle_pair(rng, h, w)
    paths = []
    for name, s in (("p", s1), ("s", s2)):
        path = folder / f"{prefix}{name}.tif"
        ds = gdal.GetDriverByName("GTiff").Create(str(path), w, h, 1, gdal.GDT_CFloat32)
        ds.GetRasterBand(1).WriteArray(s.astype(np.complex64))
        ds = None
        paths.append(path)
    return paths


def write_gmtsar_pair(folder, rng, h=128, w=128):
    """GMTSAR master/aligned PRM + int16 I/Q SLC files: (master, aligned) PRMs."""
    s1, s2 = speckle_pair(rng, h, w)
    prms = []
    for name, s in (("master", s1), ("aligned", s2)):
        iq = np.empty(s.shape + (2,), "<i2")
        iq[..., 0] = np.clip(np.round(s.real), -32767, 32767)
        iq[..., 1] = np.clip(np.round(s.imag), -32767, 32767)
        iq.tofile(folder / f"{name}.SLC")
        (folder / f"{name}.PRM").write_text(
            f"SLC_file = {name}.SLC\nnum_rng_bins = {w}\nnum_valid_az = {h}\nnum_patches = 1\n"
            "PRF = 1000.0\nrshift = 0\nashift = 0\n")
        prms.append(folder / f"{name}.PRM")
    return prms


# gdal_fmcw -simulate arguments of a small raw file
FMCW_SMALL = ["-sectors", 8, "-sweeps", 16, "-samples", 128, "-gates", 32]
# gdal_xcorr -mode gmtsar options that fit write_gmtsar_pair's 128 x 128
GMTSAR_OPTS = ["-nx", 2, "-ny", 2, "-xsearch", 8, "-ysearch", 8]
# window options of gdal_xcorr / gdal_coreg that fit write_slc_pair's 64 x 64
XCORR_OPTS = ["-window", 16, 16, "-search", 4, 4, "-skip", 8, 8]
