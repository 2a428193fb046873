#!/usr/bin/python3
"""The demo's figures: one number (or two) per step that shows the step
worked, checked against a bound.  Prints the figure; exits 1, naming the
bound, when it is off.

    /usr/bin/python3 scripts/demo_figure.py <step> <files...>
"""
import json
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()


def band(path, b=1):
    """A band as float64 (complex128 for complex), nodata and NaN as NaN."""
    ds = gdal.Open(path)
    bd = ds.GetRasterBand(b)
    a = bd.ReadAsArray()
    a = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    nd = bd.GetNoDataValue()
    if nd is not None and not np.isnan(nd):
        a[a.real == nd] = np.nan
    return a


def check(text, ok, bound):
    print(text)
    if not ok:
        print(f"{text}: figure off: {bound}", file=sys.stderr)
        sys.exit(1)


def multilook(slc, out):
    i = np.abs(band(slc)) ** 2
    h, w = (s // 4 * 4 for s in i.shape)
    ref = i[:h, :w].reshape(h // 4, 4, w // 4, 4).mean(axis=(1, 3))
    d = np.nanmax(np.abs(band(out) - ref) / ref)
    check(f"max rel. diff vs float64 numpy {d:.1e}", d < 1e-5, "expected < 1e-5")


def rotate(src, out, angle, scale):
    a, s = np.radians(float(angle)), float(scale)
    img, res = band(src), band(out)
    (h, w), (ho, wo) = img.shape, res.shape
    Y, X = np.mgrid[0:ho, 0:wo].astype(np.float64)
    dx, dy = X - (wo - 1) / 2, Y - (ho - 1) / 2
    sx = (w - 1) / 2 + (np.cos(a) * dx - np.sin(a) * dy) / s
    sy = (h - 1) / 2 + (np.sin(a) * dx + np.cos(a) * dy) / s
    inside = (sx >= 0) & (sx < w - 1) & (sy >= 0) & (sy < h - 1)
    x0, y0 = np.floor(sx[inside]).astype(int), np.floor(sy[inside]).astype(int)
    fx, fy = sx[inside] - x0, sy[inside] - y0
    ref = ((1 - fy) * ((1 - fx) * img[y0, x0] + fx * img[y0, x0 + 1])
           + fy * ((1 - fx) * img[y0 + 1, x0] + fx * img[y0 + 1, x0 + 1]))
    d = np.max(np.abs(res[inside] - ref) / np.abs(ref))
    check(f"{inside.sum()} interior pixels, max rel. diff vs float64 bilinear {d:.1e}",
          d < 1e-5 and inside.sum() > 0.3 * res.size, "expected < 1e-5 on > 30 % of the output")


def radnorm(src, out):
    def spread(a):  # spread of the row and column mean profiles (the gains removed)
        return max(np.nanstd(np.nanmean(a, 1)) / np.nanmean(a), np.nanstd(np.nanmean(a, 0)) / np.nanmean(a))
    a, f = band(src), band(out)
    before, after, m = spread(a), spread(f), np.nanmean(f)
    check(f"mean {m:.1f} DN, row/column gain spread {100 * before:.1f} % -> {100 * after:.1f} %",
          after < 0.5 * before and 90 < m < 110, "expected mean 100 +- 10 and the spread halved")


def coreg(primary, fit_json, a0, a1, d0, d1):
    """Largest difference over the primary between the fitted and the
    applied offset fields (order-1 terms 1, x, y)."""
    fit = json.load(open(fit_json))
    ds = gdal.Open(primary)
    y, x = np.mgrid[0:ds.RasterYSize, 0:ds.RasterXSize].astype(np.float64)
    fa = fit["across"][0] + fit["across"][1] * x + fit["across"][2] * y
    fd = fit["down"][0] + fit["down"][1] * x + fit["down"][2] * y
    ea = np.abs(fa - (float(a0) + float(a1) * x)).max()
    ed = np.abs(fd - (float(d0) + float(d1) * y)).max()
    check(f"shift across {fit['across'][0]:+.3f} px (applied {float(a0):+.3f}), stretch "
          f"{fit['across'][1]:.2e} (applied {float(a1):.2e}), down {fit['down'][0]:+.3f} px "
          f"(applied {float(d0):+.3f}); max error {max(ea, ed):.3f} px",
          max(ea, ed) < 0.1, "fitted offsets expected within 0.1 px of the applied warp")


def fringes(i, pad=1024, span=0.002, n=81):
    """The frequency (cycles/px across, down) of the strongest straight fringe
    pattern: the peak of |DTFT| of the interferogram, on a padded FFT, then
    on a grid 0.00005 fine around it (the maximum-likelihood estimate of
    one fringe in noise; the lag-1 phase would be biased by the noise)."""
    h, w = i.shape
    k = np.unravel_index(np.argmax(np.abs(np.fft.fft2(i, s=(pad, pad)))), (pad, pad))
    fy, fx = (np.fft.fftfreq(pad)[kk] + np.linspace(-span, span, n) for kk in k)
    ex = np.exp(-2j * np.pi * np.outer(fx, np.arange(w)))
    ey = np.exp(-2j * np.pi * np.outer(fy, np.arange(h)))
    jy, jx = np.unravel_index(np.argmax(np.abs(ey @ i @ ex.T)), (n, n))
    return fx[jx], fy[jy]


def insar(ifg, coh, coh_before, fx, fy):
    """Mean coherence, and the fringes of the interferogram against those applied."""
    c, c0 = np.nanmean(band(coh)), np.nanmean(band(coh_before))
    gx, gy = fringes(np.nan_to_num(band(ifg)))
    err = max(abs(gx - float(fx)), abs(gy - float(fy)))
    check(f"mean coherence {c:.2f} (applied 0.85; {c0:.2f} without coregistration), fringes "
          f"{gx:+.4f} {gy:+.4f} cycles/px (applied {float(fx):+.4f} {float(fy):+.4f})",
          0.75 < c < 0.95 and c > c0 + 0.2 and err < 1e-3,
          "expected coherence 0.75-0.95 and 0.2 above the uncoregistered pair, fringes within "
          "0.001 cycles/px")


def ptsel(mask, tau):
    m, t = band(mask), band(tau)
    n = int(np.nansum(m))
    check(f"{n} PS of {m.size} pixels ({100 * n / m.size:.2f} %), median tau_max {np.nanmedian(t):.2f}",
          5 <= n <= 0.2 * m.size, "expected 5 PS to 20 % of the pixels")


def ortho(ours, theirs):
    a, b = band(ours), band(theirs)
    v = (a != 0) | (b != 0)   # 0: the fill around the footprint (integer output, no nodata)
    within = np.mean(np.abs(a - b)[v] <= 1) if v.any() else 0
    check(f"{a.shape[1]}x{a.shape[0]} map, {100 * within:.2f} % of {v.sum()} pixels within 1 DN "
          f"of gdalwarp", v.sum() > 0.2 * a.size and within > 0.99,
          "expected > 99 % within 1 DN of gdalwarp")


def warp(ours, theirs):
    a, b = band(ours), band(theirs)
    same_mask = np.array_equal(np.isnan(a), np.isnan(b))
    d = np.nanmax(np.abs(a - b))
    check(f"{a.shape[1]}x{a.shape[0]} map, mean coherence {np.nanmean(a):.2f}, "
          f"max |diff| vs gdalwarp {d:.1e}", same_mask and d < 1e-4,
          "expected gdalwarp's footprint and values within 1e-4")


def mrr2(tif):
    ds = gdal.Open(tif)
    names = {ds.GetRasterBand(i).GetDescription(): i for i in range(1, ds.RasterCount + 1)}
    ze, rr = band(tif, names["ZE"]), band(tif, names["RR"])
    check(f"{ds.RasterYSize} records x {ds.RasterXSize} gates, max Ze {np.nanmax(ze):.1f} dBZ, "
          f"max rain rate {np.nanmax(rr):.1f} mm/h",
          20 < np.nanmax(ze) < 60 and 1 < np.nanmax(rr) < 200,
          "expected max Ze 20-60 dBZ and max rain rate 1-200 mm/h (a rain event)")


def storm(dbz):
    m = np.nanmax(band(dbz))
    check(f"max DBZ {m:.1f} (simulated core 50 dBZ)", 45 < m < 56, "expected 45-56 dBZ")


STEPS = {f.__name__: f for f in (multilook, rotate, radnorm, coreg, insar, ptsel, ortho, warp,
                                 mrr2, storm)}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in STEPS:
        sys.exit(__doc__ + "steps: " + " ".join(STEPS))
    STEPS[sys.argv[1]](*sys.argv[2:])
