#!/usr/bin/python3
"""Makes autotest_data/rpc_mojave/: a small RPC scene with a DEM, from real
geolocation (isce3's Mojave topo arrays, Apache-2.0).

The RPCs are a least-squares fit of 3rd-order rational polynomials (RPC00B
term order, GDAL's RPC metadata domain) to the longitude, latitude and
ellipsoid height of every pixel of rows/columns 0-249 of isce3's x.rdr,
y.rdr, z.rdr, the way SAR products ship RPCs fitted to their geolocation.
Every other pixel (a checkerboard) is fitted, the rest held out; both
residuals are printed.  The heights sample one surface only, so the height
terms are weakly determined: a small ridge keeps them bounded.

The image is the Winnipeg SLC's amplitude (autotest_data/winnipeg_slc,
another scene: the pixels and the geometry do not come from the same
place), 3x3 boxcar of |z|^2, square root, x 1000 as UInt16.  The DEM
is the real z heights gridded (linear, scipy griddata) onto a regular
WGS84 longitude/latitude grid covering the scene with a margin.

    /usr/bin/python3 tests/tools/make_rpc_scene.py ../shared/data/isce3_topo autotest_data
"""
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal, osr
from scipy import interpolate, ndimage

N = 250          # scene size: the rows/columns of the arrays used
RIDGE = 1e-9     # relative to the normal matrix's trace / unknowns


def terms(P, L, H):
    """The 20 RPC00B terms in GDAL's order (P latitude, L longitude, H height)."""
    one = np.ones_like(P)
    return np.stack([one, L, P, H, L * P, L * H, P * H, L * L, P * P, H * H,
                     P * L * H, L ** 3, L * P * P, L * H * H, L * L * P, P ** 3,
                     P * H * H, L * L * H, P * P * H, H ** 3], axis=1)


def fit_ratio(T, r, iters=5):
    """r ~ (T @ num) / (T @ den), den[0] = 1: linearised least squares,
    reweighted by the denominator (Tao & Hu's iteration), with a ridge."""
    w = np.ones(len(r))
    for _ in range(iters):
        A = np.hstack([T, -r[:, None] * T[:, 1:]]) / w[:, None]
        b = r / w
        M = A.T @ A
        M += np.eye(M.shape[0]) * RIDGE * np.trace(M) / M.shape[0]
        x = np.linalg.solve(M, A.T @ b)
        num, den = x[:20], np.concatenate([[1.0], x[20:]])
        w = T @ den
    return num, den


def main(topo, out):
    topo, out = Path(topo), Path(out)
    a = {n: np.fromfile(topo / f"{n}.rdr", "<f8").reshape(500, 500) for n in "xyz"}
    lon, lat, h = (a[n][:N, :N] for n in "xyz")
    line, samp = np.mgrid[0:N, 0:N].astype(np.float64)   # RPC (0, 0): centre of the first pixel

    off = {"LAT": (lat.max() + lat.min()) / 2, "LONG": (lon.max() + lon.min()) / 2,
           "HEIGHT": (h.max() + h.min()) / 2, "LINE": (N - 1) / 2, "SAMP": (N - 1) / 2}
    scale = {"LAT": (lat.max() - lat.min()) / 2, "LONG": (lon.max() - lon.min()) / 2,
             "HEIGHT": (h.max() - h.min()) / 2, "LINE": (N - 1) / 2, "SAMP": (N - 1) / 2}
    T = terms(((lat - off["LAT"]) / scale["LAT"]).ravel(),
              ((lon - off["LONG"]) / scale["LONG"]).ravel(),
              ((h - off["HEIGHT"]) / scale["HEIGHT"]).ravel())
    fit = ((line + samp) % 2 == 0).ravel()
    md = {f"{k}_OFF": f"{v:.17g}" for k, v in off.items()}
    md.update({f"{k}_SCALE": f"{v:.17g}" for k, v in scale.items()})
    res = {}
    for name, r in (("LINE", line.ravel()), ("SAMP", samp.ravel())):
        rn = (r - off[name]) / scale[name]
        num, den = fit_ratio(T[fit], rn[fit])
        assert (T @ den).min() > 0.5, "denominator near zero inside the scene"
        pred = (T @ num) / (T @ den) * scale[name] + off[name]
        res[name] = pred - r
        md[f"{name}_NUM_COEFF"] = " ".join(f"{v:.17g}" for v in num)
        md[f"{name}_DEN_COEFF"] = " ".join(f"{v:.17g}" for v in den)
    for name, d in res.items():
        print(f"{name.lower()} residual: fitted RMS {np.sqrt((d[fit] ** 2).mean()):.2e} px, "
              f"held out RMS {np.sqrt((d[~fit] ** 2).mean()):.2e} px, max |.| {np.abs(d).max():.2e} px")

    dst = out / "rpc_mojave"
    dst.mkdir(exist_ok=True)
    slc = np.fromfile(out / "winnipeg_slc" / "winnipeg_hh.slc", "<c8").reshape(N, N)
    amp = np.sqrt(ndimage.uniform_filter(np.abs(slc.astype(np.complex128)) ** 2, 3, mode="nearest"))
    img = np.clip(np.round(amp * 1000), 1, 65535).astype(np.uint16)
    ds = gdal.GetDriverByName("GTiff").Create(str(dst / "scene.tif"), N, N, 1, gdal.GDT_UInt16,
                                              ["COMPRESS=DEFLATE", "PREDICTOR=2"])
    ds.SetMetadata(md, "RPC")
    ds.GetRasterBand(1).WriteArray(img)
    ds = None

    # DEM: the real heights (all 500 x 500 points) on a ~1 arc-second grid
    # covering the scene's footprint + 0.004 deg
    step = 1 / 3600
    x0, x1 = lon.min() - 0.004, lon.max() + 0.004
    y0, y1 = lat.min() - 0.004, lat.max() + 0.004
    nx, ny = int(np.ceil((x1 - x0) / step)), int(np.ceil((y1 - y0) / step))
    gx = x0 + (np.arange(nx) + 0.5) * step
    gy = y1 - (np.arange(ny) + 0.5) * step
    GX, GY = np.meshgrid(gx, gy)
    pts = np.column_stack([a["x"].ravel(), a["y"].ravel()])
    dem = interpolate.griddata(pts, a["z"].ravel(), (GX, GY), method="linear")
    hole = np.isnan(dem)
    if hole.any():  # outside the arrays' hull: nearest real height
        dem[hole] = interpolate.griddata(pts, a["z"].ravel(), (GX[hole], GY[hole]),
                                         method="nearest")
    ds = gdal.GetDriverByName("GTiff").Create(str(dst / "dem.tif"), nx, ny, 1, gdal.GDT_Float32,
                                              ["COMPRESS=DEFLATE", "PREDICTOR=3"])
    ds.SetGeoTransform([x0, step, 0, y1, 0, -step])
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(4326)
    ds.SetProjection(srs.ExportToWkt())
    ds.GetRasterBand(1).WriteArray(dem.astype(np.float32))
    ds = None
    print(f"scene.tif {N}x{N} UInt16 ({img.min()}..{img.max()}), dem.tif {nx}x{ny} "
          f"({np.nanmin(dem):.0f}..{np.nanmax(dem):.0f} m, {hole.sum()} cells filled by nearest)")

    # the geometry an orthorectification sees: GDAL's RPC transformer at the
    # real longitude/latitude with the DEM's height there, against the pixel
    dem_h = ndimage.map_coordinates(dem, [((lat - y1) / -step - 0.5).ravel(),
                                          ((lon - x0) / step - 0.5).ravel()], order=1)
    tr = gdal.Transformer(gdal.Open(str(dst / "scene.tif")), None, ["METHOD=RPC"])
    px, _ = tr.TransformPoints(1, np.column_stack([lon.ravel(), lat.ravel(), dem_h]).tolist())
    px = np.array(px)
    e = np.hypot(px[:, 0] - 0.5 - samp.ravel(), px[:, 1] - 0.5 - line.ravel())
    print(f"RPC + DEM vs the real geolocation (GDAL's transformer): median {np.median(e):.2f} px, "
          f"99th percentile {np.percentile(e, 99):.2f} px, max {e.max():.1f} px; "
          f"|DEM - z| median {np.median(np.abs(dem_h - h.ravel())):.2f} m, max {np.abs(dem_h - h.ravel()).max():.0f} m")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
