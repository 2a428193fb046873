"""gdal_ortho -dem_nan_missing (GG:ortho: dem_nan_missing=yes): NaN heights in a
DEM count as its nodata.  A DSM with NaN holes then gives what the same DSM
with the holes as a declared nodata value gives -- gdalwarp's answer for that
DEM (RPC_DEM_MISSING_VALUE fills bilinear's holes, cubic leaves the holes' taps
out) -- instead of an orthoimage dotted with empty pixels.  Without the option
NaN heights stay as gdalwarp takes them (the pixels they touch get no value)."""
import numpy as np
import pytest
from osgeo import gdal

from test_ortho import UTM, compare, gdalwarp, ortho, synthetic_rpc, write_dem, write_scene

ND = -32768.0


@pytest.fixture(scope="module")
def dsm(tmp_path_factory):
    """A scene, and one DEM with holes twice: NaN heights (no nodata value, as
    DSMs from stereo come) and the same holes at a declared nodata value.
    Holes: single pixels (1 %) and a few blobs, all under the scene."""
    d = tmp_path_factory.mktemp("dem_nan")
    rng = np.random.default_rng(35)
    scene = write_scene(d / "scene.tif", rng, 640, 600, "UInt16", synthetic_rpc(640, 600))
    write_dem(d / "dem.tif", rng, 4326)
    z = gdal.Open(str(d / "dem.tif")).ReadAsArray().astype(np.float64)
    ny, nx = z.shape
    holes = rng.random(z.shape) < 0.01
    yy, xx = np.mgrid[0:ny, 0:nx]
    for cy, cx, r in [(0.45, 0.5, 6), (0.6, 0.4, 4), (0.4, 0.62, 3)]:
        holes |= (yy - cy * ny) ** 2 + (xx - cx * nx) ** 2 < r * r
    out = {"dir": d, "scene": scene, "holes": int(holes.sum())}
    for name, value, nodata in [("nan", np.nan, None), ("nodata", ND, ND)]:
        gdal.Translate(str(d / f"dem_{name}.tif"), str(d / "dem.tif"))
        ds = gdal.Open(str(d / f"dem_{name}.tif"), gdal.GA_Update)
        b = ds.GetRasterBand(1)
        if nodata is not None:
            b.SetNoDataValue(nodata)
        b.WriteArray(np.where(holes, value, z).astype(np.float32))
        ds = None
        out[name] = d / f"dem_{name}.tif"
    return out


def pixels(path):
    return gdal.Open(str(path)).ReadAsArray()


CASES = {"bilinear+dem_missing": ["-dem_interp", "bilinear", "-dem_missing", "1400"],
         "cubic": ["-dem_interp", "cubic"]}


@pytest.mark.parametrize("case", list(CASES))
def test_nan_heights_as_nodata(gg, dsm, case):
    """With the option, the NaN DEM gives the nodata DEM's pixels, byte for byte,
    and gdalwarp's for the nodata DEM (its float64 RPC transformer)."""
    d, args = dsm["dir"], CASES[case]
    tag = case.replace("+", "_")
    nan = d / f"o_nan_{tag}.tif"
    declared = d / f"o_nodata_{tag}.tif"
    ortho(gg, "-device", "cpu", "-dem", dsm["nan"], "-dem_nan_missing", *args, "-r", "bilinear",
          *UTM, dsm["scene"], nan)
    ortho(gg, "-device", "cpu", "-dem", dsm["nodata"], *args, "-r", "bilinear", *UTM,
          dsm["scene"], declared)
    assert np.array_equal(pixels(nan), pixels(declared)), case
    to = [f"RPC_DEMINTERPOLATION={args[1]}"]
    if "-dem_missing" in args:
        to.append("RPC_DEM_MISSING_VALUE=1400")
    ref = gdalwarp(dsm["scene"], d / f"w_nodata_{tag}.tif", dsm["nodata"], "bilinear",
                   extra_to=to, args=UTM)
    compare(nan, ref, f"{case}: NaN DEM with -dem_nan_missing vs gdalwarp on the nodata DEM")


def test_default_keeps_gdalwarp_parity(gg, dsm):
    """Without the option a NaN height empties the pixels it reaches, as in
    gdalwarp (the dotted orthoimage); the option fills them."""
    d = dsm["dir"]
    ours = d / "o_nan_default.tif"
    ortho(gg, "-device", "cpu", "-dem", dsm["nan"], "-dem_missing", "1400", "-r", "bilinear",
          *UTM, dsm["scene"], ours)
    ref = gdalwarp(dsm["scene"], d / "w_nan.tif", dsm["nan"], "bilinear",
                   extra_to=["RPC_DEM_MISSING_VALUE=1400"], args=UTM)
    assert np.array_equal(pixels(ours) == 0, pixels(ref) == 0), "footprint differs from gdalwarp"
    filled = d / "o_nan_filled.tif"
    ortho(gg, "-device", "cpu", "-dem", dsm["nan"], "-dem_nan_missing", "-dem_missing", "1400",
          "-r", "bilinear", *UTM, dsm["scene"], filled)
    empty_default = int((pixels(ours) == 0).sum())
    empty_filled = int((pixels(filled) == 0).sum())
    # the holes are under the scene: many dots without the option
    assert empty_default > empty_filled + 4 * dsm["holes"], (empty_default, empty_filled)


def test_front_ends_agree(gg, dsm, tmp_path):
    """The flag, the GG:ortho: key and Python's keyword argument are one option."""
    import sys

    from conftest import REPO
    sys.path.insert(0, str(REPO / "gdal_plugins" / "python"))
    import geogpu
    flag = tmp_path / "flag.tif"
    ortho(gg, "-device", "cpu", "-dem", dsm["nan"], "-dem_nan_missing", "-dem_interp", "cubic",
          *UTM, dsm["scene"], flag)
    key = tmp_path / "key.tif"
    te = UTM[UTM.index("-te") + 1:UTM.index("-te") + 5]
    s = geogpu.ortho_string(dsm["scene"], device="cpu", dem=str(dsm["nan"]),
                            dem_nan_missing=True, dem_interp="cubic", t_srs="EPSG:32632",
                            te=[float(v) for v in te], tr=(4, 4))
    assert ":dem_nan_missing=yes:" in s
    gdal.Translate(str(key), s)
    assert np.array_equal(pixels(flag), pixels(key))
    assert geogpu.ortho_arguments(dem_nan_missing=True) == ["-dem_nan_missing"]
    assert geogpu.ortho_arguments(dem_nan_missing=False) == []
    with pytest.raises(geogpu.ArgumentError, match="dem_nan_missing=maybe: use yes or no"):
        geogpu.ortho_arguments(dem_nan_missing="maybe")
