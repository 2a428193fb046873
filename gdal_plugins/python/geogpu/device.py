"""Devices and compute contexts.

A Context is one device (gg_context): ``Context("cpu")``, ``Context("opencl")``,
``Context("cuda:1")``, ``Context()`` (``GG_DEVICE``, else auto).  A context is
not thread-safe: use one per thread (``context_for`` keeps one per device
spec and thread).
"""
import ctypes
import os
import threading
import weakref
from collections import namedtuple

from ._lib import lib, text
from .errors import raise_for_status

__all__ = ["Context", "Device", "devices", "check_device", "context_for"]

Device = namedtuple("Device", "spec backend description")
Device.__doc__ = """A device the runtime sees: ``spec`` as passed to Context
("cpu", "cuda:0", "opencl:0:0"), ``backend`` ("cpu", "cuda", "opencl") and
the runtime's description."""


def devices():
    """The devices the runtime can see, as Device tuples (the CPU first)."""
    buf = ctypes.create_string_buffer(65536)
    raise_for_status(lib.gg_list_devices(buf, len(buf)), "cannot list devices")
    out = []
    for line in text(buf.value).splitlines():
        if not line.strip():
            continue
        spec, _, desc = line.partition(" ")
        out.append(Device(spec, spec.split(":")[0], desc.strip()))
    return out


def check_device(spec):
    """Raises ArgumentError when a device spec is misspelt (starts nothing)."""
    err = ctypes.create_string_buffer(512)
    raise_for_status(lib.gg_device_check(spec.encode(), err, len(err)),
                     text(err.value) or f"bad device '{spec}'")


class Context:
    """A compute context on one device.

    device: "auto", "cpu", "cuda", "cuda:N", "opencl", "opencl:P", "opencl:P:D";
    None or "" means the GG_DEVICE environment variable, else "auto".
    Usable as a context manager; ``close()`` frees the device resources.
    """

    def __init__(self, device=None):
        self._h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        spec = (device or "").encode()
        code = lib.gg_context_create(spec, ctypes.byref(self._h), err, len(err))
        if code != 0 or not self._h:
            self._h = ctypes.c_void_p()
            raise_for_status(code or 8, text(err.value) or f"cannot start device '{device}'")
        self.spec = device or ""
        self._host = weakref.WeakSet()

    # the raw handle, for the op calls
    @property
    def handle(self):
        if not self._h:
            raise ValueError("geogpu: the context is closed")
        return self._h

    @property
    def backend(self):
        """"cpu", "cuda" or "opencl"."""
        return text(lib.gg_context_backend(self.handle))

    @property
    def device_name(self):
        """The device started, e.g. "opencl:0:0 pthread-... (Portable Computing Language, CPU)"."""
        return text(lib.gg_context_device_name(self.handle))

    @property
    def notice(self):
        """Under "auto", why a GPU backend was skipped ("" when none was)."""
        return text(lib.gg_context_notice(self.handle))

    @property
    def last_error(self):
        return text(lib.gg_context_last_error(self.handle))

    def memory(self):
        """(free, total) device memory in bytes."""
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        raise_for_status(lib.gg_context_memory(self.handle, ctypes.byref(free), ctypes.byref(total)),
                         self.last_error)
        return free.value, total.value

    def plan_rows(self, width, height, bytes_per_pixel, halo_rows=0):
        """Rows of a full-width block that fit the device (gg_plan_rows)."""
        rows = ctypes.c_int()
        raise_for_status(lib.gg_plan_rows(self.handle, int(width), int(height),
                                          float(bytes_per_pixel), int(halo_rows),
                                          ctypes.byref(rows)), self.last_error)
        return rows.value

    def host_buffer(self, nbytes):
        """A HostBuffer of nbytes for uploads and downloads on this context:
        page-locked on CUDA (the copy engine reads and writes it directly,
        without the staging copies of pageable memory), plain aligned memory
        on the other backends.  Pinning costs about a second per few GB:
        allocate once, reuse.  Freed by its close(), or with the context."""
        p = ctypes.c_void_p()
        raise_for_status(lib.gg_host_alloc(self.handle, int(nbytes), ctypes.byref(p)),
                         self.last_error)
        buf = HostBuffer(self, p.value, int(nbytes))
        self._host.add(buf)
        return buf

    def close(self):
        for buf in list(getattr(self, "_host", ())):
            buf.close()  # before the context: gg_host_free needs it
        if self._h:
            lib.gg_context_destroy(self._h)
            self._h = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def __repr__(self):
        if not self._h:
            return "<geogpu.Context closed>"
        return f"<geogpu.Context {self.device_name!r}>"


class HostBuffer:
    """Host memory from Context.host_buffer: ``memoryview(buf)`` or
    ``numpy.frombuffer(buf.array, ...)`` over it.  Views over it are invalid
    once it is closed (or its context is)."""

    def __init__(self, ctx, address, nbytes):
        self._ctx, self.address, self.nbytes = ctx, address, nbytes
        self.array = (ctypes.c_char * max(1, nbytes)).from_address(address)

    def close(self):
        if self.address and self._ctx._h:
            lib.gg_host_free(self._ctx._h, ctypes.c_void_p(self.address))
        self.address, self.array = None, None

    def __len__(self):
        return self.nbytes if self.address else 0

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


_local = threading.local()


def context_for(device=None):
    """A context for a device spec, created once per spec and thread and
    kept (starting a device compiles kernels: not something to redo per
    call)."""
    cache = getattr(_local, "contexts", None)
    if cache is None:
        cache = _local.contexts = {}
    key = device or os.environ.get("GG_DEVICE", "") or "auto"
    ctx = cache.get(key)
    if ctx is None:
        ctx = cache[key] = Context(key)
    return ctx
