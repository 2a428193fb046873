"""geogpu.distributed: batches of scenes, pairs and tiles over Dask, one
worker per GPU.

Three kinds of batch, each a list of independent tasks that write their own
output files:

    from geogpu import distributed as gd
    with gd.open_client() as client:        # one worker per GPU (CPU workers without one)
        gd.ortho_batch(client, scenes, "orthos/", ["-dem", "dem.tif", "-t_srs", "EPSG:32632"])
        gd.pair_batch(client, "gdal_insar", [("a.tif", "b.tif")], "ifgs/", ["-looks", "4", "1"])
        gd.tile_batch(client, "ptsel", ["stack.tif"], "ps.vrt", window=11, mask=True)

- **scenes** (``ortho_batch``) and **pairs** (``pair_batch``: gdal_insar,
  gdal_xcorr, gdal_coreg, ...): one task per scene or pair runs the geogpu
  utility on its worker's device (``-device``) and writes its own files.
  gdal_ortho runs *in-process* by default: the worker calls the utility's
  own entry point (``gg_ortho_run`` in the GDAL plugin gdal_GeoGPU.so) with
  the device context it keeps for all its tasks, instead of starting a
  process, and a CUDA context, per task (``in_process``, below);
- **tiles** (``tile_batch``): one task per output tile reads the tile's input
  window with its halo (the op's ``source_window``: r/2 for PtSel, the
  coherence window and looks, ...) through GDAL (several threads, into host
  buffers the worker keeps from tile to tile), computes the tile with
  libgeogpu on the worker's device (``Prepared.run_tile``) and writes only the
  tile's own pixels; a VRT mosaic of the tiles is then written (and, for a
  destination that is not ``.vrt``, translated into it).

Every task writes into a private temporary folder beside its outputs, moves
its files into place (``os.replace``) and then writes a completion marker
(``<outdir>/.geogpu/<name>.done``: what was computed from what, and the size
and mtime of each file).  A re-run skips every output whose marker is still
valid, so a batch interrupted by a dead worker, a dead client or a reboot
loses at most the tasks in flight.  Failed tasks are retried (``retries``); a
task lost with its worker is rescheduled by Dask
(``distributed.scheduler.allowed-failures``).  A task that still fails is
reported and the rest of the batch completes, as with ``gdal_ortho -outdir``.

The cluster (``start_cluster``/``open_client``) is dask-cuda's
LocalCUDACluster idea on Debian's python3-distributed: one Nanny per GPU,
``nthreads=1``, ``CUDA_VISIBLE_DEVICES`` set to its GPU (``GG_DEVICE=cuda:0``
inside), a ``GPU=1`` resource; N CPU workers when there is no GPU; or any
existing scheduler (``open_client("tcp://host:8786")``, workers started with
``python3 -m geogpu.distributed workers``).  Files are exchanged through a
filesystem every worker sees under the same paths.

Command line: ``python3 -m geogpu.distributed ortho|insar|xcorr|coreg|pairs|
ptsel|tiles|workers ...`` (``--help``).  See docs/distributed.md.
"""
import argparse
import hashlib
import json
import math
import mmap
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import namedtuple
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

__all__ = ["start_cluster", "open_client", "worker_specs", "cuda_devices", "workers", "warm_up",
           "ortho_batch", "pair_batch", "tile_batch", "tile_grid", "Batch", "TaskRecord",
           "TaskError", "main"]

STATE_DIR = ".geogpu"          # markers and task folders, inside each output folder
MARKER_VERSION = 1


class TaskError(RuntimeError):
    """A task failed: the message names the output and the cause (the
    utility's own ERROR line, or the library's message)."""


# ====================================================================== cluster

def cuda_devices():
    """Device specs ("cuda:0", ...) of the CUDA GPUs libgeogpu sees here; []
    when there is none (or no CUDA backend)."""
    from .device import devices
    try:
        return [d.spec for d in devices() if d.backend == "cuda"]
    except Exception:  # no backend, no driver: no GPU for us
        return []


def _physical_gpu(index):
    """The CUDA_VISIBLE_DEVICES entry of a worker on our GPU ``index`` (our
    indices are relative to this process's own CUDA_VISIBLE_DEVICES)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        items = [v.strip() for v in visible.split(",") if v.strip()]
        if index < len(items):
            return items[index]
    return str(index)


WorkerSpec = namedtuple("WorkerSpec", "name device env resources")


def _cpu_sets(n):
    """This process's processors cut into n contiguous, equal sets (one per
    worker); None where there are fewer processors than workers."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if len(cpus) < n:
        return None
    return [cpus[len(cpus) * i // n:len(cpus) * (i + 1) // n] for i in range(n)]


def _pin():
    """Keeps the calling thread (a task's) and whatever it starts (reader
    threads, utilities) on the worker's processors (GG_DIST_CPUS, set by
    start_cluster(pin=True)); nothing without it."""
    cpus = os.environ.get("GG_DIST_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, [int(c) for c in cpus.split(",")])
        except (OSError, ValueError):
            pass


def worker_specs(devices=None, n_workers=None, threads=None, pin=False):
    """What start_cluster starts: a WorkerSpec per worker.

    devices: specs, one worker each ("cuda:0", "cuda:1", "opencl:0:1", "cpu";
    a device listed twice gets two workers, whose reading and computing
    then overlap); default: every CUDA GPU (the first ``n_workers`` of them),
    else ``n_workers`` CPU workers (default: the number of cores).  A CUDA
    worker sees only its GPU (CUDA_VISIBLE_DEVICES) and uses it as cuda:0;
    GPU workers carry the resource GPU=1.
    threads: OpenMP threads of a worker (default: cores / workers), for the
    CPU backend and the utilities' host work.
    pin: each worker's tasks (and the utilities and threads they start) run
    on their own contiguous share of the processors (GG_DIST_CPUS).
    """
    if devices is None or devices == "auto":
        gpus = cuda_devices()
        if gpus and n_workers is not None and int(n_workers) > len(gpus):
            raise ValueError(f"{n_workers} workers asked for, {len(gpus)} GPUs here "
                             "(list --devices to put several workers on one GPU)")
        devices = (gpus[:int(n_workers)] if n_workers is not None else gpus) if gpus else \
            ["cpu"] * int(n_workers or os.cpu_count() or 1)
    elif n_workers is not None:
        raise ValueError("give devices or n_workers, not both")
    if isinstance(devices, str):
        devices = [d.strip() for d in devices.split(",") if d.strip()]
    if not devices:
        raise ValueError("no worker to start (empty device list)")
    from .device import check_device
    n = len(devices)
    threads = int(threads or max(1, (os.cpu_count() or 1) // n))
    sets = _cpu_sets(n) if pin else None
    out = []
    for i, spec in enumerate(devices):
        spec = spec.strip()
        check_device(spec)
        backend = spec.split(":")[0]
        env = {"OMP_NUM_THREADS": str(threads), "GG_DIST_DEVICE": spec}
        if sets:
            env["GG_DIST_CPUS"] = ",".join(str(c) for c in sets[i])
        if backend == "cuda":
            idx = int(spec.split(":")[1]) if ":" in spec else 0
            env.update(CUDA_VISIBLE_DEVICES=_physical_gpu(idx), GG_DEVICE="cuda:0")
            name, res = f"gpu{idx}", {"GPU": 1}
        elif backend == "opencl":
            env["GG_DEVICE"] = spec
            name, res = f"opencl{i}", {"GPU": 1}
        elif backend == "cpu":
            env["GG_DEVICE"] = "cpu"
            name, res = f"cpu{i}", {}
        else:  # "auto" and the like: let each worker choose
            env["GG_DEVICE"] = spec
            name, res = f"worker{i}", {}
        taken = sum(1 for w in out if w.name == name or w.name.startswith(name + "-"))
        out.append(WorkerSpec(f"{name}-{taken}" if taken else name, spec, env, res))
    return out


def _system_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def _nanny_options(spec, host, memory_limit, env, silence_logs, local_directory=None):
    opts = {"host": host, "nthreads": 1, "resources": spec.resources or None,
            "env": {**(env or {}), **spec.env}, "memory_limit": memory_limit,
            "dashboard": False, "dashboard_address": None, "silence_logs": silence_logs}
    if local_directory:
        opts["local_directory"] = str(local_directory)
    return opts


def _quiet_nanny_config():
    """Dask's nannies put OMP_NUM_THREADS=1 (and MKL/OpenBLAS) into their own
    process and every worker before spawning it; our workers get their own
    OMP_NUM_THREADS, and the client's process must keep its environment.

    Nor do our workers get Dask's MALLOC_TRIM_THRESHOLD_=65536: setting it
    turns off glibc's dynamic mmap threshold, so every buffer of 128 KiB or
    more, in the worker and in every utility it starts (which inherit it),
    becomes an mmap/munmap pair and is faulted in afresh each time.  First
    touch is slow in the lent GPU machines' VMs (about 1 GB/s per thread with
    4 KiB pages); with it and fresh arrays, a PtSel strip took 0.73 s, not 0.51
    (bench/RESULTS.md, "geogpu.distributed: the cause of the lost
    efficiency").  A tile task's large buffers are reused as well (_buffer)."""
    import dask
    return dask.config.set({"distributed.nanny.pre-spawn-environ": {}})


def start_cluster(devices=None, n_workers=None, threads=None, host="127.0.0.1", scheduler_port=0,
                  memory_limit=None, env=None, silence_logs=40, local_directory=None, pin=False):
    """A local cluster of one worker process per GPU (see worker_specs),
    each with one thread, its own GG_DEVICE/CUDA_VISIBLE_DEVICES and the
    resource GPU=1 (none for CPU workers).  A dead worker is restarted by its
    nanny.  memory_limit: per worker (default: the machine's memory divided
    among the workers).  env: more environment variables of every worker.
    local_directory: the workers' scratch folder (Dask's default otherwise).
    pin: each worker on its own share of the processors (worker_specs).
    Returns a distributed.SpecCluster (close() it)."""
    from distributed import Nanny, Scheduler, SpecCluster
    specs = worker_specs(devices, n_workers, threads, pin)
    if memory_limit is None:
        memory_limit = _system_memory() // len(specs) or "auto"
    workers = {s.name: {"cls": Nanny,
                        "options": _nanny_options(s, host, memory_limit, env, silence_logs,
                                                  local_directory)}
               for s in specs}
    # no dashboard; its HTTP endpoint (health checks) on any free port
    scheduler = {"cls": Scheduler, "options": {"host": host, "port": scheduler_port,
                                               "dashboard": False, "dashboard_address": ":0"}}
    with _quiet_nanny_config():
        return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=silence_logs,
                           name="geogpu")


class open_client:
    """A distributed.Client: to a running scheduler (``scheduler`` address,
    e.g. "tcp://node1:8786"), or to a new local cluster (start_cluster's
    keyword arguments) that is closed with it.  A context manager::

        with open_client(devices=["cuda:0", "cuda:1"]) as client: ...
    """

    def __init__(self, scheduler=None, timeout=60, **cluster_options):
        from distributed import Client
        self.cluster = None
        if scheduler:
            if cluster_options:
                raise ValueError("cluster options do not apply to an existing scheduler")
            self.client = Client(scheduler, timeout=timeout)
        else:
            self.cluster = start_cluster(**cluster_options)
            try:
                self.client = Client(self.cluster, timeout=timeout)
            except BaseException:
                self.cluster.close()
                raise

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None


def workers(client):
    """{worker address: (name, device, resources)} of a client's cluster
    (device: what the worker's tasks use, its GG_DEVICE, "auto" if unset)."""
    devs = client.run(lambda: os.environ.get("GG_DIST_DEVICE") or os.environ.get("GG_DEVICE")
                      or "auto")
    info = client.scheduler_info()["workers"]
    return {a: (w.get("name"), devs.get(a, "?"), w.get("resources") or {}) for a, w in info.items()}


def _warm_task(device):
    _pin()
    import importlib
    importlib.import_module(".ops", __package__)  # the tile tasks' op wrappers
    from .device import context_for
    try:
        _gdal().AllRegister()  # GDAL loaded and its drivers registered
    except ImportError:
        pass  # no GDAL bindings in this worker: utility tasks only
    _ortho_entry()  # the plugin's gdal_ortho entry point, for in-process ortho tasks
    return context_for(_device(device)).device_name


def warm_up(client, device=None):
    """Starts every worker's device (backend, CUDA context, kernels) in the
    thread its tasks run in (contexts are kept per thread), and loads GDAL,
    the op wrappers and gdal_ortho's entry point there, as a long-running
    cluster has it (the first tile task of a cold worker pays about 0.15 s
    for these).  In-process ortho tasks then run on that same context.
    Returns {worker address: device name}."""
    addrs = list(client.scheduler_info()["workers"])
    futures = {a: client.submit(_warm_task, device, key=f"geogpu-warm-{uuid.uuid4().hex[:12]}",
                                workers=[a], allow_other_workers=False, pure=False)
               for a in addrs}
    return {a: f.result() for a, f in futures.items()}


_Shape = namedtuple("_Shape", "workers gpus")


def _shape(client):
    """How many workers the cluster has, and how many of them GPU workers
    (resource GPU): one question to the scheduler per batch (each
    scheduler_info() is a round trip in recent distributed)."""
    info = client.scheduler_info()["workers"].values()
    return _Shape(len(info), sum(1 for w in info if (w.get("resources") or {}).get("GPU")))


def _task_resources(shape):
    """GPU=1 when the cluster has GPU workers (so tasks run only there, one
    at a time), nothing otherwise (CPU workers, or a plain dask cluster)."""
    return {"GPU": 1} if shape.gpus else None


def _serve_workers(scheduler, devices, n_workers, threads, host, memory_limit, silence_logs,
                   pin=False):
    """Runs one nanny per device of this machine against ``scheduler`` until
    interrupted (the ``workers`` command: a multi-node cluster)."""
    import asyncio

    from distributed import Nanny

    specs = worker_specs(devices, n_workers, threads, pin)
    if memory_limit is None:
        memory_limit = _system_memory() // len(specs) or "auto"
    node = os.uname().nodename

    async def run():
        with _quiet_nanny_config():
            nannies = [Nanny(scheduler, name=f"{node}-{s.name}",
                             **_nanny_options(s, host, memory_limit, None, silence_logs))
                       for s in specs]
            await asyncio.gather(*nannies)
        print(f"geogpu.distributed: {len(specs)} workers ({', '.join(s.device for s in specs)}) "
              f"serving {scheduler}; Ctrl-C stops them", file=sys.stderr, flush=True)
        try:
            await asyncio.gather(*(n.finished() for n in nannies))
        finally:
            await asyncio.gather(*(n.close() for n in nannies), return_exceptions=True)

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    return 0


# ================================================================== bookkeeping

def _stat(path):
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def _signature(*parts):
    """A digest of what an output is computed from (JSON-able parts)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _inputs_state(paths):
    """(absolute path, size, mtime) of each input: an input that changes
    invalidates the outputs computed from it."""
    out = []
    for p in paths:
        try:
            out.append([str(p)] + _stat(p))
        except OSError:
            out.append([str(p), None, None])  # e.g. a GDAL connection string
    return out


def _marker_path(outdir, name):
    return Path(outdir) / STATE_DIR / f"{name}.done"


def _complete(outdir, name, signature):
    """The marker of an output that is complete and unchanged, else None."""
    try:
        m = json.loads(_marker_path(outdir, name).read_text())
    except (OSError, ValueError):
        return None
    if m.get("version") != MARKER_VERSION or m.get("signature") != signature:
        return None
    files = m.get("files") or {}
    if not files:
        return None
    for f, state in files.items():
        try:
            if _stat(Path(outdir) / f) != state:
                return None
        except OSError:
            return None
    return m


def _workdir(outdir, name):
    """A private folder for one attempt of a task, on the output's
    filesystem (so that moving its files into place is a rename)."""
    d = Path(outdir) / STATE_DIR / f"tmp-{name}-{uuid.uuid4().hex[:12]}"
    d.mkdir(parents=True)
    return d


def _commit(work, outdir, name, signature, info):
    """Moves every file of a finished attempt into outdir, then writes the
    marker (last: a task killed before it is redone, never half-trusted)."""
    outdir = Path(outdir)
    files = {}
    for p in sorted(work.iterdir()):
        if p.name.startswith(".") or not p.is_file():
            continue  # a utility's own temporaries (none after a success)
        dst = outdir / p.name
        os.replace(p, dst)
        if not p.name.endswith(".aux.xml"):  # GDAL may rewrite these later
            files[p.name] = _stat(dst)
    if not files:
        raise TaskError(f"{name}: produced no output file")
    marker = _marker_path(outdir, name)
    tmp = marker.with_name(f".{marker.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps({"version": MARKER_VERSION, "signature": signature, "files": files,
                               "committed": time.time(), **info}, indent=1, sort_keys=True))
    os.replace(tmp, marker)
    return sorted(files)


def _cleanup(outdirs, names):
    """Removes the task folders that attempts of this batch left behind (an
    attempt whose worker died): one listing of each state folder (a glob
    per name listed it once per tile: 1 ms of a 4-GPU PtSel batch)."""
    prefixes = tuple(f"tmp-{name}-" for name in names)
    for outdir in outdirs:
        try:
            entries = list(os.scandir(Path(outdir) / STATE_DIR))
        except OSError:  # no state folder: nothing was attempted there
            continue
        for e in entries:
            if e.name.startswith(prefixes):
                shutil.rmtree(e.path, ignore_errors=True)


def _worker_identity():
    try:
        from distributed import get_worker
        w = get_worker()
        return str(w.name), w.address
    except Exception:  # run outside a worker (tests, a local fallback)
        return "local", ""


def _device(explicit):
    """The device of a task: the batch's explicit one, else the worker's
    (GG_DEVICE, set per worker by start_cluster), else auto."""
    return explicit or os.environ.get("GG_DEVICE") or "auto"


# ===================================================================== utilities

def _find_program(program):
    """A utility's path on this worker: a path as given, else next to the
    libgeogpu this worker loaded (<build>/bin, <prefix>/bin), else PATH."""
    if os.sep in program:
        if os.access(program, os.X_OK):
            return program
        raise TaskError(f"{program}: not an executable file")
    from ._lib import utility_dirs
    for d in utility_dirs():
        p = Path(d) / program
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    p = shutil.which(program)
    if p:
        return p
    raise TaskError(f"{program} not found on worker (looked next to libgeogpu and on PATH)")


def _dies_with_worker(argv):
    """Runs a utility under `setpriv --pdeathsig KILL` when available: a
    worker that dies takes its utility with it (an orphan would go on
    computing, on the GPU, a task that Dask reschedules elsewhere).  A plain
    preexec_fn prctl is not safe in a threaded process."""
    sp = shutil.which("setpriv")
    if sp and sys.platform.startswith("linux"):
        return [sp, "--pdeathsig", "KILL", "--"] + argv
    return argv


# ------------------------------------------------ gdal_ortho in the worker

_ORTHO_ENTRY = {}              # "entry": (gg_ortho_run, plugin path) or None, once looked up
_ORTHO_ENTRY_LOCK = threading.Lock()


def _one_libgeogpu():
    """Whether this process maps a single libgeogpu.so file: the plugin must
    run on the very library whose context it is handed (a context is a
    pointer into that library's state)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f
                     if "/libgeogpu.so" in line and len(line.split()) >= 6}
    except OSError:
        return True  # no /proc: the loader's soname rule (one libgeogpu.so.0) holds
    return len({os.path.realpath(p) for p in paths}) <= 1


def _plugin_folders():
    """Where gdal_GeoGPU.so may be, best first: next to libgeogpu or where
    it was installed (``_lib.plugin_dirs``), ``<lib>/../plugins`` (the GPU
    bundle's layout, scripts/pack_gpu_bundle.sh), GDAL_DRIVER_PATH."""
    from . import _lib
    out = list(_lib.plugin_dirs())
    folder = _lib._lib_folder()
    if folder is not None:
        out.append(Path(folder).parent / "plugins")
    out += [Path(d) for d in os.environ.get("GDAL_DRIVER_PATH", "").split(os.pathsep) if d]
    seen, unique = set(), []
    for d in out:
        key = os.path.realpath(d)
        if key not in seen and (Path(d) / "gdal_GeoGPU.so").is_file():
            seen.add(key)
            unique.append(Path(d))
    return unique


def _ortho_entry():
    """gdal_ortho as a function (``gg_ortho_run``) from the GDAL plugin of
    this worker's libgeogpu (_plugin_folders): (function, plugin path), or
    None when there is none here (not built, an older plugin, or another
    libgeogpu than the package's)."""
    with _ORTHO_ENTRY_LOCK:
        if "entry" not in _ORTHO_ENTRY:
            _ORTHO_ENTRY["entry"] = _load_ortho_entry()
        return _ORTHO_ENTRY["entry"]


def _load_ortho_entry():
    import ctypes
    for d in _plugin_folders():
        path = d / "gdal_GeoGPU.so"
        try:
            so = ctypes.CDLL(str(path))
        except OSError:
            continue
        fn = getattr(so, "gg_ortho_run", None)
        if fn is None:
            continue
        if not _one_libgeogpu():
            return None
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p,
                       ctypes.c_char_p, ctypes.c_size_t]
        return fn, str(path)
    return None


def _in_process(spec):
    """Whether a task runs gdal_ortho in this worker process: asked for by
    the batch (``in_process``), the utility is the stock gdal_ortho (not a
    path to another program), the worker does not say GG_DIST_SUBPROCESS=1,
    and it has the entry point."""
    return (bool(spec.get("in_process")) and spec["program"] == "gdal_ortho"
            and os.environ.get("GG_DIST_SUBPROCESS", "") != "1" and _ortho_entry() is not None)


def _run_ortho_here(argv, device):
    """gdal_ortho's command line run by gg_ortho_run in this process on the
    worker's context (device.context_for: the one warm_up started, kept
    across tasks; the call leaves it as it is).  ctypes releases the GIL for
    the call, so the worker keeps talking to the scheduler.  Returns (exit
    status, the first error line or "")."""
    import ctypes

    from .device import context_for
    fn, _ = _ortho_entry()
    ctx = context_for(device)
    raw = [os.fsencode(a) for a in argv]
    cargv = (ctypes.c_char_p * (len(raw) + 1))(*raw, None)
    err = ctypes.create_string_buffer(4096)
    rc = fn(len(raw), cargv, ctx.handle, err, len(err))
    return rc, err.value.decode("utf-8", "replace")


def _execute(spec, argv_tail, device):
    """Runs the task's utility with argv_tail (what follows the program name)
    on the worker's device: in this process when _in_process(spec), else as
    a child process.  Returns (ok, why it failed, runner: "in-process" or
    "subprocess")."""
    if _in_process(spec):
        rc, err = _run_ortho_here([spec["program"]] + argv_tail, device)
        why = f"{err} (in-process, status {rc})" if err else f"in-process, status {rc}"
        return rc == 0, why, "in-process"
    program = _find_program(spec["program"])
    cwd = spec.get("cwd")
    p = subprocess.run(_dies_with_worker([program] + argv_tail), capture_output=True, text=True,
                       cwd=cwd if cwd and os.path.isdir(cwd) else None)
    return p.returncode == 0, _why(p), "subprocess"


def _why(p):
    """The cause of a utility's failure, in one line."""
    lines = [line.strip() for line in (p.stderr or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    msg = errors[0] if errors else (lines[-1] if lines else "")
    code = f"killed by signal {-p.returncode}" if p.returncode < 0 else f"exit status {p.returncode}"
    return f"{msg} ({code})" if msg else code


def _utility_task(spec):
    """One scene or pair: runs the utility on the worker's device into a
    private folder, then commits its files.  Runs on a worker."""
    t0 = time.time()
    _pin()
    outdir, name, sig = spec["outdir"], spec["name"], spec["signature"]
    wname, _ = _worker_identity()
    if _complete(outdir, name, sig):  # a duplicate of a finished attempt
        return {"name": name, "status": "skipped", "worker": wname}
    device = _device(spec["device"])
    if not _in_process(spec):
        _find_program(spec["program"])  # a missing utility fails before any folder is made
    work = _workdir(outdir, name)
    try:
        # {out}: the output's path without extension, for options naming
        # more output files (gdal_coreg -fit {out}.json, gdal_xcorr -table
        # {out}.csv): they are written, committed and checked with the rest
        stem = str(work / Path(spec["output"]).stem)
        args = [a.replace("{out}", stem) for a in spec["args"]]
        tail = (["-q"] if "-q" not in args else []) + ["-device", device]
        tail += args + spec["inputs"] + [str(work / spec["output"])]
        ok, why, runner = _execute(spec, tail, device)
        if not ok:
            raise TaskError(f"{name}: {Path(spec['program']).name} failed: {why}")
        seconds = time.time() - t0
        files = _commit(work, outdir, name, sig, {"worker": wname, "device": device,
                                                  "seconds": round(seconds, 3),
                                                  "runner": runner})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"name": name, "status": "done", "worker": wname, "device": device,
            "seconds": time.time() - t0, "files": files, "runner": runner}


def _group_task(spec):
    """Several scenes in one utility run (``<program> -outdir``): one process
    start and one device initialisation (CUDA context, kernels, GDAL) for
    the group instead of one per scene.  Each scene's file is committed under
    its own marker, exactly as a one-scene task commits it, so a re-run or a
    retry redoes only the scenes still missing.  Runs on a worker."""
    t0 = time.time()
    _pin()
    outdir, wname = spec["outdir"], _worker_identity()[0]
    todo = [it for it in spec["items"] if not _complete(outdir, it["name"], it["signature"])]
    if not todo:
        return {"name": spec["name"], "status": "skipped", "worker": wname, "items": []}
    device = _device(spec["device"])
    if not _in_process(spec):
        _find_program(spec["program"])
    work = _workdir(outdir, spec["name"])
    items, missing = [], []
    try:
        args = spec["args"]
        tail = (["-q"] if "-q" not in args else []) + ["-device", device]
        tail += args + ["-outdir", str(work)] + [it["inputs"][0] for it in todo]
        _, why, runner = _execute(spec, tail, device)
        seconds = (time.time() - t0) / len(todo)
        for it in todo:
            out = it["output"]
            mine = [f for f in work.iterdir() if f.name == out or f.name.startswith(out + ".")]
            if not any(f.name == out for f in mine):
                missing.append(it["name"])
                continue
            one = _workdir(outdir, it["name"])
            try:
                for f in mine:
                    os.replace(f, one / f.name)
                files = _commit(one, outdir, it["name"], it["signature"],
                                {"worker": wname, "device": device, "seconds": round(seconds, 3),
                                 "group": spec["name"], "runner": runner})
            finally:
                shutil.rmtree(one, ignore_errors=True)
            items.append({"name": it["name"], "status": "done", "seconds": seconds,
                          "files": files})
        if missing:
            # the others are committed: a retry runs only these
            raise TaskError(f"{', '.join(missing)}: {Path(spec['program']).name} failed: {why}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"name": spec["name"], "status": "done", "worker": wname, "device": device,
            "seconds": time.time() - t0, "items": items, "runner": runner}


def _absolute_args(args, cwd):
    """Arguments naming existing files made absolute (workers may run
    elsewhere), and the files themselves (they are inputs too: a changed DEM
    invalidates the orthoimages)."""
    out, files = [], []
    for a in args:
        a = str(a)
        p = Path(cwd, a) if not os.path.isabs(a) else Path(a)
        if not a.startswith("-") and "{out}" not in a and p.exists():
            out.append(str(p.resolve()))
            files.append(str(p.resolve()))
        else:
            out.append(a)
    return out, files


# ========================================================================= batch

TaskRecord = namedtuple("TaskRecord", "name status worker device seconds files error phases "
                        "runner reader", defaults=(None, None, None))
TaskRecord.__doc__ = """One output of a batch: status "done" (computed now), "skipped"
(complete from an earlier run) or "failed" (error: the cause); phases: where
a tile task's seconds went ({"setup", "read", "run", "write"} on the task
thread; "read_s", "write_s": the reads and the write on their threads), else None;
runner: how a scene or pair task ran its utility, "in-process" (gdal_ortho's
entry point in the worker) or "subprocess", else None; reader: how a tile
task read its window, "file rows" (as it lies in the file, _file_rows) or
"gdal", else None."""


class Batch:
    """What a batch did: ``records`` (TaskRecord per output, in the order
    given), ``done``/``skipped``/``failed`` (lists of records), ``ok``,
    ``seconds`` (wall time), ``outputs`` (mosaics of a tile batch),
    ``spans``: (start, end) of each tile task on its worker, in seconds from
    the batch's start (where the client's and the workers' clocks agree:
    what Dask's dispatch and collection cost is the batch's time outside
    them); ``client``: the client's own seconds, by step ("check": the
    markers of earlier runs, "submit", "cleanup" after the last task; a
    tile batch adds "plan" before them, with its parts "describe" (the
    input stack) and "shape" (the scheduler's workers), and "mosaic"
    after)."""

    def __init__(self, records, seconds, outputs=(), spans=(), details=None):
        self.records = records
        self.seconds = seconds
        self.outputs = list(outputs)
        self.spans = list(spans)
        self.client = {}
        # name -> what the task returned for it, or its marker (skipped):
        # tile_batch's mosaic reads the tiles' block sizes there
        self._details = details or {}

    def _with(self, status):
        return [r for r in self.records if r.status == status]

    done = property(lambda self: self._with("done"))
    skipped = property(lambda self: self._with("skipped"))
    failed = property(lambda self: self._with("failed"))
    ok = property(lambda self: not self.failed)

    def raise_for_failures(self):
        if self.failed:
            raise TaskError(f"{len(self.failed)} of {len(self.records)} tasks failed: "
                            + "; ".join(r.error for r in self.failed[:5]))
        return self

    def summary(self):
        workers_used = sorted({r.worker for r in self.done if r.worker})
        return (f"{len(self.done)} done, {len(self.skipped)} skipped, {len(self.failed)} failed "
                f"in {self.seconds:.1f} s on {len(workers_used)} worker"
                f"{'' if len(workers_used) == 1 else 's'}")

    def __repr__(self):
        return f"<geogpu.distributed.Batch {self.summary()}>"


_Job = namedtuple("_Job", "name outdir signature spec")


MARKER_POLL_S = 0.001  # how often a batch looks for its outputs' markers


def _units(j):
    """(name, outdir, signature) of each output of a job: the job itself, or
    each item of a group job (several scenes in one task)."""
    items = j.spec.get("items")
    if items is None:
        return [(j.name, j.outdir, j.signature)]
    return [(it["name"], j.outdir, it["signature"]) for it in items]


def _submit(client, fn, specs, keys, retries, resources):
    """One task per spec, in one message to the scheduler.

    Why a function of its own: each submission makes the client read the
    source of the function that submits (dask's record of computations for
    its dashboard); 4 client.submit calls from _run_jobs cost 13 ms of
    tokenizing on the client, a serial cost in every batch."""
    return client.map(fn, specs, key=keys, pure=False, retries=retries, resources=resources)


def _run_jobs(client, fn, jobs, retries, progress, shape):
    """Submits the jobs that are not complete yet, one task each, and
    collects a TaskRecord per output (in the order of jobs and their items)."""
    from distributed import as_completed

    t0 = time.time()
    records = {}
    spans = []
    details = {}

    def from_marker(name, m, status):
        now = status != "skipped"
        return TaskRecord(name, status, m.get("worker", ""), m.get("device", ""),
                          float(m.get("seconds", 0.0)) if now else 0.0, sorted(m["files"]), "",
                          m.get("phases") if now else None, m.get("runner") if now else None,
                          m.get("reader") if now else None)

    todo = []
    for j in jobs:
        left = 0
        for name, outdir, sig in _units(j):
            m = _complete(outdir, name, sig)
            if m:  # what the earlier run recorded
                records[name] = from_marker(name, m, "skipped")
                details[name] = m
            else:
                left += 1
        if left:
            todo.append(j)
    total = sum(len(_units(j)) for j in jobs)
    finished = len(records)
    if progress is not None:
        progress(finished, total)
    client_s = {"check": time.time() - t0}
    if todo:
        # a fresh key per submission: the scheduler may still hold the
        # erred task of a previous batch under the old one
        keys = [f"geogpu-{j.name}-{uuid.uuid4().hex[:12]}" for j in todo]
        t = time.time()
        futures = dict(zip(_submit(client, fn, [j.spec for j in todo], keys, retries,
                                   _task_resources(shape)), todo))
        client_s["submit"] = time.time() - t
        lock = threading.Lock()
        over = threading.Event()  # the batch has returned: results coming later are dropped

        broke = []  # what stopped the results' thread, if anything did

        def consume():
            """The tasks' results (or failures), fetched by the client's
            event loop as they end (one blocking round trip per task less)."""
            nonlocal finished
            try:
                for f, r in as_completed(list(futures), with_results=True, raise_errors=False):
                    with lock:
                        if over.is_set():
                            return
                        finished += take(f, r)
            except BaseException as e:  # noqa: BLE001 - raised again by the batch
                broke.append(e)

        answered = set()  # jobs whose result came

        def take(f, r):
            """Records one task's result; the number of outputs it settled."""
            j = futures[f]
            answered.add(j.name)
            units = [u for u in _units(j) if u[0] not in records]
            try:
                if f.status == "error":  # r: (type, exception, traceback)
                    raise r[1]
                if f.status == "cancelled":  # r: the CancelledError
                    raise r
                if "started" in r:
                    spans.append((r["started"] - t0, r["ended"] - t0))
                if "items" not in r:
                    details[j.name] = r
                    records[j.name] = TaskRecord(j.name, r["status"], r.get("worker", ""),
                                                 r.get("device", ""), float(r.get("seconds", 0.0)),
                                                 r.get("files", []), "", r.get("phases"),
                                                 r.get("runner"), r.get("reader"))
                for it in r.get("items", []):
                    details[it["name"]] = it
                    records[it["name"]] = TaskRecord(it["name"], it["status"], r.get("worker", ""),
                                                     r.get("device", ""), float(it["seconds"]),
                                                     it.get("files", []), "", it.get("phases"),
                                                     r.get("runner"), it.get("reader"))
                for name, outdir, sig in units:  # done by a duplicate attempt
                    if name not in records:
                        m = _complete(outdir, name, sig)
                        records[name] = from_marker(name, m, "done") if m else TaskRecord(
                            name, "failed", "", "", 0.0, [], f"{name}: no output")
            except Exception as e:  # the task's exception, or KilledWorker
                msg = str(e) if isinstance(e, TaskError) else f"{j.name}: {type(e).__name__}: {e}"
                for name, outdir, sig in units:
                    m = _complete(outdir, name, sig)  # an earlier attempt's part of a group
                    records[name] = from_marker(name, m, "done") if m else TaskRecord(
                        name, "failed", "", "", 0.0, [], msg)
            return len(units)

        # Meanwhile the outputs' markers: the batch is over once every output
        # is committed, which a task's marker says a few milliseconds before
        # Dask's notice and result reach the client (collection took 5-9 ms
        # of a 0.29 s PtSel batch on 4 GPUs: bench/RESULTS.md, session 21).
        # The tasks' results that have come by then fill in their records.
        waiting = {u[0]: u for j in todo for u in _units(j) if u[0] not in records}
        consumer = threading.Thread(target=consume, daemon=True, name="geogpu-results")
        consumer.start()
        told = finished
        looked = {}  # name -> the marker's mtime when last read (an old one is read once)
        while True:
            consumer.join(MARKER_POLL_S)
            with lock:
                for name in [n for n in waiting if n in records]:
                    del waiting[name]
                # every output, each poll: workers commit theirs side by side,
                # and a marker read as it comes spreads the reading out
                for name in list(waiting):
                    _, outdir, sig = waiting[name]
                    try:
                        mtime = os.stat(_marker_path(outdir, name)).st_mtime_ns
                    except OSError:
                        continue
                    if looked.get(name) == mtime:
                        continue
                    looked[name] = mtime
                    m = _complete(outdir, name, sig)
                    if m is None:
                        continue
                    records[name] = from_marker(name, m, "done")
                    details[name] = m
                    finished += 1
                    del waiting[name]
                done = not consumer.is_alive() or not waiting
                if done:
                    over.set()
                now = finished
            if progress is not None and now != told:
                progress(now, total)
                told = now
            if done:
                break
        if waiting and broke:
            raise broke[0]
        with lock:  # tasks done before their results came: spans from their markers
            for j in todo:
                ms = [details.get(u[0]) or {} for u in _units(j)]
                if j.name not in answered and ms and all("task_started" in m for m in ms):
                    spans.append((min(m["task_started"] for m in ms) - t0,
                                  max(m["committed"] for m in ms) - t0))
        t = time.time()
        _cleanup({j.outdir for j in todo}, [j.name for j in todo]
                 + [u[0] for j in todo for u in _units(j)])
        client_s["cleanup"] = time.time() - t
    batch = Batch([records[u[0]] for j in jobs for u in _units(j)], time.time() - t0, spans=spans,
                  details=details)
    batch.client = client_s
    return batch


def _local_client(client):
    """The client given, or a throw-away local cluster (closed by the caller)."""
    if client is not None:
        return client, None
    oc = open_client()
    return oc.client, oc


def _stem(path):
    return Path(str(path)).stem


def _check_names(names, what):
    seen = {}
    for n, src in names:
        if n in seen:
            raise ValueError(f"{what} '{src}' and '{seen[n]}' would both write '{n}': "
                             "rename one or give explicit names")
        seen[n] = src


def ortho_batch(client, sources, outdir, args=(), device=None, retries=2, program="gdal_ortho",
                ext=".tif", progress=None, per_task=1, in_process=None):
    """Orthorectifies scenes, one task per scene: ``gdal_ortho [args]
    -device <worker's> <src> <outdir>/<src stem><ext>``.

    args: gdal_ortho's options (-dem, -t_srs, -tr, -r, ...), the same for every
    scene.  device: force one device spec for every task (default: each
    worker's own).  retries: attempts after a failure.  program: the utility
    (a name found next to libgeogpu or on PATH, or a path).  progress:
    ``progress(finished, total)``.  per_task: scenes per task (default 1);
    N > 1 runs ``gdal_ortho -outdir`` on N scenes at a time, so that the
    utility's start (process, GDAL, CUDA context: about a second) is paid
    once per N scenes; "auto": the scenes shared evenly among the workers,
    one task each.  The files are the same either way, each scene under its
    own completion marker.  Returns a Batch; a failing scene does not stop
    the others.

    in_process: run gdal_ortho inside the worker process (the default; False,
    or GG_DIST_SUBPROCESS=1 in the client's or a worker's environment, runs
    it as a child process).  In-process, a task calls gdal_ortho's own entry
    point, ``gg_ortho_run`` in the GDAL plugin gdal_GeoGPU.so next to the
    worker's libgeogpu, with the same command line, on the device context the
    worker keeps for all its tasks (``device.context_for``, started by
    ``warm_up``).  Why: every gdal_ortho process creates its own CUDA
    context, 0.25 s alone and 0.45-0.57 s when the processes of 2-4 GPUs
    start at once; paid per task, that start kept 16 scenes of 8192^2 on 4
    GPUs at 0.53 parallel efficiency (bench/RESULTS.md).  The files, error
    lines, markers and retries are the same either way.  What it costs: a
    crash in the C code takes the worker process down with it, not just a
    child (Dask then reschedules its task on another worker, as for any dead
    worker: ``distributed.scheduler.allowed-failures``), and the task's
    relative paths resolve in the worker's folder, not the client's (inputs
    and file arguments are made absolute by the batch anyway).  A worker
    without the entry point (plugin not built, or another ``program``)
    runs the utility as a child process; ``TaskRecord.runner`` says which
    ran."""
    if in_process is None:
        in_process = os.environ.get("GG_DIST_SUBPROCESS", "") != "1"
    return _batch_of_commands(client, [[s] for s in sources], outdir, args, device, retries,
                              program, ext, progress, "scene", per_task=per_task,
                              in_process=bool(in_process))


def pair_batch(client, program, pairs, outdir, args=(), device=None, retries=2, ext=".tif",
               progress=None):
    """Runs a two-input utility once per pair: ``<program> [args] -device
    <worker's> <primary> <secondary> <outdir>/<name><ext>``; the name is
    ``<primary stem>_<secondary stem>`` unless a pair is a triple (primary,
    secondary, name).  For gdal_insar, gdal_xcorr, gdal_coreg, and any
    utility of that form.  Outputs of several files (gdal_insar's
    one-file-per-product) are kept together under one completion marker."""
    items, names = [], []
    for pr in pairs:
        if len(pr) not in (2, 3):
            raise ValueError(f"a pair is (primary, secondary[, name]), not {pr!r}")
        items.append([pr[0], pr[1]])
        names.append(pr[2] if len(pr) == 3 else f"{_stem(pr[0])}_{_stem(pr[1])}")
    return _batch_of_commands(client, items, outdir, args, device, retries, program, ext,
                              progress, "pair", names)


def _batch_of_commands(client, items, outdir, args, device, retries, program, ext, progress,
                       what, names=None, per_task=1, in_process=False):
    if per_task != "auto" and (not isinstance(per_task, int) or per_task < 1):
        raise ValueError(f"per_task is a positive integer or 'auto', not {per_task!r}")
    if per_task != 1 and (names is not None or ext.lower() != ".tif"):
        raise ValueError("several scenes per task need the utility's own -outdir names "
                         "(<src stem>.tif)")
    outdir = Path(outdir).resolve()
    if not outdir.is_dir():
        raise ValueError(f"output folder '{outdir}' does not exist")
    args = [str(a) for a in args]
    if "-device" in args:
        raise ValueError("-device is chosen per worker; use device= (or --device) to force one")
    if "-outdir" in args:
        raise ValueError("-outdir is the batch's own output folder; do not pass it to the utility")
    cwd = os.getcwd()
    args, arg_files = _absolute_args(args, cwd)
    names = names or [_stem(it[0]) for it in items]
    _check_names([(n + ext, it[0]) for n, it in zip(names, items)], what)
    program = str(Path(program).resolve()) if os.sep in str(program) else str(program)
    pname = Path(program).name
    jobs = []
    for name, inputs in zip(names, items):
        inputs = [str(Path(cwd, i).resolve()) if os.path.exists(Path(cwd, i)) else str(i)
                  for i in inputs]
        output = name + ext
        sig = _signature(pname, args, _inputs_state(inputs + arg_files), output)
        spec = {"program": program, "args": args, "inputs": inputs, "output": output,
                "outdir": str(outdir), "name": output, "signature": sig, "device": device,
                "cwd": cwd, "in_process": in_process}
        jobs.append(_Job(output, str(outdir), sig, spec))
    client, own = _local_client(client)
    try:
        shape = _shape(client)
        if per_task == 1:
            return _run_jobs(client, _utility_task, jobs, retries, progress, shape)
        return _run_jobs(client, _group_task, _group_jobs(jobs, per_task, shape), retries,
                         progress, shape)
    finally:
        if own is not None:
            own.close()


SCENE_ITEM = ("name", "signature", "inputs", "output")
TILE_ITEM = ("name", "signature", "window")


def _group_jobs(jobs, per_task, shape, item_keys=SCENE_ITEM, costs=None):
    """Jobs of one scene (or tile) each gathered into jobs of ``per_task``
    (the last one fewer), in order; "auto": as many groups as workers (GPU
    workers where there are some), as even as they come, or with ``costs``
    (one number per job) as even in cost as _balanced makes them.  A
    group's spec is its first job's without the keys of one item, plus
    "items" (those keys of each job)."""
    parts = None
    if per_task == "auto":
        n = max(1, shape.gpus or shape.workers)
        if costs is not None:
            parts = _balanced(costs, n)
        per_task = max(1, math.ceil(len(jobs) / n))
    if parts is None:
        parts = [range(k, min(k + per_task, len(jobs))) for k in range(0, len(jobs), per_task)]
    out = []
    for g, part in enumerate(parts):
        first = jobs[part[0]].spec
        name = f"g{g:04d}_{first['name']}"
        spec = {key: v for key, v in first.items() if key not in item_keys}
        spec.update(name=name, items=[{key: jobs[i].spec[key] for key in item_keys} for i in part])
        out.append(_Job(name, first["outdir"], "", spec))
    return out


def _balanced(costs, n):
    """Indices 0 .. len(costs)-1 cut into at most n groups of near-equal
    summed cost: the costliest first, each to the group with the least so
    far (longest-processing-time rule, within 4/3 of the best cut); each
    group in index order.

    Why: a batch lasts as long as its slowest worker.  Tiles at the edges
    of a raster have less halo; cut in grid order, the groups of inner
    tiles took 4 % longer on 4 GPUs than those with the edges."""
    groups = [[] for _ in range(min(n, len(costs)))]
    load = [0] * len(groups)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        g = min(range(len(groups)), key=lambda g: (load[g], g))
        groups[g].append(i)
        load[g] += costs[i]
    return [sorted(g) for g in groups]


# ========================================================================= tiles

def tile_grid(width, height, tile):
    """Output tiles (ix, iy, x0, y0, w, h) of a width x height raster cut in
    tile x tile squares (``tile`` an int or a (w, h) pair); edge tiles are
    smaller."""
    tw, th = (tile, tile) if isinstance(tile, int) else tile
    if tw < 1 or th < 1:
        raise ValueError(f"tile size must be positive, not {tile}")
    out = []
    for iy, y in enumerate(range(0, height, th)):
        for ix, x in enumerate(range(0, width, tw)):
            out.append((ix, iy, x, y, min(tw, width - x), min(th, height - y)))
    return out


def _gdal():
    from osgeo import gdal
    return gdal


def _open_raster(path):
    """gdal.Open without touching the process-wide exception setting."""
    gdal = _gdal()
    gdal.PushErrorHandler("CPLQuietErrorHandler")
    try:
        ds = gdal.Open(str(path))
    finally:
        gdal.PopErrorHandler()
    if ds is None:
        raise TaskError(f"cannot open '{path}': {gdal.GetLastErrorMsg() or 'not a raster'}")
    return ds


def _describe_stack(sources):
    """(width, height, bands per source, complex, nodata, geotransform, WKT,
    AREA_OR_POINT) of the input stack, as the GG driver reads it: every band
    of every source in order; nodata, georeferencing from the first source."""
    gdal = _gdal()
    size, counts, complexity = None, [], set()
    first = None
    for s in sources:
        ds = _open_raster(s)
        if size is None:
            size = (ds.RasterXSize, ds.RasterYSize)
            b1 = ds.GetRasterBand(1)
            gt = ds.GetGeoTransform(can_return_null=True)
            first = (b1.GetNoDataValue(), list(gt) if gt else None, ds.GetProjection(),
                     ds.GetMetadataItem("AREA_OR_POINT"))
        elif (ds.RasterXSize, ds.RasterYSize) != size:
            raise ValueError(f"input '{s}' is {ds.RasterXSize}x{ds.RasterYSize} but '{sources[0]}' "
                             f"is {size[0]}x{size[1]}: inputs must match in size")
        counts.append(ds.RasterCount)
        for b in range(1, ds.RasterCount + 1):
            complexity.add(bool(gdal.DataTypeIsComplex(ds.GetRasterBand(b).DataType)))
        ds = None
    if len(complexity) > 1:
        raise ValueError("inputs mix real and complex bands")
    return size[0], size[1], counts, complexity.pop(), first[0], first[1], first[2], first[3]


_local = threading.local()


def _reuse_buffers():
    return os.environ.get("GG_DIST_REUSE_BUFFERS", "1") != "0"



def _buffers():
    """This thread's reusable host buffers, by slot name (see _buffer)."""
    bufs = getattr(_local, "buffers", None)
    if bufs is None:
        bufs = _local.buffers = {}
    return bufs


def _buffer(slot, shape, dtype, reserve=0, ctx=None, pin=False, store=None):
    """A numpy array (shape, dtype) over this thread's reusable host buffer
    ``slot``, kept from task to task of a worker (grown when too small).

    Why: a tile task reads hundreds of MB (a 3260 x 385 x 60 CFloat32 strip
    is 600 MB) and writes its products; a fresh numpy array is fresh
    anonymous memory, faulted in page by page on first touch, and that is
    slow in a virtual machine (about 1 GB/s per thread).  With ``pin`` and
    ``ctx`` on CUDA the buffer is page-locked (Context.host_buffer): the
    device copies it without staging it through pinned slots, one copy of
    every byte less for the host's memory, which the workers share; a
    page-locked buffer a worker already holds is used by every later task
    (GG_DIST_PINNED=1 or 0: always, never).  Else an anonymous mapping
    advised for transparent huge pages (512 times fewer faults the first
    time).  The arrays are valid until
    the thread's next task asks for the same slot: tasks of one thread run
    one after the other.  reserve: elements to map at least (a batch's
    largest window), so that a worker maps each slot once.  store: the
    buffers of the task thread when a helper thread reads for it
    (_buffers() of that thread; default this thread's).
    GG_DIST_REUSE_BUFFERS=0: plain numpy arrays (for comparison)."""
    import numpy as np
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if not _reuse_buffers():
        return np.empty(shape, dtype)
    nbytes = max(1, max(count, int(reserve)) * dtype.itemsize)
    bufs = _buffers() if store is None else store
    env = os.environ.get("GG_DIST_PINNED", "")
    cuda = ctx is not None and ctx.backend == "cuda"
    pinned = cuda and (env == "1" or (pin and env != "0"))
    m = bufs.get(slot)
    keep = m is not None and len(m) >= count * dtype.itemsize and (
        (isinstance(m, mmap.mmap) and not pinned) or (not isinstance(m, mmap.mmap) and env != "0"))
    if not keep:
        old = bufs.pop(slot, None)  # let the old one go before mapping the new one
        if old is not None and not isinstance(old, mmap.mmap):
            old.close()
        size = -(-nbytes // (2 << 20)) * (2 << 20)  # whole huge pages
        if pinned:
            m = ctx.host_buffer(size)
        else:
            m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if hasattr(mmap, "MADV_HUGEPAGE"):
                try:
                    m.madvise(mmap.MADV_HUGEPAGE)
                except OSError:
                    pass
        bufs[slot] = m
    raw = m if isinstance(m, mmap.mmap) else m.array
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)


def _readers(first=False):
    """Threads reading a tile's window: GG_READERS (as for the GG driver's
    stack reads; GG_DIST_READERS, its former name here, still counts), else
    half the worker's threads (OMP_NUM_THREADS, or the processors it may
    run on), 1 to 8.  first: the read a task's device waits for before its
    first kernel, with nothing else to do meanwhile: all of them, up to 16
    (a task's first piece is read at the host's pace, not the device's:
    bench/RESULTS.md, session 21)."""
    try:
        env = int(os.environ.get("GG_READERS") or os.environ.get("GG_DIST_READERS") or 0)
    except ValueError:
        env = 0
    if env > 0:
        return min(64, env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        cpus = min(cpus, int(os.environ.get("OMP_NUM_THREADS") or cpus))
    except ValueError:
        pass
    return max(1, min(16, cpus)) if first else max(1, min(8, cpus // 2))


_pools = {}
_pools_lock = threading.Lock()


def _all_of(jobs):
    """Waits for every job, then raises the first failure: a slice still
    reading must not outlive the read (its buffer is reused next)."""
    from concurrent.futures import wait
    wait(jobs)
    for j in jobs:
        j.result()


def _pool(n):
    """A pool of n threads kept for the process's life: a read cut among
    threads then starts none (16 new threads for each piece a task reads
    cost about 1 ms, on the device's critical path for the first one)."""
    from concurrent.futures import ThreadPoolExecutor
    with _pools_lock:
        if n not in _pools:
            _pools[n] = ThreadPoolExecutor(n, thread_name_prefix="geogpu-read")
        return _pools[n]


def _read_rows(path, x0, y0, w, h, buf_type, into):
    """Rows y0 .. y0+h of every band of one source into ``into`` (a view
    (bands, h, w) of the task's buffer), through a dataset handle of its own
    (GDAL handles are not shared between threads)."""
    ds = _open_raster(path)
    # one dataset-level read of every band: a pixel-interleaved stack
    # (GDAL's GTiff default) is then decoded once per block, where a read
    # per band goes through each block once per band (60 bands: 60 passes,
    # and block-cache thrashing on a large window)
    if ds.ReadAsArray(x0, y0, w, h, buf_type=buf_type, buf_obj=into) is None:
        raise TaskError(f"cannot read '{path}': {_gdal().GetLastErrorMsg()}")


def _read_window(sources, counts, complex_input, window, readers=None, reserve=0, ctx=None,
                 pin=False, slot="in", store=None):
    """Every band of every source over window (x0, y0, w, h), converted by
    GDAL to CFloat32 / Float32 exactly as the GG driver reads it.

    The window's rows are cut into ``readers`` slices (default _readers())
    read at once, each by its own thread and GDAL handle, into the thread's
    reusable buffer (at least ``reserve`` pixels a band): decoding a 60-band pixel-interleaved window is CPU work
    (de-interleaving, block copies) that one thread does at about 1-1.7
    GB/s, the bound of a PtSel tile task (bench/RESULTS.md).  GDAL drops
    Python's lock while it reads."""
    gdal = _gdal()
    buf = gdal.GDT_CFloat32 if complex_input else gdal.GDT_Float32
    x0, y0, w, h = window
    readers = max(1, min(readers or _readers(), h // 16 or 1))
    cuts = [h * i // readers for i in range(readers + 1)]
    pool = _pool(readers) if readers > 1 else None
    planes = []
    for k, (s, n) in enumerate(zip(sources, counts)):
        into = _buffer(f"{slot}{k}", (n, h, w), "complex64" if complex_input else "float32",
                       n * reserve, ctx, pin, store)
        if readers == 1:
            _read_rows(s, x0, y0, w, h, buf, into)
        else:
            _all_of([pool.submit(_read_rows, s, x0, y0 + a, w, b - a, buf, into[:, a:b, :])
                     for a, b in zip(cuts, cuts[1:])])
        planes.extend(into)
    return planes


def _raw_reads():
    return os.environ.get("GG_DIST_RAW", "1") != "0"


def _file_rows(path, complex_input):
    """Where a stack's rows lie in its file, when they lie there exactly as
    GDAL would return them: an uncompressed, pixel-interleaved GeoTIFF
    (GDAL's default for a multi-band GTiff) of CFloat32 (complex_input) or
    Float32 bands in this machine's byte order, cut in full-width strips
    that follow each other.  Returns {"offset": file offset of row 0,
    "row": bytes a row, "bands": n}, else None (the window is then read
    through GDAL).

    Why: a tile task of a paper-size PtSel reads 600 MB; through GDAL that
    is a copy into the block cache and a de-interleaving pass per band,
    CPU and host-memory work that four workers on one host contend for
    (bench/RESULTS.md).  Read as it lies, it is one copy from the page
    cache, and the device sorts the bands (gg_op_run_stack_interleaved)."""
    gdal = _gdal()
    path = str(path)
    if not os.path.isfile(path):
        return None
    try:
        ds = _open_raster(path)
    except TaskError:
        return None
    want = gdal.GDT_CFloat32 if complex_input else gdal.GDT_Float32
    n, W, H = ds.RasterCount, ds.RasterXSize, ds.RasterYSize
    if ds.GetDriver().ShortName != "GTiff" or n < 1:
        return None
    structure = ds.GetMetadata("IMAGE_STRUCTURE") or {}
    if "COMPRESSION" in structure or (n > 1 and structure.get("INTERLEAVE") != "PIXEL"):
        return None
    b1 = ds.GetRasterBand(1)
    if any(ds.GetRasterBand(b).DataType != want or
           "NBITS" in (ds.GetRasterBand(b).GetMetadata("IMAGE_STRUCTURE") or {})
           for b in range(1, n + 1)):
        return None
    bw, rows = b1.GetBlockSize()
    if bw != W:
        return None
    row = W * n * gdal.GetDataTypeSize(want) // 8
    found = _strip_offsets(path)
    if found is None or found[2] != ("<" if sys.byteorder == "little" else ">"):
        return None  # not a strip TIFF, or not this machine's byte order
    offsets, per_strip, _ = found
    per_strip = min(per_strip, H)
    import numpy as np
    offset = int(offsets[0])
    # uncompressed strips that follow each other at a row pitch hold
    # exactly their rows (none sparse: offset 0).  GDAL may show a file's
    # one strip as blocks of a row: its first and last blocks must then be
    # where these strips put them (the first IFD is the image GDAL reads)
    last = -(-H // rows) - 1
    if (offset == 0 or len(offsets) != -(-H // per_strip)
            or not np.array_equal(offsets, offset + np.arange(len(offsets), dtype=np.uint64)
                                  * np.uint64(per_strip * row))
            or any((b1.GetMetadataItem(f"BLOCK_OFFSET_0_{k}", "TIFF") or "")
                   != str(offset + k * rows * row) for k in (0, last))):
        return None
    if os.path.getsize(path) < offset + H * row:
        return None
    return {"offset": offset, "row": row, "bands": n}


# TIFF field types of strip offsets: SHORT, LONG, LONG8 (BigTIFF)
_TIFF_INTS = {3: "u2", 4: "u4", 16: "u8"}


def _strip_offsets(path):
    """(StripOffsets as a uint64 array, RowsPerStrip, byte order "<" or
    ">") of a TIFF's first image, from its header and first IFD (classic
    or BigTIFF); None when the file is not that (or is tiled).  Why not
    GDAL's BLOCK_OFFSET_0_k items: one call per strip, 8 ms for the 2680
    strips of a paper-size stack, paid by the client in every batch."""
    import numpy as np
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            end = {b"II": "<", b"MM": ">"}.get(head[:2])
            if end is None or len(head) < 8:
                return None
            num = (lambda b: int.from_bytes(b, "little" if end == "<" else "big"))
            version = num(head[2:4])
            big = version == 43
            if version not in (42, 43) or (big and len(head) < 16):
                return None
            ifd = num(head[8:16]) if big else num(head[4:8])
            f.seek(ifd)
            count = num(f.read(8 if big else 2))
            esize = 20 if big else 12
            entries = f.read(count * esize)
            if len(entries) != count * esize:
                return None
            fields = {}
            for i in range(count):
                e = entries[i * esize:(i + 1) * esize]
                tag = num(e[0:2])
                if tag not in (273, 278):  # StripOffsets, RowsPerStrip
                    continue
                dtype = _TIFF_INTS.get(num(e[2:4]))
                if dtype is None:
                    return None
                n = num(e[4:12]) if big else num(e[4:8])
                field = e[12:20] if big else e[8:12]
                nbytes = n * int(dtype[1])
                if nbytes <= len(field):
                    raw = field[:nbytes]
                else:
                    f.seek(num(field))
                    raw = f.read(nbytes)
                    if len(raw) != nbytes:
                        return None
                fields[tag] = np.frombuffer(raw, dtype=end + dtype).astype(np.uint64)
    except (OSError, ValueError):
        return None
    if 273 not in fields or not len(fields[273]):
        return None
    per_strip = fields.get(278)  # absent: the whole image is one strip
    return (fields[273], int(per_strip[0]) if per_strip is not None and len(per_strip)
            else 2 ** 32 - 1, end)


def _read_file_rows(path, layout, window, into, readers=None):
    """Window (x0, y0, w, h) of a stack laid out as _file_rows says, read
    as it lies into ``into`` (h x w x bands, C-contiguous): one read of the
    whole range when the window is full width, else a read per row, cut
    among ``readers`` threads of a kept pool (os.preadv drops Python's
    lock)."""
    x0, y0, w, h = window
    n, row = layout["bands"], layout["row"]
    es = into.itemsize
    span = w * n * es  # bytes of one window row
    base = layout["offset"] + y0 * row + x0 * n * es
    flat = memoryview(into.reshape(-1).view("u1"))
    full = span == row
    readers = max(1, min(readers or _readers(), h))
    cuts = [h * i // readers for i in range(readers + 1)]

    def read(a, b):
        fd = os.open(path, os.O_RDONLY)
        try:
            pieces = [(a, b)] if full else [(r, r + 1) for r in range(a, b)]
            for r0, r1 in pieces:
                want, done = (r1 - r0) * span, 0
                while done < want:  # preadv may return less than asked
                    k = os.preadv(fd, [flat[r0 * span + done:r1 * span]],
                                  base + r0 * row + done)
                    if k <= 0:
                        raise TaskError(f"cannot read '{path}': file ends at byte "
                                        f"{base + r0 * row + done}")
                    done += k
        finally:
            os.close(fd)

    if readers == 1:
        read(0, h)
        return
    _all_of([_pool(readers).submit(read, a, b) for a, b in zip(cuts, cuts[1:]) if b > a])


def _band_groups(types, names):
    """How output bands go to files, as the utilities write them: all in one
    file when they share a type, else one file per band named after it."""
    if len(set(types)) == 1:
        return [{"suffix": "", "bands": list(range(len(types)))}]
    return [{"suffix": "_" + (names[b] or f"band{b + 1}"), "bands": [b]} for b in range(len(types))]


def _tile_gt(gt, x0, y0):
    """Geotransform of the output tile at (x0, y0)."""
    if gt is None:
        return None
    return [gt[0] + x0 * gt[1] + y0 * gt[2], gt[1], gt[2], gt[3] + x0 * gt[4] + y0 * gt[5],
            gt[4], gt[5]]


def _tile_task(spec):
    """One output tile (a job of tile_batch with per_task=1): see _run_tiles.
    Runs on a worker."""
    r = _run_tiles(spec, [{key: spec[key] for key in ("name", "signature", "window")}])
    if r["status"] == "skipped":
        return {"name": spec["name"], "status": "skipped", "worker": r["worker"]}
    it = r["items"][0]
    return {**it, "worker": r["worker"], "device": r["device"], "started": r["started"],
            "ended": r["ended"]}


def _tile_group_task(spec):
    """Several output tiles in one task (tile_batch with per_task > 1): the
    next tile's window is read while the device computes this one, so a
    worker's reads hide behind its device time but the first.  Each tile
    is committed under its own marker, so a retry redoes only the tiles
    still missing.  Runs on a worker."""
    r = _run_tiles(spec, spec["items"])
    return {"name": spec["name"], **r}


def _read_tile(spec, prep, ctx, window, slot, store, readers=None):
    """The source window of one tile into the buffers of ``slot`` (of the
    task thread's ``store``: the read may run on a reader thread): as it
    lies in the file (spec["rows"]: one (rows, columns, bands) array) or
    through GDAL (a list of band planes).  Returns (that, seconds).

    Tile buffers ask to be page-locked (on CUDA workers, whatever the
    batch; GG_DIST_PINNED=0: pageable): pinning a worker's 450 MB costs
    about 0.03 s (the CUDA backend registers huge pages its threads
    faulted in), and a fresh 4-GPU cluster's first batch is no slower
    than with pageable buffers, its later batches faster
    (bench/RESULTS.md, session 20)."""
    t = time.time()
    reserve = spec.get("reserve") or [0, 0]  # the batch's largest source, output windows
    raw = spec.get("rows") if prep.stack else None
    if raw:
        n = raw["bands"]
        data = _buffer(f"in{slot}0", (window[3], window[2], n),
                       "complex64" if spec["complex"] else "float32", n * reserve[0], ctx, True,
                       store=store)
        _read_file_rows(spec["sources"][0], raw, window, data, readers)
    else:
        data = _read_window(spec["sources"], spec["counts"], spec["complex"], window,
                            readers=readers, reserve=reserve[0], ctx=ctx, pin=True,
                            slot=f"in{slot}", store=store)
    return data, time.time() - t


# a task's first tile is computed in row pieces of these shares of its rows
# (the rest last) when each piece has at least FIRST_PIECE_MIN_ROWS rows
FIRST_PIECES = (1 / 6, 1 / 3)
FIRST_PIECE_MIN_ROWS = 16


def _pieces(prep, todo):
    """What a task computes, in order: (tile index, output window, source
    window).  Every tile whole but the first, cut into row pieces of 1/6,
    1/3 and 1/2 of its rows.

    Why: the device waits for the first read of a task (every later read
    runs on the reader thread while the previous piece computes), and on 4
    GPUs that wait was 5 % of a PtSel batch.  A piece of 1/6 of the rows is
    read in about a third of the time (its halo comes with it); the next
    piece is read while it computes.  A piece equals the same window of the
    whole-image result bit for bit, as a tile does."""
    out = []
    for k, it in enumerate(todo):
        x0, y0, w, h = it["window"]
        rows = [h]
        if k == 0 and h * min(FIRST_PIECES) >= FIRST_PIECE_MIN_ROWS:
            rows = [int(h * f) for f in FIRST_PIECES]
            rows.append(h - sum(rows))
        y = y0
        for n in rows:
            out.append((k, (x0, y, w, n), prep.source_window(x0, y, w, n)))
            y += n
    return out


def _pipelined(prep):
    """Whether a tile task queues its pieces on the device asynchronously
    (Prepared.submit_tile; stack ops): GG_DIST_PIPELINE=0 computes each
    piece before the next is given (for comparison)."""
    return prep.stack and os.environ.get("GG_DIST_PIPELINE", "1") != "0"


def _run_tiles(spec, items):
    """The tiles ``items`` ({name, signature, window}) of a tile batch, in
    order: each reads its input window (halo included), computes it with
    libgeogpu on the worker's device, writes the tile's own pixels (one file
    per band group) and commits them.

    Four stages overlap: the reader thread reads piece p + 1 (_pieces)
    while the device computes piece p; for stack ops the device is given
    piece p + 1 before piece p is collected (Prepared.submit_tile), so that
    its upload overlaps piece p's kernels (three input buffer slots: one
    being read, two on the device); and the writer thread writes tile k
    while the device computes the next ones (two output slots, three when
    pipelined).  A tile's
    phases are the task thread's seconds: waiting for its reads ("read"),
    giving it to the device and collecting it ("run"), waiting for a write
    to free its output slot ("write"; the last tiles wait for their own);
    "read_s" and "write_s" are the reads and the write themselves, on
    their threads."""
    t0 = time.time()
    _pin()
    outdir = spec["outdir"]
    wname, _ = _worker_identity()
    timeline = _Timeline(t0, spec["name"], wname)
    todo = [it for it in items if not _complete(outdir, it["name"], it["signature"])]
    if not todo:
        return {"status": "skipped", "worker": wname, "items": []}
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from .device import context_for
    from .ops import Op
    device = _device(spec["device"])
    op = Op(spec["op"], **spec["options"])
    W, H = spec["size"]
    prep = op.prepare((H, W), complex_input=spec["complex"], bands=sum(spec["counts"]),
                      nodata=spec["nodata"], geotransform=spec["geotransform"])
    ctx = context_for(device)
    store = _buffers()
    pieces = _pieces(prep, todo)
    pipelined = _pipelined(prep)
    # input slots (piece p is read into p % nslots) and output slots (tile k
    # into k % nout): pipelined, tile k - 1 is collected while tile k is in
    # flight and written while tile k + 1 is given to the device
    nslots = nout = 3 if pipelined else 2
    phases = [{"setup": 0.0, "read": 0.0, "run": 0.0, "write": 0.0, "read_s": 0.0, "write_s": 0.0}
              for _ in todo]
    phases[0]["setup"] = time.time() - t0
    started = [None] * len(todo)  # when the task thread began each tile
    kinds = [None] * len(todo)  # how each tile's window was read
    srcs = [prep.source_window(*it["window"]) for it in todo]
    outs = [None] * len(todo)  # each tile's output planes, in output slot k % nout
    done = []
    reader = ThreadPoolExecutor(1) if len(pieces) > 1 else None
    writer = ThreadPoolExecutor(1)
    writing = deque()  # (tile index, future of its write), oldest first

    def finish_write():
        """Waits for the oldest write in flight and records its tile."""
        k, f = writing.popleft()
        t = time.time()
        (files, blocks), write_s = f.result()
        phases[k]["write"] += time.time() - t
        phases[k]["write_s"] = write_s
        outs[k] = None
        done.append({"name": todo[k]["name"], "status": "done", "files": files, "blocks": blocks,
                     "phases": phases[k], "seconds": sum(v for key, v in phases[k].items()
                                                         if not key.endswith("_s")),
                     "reader": kinds[k]})

    def write(k):
        t = timeline.mark(f"write {k}")
        # the marker tells the client as much as the task's result will
        # (_run_jobs may finish a batch on the markers)
        written = _write_tile(spec, prep.info, todo[k], srcs[k], outs[k], wname, device,
                              time.time() - (t0 if k == 0 else started[k]),
                              {"phases": dict(phases[k]), "reader": kinds[k], "task_started": t0})
        return written, timeline.mark(f"written {k}") - t

    def read(p, slot):
        timeline.mark(f"read {p}")
        # the first piece: the device waits for it, with nothing to overlap
        r = _read_tile(spec, prep, ctx, pieces[p][2], slot, store,
                       _readers(first=True) if p == 0 else None)
        timeline.mark(f"read done {p}")
        return r

    def collect(q):
        """Piece q's outputs are in place: collect it, and write its tile
        when it was the tile's last piece."""
        k = pieces[q][0]
        t = time.time()
        if pipelined:
            prep.collect(ctx)
        timeline.mark(f"collected {q}")
        phases[k]["run"] += time.time() - t
        if q + 1 == len(pieces) or pieces[q + 1][0] != k:
            writing.append((k, writer.submit(write, k)))

    try:
        pending = None
        for p, (k, window, src) in enumerate(pieces):
            t_read = time.time()
            if started[k] is None:
                started[k] = t_read
            if p == 0:
                timeline.mark("set up")
            if pending is None:
                data, read_s = read(p, p % nslots)
            else:
                data, read_s = pending.result()
            kinds[k] = "gdal" if isinstance(data, list) else "file rows"
            # slot (p + 1) % nslots held piece p + 1 - nslots: collected by now
            pending = (reader.submit(read, p + 1, (p + 1) % nslots)
                       if p + 1 < len(pieces) else None)
            t_run = time.time()
            if outs[k] is None:
                while writing and writing[0][0] <= k - nout:  # frees output slot k % nout
                    finish_write()
                outs[k] = _tile_outputs(spec, prep, ctx, todo[k]["window"], k % nout)
            y = window[1] - todo[k]["window"][1]
            piece_outs = [o[y:y + window[3]] for o in outs[k]]
            if pipelined:
                prep.submit_tile(ctx, data, src, window, piece_outs)
            else:
                _compute_tile(spec, prep, ctx, data, src, window, piece_outs)
            timeline.mark(f"given {p}")
            phases[k]["read"] += t_run - t_read
            phases[k]["read_s"] += read_s
            phases[k]["run"] += time.time() - t_run
            if pipelined and p > 0:
                collect(p - 1)  # while piece p computes
            if not pipelined:
                collect(p)
        if pipelined:
            collect(len(pieces) - 1)
        while writing:
            finish_write()
    finally:
        if pipelined and prep.in_flight():  # after a failure: the device lets go of the buffers
            try:
                prep.collect_all(ctx)
            except Exception:  # noqa: BLE001 - the failure itself is what the task reports
                pass
        if reader is not None:
            reader.shutdown(wait=True)  # a read in flight ends before its buffer is reused
        writer.shutdown(wait=True)
        timeline.save()
    late = float(os.environ.get("GG_DIST_LATE_RESULT_S") or 0)  # tests: a result that lags
    if late > 0:
        time.sleep(late)
    return {"status": "done", "worker": wname, "device": device, "seconds": time.time() - t0,
            "items": done, "started": t0, "ended": time.time()}


class _Timeline:
    """A tile task's events (read, given to the device, collected, written:
    seconds since the task began), saved as <GG_DIST_TIMELINE>/<task>-<ms>.json
    when that folder is set; nothing otherwise.  For finding where a
    worker's device waits (bench/RESULTS.md)."""

    def __init__(self, t0, name, worker):
        self.folder = os.environ.get("GG_DIST_TIMELINE")
        self.t0, self.name, self.worker = t0, name, worker
        self.events = []

    def mark(self, what):
        t = time.time()
        if self.folder:
            self.events.append((what, round(t - self.t0, 5)))  # list.append: thread-safe
        return t

    def save(self):
        if self.folder:
            path = Path(self.folder) / f"{self.name}-{int(self.t0 * 1000)}.json"
            path.write_text(json.dumps({"task": self.name, "worker": self.worker,
                                        "started": self.t0, "events": self.events}))


def _tile_outputs(spec, prep, ctx, window, slot):
    """The output planes of one tile (h x w each), in the reused output
    buffers of ``slot`` (0 to 2: tiles are written while the next ones
    compute)."""
    reserve = spec.get("reserve") or [0, 0]
    return [_buffer(f"out{slot}_{b}", (window[3], window[2]), _numpy_type(t), reserve[1], ctx, True)
            for b, t in enumerate(prep.info.types)]


def _compute_tile(spec, prep, ctx, data, src, window, outs):
    """The op over one output window on the device, into ``outs`` (its
    output planes)."""
    if prep.stack:
        if isinstance(data, list):
            return prep.run_tile(ctx, data, src, window, out=outs)
        return prep.run_tile_interleaved(ctx, data, src, window, out=outs)
    return [prep.run_band_tile(ctx, b, p, src, window, out=outs[b]) for b, p in enumerate(data)]


def _write_tile(spec, info, item, src, outs, wname, device, seconds, extra=None):
    """A tile's output bands into its files (one per band group), committed
    under the tile's marker (src: the source window it read; extra: more for
    the marker).  Returns (the committed files, the block size of each band
    group's file)."""
    t_write = time.time()
    gdal = _gdal()
    name, sig = item["name"], item["signature"]
    x0, y0, w, h = item["window"]
    outdir = spec["outdir"]
    work = _workdir(outdir, name)
    try:
        drv = gdal.GetDriverByName("GTiff")
        gt = _tile_gt(info.geotransform, x0, y0)
        blocks = {}  # block size of each file, for the mosaic's SourceProperties
        for g in spec["groups"]:
            path = work / f"{name}{g['suffix']}.tif"
            gtype = gdal.GetDataTypeByName(info.types[g["bands"][0]])
            ds = drv.Create(str(path), w, h, len(g["bands"]), gtype, options=spec["co"])
            if ds is None:
                raise TaskError(f"{name}: cannot create '{path}': {gdal.GetLastErrorMsg()}")
            if gt is not None:
                ds.SetGeoTransform(gt)
            if spec["wkt"]:
                ds.SetProjection(spec["wkt"])
            for k, b in enumerate(g["bands"], 1):
                band = ds.GetRasterBand(k)
                band.SetNoDataValue(float(info.nodata[b]))
                if info.names[b]:
                    band.SetDescription(info.names[b])
                if band.WriteArray(outs[b]) != 0:
                    raise TaskError(f"{name}: cannot write '{path}': {gdal.GetLastErrorMsg()}")
            blocks[g["suffix"]] = list(ds.GetRasterBand(1).GetBlockSize())
            ds.FlushCache()
            ds = None
        if extra and "phases" in extra:  # the write itself, as the task will report it
            extra["phases"]["write_s"] = time.time() - t_write
        return _commit(work, outdir, name, sig, {"worker": wname, "device": device,
                                                 "seconds": round(seconds, 3),
                                                 "window": [x0, y0, w, h], "source": list(src),
                                                 "blocks": blocks, **(extra or {})}), blocks
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _numpy_type(gdal_type_name):
    """numpy dtype name of a GDAL type name (an op's output band type)."""
    return {"Byte": "uint8", "UInt16": "uint16", "Int16": "int16", "UInt32": "uint32",
            "Int32": "int32", "Float32": "float32", "Float64": "float64",
            "CFloat32": "complex64", "CFloat64": "complex128"}[gdal_type_name]


def _fmt(v):
    return repr(float(v)) if not (isinstance(v, float) and math.isnan(v)) else "nan"


def _mosaic_xml(vrt_path, width, height, gt, wkt, area_or_point, metadata, bands, tiles):
    """A VRT placing every tile file at its own offset.  Written directly
    (not by gdalbuildvrt): the tile grid is known exactly, so no placement
    is derived from floating-point geotransforms, and rasters without (or
    with rotated) georeferencing mosaic as well."""
    vdir = Path(vrt_path).parent
    lines = [f'<VRTDataset rasterXSize="{width}" rasterYSize="{height}">']
    if wkt:
        lines.append(f'  <SRS dataAxisToSRSAxisMapping="{_axis_mapping(wkt)}">{escape(wkt)}</SRS>')
    if gt is not None:
        lines.append("  <GeoTransform>" + ", ".join(repr(float(v)) for v in gt) + "</GeoTransform>")
    md = dict(metadata)
    if area_or_point:
        md["AREA_OR_POINT"] = area_or_point
    if md:
        lines.append("  <Metadata>")
        for k, v in md.items():
            lines.append(f"    <MDI key={quoteattr(k)}>{escape(v)}</MDI>")
        lines.append("  </Metadata>")
    for k, (btype, bname, nodata, src_band) in enumerate(bands, 1):
        lines.append(f'  <VRTRasterBand dataType="{btype}" band="{k}">')
        if bname:
            lines.append(f"    <Description>{escape(bname)}</Description>")
        lines.append(f"    <NoDataValue>{_fmt(nodata)}</NoDataValue>")
        for (path, x0, y0, w, h, block) in tiles:
            rel = os.path.relpath(path, vdir)
            lines += ["    <SimpleSource>",
                      f'      <SourceFilename relativeToVRT="1">{escape(rel)}</SourceFilename>',
                      f"      <SourceBand>{src_band}</SourceBand>"]
            if block:  # lets GDAL open the tile only when it is read
                lines.append(f'      <SourceProperties RasterXSize="{w}" RasterYSize="{h}" '
                             f'DataType="{btype}" BlockXSize="{block[0]}" '
                             f'BlockYSize="{block[1]}" />')
            lines += [f'      <SrcRect xOff="0" yOff="0" xSize="{w}" ySize="{h}" />',
                      f'      <DstRect xOff="{x0}" yOff="{y0}" xSize="{w}" ySize="{h}" />',
                      "    </SimpleSource>"]
        lines.append("  </VRTRasterBand>")
    lines.append("</VRTDataset>")
    return "\n".join(lines) + "\n"


def _axis_mapping(wkt):
    """The data axis to CRS axis mapping GDAL uses for rasters
    (traditional GIS order: x = easting/longitude)."""
    from osgeo import osr
    s = osr.SpatialReference()
    if s.ImportFromWkt(wkt) != 0:
        return "1,2"
    s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    return ",".join(str(v) for v in s.GetDataAxisToSRSAxisMapping())


def _write_if_changed(path, text):
    """Writes a small file atomically, leaving it untouched when its content
    is already this (a re-run does not touch complete outputs)."""
    path = Path(path)
    try:
        if path.read_text() == text:
            return False
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return True


def tile_batch(client, op, sources, dst, tile=1024, device=None, retries=2, co=(), of=None,
               dst_co=(), progress=None, per_task=1, **options):
    """Computes a geogpu op tile by tile, one task per output tile, and
    mosaics the tiles.

    op: the op name ("ptsel", "coherence", "multilook", "rotate", ...; not ops
    with a whole-image statistics pass such as radnorm).  sources: input
    rasters, stacked band by band as the GG driver stacks them.  options: the
    op's options (``window=11, mask=True``; see geogpu.op_info).  tile: output
    tile size (int or (w, h)).  co: creation options of the tile GeoTIFFs.

    Tiles go to ``<dst>.tiles/`` (e.g. ``ps.vrt.tiles/t_0002_0005.tif``).  The mosaic is ``dst``
    itself when it ends in .vrt (or of="VRT"); otherwise a VRT in the tile
    folder translated into ``dst`` with format ``of`` (default GTiff) and
    ``dst_co``.  When the output bands mix types (ptsel with mask=True,
    coherence's complex interferogram beside real bands), every band goes to
    its own mosaic ``<dst stem>_<band name><ext>``, as the utilities write it.
    Each tile equals the same window of the whole-image result, bit for bit.
    per_task: tiles per task (default 1, in grid order), or "auto" (one
    task per worker, the tiles shared so that each task's source windows sum
    to about the same number of pixels): a task of several tiles reads the
    next tile's window while the device computes the current one.
    Returns a Batch (``outputs``: the mosaics written; none when a tile failed)."""
    from .ops import Op
    t_plan = time.time()
    if per_task != "auto" and (not isinstance(per_task, int) or per_task < 1):
        raise ValueError(f"per_task is a positive integer or 'auto', not {per_task!r}")
    sources = [str(Path(s).resolve()) if os.path.exists(s) else str(s) for s in sources]
    if not sources:
        raise ValueError("no input raster")
    opobj = Op(op, **options)
    t_describe = time.time()
    W, H, counts, is_complex, nodata, gt, wkt, aop = _describe_stack(sources)
    t_describe = time.time() - t_describe
    prep = opobj.prepare((H, W), complex_input=is_complex, bands=sum(counts), nodata=nodata,
                         geotransform=gt)
    if prep.needs_stats:
        raise ValueError(f"{opobj.name} needs a whole-image statistics pass: it cannot be tiled")
    info = prep.info
    dst = Path(dst).resolve()
    if not dst.parent.is_dir():
        raise ValueError(f"output folder '{dst.parent}' does not exist")
    of = of or ("VRT" if dst.suffix.lower() == ".vrt" else "GTiff")
    # named after the whole destination name: ps.vrt and ps.tif beside it
    # (other tile grids) must not share tiles
    tiles_dir = dst.parent / f"{dst.name}.tiles"
    tiles_dir.mkdir(exist_ok=True)
    groups = _band_groups(info.types, info.names)
    co = [str(c) for c in co]
    base = {"op": opobj.name, "options": opobj.options, "sources": sources, "counts": counts,
            "complex": is_complex, "nodata": nodata, "geotransform": gt, "size": [W, H],
            "wkt": wkt, "groups": groups, "co": co, "device": device, "outdir": str(tiles_dir)}
    # a stack read as it lies in its file (GG_DIST_RAW=0: through GDAL)
    base["rows"] = (_file_rows(sources[0], is_complex)
                    if prep.stack and len(sources) == 1 and _raw_reads() else None)
    state = _inputs_state(sources)
    grid = tile_grid(info.width, info.height, tile)
    # the largest input and output windows, in pixels: each worker then maps
    # its reusable buffers once (edge tiles are smaller, and may come first)
    src_pixels = [sw * sh for (_, _, sw, sh) in
                  (prep.source_window(x0, y0, w, h) for (_, _, x0, y0, w, h) in grid)]
    base["reserve"] = [max(src_pixels), max(w * h for (_, _, _, _, w, h) in grid)]
    jobs = []
    for (ix, iy, x0, y0, w, h) in grid:
        name = f"t_{iy:04d}_{ix:04d}"
        sig = _signature("tile", opobj.name, opobj.options, state, [W, H], [x0, y0, w, h],
                         groups, co)
        jobs.append(_Job(name, str(tiles_dir), sig,
                         {**base, "name": name, "window": [x0, y0, w, h], "signature": sig}))
    client, own = _local_client(client)
    try:
        t_shape = time.time()
        shape = _shape(client)
        t_shape = time.time() - t_shape
        t_plan = time.time() - t_plan
        if per_task == 1:
            batch = _run_jobs(client, _tile_task, jobs, retries, progress, shape)
        else:
            batch = _run_jobs(client, _tile_group_task,
                              _group_jobs(jobs, per_task, shape, TILE_ITEM, src_pixels), retries,
                              progress, shape)
    finally:
        if own is not None:
            own.close()
    batch.client.update(plan=t_plan, describe=t_describe, shape=t_shape)
    if not batch.ok:
        return batch
    t_mosaic = time.time()
    md = {"GG_OPERATION": opobj.name, "GG_OPTIONS": opobj.options_string()}
    # each tile's block sizes, as its task returned them or its marker says
    # (read again only where the batch has neither: a duplicate attempt's)
    blocks = {}
    for j in jobs:
        b = (batch._details.get(j.name) or {}).get("blocks")
        blocks[j.name] = b if b is not None else (
            _complete(j.outdir, j.name, j.signature) or {}).get("blocks") or {}
    for g in groups:
        bands = [(info.types[b], info.names[b], info.nodata[b], k)
                 for k, b in enumerate(g["bands"], 1)]
        tiles = [(tiles_dir / f"{j.name}{g['suffix']}.tif", *j.spec["window"],
                  blocks[j.name].get(g["suffix"])) for j in jobs]
        if of.upper() == "VRT":
            vrt = dst.with_name(dst.stem + g["suffix"] + dst.suffix)
            _write_if_changed(vrt, _mosaic_xml(vrt, info.width, info.height, info.geotransform,
                                               wkt, aop, md, bands, tiles))
            batch.outputs.append(str(vrt))
        else:
            vrt = tiles_dir / f"mosaic{g['suffix']}.vrt"
            _write_if_changed(vrt, _mosaic_xml(vrt, info.width, info.height, info.geotransform,
                                               wkt, aop, md, bands, tiles))
            out = dst.with_name(dst.stem + g["suffix"] + dst.suffix)
            _translate(vrt, out, of, dst_co)
            batch.outputs.append(str(out))
    batch.client["mosaic"] = time.time() - t_mosaic
    return batch


def _translate(vrt, out, of, co):
    """The mosaic VRT copied into one file (temporary name, then renamed);
    skipped when ``out`` was made from this very mosaic and is unchanged."""
    gdal = _gdal()
    vrt, out = Path(vrt), Path(out)
    sig = _signature("translate", vrt.read_text(), [str(c) for c in co], of,
                     _inputs_state(sorted(str(p) for p in vrt.parent.glob("t_*.tif"))))
    name = out.name
    if _complete(out.parent, name, sig):
        return
    work = _workdir(out.parent, name)
    try:
        gdal.PushErrorHandler("CPLQuietErrorHandler")
        try:
            ds = gdal.Translate(str(work / name), str(vrt), format=of, creationOptions=list(co))
        finally:
            gdal.PopErrorHandler()
        if ds is None:
            raise TaskError(f"cannot write '{out}': {gdal.GetLastErrorMsg()}")
        ds = None
        _commit(work, out.parent, name, sig, {"mosaic": str(vrt)})
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ================================================================== command line

def _op_flags(op, tokens):
    """A utility's flags (``-window 11 -mask -looks 4 1``) or ``key=value``
    tokens as op options, through the op's own option table: a bool option
    takes no value, a size one or two numbers, anything else one value.  A
    flag naming no option is a product of ops with a ``products`` option
    (gdal_insar's -interferogram/-coherence/-amplitude)."""
    from .ops import op_info
    table = {o.key: o.type for o in op_info(op).options}
    out, products, i = {}, [], 0

    def number(t):
        try:
            float(t)
            return True
        except ValueError:
            return False

    while i < len(tokens):
        t = tokens[i]
        if "=" in t and not t.startswith("-"):
            k, v = t.split("=", 1)
            out[k.lower()] = v
            i += 1
            continue
        if not t.startswith("-"):
            raise ValueError(f"unexpected argument '{t}' among the {op} options")
        k = t.lstrip("-").lower()
        if k not in table:
            if "products" in table:
                products.append(k)
                i += 1
                continue
            raise ValueError(f"unknown {op} option '{t}' (options: {', '.join(sorted(table))})")
        typ = table[k]
        if typ == "bool":
            out[k] = "yes"
            i += 1
        elif typ == "size":
            vals = [v for v in tokens[i + 1:i + 3]]
            n = 2 if len(vals) == 2 and all(number(v) for v in vals) else 1
            if len(vals) < 1:
                raise ValueError(f"option '{t}' needs a value")
            out[k] = "x".join(vals[:n])
            i += 1 + n
        else:
            if i + 1 >= len(tokens):
                raise ValueError(f"option '{t}' needs a value")
            out[k] = tokens[i + 1]
            i += 2
    if products:
        out["products"] = ",".join(products)
    return out


class _TermProgress:
    """GDAL's terminal progress (0...10...20...) on stdout, which QGIS and
    GDAL users read, driven by finished tasks."""

    def __init__(self, quiet):
        self.quiet = quiet
        self.last = -1

    def __call__(self, finished, total):
        if self.quiet:
            return
        ticks = int(40 * finished / total) if total else 40
        for t in range(self.last + 1, ticks + 1):
            sys.stdout.write(f"{t * 100 // 40}" if t % 4 == 0 else ".")
            if t == 40:
                sys.stdout.write(" - done.\n")
        self.last = max(self.last, ticks)
        sys.stdout.flush()


def _positive(text, what):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise ValueError(f"{what} takes a positive integer or 'auto', not '{text}'")
    return v


def _tile_size(text):
    try:
        vals = [int(v) for v in text.lower().split("x")]
    except ValueError:
        vals = []
    if len(vals) not in (1, 2) or min(vals) < 1:
        raise ValueError(f"--tile takes N or WxH (positive integers), not '{text}'")
    return vals[0] if len(vals) == 1 else tuple(vals)


class _Parser(argparse.ArgumentParser):
    """Usage errors as every geogpu utility reports errors: one line on
    stderr, exit status 1."""

    def error(self, message):
        sys.stderr.write(f"ERROR 1: {self.prog}: {message} (--help for usage)\n")
        sys.exit(1)


def _parser():
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("cluster")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="use a running Dask scheduler (tcp://host:8786) instead of starting one")
    g.add_argument("--devices", metavar="LIST",
                   help="one worker per device: cuda:0,cuda:1,... or cpu,cpu (a device "
                        "listed twice gets two workers)")
    g.add_argument("--workers", type=int, metavar="N", help="the first N GPUs, or N CPU workers "
                   "when there is no GPU (default: every GPU, or one per core)")
    g.add_argument("--threads", type=int, metavar="N", help="OpenMP threads per worker")
    g.add_argument("--pin", action="store_true",
                   help="each worker (and the utilities it runs) on its own share of the "
                        "processors")
    g.add_argument("--device", metavar="SPEC", help="force this device in every task")
    g.add_argument("--retries", type=int, default=2, metavar="N",
                   help="attempts after a failure (default 2)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")

    p = _Parser(
        prog="python3 -m geogpu.distributed",
        description="geogpu batches over Dask, one worker per GPU.  Options of the utility or "
                    "op go after '--'.",
        epilog="Examples:\n"
               "  python3 -m geogpu.distributed ortho -outdir orthos scenes/*.tif -- "
               "-dem dem.tif -t_srs EPSG:32632 -r cubic\n"
               "  python3 -m geogpu.distributed insar -outdir ifgs --chain slc_*.tif -- "
               "-looks 4 1\n"
               "  python3 -m geogpu.distributed ptsel --tile 2048x1024 stack.tif ps.vrt -- "
               "-window 11 -mask\n"
               "  python3 -m geogpu.distributed workers --scheduler tcp://head:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    o = sub.add_parser("ortho", parents=[common], help="gdal_ortho, one task per scene")
    o.add_argument("-outdir", "--outdir", required=True)
    o.add_argument("--per-task", default="1", metavar="N|auto",
                   help="scenes per task, run by one gdal_ortho -outdir (default 1; auto: "
                        "the scenes shared evenly among the workers)")
    o.add_argument("--subprocess", action="store_true",
                   help="run gdal_ortho as a child process per task, not inside the worker on "
                        "its kept device context (the default; GG_DIST_SUBPROCESS=1 does the same)")
    o.add_argument("sources", nargs="+")

    for name, prog in (("insar", "gdal_insar"), ("xcorr", "gdal_xcorr"), ("coreg", "gdal_coreg"),
                       ("pairs", None)):
        q = sub.add_parser(name, parents=[common],
                           help=f"{prog}, one task per pair" if prog else
                           "any utility '<program> [options] <primary> <secondary> <dst>', "
                           "one task per pair")
        if prog is None:
            q.add_argument("program")
        q.set_defaults(program=prog)
        q.add_argument("-outdir", "--outdir", required=True)
        q.add_argument("--pairs", metavar="FILE", help="pairs, one 'primary secondary [name]' "
                       "per line (# comments)")
        q.add_argument("--chain", action="store_true",
                       help="pair each input with the next one (n-1 pairs)")
        q.add_argument("inputs", nargs="*", help="primary secondary primary secondary ...")

    for name in ("ptsel", "tiles"):
        t = sub.add_parser(name, parents=[common],
                           help="the ptsel op tile by tile" if name == "ptsel"
                           else "any geogpu op tile by tile")
        if name == "tiles":
            t.add_argument("op")
        t.set_defaults(op="ptsel" if name == "ptsel" else None)
        t.add_argument("--tile", default="1024", metavar="N|WxH",
                       help="output tile size: N (square) or WxH (default 1024)")
        t.add_argument("-of", "--of", help="mosaic format (default: VRT for a .vrt dst, else GTiff)")
        t.add_argument("-co", "--co", action="append", default=[],
                       help="creation option of the tile files and of a non-VRT mosaic")
        t.add_argument("--per-task", default="1", metavar="N|auto",
                       help="tiles per task (default 1; auto: one task per worker, the tiles "
                       "shared by the pixels of their source windows); a task of several "
                       "tiles reads the next window while the device computes")
        t.add_argument("inputs", nargs="+", help="input rasters, then the destination")

    w = sub.add_parser("workers", parents=[common],
                       help="start this machine's workers (one per GPU) for --scheduler")
    w.add_argument("--host", default=None, help="interface address the workers listen on")
    return p


def _read_pairs(args):
    pairs = []
    if args.pairs:
        for line in Path(args.pairs).read_text().splitlines():
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) not in (2, 3):
                raise ValueError(f"{args.pairs}: a line is 'primary secondary [name]', not "
                                 f"{' '.join(line)!r}")
            pairs.append(tuple(line))
    if args.chain:
        pairs += [(a, b) for a, b in zip(args.inputs, args.inputs[1:])]
    elif args.inputs:
        if len(args.inputs) % 2:
            raise ValueError(f"{len(args.inputs)} inputs do not make pairs "
                             "(give primary secondary ..., or --chain, or --pairs FILE)")
        pairs += list(zip(args.inputs[0::2], args.inputs[1::2]))
    if not pairs:
        raise ValueError("no pair given")
    return pairs


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    args = _parser().parse_args(argv)
    prog = "geogpu.distributed"
    try:
        if args.command == "workers":
            if not args.scheduler:
                raise ValueError("workers: --scheduler is required")
            return _serve_workers(args.scheduler, args.devices, args.workers, args.threads,
                                  args.host, None, 40, args.pin)
        if args.scheduler and (args.devices or args.workers or args.threads or args.pin):
            raise ValueError("--devices/--workers/--threads/--pin start a local cluster; they do "
                             "not apply with --scheduler")
        if args.command in ("ptsel", "tiles"):
            if len(args.inputs) < 2:
                raise ValueError("give the input rasters, then the destination")
            tile = _tile_size(args.tile)
            options = _op_flags(args.op, extra)
        if args.command in ("ortho", "ptsel", "tiles"):
            per_task = args.per_task if args.per_task == "auto" else _positive(args.per_task,
                                                                                "--per-task")
        cluster_kw = {} if args.scheduler else {
            "devices": args.devices, "n_workers": args.workers, "threads": args.threads,
            "pin": args.pin}
        progress = _TermProgress(args.quiet)
        with open_client(args.scheduler, **cluster_kw) as client:
            if args.command == "ortho":
                b = ortho_batch(client, args.sources, args.outdir, extra, device=args.device,
                                retries=args.retries, progress=progress, per_task=per_task,
                                in_process=False if args.subprocess else None)
            elif args.command in ("insar", "xcorr", "coreg", "pairs"):
                b = pair_batch(client, args.program, _read_pairs(args), args.outdir, extra,
                               device=args.device, retries=args.retries, progress=progress)
            else:
                b = tile_batch(client, args.op, args.inputs[:-1], args.inputs[-1], tile=tile,
                               device=args.device, retries=args.retries, co=args.co,
                               of=args.of, dst_co=args.co, progress=progress,
                               per_task=per_task, **options)
        for r in b.failed:
            print(f"ERROR 1: {r.error}", file=sys.stderr)
        if not args.quiet:
            print(f"{prog}: {b.summary()}", file=sys.stderr)
        return 0 if b.ok else 1
    except (ValueError, TaskError, OSError) as e:
        print(f"ERROR 1: {prog}: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a library error (GeogpuError) or a cluster failure
        print(f"ERROR 1: {prog}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # run the package's copy of this module (python3 -m makes this file
    # __main__): its task functions then travel to the workers by reference
    # and run with the worker's own module state (the reusable buffers),
    # not pickled by value with a copy of this module's globals
    from geogpu.distributed import main as _main
    sys.exit(_main())
