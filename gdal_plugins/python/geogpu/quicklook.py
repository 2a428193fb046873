"""Quicklooks: a PNG a person would rather look at than read.

    gdal_quicklook in.tif out.png [-kind auto|coherence|phase|amplitude|offsets|reflectivity|velocity]

Kinds (``auto`` picks one from the band descriptions, units and type):

- coherence: coherence / tau maps on a perceptually uniform map over [0, 1]
  with a colour bar;
- phase: wrapped phase on a cyclic map (-pi..pi); for a complex
  interferogram the brightness follows its amplitude;
- amplitude: amplitude or intensity in dB with a robust percentile stretch
  (2..98 %), grey, with a colour bar in dB; real data with negative values
  get a linear percentile stretch instead;
- offsets: offset fields (two bands, x and y) as arrows over a background
  (an amplitude/SNR/coherence band of the same file, ``-background``, or the
  offset magnitude), with a reference arrow;
- reflectivity: radar reflectivity in dBZ with the NWS palette;
- velocity: radial velocity on a diverging map (green toward, red away),
  symmetric about zero;
- radar: the other weather-radar moments (ZDR, LDR, RHOHV, PHIDP, WIDTH,
  SNR...) on a perceptual map over each product's customary range (widened
  to the data's 2..98 % when it falls outside), PHIDP on the cyclic map,
  nodata dark as in a PPI;
- mask: two-class rasters (PtSel's ps_mask) in two colours with the count
  of each class in the legend.

Real bands of other kinds holding values of both signs (offsets,
differences) are drawn on a blue-orange diverging map symmetric about zero.

The image is decimated by averaging (GDAL's average resampling: complex
values average as complex, so the phase of an interferogram is multilooked)
to at most ``-size`` pixels (1024) on its long side, and small rasters are
enlarged (nearest) so that they stay visible.  Nodata is light grey.

The PNG carries text chunks describing what was drawn (``geogpu:kind``,
``geogpu:band``, ``geogpu:range``, ``geogpu:colorbar`` = "x0,y0,x1,y1" of the
colour bar, ``geogpu:image`` = the image box) for scripts and tests.

MIT licence.
"""
import ctypes
import math
import os
import stat as _stat
import sys
from pathlib import Path

import numpy as np

from . import colormaps as cm

__all__ = ["KINDS", "detect_kind", "render", "render_file", "main"]

KINDS = ("auto", "coherence", "phase", "amplitude", "offsets", "reflectivity", "velocity",
         "radar", "mask")

NODATA_RGB = (208, 208, 208)
PANEL_RGB = (255, 255, 255)
TEXT_RGB = (20, 20, 20)
RADAR_BG = (32, 32, 32)
MIN_LONG_SIDE = 384

# Band descriptions that say what a band is (lower case; startswith/equal).
COHERENCE_NAMES = ("coherence", "coh", "tau", "tau_max", "gamma", "temporal_coherence",
                   "correlation")
PHASE_NAMES = ("phase", "interferogram", "ifg", "filtered")
REFLECTIVITY_NAMES = ("dbz", "reflectivity", "dbzh", "dbzv", "dbz_h", "dbz_v")
VELOCITY_NAMES = ("vel", "velocity", "vrad", "vradh", "radial_velocity", "doppler_velocity")
INTENSITY_NAMES = ("intensity", "power", "sigma0", "beta0", "gamma0", "mli")
MASK_NAMES = ("mask", "ps_mask")
# weather-radar moments other than reflectivity and velocity (CfRadial short
# names): (customary range low, high, unit shown, cyclic?); None: from the data
RADAR_PRODUCTS = {"zdr": (-2.0, 6.0, "dB", False), "ldr": (-35.0, 0.0, "dB", False),
                  "rhohv": (0.7, 1.0, "", False), "phidp": (-180.0, 180.0, "deg", True),
                  "kdp": (-1.0, 5.0, "deg/km", False), "width": (0.0, None, "m/s", False),
                  "snr": (-10.0, 40.0, "dB", False), "snrhc": (-10.0, 40.0, "dB", False),
                  "snrvc": (-10.0, 40.0, "dB", False), "snrhx": (-10.0, 40.0, "dB", False)}
BACKGROUND_NAMES = ("amplitude", "snr", "intensity", "coherence", "tau_max")
# (x, y) band-name pairs of offset fields
OFFSET_PAIRS = (("dx", "dy"), ("best_dx", "best_dy"), ("offset_across", "offset_down"),
                ("offset_x", "offset_y"),
                ("x_offset", "y_offset"), ("range_offset", "azimuth_offset"),
                ("rg_offset", "az_offset"), ("range", "azimuth"), ("u", "v"))


def _gdal():
    from osgeo import gdal
    gdal.UseExceptions()
    return gdal


def _is(name, names):
    """name is one of names, or one of them followed by "_..." ("filtered_3")."""
    name = (name or "").strip().lower()
    return any(name == n or name.startswith(n + "_") for n in names)


def _offset_pair(descriptions):
    """1-based (x band, y band) of an offset field, or None."""
    low = [(d or "").strip().lower() for d in descriptions]
    for x, y in OFFSET_PAIRS:
        if x in low and y in low:
            return low.index(x) + 1, low.index(y) + 1
    return None


def detect_kind(description, units="", is_complex=False, descriptions=()):
    """The quicklook kind for a band described so."""
    d, u = (description or "").lower(), (units or "").lower()
    if _is(d, REFLECTIVITY_NAMES) or u == "dbz" or "dbz" in d:
        return "reflectivity"
    # a radar moment by its short name; not "snr" next to offsets (gdal_xcorr's
    # snr is a plain ratio) or in other units than dB
    if d in RADAR_PRODUCTS and not (d == "snr" and (_offset_pair(descriptions) or
                                                   u not in ("", "db"))):
        return "radar"
    if _is(d, MASK_NAMES) or d.endswith("_mask"):
        return "mask"
    if _is(d, COHERENCE_NAMES) or "coherence" in d:
        return "coherence"
    if _is(d, VELOCITY_NAMES) or u in ("m/s", "m s-1", "meters per second"):
        return "velocity"
    if _is(d, PHASE_NAMES) or u in ("rad", "radian", "radians") and "phase" in d:
        return "phase"
    if _offset_pair(descriptions) and d in {n for p in OFFSET_PAIRS for n in p}:
        return "offsets"
    return "amplitude"


# ------------------------------------------------------------------ reading

class Band:
    """A band read for display: data (decimated), nodata mask, description."""

    def __init__(self, data, valid, description="", units="", full_size=None, integer=False):
        self.data, self.valid = data, valid
        self.integer = integer  # an integer band (quantised levels, classes): no dB
        self.description, self.units = description, units
        self.full_size = full_size or data.shape[::-1]


def _display_size(W, H, max_size):
    f = max(1.0, max(W, H) / float(max_size))
    return max(1, int(round(W / f))), max(1, int(round(H / f)))


def _read_band(ds, b, size, nearest=False):
    gdal = _gdal()
    band = ds.GetRasterBand(b)
    w, h = size
    if (w, h) == (ds.RasterXSize, ds.RasterYSize):
        a = band.ReadAsArray()
    else:
        a = band.ReadAsArray(buf_xsize=w, buf_ysize=h,
                             resample_alg=gdal.GRIORA_NearestNeighbour if nearest
                             else gdal.GRIORA_Average)
    nd = band.GetNoDataValue()
    if np.iscomplexobj(a):
        a = a.astype(np.complex128)
        valid = np.isfinite(a.real) & np.isfinite(a.imag)
        if nd is not None and not math.isnan(nd):
            valid &= a.real != nd
    else:
        a = a.astype(np.float64)
        valid = np.isfinite(a)
        if nd is not None and not math.isnan(nd):
            valid &= a != nd
    integer = band.DataType in (gdal.GDT_Byte, gdal.GDT_UInt16, gdal.GDT_Int16, gdal.GDT_UInt32,
                                gdal.GDT_Int32)
    return Band(a, valid, band.GetDescription(), band.GetUnitType() or "",
                (ds.RasterXSize, ds.RasterYSize), integer)


# ------------------------------------------------------------------ stretching

def _percentiles(x, lo=2.0, hi=98.0):
    x = x[np.isfinite(x)]
    if x.size == 0:
        return 0.0, 1.0
    a, b = np.percentile(x, [lo, hi])
    if not b > a:
        a, b = float(x.min()), float(x.max())
    if not b > a:
        a, b = a - 0.5, a + 0.5
    return float(a), float(b)


def _amplitude_values(band):
    """(values to stretch, label, dB?) of an amplitude-like band."""
    a, valid = band.data, band.valid
    if np.iscomplexobj(a):
        mag = np.abs(a)
        intensity = False
    else:
        mag = a
        intensity = _is(band.description, INTENSITY_NAMES) or not band.description
    vals = mag[valid]
    if band.integer or (vals.size and np.all((vals == 0) | (vals == 1))):
        # quantised levels, classes, masks (ps_mask): the values as they are
        return np.where(valid, mag, np.nan), "value", False
    if vals.size and vals.min() >= 0 and np.any(vals > 0):
        with np.errstate(divide="ignore", invalid="ignore"):
            db = (10.0 if intensity else 20.0) * np.log10(mag)
        db[~np.isfinite(db)] = np.nan
        label = "10·log10 dB" if intensity else "20·log10 dB"
        return db, label, True
    return np.where(valid, mag, np.nan), "value", False


# ------------------------------------------------------------------ drawing

def _font(size):
    from PIL import ImageFont
    for path in ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                 "/usr/share/fonts/TTF/DejaVuSans.ttf"):
        if os.path.exists(path):
            try:
                return ImageFont.truetype(path, size)
            except OSError:
                pass
    return ImageFont.load_default()


def _text_size(draw, text, font):
    box = draw.textbbox((0, 0), text, font=font)
    return box[2] - box[0], box[3] - box[1]


def _scale_for_display(rgb, valid, min_long=MIN_LONG_SIDE):
    """Enlarges small images (nearest) so that they stay visible."""
    h, w = rgb.shape[:2]
    k = max(1, int(math.ceil(min_long / max(w, h)))) if max(w, h) < min_long else 1
    if k > 1:
        rgb = np.repeat(np.repeat(rgb, k, axis=0), k, axis=1)
        valid = np.repeat(np.repeat(valid, k, axis=0), k, axis=1)
    return rgb, valid, k


def _compose(rgb, title, bar=None, subtitle=""):
    """Image + title + optional colour bar -> (PIL image, image box, bar box).
    bar: dict(colors=(n,3) uint8 bottom->top, ticks=[(fraction, label)],
    label=str)."""
    from PIL import Image, ImageDraw
    h, w = rgb.shape[:2]
    fs = max(12, min(18, int(round(max(w, h) / 45))))
    font, small = _font(fs + 2), _font(fs)
    margin = 12
    scratch = ImageDraw.Draw(Image.new("RGB", (10, 10)))
    title_h = _text_size(scratch, title or "Ag", font)[1] + 2 * margin
    sub_h = _text_size(scratch, subtitle, small)[1] + margin if subtitle else 0
    bar_w, bar_panel = 0, 0
    if bar is not None:
        bar_w = max(16, int(round(0.045 * max(w, h))))
        label_w = max(_text_size(scratch, t, small)[0] for _, t in bar["ticks"])
        bar_panel = margin * 2 + bar_w + 6 + label_w + margin
    W = margin + w + bar_panel + margin
    if subtitle:  # a caption longer than the picture widens the canvas
        W = max(W, 2 * margin + _text_size(scratch, subtitle, small)[0])
    if title:
        W = max(W, 2 * margin + _text_size(scratch, title, font)[0])
    H = title_h + h + sub_h + margin
    canvas = Image.new("RGB", (W, H), PANEL_RGB)
    canvas.paste(Image.fromarray(rgb, "RGB"), (margin, title_h))
    d = ImageDraw.Draw(canvas)
    d.text((margin, margin), title, fill=TEXT_RGB, font=font)
    if subtitle:
        d.text((margin, title_h + h + margin // 2), subtitle, fill=(90, 90, 90), font=small)
    image_box = (margin, title_h, margin + w, title_h + h)
    bar_box = None
    if bar is not None:
        x0 = margin + w + 2 * margin
        bh = max(h, 120)
        y0, y1 = title_h, title_h + bh
        colors = np.asarray(bar["colors"], np.uint8)
        idx = np.clip(((y1 - 1 - np.arange(y0, y1)) / max(bh - 1, 1) * (len(colors) - 1)).round()
                      .astype(int), 0, len(colors) - 1)
        strip = np.repeat(colors[idx][:, None, :], bar_w, axis=1)
        if bh > h:  # a tall bar on a short image: grow the canvas
            big = Image.new("RGB", (W, max(H, y1 + margin)), PANEL_RGB)
            big.paste(canvas, (0, 0))
            canvas = big
            d = ImageDraw.Draw(canvas)
        canvas.paste(Image.fromarray(strip, "RGB"), (x0, y0))
        d.rectangle([x0 - 1, y0 - 1, x0 + bar_w, y1], outline=TEXT_RGB)
        for frac, label in bar["ticks"]:
            y = int(round(y1 - 1 - frac * (bh - 1)))
            d.line([x0 + bar_w, y, x0 + bar_w + 4, y], fill=TEXT_RGB)
            tw, th = _text_size(d, label, small)
            d.text((x0 + bar_w + 6, y - th // 2 - 2), label, fill=TEXT_RGB, font=small)
        bar_box = (x0, y0, x0 + bar_w, y1)
    return canvas, image_box, bar_box


def _ticks(lo, hi, n=6):
    """Round tick values between lo and hi."""
    span = hi - lo
    if not span > 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw), default=10 * mag)
    first = math.ceil(lo / step - 1e-9) * step
    out, v = [], first
    while v <= hi + 1e-9 * span:
        out.append(v)
        v += step
    return out


def _fmt(v, step):
    digits = max(0, -int(math.floor(math.log10(step)))) if step > 0 else 0
    return f"{v:.{digits}f}"


def _value_bar(table, lo, hi, label):
    ticks = _ticks(lo, hi)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    return {"colors": table, "ticks": [((t - lo) / (hi - lo), _fmt(t, step)) for t in ticks],
            "label": label}


# ------------------------------------------------------------------ kinds

def _render_coherence(band):
    v = np.clip(band.data.real if np.iscomplexobj(band.data) else band.data, 0, 1)
    table = cm.sequential()
    rgb = cm.apply(table, v)
    return rgb, _value_bar(table, 0.0, 1.0, "coherence"), (0.0, 1.0)


def _render_phase(band):
    a = band.data
    if np.iscomplexobj(a):
        phase = np.angle(a)
        db, _, is_db = _amplitude_values(Band(a, band.valid, "amplitude"))
        lo, hi = _percentiles(db[band.valid])
        bright = 0.35 + 0.65 * np.clip((db - lo) / (hi - lo), 0, 1)
        bright = np.nan_to_num(bright, nan=0.35)
    else:
        phase = np.angle(np.exp(1j * a))  # wrap whatever the input range
        bright = np.ones_like(a)
    table = cm.cyclic()
    rgb = cm.apply(table, (phase + np.pi) / (2 * np.pi))
    rgb = (rgb * bright[..., None]).round().clip(0, 255).astype(np.uint8)
    ticks = [(0.0, "-π"), (0.25, "-π/2"), (0.5, "0"), (0.75, "π/2"), (1.0, "π")]
    return rgb, {"colors": table, "ticks": ticks, "label": "phase (rad)"}, (-math.pi, math.pi)


def _render_amplitude(band):
    vals, label, is_db = _amplitude_values(band)
    if not is_db and not np.iscomplexobj(band.data):
        v = vals[band.valid]
        if v.size and v.min() < 0 < v.max():
            return _render_signed(band, vals, label)
    lo, hi = _percentiles(vals[band.valid])
    table = cm.grey()
    rgb = cm.apply(table, (vals - lo) / (hi - lo))
    return rgb, _value_bar(table, lo, hi, label), (lo, hi), label


def _render_reflectivity(band):
    v = band.data.real if np.iscomplexobj(band.data) else band.data
    rgb, shown = cm.nws_reflectivity(v)
    rgb = np.where(shown[..., None], rgb, np.array(RADAR_BG, np.uint8))
    lo, hi = cm.NWS_DBZ[0][0], cm.NWS_DBZ[-1][0] + 5
    # one colour per 5 dBZ step, bottom to top
    colors = np.array([c for _, c in cm.NWS_DBZ], np.uint8)
    ticks = [((b - lo) / (hi - lo), str(b)) for b in range(lo, hi + 1, 10)]
    return rgb, {"colors": colors, "ticks": ticks, "label": "dBZ"}, (float(lo), float(hi))


def _render_velocity(band):
    v = band.data.real if np.iscomplexobj(band.data) else band.data
    lo, hi = _percentiles(v[band.valid])
    m = max(abs(lo), abs(hi)) or 1.0          # symmetric: zero is the neutral colour
    table = cm.diverging()
    rgb = cm.apply(table, (v + m) / (2 * m))
    return rgb, _value_bar(table, -m, m, "m/s"), (-m, m)


def _radar_range(name, v, valid):
    """The customary range of a radar product, widened to the data's 2..98 %."""
    lo, hi, unit, cyclic = RADAR_PRODUCTS.get(name, (None, None, "", False))
    plo, phi = _percentiles(v[valid])
    if cyclic:
        if phi - plo > 0.5 * (hi - lo):
            return lo, hi, unit, True   # the data wrap: the whole cycle
        # a differential phase that does not wrap (the usual case away from
        # heavy rain): its own range, at least a tenth of the cycle
        mid, half = 0.5 * (plo + phi), max(0.5 * (phi - plo), 0.05 * (hi - lo))
        return mid - half, mid + half, unit, False
    lo = plo if lo is None else min(lo, plo)
    hi = max(phi, lo + 1.0) if hi is None else max(hi, phi)
    return lo, hi, unit, False


def _render_radar(band):
    v = band.data.real if np.iscomplexobj(band.data) else band.data
    name = (band.description or "").strip().lower()
    lo, hi, unit, cyclic = _radar_range(name, v, band.valid)
    if cyclic:
        w = np.mod(v - lo, hi - lo) + lo      # wrap into [lo, hi)
        table = cm.cyclic()
        rgb = cm.apply(table, (w - lo) / (hi - lo))
    else:
        table = cm.sequential()
        rgb = cm.apply(table, np.clip((v - lo) / (hi - lo), 0, 1))
    return rgb, _value_bar(table, lo, hi, unit or band.units or "value"), (lo, hi), unit


def _render_mask(band):
    v = band.data.real if np.iscomplexobj(band.data) else band.data
    on = (v >= 0.5) & band.valid
    n, n1 = int(band.valid.sum()), int(on.sum())
    colors = cm.mask()
    rgb = np.where(on[..., None], colors[1], colors[0]).astype(np.uint8)
    pct = 100.0 * n1 / max(n, 1)
    ticks = [(0.25, f"0: {n - n1} ({100 - pct:.1f} %)"), (0.75, f"1: {n1} ({pct:.1f} %)")]
    return rgb, {"colors": colors, "ticks": ticks, "label": "class"}, (0.0, 1.0)


def _render_signed(band, vals, label):
    """Values of both signs: diverging, symmetric about zero."""
    lo, hi = _percentiles(vals[band.valid])
    m = max(abs(lo), abs(hi)) or 1.0
    table = cm.signed()
    rgb = cm.apply(table, np.clip((vals + m) / (2 * m), 0, 1))
    return rgb, _value_bar(table, -m, m, label), (-m, m), label


def _is_binary(band):
    v = band.data.real if np.iscomplexobj(band.data) else band.data
    vals = v[band.valid]
    return band.integer and vals.size > 0 and bool(np.all((vals == 0) | (vals == 1))) and \
        bool(np.any(vals == 1)) and bool(np.any(vals == 0))


def _draw_arrows(img, dx, dy, valid, scale_px, k, spacing):
    """Arrows of the (decimated) offset field drawn on img (the displayed
    image: k display pixels per data cell), one per spacing x spacing
    display pixels, each the mean offset of its cell times scale_px."""
    from PIL import ImageDraw
    d = ImageDraw.Draw(img)
    h, w = dx.shape
    n = max(1, int(round(spacing / k)))   # data cells per arrow
    for r in range(0, h - n // 2, n):
        for c in range(0, w - n // 2, n):
            ok = valid[r:r + n, c:c + n]
            if not ok.any():
                continue
            ux, uy = dx[r:r + n, c:c + n][ok].mean(), dy[r:r + n, c:c + n][ok].mean()
            px = (c + min(n, w - c) / 2.0) * k
            py = (r + min(n, h - r) / 2.0) * k
            # centred on the cell, so neighbours do not run into each other
            _arrow(d, px - 0.5 * ux * scale_px, py - 0.5 * uy * scale_px,
                   px + 0.5 * ux * scale_px, py + 0.5 * uy * scale_px)


def _arrow(d, xa, ya, xb, yb, colour=(255, 210, 0)):
    L = math.hypot(xb - xa, yb - ya)
    if L < 1.0:
        d.ellipse([xa - 1.5, ya - 1.5, xa + 1.5, ya + 1.5], fill=colour, outline=(0, 0, 0))
        return
    ang = math.atan2(yb - ya, xb - xa)
    head = min(9.0, 0.35 * L + 3)
    pts = [(xb, yb), (xb - head * math.cos(ang - 0.45), yb - head * math.sin(ang - 0.45)),
           (xb - head * math.cos(ang + 0.45), yb - head * math.sin(ang + 0.45))]
    d.line([xa, ya, xb, yb], fill=(0, 0, 0), width=5)
    d.line([xa, ya, xb, yb], fill=colour, width=3)
    d.polygon(pts, fill=colour, outline=(0, 0, 0))


# ------------------------------------------------------------------ entry points

def _identity(name):
    """(device, inode) of an existing file (links followed), else None."""
    try:
        st = os.stat(name)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def _refuse_non_regular(out_png):
    """An existing destination that is a device, a FIFO or a folder is never
    replaced."""
    try:
        st = os.stat(out_png)
    except (OSError, ValueError):
        return
    if not _stat.S_ISREG(st.st_mode):
        raise ValueError(f"'{out_png}' is not a regular file")


def _refuse_input(out_png, source, ds):
    """Refuses a destination that is the source or any file the opened source
    dataset reads (a VRT's or GG dataset's inputs: GetFileList), compared by
    device and inode."""
    target = _identity(out_png)
    if target is None:
        return
    files = [str(source)] + list((ds.GetFileList() if ds is not None else None) or [])
    if any(_identity(f) == target for f in files):
        raise ValueError(f"the destination '{out_png}' is read by the source '{source}'; "
                         "inputs are never overwritten")


def render(path, out_png, kind="auto", band=None, max_size=1024, background=None, title=None):
    """Writes a quicklook PNG of a raster; returns a dict describing it
    (kind, band, range, colorbar box, image box)."""
    gdal = _gdal()
    if str(path).upper().startswith("GG:") or str(path).lower().endswith(".ggvrt"):
        from .gdal_io import ensure_gg_driver  # a computed product: GDAL needs the plugin
        ensure_gg_driver()
    _refuse_non_regular(out_png)
    ds = gdal.Open(str(path))
    if ds is None or ds.RasterCount < 1:
        raise ValueError(f"{path}: no raster bands")
    _refuse_input(out_png, path, ds)
    if background is not None:
        bds = gdal.Open(str(background))
        _refuse_input(out_png, background, bds)
        bds = None
    if kind not in KINDS:
        raise ValueError(f"unknown kind '{kind}' (one of {', '.join(KINDS)})")
    if band is not None and not 1 <= band <= ds.RasterCount:
        raise ValueError(f"band {band} out of range (1..{ds.RasterCount})")
    descriptions = [ds.GetRasterBand(b).GetDescription() for b in range(1, ds.RasterCount + 1)]
    b1 = band or 1
    rb = ds.GetRasterBand(b1)
    is_complex = gdal.DataTypeIsComplex(rb.DataType)
    requested = kind
    if kind == "auto":
        pair = _offset_pair(descriptions)
        if pair and band is None and 1 in pair:  # band 1 is part of an offset field
            kind = "offsets"
        else:
            kind = detect_kind(descriptions[b1 - 1], rb.GetUnitType(), is_complex, descriptions)
    size = _display_size(ds.RasterXSize, ds.RasterYSize, max_size)
    name = Path(str(path)).name
    info = {"kind": kind}

    if kind == "offsets":
        pair = _offset_pair(descriptions)
        if pair is None:
            if ds.RasterCount < 2:
                raise ValueError(f"{path}: offsets need two bands (x and y offsets)")
            pair = (b1, b1 + 1 if b1 < ds.RasterCount else b1 - 1)
        bx, by = _read_band(ds, pair[0], size), _read_band(ds, pair[1], size)
        dx, dy = bx.data.real, by.data.real
        valid = bx.valid & by.valid
        bg = None
        if background is not None:
            bds = gdal.Open(str(background))
            bg = _read_band(bds, 1, size)
            if bg.data.shape != dx.shape:
                from PIL import Image
                bg = Band(np.asarray(Image.fromarray(np.abs(bg.data).astype(np.float32))
                                     .resize(dx.shape[::-1])), None, "amplitude")
                bg.valid = np.isfinite(bg.data)
        else:
            low = [d.lower() for d in descriptions]
            for n in BACKGROUND_NAMES:
                if n in low:
                    bg = _read_band(ds, low.index(n) + 1, size)
                    break
        if bg is None:
            bg = Band(np.hypot(dx, dy), valid, "offset magnitude")
        if _is(bg.description, COHERENCE_NAMES):
            vals, lo, hi = np.clip(bg.data, 0, 1), 0.0, 1.0
        else:
            vals, _, _ = _amplitude_values(bg)
            lo, hi = _percentiles(vals[bg.valid])
        g = cm.apply(cm.grey(), 0.15 + 0.7 * np.clip((vals - lo) / (hi - lo), 0, 1))
        g = np.where(bg.valid[..., None], g, np.array(NODATA_RGB, np.uint8))
        rgb, _, k = _scale_for_display(g, bg.valid)
        mag = np.hypot(dx, dy)[valid]
        ref = float(np.percentile(mag, 95)) if mag.size else 1.0
        ref = ref if ref > 0 else 1.0
        # one arrow per 40 display pixels; the 95th percentile offset is
        # drawn 34 pixels long
        spacing = 40
        scale_px = 34.0 / ref
        from PIL import Image, ImageDraw
        img = Image.fromarray(rgb, "RGB")
        _draw_arrows(img, dx, dy, valid, scale_px, k, spacing)
        f = ds.RasterXSize / dx.shape[1]
        sub = (f"{name}: bands {pair[0]},{pair[1]}"
               + (f", averaged 1:{f:.3g}" if f > 1.01 else "") + f";        = {ref:.3g} px")
        canvas, ibox, _ = _compose(np.asarray(img), title or f"offsets ({descriptions[pair[0] - 1] or 'x'}, "
                                   f"{descriptions[pair[1] - 1] or 'y'})", None, sub)
        # the reference arrow, inside the caption before "= ... px"
        d = ImageDraw.Draw(canvas)
        cap = sub[:sub.index(";") + 2]
        tw, th = _text_size(d, cap, _font(max(12, min(18, int(round(max(rgb.shape[:2]) / 45))))))
        ya = ibox[3] + 6 + th // 2 + 3
        _arrow(d, ibox[0] + tw + 2, ya, ibox[0] + tw + 2 + 34, ya)
        info.update(band=f"{pair[0]},{pair[1]}", range=f"0,{ref:.6g}", image=ibox, colorbar=None)
        _save(canvas, out_png, info)
        return info

    # a two-class integer band (0/1) with no telling name is a mask too;
    # masks are read by nearest (averaging would invent classes)
    bnd = _read_band(ds, b1, size, nearest=(kind == "mask"))
    if not bnd.valid.any():
        raise ValueError(f"{path}: band {b1} has no valid pixel")
    if kind == "amplitude" and requested == "auto" and _is_binary(bnd):
        kind = info["kind"] = "mask"
        bnd = _read_band(ds, b1, size, nearest=True)
    stem = Path(str(path)).stem
    zero_fill = False
    if kind == "amplitude" and bnd.integer and rb.GetNoDataValue() is None:
        # optical images (an orthoimage) mark "no image" with 0 and no
        # nodata value: 0 would set the low end of the stretch
        zeros = bnd.valid & (bnd.data == 0)
        if 0.01 < zeros.sum() / bnd.valid.sum() < 1.0:
            bnd.valid = bnd.valid & ~zeros
            zero_fill = True
    if kind == "coherence":
        rgb, bar, rng = _render_coherence(bnd)
        label = bnd.description or "coherence"
    elif kind == "phase":
        rgb, bar, rng = _render_phase(bnd)
        label = f"{bnd.description or 'phase'} (phase)"
    elif kind == "reflectivity":
        rgb, bar, rng = _render_reflectivity(bnd)
        label = bnd.description if "dbz" in (bnd.description or "").lower() else \
            f"{bnd.description or 'reflectivity'} (dBZ)"
    elif kind == "velocity":
        rgb, bar, rng = _render_velocity(bnd)
        label = f"{bnd.description or 'velocity'} (radial velocity, m/s)"
    elif kind == "radar":
        rgb, bar, rng, unit = _render_radar(bnd)
        label = f"{bnd.description or stem}" + (f" ({unit})" if unit else "")
    elif kind == "mask":
        rgb, bar, rng = _render_mask(bnd)
        label = f"{bnd.description or stem} (mask)"
    else:
        rgb, bar, rng, unit = _render_amplitude(bnd)
        label = f"{bnd.description or (stem if ds.RasterCount == 1 else f'{stem} band {b1}')} ({unit})"
    if kind not in ("reflectivity", "velocity", "radar"):
        rgb = np.where(bnd.valid[..., None], rgb, np.array(NODATA_RGB, np.uint8))
    else:
        rgb = np.where(bnd.valid[..., None], rgb, np.array(RADAR_BG, np.uint8))
    rgb, _, k = _scale_for_display(rgb, bnd.valid)
    W, H = bnd.full_size
    sub = f"{name}: band {b1} of {ds.RasterCount}, {W}x{H}"
    if (W, H) != bnd.data.shape[::-1]:
        sub += f" (shown {bnd.data.shape[1]}x{bnd.data.shape[0]}, averaged)"
    if kind == "amplitude":
        sub += ", symmetric about 0" if rng[0] == -rng[1] else ", stretch 2-98 %"
        if zero_fill:
            sub += ", 0 = no image"
    elif kind == "radar" and rng[1] != -rng[0]:
        sub += f", range {rng[0]:.3g}..{rng[1]:.3g}"
    canvas, ibox, bbox = _compose(rgb, title or label, bar, sub)
    info.update(band=str(b1), range=f"{rng[0]:.6g},{rng[1]:.6g}", image=ibox, colorbar=bbox)
    _save(canvas, out_png, info)
    return info


def _save(canvas, out_png, info):
    """PNG with the description as text chunks, written to a temporary name
    in the destination folder and renamed (no partial output)."""
    from PIL import PngImagePlugin
    meta = PngImagePlugin.PngInfo()
    for key, value in info.items():
        if value is None:
            continue
        if isinstance(value, tuple):
            value = ",".join(str(int(v)) for v in value)
        meta.add_text(f"geogpu:{key}", str(value))
    # the output transaction every geogpu writer uses (geogpu_gdal.h): a
    # temporary in the destination folder, committed under the folder's
    # lock with the old PNG's side files, removed on failure or on a signal
    so = _output_layer()
    out = os.fsencode(str(out_png))
    err = ctypes.create_string_buffer(2048)
    tx = so.gg_output_set_new()
    if not tx:
        raise MemoryError("out of memory")
    try:
        tmp = so.gg_output_set_add(tx, out, None)
        if not tmp:
            raise MemoryError("out of memory")
        canvas.save(os.fsdecode(tmp), "PNG", pnginfo=meta)
        if so.gg_output_set_commit(tx, err, len(err)):
            raise OSError(err.value.decode(errors="replace"))
    finally:
        so.gg_output_set_free(tx)


def _output_layer():
    from ._lib import gdal_layer
    layer = gdal_layer()
    if layer is None:
        raise RuntimeError("geogpu's GDAL layer (libgeogpu_gdal) was not built")
    return layer[0]


render_file = render

USAGE = """Usage: gdal_quicklook [--help] [--help-general] [--version]
                      [-q] [-kind <kind>] [-b <band>]
                      [-size <pixels>] [-background <raster>] [-title <text>]
                      <src_dataset> <dst.png>

Writes a PNG quicklook of a raster: coherence/tau maps with a colour bar,
wrapped phase on a cyclic colour map, amplitude in dB with a robust stretch,
offset fields as arrows over amplitude, radar reflectivity with the NWS
palette, the other radar moments and velocity on their own scales, masks in
two colours.

  -kind <kind>        auto (default: from the band descriptions and units),
                      coherence, phase, amplitude, offsets, reflectivity,
                      velocity, radar, mask
  -b <band>           band to show (default 1; offsets: the x band)
  -size <pixels>      longest side of the picture (default 1024; larger
                      rasters are averaged down)
  -background <file>  offsets: the raster drawn under the arrows
  -title <text>       title (default: the band description and kind)
  -q                  quiet
"""


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    kind, band, size, background, title, quiet = "auto", None, 1024, None, None, False
    pos = []
    i = 0

    def fail(msg):
        sys.stderr.write(f"ERROR 1: gdal_quicklook: {msg}\n")
        return 1

    if not any(a in ("--help", "-h", "-help", "--version", "--utility_version") for a in argv):
        # GDAL's general options (--help-general, --config, --debug, --formats,
        # --optfile) as every other utility takes them
        from osgeo import gdal
        gdal.ErrorReset()
        try:
            rest = gdal.GeneralCmdLineProcessor(["gdal_quicklook"] + argv)
        except RuntimeError as e:
            return fail(str(e).strip())
        if rest is None:   # answered (--help-general, --formats) or refused
            return 1 if gdal.GetLastErrorType() >= gdal.CE_Failure else 0
        argv = rest[1:]
    try:
        while i < len(argv):
            a = argv[i]
            if a in ("--help", "-h", "-help"):
                sys.stdout.write(USAGE)
                return 0
            if a in ("--version", "--utility_version"):
                from osgeo import gdal
                from . import version
                sys.stdout.write(f"gdal_quicklook (geogpu {version()}), running with GDAL "
                                 f"{gdal.__version__}\n")
                return 0
            if a in ("-kind", "-b", "-size", "-background", "-title"):
                if i + 1 >= len(argv):
                    return fail(f"{a} needs a value (see --help)")
                v = argv[i + 1]
                i += 2
                if a == "-kind":
                    if v not in KINDS:
                        return fail(f"unknown kind '{v}' (one of {', '.join(KINDS)})")
                    kind = v
                elif a == "-b":
                    if not v.isdigit() or int(v) < 1:
                        return fail(f"-b takes a band number >= 1, not '{v}'")
                    band = int(v)
                elif a == "-size":
                    if not v.isdigit() or int(v) < 16:
                        return fail(f"-size takes a number of pixels >= 16, not '{v}'")
                    size = int(v)
                elif a == "-background":
                    background = v
                else:
                    title = v
                continue
            if a in ("-q", "-quiet"):
                quiet = True
            elif a.startswith("-") and len(a) > 1:
                return fail(f"unknown option '{a}' (see --help)")
            else:
                pos.append(a)
            i += 1
        if len(pos) != 2:
            return fail("takes <src_dataset> <dst.png> (see --help)")
        src, dst = pos
        if Path(dst).suffix.lower() != ".png":
            return fail(f"the destination '{dst}' must end in .png")
        folder = Path(dst).parent
        if not folder.is_dir():
            return fail(f"the destination folder '{folder}' does not exist")
        # what a pip-installed package may lack, named rather than a traceback
        for module, what in (("osgeo.gdal", "GDAL's Python bindings (osgeo)"),
                             ("PIL.Image", "Pillow (pip install Pillow; Debian: python3-pil)")):
            try:
                __import__(module)
            except ImportError:
                return fail(f"needs {what}")
        # a program: SIGTERM and SIGHUP remove the temporary (SIGINT is
        # Python's KeyboardInterrupt, which removes it on the way out)
        _output_layer().gg_output_catch_signals()
        info = render(src, dst, kind=kind, band=band, max_size=size, background=background,
                      title=title)
    except (ValueError, RuntimeError, OSError) as e:
        return fail(str(e).strip())
    if not quiet:
        print(f"gdal_quicklook: {dst}: {info['kind']} of band {info['band']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
