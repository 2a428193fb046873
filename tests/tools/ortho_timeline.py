#!/usr/bin/env python3
"""Summarises gdal_ortho's per-scene timelines (GG_ORTHO_TIMING=1) from a
log: for each batch (a "# batch ..." line of bench_distributed.py; the whole
log when there is none) and each process, how busy its device was and what
its scenes waited for.

    python3 tests/tools/ortho_timeline.py bench_ortho.log

Per process: the device's span (first turn to last release) and the share
of it some scene held the device, and how many held it on average (two
at once with GG_ORTHO_SLOTS=2); the median turn (take to release: what
bounds a batch when the device is busy ~1.0); the median time from one
scene's release to the next one's; the median gap between one scene's
release and the next one's turn (negative where they overlapped); how many turns waited for their
scene's set-up; the median set-up (start to ready), start-to-start and
writer tail (release to the last block written).  Where the processes
printed their "processors" lines (gdal_ortho's calls), the batch's
processor milliseconds a scene by role, summed over its processes; and the
median split of a turn on the device thread (its session's creation, then
until its release, each moment once: its strips' uploads, waits for rows,
grids and queue room, queueing blocks, waits for copies, waits for the
pipeline's lock, the source's device memory, taking output buffers, the
rest; and the thread's processor time over that span).

MIT licence.
"""
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"timeline: pid (\d+) scene (\d+) start ([\d.]+) set up ([\d.]+) turn ([\d.]+) "
                  r"device done ([\d.]+) written ([\d.]+) renamed ([\d.]+)")
CPU = re.compile(r"processors: pid (\d+), (\d+) scenes, (.*?); process ([\d.]+) s")
ROLE = re.compile(r"([a-z][a-z -]*?) ([\d.]+) s(?:, |$)")
DEV = re.compile(r"device thread from its session to its release: uploads ([\d.]+) s, idle ([\d.]+) s, "
                 r"queueing blocks ([\d.]+) s, waiting for copies ([\d.]+) s, locks ([\d.]+) s, "
                 r"the source's device memory ([\d.]+) s, output buffers ([\d.]+) s, other ([\d.]+) s "
                 r"\(its processor ([\d.]+) s(?:, waiting for a processor ([\d.]+) s)?\)")
DEV_KEYS = ("uploads", "idle", "queueing", "copy waits", "locks", "source memory",
            "output buffers", "other", "its processor", "waiting for a processor")
BUFS = re.compile(r"host buffers allocated (\d+), freed (\d+)")
SESSION = re.compile(r"renamed [\d.]+; session ([\d.]+)")
MAPPED = re.compile(r"files mapped ([\d.]+) s, unmapped ([\d.]+) s")


def read(path):
    batches, cur, cpu = {}, "(whole log)", {}
    dev = defaultdict(lambda: defaultdict(list))
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("# batch "):
                cur = line[len("# batch "):].strip()
                continue
            m = DEV.search(line)
            if m:
                for key, v in zip(DEV_KEYS, m.groups()):
                    if v is not None:  # logs before session 28 lack the last
                        dev[cur][key].append(float(v))
            m = SESSION.search(line)
            if m:
                dev[cur]["session"].append(float(m.group(1)))
            m = MAPPED.search(line)
            if m:  # off the device thread: before the turn, after the release
                dev[cur]["mapping"].append(float(m.group(1)))
                dev[cur]["unmapping"].append(float(m.group(2)))
            m = CPU.search(line)
            if m:
                acc = cpu.setdefault(cur, defaultdict(float))
                acc["scenes"] += int(m.group(2))
                for role, secs in ROLE.findall(m.group(3)):
                    acc[role] += float(secs)
                acc["process"] += float(m.group(4))
                b = BUFS.search(line)
                if b:
                    bufs = cpu.setdefault(cur + "\0bufs", [0, 0])
                    bufs[0] += int(b.group(1))
                    bufs[1] += int(b.group(2))
            for m in LINE.finditer(line):
                pid, idx = int(m.group(1)), int(m.group(2))
                start, ready, turn, done, written, _ = (float(x) for x in m.groups()[2:])
                batches.setdefault(cur, defaultdict(list))[pid].append(
                    (idx, start, ready, turn, done, written))
    return batches, cpu, dev


def processors(acc):
    n = acc.pop("scenes")
    parts = [f"{role} {1e3 * s / n:.1f}" for role, s in acc.items()]
    return f"processor ms a scene over {n:.0f} scenes: " + ", ".join(parts)


def ms(xs):
    return 1e3 * statistics.median(xs) if xs else float("nan")


def summary(rows):
    rows.sort()
    turns = [r[4] - r[3] for r in rows]
    pairs = list(zip(rows, rows[1:]))
    span = max(r[4] for r in rows) - rows[0][3]
    # the share of the span some scene held the device (the union of the
    # turns: with GG_ORTHO_SLOTS=2 two may hold it at once), and the scenes
    # at the device on average (their turns summed over the span)
    held, end = 0.0, rows[0][3]
    for r in rows:
        held += max(0.0, r[4] - max(r[3], end))
        end = max(end, r[4])
    return (f"{len(rows)} scenes, device span {span:.3f} s, busy {held / span if span > 0 else 0:.2f}, "
            f"scenes at it {sum(turns) / span if span > 0 else 0:.2f}; "
            f"turn {ms(turns):.1f} ms, release to release {ms([b[4] - a[4] for a, b in pairs]):.1f} ms, "
            f"gap {ms([b[3] - a[4] for a, b in pairs]):.1f} ms (negative: overlapped), "
            f"turns that waited for their set-up {sum(b[2] > a[4] + 1e-4 for a, b in pairs)}; "
            f"set-up {ms([r[2] - r[1] for r in rows]):.1f} ms, "
            f"start to start {ms([b[1] - a[1] for a, b in pairs]):.1f} ms, "
            f"writer tail {ms([r[5] - r[4] for r in rows]):.1f} ms (medians)")


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    batches, cpu, dev = read(argv[1])
    if not batches:
        print("ortho_timeline: no timeline lines (run with GG_ORTHO_TIMING=1)", file=sys.stderr)
        return 1
    for name, procs in batches.items():
        print(name)
        for pid, rows in sorted(procs.items()):
            print(f"  pid {pid}: {summary(rows)}")
        if cpu.get(name, {}).get("scenes"):
            print(f"  {processors(cpu[name])}")
        if name + "\0bufs" in cpu:
            a, f = cpu[name + "\0bufs"]
            print(f"  host buffers allocated {a}, freed {f} (all processes)")
        maps = {k: dev.get(name, {}).pop(k, []) for k in ("mapping", "unmapping")}
        if maps["mapping"]:
            print(f"  files mapped {ms(maps['mapping']):.2f} ms, unmapped "
                  f"{ms(maps['unmapping']):.2f} ms a scene (medians; before the turn, after it)")
        if dev.get(name):
            print("  device thread a turn, ms (medians): " +
                  ", ".join(f"{k} {ms(v):.2f}" for k, v in dev[name].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
