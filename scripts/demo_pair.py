#!/usr/bin/python3
"""The demo's SLC pair: a secondary made from the real Winnipeg SLC by a
known warp, a fringe pattern and decorrelation noise (there is one real
SLC in autotest_data; a second real acquisition of the same scene is not
there).

secondary(u, v) = f((u - A0) / (1 + A1), (v - D0) / (1 + D1)) + noise, with
f(x, y) = primary(x, y) exp(-2 pi i (FX x + FY y)),
so that primary(x, y) = secondary(x + across(x), y + down(y)) with
across = A0 + A1 x and down = D0 + D1 y (gdal_coreg's convention: pixel
centres at integers), and the interferogram primary conj(secondary) of the
coregistered pair has the phase 2 pi (FX x + FY y): straight fringes of FX
and FY cycles per pixel.  f is sampled between pixels by its
band-limited (trigonometric, periodic) interpolation, exact for a
sampled band-limited signal and separable for this warp; the noise is
circular Gaussian with the power that gives a coherence of GAMMA against
the local power (7 x 7 boxcar of the warped primary).

    /usr/bin/python3 scripts/demo_pair.py <primary.slc (ENVI)> <secondary.tif>
prints what was applied: "A0 A1 D0 D1 FX FY".
"""
import sys

import numpy as np
from osgeo import gdal
from scipy import ndimage

A0, A1 = 0.35, 2.0e-3    # across: shift (px) and stretch
D0, D1 = -0.45, 0.0      # down
FX, FY = 0.02, -0.012    # fringes, cycles per pixel across and down
GAMMA = 0.85
SEED = 35


def trig_matrix(n, pos):
    """Rows: weights of the n samples giving the band-limited periodic
    interpolant at positions pos (float64)."""
    k = np.fft.fftfreq(n) * n                       # integer frequencies
    F = np.exp(-2j * np.pi * np.outer(k, np.arange(n)) / n) / n  # forward DFT
    E = np.exp(2j * np.pi * np.outer(pos, k) / n)   # evaluation at pos
    return E @ F


def main(src, dst):
    ds = gdal.Open(src)
    p = ds.ReadAsArray().astype(np.complex128)
    h, w = p.shape
    y, x = np.mgrid[0:h, 0:w]
    p = p * np.exp(-2j * np.pi * (FX * x + FY * y))
    Wx = trig_matrix(w, (np.arange(w) - A0) / (1 + A1))
    Wy = trig_matrix(h, (np.arange(h) - D0) / (1 + D1))
    s = Wy @ p @ Wx.T
    power = ndimage.uniform_filter(np.abs(s) ** 2, 7, mode="nearest")
    sigma2 = power * (1 / GAMMA ** 2 - 1)
    rng = np.random.default_rng(SEED)
    s += np.sqrt(sigma2 / 2) * (rng.standard_normal(s.shape) + 1j * rng.standard_normal(s.shape))
    out = gdal.GetDriverByName("GTiff").Create(dst, w, h, 1, gdal.GDT_CFloat32)
    out.GetRasterBand(1).WriteArray(s.astype(np.complex64))
    out = None
    print(A0, A1, D0, D1, FX, FY)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
