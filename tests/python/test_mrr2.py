"""Metek MRR-2 raw spectra through geogpu.mrr2_read / mrr2_products on the
real file autotest_data/mrr2_spectra/0308.raw.gz (one hour, 10-s records):
a float64 reference written here from Metek's calibration (eta = F CC i^2 dH
/ (1e20 TF(i))) with Hildebrand-Sekhon noise on the averaged-spectra count,
cpu against opencl, IMProToo side by side on the same records (a validation
peer, installed by scripts/setup.sh; skipped when absent), and bad input
(truncated, garbled, a missing spectral line, a zero count); gdal_fmcw on
the file (GeoTIFF and CfRadial, the latter read back with Py-ART and
xradar); the drop-size products (Mie table, PIA walk, a known DSD)."""
import gzip
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
os.environ["GG_LIBRARY"] = str(BUILD / "lib")   # the library of the build under test
sys.path.insert(0, str(REPO / "gdal_plugins" / "python"))

import geogpu  # noqa: E402

# test-only peers (Py-ART, xradar, IMProToo) installed by scripts/setup.sh
# into <build>/test_peers: put after the system's packages on the path by
# peer() when a test needs one, not when the module is collected (the
# path would reach every test of the session, and the Dask workers they
# start, with the peers' pandas)
PEERS = BUILD / "test_peers" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / \
    "site-packages"

RAW = REPO / "autotest_data" / "mrr2_spectra" / "0308.raw.gz"
ND = geogpu.fmcw.NODATA
pytestmark = pytest.mark.skipif(not RAW.exists(), reason="autotest_data/mrr2_spectra absent")


@pytest.fixture(scope="module")
def mrr2():
    return geogpu.mrr2_read(RAW)


# The usable spectral lines [first, end) of gates 0..31 (IMProToo's limits for
# the MRR-2's disturbed spectrum ends; docs/mrr2.md)
FIRST = [0, 5, 4, 3] + [2] * 25 + [3, 3, 5]
END = [64, 60, 61, 62] + [63] * 25 + [62, 61, 63]


def peak64(m, r0, r1, g, minw=3):
    """float64, from docs/mrr2.md: records r0..r1-1 of gate g averaged with
    their counts, eta (1/m per line), Hildebrand-Sekhon on the usable lines,
    the peak (lines above 1.2 x the limit, then one above the limit), the
    noise as the mean of the other usable lines.  -> (eta, peak line
    indices, noise), or (None, None, HS noise or None) without a peak."""
    B = m["spectra"].shape[2]
    dh = m["height"][1] - m["height"][0]
    recs = [r for r in range(r0, r1) if m["n_spectra"][r] > 0 and np.all(np.isfinite(m["spectra"][r, g]))]
    n = float(sum(m["n_spectra"][r] for r in recs))
    if g == 0 or n == 0 or not m["tf"][g] > 0:
        return None, None, None
    f = sum(m["n_spectra"][r] * m["spectra"][r, g].astype(np.float64) for r in recs) / n
    k = m["cc"] * g * g * dh / (1e20 * m["tf"][g])                  # Metek: eta = F k, 1/m per line
    # the peak is found on the averaged lines F (integers for one record:
    # their ties decide alike here and on the device), then scaled to eta
    a, e = FIRST[g], END[g]
    t = np.sort(f[a:e])
    L = e - a
    nn = max(j for j in range(1, L + 1) if t[:j].var() <= t[:j].mean() ** 2 / n * (1 + 1e-9))
    limit = t[nn - 1]
    pk = a + int(np.argmax(f[a:e]))
    hi = lo = 0
    while pk + hi + 1 < e and f[pk + hi + 1] > 1.2 * limit:
        hi += 1
    if pk + hi + 1 < e and f[pk + hi + 1] > limit:
        hi += 1
    while pk - lo - 1 >= a and f[pk - lo - 1] > 1.2 * limit:
        lo += 1
    if pk - lo - 1 >= a and f[pk - lo - 1] > limit:
        lo += 1
    if nn == L or hi + lo + 1 < minw:
        return None, None, t[:nn].mean() * k
    idx = np.arange(pk - lo, pk + hi + 1)
    rest = np.setdiff1d(np.arange(a, e), idx)
    return f * k, idx, (f[rest].mean() if len(rest) else t[:nn].mean()) * k


def reference(m, first, minw=3):
    """float64: rows of records first[i]..first[i+1]-1 -> ZE W WIDTH SNR (rows, gates)."""
    G, B = m["spectra"].shape[1:]
    lam = 299792458.0 / 24.23e9
    zc = 1e18 * lam ** 4 / (math.pi ** 5 * 0.92)
    dv = geogpu.fmcw.MRR2_DV
    out = np.full((len(first) - 1, 4, G), ND)
    for i in range(len(first) - 1):
        for g in range(1, G):
            eta, idx, noise = peak64(m, first[i], first[i + 1], g, minw)
            if eta is None:
                continue
            e = eta[idx] - noise
            P = e.sum()
            if not P > 0:
                continue
            mu = (e * idx).sum() / P
            out[i, :, g] = (10 * math.log10(zc * P), dv * mu,
                            dv * math.sqrt(max((e * idx * idx).sum() / P - mu * mu, 0)),
                            10 * math.log10(P / (noise * B)))
    return out


def test_read(mrr2):
    R, G, B = mrr2["spectra"].shape
    assert (R, G, B) == (362, 32, 64) and mrr2["cc"] == 1265000
    assert mrr2["n_spectra"][0] == 57 and mrr2["n_spectra"].min() > 0
    assert mrr2["time"][0] == "240308230000" and mrr2["seconds"][1] - mrr2["seconds"][0] == 10
    assert mrr2["spectra"][0, 0, 0] == 1090 and np.nanmax(mrr2["spectra"]) > 1000


@pytest.mark.parametrize("average", [0, 60])
def test_reference(mrr2, device, average):
    """Every product of the first rows against the float64 reference."""
    p = geogpu.mrr2_products(mrr2, average=average, device=device)
    nrec = 6 if average == 0 else 36
    sub = {k: (v[:nrec] if isinstance(v, np.ndarray) and len(v) == 362 else v) for k, v in mrr2.items()}
    rows = 6
    first = [0, 1, 2, 3, 4, 5, 6] if average == 0 else list(range(0, 37, 6))
    ref = reference(sub, first)
    assert np.all(p["FLAG"][:, 0] == 4) and np.all(p["ZE"][:, 0] == ND)      # gate 0 dropped
    assert np.all(p["FLAG"][:, [1, 2, 31]] % 2 == 1)                        # flagged gates
    got = np.stack([p[k][:rows] for k in ("ZE", "W", "WIDTH", "SNR")], axis=1)
    assert np.array_equal(got == ND, ref == ND)
    det = ref != ND
    assert det[:, 0].sum() > 100                                           # rain: not all zero
    np.testing.assert_allclose(got[det], ref[det], atol=0.01)
    if average == 60:
        assert len(p["ZE"]) == 60 and p["seconds"][1] - p["seconds"][0] == 60


def test_cpu_vs_opencl(mrr2):
    if not any("opencl" in str(d).lower() for d in geogpu.devices()):
        pytest.skip("no OpenCL device")
    a = geogpu.mrr2_products(mrr2, average=60, device="cpu")
    b = geogpu.mrr2_products(mrr2, average=60, device="opencl")
    for k in geogpu.fmcw.MRR2_PRODUCTS:
        assert np.array_equal(a[k] == ND, b[k] == ND), k
        np.testing.assert_allclose(a[k], b[k], atol=1e-3)


def test_improtoo_side_by_side(mrr2):
    """IMProToo (Maahn & Kollias 2012) on the same 10-s records, at the same
    frequency: detection on gates 3..30, Ze and W where both detect, against
    its products without dealiasing (like for like: geogpu does not dealias)
    and with (its final Ze, W)."""
    IMProToo = peer("IMProToo")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = IMProToo.mrrRawData(str(RAW))
        z = IMProToo.MrrZe(raw)
        z.co["mrrFrequency"] = geogpu.fmcw.MRR2_FREQUENCY
        z.co["lamb"] = 299792458.0 / z.co["mrrFrequency"]
        z.rawToSnow()
    miss = lambda a: np.where(np.ma.filled(np.ma.asarray(a, float), -9999) <= -9990, np.nan,
                              np.ma.filled(np.ma.asarray(a, float), -9999))
    p = geogpu.mrr2_products(mrr2, average=0, device="cpu")
    zg, wg, snr = p["ZE"][:, 1:], p["W"][:, 1:], p["SNR"][:, 1:]   # gates 1..31, as IMProToo's
    rms = lambda x: float(np.sqrt(np.mean(x ** 2)))
    g330 = slice(2, 30)                                  # gates 3..30
    res = {}
    for label, zi, wi in (("no dealiasing", miss(z.Ze_noDA), miss(z.W_noDA)),
                          ("dealiased", miss(z.Ze), miss(z.W))):
        both = np.isfinite(zi) & (zg != ND)
        dz, dw = (zg - zi)[both], (wg - wi)[both]
        alias = np.abs(dw) > 3                           # whole aliasing intervals apart
        res[label] = (int(np.isfinite(zi[:, g330]).sum()), int(both.sum()), rms(dz), dz.mean(),
                      rms(dz[snr[both] > 3]), rms(dw[~alias]), int(alias.sum()))
        print(f"\nIMProToo ({label}) vs geogpu, 10-s records: detections on gates 3-30 "
              f"{int((zg[:, g330] != ND).sum())} (IMProToo {res[label][0]}); where both detect "
              f"({res[label][1]}): Ze RMS {res[label][2]:.3f} dB (bias {res[label][3]:+.3f}), SNR > 3 dB "
              f"{res[label][4]:.3f} dB; W RMS {res[label][5]:.4f} m/s ({res[label][6]} aliased)")
    n_gg = int((zg[:, g330] != ND).sum())
    for label, (n_imp, nboth, zr, zb, zs, wr, nal) in res.items():
        assert n_gg >= n_imp and nboth > 9000, label
        assert zr < 0.5 and abs(zb) < 0.1 and zs < 0.5, label      # issue 34: 0.5 dB
        assert nal < 0.002 * nboth, label
    assert res["dealiased"][5] < 0.1 and res["no dealiasing"][5] < 0.1     # issue 34: 0.1 m/s


def write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return p


def test_bad_input(tmp_path, mrr2):
    text = gzip.open(RAW, "rt").read()
    rec = text[:text.index("MRR", 10)]                   # the first record
    # truncated gzip: one line naming the file
    p = tmp_path / "cut.raw.gz"
    p.write_bytes(RAW.read_bytes()[:5000])
    with pytest.raises(geogpu.GeogpuError) as e:
        geogpu.mrr2_read(p)
    assert "cut.raw.gz" in str(e.value) and "\n" not in str(e.value)
    # garbled field
    bad = rec.replace("F10        3", "F10       3x", 1)
    with pytest.raises(geogpu.GeogpuError) as e:
        geogpu.mrr2_read(write(tmp_path, "garbled.raw", bad))
    assert "garbled.raw" in str(e.value) and "line 14" in str(e.value)
    # a header without its count
    with pytest.raises(geogpu.GeogpuError) as e:
        geogpu.mrr2_read(write(tmp_path, "nocount.raw", rec.replace(" MDQ 100 57 57", "")))
    assert "count" in str(e.value) and "nocount.raw" in str(e.value)
    # a zero count and a missing spectral line: read, left out and flagged
    two = rec + rec.replace("230000", "230010").replace("MDQ 100 57 57", "MDQ   0  0 57")
    m = geogpu.mrr2_read(write(tmp_path, "zero.raw.gz", two, gz=True))
    assert list(m["n_spectra"]) == [57, 0]
    p = geogpu.mrr2_products(m, average=60, device="cpu")
    assert np.all(p["FLAG"][0, 1:].astype(int) & 2) and (p["ZE"][0] != ND).sum() > 20
    lines = rec.split("\n")
    m = geogpu.mrr2_read(write(tmp_path, "hole.raw", "\n".join(l for l in lines if not l.startswith("F33"))))
    assert np.isnan(m["spectra"][0, :, 33]).all()
    p = geogpu.mrr2_products(m, average=0, device="cpu")
    assert np.all(p["ZE"][0] == ND) and np.all(p["FLAG"][0].astype(int) & 4)


# ------------------------------------------------- gdal_fmcw and the FMCW driver


def read_bands(path):
    from osgeo import gdal
    ds = gdal.Open(str(path))
    names = [ds.GetRasterBand(b + 1).GetDescription() for b in range(ds.RasterCount)]
    return ds, {n: ds.GetRasterBand(b + 1).ReadAsArray() for b, n in enumerate(names)}


@pytest.mark.parametrize("average", [0, 60])
def test_gdal_fmcw(gg, mrr2, device, tmp_path, average):
    """gdal_fmcw on the real file: a time x height raster, one band per
    product, its first rows against the float64 reference and every row
    against the library's products; times and heights as metadata."""
    out = tmp_path / "mrr2.tif"
    before = RAW.read_bytes()
    args = ["-average", average] if average else []
    r = gg.run("gdal_fmcw", "-device", device, *args, RAW, out)
    assert r.returncode == 0 and RAW.read_bytes() == before
    ds, b = read_bands(out)
    assert list(b) == list(geogpu.fmcw.MRR2_PRODUCTS)
    rows = 362 if average == 0 else 60
    assert (ds.RasterXSize, ds.RasterYSize) == (32, rows)
    assert [ds.GetRasterBand(i + 1).GetUnitType() for i in range(3)] == ["dBZ", "m/s", "m/s"]
    assert ds.GetRasterBand(1).GetNoDataValue() == ND
    md = ds.GetMetadata()
    p = geogpu.mrr2_products(mrr2, average=average, device="cpu")
    t = np.array(md["TIME_S"].split(","), np.int64)
    assert np.array_equal(t, p["seconds"]) and len(t) == rows
    assert np.allclose(np.array(md["HEIGHT_M"].split(","), float), mrr2["height"])
    assert float(md["CALIBRATION_CONSTANT"]) == 1265000 and float(md["AVERAGE_S"]) == average
    for k in geogpu.fmcw.MRR2_PRODUCTS:
        assert np.array_equal(b[k] == ND, p[k] == ND), k
        np.testing.assert_allclose(b[k], p[k], atol=1e-3, err_msg=k)
    # the first rows against the float64 reference of Metek's formulas
    nrec = 6 if average == 0 else 36
    sub = {k: (v[:nrec] if isinstance(v, np.ndarray) and len(v) == 362 else v) for k, v in mrr2.items()}
    ref = reference(sub, [0, 1, 2, 3, 4, 5, 6] if average == 0 else list(range(0, 37, 6)))
    got = np.stack([b[k][:6] for k in ("ZE", "W", "WIDTH", "SNR")], axis=1)
    det = ref != ND
    assert np.array_equal(got == ND, ref == ND) and det[:, 0].sum() > 100
    np.testing.assert_allclose(got[det], ref[det], atol=0.01)


def test_driver_and_products(gg, tmp_path):
    """The FMCW driver opens the raw file by name or as FMCW:<file>;
    -products picks bands, in the order given."""
    from osgeo import gdal
    for name in (str(RAW), f"FMCW:{RAW}"):
        ds = gdal.Open(name)
        assert ds.GetDriver().ShortName == "FMCW" and ds.RasterCount == 10
        assert ds.GetRasterBand(1).GetDescription() == "ZE"
    ds = gdal.OpenEx(str(RAW), open_options=["AVERAGE=60", "PRODUCTS=w,ze", "DEVICE=cpu"])
    assert ds.RasterYSize == 60 and [ds.GetRasterBand(i).GetDescription() for i in (1, 2)] == ["W", "ZE"]
    ze = ds.GetRasterBand(2).ReadAsArray()
    assert (ze != ND).sum() > 500 and np.nanmax(ze[ze != ND]) > 20     # rain, not an empty raster
    out = tmp_path / "zw.tif"
    gg.run("gdal_fmcw", "-q", "-device", "cpu", "-products", "ZE,W", "-average", "60", RAW, out)
    _, b = read_bands(out)
    assert list(b) == ["ZE", "W"] and np.array_equal(b["ZE"], ze)


def test_gdal_fmcw_bad_input(gg, tmp_path):
    """Bad MRR-2 input: one error line naming the file, a non-zero exit,
    nothing written (neither the output nor a temporary)."""
    text = gzip.open(RAW, "rt").read()
    rec = text[:text.index("MRR", 10)]
    cases = {"cut.raw.gz": RAW.read_bytes()[:5000],
             "garbled.raw": rec.replace("F10        3", "F10       3x", 1).encode(),
             "nocount.raw.gz": gzip.compress(rec.replace(" MDQ 100 57 57", "").encode())}
    for name, data in cases.items():
        src = tmp_path / name
        src.write_bytes(data)
        out = tmp_path / "out.tif"
        r = gg.run("gdal_fmcw", "-q", "-device", "cpu", src, out, check=False)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1 and name in lines[0], (name, r.stderr)
        assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == sorted(
            n for n in cases if (tmp_path / n).exists())
    assert "line 14" in gg.run("gdal_fmcw", "-q", tmp_path / "garbled.raw", tmp_path / "o.tif",
                               check=False).stderr
    # options that do not apply to vertically pointing spectra
    r = gg.run("gdal_fmcw", "-q", "-grid", "100", RAW, tmp_path / "g.tif", check=False)
    assert r.returncode != 0 and "PPI" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = gg.run("gdal_fmcw", "-q", "-products", "DBZ", RAW, tmp_path / "p.tif", check=False)
    assert r.returncode != 0 and "unknown MRR-2 product 'DBZ'" in r.stderr
    r = gg.run("gdal_fmcw", "-q", "-average", "-5", RAW, tmp_path / "a.tif", check=False)
    assert r.returncode != 0 and "-average" in r.stderr
    assert not list(tmp_path.glob("*.tif"))
    # the raw file is never overwritten, as GeoTIFF or as CfRadial
    src = tmp_path / "own.raw.gz"
    src.write_bytes(RAW.read_bytes())
    for args in ([], ["-of", "CfRadial"]):
        r = gg.run("gdal_fmcw", "-q", *args, src, src, check=False)
        assert r.returncode != 0 and "never overwritten" in r.stderr and src.read_bytes() == RAW.read_bytes()


# ------------------------------------------------- PIA and drop sizes (N(D), RR, LWC)

LAMBDA = 299792458.0 / 24.23e9


def water_index(t_c=10.0, f_hz=24.23e9):
    """Liebe et al. (1991) double-Debye permittivity of water -> refractive index."""
    th = 300.0 / (273.15 + t_c) - 1.0
    f = f_hz * 1e-9
    e0 = 77.66 + 103.3 * th
    e1, e2 = 0.0671 * e0, 3.52
    fp = 20.20 - 146.0 * th + 316.0 * th ** 2
    return np.sqrt(e2 + (e0 - e1) / (1 - 1j * f / fp) + (e1 - e2) / (1 - 1j * f / (39.8 * fp)))


def mie64(d_mm, m=None):
    """float64 Mie (Bohren & Huffman's series): (sigma_b, sigma_e) in m^2."""
    m = water_index() if m is None else m
    r = 0.5e-3 * d_mm
    x = 2 * math.pi * r / LAMBDA
    nstop = int(x + 4 * x ** (1 / 3) + 2)
    y = m * x
    nmx = int(max(nstop, abs(y))) + 16
    dl = np.zeros(nmx + 1, complex)
    for n in range(nmx, 0, -1):
        dl[n - 1] = n / y - 1 / (dl[n] + n / y)
    n = np.arange(1, nstop + 1)
    # Riccati-Bessel functions through scipy's spherical Bessel functions
    from scipy.special import spherical_jn, spherical_yn
    psi = x * spherical_jn(n, x)
    psim = x * spherical_jn(n - 1, x)
    xi = x * (spherical_jn(n, x) + 1j * spherical_yn(n, x))
    xim = x * (spherical_jn(n - 1, x) + 1j * spherical_yn(n - 1, x))
    da, db = dl[1:nstop + 1] / m + n / x, m * dl[1:nstop + 1] + n / x
    a = (da * psi - psim) / (da * xi - xim)
    b = (db * psi - psim) / (db * xi - xim)
    qe = 2 / x ** 2 * np.sum((2 * n + 1) * (a + b).real)
    qb = abs(np.sum((2 * n + 1) * (-1.0) ** n * (a - b))) ** 2 / x ** 2
    return qb * math.pi * r * r, qe * math.pi * r * r


def test_drop_table(mrr2):
    """Drop diameters from Metek's velocity relation and the Mie cross
    sections against float64 (scipy's Bessel functions), and the Rayleigh
    limit of small drops."""
    p = geogpu.mrr2_products(mrr2, average=3600, device="cpu", dsd=True)
    D, DD, SB, SE = p["D"], p["DD"], p["SIGMA_B"], p["SIGMA_E"]
    for g in (3, 15, 30):
        h = mrr2["height"][g]
        dv = 1 + 3.68e-5 * h + 1.71e-9 * h * h
        v = np.arange(64) * geogpu.fmcw.MRR2_DV
        u = 9.65 - v / dv
        d = np.where((u > 0) & (u <= 10.3), -np.log(np.clip(u, 1e-30, None) / 10.3) / 0.6, 0)
        used = D[g] > 0
        assert used[1:40].all() and not used[0] and (d[used] <= 6).all()
        np.testing.assert_allclose(D[g][used], d[used], rtol=1e-5)
        # the lines' diameter intervals tile D(lower edge of line 1) .. D(upper edge of the last)
        top = (np.flatnonzero(used)[-1] + 0.5) * geogpu.fmcw.MRR2_DV
        dia = lambda v: -math.log((9.65 - v / dv) / 10.3) / 0.6
        span = dia(top) - dia(0.5 * geogpu.fmcw.MRR2_DV)
        assert abs(DD[g][used].sum() - span) < 1e-4
        for j in np.flatnonzero(used)[::6]:
            sb, se = mie64(D[g, j])
            np.testing.assert_allclose([SB[g, j], SE[g, j]], [sb, se], rtol=1e-4)
    m = water_index()
    K = (m ** 2 - 1) / (m ** 2 + 2)
    d = D[3, 1] * 1e-3                                              # 0.24 mm: Rayleigh
    assert abs(SB[3, 1] / (math.pi ** 5 * abs(K) ** 2 * d ** 6 / LAMBDA ** 4) - 1) < 0.01
    assert abs(SE[3, 1] / (math.pi ** 2 * d ** 3 / LAMBDA * K.imag) - 1) < 0.03   # + O(x) terms


def reference_dsd(m, first, tab, minw=3):
    """float64 walk up each row: attenuation-corrected N(D), Z, PIA, RR, LWC
    from the peak signal of the moments reference (tab: the drop table)."""
    R, G, B = m["spectra"].shape
    dh = m["height"][1] - m["height"][0]
    D, DD, SB, SE = tab
    out = np.full((len(first) - 1, 4, G), ND)
    for i in range(len(first) - 1):
        below = 0.0
        for g in range(G):
            e = signal64(m, first[i], first[i + 1], g, minw)
            k = 0.0
            use = (D[g] > 0) & (e > 0) if e is not None else None
            if e is not None:
                for _ in range(4):
                    a = math.exp(2 * below + k * dh)
                    k = float(np.sum(e[use] * a / SB[g][use] * SE[g][use]))
            a = math.exp(2 * below + k * dh)
            if g > 0:
                out[i, 1, g] = 10 * math.log10(a)
            if e is not None and 10 * math.log10(a) <= 10:
                n = e[use] * a / SB[g][use]
                d = D[g][use]
                v = geogpu.fmcw.MRR2_DV * np.flatnonzero(use)
                z6 = np.sum(n * d ** 6)
                out[i, 0, g] = 10 * math.log10(z6) if z6 > 0 else ND
                out[i, 2, g] = math.pi / 6 * 3.6e-3 * np.sum(n * d ** 3 * v)
                out[i, 3, g] = math.pi / 6 * 1e-3 * np.sum(n * d ** 3)
            below += k * dh
    return out


def signal64(m, r0, r1, g, minw):
    """The peak's eta less the noise (1/m per line), 0 elsewhere; None without a peak."""
    eta, idx, noise = peak64(m, r0, r1, g, minw)
    if eta is None or not (eta[idx] - noise).sum() > 0:
        return None
    out = np.zeros(len(eta))
    out[idx] = eta[idx] - noise
    return out


@pytest.mark.parametrize("average", [0, 60])
def test_dsd_reference(mrr2, device, average):
    """Z, PIA, RR, LWC and N(D) of the first rows against the float64 walk."""
    p = geogpu.mrr2_products(mrr2, average=average, device=device, dsd=True)
    nrec = 6 if average == 0 else 36
    sub = {k: (v[:nrec] if isinstance(v, np.ndarray) and len(v) == 362 else v) for k, v in mrr2.items()}
    first = [0, 1, 2, 3, 4, 5, 6] if average == 0 else list(range(0, 37, 6))
    tab = [p[k].astype(np.float64) for k in geogpu.fmcw.MRR2_TABLE]
    ref = reference_dsd(sub, first, tab)
    got = np.stack([p[k][:6] for k in ("Z", "PIA", "RR", "LWC")], axis=1)
    assert np.array_equal(got == ND, ref == ND)
    det = ref != ND
    rain = ref[:, 2][det[:, 2]]
    assert (rain > 0.1).sum() > 30 and ref[:, 1, 31].max() > 0.5   # rain, and attenuation aloft
    np.testing.assert_allclose(got[:, 0][det[:, 0]], ref[:, 0][det[:, 0]], atol=0.01)
    np.testing.assert_allclose(got[:, 1][det[:, 1]], ref[:, 1][det[:, 1]], atol=0.01, rtol=1e-3)
    np.testing.assert_allclose(got[:, 2:][det[:, 2:]], ref[:, 2:][det[:, 2:]], rtol=2e-3, atol=1e-5)
    # Z nodata: no signal, no data, the PIA past its limit (flag 8), or a peak
    # on lines no rain drop falls at (aliased, > 9.4 m/s: RR and LWC 0)
    gap = (p["Z"] == ND) & (p["ZE"] != ND) & ((p["FLAG"].astype(int) & 12) == 0)
    assert np.all(p["RR"][gap] == 0) and np.all(p["LWC"][gap] == 0) and gap.sum() < 20
    # the PIA accumulates upward: never decreasing with height in a row
    pia = p["PIA"][:, 1:]
    full = np.all(pia != ND, axis=1)
    assert full.sum() > len(pia) // 2 and np.all(np.diff(pia[full], axis=1) >= -1e-4)
    nd = p["ND"][:6]
    ok = p["Z"][:6] != ND
    # N(D) nodata exactly where the gate has no signal, no data or too much PIA
    none = (p["ZE"][:6] == ND) | ((p["FLAG"][:6].astype(int) & 12) > 0)
    assert np.array_equal((nd == ND).all(axis=2), none) and ok.sum() > 100
    # N(D) integrates back to the liquid water content
    lwc = math.pi / 6 * 1e-3 * np.sum(np.where(nd > 0, nd, 0) * p["DD"] * p["D"] ** 3, axis=2)
    np.testing.assert_allclose(lwc[ok], p["LWC"][:6][ok], rtol=1e-3)


def test_known_drop_size_distribution():
    """A synthetic record whose spectrum at one gate is a Marshall-Palmer
    distribution (N0 = 8000 m^-3 mm^-1, rain rate R) above a flat noise
    floor: N(D) comes back, RR and LWC as the analytic integrals as the analytic integrals over the
    diameters the lines cover (no attenuation below: the other gates are
    noise)."""
    from scipy.integrate import quad
    m = geogpu.mrr2_read(RAW)
    m = {k: (v[:1].copy() if isinstance(v, np.ndarray) and len(v) == 362 else v) for k, v in m.items()}
    g, R = 5, 4.0
    lam_mp = 4.1 * R ** -0.21                                       # mm^-1
    tab = geogpu.mrr2_products(m, average=0, device="cpu", dsd=True)
    D, DD, SB = tab["D"][g].astype(float), tab["DD"][g].astype(float), tab["SIGMA_B"][g].astype(float)
    use = (D > 0) & (np.arange(64) >= FIRST[g]) & (np.arange(64) < END[g])   # drop lines, usable
    N = 8000 * np.exp(-lam_mp * D)
    eta = np.where(use, N * DD * np.where(use, SB, 1), 0)             # 1/m per line
    dh = m["height"][1] - m["height"][0]
    kf = m["cc"] * g * g * dh / (1e20 * m["tf"][g])                  # eta per unit of F
    noise = 1e-7 * (eta / kf).max()    # a floor every drop line stands out of in float32
    m["spectra"][0] = noise
    m["spectra"][0, g] = noise + eta / kf
    p = geogpu.mrr2_products(m, average=0, device="cpu", dsd=True)
    h = m["height"][g]
    dv = 1 + 3.68e-5 * h + 1.71e-9 * h * h
    vlo = (np.flatnonzero(use)[0] - 0.5) * geogpu.fmcw.MRR2_DV      # lower edge of the first line
    lo = -math.log((9.65 - vlo / dv) / 10.3) / 0.6
    hi = D[use].max() + DD[use][-1] / 2
    v = lambda d: (9.65 - 10.3 * math.exp(-0.6 * d)) * dv
    nmp = lambda d: 8000 * math.exp(-lam_mp * d)
    rr = math.pi / 6 * 3.6e-3 * quad(lambda d: nmp(d) * d ** 3 * v(d), lo, hi)[0]
    lwc = math.pi / 6 * 1e-3 * quad(lambda d: nmp(d) * d ** 3, lo, hi)[0]
    print(f"\nMarshall-Palmer {R} mm/h at gate {g}: RR {p['RR'][0, g]:.3f} (analytic {rr:.3f}), "
          f"LWC {p['LWC'][0, g]:.4f} ({lwc:.4f}), PIA {p['PIA'][0, g]:.3f} dB")
    assert abs(p["RR"][0, g] / rr - 1) < 0.03 and abs(p["LWC"][0, g] / lwc - 1) < 0.03
    assert 0 < p["PIA"][0, g] < 0.2 and p["PIA"][0, g - 1] == 0         # only the gate's own half
    np.testing.assert_allclose(p["ND"][0, g][use], N[use], rtol=0.02)
    ze = 10 * math.log10(1e18 * LAMBDA ** 4 / (math.pi ** 5 * 0.92) * eta.sum())
    assert abs(p["ZE"][0, g] - ze) < 0.01
    assert all(p["ZE"][0, k] == ND for k in range(32) if k != g)


# ------------------------------------------------- CfRadial (Py-ART, xradar)


def peer(name):
    """A test-only peer, or a skip naming why it is missing."""
    import site
    site.addsitedir(str(PEERS))
    try:
        return __import__(name)
    except Exception as e:     # not installed, or built for another numpy
        pytest.skip(f"{name} not importable ({type(e).__name__}: {e}); scripts/setup.sh installs it "
                    f"into {BUILD / 'test_peers'}")


@pytest.mark.parametrize("average", [0, 60])
def test_cfradial_pyart_xradar(gg, tmp_path, average):
    """gdal_fmcw -of CfRadial on the real spectra: Py-ART and xradar open the
    file as one vertically pointing sweep, and every field they read equals
    what gdal_fmcw writes as GeoTIFF (VEL = -W: CfRadial's velocity is
    positive away from the radar), with the times and ranges of its rows
    and columns."""
    import warnings
    pyart = peer("pyart")
    xradar = peer("xradar")
    args = ["-average", average] if average else []
    tif, nc = tmp_path / "mrr2.tif", tmp_path / "mrr2.nc"
    gg.run("gdal_fmcw", "-q", "-device", "cpu", *args, RAW, tif)
    r = gg.run("gdal_fmcw", "-device", "cpu", "-of", "CfRadial", *args, RAW, nc)
    assert r.returncode == 0 and gg.progress in r.stdout
    ds, b = read_bands(tif)
    t = np.array(ds.GetMetadataItem("TIME_S").split(","), np.int64)
    heights = np.array(ds.GetMetadataItem("HEIGHT_M").split(","), float)
    names = {"ZE": "DBZ", "W": "VEL"}
    sign = {"W": -1.0}
    assert (b["ZE"] != ND).sum() > 500                                # rain: not an empty file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        radar = pyart.io.read_cfradial(str(nc))
    assert radar.scan_type == "vpt" and radar.nsweeps == 1
    assert (radar.nrays, radar.ngates) == (len(t), 32)
    assert radar.fixed_angle["data"][0] == 90 and np.all(radar.elevation["data"] == 90)
    np.testing.assert_allclose(radar.range["data"], heights)
    dt = pyart.util.datetimes_from_radar(radar, only_use_cftime_datetimes=True)
    secs = np.array([(d - type(d)(1970, 1, 1)).total_seconds() for d in dt])
    np.testing.assert_allclose(secs, t, atol=1e-3)
    assert sorted(radar.fields) == sorted(names.get(k, k) for k in b)
    for k, a in b.items():
        f = radar.fields[names.get(k, k)]["data"]
        assert np.array_equal(np.ma.getmaskarray(f), a == ND), k
        np.testing.assert_array_equal(f.compressed(), (sign.get(k, 1.0) * a[a != ND]).astype(np.float32))
    assert radar.fields["VEL"]["standard_name"] == "radial_velocity_of_scatterers_away_from_instrument"
    assert radar.fields["RR"]["units"] == "mm/h"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = xradar.io.open_cfradial1_datatree(str(nc))
    sw = tree["sweep_0"].ds
    assert str(sw["sweep_mode"].values) == "vertical_pointing" and float(sw["sweep_fixed_angle"]) == 90
    np.testing.assert_allclose(sw["range"].values, heights)
    xt = (sw["time"].values - np.datetime64("1970-01-01T00:00:00")) / np.timedelta64(1, "s")
    np.testing.assert_allclose(xt, t, atol=1e-3)
    for k, a in b.items():
        v = sw[names.get(k, k)].values
        np.testing.assert_array_equal(np.isnan(v), a == ND, err_msg=k)
        np.testing.assert_array_equal(v[a != ND], (sign.get(k, 1.0) * a[a != ND]).astype(np.float32))


def test_cfradial_refused(gg, tmp_path):
    """-of CfRadial takes neither -co nor -ot, and a PPI grid has no rays: one
    error line, nothing written."""
    cases = [(["-co", "COMPRESS=DEFLATE"], "-ot and -co do not apply to -of CfRadial")]
    for args, msg in cases:
        out = tmp_path / "x.nc"
        r = gg.run("gdal_fmcw", "-q", "-of", "CfRadial", *args, RAW, out, check=False)
        assert r.returncode != 0 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())
