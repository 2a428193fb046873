"""What a task knows of the worker it runs on: its name, its device, its
share of the processors."""

import os


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
