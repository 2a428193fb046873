#!/usr/bin/python3
"""probe_host.py -- what do concurrent processes on one host slow each other
down with?  The host side of geogpu.distributed's tasks, taken apart: first
touch of fresh anonymous memory (4 KiB pages, MAP_POPULATE, transparent huge
pages), copies in memory already touched, page-cache reads and writes
(tmpfs, the disk's filesystem, /dev/null), GDAL window reads of a
pixel-interleaved stack, arithmetic alone (spin: the cores' clock), a batch's
scene reads and writes alone (scenes_<dir>, --scenes), and gdal_ortho itself (its GG_ORTHO_TIMING split)
plain, with staggered starts, pinned to disjoint processors (taskset), with
2 CUDA staging-copy threads, and with Dask's MALLOC_TRIM_THRESHOLD_=65536.  Each test runs in 1,
2, 4 ... processes at once (released together by a barrier); it prints each
process's seconds and the aggregate rate.

    python3 bench/probe_host.py [--procs 1,2,4] [--mib 1024] [--dirs /dev/shm,/tmp] [--siblings]
        [--scenes 28 [--scene-mb 134.2] [--scene-writers 2]]
        [--stack stack.tif] [--ortho-dir DIR --ortho-bin BIN --gpus 2]

Timing only: never run by the tests.
"""
import argparse
import ctypes
import mmap
import multiprocessing as mp
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
libc.memset.restype = ctypes.c_void_p


def _anon(nbytes, populate=False, huge=False):
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    if populate:
        flags |= mmap.MAP_POPULATE
    m = mmap.mmap(-1, nbytes, flags=flags)
    if huge:
        m.madvise(mmap.MADV_HUGEPAGE)
    return m


def _addr(m):
    return ctypes.addressof(ctypes.c_char.from_buffer(m))


def _memset_threads(m, nthreads, value=1):
    """memset of the whole mapping in nthreads slices (ctypes drops the GIL)."""
    n = len(m)
    base = _addr(m)
    step = -(-n // nthreads)
    ts = [threading.Thread(target=libc.memset, args=(base + k * step, value,
                                                      min(step, n - k * step)))
          for k in range(nthreads) if k * step < n]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def _test(name, nbytes, rank, opts):
    """One test in one process; returns its seconds (the timed part only)."""
    if name == "spin":
        # a fixed amount of arithmetic touching no memory: its time follows
        # the core's clock (turbo falls as more cores are busy)
        t = time.perf_counter()
        x = 0
        for i in range(3_000_000):
            x = (x + i * 7) & 0xFFFF
        return time.perf_counter() - t
    if name == "touch_fresh_4k":
        m = _anon(nbytes)
        t = time.perf_counter()
        libc.memset(_addr(m), 1, nbytes)
        return time.perf_counter() - t
    if name == "touch_fresh_4k_8thr":
        m = _anon(nbytes)
        t = time.perf_counter()
        _memset_threads(m, 8)
        return time.perf_counter() - t
    if name == "touch_fresh_thp":
        m = _anon(nbytes, huge=True)
        t = time.perf_counter()
        libc.memset(_addr(m), 1, nbytes)
        return time.perf_counter() - t
    if name == "map_populate":
        t = time.perf_counter()
        m = _anon(nbytes, populate=True)
        libc.memset(_addr(m), 1, nbytes)
        return time.perf_counter() - t
    if name == "memset_touched":
        m = _anon(nbytes)
        libc.memset(_addr(m), 1, nbytes)
        t = time.perf_counter()
        libc.memset(_addr(m), 2, nbytes)
        return time.perf_counter() - t
    if name == "copy_touched":
        a = np.ones(nbytes, np.uint8)
        b = np.ones(nbytes, np.uint8)
        t = time.perf_counter()
        np.copyto(b, a)
        return time.perf_counter() - t
    if name.startswith("read_") or name.startswith("write_") or name.startswith("rewrite_"):
        kind, d = name.split("_", 1)
        d = opts["dirs"][d]
        path = "/dev/null" if d == "null" else os.path.join(d, f"probe_{os.getpid()}_{rank}.bin")
        buf = np.ones(nbytes, np.uint8)
        if kind == "read":
            with open(path, "wb") as f:
                f.write(buf)
            buf2 = np.ones(nbytes, np.uint8)
            t = time.perf_counter()
            with open(path, "rb", buffering=0) as f:
                f.readinto(buf2)
            dt = time.perf_counter() - t
        else:
            if kind == "rewrite" and path != "/dev/null":
                with open(path, "wb") as f:
                    f.write(buf)
            t = time.perf_counter()
            with open(path, "r+b" if kind == "rewrite" else "wb", buffering=0) as f:
                f.write(buf)
            dt = time.perf_counter() - t
        if path != "/dev/null":
            os.unlink(path)
        return dt
    if name.startswith("scenes_"):
        return _scene_io(opts["dirs"][name[7:]], nbytes, rank, opts)
    if name.startswith("gdal_"):
        from osgeo import gdal
        stack, rows = opts["stack"], opts["rows"]
        ds = gdal.Open(stack)
        W, H, n = ds.RasterXSize, ds.RasterYSize, ds.RasterCount
        y0 = (rank * rows) % max(1, H - rows)
        variant = name[5:]
        if variant == "vmem":
            gdal.SetConfigOption("GTIFF_VIRTUAL_MEM_IO", "YES")
            ds = gdal.Open(stack)
        into = None
        if variant == "reused":
            into = np.frombuffer(_anon(W * rows * n * 8, huge=True), np.complex64).reshape(
                n, rows, W)
            into.fill(0)
        t = time.perf_counter()
        ds.ReadAsArray(0, y0, W, rows, buf_type=gdal.GDT_CFloat32, buf_obj=into)
        return time.perf_counter() - t
    raise ValueError(name)


def _scene_io(d, nbytes, rank, opts):
    """A batch's host I/O with no compute and no device: `scenes` scenes of
    nbytes each, their 4 MiB strips read (pread) by 8 threads into buffers
    of their own, while `scene_writers` threads (default 2) write the scenes'
    outputs (1.07 x nbytes, 4 MiB pwrites into a new file, one file a
    thread at a time), as gdal_ortho's readers and draining writers do.
    Returns the seconds for all of it: the most scenes/s the host's memory
    and page cache leave a batch."""
    scenes, strip = opts["scenes"], 4 << 20
    src = os.path.join(d, f"probe_scene_{os.getpid()}_{rank}.bin")
    with open(src, "wb") as f:
        f.write(np.ones(nbytes, np.uint8))
    out_bytes = int(nbytes * 1.07)
    jobs = [(i, off) for i in range(scenes) for off in range(0, nbytes, strip)]
    outs = [os.path.join(d, f"probe_out_{os.getpid()}_{rank}_{i}.bin") for i in range(scenes)]
    lock = threading.Lock()

    def reader():
        buf = np.ones(strip, np.uint8)
        fd = os.open(src, os.O_RDONLY)
        while True:
            with lock:
                if not jobs:
                    break
                _, off = jobs.pop()
            os.preadv(fd, [memoryview(buf)[:min(strip, nbytes - off)]], off)
        os.close(fd)

    unwritten = list(outs)

    def writer():
        buf = np.ones(strip, np.uint8)
        while True:
            with lock:
                if not unwritten:
                    break
                path = unwritten.pop()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            for off in range(0, out_bytes, strip):
                os.pwrite(fd, memoryview(buf)[:min(strip, out_bytes - off)], off)
            os.close(fd)

    ts = [threading.Thread(target=reader) for _ in range(8)]
    ts += [threading.Thread(target=writer) for _ in range(opts["scene_writers"])]
    t = time.perf_counter()
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    dt = time.perf_counter() - t
    for path in outs + [src]:
        os.unlink(path)
    return dt


def _child(name, nbytes, rank, opts, barrier, q):
    try:
        barrier.wait()
        q.put((rank, _test(name, nbytes, rank, opts), None))
    except Exception as e:  # reported, not raised: the probe goes on
        q.put((rank, None, f"{type(e).__name__}: {e}"))


def concurrent(name, nprocs, nbytes, opts):
    ctx = mp.get_context("fork")
    barrier, q = ctx.Barrier(nprocs), ctx.Queue()
    ps = [ctx.Process(target=_child, args=(name, nbytes, r, opts, barrier, q))
          for r in range(nprocs)]
    for p in ps:
        p.start()
    out = [q.get() for _ in ps]
    for p in ps:
        p.join()
    errs = [e for _, _, e in out if e]
    if errs:
        return f"{name:22s} N={nprocs}: error {errs[0]}"
    secs = sorted(s for _, s, _ in out)
    if name == "spin":
        return f"{name:22s} N={nprocs}: per process {secs[0]:.3f}-{secs[-1]:.3f} s"
    if name.startswith("scenes_"):
        n = opts["scenes"]
        return (f"{name:22s} N={nprocs}: {n} scenes of {nbytes / 1e6:.0f} MB a process, "
                f"{opts['scene_writers']} writers, in "
                f"{secs[0]:.3f}-{secs[-1]:.3f} s: {nprocs * n / secs[-1]:.1f} scenes/s together")
    gb = nbytes / 1e9
    return (f"{name:22s} N={nprocs}: per process {secs[0]:.3f}-{secs[-1]:.3f} s "
            f"({gb / secs[-1]:.2f}-{gb / secs[0]:.2f} GB/s each, "
            f"{nprocs * gb / secs[-1]:.2f} GB/s together)")


def sysinfo():
    cmds = ["nproc", "lscpu | grep -Ei 'model name|socket|numa|thread|core'",
            "cat /sys/kernel/mm/transparent_hugepage/enabled "
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "free -g | head -2", "df -h /tmp /dev/shm | tail -2",
            "nvidia-smi topo -m 2>/dev/null | head -6",
            "nvidia-smi -q 2>/dev/null | grep -i -m2 persistence",
            "cat /proc/sys/kernel/numa_balancing 2>/dev/null"]
    for c in cmds:
        r = subprocess.run(c, shell=True, capture_output=True, text=True)
        print(f"$ {c}\n{r.stdout.strip()}", flush=True)


ORTHO_KEYS = [("setup", r"GDAL setup [^)]*\) ([\d.]+) s"), ("devstart", r"device start ([\d.]+) s"),
              ("waited", r"waited ([\d.]+) s"), ("readers", r"readers ([\d.]+) s"),
              ("uploads", r"uploads ([\d.]+) s"), ("writer", r"writer ([\d.]+) s"),
              ("pipe", r"pipeline wall ([\d.]+) s"), ("close", r"closing the output ([\d.]+) s")]


def _spin_on(cpu, barrier, q):
    os.sched_setaffinity(0, [cpu])
    barrier.wait()
    q.put((cpu, _test("spin", 0, 0, {})))


def siblings():
    """Which processors slow processor 0 down: the spin loop on 0 alone
    (median of 3), then on 0 and j at once for every other j, each pinned;
    a j beside which the loop on 0 itself runs 1.3x slower or more shares
    something with it (a core's two threads behind a virtual machine's flat
    topology, say).  Also the loop on j alone where it is slow beside 0."""
    ctx = mp.get_context("fork")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 or cpus[0] != 0:
        print("siblings: needs processor 0 and another")
        return

    def run(on):
        barrier, q = ctx.Barrier(len(on)), ctx.Queue()
        ps = [ctx.Process(target=_spin_on, args=(c, barrier, q)) for c in on]
        for p in ps:
            p.start()
        secs = dict(q.get() for _ in ps)
        for p in ps:
            p.join()
        return secs

    alone = sorted(run([0])[0] for _ in range(3))[1]
    shared = []
    for j in cpus[1:]:
        t = run([0, j])
        if t[0] / alone >= 1.3:
            shared.append(f"{j} ({t[0] / alone:.2f}x; {j} itself {t[j]:.3f} s, "
                          f"alone {run([j])[j]:.3f} s)")
    print(f"siblings: spin on processor 0 alone {alone:.3f} s (median of 3); on 0, 1.3x slower "
          f"or more beside: {', '.join(shared) or 'none'}", flush=True)


def ortho_concurrency(a):
    """N gdal_ortho processes at once, each on its own GPU, with and
    without Dask's MALLOC_TRIM_THRESHOLD_; GG_ORTHO_TIMING split summed over
    the scenes of each process."""
    od = a.ortho_dir
    scenes = sorted(os.path.join(od, f) for f in os.listdir(od) if re.match(r"s\d+\.tif$", f))
    args = ["-q", "-device", a.ortho_device, "-r", "cubic", "-t_srs", "EPSG:32632", "-dem",
            os.path.join(od, "dem.tif")]
    ncpu = os.cpu_count() or 1
    for variant, extra in (("plain", {}), ("stagger", {}), ("pinned", {}),
                           ("copy2", {"GG_CUDA_COPY_THREADS": "2"}),
                           ("dask-trim", {"MALLOC_TRIM_THRESHOLD_": "65536"})):
        for n in [int(v) for v in a.procs.split(",") if int(v) <= a.gpus]:
            if n == 1 and variant in ("stagger", "pinned"):
                continue
            for per in ((1, a.ortho_scenes) if variant == "plain" else (a.ortho_scenes,)):
                ps, t0 = [], time.time()
                for r in range(n):
                    out = os.path.join(od, f"probe{r}")
                    os.makedirs(out, exist_ok=True)
                    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(r), GG_ORTHO_TIMING="1",
                               **extra)
                    mine = scenes[r * per:(r + 1) * per]
                    cmd = [a.ortho_bin] + args + ["-outdir", out] + mine
                    if variant == "pinned":
                        cmd = ["taskset", "-c", f"{r * ncpu // n}-{(r + 1) * ncpu // n - 1}"] + cmd
                    if variant == "stagger" and r:
                        time.sleep(a.stagger)
                    ps.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True))
                lines = []
                for p in ps:
                    err = p.communicate()[1]
                    lines.append((time.time() - t0, err))
                walls = [w for w, _ in lines]
                tot = {k: 0.0 for k, _ in ORTHO_KEYS}
                for _, err in lines:
                    for k, rx in ORTHO_KEYS:
                        tot[k] += sum(float(x) for x in re.findall(rx, err))
                split = ", ".join(f"{k} {v / n / per:.3f}" for k, v in tot.items())
                print(f"gdal_ortho {variant:9s} N={n} x {per} scenes: wall {min(walls):.2f}-"
                      f"{max(walls):.2f} s ({max(walls) / per:.3f} s/scene); per scene: {split}",
                      flush=True)
                for r in range(n):
                    subprocess.run(["rm", "-rf", os.path.join(od, f"probe{r}")])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="1,2,4")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--dirs", default="/dev/shm,/tmp")
    ap.add_argument("--tests", default="")
    ap.add_argument("--stack")
    ap.add_argument("--rows", type=int, default=385)
    ap.add_argument("--ortho-dir")
    ap.add_argument("--ortho-bin")
    ap.add_argument("--ortho-scenes", type=int, default=4)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--ortho-device", default="cuda:0")
    ap.add_argument("--stagger", type=float, default=0.35,
                    help="seconds between the gdal_ortho starts of the 'stagger' variant")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--siblings", action="store_true",
                    help="which processors share a core with processor 0 (spin loops in pairs)")
    ap.add_argument("--scenes", type=int, default=0,
                    help="scenes_<dir> tests: this many scenes a process (--scene-mb each)")
    ap.add_argument("--scene-mb", type=float, default=134.2)
    ap.add_argument("--scene-writers", type=int, default=2,
                    help="scenes_<dir> tests: threads a process writing outputs")
    a = ap.parse_args()
    sysinfo()
    dirs = {d.strip("/").replace("/", "-") or "root": d for d in a.dirs.split(",")}
    dirs["null"] = "null"
    opts = {"dirs": dirs, "stack": a.stack, "rows": a.rows, "scenes": a.scenes,
            "scene_writers": max(1, a.scene_writers)}
    procs = [int(v) for v in a.procs.split(",")]
    nbytes = a.mib << 20
    tests = ["spin", "touch_fresh_4k", "touch_fresh_4k_8thr", "touch_fresh_thp", "map_populate",
             "memset_touched", "copy_touched"]
    tests += [f"{k}_{d}" for d in dirs if d != "null" for k in ("read", "write", "rewrite")]
    tests += ["write_null"]
    if a.stack:
        tests += ["gdal_fresh", "gdal_reused", "gdal_vmem"]
    if a.scenes:
        tests += [f"scenes_{d}" for d in dirs if d != "null"]
    if a.tests:
        tests = [t for t in tests if any(t.startswith(x) for x in a.tests.split(","))]
    gdal_bytes = nbytes
    if a.stack:
        from osgeo import gdal
        ds = gdal.Open(a.stack)
        gdal_bytes = ds.RasterXSize * a.rows * ds.RasterCount * 8
        ds = None
    if not a.skip_memory:
        for t in tests:
            for n in procs:
                size = (gdal_bytes if t.startswith("gdal_") else
                        int(a.scene_mb * 1e6) if t.startswith("scenes_") else nbytes)
                print(concurrent(t, n, size, opts), flush=True)
    if a.siblings:
        siblings()
    if a.ortho_dir:
        ortho_concurrency(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
