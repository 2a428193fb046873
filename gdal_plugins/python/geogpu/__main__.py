"""python3 -m geogpu: what this geogpu sees (library, devices, ops)."""
import sys

import geogpu


def main():
    print(f"geogpu {geogpu.version()} ({geogpu.library_path})")
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
