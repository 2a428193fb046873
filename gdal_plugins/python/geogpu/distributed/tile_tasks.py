"""The tile task, on a worker: pieces read ahead, given to the device and
collected, each tile written and committed under its own marker."""

import shutil
import time

from .markers import TaskError, _commit, _complete, _workdir
from .reads import _buffer, _buffers, _gdal, _read_file_rows, _read_window, _readers
from .worker import _device, _pin, _worker_identity


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
    batch): pinning a worker's 450 MB costs
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
    todo = [it for it in items if not _complete(outdir, it["name"], it["signature"])]
    if not todo:
        return {"status": "skipped", "worker": wname, "items": []}
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from ..device import context_for
    from ..ops import Op
    device = _device(spec["device"])
    op = Op(spec["op"], **spec["options"])
    W, H = spec["size"]
    prep = op.prepare((H, W), complex_input=spec["complex"], bands=sum(spec["counts"]),
                      nodata=spec["nodata"], geotransform=spec["geotransform"])
    ctx = context_for(device)
    store = _buffers()
    pieces = _pieces(prep, todo)
    # stack ops queue their pieces on the device asynchronously
    # (Prepared.submit_tile): every GPU count 9-11 % faster than a
    # synchronous run per piece (bench/RESULTS.md, session 19); band ops
    # compute each piece before the next is given
    pipelined = prep.stack
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
        t = time.time()
        # the marker tells the client as much as the task's result will
        # (_run_jobs may finish a batch on the markers)
        written = _write_tile(spec, prep.info, todo[k], srcs[k], outs[k], wname, device,
                              time.time() - (t0 if k == 0 else started[k]),
                              {"phases": dict(phases[k]), "reader": kinds[k], "task_started": t0})
        return written, time.time() - t

    def read(p, slot):
        # the first piece: the device waits for it, with nothing to overlap
        return _read_tile(spec, prep, ctx, pieces[p][2], slot, store,
                          _readers(first=True) if p == 0 else None)

    def collect(q):
        """Piece q's outputs are in place: collect it, and write its tile
        when it was the tile's last piece."""
        k = pieces[q][0]
        t = time.time()
        if pipelined:
            prep.collect(ctx)
        phases[k]["run"] += time.time() - t
        if q + 1 == len(pieces) or pieces[q + 1][0] != k:
            writing.append((k, writer.submit(write, k)))

    try:
        pending = None
        for p, (k, window, src) in enumerate(pieces):
            t_read = time.time()
            if started[k] is None:
                started[k] = t_read
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
    return {"status": "done", "worker": wname, "device": device, "seconds": time.time() - t0,
            "items": done, "started": t0, "ended": time.time()}


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
