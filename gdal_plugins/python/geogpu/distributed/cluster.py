"""Workers, one per GPU (or N CPU workers), and clients: start_cluster,
open_client, the worker command, the cluster's shape."""

import os
import sys
import threading
import time
import uuid
from collections import namedtuple

from .reads import _gdal
from .utility_tasks import _ortho_entry
from .worker import _device, _pin


def cuda_devices():
    """Device specs ("cuda:0", ...) of the CUDA GPUs libgeogpu sees here; []
    when there is none (or no CUDA backend)."""
    from ..device import devices
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
    on their own contiguous share of the processors (GG_DIST_CPUS): True cuts
    them into one share per worker, an int K into K shares whatever the
    number of workers (worker i gets share i), so that one worker can be
    measured on what each of K would get.
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
    from ..device import check_device
    n = len(devices)
    threads = int(threads or max(1, (os.cpu_count() or 1) // n))
    shares = n if pin is True else int(pin or 0)
    if shares and shares < n:
        raise ValueError(f"pin={shares}: fewer processor shares than the {n} workers")
    sets = _cpu_sets(shares) if shares else None
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


# A batch returns once its outputs' markers say every output is committed,
# a few milliseconds before Dask's results reach the client; the thread that
# fetches those results is still running then.  A cluster closed under it
# makes the scheduler fail the fetches ("Couldn't gather keys") and tornado
# log CommClosedError tracebacks after a run that succeeded, so a client's
# close waits for its batches' fetches first.
_result_threads = {}  # id(client) -> threads fetching its batches' results
_result_lock = threading.Lock()


def _fetching_results(client, thread):
    """Registers a thread that fetches results for ``client``."""
    with _result_lock:
        threads = _result_threads.setdefault(id(client), [])
        threads[:] = [t for t in threads if t.is_alive()] + [thread]


# What an interrupted batch leaves to remove once the client is closed (its
# task folders: with the cluster closed, no worker writes there any more).
_after_close = {}  # id(client) -> callables


def _when_closed(client, fn):
    """Runs fn when open_client closes ``client``."""
    with _result_lock:
        _after_close.setdefault(id(client), []).append(fn)


def settle(client, timeout=30):
    """Waits (at most ``timeout`` seconds) until the results of the batches run
    on ``client`` have all reached it; call it before closing a client of
    your own (open_client's close does)."""
    with _result_lock:
        threads = _result_threads.pop(id(client), [])
    end = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))


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
            settle(self.client)
            self.client.close()
        finally:
            try:
                if self.cluster is not None:
                    self.cluster.close()
                    self.cluster = None
            finally:
                with _result_lock:
                    fns = _after_close.pop(id(self.client), [])
                for fn in fns:
                    fn()


def workers(client):
    """{worker address: (name, device, resources)} of a client's cluster
    (device: what the worker's tasks use, its GG_DEVICE, "auto" if unset)."""
    devs = client.run(lambda: os.environ.get("GG_DIST_DEVICE") or os.environ.get("GG_DEVICE")
                      or "auto")
    info = client.scheduler_info()["workers"]
    return {a: (w.get("name"), devs.get(a, "?"), w.get("resources") or {}) for a, w in info.items()}


def _warm_task(device):
    _pin()
    from .. import ops  # noqa: F401 - the tile tasks' op wrappers, imported now
    from ..device import context_for
    try:
        _gdal().AllRegister()  # GDAL loaded and its drivers registered
    except ImportError:
        pass  # no GDAL bindings in this worker: utility tasks only
    _ortho_entry()  # gdal_ortho's entry point (libgeogpu_gdal), for in-process ortho tasks
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
