"""gdal_fmcw and the FMCW driver end to end: simulated raw files
(gdal_fmcw -simulate) -> polar products (bands, units, radar metadata),
product selection, cpu vs opencl, the driver's lazy bands (FMCW:<file>),
the velocity sign on a known wind, PPI georeferencing (a point target lands
in its cell, AEQD on the radar), and bad input (missing channel or
parameter, mismatched dimensions, bad sectors, unknown product, grid <= 0).
The chain's numbers are checked against the float64 reference and the
simulated truth in tests/c/test_fmcw.c."""
import math

import numpy as np
import pytest
from osgeo import gdal, osr

ND = -9999.0
ALL = ["DBZ", "ZDR", "LDR", "VEL", "WIDTH", "RHOHV", "PHIDP", "SNR", "SNRVC", "SNRHX"]
UNITS = ["dBZ", "dB", "dB", "m/s", "m/s", "1", "degrees", "dB", "dB", "dB"]
SMALL = ["-sectors", 24, "-sweeps", 64, "-samples", 256, "-gates", 128]
C = 299792458.0


@pytest.fixture(scope="module")
def storm(tmp_path_factory):
    from conftest import GG
    d = tmp_path_factory.mktemp("fmcw")
    GG.run("gdal_fmcw", "-simulate", *SMALL, "-q", d / "storm.nc")
    return d / "storm.nc"


def read_all(path):
    ds = gdal.Open(str(path))
    return ds, np.stack([ds.GetRasterBand(b + 1).ReadAsArray() for b in range(ds.RasterCount)])


def test_polar_products(gg, storm, device, tmp_path):
    before = storm.read_bytes()
    out = tmp_path / "polar.tif"
    gg.run("gdal_fmcw", "-q", "-device", device, storm, out)
    assert storm.read_bytes() == before, "the input changed"
    assert not list(storm.parent.glob("*.aux.xml")), "something was written next to the input"
    ds, a = read_all(out)
    assert (ds.RasterXSize, ds.RasterYSize, ds.RasterCount) == (128, 24, 10)
    for b, (name, unit) in enumerate(zip(ALL, UNITS)):
        band = ds.GetRasterBand(b + 1)
        assert band.GetDescription() == name
        assert band.GetUnitType() == unit
        assert band.GetNoDataValue() == ND
    md = ds.GetMetadata()
    assert float(md["CARRIER_FREQUENCY_HZ"]) == 9.4e9
    assert abs(float(md["RANGE_RESOLUTION_M"]) - C / 2 / 5e6) < 1e-9
    assert int(md["N_SECTORS"]) == 24 and len(md["AZIMUTH_DEG"].split(",")) == 24
    assert np.all(np.isfinite(a)), "NaN or infinity in the products"
    dbz = a[0]
    valid = dbz != ND
    assert valid[:, 2:].mean() > 0.95, "the storm covers every gate beyond the first"
    assert np.all(valid[:, 0] == False), "gate 0 (range 0) is nodata"  # noqa: E712
    # the simulated storm: 20 dBZ rain with a 50 dBZ core
    assert 17 < np.median(dbz[valid]) < 23 and 45 < dbz[valid].max() < 55
    # rho_hv near 0.98 in the rain at high SNR
    snr = a[7]
    good = valid & (snr > 20)
    assert abs(np.median(a[5][good]) - 0.98) < 0.01


def test_products_selection_and_devices_agree(gg, storm, tmp_path):
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-products", "vel,DBZ", storm, tmp_path / "a.tif")
    ds, a = read_all(tmp_path / "a.tif")
    assert [ds.GetRasterBand(b + 1).GetDescription() for b in range(2)] == ["VEL", "DBZ"]
    gg.run("gdal_fmcw", "-q", "-device", "cpu", storm, tmp_path / "all.tif")
    _, full = read_all(tmp_path / "all.tif")
    assert np.array_equal(a[0], full[3]) and np.array_equal(a[1], full[0])
    if gg.run("gdal_fmcw", "-q", "-device", "opencl", storm, tmp_path / "ocl.tif", check=False).returncode == 0:
        _, ocl = read_all(tmp_path / "ocl.tif")
        assert np.array_equal(ocl == ND, full == ND)
        d = np.abs(ocl - full)
        d[6] = np.abs((ocl[6] - full[6] + 180) % 360 - 180)
        assert d[5].max() <= 1e-4 and np.delete(d, 5, axis=0).max() <= 0.01


def test_driver_lazy_bands(gg, storm, tmp_path):
    ds = gdal.OpenEx(f"FMCW:{storm}", gdal.OF_RASTER, open_options=["PRODUCTS=DBZ,RHOHV", "DEVICE=cpu"])
    assert ds.GetDriver().ShortName == "FMCW"
    assert ds.RasterCount == 2 and ds.GetRasterBand(2).GetDescription() == "RHOHV"
    part = ds.GetRasterBand(1).ReadAsArray(0, 9, 128, 5)   # sectors 9..13 only
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-products", "DBZ", storm, tmp_path / "d.tif")
    ref = gdal.Open(str(tmp_path / "d.tif")).ReadAsArray()
    assert np.array_equal(part, ref[9:14])
    t = gdal.Translate(str(tmp_path / "t.tif"), ds)
    assert np.array_equal(t.GetRasterBand(1).ReadAsArray(), ref)


@pytest.fixture(scope="module")
def long_file(tmp_path_factory):
    """50 small sectors: four blocks (batches) of the driver."""
    from conftest import GG
    d = tmp_path_factory.mktemp("fmcw_long")
    GG.run("gdal_fmcw", "-simulate", "-sectors", 50, "-sweeps", 16, "-samples", 128, "-gates", 32, "-q",
           d / "long.nc")
    return d / "long.nc"


def test_driver_read_order(gg, long_file, device, tmp_path):
    """The driver reads the next block ahead while the device processes
    this one (two streams on GPUs and OpenCL): blocks read backwards, out of
    order, twice, or a row at a time give what the sequential gdal_fmcw
    writes, bit for bit, on the same device."""
    gg.run("gdal_fmcw", "-q", "-device", device, long_file, tmp_path / "seq.tif")
    ref = gdal.Open(str(tmp_path / "seq.tif")).ReadAsArray()
    ds = gdal.OpenEx(f"FMCW:{long_file}", gdal.OF_RASTER, open_options=[f"DEVICE={device}"])
    assert ds.GetRasterBand(1).GetBlockSize() == [32, 16]
    band = ds.GetRasterBand(4)
    for y0 in (48, 32, 0, 16, 17, 0, 40, 1):   # blocks 3, 2, 0, 1, 1, 0, 2, 0
        rows = min(2, 50 - y0)
        assert np.array_equal(band.ReadAsArray(0, y0, 32, rows), ref[3, y0:y0 + rows]), f"rows {y0}.."
    ds = None
    ds = gdal.OpenEx(f"FMCW:{long_file}", gdal.OF_RASTER, open_options=[f"DEVICE={device}"])
    assert np.array_equal(ds.ReadAsArray(), ref)


@pytest.mark.parametrize("n", [2, 4])
def test_read_fault_in_a_later_block(gg, long_file, device, tmp_path, n):
    """A read that fails in a later block (GG_FAULT=read:N; on GPUs that is
    the block read ahead) ends in a clean error naming it, nothing left."""
    out = tmp_path / "o"
    out.mkdir()
    p = gg.run("gdal_fmcw", "-q", "-device", device, long_file, out / "p.tif", check=False,
               env={"GG_FAULT": f"read:{n}"})
    assert p.returncode == 1 and "injected fault" in p.stderr, p.stderr
    assert list(out.iterdir()) == []


def test_velocity_sign(gg, storm, tmp_path):
    """The storm's wind blows from the west at 0.6 v_a: targets east of the
    radar move away (VEL > 0), west of it towards (VEL < 0)."""
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-products", "VEL,SNR", storm, tmp_path / "v.tif")
    ds, a = read_all(tmp_path / "v.tif")
    va = C / 9.4e9 / 4 / 1e-3
    az = np.array([float(x) for x in ds.GetMetadata()["AZIMUTH_DEG"].split(",")])
    vel, snr = a
    for s in range(24):
        ok = (vel[s] != ND) & (snr[s] > 10)
        if ok.sum() < 20:
            continue
        want = 0.6 * va * math.sin(math.radians(az[s]))
        assert abs(np.median(vel[s][ok]) - want) < 0.1, f"sector {s} at {az[s]} deg"


def ground_distance(r, elev):
    ka = 4.0 / 3.0 * 6371000.0
    th = math.radians(elev)
    h = math.sqrt(r * r + ka * ka + 2 * r * ka * math.sin(th)) - ka
    return ka * math.asin(r * math.cos(th) / (ka + h))


def test_ppi_point_target(gg, tmp_path):
    src = tmp_path / "pt.nc"
    gg.run("gdal_fmcw", "-simulate", "-sectors", 36, "-sweeps", 32, "-samples", 512, "-gates", 256,
           "-elevation", 2.0, "-target", "4500,105,45", "-lat", 47.5, "-lon", 8.25, "-q", src)
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-grid", 25, "-max_range", 7000, "-products", "DBZ,VEL", src,
           tmp_path / "ppi.tif")
    ds = gdal.Open(str(tmp_path / "ppi_DBZ.tif"))
    assert (tmp_path / "ppi_VEL.tif").exists()
    gt = ds.GetGeoTransform()
    assert gt[1] == 25 and gt[5] == -25 and gt[0] == -7000 and gt[3] == 7000
    srs = ds.GetSpatialRef()
    assert "+proj=aeqd" in srs.ExportToProj4() and "+lat_0=47.5" in srs.ExportToProj4()
    # the grid centre is the radar
    geo = osr.SpatialReference()
    geo.ImportFromEPSG(4326)
    geo.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    lon, lat, _ = osr.CoordinateTransformation(srs, geo).TransformPoint(0.0, 0.0)
    assert abs(lon - 8.25) < 1e-9 and abs(lat - 47.5) < 1e-9
    a = ds.ReadAsArray()
    # the target: gate round(4500 / 30) = 150, the sector centred on 105 deg
    s = ground_distance(150 * C / 2 / 5e6, 2.0)
    x, y = s * math.sin(math.radians(105)), s * math.cos(math.radians(105))
    col, row = int((x - gt[0]) // gt[1]), int((y - gt[3]) // gt[5])
    assert a[row, col] > 40, f"cell ({col}, {row}) holds {a[row, col]}"
    strong = np.argwhere((a != ND) & (a > 30))
    assert len(strong)
    for r, c in strong:   # all strong cells in the target's ray and gate
        cx, cy = gt[0] + (c + 0.5) * gt[1], gt[3] + (r + 0.5) * gt[5]
        assert abs((math.degrees(math.atan2(cx, cy)) - 105 + 180) % 360 - 180) <= 5.01
        assert abs(math.hypot(cx, cy) - s) <= 1.5 * C / 2 / 5e6


# ------------------------------------------------------------ bad input

def copy_raw(src, dst, drop=None, skip_attr=None, bad=None, zero_sector=None):
    """Rewrites src as dst through GDAL's multidimensional API, leaving out
    variable `drop` or attribute `skip_attr`, giving variable `bad` one
    sample fewer, zeroing sector `zero_sector` of I_VV and Q_VV."""
    ids = gdal.OpenEx(str(src), gdal.OF_MULTIDIM_RASTER)
    ir = ids.GetRootGroup()
    drv = gdal.GetDriverByName("netCDF")
    ods = drv.CreateMultiDimensional(str(dst))
    orr = ods.GetRootGroup()
    for at in ir.GetAttributes():
        if at.GetName() == skip_attr:
            continue
        v = at.Read()
        if isinstance(v, str):
            orr.CreateAttribute(at.GetName(), [], gdal.ExtendedDataType.CreateString()).Write(v)
        else:
            orr.CreateAttribute(at.GetName(), [], gdal.ExtendedDataType.Create(gdal.GDT_Float64)).Write(v)
    dims = {d.GetName(): d for d in ir.GetDimensions()}
    od = {k: orr.CreateDimension(k, "", "", d.GetSize()) for k, d in dims.items()}
    od["short"] = orr.CreateDimension("short", "", "", dims["sample"].GetSize() - 1)
    for name in ir.GetMDArrayNames():
        if name == drop:
            continue
        arr = ir.OpenMDArray(name)
        data = arr.ReadAsArray()
        dnames = [d.GetName() for d in arr.GetDimensions()]
        if name == bad:
            dnames[-1] = "short"
            data = data[..., :-1]
        if zero_sector is not None and name in ("I_VV", "Q_VV"):
            data[zero_sector] = 0
        o = orr.CreateMDArray(name, [od[d] for d in dnames], arr.GetDataType())
        o.WriteArray(data)
    del ods


@pytest.mark.parametrize("case,message", [
    (dict(drop="Q_HV"), "missing channel variable 'Q_HV'"),
    (dict(skip_attr="sweep_bandwidth"), "missing radar parameter 'sweep_bandwidth'"),
    (dict(bad="I_VV"), "'I_VV' must have dimensions (sector, sweep, sample) like I_HH"),
])
def test_bad_files(gg, storm, tmp_path, case, message):
    bad = tmp_path / "bad.nc"
    copy_raw(storm, bad, **case)
    out = tmp_path / "out.tif"
    p = gg.run("gdal_fmcw", "-q", "-device", "cpu", bad, out, check=False)
    assert p.returncode != 0
    errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
    assert len(errors) == 1 and message in errors[0], p.stderr
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_bad_sector_is_nodata_with_warning(gg, storm, tmp_path):
    bad = tmp_path / "zero.nc"
    copy_raw(storm, bad, zero_sector=5)
    p = gg.run("gdal_fmcw", "-q", "-device", "cpu", bad, tmp_path / "z.tif")
    assert "sector 5: a channel is all zero" in p.stderr
    _, a = read_all(tmp_path / "z.tif")
    assert np.all(a[:, 5] == ND)
    assert (a[0, 4] != ND).sum() > 100 and (a[0, 6] != ND).sum() > 100


@pytest.mark.parametrize("args,message", [
    (["-products", "DBZ,FOO"], "unknown product 'FOO'"),
    (["-grid", "0"], "-grid resolution must be positive"),
    (["-grid", "-5"], "-grid resolution must be positive"),
    (["-max_range", "5000"], "-max_range needs -grid"),
    (["-device", "gpu7"], "unknown device"),
    (["-average", "60"], "applies to MRR-2 spectra"),
    (["-products", "ZE"], "unknown product 'ZE'"),
])
def test_bad_options(gg, storm, tmp_path, args, message):
    out = tmp_path / "o.tif"
    p = gg.run("gdal_fmcw", "-q", *args, storm, out, check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr
    assert not out.exists()


def test_simulate_bad_options(gg, tmp_path):
    p = gg.run("gdal_fmcw", "-simulate", "-sweeps", 3, tmp_path / "s.nc", check=False)
    assert p.returncode != 0 and "n_sweeps" in p.stderr
    assert not list(tmp_path.iterdir())


def test_cfradial_polar(gg, storm, tmp_path):
    """-of CfRadial on raw sectors: one PPI sweep (azimuth_surveillance at the
    file's elevation) that Py-ART reads with the polar GeoTIFF's values,
    azimuths and gate ranges; a PPI grid has no rays and is refused."""
    import site
    import sys
    import warnings
    from conftest import BUILD
    site.addsitedir(str(BUILD / "test_peers" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
                        / "site-packages"))
    try:
        import pyart
    except Exception as e:
        pytest.skip(f"pyart not importable ({type(e).__name__}); scripts/setup.sh installs it")
    tif, nc = tmp_path / "polar.tif", tmp_path / "polar.nc"
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-products", "DBZ,VEL,WIDTH", storm, tif)
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-products", "DBZ,VEL,WIDTH", "-of", "CfRadial", storm, nc)
    ds, a = read_all(tif)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        radar = pyart.io.read_cfradial(str(nc))
    assert radar.scan_type == "ppi" and (radar.nrays, radar.ngates) == (24, 128)
    np.testing.assert_allclose(radar.azimuth["data"], [float(x) for x in ds.GetMetadataItem("AZIMUTH_DEG").split(",")],
                               atol=1e-4)
    assert abs(radar.fixed_angle["data"][0] - float(ds.GetMetadataItem("ELEVATION_DEG"))) < 1e-6
    dr = float(ds.GetMetadataItem("RANGE_RESOLUTION_M"))
    np.testing.assert_allclose(np.diff(radar.range["data"]), dr, rtol=1e-5)
    for i, k in enumerate(["DBZ", "VEL", "WIDTH"]):
        f = radar.fields[k]["data"]
        assert np.array_equal(np.ma.getmaskarray(f), a[i] == ND), k
        np.testing.assert_array_equal(f.compressed(), a[i][a[i] != ND])
    assert (a[0] != ND).sum() > 1000
    r = gg.run("gdal_fmcw", "-q", "-grid", "200", "-of", "CfRadial", storm, tmp_path / "g.nc", check=False)
    assert r.returncode != 0 and "TIME_S" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "g.nc").exists() and not list(tmp_path.glob(".*"))
