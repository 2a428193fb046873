"""tile_batch, on the client: the tile grid, the tasks, the VRT mosaic."""

import math
import os
import shutil
import time
import uuid
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from .batches import TILE_ITEM, _Job, _group_jobs, _local_client, _run_jobs
from .cluster import _shape
from .markers import TaskError, _commit, _complete, _inputs_state, _signature, _workdir
from .reads import _describe_stack, _file_rows, _gdal
from .tile_tasks import _band_groups, _tile_group_task, _tile_task, tile_grid


def _fmt(v):
    return repr(float(v)) if not (isinstance(v, float) and math.isnan(v)) else "nan"


def _mosaic_xml(vrt_path, width, height, gt, wkt, area_or_point, metadata, bands, tiles):
    """A VRT placing every tile file at its own offset.  Written directly
    (not by gdalbuildvrt): the tile grid is known exactly, so no placement
    is derived from floating-point geotransforms, and rasters without (or
    with rotated) georeferencing mosaic as well."""
    vdir = Path(vrt_path).parent
    lines = [f'<VRTDataset rasterXSize="{width}" rasterYSize="{height}">']
    if wkt:
        lines.append(f'  <SRS dataAxisToSRSAxisMapping="{_axis_mapping(wkt)}">{escape(wkt)}</SRS>')
    if gt is not None:
        lines.append("  <GeoTransform>" + ", ".join(repr(float(v)) for v in gt) + "</GeoTransform>")
    md = dict(metadata)
    if area_or_point:
        md["AREA_OR_POINT"] = area_or_point
    if md:
        lines.append("  <Metadata>")
        for k, v in md.items():
            lines.append(f"    <MDI key={quoteattr(k)}>{escape(v)}</MDI>")
        lines.append("  </Metadata>")
    for k, (btype, bname, nodata, src_band) in enumerate(bands, 1):
        lines.append(f'  <VRTRasterBand dataType="{btype}" band="{k}">')
        if bname:
            lines.append(f"    <Description>{escape(bname)}</Description>")
        lines.append(f"    <NoDataValue>{_fmt(nodata)}</NoDataValue>")
        for (path, x0, y0, w, h, block) in tiles:
            rel = os.path.relpath(path, vdir)
            lines += ["    <SimpleSource>",
                      f'      <SourceFilename relativeToVRT="1">{escape(rel)}</SourceFilename>',
                      f"      <SourceBand>{src_band}</SourceBand>"]
            if block:  # lets GDAL open the tile only when it is read
                lines.append(f'      <SourceProperties RasterXSize="{w}" RasterYSize="{h}" '
                             f'DataType="{btype}" BlockXSize="{block[0]}" '
                             f'BlockYSize="{block[1]}" />')
            lines += [f'      <SrcRect xOff="0" yOff="0" xSize="{w}" ySize="{h}" />',
                      f'      <DstRect xOff="{x0}" yOff="{y0}" xSize="{w}" ySize="{h}" />',
                      "    </SimpleSource>"]
        lines.append("  </VRTRasterBand>")
    lines.append("</VRTDataset>")
    return "\n".join(lines) + "\n"


def _axis_mapping(wkt):
    """The data axis to CRS axis mapping GDAL uses for rasters
    (traditional GIS order: x = easting/longitude)."""
    from osgeo import osr
    s = osr.SpatialReference()
    if s.ImportFromWkt(wkt) != 0:
        return "1,2"
    s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    return ",".join(str(v) for v in s.GetDataAxisToSRSAxisMapping())


def _write_if_changed(path, text):
    """Writes a small file atomically, leaving it untouched when its content
    is already this (a re-run does not touch complete outputs)."""
    path = Path(path)
    try:
        if path.read_text() == text:
            return False
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return True


def tile_batch(client, op, sources, dst, tile=1024, device=None, retries=2, co=(), of=None,
               dst_co=(), progress=None, per_task=1, **options):
    """Computes a geogpu op tile by tile, one task per output tile, and
    mosaics the tiles.

    op: the op name ("ptsel", "coherence", "multilook", "rotate", ...; not ops
    with a whole-image statistics pass such as radnorm).  sources: input
    rasters, stacked band by band as the GG driver stacks them.  options: the
    op's options (``window=11, mask=True``; see geogpu.op_info).  tile: output
    tile size (int or (w, h)).  co: creation options of the tile GeoTIFFs.

    Tiles go to ``<dst>.tiles/`` (e.g. ``ps.vrt.tiles/t_0002_0005.tif``).  The mosaic is ``dst``
    itself when it ends in .vrt (or of="VRT"); otherwise a VRT in the tile
    folder translated into ``dst`` with format ``of`` (default GTiff) and
    ``dst_co``.  When the output bands mix types (ptsel with mask=True,
    coherence's complex interferogram beside real bands), every band goes to
    its own mosaic ``<dst stem>_<band name><ext>``, as the utilities write it.
    Each tile equals the same window of the whole-image result, bit for bit.
    per_task: tiles per task (default 1, in grid order), or "auto" (one
    task per worker, the tiles shared so that each task's source windows sum
    to about the same number of pixels): a task of several tiles reads the
    next tile's window while the device computes the current one.
    Returns a Batch (``outputs``: the mosaics written; none when a tile failed)."""
    from ..ops import Op
    t_plan = time.time()
    if per_task != "auto" and (not isinstance(per_task, int) or per_task < 1):
        raise ValueError(f"per_task is a positive integer or 'auto', not {per_task!r}")
    sources = [str(Path(s).resolve()) if os.path.exists(s) else str(s) for s in sources]
    if not sources:
        raise ValueError("no input raster")
    opobj = Op(op, **options)
    t_describe = time.time()
    W, H, counts, is_complex, nodata, gt, wkt, aop = _describe_stack(sources)
    t_describe = time.time() - t_describe
    prep = opobj.prepare((H, W), complex_input=is_complex, bands=sum(counts), nodata=nodata,
                         geotransform=gt)
    if prep.needs_stats:
        raise ValueError(f"{opobj.name} needs a whole-image statistics pass: it cannot be tiled")
    info = prep.info
    dst = Path(dst).resolve()
    if not dst.parent.is_dir():
        raise ValueError(f"output folder '{dst.parent}' does not exist")
    of = of or ("VRT" if dst.suffix.lower() == ".vrt" else "GTiff")
    # named after the whole destination name: ps.vrt and ps.tif beside it
    # (other tile grids) must not share tiles
    tiles_dir = dst.parent / f"{dst.name}.tiles"
    tiles_dir.mkdir(exist_ok=True)
    groups = _band_groups(info.types, info.names)
    co = [str(c) for c in co]
    base = {"op": opobj.name, "options": opobj.options, "sources": sources, "counts": counts,
            "complex": is_complex, "nodata": nodata, "geotransform": gt, "size": [W, H],
            "wkt": wkt, "groups": groups, "co": co, "device": device, "outdir": str(tiles_dir)}
    # a stack read as it lies in its file where it lies as the op reads it,
    # else through GDAL (1.5-1.8 times faster batches: bench/RESULTS.md,
    # session 17)
    base["rows"] = (_file_rows(sources[0], is_complex)
                    if prep.stack and len(sources) == 1 else None)
    state = _inputs_state(sources)
    grid = tile_grid(info.width, info.height, tile)
    # the largest input and output windows, in pixels: each worker then maps
    # its reusable buffers once (edge tiles are smaller, and may come first)
    src_pixels = [sw * sh for (_, _, sw, sh) in
                  (prep.source_window(x0, y0, w, h) for (_, _, x0, y0, w, h) in grid)]
    base["reserve"] = [max(src_pixels), max(w * h for (_, _, _, _, w, h) in grid)]
    jobs = []
    for (ix, iy, x0, y0, w, h) in grid:
        name = f"t_{iy:04d}_{ix:04d}"
        sig = _signature("tile", opobj.name, opobj.options, state, [W, H], [x0, y0, w, h],
                         groups, co)
        jobs.append(_Job(name, str(tiles_dir), sig,
                         {**base, "name": name, "window": [x0, y0, w, h], "signature": sig}))
    client, own = _local_client(client)
    try:
        t_shape = time.time()
        shape = _shape(client)
        t_shape = time.time() - t_shape
        t_plan = time.time() - t_plan
        if per_task == 1:
            batch = _run_jobs(client, _tile_task, jobs, retries, progress, shape)
        else:
            batch = _run_jobs(client, _tile_group_task,
                              _group_jobs(jobs, per_task, shape, TILE_ITEM, src_pixels), retries,
                              progress, shape)
    finally:
        if own is not None:
            own.close()
    batch.client.update(plan=t_plan, describe=t_describe, shape=t_shape)
    if not batch.ok:
        return batch
    t_mosaic = time.time()
    md = {"GG_OPERATION": opobj.name, "GG_OPTIONS": opobj.options_string()}
    # each tile's block sizes, as its task returned them or its marker says
    # (read again only where the batch has neither: a duplicate attempt's)
    blocks = {}
    for j in jobs:
        b = (batch._details.get(j.name) or {}).get("blocks")
        blocks[j.name] = b if b is not None else (
            _complete(j.outdir, j.name, j.signature) or {}).get("blocks") or {}
    for g in groups:
        bands = [(info.types[b], info.names[b], info.nodata[b], k)
                 for k, b in enumerate(g["bands"], 1)]
        tiles = [(tiles_dir / f"{j.name}{g['suffix']}.tif", *j.spec["window"],
                  blocks[j.name].get(g["suffix"])) for j in jobs]
        if of.upper() == "VRT":
            vrt = dst.with_name(dst.stem + g["suffix"] + dst.suffix)
            _write_if_changed(vrt, _mosaic_xml(vrt, info.width, info.height, info.geotransform,
                                               wkt, aop, md, bands, tiles))
            batch.outputs.append(str(vrt))
        else:
            vrt = tiles_dir / f"mosaic{g['suffix']}.vrt"
            _write_if_changed(vrt, _mosaic_xml(vrt, info.width, info.height, info.geotransform,
                                               wkt, aop, md, bands, tiles))
            out = dst.with_name(dst.stem + g["suffix"] + dst.suffix)
            _translate(vrt, out, of, dst_co)
            batch.outputs.append(str(out))
    batch.client["mosaic"] = time.time() - t_mosaic
    return batch


def _translate(vrt, out, of, co):
    """The mosaic VRT copied into one file (temporary name, then renamed);
    skipped when ``out`` was made from this very mosaic and is unchanged."""
    gdal = _gdal()
    vrt, out = Path(vrt), Path(out)
    sig = _signature("translate", vrt.read_text(), [str(c) for c in co], of,
                     _inputs_state(sorted(str(p) for p in vrt.parent.glob("t_*.tif"))))
    name = out.name
    if _complete(out.parent, name, sig):
        return
    work = _workdir(out.parent, name)
    try:
        gdal.PushErrorHandler("CPLQuietErrorHandler")
        try:
            ds = gdal.Translate(str(work / name), str(vrt), format=of, creationOptions=list(co))
        finally:
            gdal.PopErrorHandler()
        if ds is None:
            raise TaskError(f"cannot write '{out}': {gdal.GetLastErrorMsg()}")
        ds = None
        _commit(work, out.parent, name, sig, {"mosaic": str(vrt)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
