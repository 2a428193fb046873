"""Scene and pair tasks: a geogpu utility run on the worker's device,
in-process (gdal_ortho's entry point in libgeogpu_gdal) or as a child
process."""

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from .markers import TaskError, _commit, _complete, _workdir
from .worker import _device, _pin, _worker_identity


def _find_program(program):
    """A utility's path on this worker: a path as given, else next to the
    libgeogpu this worker loaded (<build>/bin, <prefix>/bin), else PATH."""
    if os.sep in program:
        if os.access(program, os.X_OK):
            return program
        raise TaskError(f"{program}: not an executable file")
    from .._lib import utility_dirs
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


# ------------------------------------------ gdal_ortho and gdal_warp in the worker

# the utilities that are also functions of libgeogpu_gdal (geogpu_gdal.h)
_ENTRY_NAMES = {"gdal_ortho": "gg_ortho_run", "gdal_warp": "gg_warp_run"}
_ENTRIES = {}                  # program: (function, library path) or None, once looked up


_ENTRY_LOCK = threading.Lock()


def _one_libgeogpu():
    """Whether this process maps a single libgeogpu.so file: the entry point
    must run on the very library whose context it is handed (a context is a
    pointer into that library's state)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f
                     if "/libgeogpu.so" in line and len(line.split()) >= 6}
    except OSError:
        return True  # no /proc: the loader's soname rule (one libgeogpu.so.0) holds
    return len({os.path.realpath(p) for p in paths}) <= 1


def _entry(program):
    """The utility as a function (``gg_ortho_run`` / ``gg_warp_run`` of
    libgeogpu_gdal, the GDAL layer built beside this worker's libgeogpu):
    (function, library path), or None where there is none (another
    utility, a build without GDAL, or another libgeogpu mapped than the
    package's)."""
    if program not in _ENTRY_NAMES:
        return None
    with _ENTRY_LOCK:
        if program not in _ENTRIES:
            _ENTRIES[program] = _load_entry(program)
        return _ENTRIES[program]


def _load_entry(program):
    import ctypes

    from .. import _lib
    layer = _lib.gdal_layer()
    if layer is None or not _one_libgeogpu():
        return None
    so, path = layer
    fn = getattr(so, _ENTRY_NAMES[program])
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p,
                   ctypes.c_char_p, ctypes.c_size_t]
    return fn, path


def _ortho_entry():
    """gdal_ortho's entry point (see _entry)."""
    return _entry("gdal_ortho")


def _in_process(spec):
    """Whether a task runs its utility in this worker process: asked for by
    the batch (``in_process``), the utility is the stock gdal_ortho or
    gdal_warp (not a path to another program), and the worker has its entry
    point."""
    return bool(spec.get("in_process")) and _entry(spec["program"]) is not None


def _run_here(argv, device):
    """The utility's command line run by its entry point in this process on
    the worker's context (device.context_for: the one warm_up started, kept
    across tasks; the call leaves it as it is).  ctypes releases the GIL for
    the call, so the worker keeps talking to the scheduler.  Returns (exit
    status, the first error line or "")."""
    import ctypes

    from ..device import context_for
    fn, _ = _entry(argv[0])
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
        rc, err = _run_here([spec["program"]] + argv_tail, device)
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
