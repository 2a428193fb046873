"""python3 -m geogpu: what this geogpu sees (library, devices, ops)."""
import sys

import geogpu
from geogpu import _lib


def main():
    print(f"geogpu {geogpu.version()} ({geogpu.library_path})")
    # where GDAL programs and the shell find the rest (a pip install keeps
    # them inside the package folder)
    plugins, utilities = _lib.plugin_dirs(), _lib.utility_dirs()
    if plugins:
        print(f"GDAL plugin: {plugins[0]}  (GDAL programs: GDAL_DRIVER_PATH={plugins[0]})")
    if utilities:
        print(f"utilities: {utilities[0]}")
    print("devices:")
    for d in geogpu.devices():
        print(f"  {d.spec:12s} {d.description}")
    print("ops:")
    for name in geogpu.ops():
        info = geogpu.op_info(name)
        n = {-1: "1+", 0: "?"}.get(info.inputs, str(info.inputs))
        keys = ", ".join(o.key for o in info.options if o.key not in ("srcnodata", "dstnodata"))
        print(f"  {name:10s} inputs {n:2s}  options: {keys}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
