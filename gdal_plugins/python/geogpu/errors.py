"""Exceptions: every failed library call raises one, carrying the library's
own message (the context's or the op's last error) and its gg_status."""

from ._lib import STATUS_NAMES

__all__ = ["GeogpuError", "ArgumentError", "DeviceError", "UnavailableError",
           "UnsupportedError", "CancelledError", "raise_for_status"]


class GeogpuError(RuntimeError):
    """A libgeogpu call failed.  ``status`` is the gg_status name
    (``"GG_ERR_ARGUMENT"``, ...), ``code`` its number."""

    def __init__(self, message, code=8):
        super().__init__(message)
        self.code = int(code)
        self.status = STATUS_NAMES[self.code] if 0 <= self.code < len(STATUS_NAMES) else str(code)


class ArgumentError(GeogpuError, ValueError):
    """A bad option, argument or input (GG_ERR_ARGUMENT)."""


class DeviceError(GeogpuError):
    """A device call failed (GG_ERR_DEVICE, GG_ERR_NOMEM)."""


class UnavailableError(GeogpuError):
    """The requested backend or device cannot start (GG_ERR_UNAVAILABLE)."""


class UnsupportedError(GeogpuError, TypeError):
    """A data type or feature the op does not support (GG_ERR_UNSUPPORTED)."""


class CancelledError(GeogpuError):
    """The progress callback asked to stop (GG_ERR_CANCELLED)."""


_BY_CODE = {1: ArgumentError, 2: DeviceError, 3: DeviceError, 4: UnavailableError,
            5: UnsupportedError, 7: CancelledError}


def raise_for_status(code, message):
    """Raises the exception of a non-zero gg_status."""
    if code == 0:
        return
    raise _BY_CODE.get(code, GeogpuError)(message or STATUS_NAMES[code], code)
