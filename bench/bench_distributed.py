#!/usr/bin/python3
"""bench_distributed.py -- scaling of geogpu.distributed across workers (one
per GPU, or CPU workers): a batch of ortho scenes (gdal_ortho, one task per
scene) and a PtSel stack cut in tiles (one task per tile, halo r/2), against
the single-process run on one device.  Outputs are checked identical to the
single-process ones.

    /usr/bin/python3 bench/bench_distributed.py --build build --work /tmp/bd \\
        [--devices cuda|cpu] [--workers 1,2,4] [--threads N] \\
        [--scenes 16[,112]] [--scene-size 4096[,16384]] \\
        [--ptsel-size 3260x2680] [--bands 60] [--window 51] [--grid 4x4] \\
        [--per-task 1,auto] [--ortho-runner in-process[,subprocess]] \\
        [--variants 'NAME:K=V,K=V;...' [--variants-on S,S]] \\
        [--repeat N] [--touch-gib N] [--ortho-args '-tr 4.2 4.2'] \\
        [--skip-ortho] [--skip-ptsel] [--json FILE]

--devices cuda: N workers on the first N CUDA GPUs (one each); cpu: N CPU
workers with --threads OpenMP threads each (default: cores / N).  The single
process runs with the threads of one worker.  --per-task: each batch
once per value (scenes or tiles per task: 1, N, or auto = scenes or tiles
/ workers; a task of several tiles reads the next window while the device
computes); --grid takes several grids too (4x4,1x8).  --ortho-runner: how each ortho task
runs gdal_ortho, one batch per value: in-process (gg_ortho_run in the
worker, on the device context the worker keeps: the default of
geogpu.distributed) or subprocess (a gdal_ortho process, and a CUDA
context, per task); each batch line says which path actually ran (a worker
without the plugin's entry point falls back to subprocess).  Inputs: bench_ortho_make (a
UInt16 RPC scene and a rough DEM, translated to GeoTIFF; the batch is
copies of that scene) and gg_make_input (a CFloat32 stack), both from the
build.  Needs GDAL's Python bindings and python3-distributed (Debian:
/usr/bin/python3; on the lent GPU machine: scripts/pack_device_python.sh,
then `. <out>/env.sh` and --build $GGRT, see bench/README.md).  Every
worker's device is started before timing (gd.warm_up); the JSON holds each
batch's wall time and its tasks' summed, median and longest durations, and
for tile batches the median split of a task (setup, read, run, write).
--variants: the same batches again on clusters whose workers (and this
process, where tile_batch decides how tiles are read) get more
environment variables, or ``pin`` (start_cluster(pin=True)) or ``pinK``
(pin=K: every worker count on the same K shares of the processors, one
worker measured on what each of K gets): A/B of a worker setting, e.g.
'pinned:pin' or 'quarter:pin4', or Dask's own
MALLOC_TRIM_THRESHOLD_=65536).
--ortho-args: more gdal_ortho options for every ortho batch and its
single-process reference (after -r cubic -t_srs EPSG:32632 -dem), e.g. a
coarser output grid, to see how the scaling follows a scene's bytes.
--touch-gib N: before anything is timed, N GiB of zeros written into
--work (then removed) twice, each pass timed: on a fresh virtual machine the
first pass is memory the guest never touched, which the hypervisor backs on
first use; without it the single process and the first cluster's first
batch pay for that (their outputs are the first to land in fresh memory).
Timing only: never run by the tests.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(*cmd, env=None):
    t0 = time.time()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, cmd))} failed:\n{p.stderr}")
    return time.time() - t0


def host_cpu():
    """(busy, all) processor seconds of the whole host since boot, from
    /proc/stat (busy: user, nice, system, irq, softirq, steal); None where
    there is no /proc."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy / tick, sum(v) / tick


def worker_threads(pids):
    """{(pid, tid): (thread name, processor seconds)} of the workers' live
    threads (/proc/<pid>/task/*/stat, user + system); {} where there is no
    /proc.  Threads that end between two looks are missing from both: their
    time is in gdal_ortho's own "processors" lines by role."""
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            name, rest = st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split()
            out[(pid, tid)] = (name, (int(rest[11]) + int(rest[12])) / tick)
    return out


def thread_use(before, after):
    """Processor seconds by thread name between two worker_threads looks,
    most first (a thread born in between counts whole)."""
    by = {}
    for key, (name, secs) in after.items():
        by[name] = by.get(name, 0.0) + secs - before.get(key, (name, 0.0))[1]
    return sorted(((n, s) for n, s in by.items() if s > 0), key=lambda x: -x[1])


def touch_memory(work, gib):
    """Writes gib GiB of zeros into work (files written by several threads,
    then removed), twice; returns each pass's GB/s.  On tmpfs the writes
    fault in that much of the machine's memory (posix_fallocate would not:
    tmpfs clears its pages only on first use), so later outputs reuse pages
    the hypervisor already backs."""
    from concurrent.futures import ThreadPoolExecutor
    chunk = bytes(64 << 20)
    nthreads = max(1, min(8, os.cpu_count() or 1))
    per = max(1, (gib << 30) // len(chunk) // nthreads)

    def fill(k):
        path = Path(work) / f"touch{k}.tmp"
        fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        try:
            for _ in range(per):
                os.write(fd, chunk)
        finally:
            os.close(fd)

    rates = []
    for _ in range(2):
        t0 = time.time()
        try:  # every file held until the pass ends: the memory must be distinct
            with ThreadPoolExecutor(nthreads) as ex:
                list(ex.map(fill, range(nthreads)))
            rates.append(per * nthreads * len(chunk) / 1e9 / (time.time() - t0))
        finally:
            for k in range(nthreads):
                (Path(work) / f"touch{k}.tmp").unlink(missing_ok=True)
    return rates


def same_file(a, b):
    """Byte-identical files (compared through mappings, without copies)."""
    import mmap

    import numpy as np
    with open(a, "rb") as fa, open(b, "rb") as fb:
        if os.fstat(fa.fileno()).st_size != os.fstat(fb.fileno()).st_size:
            return False
        if os.fstat(fa.fileno()).st_size == 0:
            return True
        ma = mmap.mmap(fa.fileno(), 0, access=mmap.ACCESS_READ)
        mb = mmap.mmap(fb.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return bool(np.array_equal(np.frombuffer(ma, np.uint8), np.frombuffer(mb, np.uint8)))
        finally:
            del ma, mb


def same_pixels(a, b):
    from osgeo import gdal
    da, db = gdal.Open(str(a)), gdal.Open(str(b))
    ok = (da.RasterXSize, da.RasterYSize, da.RasterCount) == (db.RasterXSize, db.RasterYSize,
                                                              db.RasterCount)
    for k in range(1, da.RasterCount + 1):
        if not ok:
            break
        ok = da.GetRasterBand(k).ReadRaster() == db.GetRasterBand(k).ReadRaster()
    da = db = None
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--work", required=True)
    ap.add_argument("--devices", choices=["cuda", "cpu"], default=None,
                    help="default: cuda when a CUDA GPU is seen, else cpu")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--scenes", default="16",
                    help="scenes in the ortho batch; several: 16,112 (one batch each)")
    ap.add_argument("--scene-size", default="4096",
                    help="scene width = height; several: 8192,16384 (one batch each)")
    ap.add_argument("--ptsel-size", default="3260x2680")
    ap.add_argument("--bands", type=int, default=60)
    ap.add_argument("--window", type=int, default=51)
    ap.add_argument("--grid", default="4x4",
                    help="PtSel tiles across x down (same for every N); several: 4x4,1x8")
    ap.add_argument("--per-task", default="1,auto",
                    help="ortho scenes and PtSel tiles per task, one batch per value "
                    "(1, N or auto)")
    ap.add_argument("--ortho-runner", default="in-process",
                    help="how ortho tasks run gdal_ortho, one batch per value: in-process, "
                         "subprocess, or both (in-process,subprocess)")
    ap.add_argument("--variants", default="",
                    help="worker environments to compare, ';'-separated, each NAME:K=V,K=V "
                         "(e.g. 'dask-trim:MALLOC_TRIM_THRESHOLD_=65536');"
                         " the plain cluster always runs first")
    ap.add_argument("--variants-on", default="",
                    help="run the variants only on batches whose name contains one of these "
                         "comma-separated strings (default: every batch)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each batch this many times on the same cluster (rows 'run 2', ...: "
                         "a long-running cluster's later batches, whose workers already hold "
                         "their buffers)")
    ap.add_argument("--ortho-args", default="",
                    help="more gdal_ortho options for every ortho batch (e.g. '-tr 4.2 4.2')")
    ap.add_argument("--touch-gib", type=int, default=0,
                    help="GiB of memory to touch in --work before timing (a fresh virtual "
                         "machine backs its memory on first use)")
    ap.add_argument("--json", help="write every figure to this file too")
    ap.add_argument("--skip-ortho", action="store_true")
    ap.add_argument("--skip-ptsel", action="store_true")
    a = ap.parse_args()
    runners = [r.strip() for r in a.ortho_runner.split(",") if r.strip()]
    if not runners or any(r not in ("in-process", "subprocess") for r in runners):
        sys.exit("bench: --ortho-runner takes in-process and/or subprocess, not "
                 f"{a.ortho_runner!r}")

    build = Path(a.build).resolve()
    os.environ["GG_LIBRARY"] = str(build / "lib")
    os.environ["GDAL_DRIVER_PATH"] = str(build / "lib")
    sys.path.insert(0, str(REPO / "gdal_plugins" / "python"))
    from geogpu import distributed as gd

    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    cuda = gd.cuda_devices()
    kind = a.devices or ("cuda" if cuda else "cpu")
    counts = [int(n) for n in a.workers.split(",")]
    if kind == "cuda":
        counts = [n for n in counts if n <= len(cuda)]
        if not counts:
            sys.exit("bench: no CUDA GPU for --devices cuda")
    cores = os.cpu_count() or 1

    def devices_for(n):
        return cuda[:n] if kind == "cuda" else ["cpu"] * n

    def threads_for(n):
        return a.threads or max(1, cores // n)

    if a.touch_gib > 0:
        first, again = touch_memory(work, a.touch_gib)
        print(f"# memory touched: {a.touch_gib} GiB in {work}: first pass {first:.1f} GB/s, "
              f"again {again:.1f} GB/s", flush=True)
    one_dev = "cuda:0" if kind == "cuda" else "cpu"
    env1 = dict(os.environ, OMP_NUM_THREADS=str(threads_for(1)))
    print(f"# bench_distributed: {kind} workers {counts}, {cores} cores, "
          f"{'threads/worker ' + str(a.threads) if a.threads else 'threads = cores / N'}")
    results = {}

    scenes_of, args_of = {}, {}
    counts_of_scenes = [int(v) for v in str(a.scenes).split(",")]
    if not a.skip_ortho:
        for s in (int(v) for v in a.scene_size.split(",")):
            od = work / f"ortho{s}"
            od.mkdir(exist_ok=True)
            scene0 = od / "s00.tif"
            if not scene0.exists():
                run(build / "bin" / "bench_ortho_make", od, s, s)
                run("gdal_translate", "-q", od / "scene.vrt", scene0)
                run("gdal_translate", "-q", od / "dem.vrt", od / "dem.tif")
                (od / "scene.raw").unlink(missing_ok=True)
            scenes = [scene0]
            for i in range(1, max(counts_of_scenes)):
                p = od / f"s{i:02d}.tif"
                if not p.exists():
                    shutil.copyfile(scene0, p)
                scenes.append(p)
            args = ["-r", "cubic", "-t_srs", "EPSG:32632", "-dem", str(od / "dem.tif"),
                    *shlex.split(a.ortho_args)]
            one = od / "one"
            shutil.rmtree(one, ignore_errors=True)
            one.mkdir()
            t1one = run(build / "bin" / "gdal_ortho", "-q", "-device", one_dev, *args, scene0,
                        one / scene0.name, env=env1)
            for ns in counts_of_scenes:
                ref = od / f"ref{ns}"
                shutil.rmtree(ref, ignore_errors=True)
                ref.mkdir()
                t1 = run(build / "bin" / "gdal_ortho", "-q", "-device", one_dev, *args,
                         "-outdir", ref, *scenes[:ns], env=env1)
                print(f"ortho: {ns} scenes {s}x{s}, single process ({one_dev}): {t1:.2f} s "
                      f"({ns / t1:.2f} scenes/s); one scene alone: {t1one:.2f} s", flush=True)
                for pt in a.per_task.split(","):
                    pt = pt if pt == "auto" else int(pt)
                    for rn in runners:
                        key = (f"ortho {s}²" + (f" x{ns}" if len(counts_of_scenes) > 1 else "")
                               + f" per_task={pt} {rn}")
                        scenes_of[key], args_of[key] = scenes[:ns], args
                        results[key] = {"single": t1, "runs": {}, "per_task": pt, "units": ns,
                                        "one_scene": t1one, "dir": str(od), "ref": str(ref),
                                        "runner": rn}

    if not a.skip_ptsel:
        pd = work / "ptsel"
        pd.mkdir(exist_ok=True)
        stack = pd / f"stack_{a.ptsel_size}_{a.bands}.tif"
        if not stack.exists():
            run(build / "bin" / "gg_make_input", "-size", a.ptsel_size, "-type", "CFloat32",
                "-bands", a.bands, stack)
        W, H = (int(v) for v in a.ptsel_size.split("x"))
        ref = pd / "ref.tif"
        t1 = run(build / "bin" / "gdal_ptsel", "-q", "-device", one_dev, "-window", a.window,
                 stack, ref, env=env1)
        for grid in a.grid.split(","):
            gx, gy = (int(v) for v in grid.split("x"))
            tile = (-(-W // gx), -(-H // gy))
            for pt in a.per_task.split(","):
                pt = pt if pt == "auto" else int(pt)
                results[f"ptsel {grid} per_task={pt}"] = {
                    "single": t1, "runs": {}, "tile": tile, "units": gx * gy, "grid": grid,
                    "per_task": pt}
            print(f"ptsel: {W}x{H}, n={a.bands}, window {a.window}, grid {grid}: tiles "
                  f"{tile[0]}x{tile[1]} ({gx * gy}), single process ({one_dev}): {t1:.2f} s")

    variants = [("", {"env": {}, "pin": False})]
    for v in filter(None, (x.strip() for x in a.variants.split(";"))):
        label, _, kv = v.partition(":")
        items = [item for item in kv.split(",") if item]
        pins = [i for i in items if re.fullmatch(r"pin\d*", i)]
        variants.append((label, {"env": dict(i.split("=", 1) for i in items if "=" in i),
                                 "pin": int(pins[-1][3:] or 0) or True if pins else False}))
    base_results = dict(results)
    only = [x for x in a.variants_on.split(",") if x]

    def varied(key):
        return not only or any(x in key for x in only)

    def named(key0, label, rep):
        return key0 + (f" [{label}]" if label else "") + (f" run {rep}" if rep > 1 else "")

    for label, _ in variants:
        for key, r in base_results.items():
            for rep in range(1, a.repeat + 1):
                if (label or rep > 1) and (not label or varied(key)):
                    results[named(key, label, rep)] = {**r, "runs": {}}

    for n in counts:
        for label, venv in variants:
            t0 = time.time()
            # a variant's settings hold in this process too (the client
            # decides some); restored after the variant
            saved = {k: os.environ.get(k) for k in venv["env"]}
            os.environ.update(venv["env"])
            with gd.open_client(devices=devices_for(n), threads=threads_for(n),
                                env=venv["env"] or None, pin=venv["pin"],
                                local_directory=work / "scratch") as client:
                # start every worker's device once (CUDA context, kernels), as a
                # long-running cluster has
                names = gd.warm_up(client)
                pids = list(client.run(os.getpid).values())
                print(f"  workers{' [' + label + ']' if label else ''}: {sorted(names.values())}")
                start = time.time() - t0
                for key0, rep in ((k, i) for k in base_results for i in range(1, a.repeat + 1)):
                    if label and not varied(key0):
                        continue
                    key = named(key0, label, rep)
                    r = results[key]
                    print(f"# batch {key}: {n} worker(s)", file=sys.stderr, flush=True)
                    if key0.startswith("ortho"):
                        out = Path(r["dir"]) / f"run{n}"
                        shutil.rmtree(out, ignore_errors=True)
                        out.mkdir()
                        thr0 = worker_threads(pids)
                        cpu0, t_call = host_cpu(), time.time()
                        b = gd.ortho_batch(client, scenes_of[key0], out, args_of[key0], retries=0,
                                           per_task=r["per_task"],
                                           in_process=r["runner"] == "in-process")
                        t_call = time.time() - t_call
                        cpu1 = host_cpu()
                        thr1 = worker_threads(pids)
                        b.raise_for_failures()
                        ok = all(same_file(out / p.name, Path(r["ref"]) / p.name)
                                 for p in scenes_of[key0])
                        shutil.rmtree(out, ignore_errors=True)
                    else:
                        thr0 = thr1 = {}
                        dst = work / "ptsel" / f"run{n}.vrt"
                        shutil.rmtree(work / "ptsel" / f"run{n}.vrt.tiles", ignore_errors=True)
                        cpu0, t_call = host_cpu(), time.time()  # the previous run's tiles removed first
                        b = gd.tile_batch(client, "ptsel", [stack], dst, tile=r["tile"],
                                          retries=0, window=a.window, per_task=r["per_task"])
                        t_call = time.time() - t_call
                        cpu1 = host_cpu()
                        b.raise_for_failures()
                        ok = same_pixels(dst, work / "ptsel" / "ref.tif")
                    secs = sorted(x.seconds for x in b.records)
                    ran = sorted({x.runner or x.reader for x in b.records
                                  if x.runner or x.reader})
                    # seconds: the tasks (submitted to collected); call: the
                    # whole ortho_batch/tile_batch call, set-up and mosaic too
                    run_r = r["runs"][n] = {"seconds": b.seconds, "call": t_call, "identical": ok,
                                            "task_sum": sum(secs), "task_median": secs[len(secs) // 2],
                                            "task_max": secs[-1],
                                            "workers": len({x.worker for x in b.records}),
                                            "ran": ran,
                                            "tasks": [[x.name, x.worker, round(x.seconds, 3),
                                                       {k: round(v, 3) for k, v in
                                                        (x.phases or {}).items()}]
                                                      for x in b.records]}
                    phases = ""
                    if all(x.phases for x in b.records):
                        med = {k: sorted(x.phases[k] for x in b.records)[len(secs) // 2]
                               for k in b.records[0].phases}
                        run_r["phases_median"] = med
                        phases = "; phases (median) " + ", ".join(f"{k} {v:.3f}"
                                                                   for k, v in med.items())
                    if b.spans:  # Dask's share: before the first task starts, after the last ends
                        run_r["dispatch"] = min(a for a, _ in b.spans)
                        run_r["collect"] = b.seconds - max(e for _, e in b.spans)
                        run_r["spans"] = [[round(a, 4), round(e, 4)] for a, e in b.spans]
                        phases += (f"; dispatch {run_r['dispatch']:.3f} s, "
                                   f"collect {run_r['collect']:.3f} s")
                    if b.client:  # the client's own steps (Batch.client)
                        run_r["client"] = {k: round(v, 4) for k, v in b.client.items()}
                        phases += "; client " + ", ".join(f"{k} {v:.4f}"
                                                          for k, v in b.client.items())
                    if cpu0 and cpu1 and cpu1[1] > cpu0[1]:
                        # the host's processors over the batch call (not the checks)
                        busy, span = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
                        ncpu = os.cpu_count() or 1
                        run_r["host_cpu"] = {"busy_s": round(busy, 3),
                                             "busy_share": round(busy / span, 3)}
                        phases += (f"; host processors {busy / span * ncpu:.1f} of {ncpu} busy "
                                   f"({busy:.1f} s over the call)")
                    use = thread_use(thr0, thr1)
                    if use:  # the workers' lasting threads (gdal_ortho's own: its lines)
                        run_r["worker_threads"] = {k: round(v, 3) for k, v in use}
                        phases += "; workers' lasting threads " + ", ".join(
                            f"{k} {v:.2f} s" for k, v in use[:6])
                    ran_s = f"; ran: {', '.join(ran)}" if ran else ""
                    if key0.startswith("ortho") and ran != [r["runner"]]:
                        ran_s += f" (asked for {r['runner']})"
                    print(f"{key}: {n} worker(s): {b.seconds:.2f} s, identical: {ok}{ran_s}; "
                          f"per output "
                          f"{secs[len(secs) // 2]:.2f} s median, {secs[-1]:.2f} s max, "
                          f"sum {sum(secs):.1f} s over {run_r['workers']} workers{phases}",
                          flush=True)
            print(f"  (cluster of {n}{' [' + label + ']' if label else ''}: started in "
                  f"{start:.1f} s)", flush=True)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    print("\n| batch | single process | " + " | ".join(f"{n} worker{'s' * (n > 1)}" for n in counts)
          + " | efficiency vs 1 worker | the whole call: seconds, efficiency | vs the single process |")
    print("|---|---:|" + "---:|" * len(counts) + "---|---|---|")
    for name, r in results.items():
        t = r["runs"]
        base = t[1]["seconds"] if 1 in t else None
        for n in t:
            t[n]["efficiency"] = base / t[n]["seconds"] / n if base else None
            t[n]["vs_single"] = r["single"] / t[n]["seconds"] / n
            t[n]["units_per_s"] = r["units"] / t[n]["seconds"]
        eff = ", ".join(f"{n}: {base / t[n]['seconds']:.2f}x / {t[n]['efficiency']:.2f}"
                        for n in counts if base and n > 1 and n in t)
        call = ", ".join(f"{n}: {t[n]['call']:.2f} s"
                         + (f" / {t[1]['call'] / t[n]['call'] / n:.2f}" if 1 in t and n > 1 else "")
                         for n in counts if n in t)
        vs1 = ", ".join(f"{n}: {r['single'] / t[n]['seconds']:.2f}x / {t[n]['vs_single']:.2f}"
                        for n in counts if n in t)
        unit = "scenes" if name.startswith("ortho") else "tiles"
        print(f"| {name} | {r['single']:.2f} s | "
              + " | ".join(f"{t[n]['seconds']:.2f} s ({t[n]['units_per_s']:.2f} {unit}/s)"
                           f"{'' if t[n]['identical'] else ' (DIFFERENT)'}" for n in counts if n in t)
              + f" | {eff or '-'} | {call} | {vs1} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "cores": cores, "kind": kind,
                                            "results": results}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
