"""Metek MRR-2 raw spectra through geogpu.mrr2_read / mrr2_products on the
real file autotest_data/mrr2_spectra/0308.raw.gz (one hour, 10-s records):
a float64 reference written here from Metek's calibration (eta = F CC i^2 dH
/ (1e20 TF(i))) with Hildebrand-Sekhon noise on the averaged-spectra count,
cpu against opencl, IMProToo side by side on the same records (a validation
peer, installed by scripts/setup.sh; skipped when absent), and bad input
(truncated, garbled, a missing spectral line, a zero count)."""
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

RAW = REPO / "autotest_data" / "mrr2_spectra" / "0308.raw.gz"
ND = geogpu.fmcw.NODATA
pytestmark = pytest.mark.skipif(not RAW.exists(), reason="autotest_data/mrr2_spectra absent")


@pytest.fixture(scope="module")
def mrr2():
    return geogpu.mrr2_read(RAW)


def reference(m, first, minw=3):
    """float64: rows of records first[i]..first[i+1]-1 -> ZE W WIDTH SNR (rows, gates)."""
    R, G, B = m["spectra"].shape
    dh = m["height"][1] - m["height"][0]
    lam = 299792458.0 / 24.23e9
    zc = 1e18 * lam ** 4 / (math.pi ** 5 * 0.92)
    out = np.full((len(first) - 1, 4, G), ND)
    for i in range(len(first) - 1):
        for g in range(1, G):
            recs = [r for r in range(first[i], first[i + 1])
                    if m["n_spectra"][r] > 0 and np.all(np.isfinite(m["spectra"][r, g]))]
            n = float(sum(m["n_spectra"][r] for r in recs))
            if n == 0 or not m["tf"][g] > 0:
                continue
            f = sum(m["n_spectra"][r] * m["spectra"][r, g].astype(np.float64) for r in recs) / n
            eta = f * m["cc"] * g * g * dh / (1e20 * m["tf"][g])        # Metek, 1/m per line
            t = np.sort(eta)
            nn = max(k for k in range(1, B + 1)
                     if t[:k].var() <= t[:k].mean() ** 2 / n * (1 + 1e-9))
            noise, limit = t[:nn].mean(), t[nn - 1]
            pk = int(np.argmax(eta))
            hi = lo = 0
            while hi + lo + 1 < B and eta[(pk + hi + 1) % B] > limit:
                hi += 1
            while hi + lo + 1 < B and eta[(pk - lo - 1) % B] > limit:
                lo += 1
            if nn == B or hi + lo + 1 < minw:
                continue
            d = np.arange(-lo, hi + 1)
            e = eta[(pk + d) % B] - noise
            P = e.sum()
            mu = (e * d).sum() / P
            span = 64 * geogpu.fmcw.MRR2_DV
            out[i, :, g] = (10 * math.log10(zc * P), (geogpu.fmcw.MRR2_DV * (pk + mu)) % span,
                            geogpu.fmcw.MRR2_DV * math.sqrt(max((e * d * d).sum() / P - mu * mu, 0)),
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
    frequency: detection on gates 3..30, Ze and W where both detect."""
    IMProToo = pytest.importorskip("IMProToo")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = IMProToo.mrrRawData(str(RAW))
        z = IMProToo.MrrZe(raw)
        z.co["mrrFrequency"] = geogpu.fmcw.MRR2_FREQUENCY
        z.co["lamb"] = 299792458.0 / z.co["mrrFrequency"]
        z.rawToSnow()
    miss = lambda a: np.where(np.asarray(a) <= -9990, np.nan, np.asarray(a, float))
    zi, wi = miss(z.Ze), miss(z.W)                       # gates 1..31
    p = geogpu.mrr2_products(mrr2, average=0, device="cpu")
    zg, wg, snr = p["ZE"][:, 1:], p["W"][:, 1:], p["SNR"][:, 1:]
    g330 = slice(2, 30)                                  # gates 3..30
    n_imp = int(np.isfinite(zi[:, g330]).sum())
    n_gg = int((zg[:, g330] != ND).sum())
    both = np.isfinite(zi) & (zg != ND)
    dz = (zg - zi)[both]
    dw = (wg - wi)[both]
    strong = snr[both] > 3
    alias = np.abs(dw) > 3                               # IMProToo dealiases, geogpu does not
    rms = lambda x: float(np.sqrt(np.mean(x ** 2)))
    print(f"\nIMProToo vs geogpu, 10-s records: detections on gates 3-30 {n_gg} (IMProToo {n_imp}); "
          f"where both detect ({both.sum()}): Ze RMS {rms(dz):.2f} dB (bias {dz.mean():+.2f}), "
          f"SNR > 3 dB ({strong.sum()}): {rms(dz[strong]):.2f} dB; W RMS {rms(dw[~alias]):.3f} m/s "
          f"({alias.sum()} aliased elsewhere)")
    assert n_gg >= n_imp
    assert rms(dz[strong]) < 0.7 and rms(dz) < 1.1
    assert rms(dw[~alias]) < 0.35 and alias.sum() < 0.01 * both.sum()


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
        assert ds.GetDriver().ShortName == "FMCW" and ds.RasterCount == 6
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
