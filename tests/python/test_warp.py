"""gdal_warp against gdalwarp, run in the test on the same inputs: map
reprojection (PROJ), GCP polynomials and thin-plate splines, geolocation
arrays, RPCs (through gdal_ortho's pipeline); every resampling kernel; Byte,
UInt16, Float32 and CFloat32; nodata; several bands and several sources;
gdalwarp's grid options; bad input.

The texture is the real Winnipeg SLC (autotest_data/winnipeg_slc) and the
geolocation the real isce3 topo arrays (autotest_data/isce3_topo).

Where gdalwarp splits its output into chunks (its source-fill-ratio
heuristic on rotated geometries) its resampling kernels are stretched by
each chunk's size ratio, and at -et > 0 its linear pieces follow the
chunks; gdal_warp gives gdalwarp's one-chunk answer (docs/gdal_warp.md), so
those comparisons run gdalwarp with -wo SRC_FILL_RATIO_HEURISTICS=NO.
"""
import subprocess

import numpy as np
import pytest
from osgeo import gdal, osr

from conftest import DATA, BIN

ONE_CHUNK = ["-wo", "SRC_FILL_RATIO_HEURISTICS=NO", "-wm", "2000"]
KERNELS = ["near", "bilinear", "cubic", "cubicspline", "lanczos", "average"]


def _texture():
    slc = np.fromfile(DATA / "winnipeg_slc" / "winnipeg_hh.slc", dtype=np.complex64)
    return slc.reshape(250, 250)


def _utm(path, arr, gdt, nodata=None, x0=633000.0, bands=1):
    h, w = arr.shape[-2:]
    ds = gdal.GetDriverByName("GTiff").Create(str(path), w, h, bands, gdt)
    ds.SetGeoTransform((x0, 10, 0, 5530000, 0, -10))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32614)
    ds.SetProjection(srs.ExportToWkt())
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        band.WriteArray(arr if arr.ndim == 2 else arr[b])
        if nodata is not None:
            band.SetNoDataValue(nodata)
    ds = None
    return path


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    """The real texture as UTM rasters of each type, a radar-geometry raster
    with its real geolocation arrays, and the same with GCPs sampled from
    them."""
    d = tmp_path_factory.mktemp("warp")
    slc = _texture()
    amp = np.abs(slc).astype(np.float32)
    assert amp.std() > 0
    s = {
        "Float32": _utm(d / "f32.tif", amp, gdal.GDT_Float32),
        "UInt16": _utm(d / "u16.tif", np.clip(amp * 2000, 0, 65535).astype(np.uint16),
                       gdal.GDT_UInt16),
        "Byte": _utm(d / "b.tif", np.clip(amp * 200, 0, 255).astype(np.uint8), gdal.GDT_Byte),
        "CFloat32": _utm(d / "c.tif", slc, gdal.GDT_CFloat32),
    }
    lon = np.fromfile(DATA / "isce3_topo" / "x_250.rdr", "<f8").reshape(250, 250)
    lat = np.fromfile(DATA / "isce3_topo" / "y_250.rdr", "<f8").reshape(250, 250)
    for n, a in (("lon", lon), ("lat", lat)):
        ds = gdal.GetDriverByName("GTiff").Create(str(d / f"{n}.tif"), 250, 250, 1, gdal.GDT_Float64)
        ds.GetRasterBand(1).WriteArray(a)
        ds = None
    wgs84 = osr.SpatialReference()
    wgs84.ImportFromEPSG(4326)
    ds = gdal.GetDriverByName("GTiff").Create(str(d / "rdr.tif"), 250, 250, 1, gdal.GDT_Float32)
    ds.GetRasterBand(1).WriteArray(amp)
    ds.SetMetadata({"X_DATASET": str(d / "lon.tif"), "X_BAND": "1",
                    "Y_DATASET": str(d / "lat.tif"), "Y_BAND": "1",
                    "PIXEL_OFFSET": "0", "LINE_OFFSET": "0", "PIXEL_STEP": "1", "LINE_STEP": "1",
                    "SRS": wgs84.ExportToWkt()}, "GEOLOCATION")
    ds = None
    s["geoloc"] = d / "rdr.tif"
    gcps = [gdal.GCP(float(lon[j, i]), float(lat[j, i]), 0, i + 0.5, j + 0.5)
            for j in range(0, 250, 25) for i in range(0, 250, 25)]
    ds = gdal.GetDriverByName("GTiff").Create(str(d / "gcp.tif"), 250, 250, 1, gdal.GDT_Float32)
    ds.GetRasterBand(1).WriteArray(amp)
    ds.SetGCPs(gcps, wgs84.ExportToWkt())
    ds = None
    s["gcp"] = d / "gcp.tif"
    # the same geometries in the other data types
    values = {"Byte": (np.clip(amp * 200, 0, 255).astype(np.uint8), gdal.GDT_Byte),
              "UInt16": (np.clip(amp * 2000, 0, 65535).astype(np.uint16), gdal.GDT_UInt16),
              "CFloat32": (slc, gdal.GDT_CFloat32)}
    for t, (a, gdt) in values.items():
        for kind, base in (("gcp", s["gcp"]), ("geoloc", s["geoloc"])):
            path = d / f"{kind}_{t}.tif"
            ds = gdal.GetDriverByName("GTiff").Create(str(path), 250, 250, 1, gdt)
            ds.GetRasterBand(1).WriteArray(a)
            b = gdal.Open(str(base))
            if kind == "gcp":
                ds.SetGCPs(b.GetGCPs(), b.GetGCPProjection())
            else:
                ds.SetMetadata(b.GetMetadata("GEOLOCATION"), "GEOLOCATION")
            ds = None
            s[f"{kind}_{t}"] = path
    s["dir"] = d
    return s


def _pair(gg, tmp_path, src, opts, device="cpu", peer_extra=(), name="o"):
    """gdal_warp and gdalwarp on the same command line; both outputs."""
    srcs = [str(x) for x in (src if isinstance(src, (list, tuple)) else [src])]
    ours, theirs = tmp_path / f"{name}_gg.tif", tmp_path / f"{name}_gdal.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", device, *opts, *srcs, str(ours))
    subprocess.run(["gdalwarp", "-q", *opts, *peer_extra, *srcs, str(theirs)], check=True,
                   capture_output=True)
    return ours, theirs


def _agree(ours, theirs, frac=0.999):
    """The same grid and nodata; >= frac of the pixels within 1 DN (integer)
    or 1e-4 relative (float) -- of all pixels, border included."""
    a, b = gdal.Open(str(ours)), gdal.Open(str(theirs))
    assert (a.RasterXSize, a.RasterYSize, a.RasterCount) == (b.RasterXSize, b.RasterYSize,
                                                             b.RasterCount)
    np.testing.assert_allclose(a.GetGeoTransform(), b.GetGeoTransform(), rtol=1e-12, atol=0)
    assert osr.SpatialReference(a.GetProjection()).IsSame(osr.SpatialReference(b.GetProjection()))
    worst = 1.0
    for k in range(1, a.RasterCount + 1):
        ba, bb = a.GetRasterBand(k), b.GetRasterBand(k)
        assert ba.DataType == bb.DataType
        assert ba.GetNoDataValue() == bb.GetNoDataValue()
        x, y = ba.ReadAsArray(), bb.ReadAsArray()
        if np.iscomplexobj(x):
            x, y = np.concatenate([x.real, x.imag]), np.concatenate([y.real, y.imag])
        x, y = x.astype(np.float64), y.astype(np.float64)
        assert np.count_nonzero(y) > 0.3 * y.size, "the peer's output is mostly empty"
        integer = ba.DataType in (gdal.GDT_Byte, gdal.GDT_UInt16, gdal.GDT_Int16)
        tol = 1.0 if integer else 1e-4 * np.maximum(np.abs(y), 1e-3)
        good = np.mean(np.abs(x - y) <= tol)
        nd = ba.GetNoDataValue()
        if nd is not None:  # the nodata masks agree
            assert np.mean((x == nd) == (y == nd)) >= frac
        worst = min(worst, good)
    assert worst >= frac, f"only {worst:.5f} of the pixels agree"
    return worst


# ------------------------------------------------------------ map reprojection


@pytest.mark.parametrize("dtype", ["Byte", "UInt16", "Float32", "CFloat32"])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("et", [None, "0"], ids=["et_default", "et0"])
def test_reprojection_matches_gdalwarp(gg, tmp_path, scenes, dtype, kernel, et):
    opts = ["-t_srs", "EPSG:3857", "-r", kernel] + (["-et", et] if et else [])
    ours, theirs = _pair(gg, tmp_path, scenes[dtype], opts)
    _agree(ours, theirs)


@pytest.mark.parametrize("kernel", KERNELS)
def test_reprojection_on_opencl(gg, tmp_path, scenes, kernel):
    if gg_opencl_absent():
        pytest.skip(gg_opencl_absent())
    opts = ["-t_srs", "EPSG:4326", "-r", kernel, "-et", "0"]
    ours, theirs = _pair(gg, tmp_path, scenes["UInt16"], opts, device="opencl")
    _agree(ours, theirs)
    # and the same bits as the CPU backend
    cpu = tmp_path / "cpu.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", *opts, str(scenes["UInt16"]), str(cpu))
    assert np.array_equal(gdal.Open(str(cpu)).ReadAsArray(), gdal.Open(str(ours)).ReadAsArray())


def gg_opencl_absent():
    from conftest import OPENCL_ABSENT
    return OPENCL_ABSENT


@pytest.mark.parametrize("opts", [
    ["-tr", "20", "20", "-tap"],
    ["-te", "-10815000", "6426000", "-10811000", "6430000", "-ts", "300", "0"],
    ["-te", "-97.15", "49.885", "-97.11", "49.905", "-te_srs", "EPSG:4326", "-tr", "12", "12"],
    ["-ts", "120", "90"],
], ids=["tr_tap", "te_ts", "te_srs", "ts"])
def test_grid_options_match_gdalwarp(gg, tmp_path, scenes, opts):
    ours, theirs = _pair(gg, tmp_path, scenes["Float32"],
                         ["-t_srs", "EPSG:3857", "-r", "bilinear", *opts])
    _agree(ours, theirs)


@pytest.mark.parametrize("kernel", ["average", "bilinear", "lanczos"])
@pytest.mark.parametrize("res", ["37", "4"], ids=["coarser", "finer"])
def test_resolution_change_matches_gdalwarp(gg, tmp_path, scenes, kernel, res):
    """Downsampling about 4x (average's footprints of many pixels, stretched
    kernels) and upsampling 2.5x."""
    opts = ["-t_srs", "EPSG:3857", "-r", kernel, "-tr", res, res]
    for k, et in enumerate((["-et", "0"], [])):
        ours, theirs = _pair(gg, tmp_path, scenes["UInt16"], opts + et, name=f"o{k}")
        _agree(ours, theirs)


@pytest.mark.parametrize("kernel", ["bilinear", "average"])
@pytest.mark.parametrize("ot", ["Byte", "UInt16"])
def test_output_type_is_gdalwarps_working_type(gg, tmp_path, scenes, kernel, ot):
    """-ot narrower than the source: gdalwarp resamples in the output's
    type (its working type), so a Float32 source written as Byte is read as
    Byte first (values clamped and rounded) and then resampled."""
    a = gdal.Open(str(scenes["Float32"])).ReadAsArray()
    src = _utm(tmp_path / "wide.tif", (a * 900 - 50).astype(np.float32), gdal.GDT_Float32)
    ours, theirs = _pair(gg, tmp_path, src, ["-t_srs", "EPSG:3857", "-r", kernel, "-ot", ot])
    _agree(ours, theirs)


def test_average_against_float64_reference(gg, tmp_path):
    """-r average against a float64 reference written from the method's
    definition: each output pixel's footprint is the box between the
    source positions of its corners (x, y) and (x + 1, y + 1) (GDAL's exact
    transformer), each source pixel weighted by the part of it inside the
    box along x times along y, nodata left out; on a rotated geotransform
    so that boxes are not aligned with pixels."""
    rng = np.random.default_rng(5)
    amp = np.abs(_texture()[:90, :110]).astype(np.float64) * 500 + rng.random((90, 110))
    amp[30:40, 50:70] = -1  # nodata
    src = tmp_path / "rot.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(src), 110, 90, 1, gdal.GDT_Float32)
    c, s = np.cos(0.3), np.sin(0.3)
    ds.SetGeoTransform((633000, 10 * c, 10 * s, 5530000, 10 * s, -10 * c))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32614)
    ds.SetProjection(srs.ExportToWkt())
    ds.GetRasterBand(1).WriteArray(amp)
    ds.GetRasterBand(1).SetNoDataValue(-1)
    ds = None
    out = tmp_path / "avg.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-r", "average", "-et", "0",
           "-t_srs", "EPSG:32614", "-tr", "23", "23", str(src), str(out))
    o = gdal.Open(str(out))
    got = o.GetRasterBand(1).ReadAsArray().astype(np.float64)
    a = gdal.Open(str(src)).ReadAsArray().astype(np.float64)  # the float32 values
    tr = gdal.Transformer(gdal.Open(str(src)), o, [])
    H, W = a.shape
    checked = 0
    for j in range(o.RasterYSize):
        for i in range(o.RasterXSize):
            (x0, y0), (x1, y1) = (tr.TransformPoint(1, i + k, j + k)[1][:2] for k in (0, 1))
            x0, x1, y0, y1 = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
            if not (0 <= x0 and x1 <= W and 0 <= y0 and y1 <= H):
                continue  # footprints inside the source: no edge rule involved
            xs, ys = np.arange(int(np.floor(x0)), int(np.ceil(x1))), \
                np.arange(int(np.floor(y0)), int(np.ceil(y1)))
            wx = np.minimum(xs + 1, x1) - np.maximum(xs, x0)
            wy = np.minimum(ys + 1, y1) - np.maximum(ys, y0)
            w = wy[:, None] * wx[None, :]
            v = a[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1]
            w = np.where(v == -1, 0.0, w)
            want = (w * v).sum() / w.sum() if w.sum() > 0 else -1.0
            assert abs(got[j, i] - want) <= 1e-4 * max(abs(want), 1.0), (i, j, got[j, i], want)
            checked += 1
    assert checked > 0.5 * o.RasterXSize * o.RasterYSize


# ------------------------------------------------------------ nodata, bands, sources


@pytest.fixture(scope="module")
def three_bands(scenes):
    amp = np.abs(_texture()).astype(np.float32)
    u = np.clip(amp * 2000, 1, 65535).astype(np.uint16)
    u[100:140, 60:120] = 0  # a hole of nodata
    stack = np.stack([np.roll(u, 7 * b, axis=1) for b in range(3)])
    return _utm(scenes["dir"] / "nd3.tif", stack, gdal.GDT_UInt16, nodata=0, bands=3)


@pytest.mark.parametrize("opts", [
    ["-r", "bilinear"],
    ["-r", "cubic", "-srcnodata", "0"],
    ["-r", "near", "-dstnodata", "7"],
    ["-r", "cubic", "-srcnodata", "None", "-dstnodata", "None"],
    ["-r", "lanczos", "-wo", "UNIFIED_SRC_NODATA=YES"],
    ["-r", "cubicspline", "-srcnodata", "0 5 9", "-dstnodata", "3"],
], ids=["own_nodata", "srcnodata", "dstnodata", "no_nodata", "unified", "lists"])
def test_nodata_and_bands_match_gdalwarp(gg, tmp_path, three_bands, opts):
    ours, theirs = _pair(gg, tmp_path, three_bands, ["-t_srs", "EPSG:3857", "-et", "0", *opts])
    _agree(ours, theirs)


def test_sources_are_mosaicked_as_gdalwarp(gg, tmp_path, scenes):
    amp = np.abs(_texture()).astype(np.float32)
    left = _utm(tmp_path / "left.tif", amp[:, :140], gdal.GDT_Float32)
    right = _utm(tmp_path / "right.tif", amp[:, 110:], gdal.GDT_Float32, x0=633000.0 + 1100)
    ours, theirs = _pair(gg, tmp_path, [left, right],
                         ["-t_srs", "EPSG:3857", "-r", "cubic", "-et", "0"])
    _agree(ours, theirs)
    # the union of the two is the whole scene's grid
    whole, _ = _pair(gg, tmp_path, scenes["Float32"], ["-t_srs", "EPSG:3857", "-et", "0"],
                     name="whole")
    assert gdal.Open(str(whole)).RasterXSize == gdal.Open(str(ours)).RasterXSize


def _same_file(ours, theirs):
    """The same bands, band metadata (nodata, colour interpretation) and
    pixels, to the bit."""
    a, b = gdal.Open(str(ours)), gdal.Open(str(theirs))
    assert a.RasterCount == b.RasterCount
    for k in range(1, a.RasterCount + 1):
        ba, bb = a.GetRasterBand(k), b.GetRasterBand(k)
        assert (ba.DataType, ba.GetNoDataValue(), ba.GetColorInterpretation()) == \
            (bb.DataType, bb.GetNoDataValue(), bb.GetColorInterpretation()), k
    x, y = a.ReadAsArray(), b.ReadAsArray()
    assert np.array_equal(x, y), f"{np.count_nonzero(x != y)} pixels differ"
    return y


@pytest.mark.parametrize("opts", [
    ["-r", "near"],
    ["-r", "cubic", "-et", "0"],
    ["-r", "average", "-tr", "23", "23"],
    ["-r", "bilinear", "-srcnodata", "0"],
    ["-r", "cubic", "-dstnodata", "9"],
    ["-r", "bilinear", "-ot", "Int16"],
    ["-r", "lanczos", "-ot", "Float32"],
], ids=["near", "cubic_et0", "average", "srcnodata", "dstnodata", "int16", "float32"])
def test_dstalpha_matches_gdalwarp(gg, tmp_path, scenes, opts):
    """-dstalpha: an alpha band (the type's maximum where a source pixel
    reached, 0 elsewhere, colour interpretation alpha), the source's nodata
    not carried, -dstnodata given to every band; a value of 0 inside the
    footprint keeps its alpha (the Byte texture has zeros)."""
    src = scenes["Byte"]
    assert np.count_nonzero(gdal.Open(str(src)).ReadAsArray() == 0) > 0
    ours, theirs = _pair(gg, tmp_path, src, ["-t_srs", "EPSG:3857", "-dstalpha", *opts])
    y = _same_file(ours, theirs)
    assert set(np.unique(y[-1])) == {0, {"Int16": 32767}.get(opts[-1], 255)}


def test_dstalpha_mosaic_and_bands_match_gdalwarp(gg, tmp_path, three_bands):
    """Several sources under -dstalpha: a later source's valid samples
    replace what is there, the alpha band gains them; three bands with a
    nodata hole."""
    a = gdal.Open(str(three_bands)).ReadAsArray()
    left = _utm(tmp_path / "l.tif", a[:, :, :140], gdal.GDT_UInt16, nodata=0, bands=3)
    right = _utm(tmp_path / "r.tif", a[:, :, 110:], gdal.GDT_UInt16, nodata=0, bands=3,
                 x0=633000.0 + 1100)
    ours, theirs = _pair(gg, tmp_path, [left, right],
                         ["-t_srs", "EPSG:3857", "-r", "bilinear", "-dstalpha"])
    y = _same_file(ours, theirs)
    assert y.shape[0] == 4 and 0 < np.mean(y[3] == 65535) < 1


def test_dstalpha_lazy_and_refusals(gg, tmp_path, scenes):
    """GG:warp with dstalpha=yes is gdal_warp -dstalpha; complex data and
    the RPC path refuse it in one line."""
    out = tmp_path / "a.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-dstalpha", "-t_srs", "EPSG:3857",
           "-r", "cubic", str(scenes["UInt16"]), str(out))
    lazy = gdal.Open(f"GG:warp:t_srs=EPSG:3857:r=cubic:dstalpha=yes:device=cpu:{scenes['UInt16']}")
    assert lazy.RasterCount == 2
    assert lazy.GetRasterBand(2).GetColorInterpretation() == gdal.GCI_AlphaBand
    assert np.array_equal(lazy.ReadAsArray(), gdal.Open(str(out)).ReadAsArray())
    assert "complex" in _fails(gg, tmp_path, "-dstalpha", "-t_srs", "EPSG:3857",
                               str(scenes["CFloat32"]))
    assert "-dstalpha" in _fails(gg, tmp_path, "-rpc", "-dstalpha", str(scenes["Float32"]))


# ------------------------------------------------------------ GCPs and geolocation arrays


@pytest.mark.parametrize("transformer", [["-order", "1"], ["-order", "2"], ["-order", "3"],
                                         ["-tps"]], ids=["order1", "order2", "order3", "tps"])
@pytest.mark.parametrize("kernel", ["near", "bilinear", "cubic", "average"])
@pytest.mark.parametrize("et", [None, "0"], ids=["et_default", "et0"])
def test_gcps_match_gdalwarp(gg, tmp_path, scenes, transformer, kernel, et):
    opts = transformer + ["-r", kernel] + (["-et", et] if et else [])
    ours, theirs = _pair(gg, tmp_path, scenes["gcp"], opts, peer_extra=ONE_CHUNK)
    _agree(ours, theirs)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("et", [None, "0"], ids=["et_default", "et0"])
def test_geolocation_arrays_match_gdalwarp(gg, tmp_path, scenes, kernel, et):
    opts = ["-geoloc", "-r", kernel] + (["-et", et] if et else [])
    ours, theirs = _pair(gg, tmp_path, scenes["geoloc"], opts, peer_extra=ONE_CHUNK)
    _agree(ours, theirs)


@pytest.mark.parametrize("dtype", ["Byte", "UInt16", "CFloat32"])
@pytest.mark.parametrize("transformer", [["-order", "2"], ["-tps"], ["-geoloc"]],
                         ids=["order2", "tps", "geoloc"])
@pytest.mark.parametrize("kernel", ["bilinear", "cubic", "average"])
def test_gcps_and_geolocation_in_each_type(gg, tmp_path, scenes, dtype, transformer, kernel):
    kind = "geoloc" if transformer == ["-geoloc"] else "gcp"
    ours, theirs = _pair(gg, tmp_path, scenes[f"{kind}_{dtype}"], transformer + ["-r", kernel],
                         peer_extra=ONE_CHUNK)
    _agree(ours, theirs)


@pytest.mark.parametrize("et", ["0", "0.125"])
def test_geolocation_against_exact_inverse(gg, tmp_path, scenes, et):
    """gdalwarp's geolocation inverse comes from a back-map; gdal_warp's
    positions are checked against an exact float64 inverse of the
    geolocation model (bilinear interpolation of the arrays, sample (i, j)
    at pixel (i, j), GDAL's forward transform): a raster whose values are
    its own pixel coordinates, warped with bilinear (a linear ramp is
    reproduced exactly when the kernel is not stretched: a finer output
    grid), gives each output pixel's source position; Newton's method on the
    model gives the exact one.  <= 0.01 px everywhere checked."""
    lon = np.fromfile(DATA / "isce3_topo" / "x_250.rdr", "<f8").reshape(250, 250)
    lat = np.fromfile(DATA / "isce3_topo" / "y_250.rdr", "<f8").reshape(250, 250)
    coord = tmp_path / "coord.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(coord), 250, 250, 2, gdal.GDT_Float32)
    jj, ii = np.mgrid[0:250, 0:250]
    ds.GetRasterBand(1).WriteArray(ii + 0.5)
    ds.GetRasterBand(2).WriteArray(jj + 0.5)
    ds.SetMetadata(gdal.Open(str(scenes["geoloc"])).GetMetadata("GEOLOCATION"), "GEOLOCATION")
    ds = None
    out = tmp_path / "pos.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-geoloc", "-et", et, "-r",
           "bilinear", "-tr", "0.00005", "0.00005", str(coord), str(out))
    o = gdal.Open(str(out))
    gt = o.GetGeoTransform()
    sx = o.GetRasterBand(1).ReadAsArray().astype(np.float64)
    sy = o.GetRasterBand(2).ReadAsArray().astype(np.float64)

    def model(x, y):
        i, j = min(max(int(np.floor(x)), 0), 248), min(max(int(np.floor(y)), 0), 248)
        ax, ay = x - i, y - j
        return tuple((a[j, i] * (1 - ax) + a[j, i + 1] * ax) * (1 - ay) +
                     (a[j + 1, i] * (1 - ax) + a[j + 1, i + 1] * ax) * ay for a in (lon, lat))

    def inverse(L, P, x, y):
        for _ in range(30):
            f, h = model(x, y), 1e-6
            fx, fy = model(x + h, y), model(x, y + h)
            J = np.array([[fx[0] - f[0], fy[0] - f[0]], [fx[1] - f[1], fy[1] - f[1]]]) / h
            d = np.linalg.solve(J, [L - f[0], P - f[1]])
            x, y = x + d[0], y + d[1]
            if abs(d[0]) + abs(d[1]) < 1e-12:
                break
        return x, y

    errors = []
    H, W = sx.shape
    for j in range(5, H - 5, 9):
        for i in range(5, W - 5, 9):
            if not (3 < sx[j, i] < 247 and 3 < sy[j, i] < 247):
                continue  # the ramp is linear away from the raster's edge
            x, y = inverse(gt[0] + (i + 0.5) * gt[1], gt[3] + (j + 0.5) * gt[5], sx[j, i], sy[j, i])
            errors.append(max(abs(x - sx[j, i]), abs(y - sy[j, i])))
    assert len(errors) > 1000
    assert max(errors) <= 0.01, f"geometric error up to {max(errors):.4f} px"


def test_gcps_near_matches_gdalwarp_with_its_chunks(gg, tmp_path, scenes):
    """Nearest neighbour has no kernel to stretch: gdalwarp's own chunking
    gives the same answer."""
    ours, theirs = _pair(gg, tmp_path, scenes["gcp"], ["-tps", "-r", "near", "-et", "0"])
    _agree(ours, theirs)


# ------------------------------------------------------------ bad input


def _fails(gg, tmp_path, *args):
    out = tmp_path / "bad.tif"
    p = gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", *args, str(out), check=False)
    assert p.returncode != 0
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR 1: gdal_warp:"), p.stderr
    assert not out.exists() and not list(tmp_path.glob(".bad*"))
    return lines[0]


def test_bad_input_one_line_no_output(gg, tmp_path, scenes):
    plain = tmp_path / "plain.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(plain), 20, 20, 1, gdal.GDT_Float32)
    ds.GetRasterBand(1).WriteArray(np.arange(400, dtype=np.float32).reshape(20, 20))
    ds = None
    assert "plain.tif" in _fails(gg, tmp_path, "-t_srs", "EPSG:4326", str(plain))
    few = tmp_path / "few.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(few), 20, 20, 1, gdal.GDT_Float32)
    ds.GetRasterBand(1).WriteArray(np.arange(400, dtype=np.float32).reshape(20, 20))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(4326)
    ds.SetGCPs([gdal.GCP(10 + i, 40 + j, 0, 5 * i, 5 * j) for i in range(2) for j in range(2)],
               srs.ExportToWkt())
    ds = None
    _fails(gg, tmp_path, "-order", "3", str(few))
    # geolocation arrays of the wrong size
    wrong = tmp_path / "wrong.tif"
    gdal.Translate(str(wrong), str(scenes["geoloc"]), srcWin=[0, 0, 200, 200])
    ds = gdal.Open(str(wrong), gdal.GA_Update)
    ds.SetMetadata(gdal.Open(str(scenes["geoloc"])).GetMetadata("GEOLOCATION"), "GEOLOCATION")
    small = tmp_path / "lon_small.tif"
    gdal.Translate(str(small), str(scenes["dir"] / "lon.tif"), srcWin=[0, 0, 100, 100])
    ds.SetMetadataItem("X_DATASET", str(small), "GEOLOCATION")
    ds = None
    _fails(gg, tmp_path, "-geoloc", str(wrong))
    # a grid off the source
    _fails(gg, tmp_path, "-t_srs", "EPSG:3857", "-te", "0", "0", "1000", "1000", "-tr", "10",
           "10", str(scenes["Float32"]))
    # an unknown kernel, by name
    assert "mode" in _fails(gg, tmp_path, "-r", "mode", str(scenes["Float32"]))
    # the destination is an input, even with -overwrite
    src = tmp_path / "in.tif"
    src.write_bytes(scenes["Float32"].read_bytes())
    before = src.read_bytes()
    p = gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-overwrite", "-t_srs",
               "EPSG:3857", str(src), str(src), check=False)
    assert p.returncode != 0 and "never overwritten" in p.stderr, p.stderr
    assert src.read_bytes() == before


def test_work_limit_stops_a_runaway_grid(gg, tmp_path, scenes):
    """GG_WORK_LIMIT: the bytes a warp would read and write are checked once
    the output grid is known, before the device starts; GG:warp too."""
    line = _fails(gg, tmp_path, "--config", "GG_WORK_LIMIT", "100K", "-t_srs", "EPSG:3857",
                  str(scenes["Float32"]))
    assert "GG_WORK_LIMIT" in line and "would read" in line
    gdal.SetConfigOption("GG_WORK_LIMIT", "100K")
    try:
        with pytest.raises(RuntimeError, match="GG_WORK_LIMIT"):
            gdal.OpenEx(f"GG:warp:t_srs=EPSG:3857:{scenes['Float32']}")
    finally:
        gdal.SetConfigOption("GG_WORK_LIMIT", None)
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "--config", "GG_WORK_LIMIT", "2M",
           "-t_srs", "EPSG:3857", str(scenes["Float32"]), str(tmp_path / "fits.tif"))


def test_existing_output_needs_overwrite(gg, tmp_path, scenes):
    out = tmp_path / "o.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-t_srs", "EPSG:3857",
           str(scenes["Byte"]), str(out))
    before = out.read_bytes()
    p = gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-t_srs", "EPSG:4326",
               str(scenes["Byte"]), str(out), check=False)
    assert p.returncode != 0 and "-overwrite" in p.stderr
    assert out.read_bytes() == before
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-overwrite", "-t_srs", "EPSG:4326",
           str(scenes["Byte"]), str(out))
    assert gdal.Open(str(out)).GetSpatialRef().GetAuthorityCode(None) == "4326"


# ------------------------------------------------------------ Python


def _geogpu():
    import os
    import sys
    from conftest import BUILD, REPO
    os.environ["GG_LIBRARY"] = str(BUILD / "lib")
    sys.path.insert(0, str(REPO / "gdal_plugins" / "python"))
    import geogpu
    return geogpu


def test_python_warp_is_gdal_warp(gg, tmp_path, scenes):
    """geogpu.warp runs gdal_warp's C body in the process: the same file as
    the utility from the same options, given as keyword arguments; a bad
    option is an ArgumentError with gdal_warp's message and leaves nothing."""
    geogpu = _geogpu()
    keys = {o.key for o in geogpu.warp_options()}
    assert {"t_srs", "tr", "te", "r", "et", "order", "tps", "geoloc", "to"} <= keys
    out = geogpu.warp([scenes["gcp"]], tmp_path / "py.tif", tps=True, r="cubic",
                      tr=(1e-4, 1e-4), device="cpu")
    cli = tmp_path / "cli.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-tps", "-r", "cubic", "-tr",
           "0.0001", "0.0001", str(scenes["gcp"]), str(cli))
    a, b = gdal.Open(str(out)), gdal.Open(str(cli))
    assert a.GetGeoTransform() == b.GetGeoTransform()
    assert np.array_equal(a.ReadAsArray(), b.ReadAsArray())
    with pytest.raises(geogpu.ArgumentError, match="-r mode"):
        geogpu.warp(scenes["Float32"], tmp_path / "bad.tif", r="mode")
    with pytest.raises(geogpu.ArgumentError, match="not an option"):
        geogpu.warp(scenes["Float32"], tmp_path / "bad.tif", resampling="cubic")
    assert not (tmp_path / "bad.tif").exists()


# ------------------------------------------------------------ lazy: GG:warp and .ggvrt


def _pixels(path):
    ds = gdal.Open(str(path))
    return ds.ReadAsArray(), ds.GetGeoTransform(), ds.RasterCount


@pytest.mark.parametrize("case", [
    ("Float32", ["t_srs=EPSG:3857", "r=cubic"], ["-t_srs", "EPSG:3857", "-r", "cubic"]),
    ("UInt16", ["t_srs=EPSG:3857", "r=lanczos", "et=0"],
     ["-t_srs", "EPSG:3857", "-r", "lanczos", "-et", "0"]),
    ("CFloat32", ["t_srs=EPSG:4326", "tr=0.0002,0.0002", "r=bilinear"],
     ["-t_srs", "EPSG:4326", "-tr", "0.0002", "0.0002", "-r", "bilinear"]),
    ("geoloc", ["geoloc=yes", "t_srs=EPSG:32611", "tr=10,10", "r=cubicspline"],
     ["-geoloc", "-t_srs", "EPSG:32611", "-tr", "10", "10", "-r", "cubicspline"]),
    ("gcp", ["tps=yes", "et=0"], ["-tps", "-et", "0"]),
], ids=["reproject", "lanczos_et0", "complex", "geoloc", "tps"])
def test_gg_warp_string_is_gdal_warp(gg, tmp_path, scenes, case):
    """GG:warp: opens gdal_warp's output lazily, block by block: the same
    grid and the same pixels."""
    src, keys, flags = case
    lazy = gdal.Open("GG:warp:" + ":".join(keys + ["device=cpu", str(scenes[src])]))
    assert lazy.GetMetadataItem("GG_OPERATION") == "warp"
    out = tmp_path / "u.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", *flags, str(scenes[src]), str(out))
    a, gt, n = lazy.ReadAsArray(), lazy.GetGeoTransform(), lazy.RasterCount
    b, gt2, n2 = _pixels(out)
    assert (gt, n) == (gt2, n2) and np.array_equal(a, b)
    assert np.count_nonzero(a) > 0.3 * a.size


def test_ggvrt_output_opens_as_gdal_warp(gg, tmp_path, scenes):
    """-of GGVRT writes the warp as a .ggvrt (options and the source, no
    pixels), checked at once; opened, it is gdal_warp's output."""
    flags = ["-t_srs", "EPSG:3857", "-tr", "20", "20", "-r", "bilinear"]
    v = tmp_path / "w.ggvrt"
    gg.run(str(BIN / "gdal_warp"), "-q", "-of", "GGVRT", *flags, str(scenes["UInt16"]), str(v))
    text = v.read_text()
    assert 'operation="warp"' in text and '<Option name="tr">20,20</Option>' in text
    out = tmp_path / "u.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", *flags, str(scenes["UInt16"]),
           str(out))
    assert np.array_equal(_pixels(v)[0], _pixels(out)[0])
    # a .ggvrt of a warp that cannot run is refused when written, not when read
    bad = tmp_path / "bad.ggvrt"
    p = gg.run(str(BIN / "gdal_warp"), "-q", "-of", "GGVRT", "-t_srs", "EPSG:3857", "-te", "0",
               "0", "10", "10", str(scenes["UInt16"]), str(bad), check=False)
    assert p.returncode != 0 and not bad.exists() and "misses every source" in p.stderr


def test_insar_chain_geocoded_lazily(gg, tmp_path, scenes):
    """coherence -> warp without an intermediate file: GG:warp over a
    coherence .ggvrt of two SLCs, geocoded with the real geolocation arrays
    (SRC_GEOLOC_ARRAY), equals gdal_warp run on the coherence written out."""
    slc = _texture()
    rng = np.random.default_rng(3)
    noise = rng.standard_normal(slc.shape) + 1j * rng.standard_normal(slc.shape)
    s2 = (slc * np.exp(0.3j) + 0.1 * noise).astype(np.complex64)
    for name, arr in (("s1.tif", slc), ("s2.tif", s2)):
        ds = gdal.GetDriverByName("GTiff").Create(str(tmp_path / name), 250, 250, 1,
                                                  gdal.GDT_CFloat32)
        ds.GetRasterBand(1).WriteArray(arr)
        ds = None
    geo = tmp_path / "geo.vrt"
    gdal.BuildVRT(str(geo), [str(scenes["dir"] / "lon.tif"), str(scenes["dir"] / "lat.tif")],
                  separate=True)
    coh = tmp_path / "coh.ggvrt"
    coh.write_text('<GGVRTDataset operation="coherence">\n'
                   '  <Option name="window">5x5</Option>\n'
                   '  <Input relativeToVRT="1">s1.tif</Input>\n'
                   '  <Input relativeToVRT="1">s2.tif</Input>\n</GGVRTDataset>\n')
    lazy = gdal.Open(f"GG:warp:geoloc=yes:to=SRC_GEOLOC_ARRAY={geo}:t_srs=EPSG:4326:"
                     f"r=bilinear:device=cpu:{coh}")
    flat = tmp_path / "coh.tif"
    gdal.Translate(str(flat), str(coh))
    out = tmp_path / "u.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-geoloc", "-to",
           f"SRC_GEOLOC_ARRAY={geo}", "-t_srs", "EPSG:4326", "-r", "bilinear", str(flat),
           str(out))
    b, gt, n = _pixels(out)
    assert lazy.GetGeoTransform() == gt and lazy.RasterCount == n
    assert np.array_equal(lazy.ReadAsArray(), b, equal_nan=True)
    coherence = np.real(b[1])[np.isfinite(np.real(b[1]))]  # band 2: coherence
    assert np.nanmax(coherence) <= 1.0 + 1e-6 and np.mean(coherence > 0.5) > 0.2


# ------------------------------------------------------------ RPC: gdal_ortho's path


def test_rpc_goes_to_gdal_ortho(gg, tmp_path):
    """-rpc -to RPC_DEM=...: gdal_ortho's device pipeline, the same file as
    gdal_ortho with the same numbers, the same pixels through GG:warp:, and
    gdalwarp's answer with the DEM (-et 0, as RPC_DEM makes it)."""
    pytest.importorskip("scipy")
    from test_ortho import synthetic_rpc, write_dem, write_scene
    rng = np.random.default_rng(11)
    scene = write_scene(tmp_path / "scene.tif", rng, 160, 150, "UInt16", synthetic_rpc(160, 150))
    dem = write_dem(tmp_path / "dem.tif", rng, 4326)
    grid = ["-t_srs", "EPSG:32632", "-tr", "20", "20", "-r", "bilinear"]
    warped, ortho = tmp_path / "w.tif", tmp_path / "o.tif"
    gg.run(str(BIN / "gdal_warp"), "-q", "-device", "cpu", "-rpc", "-to", f"RPC_DEM={dem}", *grid,
           str(scene), str(warped))
    gg.run(str(BIN / "gdal_ortho"), "-q", "-device", "cpu", "-dem", str(dem), *grid, str(scene),
           str(ortho))
    assert warped.read_bytes() == ortho.read_bytes()
    lazy = gdal.Open(f"GG:warp:rpc=yes:to=RPC_DEM={dem}:t_srs=EPSG:32632:tr=20,20:r=bilinear:"
                     f"device=cpu:{scene}")
    assert np.array_equal(lazy.ReadAsArray(), gdal.Open(str(warped)).ReadAsArray())
    peer = tmp_path / "gdalwarp.tif"
    subprocess.run(["gdalwarp", "-q", "-rpc", "-to", f"RPC_DEM={dem}", "-et", "0", "-wm", "2000",
                    *grid, str(scene), str(peer)], check=True, capture_output=True)
    _agree(warped, peer)
    # what the RPC path does not take is refused by name
    p = gg.run(str(BIN / "gdal_warp"), "-q", "-rpc", "-r", "lanczos", str(scene),
               str(tmp_path / "x.tif"), check=False)
    assert p.returncode != 0 and "near, bilinear or cubic" in p.stderr
