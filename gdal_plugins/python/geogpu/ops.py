"""Operations on numpy arrays.

Every geogpu algorithm is an *op* of the C library (gg_op_names()), described
once there: its options (gg_op_options: the table every front end uses), its
inputs, its output bands.
This module drives any op the library lists, so a new op needs no Python
code:

    geogpu.ops()                                   # ['multilook', 'rotate', ...]
    geogpu.run("multilook", slc, looks=(4, 4), device="cpu")
    geogpu.run("coherence", s1, s2, window=(5, 5))  # -> {'interferogram': ..., ...}

Arrays go in as numpy arrays (2-D ``(rows, cols)``, or 3-D ``(bands, rows, cols)``);
complex data is processed as complex64, real data as float32, as the GG driver
reads them.  The work is cut the way the GG driver cuts it (square blocks for
ops that prefer them, device passes of rows sized from free device memory), so
results are bit-identical to ``gdal_translate GG:...`` on the same device.

``Op.prepare`` gives a ``Prepared`` op whose ``source_window``/``run_tile``
compute one output window from its input window: the unit of a tiled or
distributed (Dask) run.
"""
import ctypes
import math
from collections import deque, namedtuple

import numpy as np

from ._lib import (GG_BYTE, GG_CFLOAT32, GG_FLOAT32, GG_OPTION_KINDS, GGRasterInfo, GGTile,
                   GGWindow, lib, text)
from .device import context_for
from .errors import ArgumentError, CancelledError, UnsupportedError, raise_for_status

__all__ = ["ops", "op_info", "OpInfo", "OpOption", "Op", "Prepared", "OutputInfo", "run",
           "format_option"]

# Same constants as the GG driver (gdal/gg_processed.cpp), so that blocks,
# statistics strips and therefore results match it exactly.
SQUARE_BLOCK = 512
STATS_STRIP_BYTES = 64.0 * 1024 * 1024

_NUMPY_OF = {GG_FLOAT32: np.float32, GG_CFLOAT32: np.complex64, GG_BYTE: np.uint8}
_TYPE_NAME = {GG_FLOAT32: "Float32", GG_CFLOAT32: "CFloat32", GG_BYTE: "Byte"}

OpOption = namedtuple("OpOption", "key type default description flag minimum maximum choices "
                                  "required")
OpOption.__doc__ = """One option of an op, from the C table (gg_op_options): key (the keyword
argument), type (int, float, bool, size, choice, string), default (None: none or computed),
description, the utility's flag (None: none), minimum and maximum (None: unbounded or not a
number), choices (a tuple for type choice) and required (by the utility)."""

OpInfo = namedtuple("OpInfo", "name description inputs options")
OpInfo.__doc__ = """What the library says about an op: ``inputs`` is the number of
input rasters (-1: one or more, stacked band by band), ``options`` a list of OpOption."""


def ops():
    """Names of every op the library provides."""
    names = lib.gg_op_names()
    out, i = [], 0
    while names[i]:
        out.append(text(names[i]))
        i += 1
    return out


def op_info(name):
    """OpInfo of an op (ArgumentError for an unknown name)."""
    desc = lib.gg_op_description(name.encode())
    if desc is None:
        raise ArgumentError(f"unknown operation '{name}' (known: {', '.join(ops())})", 1)
    n = ctypes.c_int()
    table = lib.gg_op_options(name.encode(), ctypes.byref(n))
    return OpInfo(name, text(desc), lib.gg_op_input_count(name.encode()),
                  options_of_table(table, n.value))


def options_of_table(table, n):
    """OpOption of each of the n entries of a C gg_option table."""
    options = []
    for k in range(n):
        o = table[k]
        typ = GG_OPTION_KINDS[o.kind]
        numeric = typ in ("int", "float", "size")
        bound = lambda v: v if numeric and math.isfinite(v) else None  # noqa: E731
        options.append(OpOption(text(o.key), typ,
                                None if o.default_value is None else text(o.default_value),
                                text(o.help), None if o.flag is None else text(o.flag),
                                bound(o.min), bound(o.max),
                                tuple(text(o.choices).split(",")) if o.choices else None,
                                bool(o.required)))
    return options


def format_option(value, typ="string"):
    """The string form of a Python option value: True -> "yes", (4, 2) -> "4x2"
    for sizes, [1, 3] -> "1,3", 2.5 -> "2.5", None -> "" ."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (tuple, list, np.ndarray)):
        items = [format_option(v) for v in value]
        return ("x" if typ == "size" else ",").join(items)
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "nan"
        return repr(float(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value)) if typ != "size" else f"{int(value)}x{int(value)}"
    return str(value)


class OutputInfo(namedtuple("OutputInfo", "width height bands types names nodata geotransform")):
    """The output of a prepared op: size, per-band GDAL type names, band names
    ("" when the op names none), per-band nodata and the geotransform (None
    when the input had none)."""


class _NativeOp:
    """A gg_op handle (freed with the object)."""

    def __init__(self, name, options):
        self.h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        code = lib.gg_op_new(name.encode(), ctypes.byref(self.h), err, len(err))
        raise_for_status(code, text(err.value))
        for key, value in options.items():
            code = lib.gg_op_set(self.h, key.encode(), value.encode())
            raise_for_status(code, self.error() or f"{name}: bad option {key}={value}")

    def error(self):
        return text(lib.gg_op_last_error(self.h))

    def check(self, code, ctx=None):
        if code:
            msg = self.error() or (ctx.last_error if ctx is not None else "")
            raise_for_status(code, msg)

    def __del__(self):
        if getattr(self, "h", None):
            lib.gg_op_free(self.h)
            self.h = None


def _as_input(arrays, name, wanted):
    """The input stack: a list of C-contiguous 2-D planes of one dtype,
    whether each input was 2-D (one band) or 3-D (bands first)."""
    if not arrays:
        raise ArgumentError(f"{name}: no input array", 1)
    if wanted > 0 and len(arrays) != wanted:
        raise ArgumentError(f"{name}: takes {wanted} input array{'s' if wanted != 1 else ''}, "
                            f"got {len(arrays)}", 1)
    arrays = [np.asarray(a) for a in arrays]
    for k, a in enumerate(arrays):
        if a.ndim not in (2, 3):
            raise ArgumentError(f"{name}: input {k + 1} has {a.ndim} dimensions; 2 (rows, cols) "
                                "or 3 (bands, rows, cols) expected", 1)
        if a.size == 0:
            raise ArgumentError(f"{name}: input {k + 1} is empty {a.shape}", 1)
        if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
            raise UnsupportedError(f"{name}: unsupported data type {a.dtype} of input {k + 1}", 5)
    is_complex = np.iscomplexobj(arrays[0])
    if any(np.iscomplexobj(a) != is_complex for a in arrays):
        raise UnsupportedError(f"{name}: inputs mix real and complex types", 5)
    shape = arrays[0].shape[-2:]
    for k, a in enumerate(arrays):
        if a.shape[-2:] != shape:
            raise ArgumentError(f"{name}: input {k + 1} is {a.shape[-1]}x{a.shape[-2]} but input 1 "
                                f"is {shape[1]}x{shape[0]}: inputs must match in size", 1)
    dtype = np.complex64 if is_complex else np.float32
    planes = []
    for a in arrays:
        for p in (a if a.ndim == 3 else [a]):
            planes.append(np.ascontiguousarray(p, dtype=dtype))
    return planes


def _tile(arr, x0=0, y0=0, width=None, height=None, gg_type=None):
    """A gg_tile over arr[y0:y0+height, x0:x0+width] (arr is C-contiguous 2-D)."""
    H, W = arr.shape
    width = W - x0 if width is None else width
    height = H - y0 if height is None else height
    offset = (y0 * W + x0) * arr.itemsize
    return GGTile(arr.ctypes.data + offset, gg_type, width, height, W, x0, y0)


class Prepared:
    """An op fixed to an input description: its output description and the
    tile-level calls (source_window, run_tile, the statistics pass).  Holds a
    native op: use it from one thread at a time."""

    def __init__(self, op, width, height, bands, complex_input, nodata=None, geotransform=None):
        self.op = op
        self._n = _NativeOp(op.name, op.options)
        self._flight = deque()  # submit_tile's tiles not yet collected (None: ran at once)
        self.input_type = GG_CFLOAT32 if complex_input else GG_FLOAT32
        sin = GGRasterInfo()
        sin.width, sin.height, sin.bands, sin.type = int(width), int(height), int(bands), self.input_type
        if geotransform is not None:
            sin.geotransform[:] = [float(v) for v in geotransform]
            sin.has_geotransform = 1
        else:
            sin.geotransform[:] = [0, 1, 0, 0, 0, 1]
        if nodata is not None:
            sin.has_nodata, sin.nodata = 1, float(nodata)
        sout = GGRasterInfo()
        self._n.check(lib.gg_op_prepare(self._n.h, ctypes.byref(sin), ctypes.byref(sout)))
        self.sin, self.sout = sin, sout
        self.stack = bool(lib.gg_op_is_stack(self._n.h))
        self.needs_stats = bool(lib.gg_op_needs_stats(self._n.h))
        self.prefers_tiles = bool(lib.gg_op_prefers_tiles(self._n.h))
        self.bytes_per_pixel = lib.gg_op_bytes_per_pixel(self._n.h)
        if self.stack:
            types = [lib.gg_op_band_type(self._n.h, b) for b in range(sout.bands)]
            names = [text(lib.gg_op_band_name(self._n.h, b)) for b in range(sout.bands)]
            nodata_out = [lib.gg_op_band_nodata(self._n.h, b) for b in range(sout.bands)]
        else:
            types = [sout.type] * sout.bands
            names = [""] * sout.bands
            nodata_out = [sout.nodata] * sout.bands
        self.band_types = types
        self.info = OutputInfo(sout.width, sout.height, sout.bands,
                               [_TYPE_NAME[t] for t in types], names, nodata_out,
                               tuple(sout.geotransform) if sout.has_geotransform else None)

    # -------------------------------------------------------------- windows
    def source_window(self, x0, y0, width, height):
        """The input window (x0, y0, width, height), halo included and clipped
        to the input, that the output window needs; width 0: none."""
        dst, src = GGWindow(x0, y0, width, height), GGWindow()
        self._n.check(lib.gg_op_source_window(self._n.h, ctypes.byref(dst), ctypes.byref(src)))
        return src.x0, src.y0, src.width, src.height

    def blocks(self):
        """The output blocks (x0, y0, width, height) the GG driver would use."""
        W, H = self.sout.width, self.sout.height
        if self.prefers_tiles:
            bw, bh = min(SQUARE_BLOCK, W), min(SQUARE_BLOCK, H)
        else:
            bw, bh = W, H
        for y in range(0, H, bh):
            for x in range(0, W, bw):
                yield x, y, min(bw, W - x), min(bh, H - y)

    # ----------------------------------------------------------- statistics
    def accumulate_band(self, ctx, band, plane, progress=None):
        """The whole-input statistics pass of one band (ops with
        needs_stats), in full-row strips like the GG driver."""
        if not self.needs_stats:
            return
        W, H = self.sin.width, self.sin.height
        px = 8 if self.input_type == GG_CFLOAT32 else 4
        rows = int(min(max(math.floor(STATS_STRIP_BYTES / (px * W)), 1), H))
        rows = min(rows, ctx.plan_rows(W, H, self.bytes_per_pixel))
        lib.gg_op_reset_stats(self._n.h, band)
        for y in range(0, H, rows):
            n = min(rows, H - y)
            tile = _tile(plane, 0, y, W, n, self.input_type)
            self._n.check(lib.gg_op_accumulate(ctx.handle, self._n.h, band, ctypes.byref(tile)), ctx)
            if progress is not None and progress((y + n) / H) is False:
                lib.gg_op_reset_stats(self._n.h, band)
                raise CancelledError(f"{self.op.name}: statistics pass interrupted", 7)
        self._n.check(lib.gg_op_finish_stats(ctx.handle, self._n.h, band), ctx)

    # ---------------------------------------------------------------- tiles
    def run_tile(self, ctx, planes, src_window, dst_window, out=None):
        """Stack ops: computes the output window dst_window = (x0, y0, w, h)
        of every output band from ``planes``, every input band over
        src_window (which must cover source_window(*dst_window)).  Returns
        the output planes (h x w each).  Non-stack ops: run_band_tile."""
        return self._run_stack(ctx, planes, False, src_window, dst_window, out)

    def run_tile_interleaved(self, ctx, stack, src_window, dst_window, out=None):
        """run_tile from one pixel-interleaved array ``stack`` (rows x
        columns x bands over src_window, C-contiguous), the layout of a
        pixel-interleaved GeoTIFF read as it lies in the file: ops that can
        sort the bands on the device (ptsel) copy it there as it is."""
        return self._run_stack(ctx, stack, True, src_window, dst_window, out)

    def _stack_source(self, data, interleaved, src_window):
        """A stack tile's input as the C calls take it: (the arrays to keep
        alive, the gg_tile argument, the number of input bands)."""
        if not self.stack:
            raise ArgumentError(f"{self.op.name}: not a stack op; use run_band_tile", 1)
        sx, sy, sw, sh = src_window
        typ = _NUMPY_OF[self.input_type]
        if not interleaved:
            keep = [np.ascontiguousarray(p, dtype=typ) for p in data]
            src = (GGTile * len(keep))()
            for k, p in enumerate(keep):
                src[k] = GGTile(p.ctypes.data, self.input_type, sw, sh, p.shape[1], sx, sy)
            return keep, src, len(keep)
        n = self.sin.bands
        keep = np.ascontiguousarray(data, dtype=typ)
        if keep.ndim != 3 or keep.shape[0] < sh or keep.shape[1] < sw or keep.shape[2] != n:
            raise ArgumentError(f"{self.op.name}: interleaved stack of shape {keep.shape}, "
                                f"expected ({sh}, {sw}, {n})", 1)
        src = GGTile(keep.ctypes.data, self.input_type, sw, sh, keep.shape[1], sx, sy)
        return keep, ctypes.byref(src), n

    def _run_stack(self, ctx, data, interleaved, src_window, dst_window, out):
        x0, y0, w, h = dst_window
        keep, src, nsrc = self._stack_source(data, interleaved, src_window)  # noqa: F841 (alive)
        if out is None:
            out = [np.empty((h, w), _NUMPY_OF[t]) for t in self.band_types]
        call = lib.gg_op_run_stack_interleaved if interleaved else lib.gg_op_run_stack
        self._run_passes(ctx, lambda rows_done, n, dst_tiles: self._n.check(
            call(ctx.handle, self._n.h, src, nsrc, dst_tiles, len(out)), ctx), out, x0, y0, w, h)
        return out

    def submit_tile(self, ctx, data, src_window, dst_window, out):
        """Stack ops: starts run_tile (``data`` a list of band planes) or
        run_tile_interleaved (``data`` one rows x columns x bands array) and
        returns before the device is done; ``collect`` waits for the oldest
        tile submitted and fills its ``out`` planes.  Submit tile k + 1,
        then collect tile k: on CUDA the upload of k + 1 and the download of
        k overlap the kernels (gg_op_submit_stack*).  At most two tiles are
        in flight; ``data`` and ``out`` must not be touched until their
        tile is collected, and meanwhile ``ctx`` serves this op only.  A
        window larger than one device pass runs at once.  The outputs are
        those of run_tile, bit for bit."""
        x0, y0, w, h = dst_window
        interleaved = not isinstance(data, (list, tuple))
        if ctx.plan_rows(w, h, self.bytes_per_pixel) < h:  # several device passes
            self.collect_all(ctx)
            self._run_stack(ctx, data, interleaved, src_window, dst_window, out)
            self._flight.append(None)
            return
        keep, src, nsrc = self._stack_source(data, interleaved, src_window)
        tiles = (GGTile * len(out))()
        for b, o in enumerate(out):
            tiles[b] = _tile(o, 0, 0, w, h, self.band_types[b])
            tiles[b].x0, tiles[b].y0 = x0, y0
        call = lib.gg_op_submit_stack_interleaved if interleaved else lib.gg_op_submit_stack
        code = call(ctx.handle, self._n.h, src, nsrc, tiles, len(out))
        if code:
            self._flight.clear()  # a failure drops every tile in flight
            self._n.check(code, ctx)
        self._flight.append((keep, src, out, tiles))  # alive until collected

    def collect(self, ctx):
        """Waits for the oldest tile of submit_tile and fills its outputs."""
        if not self._flight:
            raise ArgumentError(f"{self.op.name}: no tile in flight to collect", 1)
        if self._flight.popleft() is not None:
            code = lib.gg_op_collect(ctx.handle, self._n.h)
            if code:
                self._flight.clear()  # a failure drops every tile in flight
                self._n.check(code, ctx)

    def collect_all(self, ctx):
        """Collects every tile in flight."""
        while self._flight:
            self.collect(ctx)

    def in_flight(self):
        """Tiles submitted and not yet collected."""
        return len(self._flight)

    def run_band_tile(self, ctx, band, plane, src_window, dst_window, out=None):
        """Non-stack ops: output window of one band from that band's input
        plane over src_window."""
        x0, y0, w, h = dst_window
        sx, sy, sw, sh = src_window
        if out is None:
            out = np.empty((h, w), _NUMPY_OF[self.sout.type])
        plane = np.ascontiguousarray(plane, dtype=_NUMPY_OF[self.input_type])
        src = GGTile(plane.ctypes.data, self.input_type, sw, sh, plane.shape[1], sx, sy)
        self._run_passes(ctx, lambda rows_done, n, dst_tiles: self._n.check(
            lib.gg_op_run(ctx.handle, self._n.h, band, ctypes.byref(src), dst_tiles), ctx),
            [out], x0, y0, w, h)
        return out

    def _run_passes(self, ctx, call, outs, x0, y0, w, h, row0=0, col0=0):
        """Device passes of rows over the output window, sized by the block
        planner from free device memory (as the GG driver does per block).
        outs are arrays whose [row0, col0] is the window's corner."""
        rows = ctx.plan_rows(w, h, self.bytes_per_pixel)
        for r in range(0, h, rows):
            n = min(rows, h - r)
            tiles = (GGTile * len(outs))()
            for b, o in enumerate(outs):
                t = self.band_types[b] if self.stack else self.sout.type
                tiles[b] = _tile(o, col0, row0 + r, w, n, t)
                tiles[b].x0, tiles[b].y0 = x0, y0 + r
            call(r, n, tiles)

    # ----------------------------------------------------------- whole run
    def run(self, ctx, planes, progress=None):
        """Every output band over the whole raster, from the input planes
        (the full input stack).  Returns a list of output planes."""
        W, H = self.sout.width, self.sout.height
        blocks = list(self.blocks())
        nb_in = len(planes)
        outs = [np.empty((H, W), _NUMPY_OF[t]) for t in self.band_types]
        units = len(blocks) * (1 if self.stack else nb_in)
        done = [0]
        stats_share = 0.5 if self.needs_stats else 0.0

        def tick():
            done[0] += 1
            if progress is not None and progress(stats_share + (1 - stats_share) * done[0] / units) is False:
                raise CancelledError(f"{self.op.name}: interrupted", 7)

        if self.stack:
            src = (GGTile * nb_in)()
            for k, p in enumerate(planes):
                src[k] = _tile(p, gg_type=self.input_type)
            for (x0, y0, w, h) in blocks:
                self._run_passes(ctx, lambda r, n, dst: self._n.check(
                    lib.gg_op_run_stack(ctx.handle, self._n.h, src, nb_in, dst, len(outs)), ctx),
                    outs, x0, y0, w, h, row0=y0, col0=x0)
                tick()
            return outs
        for band, p in enumerate(planes):
            if self.needs_stats:
                sub = None
                if progress is not None:
                    def sub(f, band=band):
                        return progress(stats_share * (band + f) / nb_in)
                self.accumulate_band(ctx, band, p, sub)
            src = _tile(p, gg_type=self.input_type)
            for (x0, y0, w, h) in blocks:
                self._run_passes(ctx, lambda r, n, dst: self._n.check(
                    lib.gg_op_run(ctx.handle, self._n.h, band, ctypes.byref(src), dst), ctx),
                    [outs[band]], x0, y0, w, h, row0=y0, col0=x0)
                tick()
        return outs


class Op:
    """An op with its options, checked when given:

        op = geogpu.Op("rotate", angle=30, scale=1.5)
        out = op.run(img, device="opencl")

    Option values may be strings as in a GG: string ("4x4", "yes") or Python
    values (``(4, 4)``, ``True``, ``[1, 3]``); keys are case-insensitive.
    ``srcnodata``/``dstnodata`` work for every op.
    """

    def __init__(self, name, **options):
        info = op_info(name)
        self.name = info.name
        self.info = info
        types = {o.key: o.type for o in info.options}
        self.options = {}
        for key, value in options.items():
            k = key.lower()
            if value is None:
                continue
            self.options[k] = format_option(value, types.get(k, "string"))
        _NativeOp(self.name, self.options)  # checks every option now

    def options_string(self):
        """The options as in a GG: string ("looks=4x4:complex=yes")."""
        return ":".join(f"{k}={v}" for k, v in self.options.items())

    def prepare(self, shape, complex_input=False, bands=1, nodata=None, geotransform=None):
        """A Prepared op for an input of shape (rows, cols) and ``bands`` bands
        (the stack depth for stack ops)."""
        H, W = shape[-2:]
        return Prepared(self, W, H, bands, complex_input, nodata, geotransform)

    def run(self, *arrays, device=None, context=None, nodata=None, geotransform=None,
            progress=None, return_info=False):
        """Runs the op on numpy arrays.

        arrays: the inputs (as many as the op takes; ops taking "one or more"
        stack every band of every array in order).  device: a device spec
        (a context is started once per spec and thread and kept), or
        context: a Context.  nodata: the input nodata value (as a GDAL band's).
        geotransform: the input's (6 numbers), for ops that transform it.
        progress: called with the fraction done; returning False cancels
        (CancelledError).

        Returns an array for ops with one product (2-D for a 2-D input, 3-D
        (bands, rows, cols) for a 3-D one), and a dict {band name: 2-D array}
        for stack ops (coherence, ptsel).  With return_info=True, a pair
        (result, OutputInfo).
        """
        planes = _as_input(arrays, self.name, self.info.inputs)
        ctx = context if context is not None else context_for(device)
        if context is not None and device is not None:
            raise ArgumentError("give device or context, not both", 1)
        H, W = planes[0].shape
        prepared = Prepared(self, W, H, len(planes), np.iscomplexobj(planes[0]), nodata,
                            geotransform)
        outs = prepared.run(ctx, planes, progress)
        info = prepared.info
        if prepared.stack:
            names = [n or f"band{b + 1}" for b, n in enumerate(info.names)]
            result = dict(zip(names, outs))
        elif len(arrays) == 1 and np.asarray(arrays[0]).ndim == 2:
            result = outs[0]
        else:
            result = np.stack(outs)
        return (result, info) if return_info else result

    def __repr__(self):
        return f"<geogpu.Op {self.name}:{self.options_string()}>"


def run(name, *arrays, device=None, context=None, nodata=None, geotransform=None,
        progress=None, return_info=False, **options):
    """``geogpu.run(op, *arrays, **options)``: Op(name, **options).run(*arrays, ...).

        geogpu.run("multilook", slc, looks="4x4", device="cpu")
        geogpu.run("radnorm", amp, coef=35, levels=255)
        products = geogpu.run("ptsel", ifgs, window=11, mask=True)
    """
    return Op(name, **options).run(*arrays, device=device, context=context, nodata=nodata,
                                   geotransform=geotransform, progress=progress,
                                   return_info=return_info)

