"""gdal_ortho's direct writer (uncompressed striped GeoTIFF: GDAL creates
the file and allocates the strips, the pixels go in by pwrite at the strip
offsets GDAL reports) against GDAL's writer given the same pixels: the
pixels of gdal_ortho's GDAL-writer path (a tiled output of the same scene),
written by GDAL into a GeoTIFF of the same creation options,
georeferencing, nodata and colour interpretation.  The same TIFF -- every
tag of the IFD identical (byte counts, GeoTIFF keys, nodata, ...) except
where the strips lie, every strip's bytes identical, the same file size --
and the same pixels and metadata through GDAL.  Only the placement of the
strips may differ: GDAL's block cache flushes strips in an order of its own
(e.g. the first strips last), the direct writer's strips follow each other
in order.  Checked for UInt16 / Float32 / Byte, one and three bands (pixel
and band interleaved), multi-row strips split across blocks, BigTIFF,
big-endian files, nodata 0; outputs it does not handle (tiles, compression,
a nonzero nodata, other formats, a short last strip) go through GDAL's
writer, with the direct writer's pixels.  Failures leave no output
(test_faults.py covers GG_FAULT).
"""
import re
import struct

import numpy as np
import pytest
from osgeo import gdal

from test_ortho import synthetic_rpc, write_dem, write_scene

# 704 x 770: a whole number of GDAL's default strips (5 rows UInt16, 2 Float32,
# 11 Byte, 1 for three UInt16 bands), and of the 5- and 7-row strips below
UTM = ["-t_srs", "EPSG:32632", "-te", "270800", "5007800", "273700", "5010750", "-ts", "704", "770"]


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    d = tmp_path_factory.mktemp("ortho_writer")
    rng = np.random.default_rng(11)
    md = synthetic_rpc(640, 600)
    out = {"dir": d, "dem": write_dem(d / "dem.tif", rng, 4326)}
    out["UInt16"] = write_scene(d / "s_u16.tif", rng, 640, 600, "UInt16", md)
    # three bands: the texture, a shifted copy and its inverse
    a = gdal.Open(str(out["UInt16"])).ReadAsArray()
    ds = gdal.GetDriverByName("GTiff").Create(str(d / "s_rgb.tif"), 640, 600, 3, gdal.GDT_UInt16)
    ds.SetMetadata(md, "RPC")
    for k, band in enumerate((a, np.roll(a, 17, axis=1), 4100 - a)):
        ds.GetRasterBand(k + 1).WriteArray(band)
    ds = None
    out["rgb"] = d / "s_rgb.tif"
    ds = gdal.GetDriverByName("GTiff").Create(str(d / "s_byte.tif"), 640, 600, 1, gdal.GDT_Byte)
    ds.SetMetadata(md, "RPC")
    ds.GetRasterBand(1).WriteArray(np.clip((a.astype(np.float64) - 1400) / 5, 1, 255))
    ds = None
    out["byte"] = d / "s_byte.tif"
    return out


def ortho(gg, scenes, src, dst, args, env=None):
    """gdal_ortho -v on the writer tests' grid; its log."""
    return gg.run("gdal_ortho", "-q", "-v", "-device", "cpu", "-dem", str(scenes["dem"]),
                  "-r", "cubic", *UTM, *[str(x) for x in args], str(src), str(dst),
                  env=env).stderr


def co_of(args):
    """The creation options among gdal_ortho's arguments."""
    return [args[i + 1] for i, a in enumerate(args) if a == "-co"]


def gdal_written(pixels_from, dst, co):
    """What GDAL's writer makes of the pixels, georeferencing, nodata and
    colour interpretation of pixels_from in a GeoTIFF with creation options
    co, set in gdal_ortho's order (geotransform, CRS, then each band's
    nodata and colour interpretation, then the pixels band by band)."""
    s = gdal.Open(str(pixels_from))
    b1 = s.GetRasterBand(1)
    o = gdal.GetDriverByName("GTiff").Create(str(dst), s.RasterXSize, s.RasterYSize,
                                             s.RasterCount, b1.DataType, co)
    o.SetGeoTransform(s.GetGeoTransform())
    o.SetProjection(s.GetProjection())
    for k in range(1, s.RasterCount + 1):
        nd = s.GetRasterBand(k).GetNoDataValue()
        if nd is not None:
            o.GetRasterBand(k).SetNoDataValue(nd)
        o.GetRasterBand(k).SetColorInterpretation(s.GetRasterBand(k).GetColorInterpretation())
    for k in range(1, s.RasterCount + 1):
        o.GetRasterBand(k).WriteArray(s.GetRasterBand(k).ReadAsArray())
    o = s = None
    return dst


def run_both(gg, scenes, name, src, args, env=None):
    """gdal_ortho with its default writer (a), and GDAL's writer given the
    same pixels (b: those of the scene written tiled, through gdal_ortho's
    GDAL writer); returns the two paths and the default run's -v log."""
    d = scenes["dir"]
    a, t, b = d / f"{name}_direct.tif", d / f"{name}_tiled.tif", d / f"{name}_gdal.tif"
    log = ortho(gg, scenes, src, a, args, env)
    others = [x for i, x in enumerate(args) if not (args[i - 1:i] == ["-co"] or x == "-co")]
    tlog = ortho(gg, scenes, src, t, [*others, "-co", "TILED=YES"], env)
    assert "writer: GDAL (tiled output)" in tlog, tlog
    gdal_written(t, b, co_of(args))
    return a, b, log


DIRECT = {
    "uint16": ("UInt16", [], None),
    "float32": ("UInt16", ["-ot", "Float32"], None),
    "byte": ("byte", [], None),
    "rgb_pixel": ("rgb", [], None),
    "rgb_band": ("rgb", ["-co", "INTERLEAVE=BAND"], None),
    # the output's strips cut by the blocks (of a whole number of grid steps)
    "strips_split": ("UInt16", ["-co", "BLOCKYSIZE=7"], None),
    "rgb_strips_split": ("rgb", ["-co", "BLOCKYSIZE=5"], None),
    "bigtiff": ("UInt16", ["-co", "BIGTIFF=YES"], None),
    "big_endian": ("UInt16", ["-co", "ENDIANNESS=BIG", "-ot", "Float32"], None),
    "big_endian_rgb": ("rgb", ["-co", "ENDIANNESS=BIG"], None),
    "nodata0": ("UInt16", ["-dstnodata", "0"], None),
    # a source too large for the (capped) device memory: per-block windows
    "window_pipeline": ("UInt16", [], {"GG_DEVICE_MEMORY": "1M"}),
}


def same_dataset(a, b):
    """Same pixels, georeferencing, nodata, colour interpretation, layout
    and metadata (not the file bytes)."""
    x, y = gdal.Open(str(a)), gdal.Open(str(b))
    assert (x.RasterXSize, x.RasterYSize, x.RasterCount) == (y.RasterXSize, y.RasterYSize,
                                                             y.RasterCount)
    assert x.GetGeoTransform() == y.GetGeoTransform()
    assert x.GetProjection() == y.GetProjection()
    for dom in ("", "IMAGE_STRUCTURE"):
        assert x.GetMetadata(dom) == y.GetMetadata(dom), dom
    for k in range(1, x.RasterCount + 1):
        bx, by = x.GetRasterBand(k), y.GetRasterBand(k)
        assert bx.DataType == by.DataType and bx.GetBlockSize() == by.GetBlockSize()
        assert bx.GetNoDataValue() == by.GetNoDataValue()
        assert bx.GetColorInterpretation() == by.GetColorInterpretation()
        assert np.array_equal(bx.ReadAsArray(), by.ReadAsArray()), f"band {k} pixels differ"


TYPE_SIZE = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8,
             16: 8, 17: 8, 18: 8}
TYPE_FMT = {3: "H", 4: "I", 16: "Q"}


def tiff_parts(path):
    """The first IFD of a TIFF / BigTIFF (tag -> (type, raw value bytes)),
    its strips' bytes in strip order, the strip offsets and the file size;
    written here from the TIFF 6 / BigTIFF layouts."""
    data = open(path, "rb").read()
    bo = "<" if data[:2] == b"II" else ">"
    big = struct.unpack(bo + "H", data[2:4])[0] == 43
    u = lambda f, o: struct.unpack_from(bo + f, data, o)[0]  # noqa: E731
    ifd = u("Q", 8) if big else u("I", 4)
    n = u("Q", ifd) if big else u("H", ifd)
    pos, esize, inl = ifd + (8 if big else 2), 20 if big else 12, 8 if big else 4
    tags = {}
    for i in range(n):
        e = pos + i * esize
        tag, typ = u("H", e), u("H", e + 2)
        cnt = u("Q", e + 4) if big else u("I", e + 4)
        size = TYPE_SIZE[typ] * cnt
        vo = e + (12 if big else 8)
        if size > inl:
            vo = u("Q", vo) if big else u("I", vo)
        tags[tag] = (typ, data[vo:vo + size])

    def values(tag):
        typ, raw = tags[tag]
        return struct.unpack(bo + TYPE_FMT[typ] * (len(raw) // TYPE_SIZE[typ]), raw)

    offs, counts = values(273), values(279)
    strips = [data[o:o + c] for o, c in zip(offs, counts)]
    return tags, strips, offs, len(data)


def same_tiff(a, b):
    ta, sa, oa, na = tiff_parts(a)
    tb, sb, ob, nb = tiff_parts(b)
    assert na == nb, f"file sizes {na} and {nb}"
    assert ta.keys() == tb.keys()
    for tag in ta:
        if tag != 273:  # StripOffsets: where the strips lie
            assert ta[tag] == tb[tag], f"tag {tag} differs"
    assert len(sa) == len(sb) and all(x == y for x, y in zip(sa, sb)), "strip bytes differ"
    # the direct writer's strips follow each other in order
    assert all(oa[i + 1] == oa[i] + len(sa[i]) for i in range(len(oa) - 1))
    return len(sa)


@pytest.mark.parametrize("case", list(DIRECT))
def test_direct_writer_gives_gdals_bytes(gg, scenes, case):
    src, args, env = DIRECT[case]
    a, b, log = run_both(gg, scenes, case, scenes[src], args, env)
    assert "writer: direct" in log, log
    if case.endswith("strips_split"):  # blocks of rows that cut the file's strips
        rows = int(re.search(r"blocks of (\d+) rows", log).group(1))
        strip = int(co_of(args)[0].split("=")[1])
        assert rows % strip, log
    if case == "window_pipeline":
        assert "source read per block window" in log, log
    same_dataset(a, b)
    assert same_tiff(a, b) > 1
    # not vacuous: a textured orthoimage
    arr = gdal.Open(str(a)).ReadAsArray().astype(np.float64)
    assert (arr != 0).mean() > 0.3 and np.std(arr[arr != 0]) > 5


FALLBACK = {
    "tiled": (["-co", "TILED=YES"], "tiled"),
    "deflate": (["-co", "COMPRESS=DEFLATE"], "COMPRESS=DEFLATE"),
    "nodata7": (["-dstnodata", "7"], "nonzero nodata"),
    "hfa": (["-of", "HFA"], "format HFA"),
    # a last strip of fewer rows: GDAL allocates it whole when it closes the
    # empty file, but writes it short when given the pixels
    "partial_last_strip": (["-co", "BLOCKYSIZE=9"], "strip 85 of band 1 not allocated"),
}


@pytest.mark.parametrize("case", list(FALLBACK))
def test_other_outputs_use_gdals_writer(gg, scenes, case):
    """GDAL's writer writes the direct writer's pixels (the default output of
    the same scene); with a nonzero nodata, the pixels without a value hold
    it instead of 0."""
    args, why = FALLBACK[case]
    d = scenes["dir"]
    a, b = d / f"{case}_fallback.tif", d / "fallback_direct.tif"
    log = ortho(gg, scenes, scenes["UInt16"], a, args)
    assert "writer: GDAL" in log and why in log, log
    if not b.exists():
        assert "writer: direct" in ortho(gg, scenes, scenes["UInt16"], b, [])
    x, y = gdal.Open(str(a)), gdal.Open(str(b))
    assert (x.RasterXSize, x.RasterYSize) == (y.RasterXSize, y.RasterYSize)
    assert x.GetGeoTransform() == y.GetGeoTransform()
    pa, pb = x.ReadAsArray(), y.ReadAsArray()
    nd = x.GetRasterBand(1).GetNoDataValue()
    if nd:  # gdal_ortho fills with the output nodata what the default leaves 0
        pb = np.where(pb == 0, nd, pb).astype(pb.dtype)
    assert np.array_equal(pa, pb)
    assert (pa != (nd or 0)).mean() > 0.3


def test_batch_reuses_buffers_and_gives_the_same_files(gg, scenes, tmp_path):
    """-outdir: three scenes of two sizes one after another (output buffers
    reused across scenes) give the files of the single-scene runs."""
    srcs = [scenes["UInt16"], scenes["rgb"], scenes["UInt16"]]
    # the third one under another name (same content)
    third = tmp_path / "again.tif"
    gdal.Translate(str(third), str(srcs[2]))
    srcs[2] = third
    outdir = tmp_path / "out"
    outdir.mkdir()
    base = ["-q", "-device", "cpu", "-dem", str(scenes["dem"]), "-r", "cubic", *UTM]
    gg.run("gdal_ortho", *base, "-outdir", str(outdir), *[str(s) for s in srcs])
    for s in srcs:
        ref = tmp_path / f"ref_{s.stem}.tif"
        gg.run("gdal_ortho", *base, str(s), str(ref))
        assert (outdir / f"{s.stem}.tif").read_bytes() == ref.read_bytes(), s.stem


@pytest.mark.parametrize("n", [1, 3])
def test_direct_writer_failure_leaves_nothing(gg, scenes, tmp_path, n):
    """GG_FAULT=write:N on the direct writer: one error line, exit 1, no
    output and no temporary file left in the folder."""
    out = tmp_path / "o.tif"
    r = gg.run("gdal_ortho", "-v", "-q", "-device", "cpu", "-dem", str(scenes["dem"]),
               "-r", "cubic", *UTM, "-grid_step", "8", str(scenes["UInt16"]), str(out),
               env={"GG_FAULT": f"write:{n}"}, check=False)
    assert "writer: direct" in r.stderr
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("ERROR")]
    assert len(errors) == 1 and "injected fault" in errors[0], r.stderr
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
