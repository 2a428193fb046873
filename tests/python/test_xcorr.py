"""gdal_xcorr end to end: the quality mode through GDAL (peer golden on the
ampcor white-noise pair, the -table output, the GG: connection string), the
GMTSAR mode on a synthetic int16 pair against a float64 numpy reference of the
same algorithm, and bad input (one-line error, non-zero exit, no output).
"""
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import BIN, OPENCL_ABSENT, REPO

AMPCOR = next((p for p in (REPO / "autotest_data" / "ampcor_whitenoise",
                           REPO.parent / "shared" / "data" / "ampcor_whitenoise")
               if (p / "img1_WN_512x512_1x1_128.vrt").exists()), None)
GOLDEN_OPTS = ["-window", "64", "32", "-search", "20", "20", "-skip", "32", "32", "-start", "20", "20",
               "-count", "12", "13", "-zoom", "8", "-ovs", "64"]


def run(args, ok=True):
    p = subprocess.run([str(BIN / "gdal_xcorr")] + [str(a) for a in args], capture_output=True,
                       text=True)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


# ----------------------------------------------------------- quality mode

@pytest.mark.skipif(AMPCOR is None, reason="ampcor_whitenoise data absent")
def test_golden_through_gdal(tmp_path, device):
    dst = tmp_path / "off.tif"
    run(GOLDEN_OPTS + ["-device", device, "-q", AMPCOR / "img1_WN_512x512_1x1_128.vrt",
                       AMPCOR / "img2_WN_512x512_1x1_128.vrt", dst, "-table", tmp_path / "t.csv"])
    ds = gdal.Open(str(dst))
    assert (ds.RasterXSize, ds.RasterYSize, ds.RasterCount) == (12, 13, 8)
    names = [ds.GetRasterBand(i + 1).GetDescription() for i in range(8)]
    assert names == ["offset_down", "offset_across", "snr", "cov_down", "cov_across",
                     "cov_down_across", "peak", "peak_ratio"]
    off = np.stack([ds.GetRasterBand(i + 1).ReadAsArray() for i in range(2)], -1)
    gold = np.fromfile(AMPCOR / "golden" / "dense_offsets", "<f4").reshape(13, 12, 2)
    d = off - gold
    keep = np.abs(gold) <= 0.1  # the golden's two values off the truth (0) by > 0.1 px
    assert np.abs(d[keep]).max() <= 0.1
    assert abs(d[..., 0].mean()) <= 0.02 and abs(d[..., 1].mean()) <= 0.02
    # where the golden is off the truth (0 on this pair), ours is closer to it
    assert (~keep).sum() == 2 and (np.abs(off[~keep]) < np.abs(gold[~keep])).all()
    snr = ds.GetRasterBand(3).ReadAsArray()
    gsnr = np.fromfile(AMPCOR / "golden" / "snr", "<f4").reshape(13, 12)
    assert np.abs(snr / gsnr - 1).max() <= 1 / 64
    cov = np.stack([ds.GetRasterBand(i).ReadAsArray() for i in (4, 5, 6)], -1)
    gcov = np.fromfile(AMPCOR / "golden" / "covariance", "<f4").reshape(13, 12, 3)
    assert np.abs(cov - gcov).max() <= np.abs(gcov).max() / 64
    # The golden correlation_peak (0.31-0.63) is not compared: it is
    # uncorrelated with the golden's own SNR (whose raw NCC peak ours
    # matches, SNR within 1e-5) and lies below that raw peak (~0.6) in most
    # windows, which an NCC maximum of the oversampled surface cannot
    # (docs/gdal_xcorr.md).  Ours: the maximum of the interpolated NCC
    # surface (0.56-0.64 here).
    peak = ds.GetRasterBand(7).ReadAsArray()
    assert ((peak > 0.5) & (peak <= 1)).all()
    # geotransform: pixel centre = template centre (input pixel/line)
    gt = ds.GetGeoTransform()
    assert gt[0] + 0.5 * gt[1] == pytest.approx(20 + 32) and gt[1] == 32
    # the table: one row per window, the same values
    t = np.genfromtxt(tmp_path / "t.csv", delimiter=",", names=True)
    assert len(t) == 12 * 13
    assert t["x"][0] == 52 and t["y"][0] == 36
    np.testing.assert_allclose(t["offset_across"], off[..., 1].ravel(), atol=1e-6)


@pytest.mark.skipif(AMPCOR is None, reason="ampcor_whitenoise data absent")
def test_gg_connection_string(tmp_path):
    a = AMPCOR / "img1_WN_512x512_1x1_128.vrt"
    b = AMPCOR / "img2_WN_512x512_1x1_128.vrt"
    ds = gdal.Open(f"GG:xcorr:window=64x32:search=20x20:skip=32x32:start=20x20:count=12x13:zoom=8:{a},{b}")
    assert ds.RasterCount == 8 and ds.RasterXSize == 12
    v = ds.GetRasterBand(2).ReadAsArray()
    run(GOLDEN_OPTS + ["-device", "cpu", "-q", a, b, tmp_path / "o.tif"])
    o = gdal.Open(str(tmp_path / "o.tif"))  # kept: GDAL 3.6 frees a temporary dataset
    w = o.GetRasterBand(2).ReadAsArray()
    np.testing.assert_array_equal(v, w)


# ------------------------------------------------------------ GMTSAR mode

def speckle_pair(w, h, dx, dy, coh, seed=3, frac=0.8):
    """Band-limited speckle; feature at x in s1 is at x + dx in s2."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(h, w)) + 1j * rng.normal(size=(h, w))
    b = rng.normal(size=(h, w)) + 1j * rng.normal(size=(h, w))
    A, Bf = np.fft.fft2(a), np.fft.fft2(b)
    fy, fx = np.fft.fftfreq(h)[:, None], np.fft.fftfreq(w)[None, :]
    keep = (np.abs(fy) < frac / 2) & (np.abs(fx) < frac / 2)
    A *= keep
    Bf *= keep
    s1 = np.fft.ifft2(A)
    s2 = np.fft.ifft2(coh * A * np.exp(-2j * np.pi * (fx * dx + fy * dy)) + math.sqrt(1 - coh ** 2) * Bf)
    scale = 2000 / np.abs(s1).std()
    return s1 * scale, s2 * scale


def write_slc(folder, name, s, prf=1000.0, shift=True):
    iq = np.empty(s.shape + (2,), "<i2")
    iq[..., 0] = np.clip(np.round(s.real), -32767, 32767)
    iq[..., 1] = np.clip(np.round(s.imag), -32767, 32767)
    iq.tofile(folder / f"{name}.SLC")
    lines = [f"SLC_file = {name}.SLC", f"num_rng_bins = {s.shape[1]}", f"num_valid_az = {s.shape[0]}",
             "num_patches = 1", f"PRF = {prf}"]
    if shift:
        lines += ["rshift = 0", "ashift = 0"]
    (folder / f"{name}.PRM").write_text("\n".join(lines) + "\n")
    return iq[..., 0] + 1j * iq[..., 1]


def gmtsar_reference(m, a, nx, ny, xs, ys, ri=2, interp=16, zero_is_data=False):
    """GMTSAR xcorr's algorithm in float64 (numpy), with the documented fixes
    (float NCC, zero outside the surface, centred interpolation window).
    The patch grid comes from the master's size; each file is read with its
    own size.  Samples outside their file, and 0+0i samples unless
    zero_is_data, are invalid and count as 0; a patch with fewer than 90 %
    valid samples in either file, a flat aligned patch or an NCC of exactly
    0 is marked (x 0 y 0 0)."""
    H, W = m.shape
    npx, npy, nxc, nyc = 4 * xs, 4 * ys, 2 * xs, 2 * ys
    x_inc = (W - 2 * (xs + nxc)) // (nx + 3)
    y_inc = (H - 2 * (ys + nyc)) // (ny + 1)
    out = []

    def rinterp(p):
        if ri == 1:
            return p
        F = np.fft.fft(p, axis=1)
        n = npx
        G = np.zeros((npy, ri * n), complex)
        h = n // 2
        G[:, :h] = F[:, :h]
        G[:, -h + 1:] = F[:, h + 1:]
        G[:, h] = 0.5 * F[:, h]
        G[:, ri * n - h] = 0.5 * F[:, h]
        q = np.fft.ifft(G, axis=1) * ri
        s0 = (ri - 1) * npx // 2
        return q[:, s0:s0 + npx]

    def patch(img, x, y):
        """npy x npx patch centred at (x, y), invalid samples 0, and their mask"""
        h, w = img.shape
        p = np.zeros((npy, npx), complex)
        ok = np.zeros((npy, npx), bool)
        y0, x0 = y - npy // 2, x - npx // 2
        ya, yb, xa, xb = max(y0, 0), min(y0 + npy, h), max(x0, 0), min(x0 + npx, w)
        if ya < yb and xa < xb:
            p[ya - y0:yb - y0, xa - x0:xb - x0] = img[ya:yb, xa:xb]
            ok[ya - y0:yb - y0, xa - x0:xb - x0] = True
        if not zero_is_data:
            ok &= p != 0
        return np.where(ok, p, 0), ok

    need = np.float32(0.9) * np.float32(npx * npy)  # as the device compares

    for j in range(1, ny + 1):
        y = npy + j * y_inc
        for i in range(2, nx + 2):
            x = npx + i * x_inc
            pm, okm = patch(m, x, y)
            pa, oka = patch(a, x, y)
            amp = np.abs(pa[oka])
            if okm.sum() < need or oka.sum() < need or not amp.max() > amp.min():
                out.append((x, 0.0, y, 0.0, 0.0))
                continue
            am = np.abs(rinterp(pm))
            aa = np.abs(rinterp(pa))
            am -= am.mean()
            aa -= aa.mean()
            t = aa[ys:ys + nyc, xs:xs + nxc]
            # c[k, l] = sum t[u, v] am[u + k, v + l], lags [0, 2 search)
            c = np.empty((nyc, nxc))
            for k in range(nyc):
                for l in range(nxc):
                    c[k, l] = np.sum(t * am[k:k + nyc, l:l + nxc])
            ac = np.abs(c)
            py, px = np.unravel_index(np.argmax(ac), ac.shape)
            b = am[py:py + nyc, px:px + nxc]
            tt, bb = np.sum(t * t), np.sum(b * b)
            ncc = 100 * abs(np.sum(t * b)) / math.sqrt(tt * bb) if tt > 0 and bb > 0 else 0.0
            if ncc == 0:
                out.append((x, 0.0, y, 0.0, 0.0))
                continue
            # 8 x 8 of |c|^(1/4) from peak - 4, zero outside; band-limited x interp
            blk = np.zeros((8, 8))
            for u in range(8):
                for v in range(8):
                    yy, xx = py - 4 + u, px - 4 + v
                    if 0 <= yy < nyc and 0 <= xx < nxc:
                        blk[u, v] = ac[yy, xx] ** 0.25
            Fb = np.fft.fft2(blk)
            N = 8 * interp
            G = np.zeros((N, N), complex)
            for ky in range(8):
                for kx in range(8):
                    ty = [ky] if ky < 4 else ([ky - 8 + N] if ky > 4 else [4, N - 4])
                    tx = [kx] if kx < 4 else ([kx - 8 + N] if kx > 4 else [4, N - 4])
                    wgt = (0.5 if ky == 4 else 1) * (0.5 if kx == 4 else 1)
                    for a_ in ty:
                        for b_ in tx:
                            G[a_, b_] += wgt * Fb[ky, kx]
            up = np.real(np.fft.ifft2(G))
            my, mx = np.unravel_index(np.argmax(up), up.shape)
            ly = py - 4 + my / interp
            lx = px - 4 + mx / interp
            out.append((x, -(lx - xs) / ri, y, -(ly - ys), ncc))
    return np.array(out)


@pytest.fixture(scope="module")
def gmtsar_pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("gmtsar")
    s1, s2 = speckle_pair(512, 640, 3.3, -2.6, 0.8)
    m = write_slc(d, "master", s1)
    a = write_slc(d, "aligned", s2, prf=1000.0)
    return d, m, a


def read_dat(path):
    return np.loadtxt(path, ndmin=2)


def test_gmtsar_mode_against_reference(gmtsar_pair, device):
    d, m, a = gmtsar_pair
    out = d / f"freq_{device}.dat"
    run(["-mode", "gmtsar", d / "master.PRM", d / "aligned.PRM", "-nx", 4, "-ny", 4,
         "-xsearch", 16, "-ysearch", 16, "-device", device, "-o", out, "-q"])
    got = read_dat(out)
    ref = gmtsar_reference(m, a, 4, 4, 16, 16)
    assert got.shape == ref.shape == (16, 5)
    np.testing.assert_array_equal(got[:, 0], ref[:, 0])
    np.testing.assert_array_equal(got[:, 2], ref[:, 2])
    # printed precision: 3 decimals for offsets (one interpolated grid step
    # 1/(16 ri) px allowed for a float/double argmax tie), 2 for corr
    assert np.abs(got[:, 1] - ref[:, 1]).max() <= 1 / 32 + 1e-3
    assert np.abs(got[:, 3] - ref[:, 3]).max() <= 1 / 16 + 1e-3
    assert np.abs(got[:, 4] - ref[:, 4]).max() <= 0.02
    # and the truth (3.3, -2.6) within GMTSAR's accuracy
    assert abs(np.median(got[:, 1]) - 3.3) < 0.1 and abs(np.median(got[:, 3]) + 2.6) < 0.15


def test_gmtsar_nan_no_abort(tmp_path):
    s1, s2 = speckle_pair(512, 640, 1.0, 1.0, 0.8)
    write_slc(tmp_path, "master", s1)
    write_slc(tmp_path, "aligned", s2)
    # a float NaN cannot be in int16 data: GMTSAR's abort (B3) is for float
    # input; the int16 path's equivalent is a truncated/short read, tested
    # below.  Here: a shift pushing patches off the file (B2) -> corr 0, no abort.
    prm = (tmp_path / "aligned.PRM").read_text().replace("ashift = 0", "ashift = 200")
    (tmp_path / "aligned.PRM").write_text(prm)
    run(["-mode", "gmtsar", tmp_path / "master.PRM", tmp_path / "aligned.PRM", "-nx", 4, "-ny", 4,
         "-xsearch", 16, "-ysearch", 16, "-device", "cpu", "-o", tmp_path / "f.dat", "-q"])
    got = read_dat(tmp_path / "f.dat")
    assert got.shape == (16, 5)
    assert (got[:, 4] == 0).sum() >= 4  # the last rows run off the file


GM_OPTS = ["-nx", 4, "-ny", 4, "-xsearch", 16, "-ysearch", 16, "-q"]


def run_gmtsar(folder, master, aligned, device, out, *extra):
    run(["-mode", "gmtsar", folder / f"{master}.PRM", folder / f"{aligned}.PRM", *GM_OPTS,
         "-device", device, "-o", out, *extra])
    return read_dat(out)


def assert_rows_match(got, ref, ri=2):
    """positions exact; the reference's marked patches (corr 0) exactly
    marked; the others within one interpolated grid step, corr within 0.02"""
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got[:, 0], ref[:, 0])
    np.testing.assert_array_equal(got[:, 2], ref[:, 2])
    marked = ref[:, 4] == 0
    np.testing.assert_array_equal(got[marked][:, [1, 3, 4]], 0)
    ok = ~marked
    assert np.abs(got[ok, 1] - ref[ok, 1]).max() <= 1 / (16 * ri) + 1e-3
    assert np.abs(got[ok, 3] - ref[ok, 3]).max() <= 1 / 16 + 1e-3
    assert np.abs(got[ok, 4] - ref[ok, 4]).max() <= 0.02
    return marked


@pytest.fixture(scope="module")
def sized_pair(tmp_path_factory):
    """a 600 x 700 speckle pair (shift 3.3, -2.6) to cut pairs of different sizes from"""
    d = tmp_path_factory.mktemp("gmtsar_sizes")
    s1, s2 = speckle_pair(600, 700, 3.3, -2.6, 0.8, seed=7)
    return d, s1, s2


# master (w, h), aligned (w, h), patches past the shorter file (marked).
# The 512 x 640 master's grid (-nx 4 -ny 4, search 16: 64 x 64 patches):
# centres x 182 241 300 359, y 172 280 388 496.
SIZE_CASES = {
    "aligned_shorter": ((512, 640), (512, 500), 4),  # last row (lines 464..527): 36 inside
    "aligned_longer": ((512, 640), (512, 700), 0),
    "master_shorter": ((512, 560), (512, 640), 0),
    "aligned_narrower": ((512, 640), (360, 640), 4),  # last column (327..390): 33 inside
    "aligned_wider": ((512, 640), (600, 640), 0),
}


@pytest.mark.parametrize("case", sorted(SIZE_CASES))
def test_gmtsar_different_sizes(sized_pair, case, device):
    """GMTSAR reads each PRM's own num_rng_bins / num_valid_az: pairs of
    different sizes run, the patch grid is the master's, patches past the
    shorter (narrower) file are marked, the rest match the float64 reference."""
    d, s1, s2 = sized_pair
    (mw, mh), (aw, ah), n_marked = SIZE_CASES[case]
    m = write_slc(d, f"m_{case}", s1[:mh, :mw])
    a = write_slc(d, f"a_{case}", s2[:ah, :aw])
    got = run_gmtsar(d, f"m_{case}", f"a_{case}", device, d / f"{case}_{device}.dat")
    ref = gmtsar_reference(m, a, 4, 4, 16, 16)
    marked = assert_rows_match(got, ref)
    assert marked.sum() == n_marked
    if case in ("aligned_longer", "aligned_wider"):
        # lines and columns past the master's size are never read: the
        # equal-size pair's rows exactly
        write_slc(d, f"a_eq_{case}", s2[:mh, :mw])
        eq = run_gmtsar(d, f"m_{case}", f"a_eq_{case}", device, d / f"{case}_eq_{device}.dat")
        np.testing.assert_array_equal(got, eq)


def zero_filled(s, cols=170, lines=520):
    z = s.copy()
    z[:, :cols] = 0
    z[lines:] = 0
    return z


def fill_fraction(shape, xs, nx, ny, cols=170, lines=520):
    """fraction of each patch (the master's grid, azimuth-major) in the fill"""
    H, W = shape
    npx = 4 * xs
    x_inc = (W - 6 * xs) // (nx + 3)
    y_inc = (H - 6 * xs) // (ny + 1)
    fill = np.zeros(shape, bool)
    fill[:, :cols] = True
    fill[lines:] = True
    out = []
    for j in range(1, ny + 1):
        for i in range(2, nx + 2):
            x, y = npx + i * x_inc, npx + j * y_inc
            out.append(fill[y - npx // 2:y + npx // 2, x - npx // 2:x + npx // 2].mean())
    return np.array(out)


def test_gmtsar_zero_fill(gmtsar_pair, device, tmp_path):
    """zero-filled borders: patches more than 10 % fill are marked (corr 0,
    offsets 0), patches clear of it unchanged; -zero_is_data gives GMTSAR's
    behaviour (fill is data, those patches correlated)"""
    d, m, a = gmtsar_pair
    mz = write_slc(tmp_path, "mz", zero_filled(m))
    az = write_slc(tmp_path, "az", zero_filled(a))
    frac = fill_fraction(m.shape, 16, 4, 4)
    over, clear = frac > 0.1, frac == 0
    assert over.sum() >= 7 and clear.sum() >= 4  # the last row and first column
    got = run_gmtsar(tmp_path, "mz", "az", device, tmp_path / "z.dat")
    marked = assert_rows_match(got, gmtsar_reference(mz, az, 4, 4, 16, 16))
    np.testing.assert_array_equal(marked, over)
    plain = run_gmtsar(d, "master", "aligned", device, tmp_path / "plain.dat")
    np.testing.assert_array_equal(got[clear], plain[clear])
    gz = run_gmtsar(tmp_path, "mz", "az", device, tmp_path / "zd.dat", "-zero_is_data")
    assert_rows_match(gz, gmtsar_reference(mz, az, 4, 4, 16, 16, zero_is_data=True))
    assert (gz[over, 4] > 0).any()  # GMTSAR's way: the fill is correlated
    np.testing.assert_array_equal(gz[clear], plain[clear])


def test_gmtsar_all_zero_master_patch(gmtsar_pair, device, tmp_path):
    """an all-zero master patch gives corr 0 and the integer zero-lag offset
    (0 0 here: no rshift/ashift), also with -zero_is_data where the zeros are
    data and its correlation surface is all 0"""
    d, m, a = gmtsar_pair
    # the patch at (x 300, y 280) spans 268..331 x 248..311 (neighbours
    # overlap it by 5 samples)
    mz = m.copy()
    y0, y1, x0, x1 = 244, 316, 264, 336
    mz[y0:y1, x0:x1] = 0
    mz = write_slc(tmp_path, "mz", mz)
    write_slc(tmp_path, "a", a)
    plain = run_gmtsar(d, "master", "aligned", device, tmp_path / "plain.dat")
    for extra in ((), ("-zero_is_data",)):
        got = run_gmtsar(tmp_path, "mz", "a", device, tmp_path / "z.dat", *extra)
        k = np.flatnonzero((got[:, 0] == 300) & (got[:, 2] == 280))
        assert len(k) == 1
        np.testing.assert_array_equal(got[k[0], [1, 3, 4]], 0)
        assert_rows_match(got, gmtsar_reference(mz, a, 4, 4, 16, 16, zero_is_data=bool(extra)))
        # patches that do not reach the block: unchanged
        clear = ((got[:, 0] + 32 <= x0) | (got[:, 0] - 32 >= x1) |
                 (got[:, 2] + 32 <= y0) | (got[:, 2] - 32 >= y1))
        assert clear.sum() >= 8
        np.testing.assert_array_equal(got[clear], plain[clear])


def test_gmtsar_cpu_opencl_agree(sized_pair, gmtsar_pair, tmp_path):
    """the CPU and OpenCL backends give the same marks and offsets within one
    interpolation step on pairs of different sizes and zero-filled ones"""
    if OPENCL_ABSENT is not None:
        pytest.skip(OPENCL_ABSENT)
    d, s1, s2 = sized_pair
    write_slc(tmp_path, "m", s1[:640, :512])
    write_slc(tmp_path, "a", s2[:500, :360])  # shorter and narrower
    _, m, a = gmtsar_pair
    write_slc(tmp_path, "mz", zero_filled(m))
    write_slc(tmp_path, "az", zero_filled(a))
    for mm, aa, extra in (("m", "a", ()), ("mz", "az", ()), ("mz", "az", ("-zero_is_data",))):
        c = run_gmtsar(tmp_path, mm, aa, "cpu", tmp_path / "c.dat", *extra)
        o = run_gmtsar(tmp_path, mm, aa, "opencl", tmp_path / "o.dat", *extra)
        np.testing.assert_array_equal(c[:, [0, 2]], o[:, [0, 2]])
        np.testing.assert_array_equal(c[:, 4] == 0, o[:, 4] == 0)
        assert np.abs(c[:, [1, 3]] - o[:, [1, 3]]).max() <= 1 / 16 + 1e-3


def test_gmtsar_options_described_once(tmp_path, gmtsar_pair):
    """-mode gmtsar's option table drives its parser, --help and --describe:
    every described flag is listed by --help and taken by the parser with
    its default (giving the default's offsets), and out-of-range values are
    refused with the table's range."""
    import json
    d, m, a = gmtsar_pair
    desc = json.loads(run(["-mode", "gmtsar", "--describe"]).stdout)
    opts = {o["flag"]: o for o in desc["options"]}
    assert {"-nx", "-ny", "-xsearch", "-ysearch", "-range_interp", "-interp", "-norange",
            "-nointerp", "-noshift", "-zero_is_data", "-o"} <= set(opts)
    usage = run(["-mode", "gmtsar", "--help"]).stdout
    for flag in opts:
        assert flag in usage, flag
    base = ["-mode", "gmtsar", d / "master.PRM", d / "aligned.PRM", "-nx", 4, "-ny", 4,
            "-xsearch", 16, "-ysearch", 16, "-device", "cpu", "-q"]
    ref = tmp_path / "ref.dat"
    run(base + ["-o", ref])
    for flag in ("-range_interp", "-interp"):
        out = tmp_path / f"{flag[1:]}.dat"
        run(base + [flag, opts[flag]["default"], "-o", out])
        np.testing.assert_array_equal(read_dat(out), read_dat(ref))
        p = run(base + [flag, int(opts[flag]["max"]) + 1, "-o", out], ok=False)
        assert_fails(p, [f"from {int(opts[flag]['min'])} to {int(opts[flag]['max'])}"])
    out = tmp_path / "freq.dat"
    run(base + ["-freq", "-o", out])
    np.testing.assert_array_equal(read_dat(out), read_dat(ref))
    out = tmp_path / "norange.dat"
    run(base + ["-norange", "-o", out])
    np.testing.assert_array_equal(read_dat(out), read_dat(run_dat(base, tmp_path, "-range_interp", 1)))


def run_dat(base, folder, *extra):
    out = folder / ("x" + "_".join(str(e) for e in extra) + ".dat")
    run(base + list(extra) + ["-o", out])
    return out


# -------------------------------------------------------------- bad input

def assert_fails(p, words, outputs=()):
    assert p.returncode != 0
    err = p.stderr.strip().splitlines()
    assert err and "gdal_xcorr" in err[-1], p.stderr
    assert any(w in p.stderr for w in words), p.stderr
    for o in outputs:
        assert not Path(o).exists()


def test_bad_inputs(tmp_path, gmtsar_pair):
    d, m, a = gmtsar_pair
    drv = gdal.GetDriverByName("GTiff")
    for name, w, h, t in (("a.tif", 300, 300, gdal.GDT_CFloat32), ("b.tif", 300, 280, gdal.GDT_CFloat32),
                          ("r.tif", 300, 300, gdal.GDT_Float32), ("c.tif", 300, 300, gdal.GDT_CFloat32)):
        ds = drv.Create(str(tmp_path / name), w, h, 1, t)
        ds.GetRasterBand(1).WriteArray(np.random.default_rng(1).normal(size=(h, w)).astype(np.float32))
        ds = None
    out = tmp_path / "o.tif"
    p = run([tmp_path / "a.tif", tmp_path / "b.tif", out], ok=False)
    assert_fails(p, ["size", "differ", "same"], [out])
    p = run([tmp_path / "r.tif", tmp_path / "r.tif", out], ok=False)
    assert_fails(p, ["complex"], [out])
    p = run(["-window", "256", "256", "-search", "64", "64", tmp_path / "a.tif", tmp_path / "c.tif", out],
            ok=False)
    assert_fails(p, ["larger than"], [out])
    p = run(["-zoom", "6", tmp_path / "a.tif", tmp_path / "c.tif", out], ok=False)
    assert_fails(p, ["zoom"], [out])
    # GMTSAR mode
    (tmp_path / "noslc.PRM").write_text("num_rng_bins = 100\nnum_valid_az = 100\n")
    dat = tmp_path / "f.dat"
    p = run(["-mode", "gmtsar", tmp_path / "noslc.PRM", d / "aligned.PRM", "-o", dat], ok=False)
    assert_fails(p, ["SLC_file"], [dat])
    (tmp_path / "short.SLC").write_bytes(b"\0" * 1000)
    (tmp_path / "short.PRM").write_text("SLC_file = short.SLC\nnum_rng_bins = 512\nnum_valid_az = 640\n")
    p = run(["-mode", "gmtsar", d / "master.PRM", tmp_path / "short.PRM", "-o", dat], ok=False)
    assert_fails(p, ["truncated"], [dat])
    p = run(["-mode", "gmtsar", d / "master.PRM", d / "aligned.PRM", "-xsearch", 24, "-o", dat], ok=False)
    assert_fails(p, ["powers of 2"], [dat])
    p = run(["-mode", "gmtsar", d / "master.PRM", d / "aligned.PRM", "-xsearch", 512, "-o", dat],
            ok=False)
    assert_fails(p, ["do not fit"], [dat])


@pytest.mark.skipif(AMPCOR is None, reason="ampcor_whitenoise data absent")
def test_table_committed_with_the_raster(tmp_path):
    """-table is the raster's side output: when writing the table fails
    after the raster was written (GG_FAULT=write:N, N the first write point
    past the raster's), neither is renamed over the old files and no
    temporary is left; a table path that is a folder is refused before any
    work."""
    import os
    dst, table = tmp_path / "off.tif", tmp_path / "t.csv"
    dst.write_bytes(b"old raster")
    table.write_bytes(b"old table")
    args = [str(a) for a in GOLDEN_OPTS + ["-device", "cpu", "-q", AMPCOR / "img1_WN_512x512_1x1_128.vrt",
                                           AMPCOR / "img2_WN_512x512_1x1_128.vrt", dst, "-table", table]]
    for n in range(1, 64):  # the raster's writes (strips x bands) come first
        p = subprocess.run([str(BIN / "gdal_xcorr")] + args, capture_output=True, text=True,
                           env=dict(os.environ, GG_FAULT=f"write:{n}"))
        assert p.returncode != 0, p.stderr
        if "table" in p.stderr:
            break
    assert "t.csv" in p.stderr and "injected fault" in p.stderr, p.stderr
    assert dst.read_bytes() == b"old raster" and table.read_bytes() == b"old table"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["off.tif", "t.csv"]
    # without the fault both are replaced together
    p = subprocess.run([str(BIN / "gdal_xcorr")] + args, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert gdal.Open(str(dst)).RasterCount == 8 and table.read_text().startswith("x,y,")
    folder = tmp_path / "t2.csv"
    folder.mkdir()
    p = run(args[:-1] + [folder], ok=False)
    assert p.returncode != 0 and "not a regular file" in p.stderr, p.stderr
