"""Finding and running the geogpu utilities: GDAL terminal progress parsed
into percentages, cancel by terminating the process and removing what it
left under its temporary names, and collecting the files a run produced.

Pure Python (no QGIS import): the provider wires it to QgsProcessingFeedback.
"""
import glob
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent


def _installed_bindir():
    try:
        from . import _install  # written by cmake --install
        return Path(_install.BINDIR)
    except ImportError:
        return None


def _source_build_bins():
    """<repo>/build/bin when the plugin runs from <repo>/gdal_plugins/qgis."""
    repo = PLUGIN_DIR.parents[2] if len(PLUGIN_DIR.parents) > 2 else None
    if repo and (repo / "include" / "geogpu.h").is_file():
        return [repo / "build" / "bin"]
    return []


def search_folders(setting=""):
    """Folders to look for utilities in, in order: the provider setting,
    $GG_BUILD_DIR/bin, PATH, the install bindir, the source tree's build/."""
    out = []
    if setting:
        out.append(Path(setting))
    if os.environ.get("GG_BUILD_DIR"):
        out.append(Path(os.environ["GG_BUILD_DIR"]) / "bin")
    out += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    b = _installed_bindir()
    if b is not None:
        out.append(b)
    out += _source_build_bins()
    seen, uniq = set(), []
    for p in out:
        if str(p) not in seen:
            seen.add(str(p))
            uniq.append(p)
    return uniq


def find_utility(program, setting=""):
    """The path of a utility.  With the setting given, only that folder
    counts (a wrong setting is an error, not a silent fallback)."""
    folders = [Path(setting)] if setting else search_folders()
    for f in folders:
        p = f / program
        if p.is_file() and os.access(p, os.X_OK):
            return p
    where = f"the folder {setting}" if setting else "GG_BUILD_DIR/bin, PATH or the install folder"
    raise FileNotFoundError(f"{program} not found in {where}; set the geogpu provider setting "
                            "'Folder of the geogpu utilities'")


def is_geogpu_utility(path):
    """A program of geogpu: an ELF executable that links libgeogpu or
    libgeogpu_gdal (cheap: no process is started)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if head != b"\x7fELF":
                return False
            body = f.read(64 << 20)
            return b"libgeogpu.so" in body or b"libgeogpu_gdal.so" in body
    except OSError:
        return False


def discover(setting=""):
    """program -> path of every geogpu utility in the folder where
    gdal_multilook is found (new utilities appear without a table entry)."""
    try:
        anchor = find_utility("gdal_multilook", setting).parent
    except FileNotFoundError:
        return {}
    found = {}
    for p in sorted(anchor.glob("gdal_*")):
        if p.suffix or not os.access(p, os.X_OK) or p.name == "gdal_quicklook":
            continue
        if is_geogpu_utility(p):
            found[p.name] = p
    return found


# ------------------------------------------------------------------ progress

class TermProgress:
    """Parses GDALTermProgress output ("0...10...20...100 - done.") fed
    character by character: a number sets the percentage, each dot after it
    adds 2.5."""

    def __init__(self, callback):
        self.callback = callback
        self.percent = 0.0
        self.digits = ""
        self.done = False

    def feed(self, text):
        for ch in text:
            if self.done:
                return
            if ch.isdigit():
                self.digits += ch
                continue
            if self.digits:
                value = int(self.digits)
                self.digits = ""
                if 0 <= value <= 100:
                    self._set(value)
                    if value == 100:
                        self.done = True
                        continue
            if ch == ".":
                self._set(min(self.percent + 2.5, 100.0))
            elif ch == "\n":
                self.digits = ""

    def _set(self, value):
        if value > self.percent or value == 0:
            self.percent = float(value)
            self.callback(self.percent)


# ------------------------------------------------------------------ running

class Cancelled(Exception):
    pass


def remove_temporaries(folder, pid):
    """What gg_app's writer leaves under '.<name>.tmp<pid>...' when its
    process is killed (it renames only complete outputs)."""
    for p in glob.glob(os.path.join(glob.escape(str(folder)), f".*.tmp{pid}*")):
        try:
            if os.path.isdir(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
        except OSError:
            pass


def run(argv, on_progress=None, on_stdout_line=None, on_stderr_line=None, is_cancelled=None,
        env=None, output_folders=()):
    """Runs a utility; returns (exit code, stderr text).  Progress tokens on
    stdout go to on_progress(percent); other stdout/stderr lines to the
    line callbacks.  When is_cancelled() turns true the process is
    terminated, its temporaries in output_folders removed, and Cancelled
    raised."""
    e = dict(os.environ)
    if env:
        e.update(env)
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=e)
    parser = TermProgress(on_progress or (lambda p: None))
    err_lines = []

    def read_stdout():
        line = ""
        while True:
            b = proc.stdout.read1(4096) if hasattr(proc.stdout, "read1") else proc.stdout.read(1)
            if not b:
                break
            text = b.decode("utf-8", "replace")
            parser.feed(text)
            for ch in text:
                if ch == "\n":
                    if on_stdout_line and line and not _is_progress(line):
                        on_stdout_line(line)
                    line = ""
                else:
                    line += ch
        if on_stdout_line and line and not _is_progress(line):
            on_stdout_line(line)

    def read_stderr():
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            err_lines.append(line)
            if on_stderr_line:
                on_stderr_line(line)

    threads = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=read_stderr, daemon=True)]
    for t in threads:
        t.start()
    cancelled = False
    while proc.poll() is None:
        if is_cancelled is not None and is_cancelled():
            cancelled = True
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            break
        time.sleep(0.05)
    for t in threads:
        t.join(timeout=5)
    proc.stdout.close()
    proc.stderr.close()
    if cancelled:
        for folder in output_folders:
            remove_temporaries(folder, proc.pid)
        raise Cancelled(f"{Path(str(argv[0])).name} cancelled")
    return proc.returncode, "\n".join(err_lines)


def _is_progress(line):
    s = line.strip()
    return bool(s) and all(c.isdigit() or c in ". -" for c in s.replace("done", ""))
