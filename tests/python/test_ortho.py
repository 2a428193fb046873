"""gdal_ortho against GDAL itself: the forward RFM against GDAL's RPC
transformer (<= 1e-6 px) and against an independent float64 implementation
here, and whole orthoimages against `gdalwarp -rpc -to RPC_DEM=... -et 0
-wm 2000` with the same -t_srs/-te/-tr/-r (same footprint, interior within
1 DN) on a synthetic scene over rough terrain and on the real Pléiades pair
with its DSM (../shared/data, AGPL: skipped when absent); CPU and OpenCL
agree; bad inputs fail with one clear line and leave no output.
"""
import ctypes
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr
from scipy import ndimage

REPO = Path(__file__).resolve().parents[2]
PLEIADES = (REPO.parent / "shared" / "data" / "s2p_pleiades").resolve()
if not PLEIADES.is_dir():
    PLEIADES = Path("/work/shared/data/s2p_pleiades")
HAVE_PLEIADES = (PLEIADES / "input_pair_img_01.tif").exists()

# ------------------------------------------------------------- fixtures


def synthetic_rpc(w, h):
    """An RPC00B with parallax (height terms), rotation and non-linear
    terms, ~4.4 m GSD over the French Alps."""
    ln = np.zeros(20)
    ld = np.zeros(20)
    sn = np.zeros(20)
    sd = np.zeros(20)
    ln[[0, 1, 2, 3, 4, 7, 8, 9, 11, 15, 17]] = [0.002, -0.035, -1.02, 0.07, 0.004, 0.003,
                                                -0.005, 0.001, 0.0006, 0.0004, 0.0002]
    ld[[0, 1, 2, 3, 6]] = [1.0, 0.0009, -0.0007, 0.0004, 0.0001]
    sn[[0, 1, 2, 3, 4, 5, 7, 10, 12, 19]] = [-0.001, 1.01, 0.045, -0.11, 0.002, 0.003,
                                             -0.004, 0.0005, 0.0003, 0.0001]
    sd[[0, 1, 2, 3, 8]] = [1.0, -0.0006, 0.0008, 0.0002, 0.00015]
    f = lambda a: " ".join(f"{v:.17g}" for v in a)  # noqa: E731
    return {
        "LINE_OFF": f"{h / 2}", "SAMP_OFF": f"{w / 2}", "LAT_OFF": "45.2", "LONG_OFF": "6.1",
        "HEIGHT_OFF": "1500", "LINE_SCALE": f"{h / 2}", "SAMP_SCALE": f"{w / 2}",
        "LAT_SCALE": "0.012", "LONG_SCALE": "0.017", "HEIGHT_SCALE": "1200",
        "LINE_NUM_COEFF": f(ln), "LINE_DEN_COEFF": f(ld), "SAMP_NUM_COEFF": f(sn),
        "SAMP_DEN_COEFF": f(sd),
    }


def smooth_noise(rng, shape, scale):
    n = rng.standard_normal(shape)
    return ndimage.gaussian_filter(n, scale, mode="wrap")


def write_scene(path, rng, w, h, dtype, md, drop=None):
    tex = smooth_noise(rng, (h, w), 2.0) * 9 + smooth_noise(rng, (h, w), 0.7) * 2
    img = 2000 + 600 * tex / np.abs(tex).max()
    gdt = gdal.GDT_UInt16 if dtype == "UInt16" else gdal.GDT_Float32
    if dtype == "UInt16":
        img = np.round(img).astype(np.uint16)
    else:
        img = img.astype(np.float32)
    ds = gdal.GetDriverByName("GTiff").Create(str(path), w, h, 1, gdt)
    md = dict(md)
    for k in drop or []:
        md.pop(k)
    ds.SetMetadata(md, "RPC")
    ds.GetRasterBand(1).WriteArray(img)
    ds = None
    return path


def write_dem(path, rng, epsg, hole=False):
    """Rough terrain (1500 +- ~900 m, relief at ~30-100 m wavelengths) on a
    1-arc-second grid (EPSG:4326) or a 25 m UTM 32N grid."""
    if epsg == 4326:
        res = 1 / 3600
        x0, y0, nx, ny = 6.06, 45.24, int(0.08 / res), int(0.08 / res)
        gt = (x0, res, 0, y0, 0, -res)
    else:
        res = 25.0
        x0, y0, nx, ny = 269500.0, 5012000.0, 200, 200
        gt = (x0, res, 0, y0, 0, -res)
    z = 1500 + 800 * smooth_noise(rng, (ny, nx), 12) / 0.03 * 0.03
    z = z + 250 * smooth_noise(rng, (ny, nx), 2) / np.abs(smooth_noise(rng, (ny, nx), 2)).max()
    z = (z - z.mean()) * 900 / np.abs(z - z.mean()).max() + 1500
    ds = gdal.GetDriverByName("GTiff").Create(str(path), nx, ny, 1, gdal.GDT_Float32)
    ds.SetGeoTransform(gt)
    s = osr.SpatialReference()
    s.ImportFromEPSG(epsg)
    ds.SetProjection(s.ExportToWkt())
    b = ds.GetRasterBand(1)
    if hole:
        b.SetNoDataValue(-32768)
        z[ny // 2:ny // 2 + 12, nx // 2:nx // 2 + 15] = -32768
    b.WriteArray(z.astype(np.float32))
    ds = None
    return path


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    d = tmp_path_factory.mktemp("ortho")
    rng = np.random.default_rng(20261121)
    md = synthetic_rpc(640, 600)
    out = {"dir": d, "md": md}
    for t in ("UInt16", "Float32"):
        out[t] = write_scene(d / f"scene_{t}.tif", rng, 640, 600, t, md)
    out["dem4326"] = write_dem(d / "dem4326.tif", rng, 4326)
    out["demutm"] = write_dem(d / "demutm.tif", rng, 32632)
    out["demhole"] = write_dem(d / "demhole.tif", rng, 4326, hole=True)
    return out


def gdalwarp(src, dst, dem, r, extra_to=(), args=()):
    cmd = ["gdalwarp", "-q", "-overwrite", "-rpc", "-et", "0", "-wm", "2000", "-r", r]
    if dem:
        cmd += ["-to", f"RPC_DEM={dem}"]
    for t in extra_to:
        cmd += ["-to", t]
    cmd += list(args) + [str(src), str(dst)]
    subprocess.run(cmd, check=True, capture_output=True)
    return dst


def compare(ours, ref, what, hole_mask=None):
    a = gdal.Open(str(ours)).ReadAsArray().astype(np.float64)
    b = gdal.Open(str(ref)).ReadAsArray().astype(np.float64)
    assert a.shape == b.shape, f"{what}: size {a.shape} vs gdalwarp {b.shape}"
    fa, fb = a != 0, b != 0
    assert fb.sum() > 0.3 * fb.size, f"{what}: gdalwarp footprint almost empty"
    mism = int((fa != fb).sum())
    assert mism == 0, f"{what}: footprint differs from gdalwarp's at {mism} pixels"
    inner = ndimage.binary_erosion(fb, iterations=3)
    d = np.abs(a - b)[inner]
    assert d.max() <= 1.0, f"{what}: interior differs by up to {d.max()} (n>1: {(d > 1).sum()})"
    # not a vacuous comparison: the interior is textured
    assert np.std(b[inner]) > 10
    return d


def ortho(gg, *args, check=True):
    return gg.run("gdal_ortho", "-q", *[str(a) for a in args], check=check)


# -------------------------------------------------- the forward RFM (ctypes)


class RPC(ctypes.Structure):
    _fields_ = [(n, ctypes.c_double) for n in (
        "line_off", "samp_off", "lat_off", "long_off", "height_off", "line_scale",
        "samp_scale", "lat_scale", "long_scale", "height_scale")] + [
        (n, ctypes.c_double * 20) for n in ("line_num", "line_den", "samp_num", "samp_den")]


def rpc_struct(md):
    r = RPC()
    for k in ("line_off", "samp_off", "lat_off", "long_off", "height_off", "line_scale",
              "samp_scale", "lat_scale", "long_scale", "height_scale"):
        setattr(r, k, float(md[k.upper()]))
    for k in ("line_num", "line_den", "samp_num", "samp_den"):
        vals = [float(v) for v in md[k.upper() + "_COEFF"].split()]
        getattr(r, k)[:] = vals
    return r


def rfm64(md, lon, lat, h):
    """Independent float64 RFM (RPC00B term order), GDAL pixel convention."""
    g = lambda k: float(md[k])  # noqa: E731
    L = (lon - g("LONG_OFF")) / g("LONG_SCALE")
    P = (lat - g("LAT_OFF")) / g("LAT_SCALE")
    H = (h - g("HEIGHT_OFF")) / g("HEIGHT_SCALE")
    t = np.array([np.ones_like(L), L, P, H, L * P, L * H, P * H, L * L, P * P, H * H, P * L * H,
                  L ** 3, L * P * P, L * H * H, L * L * P, P ** 3, P * H * H, L * L * H, P * P * H,
                  H ** 3])
    c = {k: np.array([float(v) for v in md[k].split()]) for k in
         ("LINE_NUM_COEFF", "LINE_DEN_COEFF", "SAMP_NUM_COEFF", "SAMP_DEN_COEFF")}
    line = (c["LINE_NUM_COEFF"] @ t) / (c["LINE_DEN_COEFF"] @ t) * g("LINE_SCALE") + g("LINE_OFF")
    samp = (c["SAMP_NUM_COEFF"] @ t) / (c["SAMP_DEN_COEFF"] @ t) * g("SAMP_SCALE") + g("SAMP_OFF")
    return samp + 0.5, line + 0.5


def rpc_cases(synth):
    cases = [("synthetic", synth["md"], synth["UInt16"])]
    if HAVE_PLEIADES:
        for f in ("input_pair_img_01.tif", "input_pair_img_02.tif"):
            p = PLEIADES / f
            cases.append((f, gdal.Open(str(p)).GetMetadata("RPC"), p))
    return cases


def test_rfm_forward_matches_gdal(gg, synth):
    lib = ctypes.CDLL(str(gg.build / "lib" / "libgeogpu.so"))
    fwd = lib.gg_ortho_rpc_forward
    fwd.argtypes = [ctypes.POINTER(RPC), ctypes.c_double, ctypes.c_double, ctypes.c_double,
                    ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
    rng = np.random.default_rng(5)
    for name, md, path in rpc_cases(synth):
        r = rpc_struct(md)
        g = lambda k: float(md[k])  # noqa: E731
        n = 400
        lon = g("LONG_OFF") + g("LONG_SCALE") * rng.uniform(-1.2, 1.2, n)
        lat = g("LAT_OFF") + g("LAT_SCALE") * rng.uniform(-1.2, 1.2, n)
        hh = g("HEIGHT_OFF") + g("HEIGHT_SCALE") * rng.uniform(-1, 1, n)
        ref_x, ref_y = rfm64(md, lon, lat, hh)
        ds = gdal.Open(str(path))
        worst_gdal = worst_ref = 0.0
        for i in range(n):
            px, py = ctypes.c_double(), ctypes.c_double()
            fwd(ctypes.byref(r), lon[i], lat[i], hh[i], ctypes.byref(px), ctypes.byref(py))
            tr = gdal.Transformer(ds, None, ["METHOD=RPC", f"RPC_HEIGHT={hh[i]:.17g}"])
            ok, (gx, gy, _) = tr.TransformPoint(1, lon[i], lat[i], 0)
            assert ok
            worst_gdal = max(worst_gdal, abs(px.value - gx), abs(py.value - gy))
            worst_ref = max(worst_ref, abs(px.value - ref_x[i]), abs(py.value - ref_y[i]))
        assert worst_gdal <= 1e-6, f"{name}: {worst_gdal} px from GDAL's transformer"
        assert worst_ref <= 1e-6, f"{name}: {worst_ref} px from the float64 reference"


# ------------------------------------------------- orthoimages vs gdalwarp

UTM = ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750", "-tr", "4", "4"]


@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
@pytest.mark.parametrize("dtype", ["UInt16", "Float32"])
@pytest.mark.parametrize("dem", ["dem4326", "demutm"])
def test_synthetic_matches_gdalwarp(gg, synth, r, dtype, dem):
    d = synth["dir"]
    src = synth[dtype]
    ref = gdalwarp(src, d / f"w_{r}_{dtype}_{dem}.tif", synth[dem], r, args=UTM)
    ours = d / f"o_{r}_{dtype}_{dem}.tif"
    ortho(gg, "-device", "cpu", "-dem", synth[dem], "-r", r, *UTM, src, ours)
    compare(ours, ref, f"{r}/{dtype}/{dem}")


DOWN = {  # 2x to 3x coarser than the ~4.4 m source; square, anisotropic, a window inside
    "tr9": ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750",
            "-tr", "9", "9"],
    "tr13": ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750",
             "-tr", "13", "13"],
    "tr12x7": ["-t_srs", "EPSG:32632", "-tr", "12", "7"],
    "inside_tr10": ["-t_srs", "EPSG:32632", "-te", "271500", "5008500", "273000", "5010000",
                    "-tr", "10", "10"],
}


@pytest.mark.parametrize("r", ["bilinear", "cubic"])
@pytest.mark.parametrize("dtype", ["UInt16", "Float32"])
@pytest.mark.parametrize("grid", list(DOWN))
def test_downsampled_matches_gdalwarp(gg, synth, r, dtype, grid):
    """Output coarser than the source: gdalwarp stretches its bilinear and
    cubic kernels by the scale of its warped window (XSCALE/YSCALE);
    gdal_ortho does the same (interior within 1 DN)."""
    d = synth["dir"]
    src, dem = synth[dtype], synth["dem4326"]
    ref = gdalwarp(src, d / f"w_down_{r}_{dtype}_{grid}.tif", dem, r, args=DOWN[grid])
    ours = d / f"o_down_{r}_{dtype}_{grid}.tif"
    ortho(gg, "-device", "cpu", "-dem", dem, "-r", r, *DOWN[grid], src, ours)
    compare(ours, ref, f"downsampled {r}/{dtype}/{grid}")


@pytest.mark.parametrize("r", ["bilinear", "cubic"])
def test_downsampling_without_stretch_differs(gg, synth, r):
    """The comparison above is not vacuous: gdalwarp's own 4-sample kernels
    (its scales forced to 1, -wo XSCALE=1 -wo YSCALE=1) are off gdal_ortho's
    stretched pixels by far more than 1 DN."""
    d = synth["dir"]
    src, dem = synth["UInt16"], synth["dem4326"]
    ref = gdalwarp(src, d / f"w_nostretch_{r}.tif", dem, r,
                   args=DOWN["tr13"] + ["-wo", "XSCALE=1", "-wo", "YSCALE=1"])
    ours = d / f"o_nostretch_{r}.tif"
    ortho(gg, "-device", "cpu", "-dem", dem, "-r", r, *DOWN["tr13"], src, ours)
    with pytest.raises(AssertionError, match="interior differs"):
        compare(ours, ref, "no stretch")


@pytest.mark.parametrize("dem_interp", ["near", "cubic"])
def test_dem_interpolation_matches_gdal(gg, synth, dem_interp):
    d = synth["dir"]
    ref = gdalwarp(synth["UInt16"], d / f"w_di_{dem_interp}.tif", synth["dem4326"], "bilinear",
                   extra_to=[f"RPC_DEMINTERPOLATION={dem_interp}"], args=UTM)
    ours = d / f"o_di_{dem_interp}.tif"
    ortho(gg, "-device", "cpu", "-dem", synth["dem4326"], "-dem_interp", dem_interp,
          "-r", "bilinear", *UTM, synth["UInt16"], ours)
    compare(ours, ref, f"dem_interp {dem_interp}")


def test_rpc_height_and_dem_missing(gg, synth):
    """-rpc_height is added to the DEM; -dem_missing fills the DEM's nodata hole."""
    d = synth["dir"]
    ref = gdalwarp(synth["UInt16"], d / "w_miss.tif", synth["demhole"], "cubic",
                   extra_to=["RPC_HEIGHT=35", "RPC_DEM_MISSING_VALUE=1400"], args=UTM)
    ours = d / "o_miss.tif"
    ortho(gg, "-device", "cpu", "-dem", synth["demhole"], "-rpc_height", 35, "-dem_missing",
          1400, "-r", "cubic", *UTM, synth["UInt16"], ours)
    compare(ours, ref, "rpc_height + dem_missing")


def test_default_grid_is_gdalwarps(gg, synth):
    d = synth["dir"]
    ref = gdalwarp(synth["UInt16"], d / "w_default.tif", synth["dem4326"], "near",
                   args=["-t_srs", "EPSG:32632"])
    ours = d / "o_default.tif"
    ortho(gg, "-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632",
          synth["UInt16"], ours)
    a, b = gdal.Open(str(ours)), gdal.Open(str(ref))
    assert (a.RasterXSize, a.RasterYSize) == (b.RasterXSize, b.RasterYSize)
    assert np.allclose(a.GetGeoTransform(), b.GetGeoTransform(), rtol=0, atol=1e-9)
    compare(ours, ref, "default grid")


def test_grid_where_gdal_fails_points_is_gdalwarps(gg, synth):
    """A DEM with needles (+-500 m from one 1" post to the next) makes
    GDAL's RPC inverse fail to converge at scattered points, on the edges
    too, so GDALSuggestedWarpOutput2 samples its 101 x 101 grid and refines
    the failures one point at a time.  gdal_ortho splits the large calls over
    threads (4, at most one a processor): the grid is gdalwarp's, GDAL's own
    single-threaded result."""
    d = synth["dir"]
    dem = write_dem(d / "demrough.tif", np.random.default_rng(7), 4326)
    ds = gdal.Open(str(dem), gdal.GA_Update)
    z = ds.GetRasterBand(1).ReadAsArray()
    z += np.random.default_rng(8).uniform(-500, 500, z.shape).astype(np.float32)
    ds.GetRasterBand(1).WriteArray(z)
    ds = None
    src = gdal.Open(str(synth["UInt16"]))
    tr = gdal.Transformer(src, None, ["METHOD=RPC", f"RPC_DEM={dem}"])
    edge = [(x, y) for x in np.linspace(0, 640, 101) for y in (0, 600)]
    edge += [(x, y) for y in np.linspace(0, 600, 101) for x in (0, 640)]
    _, ok = tr.TransformPoints(False, edge)
    failed = len(edge) - sum(ok)
    assert 0 < failed < len(edge) // 4, f"{failed} of {len(edge)} edge points failed"
    ref = gdalwarp(synth["UInt16"], d / "w_rough.tif", dem, "near",
                   args=["-t_srs", "EPSG:32632"])
    b = gdal.Open(str(ref))
    ours = d / "o_rough.tif"
    ortho(gg, "-device", "cpu", "-dem", dem, "-t_srs", "EPSG:32632", synth["UInt16"], ours)
    a = gdal.Open(str(ours))
    assert (a.RasterXSize, a.RasterYSize) == (b.RasterXSize, b.RasterYSize)
    assert a.GetGeoTransform() == b.GetGeoTransform()


@pytest.mark.opencl
@pytest.mark.parametrize("r", ["near", "cubic"])
def test_cpu_and_opencl_agree(gg, synth, r):
    d = synth["dir"]
    outs = []
    for dev in ("cpu", "opencl"):
        o = d / f"dev_{dev}_{r}.tif"
        ortho(gg, "-device", dev, "-dem", synth["demutm"], "-r", r, *UTM, synth["Float32"], o)
        outs.append(gdal.Open(str(o)).ReadAsArray().astype(np.float64))
    assert (outs[0] != 0).sum() > 0.3 * outs[0].size
    assert np.max(np.abs(outs[0] - outs[1])) <= 1e-3 * 2600  # float32 output, same math


# A device whose memory the source does not fit in (GG_DEVICE_MEMORY caps
# what the planner sees): gdal_ortho reads each block's source window
# instead of making the whole source resident.
SMALL_DEVICE = {"GG_DEVICE_MEMORY": "1M"}


def add_spikes(dem, height, every):
    """Needles of `height` metres on every `every`-th post of a DEM."""
    ds = gdal.Open(str(dem), gdal.GA_Update)
    z = ds.GetRasterBand(1).ReadAsArray()
    z[every // 2::every, every // 2::every] += height
    ds.GetRasterBand(1).WriteArray(z)
    ds = None
    return dem


def run_v(gg, args, src, out, env=None):
    """gdal_ortho -v: the log, with the pipeline it used."""
    return gg.run("gdal_ortho", "-q", "-v", *[str(a) for a in args], str(src), str(out),
                  env=env).stderr


def test_pipelines_give_the_same_bytes(gg, synth, device):
    """The resident source (each source row read once, in strips, uploaded
    once; blocks queued beside the copies) and, on a device too small for
    the source, the per-block source windows give the same bytes, and they
    match gdalwarp."""
    d = synth["dir"]
    src, dem = synth["UInt16"], synth["dem4326"]
    args = ["-device", device, "-dem", dem, "-r", "cubic", "-grid_step", "8", *UTM]
    outs = {}
    for name, env, want in (("resident", None, "source resident on the device"),
                            ("window", SMALL_DEVICE, "source read per block window")):
        out = d / f"pipe_{device}_{name}.tif"
        log = run_v(gg, args, src, out, env)
        assert want in log and "needed" not in log, f"{name}: {log}"
        outs[name] = out.read_bytes()
    assert outs["resident"] == outs["window"]
    ref = gdalwarp(src, d / "w_pipe.tif", dem, "cubic", args=UTM)
    compare(d / f"pipe_{device}_resident.tif", ref, f"pipelines {device}")


def test_blocks_that_miss_run_again(gg, synth, device):
    """Needles in the DEM (3000 m on every 13th post) move pixels between
    two grid nodes further than the margin of their block's first source
    window: the kernel reports the taps it missed and the block runs again,
    with more source rows (resident source) or a wider window (per-block
    windows).  Both give the same bytes, a textured orthoimage."""
    d = synth["dir"]
    dem = add_spikes(write_dem(d / "demspike.tif", np.random.default_rng(7), 4326), 3000, 13)
    args = ["-device", device, "-dem", dem, "-r", "cubic", "-grid_step", "8", *UTM]
    outs = {}
    for name, env, want in (("resident", None, "needed more source rows"),
                            ("window", SMALL_DEVICE, "needed a wider source window")):
        out = d / f"spike_{device}_{name}.tif"
        log = run_v(gg, args, synth["UInt16"], out, env)
        assert want in log, f"{name}: no block ran again: {log}"
        outs[name] = out.read_bytes()
    assert outs["resident"] == outs["window"]
    a = gdal.Open(str(d / f"spike_{device}_resident.tif")).ReadAsArray().astype(np.float64)
    assert (a != 0).mean() > 0.3 and np.std(a[a != 0]) > 10


def rotated_rpc(w, h):
    """synthetic_rpc turned a quarter: source lines follow longitude and
    samples latitude, so every block of north-up output rows needs every
    source row."""
    md = synthetic_rpc(w, h)
    out = dict(md)
    for a, b in (("LINE_NUM_COEFF", "SAMP_NUM_COEFF"), ("LINE_DEN_COEFF", "SAMP_DEN_COEFF")):
        out[a], out[b] = md[b], md[a]
    return out


def test_source_of_more_strips_than_buffers(gg, synth, tmp_path, device):
    """A source read in more 4 MB strips than the readers have staging
    buffers (twice the readers plus two), every one of which the first
    block needs (a footprint turned a quarter): the device lets its queued
    uploads land to free buffers for the readers, and the result is the
    per-block windows' bytes."""
    readers = min(8, max(2, (os.cpu_count() or 2) // 2))  # gdal_ortho's strip readers
    w = 2048
    h = (4 << 20) // (2 * w) * (2 * readers + 4)  # two strips more than the buffers
    src = tmp_path / "tall.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(src), w, h, 1, gdal.GDT_UInt16)
    ds.SetMetadata(rotated_rpc(w, h), "RPC")
    rng = np.random.default_rng(3)
    x = np.arange(w)
    for y0 in range(0, h, 1024):
        y = np.arange(y0, min(h, y0 + 1024))[:, None]
        tex = 2000 + 300 * np.sin(x / 23.0) * np.cos(y / 37.0) + rng.integers(0, 200, (len(y), w))
        ds.GetRasterBand(1).WriteArray(tex.astype(np.uint16), 0, y0)
    ds = None
    args = ["-device", device, "-dem", synth["dem4326"], "-r", "near", "-t_srs", "EPSG:32632",
            "-tr", "10", "10"]
    log = run_v(gg, args, src, tmp_path / "resident.tif")
    m = re.search(r"source resident on the device \((\d+) strips of \d+ rows, (\d+) readers, "
                  r"(\d+) staging buffers\)", log)
    assert m, log
    strips, nreaders, buffers = (int(v) for v in m.groups())
    assert nreaders >= 2 and strips > buffers, log
    log = run_v(gg, args, src, tmp_path / "window.tif", SMALL_DEVICE)
    assert "source read per block window" in log, log
    assert (tmp_path / "resident.tif").read_bytes() == (tmp_path / "window.tif").read_bytes()
    a = gdal.Open(str(tmp_path / "resident.tif")).ReadAsArray().astype(np.float64)
    assert (a != 0).mean() > 0.3 and np.std(a[a != 0]) > 10


@pytest.mark.skipif(not HAVE_PLEIADES, reason="../shared/data/s2p_pleiades absent")
@pytest.mark.parametrize("r", ["near", "bilinear", "cubic"])
@pytest.mark.parametrize("ot", ["UInt16", "Float32"])
def test_pleiades_matches_gdalwarp(gg, tmp_path, r, ot):
    src = PLEIADES / "input_pair_img_01.tif"
    dem = PLEIADES / "expected_output_pair_dsm.tif"
    args = ["-t_srs", "EPSG:32740", "-tr", "0.5", "0.5", "-ot", ot]
    ref = gdalwarp(src, tmp_path / "w.tif", dem, r, extra_to=["RPC_DEM_MISSING_VALUE=2300"],
                   args=args)
    ours = tmp_path / "o.tif"
    ortho(gg, "-dem", dem, "-dem_missing", 2300, "-r", r, *args, src, ours)
    compare(ours, ref, f"pleiades {r} {ot}")


# ------------------------------------------------------------ bad input


def no_output_left(folder, stem):
    # temporaries are ".<stem>.tmp<pid>.<ext>" (gg_app's safe output path)
    return not [p for p in Path(folder).iterdir() if p.name.lstrip(".").startswith(stem)]


def test_no_rpc(gg, synth, tmp_path):
    src = tmp_path / "plain.tif"
    gdal.GetDriverByName("GTiff").Create(str(src), 20, 20, 1, gdal.GDT_UInt16)
    p = ortho(gg, src, tmp_path / "out.tif", check=False)
    assert p.returncode != 0 and "no RPCs" in p.stderr
    assert no_output_left(tmp_path, "out")


def test_missing_coefficients(gg, synth, tmp_path):
    # a VRT keeps an incomplete RPC domain (GeoTIFF would drop it)
    src = tmp_path / "bad.vrt"
    ds = gdal.Translate(str(src), str(synth["UInt16"]), format="VRT")
    md = dict(synth["md"])
    md.pop("SAMP_DEN_COEFF")
    ds.SetMetadata(md, "RPC")
    ds = None
    p = ortho(gg, "-dem", synth["dem4326"], src, tmp_path / "out.tif", check=False)
    assert p.returncode != 0
    assert "SAMP_DEN_COEFF" in p.stderr and p.stderr.count("ERROR") == 1
    assert no_output_left(tmp_path, "out")


def test_dem_not_covering(gg, synth, tmp_path):
    small = tmp_path / "small_dem.tif"
    gdal.Translate(str(small), str(synth["dem4326"]), srcWin=[0, 0, 150, 288])
    p = ortho(gg, "-dem", small, synth["UInt16"], tmp_path / "out.tif", check=False)
    assert p.returncode != 0
    assert "does not cover" in p.stderr and "%" in p.stderr
    assert no_output_left(tmp_path, "out")


def test_dem_unknown_crs(gg, synth, tmp_path):
    dem = tmp_path / "nocrs.tif"
    a = gdal.Open(str(synth["dem4326"])).ReadAsArray()
    ds = gdal.GetDriverByName("GTiff").Create(str(dem), a.shape[1], a.shape[0], 1, gdal.GDT_Float32)
    ds.SetGeoTransform(gdal.Open(str(synth["dem4326"])).GetGeoTransform())
    ds.GetRasterBand(1).WriteArray(a)
    ds = None
    p = ortho(gg, "-dem", dem, synth["UInt16"], tmp_path / "out.tif", check=False)
    assert p.returncode != 0 and "CRS" in p.stderr
    assert no_output_left(tmp_path, "out")


def test_grid_missing_footprint(gg, synth, tmp_path):
    p = ortho(gg, "-dem", synth["dem4326"], "-t_srs", "EPSG:32632", "-te", 0, 0, 1000, 1000,
              "-tr", 10, 10, synth["UInt16"], tmp_path / "out.tif", check=False)
    assert p.returncode != 0 and "footprint" in p.stderr
    assert no_output_left(tmp_path, "out")


def test_unwritable_destination(gg, synth, tmp_path):
    p = ortho(gg, "-dem", synth["dem4326"], synth["UInt16"], tmp_path / "nope" / "out.tif",
              check=False)
    assert p.returncode != 0 and p.stderr.count("ERROR") == 1


def test_batch_one_bad_scene(gg, synth, tmp_path):
    bad = tmp_path / "bad.tif"
    gdal.GetDriverByName("GTiff").Create(str(bad), 20, 20, 1, gdal.GDT_UInt16)
    outdir = tmp_path / "out"
    outdir.mkdir()
    p = ortho(gg, "-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632", "-outdir",
              outdir, synth["UInt16"], bad, synth["Float32"], check=False)
    assert p.returncode != 0
    assert "bad.tif" in p.stderr and "no RPCs" in p.stderr
    assert sorted(x.name for x in outdir.iterdir()) == ["scene_Float32.tif", "scene_UInt16.tif"]
    a = gdal.Open(str(outdir / "scene_UInt16.tif")).ReadAsArray()
    assert (a != 0).sum() > 0.3 * a.size


def test_batch_refuses_two_sources_of_one_name(gg, synth, tmp_path):
    """-outdir names each output after its source: two sources of one name
    (in two folders) are refused before anything runs, with one line."""
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(synth["UInt16"], other / Path(synth["UInt16"]).name)
    outdir = tmp_path / "out"
    outdir.mkdir()
    p = ortho(gg, "-device", "cpu", "-dem", synth["dem4326"], "-outdir", outdir, synth["UInt16"],
              synth["Float32"], other / Path(synth["UInt16"]).name, check=False)
    assert p.returncode != 0
    errors = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "would both be written to" in errors[0], p.stderr
    assert list(outdir.iterdir()) == []


def _batch(tmp_path, synth):
    """Five scenes: two good ones, one without RPCs, a copy of the first
    under another name, and a file that is not a raster."""
    d = tmp_path / "in"
    d.mkdir()
    bad = d / "b_norpc.tif"
    gdal.GetDriverByName("GTiff").Create(str(bad), 20, 20, 1, gdal.GDT_UInt16)
    junk = d / "e_junk.tif"
    junk.write_bytes(b"not a raster")
    copy = d / "d_copy.tif"
    shutil.copyfile(synth["UInt16"], copy)
    return [synth["UInt16"], synth["Float32"], bad, copy, junk]


def test_batch_scenes_overlap(gg, synth, tmp_path):
    """Scenes of a batch set up while the previous one runs (three ahead);
    the device part is taken in the scenes' order.  Outputs equal the
    scene-by-scene run's, each failure is reported once and against its own
    scene, in the order of the scenes, and only the good scenes leave a
    file."""
    srcs = _batch(tmp_path, synth)
    out = tmp_path / "out"
    out.mkdir()
    p = gg.run("gdal_ortho", "-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632",
               "-outdir", out, *srcs, check=False)
    assert p.returncode != 0
    errors = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 2, p.stderr
    assert "b_norpc.tif" in errors[0] and "no RPCs" in errors[0], errors
    assert "e_junk.tif" in errors[1], errors
    assert "2 of 5 scenes failed" in p.stderr
    # each scene announced in turn, in the order given
    arrows = [line.split(" -> ")[0] for line in p.stderr.splitlines() if " -> " in line]
    assert arrows == [str(s) for s in srcs], arrows
    names = ["d_copy.tif", "scene_Float32.tif", "scene_UInt16.tif"]
    assert sorted(x.name for x in out.iterdir()) == names  # no temporary file left
    for name, src in [("scene_UInt16.tif", synth["UInt16"]), ("d_copy.tif", synth["UInt16"]),
                      ("scene_Float32.tif", synth["Float32"])]:
        ref = tmp_path / f"ref_{name}"
        if not ref.exists():
            ortho(gg, "-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632", src,
                  ref)
        assert (out / name).read_bytes() == ref.read_bytes(), name


def _scenes(tmp_path, synth, n=4):
    d = tmp_path / f"in{n}"
    d.mkdir()
    srcs = []
    for i in range(n):
        t = ("UInt16", "Float32")[i % 2]
        srcs.append(d / f"s{i}_{t}.tif")
        shutil.copyfile(synth[t], srcs[-1])
    return srcs


def test_batch_gives_the_single_scenes_files(gg, synth, tmp_path):
    """Nine scenes, more than are in flight at once (three setting up, one
    at the device, two whose writers drain their queued blocks beside it),
    each of 18 blocks: the batch's files equal those of the scenes run one
    at a time, in processes of their own."""
    srcs = _scenes(tmp_path, synth, 9)
    out = tmp_path / "out"
    out.mkdir()
    args = ["-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632", "-tr", "10", "10",
            "-grid_step", "8"]
    log = gg.run("gdal_ortho", "-q", "-v", *args, "-outdir", out, *srcs).stderr
    blocks = re.findall(r"(\d+) blocks of \d+ rows, source resident", log)
    assert len(blocks) == 9 and all(int(b) > 8 for b in blocks), log
    for s in srcs:
        ref = tmp_path / f"ref_{s.name}"
        gg.run("gdal_ortho", "-q", *args, s, ref)
        assert (out / s.name).read_bytes() == ref.read_bytes(), s.name


SOURCE_LAYOUTS = {
    # name: (bands, creation options, read through GDAL because of ...)
    "strips": (1, [], None),
    "strips7": (1, ["BLOCKYSIZE=7"], None),
    "band3": (3, ["INTERLEAVE=BAND", "BLOCKYSIZE=5"], None),
    "pixel3": (3, ["INTERLEAVE=PIXEL"], "pixel-interleaved bands"),
    "bigendian": (1, ["ENDIANNESS=BIG"], "the other byte order"),
    "deflate": (1, ["COMPRESS=DEFLATE"], "compression DEFLATE"),
    "tiled": (1, ["TILED=YES"], "not a striped layout"),
}
# the layout whose output the others of its band count must give: read
# through GDAL
THROUGH_GDAL = {1: "deflate", 3: "pixel3"}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """The same pixels in every layout of SOURCE_LAYOUTS: 2048 x 1200, wide
    enough that the pipeline's 4 MB strips (1024 rows of one band, 341 of
    three) cut the files' strips."""
    d = tmp_path_factory.mktemp("layouts")
    md = synthetic_rpc(2048, 1200)
    base = write_scene(d / "base.tif", np.random.default_rng(31), 2048, 1200, "UInt16", md)
    a = gdal.Open(str(base)).ReadAsArray().astype(np.int64)
    out = {}
    for name, (nb, co, _) in SOURCE_LAYOUTS.items():
        mem = gdal.GetDriverByName("MEM").Create("", 2048, 1200, nb, gdal.GDT_UInt16)
        for k in range(nb):  # distinct bands: a band read from the wrong place shows
            mem.GetRasterBand(k + 1).WriteArray(np.clip(a + 300 * k - 150 * (k == 2), 0, 65535)
                                                .astype(np.uint16))
        mem.SetMetadata(md, "RPC")
        out[name] = d / f"src_{name}.tif"
        gdal.GetDriverByName("GTiff").CreateCopy(str(out[name]), mem, options=co)
        mem = None
    return out


@pytest.mark.parametrize("layout", sorted(SOURCE_LAYOUTS))
def test_source_read_as_it_lies(gg, synth, layouts, tmp_path, layout):
    """The strip readers take an uncompressed striped GeoTIFF source's rows
    with preads from its strip table (one band or band-interleaved, the
    host's byte order); other layouts go through GDAL, and -v says why.
    Either way the output is the one of the same pixels read through GDAL
    (a compressed or pixel-interleaved copy), with the pipeline's strips
    cutting the file's."""
    nb = SOURCE_LAYOUTS[layout][0]
    args = ["-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632", "-tr", "10",
            "10", "-r", "cubic"]
    outs = {}
    for name in (layout, THROUGH_GDAL[nb]):
        dst = tmp_path / f"out_{name}.tif"
        log = run_v(gg, args, layouts[name], dst)
        m = re.search(r"source resident on the device \((\d+) strips", log)
        assert m and int(m.group(1)) > 1, log
        line = [x for x in log.splitlines() if "source read through GDAL" in x]
        if SOURCE_LAYOUTS[name][2]:
            assert line and SOURCE_LAYOUTS[name][2] in line[0], log
        else:
            assert not line, line
        outs[name] = dst.read_bytes()
    assert outs[layout] == outs[THROUGH_GDAL[nb]]
    # and the pixels are the source's, not zeros: a mostly valid output
    o = gdal.Open(str(tmp_path / f"out_{layout}.tif"))
    assert o.RasterCount == nb
    for k in range(nb):
        v = o.GetRasterBand(k + 1).ReadAsArray()
        assert (v > 0).mean() > 0.3 and v.std() > 10, (layout, k)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_batch_threads_named(gg, synth, tmp_path):
    """While a batch runs its threads carry their roles' names, as top -H
    shows them (gg-scene, gg-read, gg-write, ...)."""
    srcs = _scenes(tmp_path, synth, 6)
    out = tmp_path / "out"
    out.mkdir()
    exe = shutil.which("gdal_ortho", path=os.environ["PATH"])
    args = ["-q", "-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632",
            "-tr", "4", "4", "-r", "cubic", "-outdir", out, *srcs]
    p = subprocess.Popen([exe, *[str(a) for a in args]], stderr=subprocess.PIPE, text=True)
    names = set()
    while p.poll() is None:
        for t in Path(f"/proc/{p.pid}/task").glob("*"):
            try:
                names.add((t / "comm").read_text().strip())
            except OSError:  # the thread (or the process) ended
                pass
        time.sleep(0.002)
    err = p.stderr.read()
    p.stderr.close()
    assert p.wait() == 0, err
    assert {"gg-scene", "gg-read", "gg-write"} <= names, names


@pytest.mark.opencl
@pytest.mark.parametrize("quiet", [True, False])
def test_batch_two_scenes_at_the_device(gg, synth, tmp_path, quiet):
    """A batch on a GPU backend (here PoCL) runs its odd scenes on a
    sibling context, so that a scene's device part starts while the one
    before still runs.  The files equal those of each scene alone (one
    context, a process of its own); the failures are reported once each,
    in the scenes' order; each "src -> dst" line is followed by its own
    whole progress bar, never another scene's."""
    srcs = _batch(tmp_path, synth) + _scenes(tmp_path, synth)
    args = ["-device", "opencl", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632",
            "-tr", "10", "10"]
    out = tmp_path / "out"
    out.mkdir()
    p = gg.run("gdal_ortho", *args, *(["-q"] if quiet else []), "-outdir", out, *srcs,
               check=False)
    assert p.returncode == 1, p.stderr
    names = sorted(x.name for x in out.iterdir())
    assert len(names) == 7, names  # the two bad scenes leave nothing
    for s in srcs:
        if s.name in names:
            ref = tmp_path / f"ref_{s.name}"
            gg.run("gdal_ortho", "-q", *args, s, ref)
            assert (out / s.name).read_bytes() == ref.read_bytes(), s.name
    err = p.stderr
    errors = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 2, err
    assert "b_norpc.tif" in errors[0] and "e_junk.tif" in errors[1], errors
    if quiet:
        assert " -> " not in err
        return
    arrows = [line.split(" -> ")[0] for line in err.splitlines() if " -> " in line]
    assert arrows == [str(s) for s in srcs], err
    # the progress bars (stdout) one after the other, whole: none interleaved
    bar = "0...10...20...30...40...50...60...70...80...90...100 - done.\n"
    assert p.stdout == bar * 7, p.stdout


def test_batch_write_failure_while_the_next_scene_runs(gg, synth, tmp_path):
    """A write that fails in the middle of a batch (GG_FAULT=write:24: the
    24th block written, past the first scene's 18), while other scenes set
    up, run or drain: one error, against the scene that owned the write;
    that scene leaves no file, the others are complete and equal to the
    scenes run one at a time."""
    srcs = _scenes(tmp_path, synth)
    out = tmp_path / "out"
    out.mkdir()
    args = ["-device", "cpu", "-dem", synth["dem4326"], "-t_srs", "EPSG:32632", "-tr", "10", "10",
            "-grid_step", "8"]
    p = gg.run("gdal_ortho", "-q", *args, "-outdir", out, *srcs, check=False,
               env={"GG_FAULT": "write:24"})
    assert p.returncode == 1
    errors = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and "injected fault" in errors[0], p.stderr
    assert "1 of 4 scenes failed" in p.stderr
    failed = [s for s in srcs if str(s) in errors[0]]
    assert len(failed) == 1 and failed[0] != srcs[0], errors
    assert sorted(x.name for x in out.iterdir()) == sorted(s.name for s in srcs
                                                           if s != failed[0])
    for s in srcs:
        if s != failed[0]:
            ref = tmp_path / f"ref_{s.name}"
            gg.run("gdal_ortho", "-q", *args, s, ref)
            assert (out / s.name).read_bytes() == ref.read_bytes(), s.name


def test_batch_no_device_stops_every_scene(gg, synth, tmp_path):
    """A device that does not start: one error line, and no scene (set up
    ahead or not) leaves a file behind."""
    out = tmp_path / "out"
    out.mkdir()
    srcs = [synth["UInt16"], synth["Float32"], synth["UInt16"]]
    p = gg.run("gdal_ortho", "-q", "-device", "opencl:97", "-dem", synth["dem4326"], "-outdir",
               out, *srcs, check=False)
    assert p.returncode != 0
    assert p.stderr.count("ERROR") == 1 and "device" in p.stderr, p.stderr
    assert list(out.iterdir()) == []


# ------------------------------------------- GG:ortho: (the GG driver)


def gg_ortho_string(opts, scene):
    return "GG:ortho:" + "".join(f"{k}={v}:" for k, v in opts) + f"{scene}"


UTM_GG = [("t_srs", "EPSG:32632"), ("te", "270800,5007800,273700,5010750"), ("tr", "4,4")]


@pytest.mark.parametrize("case", ["cubic_te_tr", "default_grid"])
def test_gg_ortho_translate_is_gdal_ortho(gg, synth, device, case):
    """gdal_translate of GG:ortho:... gives gdal_ortho's pixels, grid, CRS and
    nodata, on the same device; opening it computes nothing."""
    d = synth["dir"]
    src, dem = synth["UInt16"], synth["dem4326"]
    if case == "cubic_te_tr":
        opts = [("dem", dem), ("r", "cubic"), *UTM_GG, ("dstnodata", 7)]
        flags = ["-dem", dem, "-r", "cubic", *UTM, "-dstnodata", 7]
    else:  # gdalwarp's own grid: only the CRS given
        opts = [("dem", dem), ("t_srs", "EPSG:32632")]
        flags = ["-dem", dem, "-t_srs", "EPSG:32632"]
    ours = d / f"ggo_{device}_{case}.tif"
    ortho(gg, "-device", device, *flags, src, ours)
    conn = gg_ortho_string([*opts, ("device", device)], src)
    via = d / f"ggo_translate_{device}_{case}.tif"
    subprocess.run(["gdal_translate", "-q", conn, str(via)], check=True, capture_output=True)
    a, b = gdal.Open(str(via)), gdal.Open(str(ours))
    assert (a.RasterXSize, a.RasterYSize) == (b.RasterXSize, b.RasterYSize)
    assert a.GetGeoTransform() == b.GetGeoTransform()
    sa, sb = osr.SpatialReference(a.GetProjection()), osr.SpatialReference(b.GetProjection())
    assert sa.IsSame(sb)
    assert a.GetRasterBand(1).GetNoDataValue() == b.GetRasterBand(1).GetNoDataValue()
    if case == "cubic_te_tr":
        assert a.GetRasterBand(1).GetNoDataValue() == 7
    x, y = a.ReadAsArray(), b.ReadAsArray()
    assert x.dtype == y.dtype == np.uint16
    assert (y != y.flat[0]).sum() > 0.3 * y.size  # textured, not empty
    assert np.array_equal(x, y), f"{case}: differs at {(x != y).sum()} pixels"
    if case == "cubic_te_tr":  # and the same as gdalwarp's (interior within 1 DN)
        ref = gdalwarp(src, d / "w_ggo.tif", dem, "cubic", args=UTM + ["-dstnodata", "7"])
        a2 = x.astype(float)
        a2[a2 == 7] = 0
        tmp = d / f"ggo_cmp_{device}.tif"
        gdal.GetDriverByName("GTiff").CreateCopy(str(tmp), gdal.Open(str(via)))
        t = gdal.Open(str(tmp), gdal.GA_Update)
        t.GetRasterBand(1).WriteArray(a2.astype(np.uint16))
        t = None
        r2 = gdal.Open(str(ref)).ReadAsArray().astype(float)
        r2[r2 == 7] = 0
        rr = d / "w_ggo0.tif"
        gdal.GetDriverByName("GTiff").CreateCopy(str(rr), gdal.Open(str(ref)))
        t = gdal.Open(str(rr), gdal.GA_Update)
        t.GetRasterBand(1).WriteArray(r2.astype(np.uint16))
        t = None
        compare(tmp, rr, f"GG:ortho {device}")


def test_gg_ortho_ggvrt(gg, synth, tmp_path):
    """A .ggvrt with operation="ortho": options as <Option>, the DEM and the
    scene relative to the file; same pixels as gdal_ortho."""
    import shutil
    for k in ("UInt16", "demutm"):
        shutil.copy(synth[k], tmp_path / Path(synth[k]).name)
    (tmp_path / "o.ggvrt").write_text(
        '<GGVRTDataset operation="ortho">\n'
        f'  <Option name="dem">{Path(synth["demutm"]).name}</Option>\n'
        '  <Option name="r">bilinear</Option>\n'
        '  <Option name="t_srs">EPSG:32632</Option>\n'
        '  <Option name="tr">5,5</Option>\n'
        '  <Option name="device">cpu</Option>\n'
        f'  <Input relativeToVRT="1">{Path(synth["UInt16"]).name}</Input>\n'
        '</GGVRTDataset>\n')
    ours = tmp_path / "o.tif"
    ortho(gg, "-device", "cpu", "-dem", synth["demutm"], "-r", "bilinear", "-t_srs",
          "EPSG:32632", "-tr", 5, 5, synth["UInt16"], ours)
    cwd = os.getcwd()
    os.chdir("/")  # relative names resolve against the .ggvrt, not the cwd
    try:
        ds = gdal.Open(str(tmp_path / "o.ggvrt"))
        assert ds.GetDriver().ShortName == "GG"
        x = ds.ReadAsArray()
        gt = ds.GetGeoTransform()
    finally:
        os.chdir(cwd)
    b = gdal.Open(str(ours))
    assert gt == b.GetGeoTransform()
    y = b.ReadAsArray()
    assert (y != 0).sum() > 0.3 * y.size
    assert np.array_equal(x, y)


def test_gg_ortho_opens_without_computing(gg, synth):
    """gdalinfo needs no device: with a device that cannot start, the grid
    and georeferencing are there, and only reading pixels fails."""
    conn = gg_ortho_string([("dem", synth["dem4326"]), *UTM_GG, ("device", "opencl:97:0")],
                           synth["UInt16"])
    p = subprocess.run(["gdalinfo", conn], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "Size is 725, 738" in p.stdout and "UTM zone 32N" in p.stdout
    assert "ERROR" not in p.stderr
    p = subprocess.run(["gdalinfo", "-checksum", conn], capture_output=True, text=True)
    assert p.returncode != 0 or "ERROR" in p.stderr


@pytest.mark.parametrize("opts, scene, words", [
    ([("r", "lanczos")], "UInt16", "near, bilinear or cubic"),
    ([("tr", "abc")], "UInt16", "tr=abc"),
    ([("te", "1,2,3")], "UInt16", "te=1,2,3"),
    ([("ts", "10,0")], "UInt16", "ts=10,0"),
    ([("tr", "4,4"), ("ts", "10,10")], "UInt16", "tr and ts"),
    ([("dme", "x.tif")], "UInt16", "'dme' is not an option of ortho"),
    ([("dem", "/nonexistent/dem.tif")], "UInt16", "cannot open DEM"),
    ([("t_srs", "EPSG:999999")], "UInt16", "t_srs"),
    ([("dem", "DEM"), ("t_srs", "EPSG:32632"), ("te", "0,0,1000,1000"), ("tr", "10,10")],
     "UInt16", "footprint"),
    ([], "plain", "no RPCs"),
    ([], "", "no input"),
])
def test_gg_ortho_bad_specs(gg, synth, tmp_path, opts, scene, words):
    opts = [(k, synth["dem4326"] if v == "DEM" else v) for k, v in opts]
    if scene == "plain":
        scene = tmp_path / "plain.tif"
        gdal.GetDriverByName("GTiff").Create(str(scene), 20, 20, 1, gdal.GDT_UInt16)
    elif scene:
        scene = synth[scene]
    conn = gg_ortho_string(opts, scene) if opts or scene else "GG:ortho:"
    p = subprocess.run(["gdalinfo", conn], capture_output=True, text=True)
    assert p.returncode != 0
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("ERROR")]
    assert len(errors) == 1, p.stderr
    assert words in errors[0], p.stderr


def test_truncated_scene_names_the_cause(gg, tmp_path):
    """A GeoTIFF scene cut short: GDAL's direct reads fail without a
    message; the one error line names the file and says it is truncated,
    and nothing is written."""
    from conftest import BIN
    gg.run(str(BIN / "bench_ortho_make"), str(tmp_path), "200", "160")
    scene = tmp_path / "scene.tif"
    gdal.Translate(str(scene), str(tmp_path / "scene.vrt"))  # RPCs kept
    data = scene.read_bytes()
    scene.write_bytes(data[: len(data) // 3])
    out = tmp_path / "o.tif"
    p = gg.run(str(BIN / "gdal_ortho"), "-q", "-device", "cpu", "-dem",
               str(tmp_path / "dem.vrt"), str(scene), str(out), check=False)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode != 0 and len(lines) == 1, p.stderr
    assert "scene.tif" in lines[0] and "truncated" in lines[0], lines[0]
    assert not out.exists()
