"""FMCW weather radar from numpy: the dual-polarisation chain (gg_fmcw_*),
its simulator, the spectral stage alone, Metek MRR-2 spectra (gg_mrr2_*) and
PPI gridding.

    p = geogpu.fmcw_params(n_samples=256, n_sweeps=64, n_gates=128)
    sector = geogpu.fmcw_simulate(p, dbz=..., vel=..., seed=1)   # int16 (3, 2, M, N)
    prod = geogpu.fmcw_process(sectors, p, products="DBZ,VEL", device="opencl")
    prod["DBZ"]                                   # (n_sectors, n_gates) float32
    m = geogpu.mrr2_read("0308.raw.gz")           # dict of numpy arrays
    p = geogpu.mrr2_products(m, average=60)       # ZE W WIDTH SNR NOISE FLAG Z PIA RR LWC

Sectors are int16 arrays laid out as the library's host layout
[channel HH, VV, HV][I, Q][sweep][sample]: shape (3, 2, n_sweeps, n_samples)
for one sector, (n, 3, 2, n_sweeps, n_samples) for several.  Products are
float32 with NODATA (-9999) where there is no signal.
"""
import ctypes
import gzip
import os

import numpy as np

from ._lib import GGFmcwField, GGFmcwParams, GGFmcwSim, GGMrr2, GGMrr2Options, lib, text
from .device import context_for
from .errors import ArgumentError, raise_for_status

__all__ = ["NODATA", "PRODUCTS", "MOMENTS", "fmcw_params", "fmcw_info", "fmcw_process",
           "fmcw_simulate", "fmcw_sim_snr_db", "fmcw_spectral_moments", "fmcw_grid_ppi",
           "fmcw_beam", "mrr2_read", "mrr2_products", "MRR2_DV", "MRR2_PRODUCTS",
           "MRR2_FREQUENCY", "MRR2_K2"]

NODATA = -9999.0
MRR2_DV = 0.1887          # m/s per spectral line
MRR2_FREQUENCY = 24.23e9  # Hz (lambda = c / f)
MRR2_K2 = 0.92            # |K|^2 of water
MRR2_PRODUCTS = ("ZE", "W", "WIDTH", "SNR", "NOISE", "FLAG", "Z", "PIA", "RR", "LWC")
MRR2_TABLE = ("D", "DD", "SIGMA_B", "SIGMA_E")   # gg_mrr2_drop_table's columns
PRODUCTS = tuple(text(lib.gg_fmcw_product_name(i)) for i in range(10))
MOMENTS = ("NOISE", "POWER", "SNR", "VEL", "WIDTH")
_WINDOWS = {"hamming": 0, "hann": 1, "rect": 2}
_F32P = ctypes.POINTER(ctypes.c_float)


def _context(device, context):
    if context is not None and device is not None:
        raise ArgumentError("give device or context, not both", 1)
    return context if context is not None else context_for(device)


def _native_params(p):
    """GGFmcwParams from a dict (missing keys: the library's defaults),
    checked by the library."""
    n = GGFmcwParams()
    lib.gg_fmcw_params_default(ctypes.byref(n))
    names = {f[0] for f in GGFmcwParams._fields_}
    for k, v in (p or {}).items():
        if k not in names:
            raise ArgumentError(f"fmcw: unknown parameter '{k}' (known: {', '.join(sorted(names))})",
                                1)
        if k.startswith("window_") and isinstance(v, str):
            if v.lower() not in _WINDOWS:
                raise ArgumentError(f"fmcw: {k} must be one of {', '.join(_WINDOWS)}, not '{v}'", 1)
            v = _WINDOWS[v.lower()]
        if isinstance(v, bool):
            v = int(v)
        setattr(n, k, v)
    err = ctypes.create_string_buffer(512)
    raise_for_status(lib.gg_fmcw_params_check(ctypes.byref(n), err, len(err)),
                     text(err.value) or "fmcw: bad parameters")
    return n


def fmcw_params(**overrides):
    """The radar parameters as a dict: the library's defaults (X band,
    N 1024 samples, M 512 sweeps, 512 gates of 30 m, Hamming windows, ...)
    with overrides, checked (ArgumentError naming the bad member)."""
    n = _native_params(overrides)
    return {k: getattr(n, k) for k, _ in GGFmcwParams._fields_}


def fmcw_info(params=None):
    """Derived quantities: range_resolution (m), wavelength (m),
    nyquist_velocity (m/s), gate_range (m, per gate) and
    sector_values (int16 values per sector)."""
    n = _native_params(params)
    r = ctypes.byref(n)
    return {"range_resolution": lib.gg_fmcw_range_resolution(r),
            "wavelength": lib.gg_fmcw_wavelength(r),
            "nyquist_velocity": lib.gg_fmcw_nyquist_velocity(r),
            "gate_range": np.array([lib.gg_fmcw_gate_range(r, g) for g in range(n.n_gates)]),
            "sector_values": lib.gg_fmcw_sector_values(r)}


def _product_list(products):
    if products is None or products == "":
        return list(range(len(PRODUCTS)))
    if not isinstance(products, str):
        products = ",".join(products)
    lst, n = (ctypes.c_int * 16)(), ctypes.c_int()
    err = ctypes.create_string_buffer(512)
    raise_for_status(lib.gg_fmcw_parse_products(products.encode(), lst, ctypes.byref(n), err,
                                                len(err)), text(err.value) or "bad products")
    return list(lst[:n.value])


def _sectors(sectors, p):
    a = np.asarray(sectors)
    M, N = p.n_sweeps, p.n_samples
    if a.dtype != np.int16:
        raise ArgumentError(f"fmcw_process: sectors must be int16 (raw I/Q counts), not {a.dtype}",
                            1)
    if a.shape[-4:] != (3, 2, M, N) or a.ndim not in (4, 5):
        raise ArgumentError(f"fmcw_process: sectors of shape (3, 2, {M}, {N}) or "
                            f"(n, 3, 2, {M}, {N}) expected (channel HH/VV/HV, I/Q, sweep, "
                            f"sample), got {a.shape}", 1)
    a = a.reshape((-1, 3, 2, M, N))
    if a.shape[0] == 0:
        raise ArgumentError("fmcw_process: no sector", 1)
    return np.ascontiguousarray(a)


def fmcw_process(sectors, params=None, products=None, device=None, context=None, batch=16):
    """The FMCW chain on int16 sectors: dict {product: (n_sectors, n_gates)
    float32}, plus "flags" (per sector: 0 good, 1 a channel all zero, 2 too
    many clipped samples; such sectors are nodata).  products: "DBZ,VEL" or
    a list (default: all ten)."""
    p = _native_params(params)
    sec = _sectors(sectors, p)
    plist = _product_list(products)
    ctx = _context(device, context)
    n, G = sec.shape[0], p.n_gates
    batch = max(1, min(int(batch), n))
    h = ctypes.c_void_p()
    arr = (ctypes.c_int * len(plist))(*plist)
    raise_for_status(lib.gg_fmcw_create(ctx.handle, ctypes.byref(p), arr, len(plist), batch,
                                        ctypes.byref(h)), ctx.last_error or "fmcw: cannot start")
    out = np.empty((n, len(plist), G), np.float32)
    flags = np.zeros(n, np.int32)
    try:
        for s0 in range(0, n, batch):
            k = min(batch, n - s0)
            chunk = sec[s0:s0 + k]
            code = lib.gg_fmcw_push(h, chunk.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)), k)
            raise_for_status(code, text(lib.gg_fmcw_last_error(h)) or ctx.last_error)
            raise_for_status(lib.gg_fmcw_products(h, out[s0:s0 + k].ctypes.data_as(_F32P)),
                             text(lib.gg_fmcw_last_error(h)) or ctx.last_error)
            for i in range(k):
                flags[s0 + i] = lib.gg_fmcw_sector_flags(h, i)
    finally:
        lib.gg_fmcw_destroy(h)
    res = {PRODUCTS[q]: np.ascontiguousarray(out[:, j, :]) for j, q in enumerate(plist)}
    res["flags"] = flags
    return res


def _field(name, v, G):
    if v is None:
        return None
    a = np.ascontiguousarray(np.broadcast_to(np.asarray(v, np.float32), (G,)))
    return a


def fmcw_simulate(params=None, dbz=None, zdr=0.0, ldr=-30.0, vel=0.0, width=1.0, rhohv=0.99,
                  phidp=0.0, clutter_db=None, noise_counts=8.0, exponential=True, seed=0):
    """One simulated int16 sector (3, 2, n_sweeps, n_samples) from per-gate
    fields (arrays of n_gates, or scalars): reflectivity dbz (dBZ; NaN: no
    echo at that gate), zdr, ldr (dB), vel (m/s, + away), width (m/s),
    rhohv, phidp (deg), clutter_db (zero-Doppler clutter over the noise, dB;
    None: none), with receiver noise of noise_counts (std of I and of Q)."""
    p = _native_params(params)
    G = p.n_gates
    if dbz is None:
        raise ArgumentError("fmcw_simulate: dbz (per gate) is required", 1)
    arrays = {k: _field(k, v, G) for k, v in (("dbz", dbz), ("zdr", zdr), ("ldr", ldr),
                                               ("vel", vel), ("width", width), ("rhohv", rhohv),
                                               ("phidp", phidp), ("clutter_db", clutter_db))}
    f = GGFmcwField(*[None if a is None else a.ctypes.data_as(_F32P) for a in arrays.values()])
    sim = GGFmcwSim(float(noise_counts), 1 if exponential else 0, int(seed))
    out = np.empty((3, 2, p.n_sweeps, p.n_samples), np.int16)
    err = ctypes.create_string_buffer(512)
    raise_for_status(lib.gg_fmcw_simulate(ctypes.byref(p), ctypes.byref(sim), ctypes.byref(f),
                                          out.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)), err,
                                          len(err)), text(err.value) or "fmcw_simulate failed")
    return out


def fmcw_sim_snr_db(params, gate, dbz, noise_counts=8.0):
    """The SNR (dB, H channel) the simulator gives a gate of this dBZ."""
    p = _native_params(params)
    sim = GGFmcwSim(float(noise_counts), 1, 0)
    return lib.gg_fmcw_sim_snr_db(ctypes.byref(p), ctypes.byref(sim), int(gate), float(dbz))


def fmcw_spectral_moments(spectra, v0, dv, n_avg=1, device=None, context=None):
    """The spectral stage alone: power spectra (rows, gates, bins) with the
    velocity of bin j = v0 + j dv -> dict NOISE (per bin), POWER (noise
    removed), SNR (dB), VEL, WIDTH, each (rows, gates) float32 (NODATA where
    there is no signal).  Hildebrand-Sekhon noise, as the chain."""
    s = np.asarray(spectra)
    if s.ndim == 2:
        s = s[None]
    if s.ndim != 3 or s.size == 0:
        raise ArgumentError(f"fmcw_spectral_moments: spectra (rows, gates, bins) expected, got "
                            f"shape {np.shape(spectra)}", 1)
    s = np.ascontiguousarray(s, np.float32)
    R, G, B = s.shape
    ctx = _context(device, context)
    out = np.empty((R, 5, G), np.float32)
    raise_for_status(lib.gg_fmcw_spectral_moments(ctx.handle, s.ctypes.data_as(_F32P), R, G, B,
                                                  float(v0), float(dv), int(n_avg),
                                                  out.ctypes.data_as(_F32P)),
                     ctx.last_error or "fmcw_spectral_moments failed")
    res = {k: np.ascontiguousarray(out[:, i, :]) for i, k in enumerate(MOMENTS)}
    if np.ndim(spectra) == 2:
        res = {k: v[0] for k, v in res.items()}
    return res


def fmcw_grid_ppi(polar, azimuths, params=None, beam_width=None, elevation=0.0, res_m=None,
                  max_range_m=None, size=None):
    """A PPI: polar (n_az, n_gates) float32 rays at azimuths (deg, clockwise
    from north) -> a (size, size) azimuthal-equidistant grid of res_m cells
    centred on the radar (row 0 north), nearest gate, 4/3-Earth beam; nodata
    beyond max_range_m and between rays.  Defaults: beam width 360/n_az,
    max range the last gate's ground distance, res_m one range bin, size
    covering max range."""
    p = _native_params(params)
    pol = np.ascontiguousarray(np.asarray(polar, np.float32))
    if pol.ndim != 2 or pol.shape[1] != p.n_gates:
        raise ArgumentError(f"fmcw_grid_ppi: polar must be (n_az, {p.n_gates}), got {pol.shape}",
                            1)
    az = np.ascontiguousarray(np.asarray(azimuths, np.float64).ravel())
    if az.size != pol.shape[0]:
        raise ArgumentError(f"fmcw_grid_ppi: {az.size} azimuths for {pol.shape[0]} rays", 1)
    if beam_width is None:
        beam_width = 360.0 / pol.shape[0]
    if res_m is None:
        res_m = lib.gg_fmcw_range_resolution(ctypes.byref(p))
    if max_range_m is None:
        max_range_m = fmcw_beam(lib.gg_fmcw_gate_range(ctypes.byref(p), p.n_gates - 1),
                                elevation)[0]
    if size is None:
        size = int(np.ceil(2 * max_range_m / res_m))
    grid = np.empty((int(size), int(size)), np.float32)
    code = lib.gg_fmcw_grid_ppi(ctypes.byref(p), pol.ctypes.data_as(_F32P), pol.shape[0],
                                az.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                float(beam_width), float(elevation), float(res_m),
                                float(max_range_m), int(size), grid.ctypes.data_as(_F32P))
    raise_for_status(code, "fmcw_grid_ppi: bad arguments (grid size, resolution, range, "
                           "beam width must be positive)")
    return grid


def fmcw_beam(range_m, elevation_deg):
    """(ground distance, height) in m of a gate (4/3 Earth)."""
    g, h = ctypes.c_double(), ctypes.c_double()
    lib.gg_fmcw_beam(float(range_m), float(elevation_deg), ctypes.byref(g), ctypes.byref(h))
    return g.value, h.value


# ------------------------------------------------------------------ MRR-2

def mrr2_read(source):
    """Metek MRR-2 raw spectra: a path (.raw or .raw.gz) or the text itself
    (str/bytes) -> dict cc, height (gates,), tf (gates,), spectra (records,
    gates, bins) float32 (NaN where missing), n_spectra (records,) int32
    (spectra each record averages, from its header; 0: left out of the
    products), seconds (records,) int64 (UTC since 1970), time (records,)
    strings yymmddhhmmss.  Bad input raises with one line naming the line."""
    name = "MRR-2 text"
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    elif isinstance(source, str) and "\n" in source:
        data = source.encode()
    else:
        path = os.fspath(source)
        name = str(path)
        opener = gzip.open if name.endswith(".gz") else open
        try:
            with opener(path, "rb") as f:
                data = f.read()
        except (OSError, EOFError) as e:
            raise ArgumentError(f"{name}: {e}", 1) from None
    m = ctypes.POINTER(GGMrr2)()
    err = ctypes.create_string_buffer(1024)
    raise_for_status(lib.gg_mrr2_parse(data, len(data), ctypes.byref(m), err, len(err)),
                     f"{name}: " + (text(err.value) or "not MRR-2 spectra"))
    try:
        c = m.contents
        R, G, B = c.n_records, c.n_gates, c.n_bins
        return {"cc": c.cc,
                "height": np.ctypeslib.as_array(c.height, (G,)).copy(),
                "tf": np.ctypeslib.as_array(c.tf, (G,)).copy(),
                "spectra": np.ctypeslib.as_array(c.spectra, (R, G, B)).copy(),
                "n_spectra": np.ctypeslib.as_array(c.n_spectra, (R,)).astype(np.int32),
                "seconds": np.ctypeslib.as_array(c.seconds, (R,)).astype(np.int64),
                "time": [c.time[r].value.decode() for r in range(R)]}
    finally:
        lib.gg_mrr2_free(m)


def mrr2_products(mrr2, average=60.0, min_width=3, frequency=MRR2_FREQUENCY, k2=MRR2_K2,
                  device=None, context=None, dsd=False):
    """MRR-2 products on the device: records averaged over clock intervals
    of `average` seconds (60: the instrument's AVE; 0: every record),
    Metek's calibration eta = F CC i^2 dH / (1e20 TF(i)), Hildebrand-Sekhon
    noise with the count of averaged spectra, the peak (lines above the
    largest noise line, at least min_width), and Ze = 10 log10(1e18 lambda^4
    / (pi^5 |K|^2) sum eta) with lambda = c / frequency.  mrr2: mrr2_read's
    dict (its arrays may be edited) or a path.  Returns dict ZE (dBZ), W
    (m/s, down), WIDTH (m/s), SNR (dB), NOISE (dBZ), FLAG (bits: 1 gate 1, 2
    or the last; 2 a record left out; 4 no data) of (rows, gates) float32
    (NODATA where nothing), and seconds (rows,) the first record's time of
    each row, height (gates,); Z (dBZ, attenuation-corrected, from the drop
    sizes), PIA (dB), RR (mm/h), LWC (g/m^3) (docs/mrr2.md).  dsd=True adds
    ND (rows, gates, lines) N(D) in m^-3 mm^-1 and the drop table D, DD
    (mm), SIGMA_B, SIGMA_E (m^2) of (gates, lines) (gg_mrr2_drop_table)."""
    if not isinstance(mrr2, dict):
        mrr2 = mrr2_read(mrr2)
    try:
        sp = np.ascontiguousarray(mrr2["spectra"], np.float32)
        hgt = np.ascontiguousarray(mrr2["height"], np.float64)
        tf = np.ascontiguousarray(mrr2["tf"], np.float64)
        cnt = np.ascontiguousarray(mrr2["n_spectra"], np.int32)
        sec = np.ascontiguousarray(mrr2["seconds"], np.int64)
        cc = float(mrr2["cc"])
    except KeyError as e:
        raise ArgumentError(f"mrr2_products: missing {e} (pass mrr2_read's dict)", 1) from None
    if sp.ndim != 3 or hgt.shape != (sp.shape[1],) or tf.shape != (sp.shape[1],) or sp.size == 0 \
            or cnt.shape != (sp.shape[0],) or sec.shape != (sp.shape[0],):
        raise ArgumentError(f"mrr2_products: spectra (records, gates, bins) {sp.shape} does not "
                            f"match height {hgt.shape}, tf {tf.shape}, n_spectra {cnt.shape} "
                            f"and seconds {sec.shape}", 1)
    R, G, B = sp.shape
    n = GGMrr2(R, G, B, cc, hgt.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
               tf.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), sp.ctypes.data_as(_F32P), None,
               cnt.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
               sec.ctypes.data_as(ctypes.POINTER(ctypes.c_longlong)))
    opt = GGMrr2Options(float(average or 0), int(min_width), float(frequency), float(k2))
    rows = lib.gg_mrr2_rows(ctypes.byref(n), opt.average_s, None)
    first = np.zeros(rows + 1, np.int32)
    lib.gg_mrr2_rows(ctypes.byref(n), opt.average_s, first.ctypes.data_as(ctypes.POINTER(ctypes.c_int)))
    ctx = _context(device, context)
    out = np.empty((rows, len(MRR2_PRODUCTS), G), np.float32)
    nd = np.empty((rows, G, B), np.float32) if dsd else None
    raise_for_status(lib.gg_mrr2_products_dsd(ctx.handle, ctypes.byref(n), ctypes.byref(opt),
                                              out.ctypes.data_as(_F32P),
                                              nd.ctypes.data_as(_F32P) if dsd else None),
                     ctx.last_error or "mrr2_products failed")
    res = {k: np.ascontiguousarray(out[:, i, :]) for i, k in enumerate(MRR2_PRODUCTS)}
    if dsd:
        tab = np.empty((G, B, len(MRR2_TABLE)), np.float32)
        raise_for_status(lib.gg_mrr2_drop_table(ctypes.byref(n), ctypes.byref(opt),
                                                tab.ctypes.data_as(_F32P)), "mrr2 drop table failed")
        res["ND"] = nd
        res.update({k: np.ascontiguousarray(tab[:, :, i]) for i, k in enumerate(MRR2_TABLE)})
    res["seconds"] = sec[first[:-1]].copy()
    res["height"] = hgt.copy()
    return res
