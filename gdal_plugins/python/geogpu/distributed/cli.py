"""The command line: python3 -m geogpu.distributed ortho|insar|xcorr|coreg|
pairs|ptsel|tiles|workers ..."""

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from .batches import ortho_batch, pair_batch
from .cluster import _serve_workers, open_client
from .markers import TaskError
from .tiling import tile_batch


def _op_flags(op, tokens):
    """A utility's flags (``-window 11 -mask -looks 4 1``) or ``key=value``
    tokens as op options, through the op's option table (gg_op_options):
    each option's flag as the utility takes it -- a bool's flag takes no
    value and sets the opposite of its default (``-noderamp``: deramp=no),
    a size's two numbers (or one for both), anything else one value.  A flag
    naming no option is a product of ops with a ``products`` option
    (gdal_insar's -interferogram/-coherence/-amplitude)."""
    from ..ops import op_info
    info = op_info(op).options
    flags = {o.flag.lower(): o for o in info if o.flag}
    keys = {o.key for o in info}
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
        o = flags.get(t.lower())
        if o is None:
            if "products" in keys:
                products.append(t.lstrip("-").lower())
                i += 1
                continue
            raise ValueError(f"unknown {op} option '{t}' (options: {', '.join(sorted(flags))})")
        if o.type == "bool":
            out[o.key] = "no" if (o.default or "").lower() in ("yes", "true", "on", "1") else "yes"
            i += 1
        elif o.type == "size":
            vals = [v for v in tokens[i + 1:i + 3]]
            n = 2 if len(vals) == 2 and all(number(v) for v in vals) else 1
            if len(vals) < 1:
                raise ValueError(f"option '{t}' needs a value")
            out[o.key] = "x".join(vals[:n])
            i += 1 + n
        else:
            if i + 1 >= len(tokens):
                raise ValueError(f"option '{t}' needs a value")
            out[o.key] = tokens[i + 1]
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
    g.add_argument("--pin-shares", type=int, metavar="K",
                   help="as --pin, the processors cut into K shares whatever the number of "
                        "workers (one worker on a quarter of them: --pin-shares 4)")
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
                        "its kept device context (the default)")
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


class _Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C is."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum, frame):
    raise _Interrupted(signum)


def _end_as_signalled(signum):
    """Ends the process as the signal would have (status 128 + signum in a
    shell), now that the cluster is closed and the temporaries removed."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum


def main(argv=None):
    """The command line; a program: SIGTERM and SIGHUP end a batch as Ctrl-C
    does, the tasks cancelled, the cluster closed and the unfinished outputs'
    temporaries removed (finished outputs stay, and a re-run skips them)."""
    program = argv is None and threading.current_thread() is threading.main_thread()
    if program:
        for s in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, _raise_interrupted)
    try:
        return _main(argv)
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"ERROR 1: geogpu.distributed: interrupted ({signal.Signals(signum).name}); "
              "unfinished outputs removed", file=sys.stderr)
        if not program:  # called from Python: the caller decides
            raise
        return _end_as_signalled(signum)


def _main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    args = _parser().parse_args(argv)
    prog = "geogpu.distributed"
    try:
        if args.pin_shares is not None:
            if args.pin_shares < 1:
                raise ValueError(f"--pin-shares {args.pin_shares}: give 1 or more")
            args.pin = args.pin_shares
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
