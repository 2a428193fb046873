"""A tile task's input: the stack's description, windows read through GDAL
or as they lie in the file, by threads into buffers the worker keeps."""

import mmap
import ctypes
import os
import sys
import threading

from .markers import TaskError


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
    (page-locked tile buffers: bench/RESULTS.md, sessions 17-20).  Else an
    anonymous mapping advised for transparent huge pages (512 times fewer
    faults the first time; fresh arrays each task: bench/RESULTS.md, "the
    cause of the lost efficiency").  The arrays are valid until the
    thread's next task asks for the same slot: tasks of one thread run one
    after the other.  reserve: elements to map at least (a batch's largest
    window), so that a worker maps each slot once.  store: the buffers of
    the task thread when a helper thread reads for it (_buffers() of that
    thread; default this thread's)."""
    import numpy as np
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = max(1, max(count, int(reserve)) * dtype.itemsize)
    bufs = _buffers() if store is None else store
    pinned = pin and ctx is not None and ctx.backend == "cuda"
    m = bufs.get(slot)
    # a mapped buffer serves a request that is not to be page-locked; a
    # page-locked one serves every request
    keep = m is not None and len(m) >= count * dtype.itemsize and (
        not isinstance(m, mmap.mmap) or not pinned)
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
    """Threads reading a tile's window: half the worker's threads
    (OMP_NUM_THREADS, or the processors it may run on), 1 to 8 (8 and 2
    gave the same 4-GPU batch, 1 was slower: bench/RESULTS.md, session 18).
    first: the read a task's device waits for before its first kernel, with
    nothing else to do meanwhile: all of them, up to 16 (a task's first
    piece is read at the host's pace, not the device's: bench/RESULTS.md,
    session 21)."""
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


def _file_rows(path, complex_input):
    """Where a stack's rows lie in its file, when they lie there exactly as
    GDAL would return them: an uncompressed, pixel-interleaved GeoTIFF
    (GDAL's default for a multi-band GTiff) of CFloat32 (complex_input) or
    Float32 bands in this machine's byte order, cut in full-width strips
    that follow each other (gg_stack_layout_find of geogpu_gdal.h, the
    test the GDAL layer's own stack reads make).  Returns {"offset": file
    offset of row 0, "row": bytes a row, "bands": n}, else None (the window
    is then read through GDAL).

    Why: a tile task of a paper-size PtSel reads 600 MB; through GDAL that
    is a copy into the block cache and a de-interleaving pass per band,
    CPU and host-memory work that four workers on one host contend for
    (bench/RESULTS.md).  Read as it lies, it is one copy from the page
    cache, and the device sorts the bands (gg_op_run_stack_interleaved)."""
    from .. import _lib
    layer = _lib.gdal_layer()
    if layer is None or not os.path.isfile(str(path)):
        return None
    layout = _lib.GGStackLayout()
    gg_type = _lib.GG_CFLOAT32 if complex_input else _lib.GG_FLOAT32
    if not layer[0].gg_stack_layout_find(os.fsencode(str(path)), gg_type, ctypes.byref(layout)):
        return None
    return {"offset": int(layout.offset), "row": int(layout.row_bytes), "bands": int(layout.bands)}


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
