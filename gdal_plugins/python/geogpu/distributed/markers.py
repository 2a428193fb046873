"""What makes a batch safe to stop and run again: each output's completion
marker, the digest of what it was computed from, the private folder of
each attempt and the rename into place."""

import hashlib
import json
import os
import shutil
import time
import uuid
from pathlib import Path


STATE_DIR = ".geogpu"          # markers and task folders, inside each output folder


MARKER_VERSION = 1


class TaskError(RuntimeError):
    """A task failed: the message names the output and the cause (the
    utility's own ERROR line, or the library's message)."""


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
