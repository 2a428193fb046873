#!/usr/bin/python3
"""Makes autotest_data/psps_houston/igrams_crop.tif: a real interferogram
stack crop for PtSel, from psps' Houston Sentinel-1 stack (MIT).

The first 24 interferograms of the 20180115_DATE group (one sign
convention: reference 2018-01-15 times the conjugate of the later date),
in date order, each cropped to rows 40-139, columns 30-129 of the
200 x 200 complex64 rasters (the area of 20180115_amp_crop.tif and more);
values unchanged.  One CFloat32 band per interferogram, described by its
file name.

    /usr/bin/python3 tests/tools/make_psps_stack.py ../shared/data/psps_houston autotest_data
"""
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal

COUNT, ROWS, COLS = 24, slice(40, 140), slice(30, 130)


def main(src, out):
    names = sorted(p.name for p in (Path(src) / "igrams").glob("20180115_*.int"))[:COUNT]
    dst = Path(out) / "psps_houston" / "igrams_crop.tif"
    h, w = ROWS.stop - ROWS.start, COLS.stop - COLS.start
    ds = gdal.GetDriverByName("GTiff").Create(str(dst), w, h, len(names), gdal.GDT_CFloat32,
                                              ["COMPRESS=DEFLATE", "INTERLEAVE=BAND"])
    for i, n in enumerate(names, 1):
        a = np.fromfile(Path(src) / "igrams" / n, "<c8").reshape(200, 200)[ROWS, COLS]
        b = ds.GetRasterBand(i)
        b.WriteArray(a)
        b.SetDescription(n)
    ds = None
    print(f"{dst}: {len(names)} bands {w}x{h}, {names[0]} .. {names[-1]}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
