"""geogpu.distributed: batches over a Dask cluster of several worker
*processes* on loopback (CPU backend; OpenCL on PoCL for the GPU-resource
path) give outputs identical, bit for bit, to the single-process run:

- a batch of synthetic RPC scenes through gdal_ortho (one task per scene)
  against `gdal_ortho -outdir` in one process, run in the workers' own
  processes on their kept contexts (gg_ortho_run, the default) and as child
  processes; the entry point called twice in one process on one context;
- PtSel tile by tile (halo r/2, each tile its own file, a VRT mosaic) against
  gdal_ptsel on the whole stack; coherence with looks against gdal_insar;
- pairs through gdal_insar on a plain distributed.LocalCluster reached by its
  address, against gdal_insar run pair by pair;
- a worker killed in the middle of a batch (a worker plugin kills its own
  process once, marker file) still completes it, identically;
- a re-run skips complete outputs (untouched files) and redoes exactly the
  changed or damaged ones; failures are retried, a bad scene is reported
  while the others complete; the command line does the same.
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")).resolve()
PKG = REPO / "gdal_plugins" / "python"
os.environ["GG_LIBRARY"] = str(BUILD / "lib")  # the build under test, in workers too
sys.path.insert(0, str(PKG))

from geogpu import distributed as gd  # noqa: E402

N_WORKERS = 3

# ------------------------------------------------------------------ data


def smooth(rng, shape, sigma):
    """Smooth random field (Gaussian low-pass of white noise), unit max."""
    n = rng.standard_normal(shape)
    fy = np.fft.fftfreq(shape[0])[:, None]
    fx = np.fft.fftfreq(shape[1])[None, :]
    f = np.real(np.fft.ifft2(np.fft.fft2(n) * np.exp(-2 * (np.pi * sigma) ** 2 * (fx ** 2 + fy ** 2))))
    return f / np.abs(f).max()


def rpc(w, h, lat0, lon0, k):
    """An RPC00B with parallax, rotation and a few non-linear terms."""
    ln, ld, sn, sd = (np.zeros(20) for _ in range(4))
    ln[[1, 2, 3, 7, 8]] = [0.03 + 0.002 * k, -1.0, 0.04, 0.002, -0.001]
    ld[[0, 1]] = [1.0, 0.0005]
    sn[[1, 2, 3, 8]] = [1.0, 0.02 - 0.003 * k, -0.05, 0.001]
    sd[[0, 2]] = [1.0, -0.0004]
    f = lambda a: " ".join(f"{v:.17g}" for v in a)  # noqa: E731
    return {"LINE_OFF": f"{h / 2}", "SAMP_OFF": f"{w / 2}", "LAT_OFF": f"{lat0}",
            "LONG_OFF": f"{lon0}", "HEIGHT_OFF": "1500", "LINE_SCALE": f"{h / 2}",
            "SAMP_SCALE": f"{w / 2}", "LAT_SCALE": "0.004", "LONG_SCALE": "0.006",
            "HEIGHT_SCALE": "1000", "LINE_NUM_COEFF": f(ln), "LINE_DEN_COEFF": f(ld),
            "SAMP_NUM_COEFF": f(sn), "SAMP_DEN_COEFF": f(sd)}


def write_scene(path, rng, w, h, md):
    img = np.round(2000 + 500 * smooth(rng, (h, w), 3) + 80 * smooth(rng, (h, w), 0.8))
    ds = gdal.GetDriverByName("GTiff").Create(str(path), w, h, 1, gdal.GDT_UInt16)
    if md is not None:
        ds.SetMetadata(md, "RPC")
    ds.GetRasterBand(1).WriteArray(img.astype(np.uint16))
    ds = None
    return path


def write_dem(path, rng):
    """Rough terrain, 1000-2000 m, on a 1-arc-second EPSG:4326 grid."""
    res = 1 / 3600
    nx, ny = 400, 320
    z = 1500 + 500 * smooth(rng, (ny, nx), 10) + 120 * smooth(rng, (ny, nx), 2)
    ds = gdal.GetDriverByName("GTiff").Create(str(path), nx, ny, 1, gdal.GDT_Float32)
    ds.SetGeoTransform((6.05, res, 0, 45.25, 0, -res))
    s = osr.SpatialReference()
    s.ImportFromEPSG(4326)
    ds.SetProjection(s.ExportToWkt())
    ds.GetRasterBand(1).WriteArray(z.astype(np.float32))
    ds = None
    return path


def write_stack(path, rng, n, H, W, gt=(500000.0, 10.0, 0.0, 4000000.0, 0.0, -10.0)):
    """n single-reference interferograms: a few coherent scatterers over
    random phase, NaN and zero samples, so tau_max is neither trivial nor
    constant."""
    ds = gdal.GetDriverByName("GTiff").Create(str(path), W, H, n, gdal.GDT_CFloat32)
    ds.SetGeoTransform(gt)
    s = osr.SpatialReference()
    s.ImportFromEPSG(32615)
    ds.SetProjection(s.ExportToWkt())
    ps = rng.random((H, W)) < 0.05
    base = rng.uniform(-np.pi, np.pi, (H, W))
    for b in range(n):
        phase = np.where(ps, base + 0.2 * rng.standard_normal((H, W)),
                         rng.uniform(-np.pi, np.pi, (H, W)))
        z = (rng.uniform(0.5, 3.0, (H, W)) * np.exp(1j * phase)).astype(np.complex64)
        z[rng.random((H, W)) < 0.02] = np.nan
        z[rng.random((H, W)) < 0.01] = 0
        ds.GetRasterBand(b + 1).WriteArray(z)
    ds = None
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("dist")
    rng = np.random.default_rng(20261121)
    scenes = []
    for k in range(8):
        lat0 = 45.195 + 0.0035 * (k % 4)
        lon0 = 6.095 + 0.01 * (k // 4)
        w, h = 200 + 8 * k, 180 + 4 * k
        scenes.append(write_scene(d / f"scene_{k:02d}.tif", rng, w, h, rpc(w, h, lat0, lon0, k)))
    dem = write_dem(d / "dem.tif", rng)
    stack = write_stack(d / "stack.tif", rng, 10, 130, 150)
    slcs = []
    z = rng.standard_normal((96, 110)) + 1j * rng.standard_normal((96, 110))
    for k in range(4):  # each SLC partly the previous one: coherence varies
        z = 0.7 * z + 0.5 * smooth(rng, (96, 110), 4) * (
            rng.standard_normal((96, 110)) + 1j * rng.standard_normal((96, 110)))
        p = d / f"slc_{k}.tif"
        ds = gdal.GetDriverByName("GTiff").Create(str(p), 110, 96, 1, gdal.GDT_CFloat32)
        ds.SetGeoTransform((300000.0, 5.0, 0.0, 5000000.0, 0.0, -5.0))
        ds.GetRasterBand(1).WriteArray(z.astype(np.complex64))
        ds = None
        slcs.append(p)
    return {"dir": d, "scenes": scenes, "dem": dem, "stack": stack, "slcs": slcs,
            "ortho_args": ["-dem", str(dem), "-t_srs", "EPSG:32632", "-r", "bilinear"]}


def _cluster(tmp_path_factory, name):
    """geogpu's own cluster: N_WORKERS CPU worker processes on loopback."""
    oc = gd.open_client(n_workers=N_WORKERS, threads=1,
                        local_directory=tmp_path_factory.mktemp(name))
    try:
        yield oc.client
    finally:
        oc.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """The module's cluster, shared by its tests."""
    yield from _cluster(tmp_path_factory, "dask-scratch")


@pytest.fixture
def victim_client(tmp_path_factory):
    """A cluster of its own for a test that kills a worker.  A killed worker
    can leave a cluster one worker short for good: when the client asks
    for a result that died with its worker, this Dask's scheduler shuts the
    worker's replacement down too ("Shut down workers that don't have
    promised key"; CI saw it once under load, and the next kill test on
    that cluster failed with it).  So the tests that kill do it on a
    throwaway cluster, and the shared one stays whole."""
    yield from _cluster(tmp_path_factory, "dask-victim")


@pytest.fixture(scope="module")
def ortho_ref(gg, data):
    """The single-process run: gdal_ortho -outdir over every scene."""
    ref = data["dir"] / "ortho_ref"
    ref.mkdir()
    gg.run("gdal_ortho", "-q", "-device", "cpu", *data["ortho_args"], "-outdir", ref,
           *data["scenes"])
    return ref


@pytest.fixture(scope="module")
def ptsel_ref(gg, data):
    ref = data["dir"] / "ptsel_ref"
    ref.mkdir()
    gg.run("gdal_ptsel", "-q", "-device", "cpu", "-window", 7, "-conj", "2,5", "-mask", "-offsets",
           data["stack"], ref / "ps.tif")
    return ref


# ----------------------------------------------------------------- helpers

def raster(path):
    """Everything a comparison needs: per band (pixels bytes, dtype, nodata,
    description), geotransform, CRS, size."""
    ds = gdal.Open(str(path))
    bands = []
    for b in range(1, ds.RasterCount + 1):
        band = ds.GetRasterBand(b)
        a = band.ReadAsArray()
        nd = band.GetNoDataValue()
        bands.append((a.tobytes(), a.dtype.str, "nan" if nd is not None and np.isnan(nd) else nd,
                      band.GetDescription()))
    srs = ds.GetSpatialRef()
    out = {"size": (ds.RasterXSize, ds.RasterYSize), "bands": bands, "gt": ds.GetGeoTransform(),
           "srs": srs.ExportToWkt() if srs else ""}
    ds = None
    return out


def assert_same_raster(ours, ref, what):
    a, b = raster(ours), raster(ref)
    assert a["size"] == b["size"], f"{what}: size {a['size']} vs {b['size']}"
    assert len(a["bands"]) == len(b["bands"]), f"{what}: band count"
    for k, (x, y) in enumerate(zip(a["bands"], b["bands"]), 1):
        assert x[1:] == y[1:], f"{what} band {k}: (dtype, nodata, name) {x[1:]} vs {y[1:]}"
        assert x[0] == y[0], f"{what} band {k}: pixels differ"
    assert np.allclose(a["gt"], b["gt"], rtol=1e-15, atol=1e-9), f"{what}: gt {a['gt']} vs {b['gt']}"
    assert a["srs"] == b["srs"], f"{what}: CRS differs"


def assert_not_trivial(path, band=1):
    ds = gdal.Open(str(path))  # kept referenced while its band is read (GDAL 3.6)
    a = ds.GetRasterBand(band).ReadAsArray().astype(np.float64)
    ds = None
    valid = np.isfinite(a) & (a != 0)
    assert valid.mean() > 0.3, f"{path}: mostly empty"
    assert np.std(a[valid]) > 0, f"{path}: constant"


def leftovers(folder):
    """Task folders or temporaries left in a batch's output folder."""
    folder = Path(folder)
    state = folder / gd.STATE_DIR
    out = [p.name for p in state.glob("tmp-*")] if state.is_dir() else []
    return out + [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != gd.STATE_DIR]


def snapshot(folder, pattern="*.tif"):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(Path(folder).glob(pattern))}


class KillOnce(distributed.WorkerPlugin):
    """SIGKILLs the worker process that starts executing a task whose key
    contains ``match``, ``delay`` seconds into it (as the OOM killer or a
    crash would), once (marker file holding the victim's pid)."""

    def __init__(self, marker, match, delay=0.05):
        self.marker, self.match, self.delay = str(marker), match, delay

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing" or self.match not in str(key):
            return
        try:  # the first worker to get here is the only victim
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        self.fire(fd, key)

    def fire(self, fd, key):
        os.write(fd, f"{os.getpid()} {key}\n".encode())
        os.close(fd)
        threading.Timer(self.delay, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()


def worker_addresses(client):
    return set(client.scheduler_info()["workers"])


def kill_once(client, marker, match, delay=0.05):
    client.register_worker_plugin(KillOnce(marker, match, delay), name=f"kill-{match}")


def assert_killed(client, marker):
    """The plugin fired, and its victim is gone (replaced by a new worker)."""
    assert marker.exists(), "no worker was killed"
    victim = int(marker.read_text().split()[0])
    assert victim not in client.run(os.getpid).values()


# ------------------------------------------------------------- the cluster

def test_worker_specs(monkeypatch):
    """One worker per GPU with only its GPU visible (cuda:0 inside), a GPU
    resource and a fair share of host threads; CPU workers without it."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    specs = gd.worker_specs(["cuda:1", "cuda:3"], threads=4)
    assert [s.name for s in specs] == ["gpu1", "gpu3"]
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["1", "3"]
    assert all(s.env["GG_DEVICE"] == "cuda:0" and s.resources == {"GPU": 1} for s in specs)
    assert all(s.env["OMP_NUM_THREADS"] == "4" for s in specs)
    # indices are relative to the caller's own CUDA_VISIBLE_DEVICES
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert gd.worker_specs("cuda:1")[0].env["CUDA_VISIBLE_DEVICES"] == "6"
    cpu = gd.worker_specs(n_workers=3) if not gd.cuda_devices() else gd.worker_specs(["cpu"] * 3)
    assert [s.env["GG_DEVICE"] for s in cpu] == ["cpu"] * 3 and all(not s.resources for s in cpu)
    # a GPU listed twice: two workers on it (reading overlaps computing)
    two = gd.worker_specs(["cuda:0", "cuda:0"])
    assert [s.name for s in two] == ["gpu0", "gpu0-1"]
    assert {s.env["CUDA_VISIBLE_DEVICES"] for s in two} == {"4"}  # our cuda:0 is physical 4
    with pytest.raises(Exception, match="bogus"):
        gd.worker_specs(["bogus:1"])


def test_worker_specs_pinned():
    """pin=True: each worker its own contiguous share of our processors,
    the shares disjoint and covering them all."""
    mine = sorted(os.sched_getaffinity(0))
    specs = gd.worker_specs(["cpu"] * 2, pin=True)
    if len(mine) < 2:
        assert all("GG_DIST_CPUS" not in s.env for s in specs)
        return
    sets = [[int(c) for c in s.env["GG_DIST_CPUS"].split(",")] for s in specs]
    assert sets[0] + sets[1] == mine and len(sets[0]) == len(mine) // 2
    assert all("GG_DIST_CPUS" not in s.env for s in gd.worker_specs(["cpu"] * 2))


def test_worker_specs_pinned_shares():
    """pin=K: K shares whatever the number of workers, so one worker runs
    on what each of K would get; fewer shares than workers is refused."""
    mine = sorted(os.sched_getaffinity(0))
    with pytest.raises(ValueError, match="fewer processor shares than the 2 workers"):
        gd.worker_specs(["cpu"] * 2, pin=1)
    one = gd.worker_specs(["cpu"], pin=2)
    if len(mine) < 2:
        assert "GG_DIST_CPUS" not in one[0].env
        return
    assert [int(c) for c in one[0].env["GG_DIST_CPUS"].split(",")] == mine[:len(mine) // 2]
    # True is one share a worker, not the integer 1
    assert len(gd.worker_specs(["cpu"] * 2, pin=True)) == 2


def test_cluster_workers(client):
    ws = gd.workers(client)
    assert len(ws) == N_WORKERS
    assert sorted(name for name, _, _ in ws.values()) == [f"cpu{i}" for i in range(N_WORKERS)]
    assert {dev for _, dev, _ in ws.values()} == {"cpu"}
    # each worker is its own process, with its own environment
    pids = client.run(os.getpid)
    assert len(set(pids.values())) == N_WORKERS and os.getpid() not in pids.values()
    assert set(client.run(lambda: os.environ["GG_DEVICE"]).values()) == {"cpu"}
    # not Dask's MALLOC_TRIM_THRESHOLD_ (every large malloc an mmap, faulted
    # afresh each time, in the worker and the utilities it starts)
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        trims = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        assert set(trims.values()) == {None}


class _CudaLabelled:
    """A CPU context that says it is CUDA: the choice between page-locked
    and mapped buffers, without a GPU (its host buffers are the CPU
    backend's real ones)."""
    backend = "cuda"

    def __init__(self):
        from geogpu.device import Context
        self.ctx = Context("cpu")

    def host_buffer(self, n):
        return self.ctx.host_buffer(n)


def test_pinned_buffer_choice():
    """pin asks for a page-locked buffer on a CUDA context only; one a
    worker holds is used by later tasks that did not ask; a mapped one is
    replaced when a task asks for page-locked memory."""
    import mmap
    from geogpu.device import Context
    cuda, cpu = _CudaLabelled(), Context("cpu")

    def kind(slot):
        return "mapped" if isinstance(gd.reads._local.buffers[slot], mmap.mmap) else "pinned"

    gd.reads._buffer("pin-a", (10, 10), "float32", ctx=cpu, pin=True)
    assert kind("pin-a") == "mapped"  # not CUDA: never page-locked
    a = gd.reads._buffer("pin-b", (10, 10), "float32", ctx=cuda)
    assert kind("pin-b") == "mapped"  # not asked
    b = gd.reads._buffer("pin-b", (10, 10), "float32", ctx=cuda, pin=True)
    assert kind("pin-b") == "pinned" and b.ctypes.data != a.ctypes.data
    c = gd.reads._buffer("pin-b", (20, 10), "float32", ctx=cuda)  # kept though not asked
    assert kind("pin-b") == "pinned" and c.ctypes.data == b.ctypes.data
    c[:] = 7
    assert (b == 7).all()
    d = gd.reads._buffer("pin-b", (20, 10), "float32", ctx=cuda, pin=True)  # asked again: kept
    assert kind("pin-b") == "pinned" and d.ctypes.data == b.ctypes.data
    for slot in ("pin-a", "pin-b"):
        gd.reads._local.buffers.pop(slot)


def test_reader_threads(monkeypatch):
    """A tile task's reader threads: half the worker's processors (its
    OpenMP threads, or those it may run on), 1 to 8; a task's first read
    all of them (1 to 16)."""
    mine = len(os.sched_getaffinity(0))
    for omp in ("1", "2", "12", "40"):
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
        cpus = min(int(omp), mine)
        assert gd.reads._readers() == max(1, min(8, cpus // 2)), omp
        assert gd.reads._readers(first=True) == max(1, min(16, cpus)), omp
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert gd.reads._readers() == max(1, min(8, mine // 2))


def test_reads_cut_among_kept_threads(tmp_path):
    """A window read in slices by a kept pool of threads (no threads started
    per read) is the window, for a file read as it lies and through GDAL,
    at every thread count; a slice that fails fails the read, after every
    other slice has ended."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((37, 23, 3)) + 1j * rng.standard_normal((37, 23, 3))).astype(
        np.complex64)
    path = tmp_path / "st.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(path), 23, 37, 3, gdal.GDT_CFloat32,
                                              options=["INTERLEAVE=PIXEL"])
    for b in range(3):
        ds.GetRasterBand(b + 1).WriteArray(a[:, :, b])
    ds = None
    layout = gd.reads._file_rows(path, True)
    assert layout is not None
    for readers in (1, 2, 5, 16):
        into = np.zeros((30, 11, 3), np.complex64)
        gd.reads._read_file_rows(str(path), layout, (4, 3, 11, 30), into, readers)
        assert np.array_equal(into, a[3:33, 4:15, :]), readers
        planes = gd.reads._read_window([str(path)], [3], True, (4, 3, 11, 30), readers=readers)
        assert np.array_equal(np.stack(planes, axis=-1), a[3:33, 4:15, :]), readers
    short = dict(layout, offset=layout["offset"] + 37 * layout["row"])  # past the end
    with pytest.raises(gd.TaskError, match="file ends"):
        gd.reads._read_file_rows(str(path), short, (0, 0, 23, 37),
                           np.zeros((37, 23, 3), np.complex64), 4)


def test_cleanup_removes_only_this_batchs_attempts(tmp_path):
    """The folders of this batch's attempts go; another name's (even one
    that starts with the same characters), markers and other files stay;
    a folder without a state folder is no error."""
    state = tmp_path / gd.STATE_DIR
    state.mkdir()
    for d in ("tmp-t_0001-aaaa", "tmp-t_0001-bbbb", "tmp-t_00010-cccc", "tmp-t_0002-dddd"):
        (state / d).mkdir()
        (state / d / "x.tif").write_bytes(b"partial")
    (state / "t_0001.done").write_text("{}")
    gd.markers._cleanup({str(tmp_path), str(tmp_path / "none")}, ["t_0001", "t_0003"])
    assert sorted(p.name for p in state.iterdir()) == ["t_0001.done", "tmp-t_00010-cccc",
                                                       "tmp-t_0002-dddd"]


def test_reused_buffers():
    """A slot's memory is reused while the request fits (reserve included),
    mapped anew when it does not; another thread has its own."""
    a = gd.reads._buffer("test", (10, 20), "float32")
    b = gd.reads._buffer("test", (5, 8), "float32")
    assert b.ctypes.data == a.ctypes.data and b.shape == (5, 8) and b.dtype == np.float32
    # mappings are whole 2 MiB huge pages: 3.2 MB does not fit the first
    c = gd.reads._buffer("test", (1000, 400), "complex64")
    assert c.ctypes.data != a.ctypes.data and c.shape == (1000, 400)
    c[:] = 1 + 2j  # writable, and a stays valid (its mapping lives on with it)
    a[:] = 3
    assert (a == 3).all() and (c == 1 + 2j).all()
    d = gd.reads._buffer("test-reserve", (2, 2), "float32", reserve=1_000_000)
    e = gd.reads._buffer("test-reserve", (1000, 900), "float32")  # 3.6 MB: within the reserve
    assert e.ctypes.data == d.ctypes.data
    g = gd.reads._buffer("test-grow", (2, 2), "float32")
    h = gd.reads._buffer("test-grow", (1000, 900), "float32")  # no reserve: mapped anew
    assert h.ctypes.data != g.ctypes.data
    other = []
    t = threading.Thread(target=lambda: other.append(gd.reads._buffer("test", (5, 8), "float32")))
    t.start()
    t.join()
    assert other[0].ctypes.data != c.ctypes.data


def test_read_window_threads(data):
    """A window read in row slices by several threads, each with its own
    GDAL handle, into the reused buffers, is GDAL's own single read bit for
    bit, whatever was read into the same buffers before (larger, smaller,
    two sources)."""
    stack = str(data["stack"])
    ds = gdal.Open(stack)
    n = ds.RasterCount
    windows = [(3, 5, 120, 100), (0, 0, 150, 130), (17, 40, 31, 9), (10, 20, 140, 110),
               (0, 129, 150, 1)]
    for readers in (1, 3, 8):
        for win in windows:
            ref = ds.ReadAsArray(*win, buf_type=gdal.GDT_CFloat32)
            planes = gd.reads._read_window([stack], [n], True, win, readers=readers,
                                     reserve=150 * 130 if readers == 3 else 0)
            assert len(planes) == n and planes[0].shape == (win[3], win[2])
            assert np.stack(planes).tobytes() == ref.tobytes(), (readers, win)
        # two sources: each its own buffer slot, bands in order
        two = gd.reads._read_window([stack, stack], [n, n], True, windows[0], readers=readers)
        ref = ds.ReadAsArray(*windows[0], buf_type=gdal.GDT_CFloat32)
        assert np.stack(two).tobytes() == np.concatenate([ref, ref]).tobytes()
    assert not np.all(np.isnan(ref)) and np.nanmax(np.abs(ref)) > 0


def test_file_rows_read_as_gdal_reads(data, tmp_path):
    """A pixel-interleaved, uncompressed GeoTIFF stack read as it lies in
    the file (_file_rows, _read_file_rows): every window, full width or
    not, by 1 to 8 threads, is GDAL's own read of it, bit for bit, in the
    (rows, columns, bands) layout."""
    stack = str(data["stack"])
    ds = gdal.Open(stack)
    n, W, H = ds.RasterCount, ds.RasterXSize, ds.RasterYSize
    layout = gd.reads._file_rows(stack, True)
    assert layout and layout["bands"] == n and layout["row"] == W * n * 8
    assert layout["offset"] == int(ds.GetRasterBand(1).GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF"))
    for readers in (1, 3, 8):
        for win in [(0, 0, W, H), (0, 7, W, 50), (3, 5, 120, 100), (17, 40, 31, 9),
                    (W - 1, H - 1, 1, 1)]:
            ref = ds.ReadAsArray(*win, buf_type=gdal.GDT_CFloat32)
            got = np.full((win[3], win[2], n), np.nan + 1j, np.complex64)
            gd.reads._read_file_rows(stack, layout, win, got, readers=readers)
            assert got.transpose(2, 0, 1).tobytes() == ref.tobytes(), (readers, win)
    assert np.nanmax(np.abs(ref)) > 0
    # a layout past the file's end (the file cut short since) is an error,
    # not zeros
    with pytest.raises(gd.TaskError, match="file ends at byte"):
        gd.reads._read_file_rows(stack, {**layout, "offset": os.path.getsize(stack) - layout["row"]},
                           (0, 0, W, 2), np.empty((2, W, n), np.complex64))


class _TiffStrips(ctypes.Structure):
    _fields_ = [("offsets", ctypes.POINTER(ctypes.c_uint64)),
                ("counts", ctypes.POINTER(ctypes.c_uint64)),
                ("n", ctypes.c_uint32), ("rows_per_strip", ctypes.c_uint32)]


def _strip_table(path):
    """gg_tiff_strips_read (geogpu_gdal.h) of a file: (offsets, rows per
    strip), or None where the reader says it is no strip TIFF."""
    from geogpu import _lib
    so = _lib.gdal_layer()[0]
    so.gg_tiff_strips_read.argtypes = [ctypes.c_int, ctypes.c_uint64,
                                       ctypes.POINTER(_TiffStrips), ctypes.c_char_p,
                                       ctypes.c_size_t]
    so.gg_tiff_strips_free.argtypes = [ctypes.POINTER(_TiffStrips)]
    table, why = _TiffStrips(), ctypes.create_string_buffer(160)
    fd = os.open(path, os.O_RDONLY)
    try:
        if so.gg_tiff_strips_read(fd, os.fstat(fd).st_size, ctypes.byref(table), why, 160):
            return None
        out = ([table.offsets[k] for k in range(table.n)], table.rows_per_strip)
        so.gg_tiff_strips_free(ctypes.byref(table))
        return out
    finally:
        os.close(fd)


@pytest.mark.parametrize("options", [[], ["BIGTIFF=YES"], ["ENDIANNESS=BIG"],
                                     ["BIGTIFF=YES", "ENDIANNESS=BIG"], ["BLOCKYSIZE=200"],
                                     ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=64"]])
def test_strip_offsets_are_gdals(data, tmp_path, options):
    """The strip offsets the GDAL layer reads from the TIFF's own first IFD
    (classic or BigTIFF, either byte order; one strip: the value inline) are
    GDAL's BLOCK_OFFSET_0_k, every one; a tiled TIFF has none, nor a
    non-TIFF.  The tile reads take a stack as it lies only in this
    machine's byte order, and read GDAL's pixels there."""
    path = tmp_path / "s.tif"
    gdal.Translate(str(path), str(data["stack"]), creationOptions=options)
    got = _strip_table(str(path))
    ds = gdal.Open(str(path))
    b = ds.GetRasterBand(1)
    if "TILED=YES" in options:
        assert got is None
        assert gd.reads._file_rows(str(path), True) is None
        return
    offsets, per_strip = got
    assert per_strip == (130 if "BLOCKYSIZE=200" in options else 1)  # GDAL writes min(200, H)
    if per_strip == 1:
        assert offsets == [int(b.GetMetadataItem(f"BLOCK_OFFSET_0_{k}", "TIFF"))
                           for k in range(130)]
    else:  # one strip in the file, which GDAL shows as blocks of one row
        assert b.GetBlockSize() == [150, 1] and offsets == [
            int(b.GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF"))]
    layout = gd.reads._file_rows(str(path), True)
    if "ENDIANNESS=BIG" in options:
        assert layout is None  # not this machine's byte order
    else:
        assert layout and layout["offset"] == offsets[0] and layout["bands"] == 10
        win = (3, 20, 100, 90)
        got = np.empty((90, 100, 10), np.complex64)
        gd.reads._read_file_rows(str(path), layout, win, got)
        assert got.transpose(2, 0, 1).tobytes() == ds.ReadAsArray(*win).tobytes()
    assert _strip_table(str(data["dem"])) is not None  # a one-band TIFF
    vrt = tmp_path / "s.vrt"
    gdal.Translate(str(vrt), str(path), format="VRT")
    assert _strip_table(str(vrt)) is None


@pytest.mark.parametrize("why, options, dtype", [
    ("band-interleaved", ["INTERLEAVE=BAND"], "CFloat32"),
    ("compressed", ["COMPRESS=DEFLATE"], "CFloat32"),
    ("tiled", ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=64"], "CFloat32"),
    ("big-endian", ["ENDIANNESS=BIG"], "CFloat32"),
    ("complex integers", [], "CInt16"),
    ("a VRT", None, "CFloat32"),
])
def test_file_rows_only_where_gdal_would_read_the_same(data, tmp_path, why, options, dtype):
    """Every layout whose bytes are not GDAL's CFloat32 pixels, row after
    row, is read through GDAL: _file_rows says None."""
    src = gdal.Open(str(data["stack"]))
    path = tmp_path / ("s.vrt" if options is None else "s.tif")
    if options is None:
        gdal.Translate(str(path), src, format="VRT")
    else:
        gdal.Translate(str(path), src, creationOptions=options,
                       outputType=gdal.GetDataTypeByName(dtype))
    assert gd.reads._file_rows(str(path), True) is None, why
    assert gd.reads._file_rows(str(data["stack"]), False) is None  # Float32 wanted, CFloat32 there


def band_interleaved(data, folder):
    """A band-interleaved copy of the PtSel stack: the same pixels, which
    the tile tasks cannot read as they lie, so they read them through
    GDAL."""
    path = Path(folder) / "band.tif"
    if not path.exists():
        gdal.Translate(str(path), str(data["stack"]), creationOptions=["INTERLEAVE=BAND"])
    return path


def test_tiled_ptsel_file_rows_and_gdal_reads_identical(client, data, ptsel_ref, tmp_path):
    """The tile tasks read the stack as it lies in the file and sort its
    bands on the device; a band-interleaved copy of the stack goes through
    GDAL.  Both mosaics are gdal_ptsel's output."""
    runs = {}
    for label, stack in [("rows", data["stack"]), ("band", band_interleaved(data, tmp_path))]:
        out = tmp_path / label
        out.mkdir()
        b = gd.tile_batch(client, "ptsel", [stack], out / "ps.vrt", tile=(64, 50), **PTSEL_OPTS)
        assert b.ok and len(b.done) == 3 * 3, b.failed
        runs[label] = {r.reader for r in b.done}
        for n in PTSEL_BANDS:
            assert_same_raster(out / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", f"{label} {n}")
    assert runs == {"rows": {"file rows"}, "band": {"gdal"}}


# ------------------------------------------------------------ scene batches

def test_ortho_batch_identical(client, data, ortho_ref):
    out = data["dir"] / "ortho_dist"
    out.mkdir()
    b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"])
    assert b.ok and len(b.done) == len(data["scenes"]), b.failed
    assert len({r.worker for r in b.done}) >= 2, "the batch did not spread over workers"
    assert {r.device for r in b.done} == {"cpu"}
    assert {r.runner for r in b.done} == {"in-process"}  # the default
    for s in data["scenes"]:
        name = s.stem + ".tif"
        assert_same_raster(out / name, ortho_ref / name, name)
        assert (out / name).read_bytes() == (ortho_ref / name).read_bytes(), f"{name}: file bytes"
    assert_not_trivial(out / "scene_03.tif")
    assert not leftovers(out)
    assert sorted(p.name for p in out.glob("*.tif")) == sorted(s.stem + ".tif" for s in data["scenes"])


def test_warp_batch_identical(client, data, tmp_path):
    """Scenes warped on the workers, in their processes (gg_warp_run on the
    context each keeps): each file gdal_warp's, bit for bit."""
    out = tmp_path / "warped"
    out.mkdir()
    args = ["-t_srs", "EPSG:4326", "-r", "cubic"]
    b = gd.warp_batch(client, data["slcs"], out, args)
    assert b.ok and len(b.done) == len(data["slcs"]), b.failed
    assert {r.runner for r in b.done} == {"in-process"}
    for s in data["slcs"]:
        ref = tmp_path / ("ref_" + s.stem + ".tif")
        subprocess.run([str(BUILD / "bin" / "gdal_warp"), "-q", "-device", "cpu", *args, str(s),
                        str(ref)], check=True)
        assert (out / (s.stem + ".tif")).read_bytes() == ref.read_bytes(), s.stem
    assert not leftovers(out)


def test_ortho_rerun_skips_complete(client, data, ortho_ref):
    out = data["dir"] / "ortho_rerun"
    out.mkdir()
    gd.ortho_batch(client, data["scenes"], out, data["ortho_args"]).raise_for_failures()
    before = snapshot(out)
    b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"])
    assert len(b.skipped) == len(data["scenes"]) and not b.done
    assert snapshot(out) == before, "a re-run touched complete outputs"
    # a damaged output and a changed input are redone, and only they
    (out / "scene_01.tif").write_bytes(b"truncated")
    os.utime(data["scenes"][5])  # same content, new mtime: counts as changed
    b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"])
    assert sorted(r.name for r in b.done) == ["scene_01.tif", "scene_05.tif"]
    assert len(b.skipped) == len(data["scenes"]) - 2
    for s in data["scenes"]:
        assert (out / (s.stem + ".tif")).read_bytes() == (ortho_ref / (s.stem + ".tif")).read_bytes()
    # other options are another product: everything is redone
    b = gd.ortho_batch(client, data["scenes"][:2], out, data["ortho_args"] + ["-r", "near"])
    assert len(b.done) == 2


class KillWhileWriting(KillOnce):
    """SIGKILLs the worker process executing a task whose key contains
    ``match`` once gdal_ortho is writing that scene's output (its temporary
    file has appeared in the task's folder), once (marker file: the victim's
    pid, the key, and whether the temporary file was seen).  In-process the
    kill lands inside the C call; as a subprocess, while the child writes."""

    def __init__(self, marker, match, outdir):
        super().__init__(marker, match)
        self.outdir = str(outdir)

    def fire(self, fd, key):
        def watch():
            import glob
            import time
            pattern = os.path.join(self.outdir, gd.STATE_DIR, f"tmp-{self.match}*", ".*tmp*")
            t0, seen = time.time(), False
            while not seen and time.time() - t0 < 30:
                seen = bool(glob.glob(pattern))
                time.sleep(0.001)
            os.write(fd, f"{os.getpid()} {key} {'writing' if seen else 'timeout'}\n".encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, daemon=True).start()


@pytest.fixture(scope="module")
def big_scene(gg, data):
    """A scene large enough that gdal_ortho writes it for a while (the
    worker is killed meanwhile), and gdal_ortho's own output of it."""
    d = data["dir"] / "big"
    d.mkdir()
    scene = write_scene(d / "big_scene.tif", np.random.default_rng(11), 1600, 1400,
                        rpc(1600, 1400, 45.2, 6.1, 1))
    gg.run("gdal_ortho", "-q", "-device", "cpu", *data["ortho_args"], scene, d / "ref.tif")
    return scene, d / "ref.tif"


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "subprocess"])
def test_ortho_worker_killed_mid_batch(victim_client, data, ortho_ref, big_scene, tmp_path,
                                       in_process):
    """A worker killed while gdal_ortho writes a scene (inside the worker's
    own process by default): the batch still completes, identically, and
    the dead attempt leaves nothing behind."""
    client = victim_client
    out = tmp_path / "ortho_killed"
    out.mkdir()
    marker = tmp_path / "killed"
    before = worker_addresses(client)
    big, big_ref = big_scene
    scenes = data["scenes"][:4] + [big] + data["scenes"][4:]
    client.register_worker_plugin(KillWhileWriting(marker, big.stem, out), name="kill-writing")
    b = gd.ortho_batch(client, scenes, out, data["ortho_args"], in_process=in_process)
    assert_killed(client, marker)
    assert marker.read_text().split()[2] == "writing", "killed before gdal_ortho wrote"
    # the killed scene is computed again; a scene the victim had finished
    # but whose result died with it is found complete (its marker): skipped
    assert b.ok and b.records[4].status == "done", b.failed
    assert {r.status for r in b.records} <= {"done", "skipped"}
    assert {r.runner for r in b.done} == {"in-process" if in_process else "subprocess"}
    assert worker_addresses(client) != before, "the killed worker was not replaced"
    for s in data["scenes"]:
        name = s.stem + ".tif"
        assert (out / name).read_bytes() == (ortho_ref / name).read_bytes(), name
    assert (out / big.name).read_bytes() == big_ref.read_bytes()
    assert_not_trivial(out / big.name)
    assert not leftovers(out)


def test_retries_and_failures(client, data, ortho_ref, tmp_path, gg):
    """A task that fails once succeeds on retry; without retries it is
    reported, and the rest of the batch still completes; a bad scene is
    reported with the utility's own message and leaves no output."""
    flaky = tmp_path / "flaky_ortho"
    flaky.write_text("#!/bin/sh\n"
                     f"if mkdir '{tmp_path}/failed_once' 2>/dev/null; then\n"
                     "  echo 'ERROR 1: injected failure' >&2; exit 1\nfi\n"
                     f"exec '{gg.build / 'bin' / 'gdal_ortho'}' \"$@\"\n")
    flaky.chmod(0o755)
    scenes = data["scenes"][:3]
    out = tmp_path / "retry"
    out.mkdir()
    b = gd.ortho_batch(client, scenes, out, data["ortho_args"], retries=1, program=str(flaky))
    assert b.ok and len(b.done) == 3 and (tmp_path / "failed_once").is_dir()
    for s in scenes:
        assert (out / (s.stem + ".tif")).read_bytes() == (ortho_ref / (s.stem + ".tif")).read_bytes()

    (tmp_path / "failed_once").rmdir()
    out0 = tmp_path / "noretry"
    out0.mkdir()
    b = gd.ortho_batch(client, scenes, out0, data["ortho_args"], retries=0, program=str(flaky))
    assert len(b.failed) == 1 and len(b.done) == 2
    assert "injected failure" in b.failed[0].error and "exit status 1" in b.failed[0].error
    with pytest.raises(gd.TaskError, match="1 of 3 tasks failed"):
        b.raise_for_failures()
    # the re-run computes only what is missing
    b = gd.ortho_batch(client, scenes, out0, data["ortho_args"], retries=0, program=str(flaky))
    assert len(b.done) == 1 and len(b.skipped) == 2 and b.ok

    bad = write_scene(tmp_path / "norpc.tif", np.random.default_rng(1), 60, 50, None)
    out1 = tmp_path / "bad"
    out1.mkdir()
    b = gd.ortho_batch(client, [scenes[0], bad], out1, data["ortho_args"], retries=1)
    assert [r.status for r in b.records] == ["done", "failed"]
    assert "norpc.tif" in b.failed[0].error and "no RPCs" in b.failed[0].error
    assert sorted(p.name for p in out1.glob("*.tif")) == [scenes[0].stem + ".tif"]
    assert not leftovers(out1)


def test_ortho_several_scenes_per_task(client, data, ortho_ref, tmp_path):
    """per_task > 1 (one gdal_ortho -outdir run for several scenes) writes
    the same files, each under its own marker: a one-scene-per-task re-run
    skips them all; a bad scene inside a group fails alone, and a re-run
    of the group computes only what is missing."""
    out = tmp_path / "grouped"
    out.mkdir()
    b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"], per_task=3)
    assert b.ok and len(b.done) == len(data["scenes"]), b.failed
    assert [r.name for r in b.records] == [s.stem + ".tif" for s in data["scenes"]]
    assert len({r.worker for r in b.done}) >= 2, "3 groups did not spread over workers"
    for s in data["scenes"]:
        name = s.stem + ".tif"
        assert (out / name).read_bytes() == (ortho_ref / name).read_bytes(), name
    assert not leftovers(out)
    before = snapshot(out)
    b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"])  # one per task
    assert len(b.skipped) == len(data["scenes"]) and not b.done
    assert snapshot(out) == before

    (out / "scene_04.tif").write_bytes(b"truncated")
    b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"], per_task="auto")
    assert [r.name for r in b.done] == ["scene_04.tif"] and len(b.skipped) == len(data["scenes"]) - 1
    assert (out / "scene_04.tif").read_bytes() == (ortho_ref / "scene_04.tif").read_bytes()

    bad = write_scene(tmp_path / "norpc.tif", np.random.default_rng(2), 60, 50, None)
    group = [data["scenes"][0], bad, data["scenes"][1]]
    out1 = tmp_path / "grouped_bad"
    out1.mkdir()
    b = gd.ortho_batch(client, group, out1, data["ortho_args"], per_task=3, retries=1)
    assert [r.status for r in b.records] == ["done", "failed", "done"]
    assert "norpc.tif" in b.failed[0].error
    assert sorted(p.name for p in out1.glob("*.tif")) == ["scene_00.tif", "scene_01.tif"]
    for s in group[::2]:
        assert (out1 / (s.stem + ".tif")).read_bytes() == (ortho_ref / (s.stem + ".tif")).read_bytes()
    assert not leftovers(out1)
    b = gd.ortho_batch(client, group, out1, data["ortho_args"], per_task=3, retries=0)
    assert [r.status for r in b.records] == ["skipped", "failed", "skipped"]
    with pytest.raises(ValueError, match="per_task"):
        gd.ortho_batch(client, group, out1, data["ortho_args"], per_task=0)


# ------------------------------------------- gdal_ortho inside the workers

def worker_pids(client):
    return sorted(client.run(os.getpid).values())


def test_ortho_in_process_and_subprocess_identical(client, data, ortho_ref, tmp_path):
    """The same batch in-process (gg_ortho_run in each worker, on the
    context the worker keeps) and as child processes, one scene per task and
    several per task: the files are gdal_ortho's own, byte for byte, and
    each record says which path ran."""
    gd.warm_up(client)
    runs = {}
    for in_process, per_task in ((True, 1), (False, 1), (True, 3), (False, "auto")):
        out = tmp_path / f"{'inproc' if in_process else 'subproc'}_{per_task}"
        out.mkdir()
        b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"], per_task=per_task,
                           in_process=in_process)
        assert b.ok and len(b.done) == len(data["scenes"]), b.failed
        assert {r.runner for r in b.done} == {"in-process" if in_process else "subprocess"}
        assert not leftovers(out)
        runs[out.name] = out
    for s in data["scenes"]:
        name = s.stem + ".tif"
        ref = (ortho_ref / name).read_bytes()
        for label, out in runs.items():
            assert (out / name).read_bytes() == ref, f"{label}: {name}"
    assert_not_trivial(runs["inproc_1"] / "scene_05.tif")


def test_ortho_in_process_bad_scene_keeps_worker(client, data, ortho_ref, tmp_path):
    """A scene gdal_ortho refuses, in-process: its one-line error (the
    utility's own) in the batch's failures, no output, and every worker
    still the same process; alone in a task and inside a group."""
    bad = write_scene(tmp_path / "norpc.tif", np.random.default_rng(3), 60, 50, None)
    client.wait_for_workers(N_WORKERS, timeout=60)
    pids = worker_pids(client)
    scenes = [data["scenes"][0], bad, data["scenes"][1]]
    for per_task in (1, 3):
        out = tmp_path / f"bad_{per_task}"
        out.mkdir()
        b = gd.ortho_batch(client, scenes, out, data["ortho_args"], per_task=per_task, retries=0,
                           in_process=True)
        assert [r.status for r in b.records] == ["done", "failed", "done"]
        err = b.failed[0].error
        assert "\n" not in err and "norpc.tif" in err and "no RPCs" in err, err
        assert "ERROR 1: gdal_ortho:" in err and "(in-process, status 1)" in err, err
        assert {r.runner for r in b.done} == {"in-process"}
        assert sorted(p.name for p in out.glob("*.tif")) == ["scene_00.tif", "scene_01.tif"]
        for s in scenes[::2]:
            name = s.stem + ".tif"
            assert (out / name).read_bytes() == (ortho_ref / name).read_bytes(), name
        assert not leftovers(out)
    assert worker_pids(client) == pids, "a refused scene took a worker down"


def test_ortho_in_process_twice_same_workers(client, data, ortho_ref, tmp_path):
    """Two batches one after the other in the same worker processes (the
    entry point called again and again on each worker's one context): the
    same files; GDAL's block cache size is the worker's own again after
    each call; the workers live on."""
    client.wait_for_workers(N_WORKERS, timeout=60)
    pids = worker_pids(client)

    def cache_max():
        from osgeo import gdal as g
        return g.GetCacheMax()

    cache = client.run(cache_max)
    outs = []
    for k in range(2):
        out = tmp_path / f"again_{k}"
        out.mkdir()
        b = gd.ortho_batch(client, data["scenes"], out, data["ortho_args"], in_process=True)
        assert b.ok and {r.runner for r in b.done} == {"in-process"}, b.failed
        outs.append(out)
        assert client.run(cache_max) == cache
    for s in data["scenes"]:
        name = s.stem + ".tif"
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes() == \
            (ortho_ref / name).read_bytes(), name
    assert worker_pids(client) == pids


def test_ortho_entry_point_twice_one_context(data, ortho_ref, tmp_path):
    """gg_ortho_run called in this process (as a worker calls it) on one
    context, again and again: the files of gdal_ortho itself, single-scene
    and -outdir forms; a refused scene gives its one error line and leaves
    the context, GDAL's error handlers and its cache size as they were; the
    runs after it are unaffected."""
    import ctypes

    from geogpu.device import Context
    entry = gd.utility_tasks._ortho_entry()
    assert entry is not None, "libgeogpu_gdal next to libgeogpu has no gg_ortho_run"
    fn = entry[0]

    def call(ctx, *args):
        argv = [os.fsencode(str(a)) for a in ("gdal_ortho", "-q", "-device", "cpu", *args)]
        err = ctypes.create_string_buffer(4096)
        rc = fn(len(argv), (ctypes.c_char_p * (len(argv) + 1))(*argv, None), ctx.handle, err,
                len(err))
        return rc, err.value.decode()

    ctx = Context("cpu")
    name0, name1 = data["scenes"][0].stem + ".tif", data["scenes"][3].stem + ".tif"
    cache = gdal.GetCacheMax()
    seen = []
    gdal.PushErrorHandler(lambda cls, no, msg: seen.append(msg))
    try:
        for k in range(2):
            out = tmp_path / f"one_{k}"
            out.mkdir()
            rc, err = call(ctx, *data["ortho_args"], data["scenes"][0], out / name0)
            assert (rc, err) == (0, ""), err
            assert (out / name0).read_bytes() == (ortho_ref / name0).read_bytes()
            rc, err = call(ctx, *data["ortho_args"], "-outdir", out, data["scenes"][3])
            assert (rc, err) == (0, ""), err
            assert (out / name1).read_bytes() == (ortho_ref / name1).read_bytes()
            assert sorted(p.name for p in out.iterdir()) == sorted([name0, name1])
        bad = write_scene(tmp_path / "norpc.tif", np.random.default_rng(4), 60, 50, None)
        rc, err = call(ctx, *data["ortho_args"], bad, tmp_path / "bad.tif")
        assert rc == 1 and err.startswith("ERROR 1: gdal_ortho: ") and "no RPCs" in err, err
        assert "\n" not in err and not (tmp_path / "bad.tif").exists()
        rc, err = call(ctx, "-bogus")
        assert rc == 1 and err == "ERROR 1: gdal_ortho: unknown option -bogus (see --help)"
        # our handler is on top again: the call popped whatever it pushed
        gdal.Error(gdal.CE_Warning, 1, "probe after gg_ortho_run")
        assert seen == ["probe after gg_ortho_run"]
    finally:
        gdal.PopErrorHandler()
    assert gdal.GetCacheMax() == cache
    out = tmp_path / "after"
    out.mkdir()
    rc, err = call(ctx, *data["ortho_args"], data["scenes"][0], out / name0)
    assert rc == 0 and (out / name0).read_bytes() == (ortho_ref / name0).read_bytes()
    assert ctx.backend == "cpu" and ctx.memory()[1] > 0  # the context lives on
    # the pipelines' buffers kept for the next call were allocated on this
    # context: they go before it does (geogpu_gdal.h)
    ctypes.CDLL(entry[1]).gg_ortho_run_release()
    ctx.close()


def test_batch_arguments_refused(client, data, tmp_path):
    with pytest.raises(ValueError, match="-device"):
        gd.ortho_batch(client, data["scenes"][:1], tmp_path, ["-device", "cpu"])
    with pytest.raises(ValueError, match="does not exist"):
        gd.ortho_batch(client, data["scenes"][:1], tmp_path / "nope")
    twin = tmp_path / "sub"
    twin.mkdir()
    (twin / "scene_00.tif").write_bytes(data["scenes"][0].read_bytes())
    with pytest.raises(ValueError, match="both write 'scene_00.tif'"):
        gd.ortho_batch(client, [data["scenes"][0], twin / "scene_00.tif"], tmp_path)


# ------------------------------------------------------------- tile batches

PTSEL_OPTS = dict(window=7, conj="2,5", mask=True, offsets=True)
PTSEL_BANDS = ("tau_max", "best_dx", "best_dy", "ps_mask")


def test_tiled_ptsel_identical(client, data, ptsel_ref):
    out = data["dir"] / "ptsel_tiles"
    out.mkdir()
    b = gd.tile_batch(client, "ptsel", [data["stack"]], out / "ps.vrt", tile=(48, 40),
                      **PTSEL_OPTS)
    assert b.ok and len(b.done) == 4 * 4, b.failed  # 150x130 in 48x40 tiles
    assert len({r.worker for r in b.done}) >= 2
    # the client's own steps, timed apart from the tasks (Batch.client)
    assert set(b.client) == {"plan", "describe", "shape", "check", "submit", "cleanup",
                             "mosaic"}, b.client
    assert b.client["describe"] + b.client["shape"] <= b.client["plan"], b.client
    assert all(0 <= v < b.seconds + 1 for v in b.client.values()), b.client
    assert len(b.spans) == len(b.done) and all(0 <= s <= e <= b.seconds for s, e in b.spans)
    assert b.outputs == [str(out / f"ps_{n}.vrt") for n in PTSEL_BANDS]
    for n in PTSEL_BANDS:
        assert_same_raster(out / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", n)
    assert_not_trivial(ptsel_ref / "ps_tau_max.tif")
    tau = gdal.Open(str(ptsel_ref / "ps_tau_max.tif")).ReadAsArray()
    assert 0.01 < (tau >= 0.71).mean() < 0.5  # some PS, not all
    # each tile file holds only its own pixels
    t = gdal.Open(str(out / "ps.vrt.tiles" / "t_0001_0002_tau_max.tif"))
    assert (t.RasterXSize, t.RasterYSize) == (48, 40)
    assert t.GetGeoTransform()[0] == 500000.0 + 96 * 10.0
    assert not leftovers(out / "ps.vrt.tiles")

    # a re-run touches nothing; one file per product as GTiff also matches
    before = snapshot(out / "ps.vrt.tiles") | snapshot(out, "*.vrt")
    b = gd.tile_batch(client, "ptsel", [data["stack"]], out / "ps.vrt", tile=(48, 40),
                      **PTSEL_OPTS)
    assert len(b.skipped) == 16 and not b.done
    assert set(b.client) == {"plan", "describe", "shape", "check", "mosaic"}  # nothing submitted
    assert (snapshot(out / "ps.vrt.tiles") | snapshot(out, "*.vrt")) == before
    b = gd.tile_batch(client, "ptsel", [data["stack"]], out / "ps.tif", tile=64, **PTSEL_OPTS)
    assert b.ok
    for n in PTSEL_BANDS:
        assert_same_raster(out / f"ps_{n}.tif", ptsel_ref / f"ps_{n}.tif", f"GTiff {n}")


def late_results(seconds):
    """Run on each worker (client.run): its tile tasks return their results
    ``seconds`` after their work is done and committed."""
    from geogpu.distributed import tile_tasks
    run = tile_tasks._run_tiles

    def lagging(*args, **kwargs):
        r = run(*args, **kwargs)
        time.sleep(seconds)
        return r

    tile_tasks._run_tiles = lagging


def fixed_readers(n):
    """Run on each worker (client.run): its tile tasks read every window
    with n threads."""
    from geogpu.distributed import reads, tile_tasks

    def readers(first=False):
        return n

    reads._readers = tile_tasks._readers = readers


def test_batch_over_when_every_output_is_committed(data, ptsel_ref, tmp_path):
    """A batch is over once every output's marker is committed, without
    waiting for the tasks' results to reach the client (here they lag by
    20 s, late_results): the records come from the markers (worker,
    phases, how each tile was read), the spans from the markers' times, the
    progress reaches the total, and the mosaic is gdal_ptsel's output."""
    out = tmp_path / "late"
    out.mkdir()
    seen = []
    with gd.open_client(n_workers=2, threads=1, local_directory=tmp_path / "scratch") as c:
        c.run(late_results, 20)
        b = gd.tile_batch(c, "ptsel", [data["stack"]], out / "ps.vrt", tile=(75, 65),
                          per_task="auto", progress=lambda k, n: seen.append((k, n)),
                          **PTSEL_OPTS)
    assert b.ok and len(b.done) == 4, b.failed
    assert b.seconds < 20, b.seconds  # not the results: they came 20 s after the work
    assert {r.worker for r in b.done} <= {"cpu0", "cpu1"} and len({r.worker for r in b.done}) == 2
    assert all(r.phases["run"] > 0 and r.phases["write_s"] > 0 for r in b.done), b.done
    assert {r.reader for r in b.done} == {"file rows"}
    assert len(b.spans) == 2 and all(0 <= a <= e <= b.seconds for a, e in b.spans), b.spans
    assert seen[0] == (0, 4) and seen[-1] == (4, 4), seen
    for n in PTSEL_BANDS:
        assert_same_raster(out / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", n)
    assert not leftovers(out / "ps.vrt.tiles")


def test_tiled_ptsel_threaded_reads_pinned(data, ptsel_ref, tmp_path):
    """Workers pinned to their own processors, reading each window with 3
    threads into buffers reused from tile to tile (edge tiles smaller,
    reserve = the largest window): the mosaic is still gdal_ptsel's output."""
    out = tmp_path / "threaded"
    out.mkdir()
    with gd.open_client(n_workers=2, threads=1, pin=True,
                        local_directory=tmp_path / "scratch") as c:
        c.run(fixed_readers, 3)
        assert set(c.run(lambda: gd.reads._readers()).values()) == {3}
        b = gd.tile_batch(c, "ptsel", [data["stack"]], out / "ps.vrt", tile=(150, 36),
                          **PTSEL_OPTS)
    assert b.ok and len(b.done) == 4, b.failed
    assert all(r.phases and r.phases["read"] >= 0 for r in b.done)
    for n in PTSEL_BANDS:
        assert_same_raster(out / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", n)


def test_tiled_ptsel_worker_killed(victim_client, data, ptsel_ref, tmp_path):
    client = victim_client
    out = data["dir"] / "ptsel_killed"
    out.mkdir()
    marker = tmp_path / "killed"
    kill_once(client, marker, "t_0002_0001", delay=0.01)
    b = gd.tile_batch(client, "ptsel", [data["stack"]], out / "ps.vrt", tile=(40, 30),
                      **PTSEL_OPTS)
    assert_killed(client, marker)
    assert b.ok, b.failed
    for n in PTSEL_BANDS:
        assert_same_raster(out / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", n)
    assert not leftovers(out / "ps.vrt.tiles")


@pytest.mark.parametrize("per_task, raw", [("auto", True), (3, True), (4, False)])
def test_tiled_ptsel_several_tiles_per_task(client, data, ptsel_ref, tmp_path, per_task, raw):
    """Tasks of several tiles, each reading the next window on a reader
    thread while the current one computes (two buffer slots, whichever way
    the window is read: as it lies, or through GDAL for a band-interleaved
    stack): gdal_ptsel's output; every tile has its own record and phases;
    a re-run skips them all."""
    stack = data["stack"] if raw else band_interleaved(data, tmp_path)
    out = tmp_path / "grouped"
    out.mkdir()
    b = gd.tile_batch(client, "ptsel", [stack], out / "ps.vrt", tile=(40, 30),
                      per_task=per_task, **PTSEL_OPTS)
    assert b.ok and len(b.done) == 4 * 5, b.failed  # 150x130 in 40x30 tiles
    assert {r.reader for r in b.done} == {"file rows" if raw else "gdal"}
    assert all(r.phases and r.phases["read_s"] > 0 and r.phases["run"] > 0 for r in b.done)
    for n in PTSEL_BANDS:
        assert_same_raster(out / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", f"{per_task} {n}")
    assert not leftovers(out / "ps.vrt.tiles")
    b = gd.tile_batch(client, "ptsel", [stack], out / "ps.vrt", tile=(40, 30),
                      per_task=per_task, **PTSEL_OPTS)
    assert len(b.skipped) == 20 and not b.done


def test_tiled_ptsel_worker_killed_mid_group(victim_client, data, ptsel_ref, tmp_path):
    """A worker killed inside a task of five tiles: the retry redoes the
    group's missing tiles and the mosaic is still gdal_ptsel's output."""
    client = victim_client
    out = tmp_path / "killed"
    out.mkdir()
    marker = tmp_path / "killed-marker"
    kill_once(client, marker, "g0001_", delay=0.02)
    b = gd.tile_batch(client, "ptsel", [data["stack"]], out / "ps.vrt", tile=(40, 30),
                      per_task=5, **PTSEL_OPTS)
    assert_killed(client, marker)
    assert b.ok, b.failed
    assert len(b.done) == 20
    for n in PTSEL_BANDS:
        assert_same_raster(out / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", n)
    assert not leftovers(out / "ps.vrt.tiles")


def test_pieces_cover_the_first_tile(data):
    """A task's first tile is computed in three row pieces (1/6, 1/3, the
    rest) that cover it exactly, each with the source window its rows need;
    later tiles, and a first tile too short to cut, stay whole."""
    from geogpu.ops import Op
    prep = Op("ptsel", window=7).prepare((130, 150), complex_input=True, bands=10)
    todo = [{"window": [0, 0, 75, 100]}, {"window": [75, 0, 75, 100]}]
    got = gd.tile_tasks._pieces(prep, todo)
    assert [(k, w) for k, w, _ in got] == [(0, (0, 0, 75, 16)), (0, (0, 16, 75, 33)),
                                           (0, (0, 49, 75, 51)), (1, (75, 0, 75, 100))]
    assert all(src == prep.source_window(*w) for _, w, src in got)
    assert got[0][2] == (0, 0, 78, 19)  # halo of 3 rows and columns, clipped at the edges
    short = gd.tile_tasks._pieces(prep, [{"window": [0, 100, 75, 30]}])
    assert [w for _, w, _ in short] == [(0, 100, 75, 30)]


@pytest.mark.parametrize("per_task, raw", [(1, True), ("auto", True), ("auto", False)])
def test_tiled_ptsel_first_tile_in_pieces(client, data, ptsel_ref, tmp_path, per_task, raw):
    """Tiles of 100 rows: each task computes its first tile in three pieces
    (the next piece read while one computes) and writes each tile on a
    writer thread while the next computes, the stack read as it lies or
    (band-interleaved) through GDAL.  The mosaic is gdal_ptsel's."""
    stack = data["stack"] if raw else band_interleaved(data, tmp_path)
    b = gd.tile_batch(client, "ptsel", [stack], tmp_path / "ps.vrt", tile=(75, 100),
                      per_task=per_task, **PTSEL_OPTS)
    assert b.ok and len(b.done) == 2 * 2, b.failed
    assert {r.reader for r in b.done} == {"file rows" if raw else "gdal"}
    assert all(r.phases["run"] > 0 and r.phases["write_s"] > 0 for r in b.done)
    for n in PTSEL_BANDS:
        assert_same_raster(tmp_path / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", f"{per_task} {n}")
    assert not leftovers(tmp_path / "ps.vrt.tiles")


def test_tiled_coherence_and_rotate_first_tile_in_pieces(client, data, gg, tmp_path):
    """Pieces of a two-input op read through GDAL (coherence: complex and
    real products in their own mosaics) and of a band op (rotate): the
    utilities' output."""
    s1, s2 = data["slcs"][:2]
    gg.run("gdal_insar", "-q", "-device", "cpu", "-window", 5, 3, s1, s2, tmp_path / "ref.tif")
    b = gd.tile_batch(client, "coherence", [s1, s2], tmp_path / "coh.vrt", tile=(110, 96),
                      per_task="auto", window=(5, 3))
    assert b.ok and len(b.done) == 1, b.failed
    for n in ("interferogram", "coherence", "amplitude"):
        assert_same_raster(tmp_path / f"coh_{n}.vrt", tmp_path / f"ref_{n}.tif", n)
    scene = data["scenes"][0]
    gg.run("gdal_rotate", "-q", "-device", "cpu", "-angle", 30, scene, tmp_path / "rot_ref.tif")
    b = gd.tile_batch(client, "rotate", [scene], tmp_path / "rot.vrt", tile=(120, 100),
                      angle=30)
    assert b.ok and len(b.done) > 1, b.failed
    assert_same_raster(tmp_path / "rot.vrt", tmp_path / "rot_ref.tif", "rotate")
    assert_not_trivial(tmp_path / "rot_ref.tif")


def test_balanced_groups_of_a_ptsel_grid(data):
    """per_task="auto" groups of a 4 x 8 grid whose edge tiles have less
    halo: grid order leaves the inner groups 3 % costlier; the balanced cut
    is within 1 %, covers every tile once, each group in grid order."""
    from geogpu.ops import Op
    prep = Op("ptsel", window=51).prepare((2680, 3260), complex_input=True, bands=60)
    grid = gd.tile_grid(3260, 2680, (815, 335))
    costs = [sw * sh for (_, _, sw, sh) in (prep.source_window(*g[2:]) for g in grid)]
    in_order = [sum(costs[k:k + 8]) for k in range(0, 32, 8)]
    assert max(in_order) / min(in_order) > 1.03
    groups = gd.batches._balanced(costs, 4)
    sums = [sum(costs[i] for i in g) for g in groups]
    assert max(sums) / min(sums) < 1.01
    assert sorted(i for g in groups for i in g) == list(range(32))
    assert all(g == sorted(g) for g in groups)
    assert gd.batches._balanced([5, 1, 1], 8) == [[0], [1], [2]]  # never more groups than jobs


def test_tile_batch_per_task_refused(client, data, tmp_path):
    for bad in (0, -2, "most", 1.5):
        with pytest.raises(ValueError, match="per_task is a positive integer or 'auto'"):
            gd.tile_batch(client, "ptsel", [data["stack"]], tmp_path / "p.vrt", per_task=bad,
                          window=7)
    assert not list(tmp_path.iterdir())


def test_tiled_coherence_with_looks(client, data, gg, tmp_path):
    """A two-input op whose output grid is decimated (looks) and whose
    products mix types (one mosaic per product)."""
    s1, s2 = data["slcs"][:2]
    gg.run("gdal_insar", "-q", "-device", "cpu", "-window", 5, 3, "-looks", 2, 3, s1, s2,
           tmp_path / "ref.tif")
    b = gd.tile_batch(client, "coherence", [s1, s2], tmp_path / "coh.vrt", tile=(16, 12),
                      window=(5, 3), looks=(2, 3))
    assert b.ok and len(b.done) == 4 * 3  # 55x32 output in 16x12 tiles
    for n in ("interferogram", "coherence", "amplitude"):
        assert_same_raster(tmp_path / f"coh_{n}.vrt", tmp_path / f"ref_{n}.tif", n)
    assert_not_trivial(tmp_path / "ref_coherence.tif")


def test_tile_batch_refuses(client, data, tmp_path):
    with pytest.raises(ValueError, match="statistics"):
        gd.tile_batch(client, "radnorm", [data["scenes"][0]], tmp_path / "r.vrt")
    with pytest.raises(ValueError, match="window"):
        gd.tile_batch(client, "ptsel", [data["stack"]], tmp_path / "p.vrt", window=8)
    with pytest.raises(ValueError, match="must match in size"):
        gd.tile_batch(client, "coherence", [data["slcs"][0], data["stack"]], tmp_path / "c.vrt")


@pytest.mark.opencl
def test_gpu_resource_routes_tasks(gg, data, tmp_path):
    """Workers with a device other than the CPU carry the GPU resource and
    take every task; CPU workers beside them get none.  On PoCL here."""
    oc = gd.open_client(devices=["cpu", "opencl:0:0"], threads=1, local_directory=tmp_path)
    try:
        ws = gd.workers(oc.client)
        assert sorted(r.get("GPU", 0) for _, _, r in ws.values()) == [0, 1]
        b = gd.tile_batch(oc.client, "ptsel", [data["stack"]], tmp_path / "ps.vrt", tile=64,
                          window=7)
    finally:
        oc.close()
    assert b.ok and {r.worker for r in b.done} == {"opencl1"}
    assert {r.device for r in b.done} == {"opencl:0:0"}
    gg.run("gdal_ptsel", "-q", "-device", "opencl:0:0", "-window", 7, data["stack"],
           tmp_path / "ref.tif")
    assert_same_raster(tmp_path / "ps.vrt", tmp_path / "ref.tif", "opencl tau_max")


# ------------------------------------------------- pairs, any dask cluster

def test_pair_batch_on_plain_local_cluster(data, gg, tmp_path):
    """pair_batch through gdal_insar on a stock distributed.LocalCluster
    (no GPU resources, reached by its address): products of mixed types
    (three files per pair) committed together."""
    slcs = data["slcs"]
    # a stock nanny writes OMP_NUM_THREADS=1 & co. into this process's
    # environment: keep it from leaking into the tests that follow
    saved = dict(os.environ)
    try:
        b = _plain_cluster_batches(slcs, tmp_path)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    names = ["slc_0_slc_1", "slc_1_slc_2", "last"]
    pairs = [(slcs[0], slcs[1]), (slcs[1], slcs[2]), (slcs[2], slcs[3], "last")]
    assert sorted(r.name for r in b.done) == sorted(n + ".tif" for n in names)
    for (p, s, *_), n in zip(pairs, names):
        gg.run("gdal_insar", "-q", "-device", "cpu", "-looks", 2, 2, p, s, tmp_path / f"ref_{n}.tif")
        for prod in ("interferogram", "coherence", "amplitude"):
            assert (tmp_path / f"{n}_{prod}.tif").read_bytes() == \
                (tmp_path / f"ref_{n}_{prod}.tif").read_bytes(), f"{n} {prod}"
    assert not leftovers(tmp_path)


def _plain_cluster_batches(slcs, tmp_path):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", host="127.0.0.1",
                                  local_directory=str(tmp_path / "scratch")) as cl:
        with gd.open_client(cl.scheduler_address) as client:
            pairs = [(slcs[0], slcs[1]), (slcs[1], slcs[2]), (slcs[2], slcs[3], "last")]
            b = gd.pair_batch(client, "gdal_insar", pairs, tmp_path, ["-looks", "2", "2"],
                              device="cpu")
            assert b.ok and len(b.done) == 3
            b2 = gd.pair_batch(client, "gdal_insar", pairs, tmp_path, ["-looks", "2", "2"],
                               device="cpu")
            assert len(b2.skipped) == 3
    return b


COREG = {"gdal_xcorr": ["-table", "{out}.csv"], "gdal_coreg": ["-fit", "{out}.json"]}


@pytest.mark.parametrize("program", sorted(COREG))
def test_pair_batch_coregistration(client, data, gg, tmp_path, program):
    """Pairs through the coregistration utilities, with their side output
    (offset table, polynomial fit) named per pair through {out}; skipped
    only while the utility is not built yet."""
    if not (gg.build / "bin" / program).exists():
        pytest.skip(f"{program} not built in {gg.build}")
    rng = np.random.default_rng(7)
    z = rng.standard_normal((96, 110)) + 1j * rng.standard_normal((96, 110))
    slcs = []
    for k, shift in enumerate((0, 1, 2)):  # secondaries 1 and 2 pixels across
        p = tmp_path / f"c{k}.tif"
        ds = gdal.GetDriverByName("GTiff").Create(str(p), 110, 96, 1, gdal.GDT_CFloat32)
        ds.GetRasterBand(1).WriteArray(np.roll(z, shift, axis=1).astype(np.complex64))
        ds = None
        slcs.append(p)
    opts = ["-window", "16", "16", "-search", "4", "4", "-skip", "16", "16"]
    side = COREG[program][1].replace("{out}", "")
    out = tmp_path / "out"
    out.mkdir()
    pairs = [(slcs[0], slcs[1]), (slcs[0], slcs[2])]
    b = gd.pair_batch(client, program, pairs, out, opts + COREG[program])
    assert b.ok and len(b.done) == 2, b.failed
    for p, sec in pairs:
        name = f"{p.stem}_{sec.stem}"
        assert sorted(b.records[pairs.index((p, sec))].files) == sorted([name + ".tif", name + side])
        ref = tmp_path / f"ref_{name}"
        gg.run(program, "-q", "-device", "cpu", *opts, COREG[program][0], str(ref) + side, p, sec,
               str(ref) + ".tif")
        assert (out / (name + ".tif")).read_bytes() == Path(str(ref) + ".tif").read_bytes()
        assert (out / (name + side)).read_bytes() == Path(str(ref) + side).read_bytes()
    if program == "gdal_xcorr":
        assert_not_trivial(out / "c0_c2.tif", band=2)  # offset_across
    else:
        import json
        fit = json.loads((out / "c0_c2.json").read_text())
        assert abs(fit["across"][0] - 2) < 0.1, fit  # the 2-pixel shift
    assert not leftovers(out)


# ------------------------------------------------------------ command line

def cli(*args):
    env = dict(os.environ, PYTHONPATH=str(PKG))
    return subprocess.run([sys.executable, "-m", "geogpu.distributed", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli(client, data, ortho_ref, ptsel_ref, tmp_path):
    addr = client.scheduler.address
    out = tmp_path / "orthos"
    out.mkdir()
    p = cli("ortho", "--scheduler", addr, "-outdir", out, *data["scenes"][:4], "--",
            *data["ortho_args"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "0...10...20...30...40...50...60...70...80...90...100 - done."
    assert "4 done, 0 skipped, 0 failed" in p.stderr
    for s in data["scenes"][:4]:
        assert (out / (s.stem + ".tif")).read_bytes() == (ortho_ref / (s.stem + ".tif")).read_bytes()
    p = cli("ortho", "--scheduler", addr, "-q", "-outdir", out, *data["scenes"][:4], "--",
            *data["ortho_args"])
    assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    # --subprocess: a gdal_ortho process per task (the marker records it)
    sub = tmp_path / "orthos_sub"
    sub.mkdir()
    p = cli("ortho", "--scheduler", addr, "-q", "--subprocess", "-outdir", sub,
            *data["scenes"][:2], "--", *data["ortho_args"])
    assert p.returncode == 0, p.stderr
    import json
    for s in data["scenes"][:2]:
        name = s.stem + ".tif"
        assert (sub / name).read_bytes() == (ortho_ref / name).read_bytes()
        assert json.loads((sub / gd.STATE_DIR / f"{name}.done").read_text())["runner"] == \
            "subprocess"
        assert json.loads((out / gd.STATE_DIR / f"{name}.done").read_text())["runner"] == \
            "in-process"

    p = cli("ptsel", "--scheduler", addr, "-q", "--tile", "50x70", "--per-task", "auto",
            data["stack"], tmp_path / "ps.vrt", "--", "-window", 7, "-conj", "2,5", "-mask",
            "-offsets")
    assert p.returncode == 0, p.stderr
    for n in PTSEL_BANDS:
        assert_same_raster(tmp_path / f"ps_{n}.vrt", ptsel_ref / f"ps_{n}.tif", f"cli {n}")

    # errors: one line, status 1
    for bad in (["insar", "--scheduler", addr, "-outdir", tmp_path, data["slcs"][0]],
                ["ortho", "--scheduler", addr, "-outdir", out, data["scenes"][0], "--",
                 "-device", "cpu"],
                ["ptsel", "--scheduler", addr, data["stack"], tmp_path / "x.vrt", "--",
                 "-windw", 7],
                ["ortho", "--pin-shares", 0, "-outdir", out, data["scenes"][0]]):
        p = cli(*bad)
        assert p.returncode == 1, bad
        errs = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
        assert len(errs) == 1, p.stderr
    assert "do not make pairs" in cli("insar", "--scheduler", addr, "-outdir", tmp_path,
                                      data["slcs"][0]).stderr


def test_cli_local_cluster_quiet_shutdown(data, tmp_path):
    """A successful run on its own local cluster prints its summary and nothing
    else: the cluster closes after the results of every task have reached the
    client (closed earlier, the scheduler and tornado logged CommClosedError
    tracebacks in most runs). Several runs: the race was one of timing."""
    s = data["slcs"]
    for k, (what, args) in enumerate([("coreg", ["-window", 32, 32, "-skip", 8, 8]),
                                      ("insar", ["-looks", 2, 2])] * 2):
        out = tmp_path / f"run{k}"
        out.mkdir()
        p = cli(what, "--devices", "cpu,cpu", "--threads", 1, "-outdir", out,
                s[0], s[1], s[0], s[2], s[1], s[3], "--", *args)
        assert p.returncode == 0, p.stderr
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("geogpu.distributed: 3 done, 0 skipped, "
                                                       "0 failed"), p.stderr
        assert not leftovers(out)
