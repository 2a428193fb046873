"""Colour maps for quicklooks, computed here (no matplotlib):

- ``sequential``: perceptually uniform sequential map for values in [0, 1]
  (coherence, tau): CIELAB lightness rises linearly from dark violet-blue
  through teal and green to light yellow, with the hue turning steadily, so
  equal steps in value are equal steps in perceived lightness (the design
  idea of viridis, built from its principle rather than its table);
- ``cyclic``: for wrapped phase: a closed loop in CIELAB whose two ends meet,
  with equal perceptual steps all round (constant chroma, hue turning once,
  lightness swinging gently so that the loop also reads in grey);
- ``diverging``: radial velocity, green (toward) to red (away) through a
  light neutral at zero;
- ``nws_reflectivity``: the U.S. National Weather Service radar reflectivity
  palette, 5 dBZ steps from 5 to 75 dBZ.

Every map is a (256, 3) uint8 table.  MIT licence.
"""
import numpy as np

__all__ = ["lab_to_srgb", "sequential", "cyclic", "diverging", "grey", "NWS_DBZ", "nws_reflectivity",
           "apply"]

# D65 white point
_WHITE = np.array([0.95047, 1.0, 1.08883])
_XYZ_TO_RGB = np.array([[3.2404542, -1.5371385, -0.4985314],
                        [-0.9692660, 1.8760108, 0.0415560],
                        [0.0556434, -0.2040259, 1.0572252]])


def lab_to_linear_rgb(L, a, b):
    """CIELAB (D65) -> linear sRGB, shape (..., 3); may leave [0, 1]."""
    L, a, b = np.broadcast_arrays(np.asarray(L, float), np.asarray(a, float), np.asarray(b, float))
    fy = (L + 16.0) / 116.0
    fx = fy + a / 500.0
    fz = fy - b / 200.0
    eps = 6.0 / 29.0

    def finv(t):
        return np.where(t > eps, t ** 3, 3 * eps ** 2 * (t - 4.0 / 29.0))

    xyz = np.stack([finv(fx), finv(fy), finv(fz)], axis=-1) * _WHITE
    return xyz @ _XYZ_TO_RGB.T


def _encode(rgb_linear):
    c = np.clip(rgb_linear, 0.0, 1.0)
    s = np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)
    return np.round(s * 255.0).astype(np.uint8)


def lab_to_srgb(L, a, b):
    """CIELAB (D65) -> 8-bit sRGB, clipped."""
    return _encode(lab_to_linear_rgb(L, a, b))


def _in_gamut_chroma(L, hue, chroma):
    """The largest chroma <= chroma with (L, C, h) inside sRGB, per entry."""
    lo = np.zeros_like(chroma)
    hi = chroma.copy()
    ok = np.all((lambda r: (r >= -1e-6) & (r <= 1 + 1e-6))(
        lab_to_linear_rgb(L, hi * np.cos(hue), hi * np.sin(hue))), axis=-1)
    for _ in range(30):  # bisection where the full chroma is out of gamut
        mid = 0.5 * (lo + hi)
        rgb = lab_to_linear_rgb(L, mid * np.cos(hue), mid * np.sin(hue))
        inside = np.all((rgb >= -1e-6) & (rgb <= 1 + 1e-6), axis=-1)
        lo = np.where(inside, mid, lo)
        hi = np.where(inside, hi, mid)
    return np.where(ok, chroma, lo)


def _smooth_limit(limit, wrap, half=10, sigma=5.0):
    """A smooth curve below the gamut limit: running minimum, then a
    Gaussian, so that the chroma never kinks where the gamut edge does."""
    n = len(limit)
    pad = half + int(4 * sigma)
    ext = np.concatenate([limit[-pad:], limit, limit[:pad]]) if wrap else \
        np.pad(limit, pad, mode="edge")
    mins = np.array([ext[i - half:i + half + 1].min() for i in range(half, len(ext) - half)])
    mins = np.pad(mins, half, mode="edge")
    k = np.exp(-0.5 * (np.arange(-int(4 * sigma), int(4 * sigma) + 1) / sigma) ** 2)
    sm = np.convolve(mins, k / k.sum(), mode="same")
    return sm[pad:pad + n]


def _lch(L, C, h_deg, wrap=False):
    """sRGB of (lightness, chroma, hue) with the chroma kept under a smooth
    version of the sRGB gamut edge."""
    h = np.radians(h_deg)
    limit = _in_gamut_chroma(L, h, np.full(len(L), 150.0))
    C = np.minimum(C, 0.97 * _smooth_limit(limit, wrap))
    C = _in_gamut_chroma(L, h, C)
    return lab_to_srgb(L, C * np.cos(h), C * np.sin(h))


def sequential(n=256):
    """Dark blue-violet -> teal -> green -> light yellow, lightness linear."""
    t = np.linspace(0.0, 1.0, n)
    L = 18.0 + 74.0 * t                       # 18 .. 92, linear: uniform steps
    h = 300.0 - 205.0 * t                     # violet 300 -> yellow 95 through teal/green
    C = 45.0 + 40.0 * t ** 2                  # the light end carries the most colour
    return _lch(L, C, h)


def cyclic(n=256):
    """A closed CIELAB loop: hue turns once; lightness swings 52..78 so
    that opposite phases also differ in grey.  Entry n is entry 0."""
    t = np.arange(n) / n
    ang = 2 * np.pi * t
    L = 65.0 + 13.0 * np.cos(ang)
    h = 20.0 + 360.0 * t
    C = np.full(n, 60.0)
    return _lch(L, C, h, wrap=True)


def diverging(n=256):
    """Radial velocity: dark green (toward the radar, negative) through a
    light neutral at zero to dark red (away), lightness symmetric."""
    t = np.linspace(-1.0, 1.0, n)
    L = 92.0 - 57.0 * np.abs(t)
    h = np.where(t < 0, 140.0, 30.0)
    C = 70.0 * np.abs(t) ** 0.8
    return _lch(L, C, h)


def signed(n=256):
    """Signed quantities that are not velocities (offsets, differences):
    dark blue (negative) through a light neutral at zero to dark orange."""
    t = np.linspace(-1.0, 1.0, n)
    L = 94.0 - 58.0 * np.abs(t)
    h = np.where(t < 0, 265.0, 55.0)
    C = 65.0 * np.abs(t) ** 0.8
    return _lch(L, C, h)


def mask(n=2):
    """Two classes: 0 dark slate, 1 bright orange (persistent scatterers)."""
    return np.array([(45, 52, 64), (255, 140, 0)], np.uint8)


def grey(n=256):
    v = np.linspace(0, 255, n).round().astype(np.uint8)
    return np.stack([v, v, v], axis=-1)


# (lower bound in dBZ, colour): the NWS reflectivity palette
NWS_DBZ = [(5, (0x04, 0xE9, 0xE7)), (10, (0x01, 0x9F, 0xF4)), (15, (0x03, 0x00, 0xF4)),
           (20, (0x02, 0xFD, 0x02)), (25, (0x01, 0xC5, 0x01)), (30, (0x00, 0x8E, 0x00)),
           (35, (0xFD, 0xF8, 0x02)), (40, (0xE5, 0xBC, 0x00)), (45, (0xFD, 0x95, 0x00)),
           (50, (0xFD, 0x00, 0x00)), (55, (0xD4, 0x00, 0x00)), (60, (0xBC, 0x00, 0x00)),
           (65, (0xF8, 0x00, 0xFD)), (70, (0x98, 0x54, 0xC6)), (75, (0xFD, 0xFD, 0xFD))]


def nws_reflectivity(dbz):
    """RGB of dBZ values (NaN / below 5 dBZ: no colour -> mask returned)."""
    dbz = np.asarray(dbz, float)
    bounds = np.array([b for b, _ in NWS_DBZ], float)
    colours = np.array([c for _, c in NWS_DBZ], np.uint8)
    idx = np.clip(np.searchsorted(bounds, np.nan_to_num(dbz, nan=-1e9), side="right") - 1, 0,
                  len(bounds) - 1)
    rgb = colours[idx]
    shown = np.isfinite(dbz) & (dbz >= bounds[0])
    return rgb, shown


def apply(table, t):
    """Colours of t in [0, 1] (clipped; NaN -> entry 0) from a (n, 3) table."""
    n = len(table)
    i = np.clip(np.nan_to_num(np.asarray(t, float), nan=0.0) * (n - 1) + 0.5, 0, n - 1)
    return table[i.astype(np.intp)]
