"""gdal_ortho's mapped files (gg_ortho_direct.h, ggo_direct_map): the
source's and the output's pixels mapped and registered, so the copy engine
reads the strips and writes the blocks where they lie in the files.  Off by
default (registering cost more than it saved on an H200 host);
GG_ORTHO_MAPPED=1 turns it on, also on the CPU backend, where the "device"
copies from and into the mappings are memcpy, so CI checks the bytes:
every mapped output is byte for byte the file written through the reader
and writer threads (GG_ORTHO_MAPPED=0), in a tmpfs folder (/dev/shm, or
another tmpfs mount).  An output is mapped only in tmpfs, a source only
when all its pages are in memory; anything else says why under -v and goes
through the threads.  A failure leaves nothing.
"""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from test_ortho import synthetic_rpc, write_dem, write_scene
from test_ortho_writer import UTM

SHM = "/dev/shm"
REPO = Path(__file__).resolve().parents[2]


def tmpfs_mounts():
    """/dev/shm first, then every other tmpfs mount point."""
    with open("/proc/mounts") as f:
        points = [ln.split()[1] for ln in f if ln.split()[2:3] == ["tmpfs"]]
    return sorted(set(points), key=lambda m: (m != SHM, m))


def is_tmpfs(path):
    r = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return r.stdout.strip() == "tmpfs"


@pytest.fixture(scope="module")
def shm(tmp_path_factory):
    """A folder in tmpfs (an output is mapped only there), with a DEM, a
    one-band and a three-band (band-interleaved) scene."""
    found = [m for m in tmpfs_mounts() if os.access(m, os.W_OK)]
    if not found:
        pytest.skip("no writable tmpfs mounted (/dev/shm or any other)")
    d = tmp_path_factory.mktemp("shm", numbered=True)
    d = Path(found[0]) / f"gg_test_{os.getpid()}_{d.name}"
    d.mkdir()
    rng = np.random.default_rng(23)
    md = synthetic_rpc(640, 600)
    out = {"dir": d, "dem": write_dem(d / "dem.tif", rng, 4326)}
    out["u16"] = write_scene(d / "s_u16.tif", rng, 640, 600, "UInt16", md)
    a = gdal.Open(str(out["u16"])).ReadAsArray()
    ds = gdal.GetDriverByName("GTiff").Create(str(d / "s_rgb.tif"), 640, 600, 3, gdal.GDT_UInt16,
                                              ["INTERLEAVE=BAND"])
    ds.SetMetadata(md, "RPC")
    for k, band in enumerate((a, np.roll(a, 17, axis=1), 4100 - a)):
        ds.GetRasterBand(k + 1).WriteArray(band)
    ds = None
    out["rgb"] = d / "s_rgb.tif"
    yield out
    shutil.rmtree(d, ignore_errors=True)


def ortho(gg, shm, src, dst, args=(), env=None, check=True):
    return gg.run("gdal_ortho", "-q", "-v", "-device", "cpu", "-dem", str(shm["dem"]),
                  "-r", "cubic", *UTM, *[str(x) for x in args], str(src), str(dst),
                  env=env or {}, check=check)


CASES = {
    "uint16": ("u16", []),
    "float32": ("u16", ["-ot", "Float32"]),
    "bands": ("rgb", ["-co", "INTERLEAVE=BAND"]),
    "strips_split": ("u16", ["-co", "BLOCKYSIZE=7"]),
    "bigtiff": ("u16", ["-co", "BIGTIFF=YES"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_mapped_files_give_the_threads_bytes(gg, shm, case):
    src, args = CASES[case]
    d = shm["dir"]
    a, b = d / f"{case}_mapped.tif", d / f"{case}_threads.tif"
    # small blocks and strips: many copies from and into the mappings
    env = {"GG_ORTHO_BLOCK_ROWS": "13", "GG_ORTHO_STRIP_ROWS": "9"}
    r = ortho(gg, shm, shm[src], a, args, {**env, "GG_ORTHO_MAPPED": "1"})
    assert "source and output mapped" in r.stderr, r.stderr
    r0 = ortho(gg, shm, shm[src], b, args, {**env, "GG_ORTHO_MAPPED": "0"})
    assert "mapped for" not in r0.stderr and "not mapped" not in r0.stderr, r0.stderr
    assert a.read_bytes() == b.read_bytes()
    arr = gdal.Open(str(a)).ReadAsArray().astype(np.float64)
    assert (arr != 0).mean() > 0.3 and np.std(arr[arr != 0]) > 5  # not vacuous


@pytest.mark.parametrize("which", ["source", "output"])
def test_one_file_mapped(gg, shm, which):
    """GG_ORTHO_MAPPED=source (or =output): that file mapped, the other
    through its threads; the threads' bytes."""
    d = shm["dir"]
    a, b = d / f"one_{which}_mapped.tif", d / f"one_{which}_threads.tif"
    env = {"GG_ORTHO_BLOCK_ROWS": "13", "GG_ORTHO_STRIP_ROWS": "9"}
    r = ortho(gg, shm, shm["rgb"], a, ["-co", "INTERLEAVE=BAND"],
              {**env, "GG_ORTHO_MAPPED": which})
    assert f": {which} mapped for" in r.stderr and " and " not in r.stderr.split("mapped for")[0]
    ortho(gg, shm, shm["rgb"], b, ["-co", "INTERLEAVE=BAND"], {**env, "GG_ORTHO_MAPPED": "0"})
    assert a.read_bytes() == b.read_bytes()


def test_not_mapped_by_default(gg, shm):
    r = ortho(gg, shm, shm["u16"], shm["dir"] / "default.tif")
    assert "mapped for" not in r.stderr and "not mapped" not in r.stderr, r.stderr


def test_batch_maps_every_scene(gg, shm, tmp_path):
    """-outdir: each scene maps its own files; the same files as one scene
    at a time through the threads."""
    outdir = shm["dir"] / "batch"
    outdir.mkdir()
    srcs = [shm["u16"], shm["rgb"]]
    r = gg.run("gdal_ortho", "-q", "-v", "-device", "cpu", "-dem", str(shm["dem"]), "-r",
               "cubic", *UTM, "-co", "INTERLEAVE=BAND", "-outdir", str(outdir),
               *[str(s) for s in srcs],
               env={"GG_ORTHO_MAPPED": "1"})
    assert r.stderr.count("source and output mapped") == 2, r.stderr
    for s in srcs:
        ref = tmp_path / f"ref_{s.stem}.tif"
        ortho(gg, shm, s, ref, ["-co", "INTERLEAVE=BAND"], {"GG_ORTHO_MAPPED": "0"})
        assert (outdir / f"{s.stem}.tif").read_bytes() == ref.read_bytes()
        (outdir / f"{s.stem}.tif").unlink()
    outdir.rmdir()


NOT_MAPPED = {
    # the output's layout or byte order: the writer threads convert it
    "pixel_interleaved": ("rgb", ["-co", "INTERLEAVE=PIXEL"], "output not mapped "
                          "(pixel-interleaved bands)"),
    "big_endian": ("u16", ["-co", "ENDIANNESS=BIG"], "output not mapped (the other byte order)"),
}


@pytest.mark.parametrize("case", list(NOT_MAPPED))
def test_other_layouts_go_through_the_threads(gg, shm, case):
    src, args, why = NOT_MAPPED[case]
    d = shm["dir"]
    a, b = d / f"{case}_m.tif", d / f"{case}_t.tif"
    r = ortho(gg, shm, shm[src], a, args, {"GG_ORTHO_MAPPED": "1"})
    assert why in r.stderr and "source mapped for" in r.stderr, r.stderr
    ortho(gg, shm, shm[src], b, args, {"GG_ORTHO_MAPPED": "0"})
    assert a.read_bytes() == b.read_bytes()


def test_output_outside_tmpfs_and_source_not_in_memory(gg, shm, tmp_path):
    """An output on a disk file system is written by the writer; a source
    whose pages were dropped from memory is read by the readers."""
    if is_tmpfs(tmp_path):  # the checkout's build folder, usually on a disk
        tmp_path = Path(os.environ.get("GG_BUILD_DIR", REPO / "build")) / "mapped_disk_test"
        shutil.rmtree(tmp_path, ignore_errors=True)
        tmp_path.mkdir(parents=True)
    if is_tmpfs(tmp_path):
        pytest.skip("no folder outside tmpfs to write to")
    src = tmp_path / "cold.tif"
    src.write_bytes(shm["u16"].read_bytes())
    fd = os.open(src, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    a = tmp_path / "disk.tif"
    r = ortho(gg, shm, src, a, env={"GG_ORTHO_MAPPED": "1"})
    assert "output not mapped (an output mapped only in tmpfs)" in r.stderr, r.stderr
    # the page cache may keep a page or two: not all in memory
    assert "source not mapped (" in r.stderr and "of its pages in memory" in r.stderr, r.stderr
    b = shm["dir"] / "from_disk.tif"
    ortho(gg, shm, shm["u16"], b, env={"GG_ORTHO_MAPPED": "0"})
    assert a.read_bytes() == b.read_bytes()
    if tmp_path.name == "mapped_disk_test":
        shutil.rmtree(tmp_path)


@pytest.mark.parametrize("fault", ["write:2", "read:1"])
def test_failure_with_mapped_files_leaves_nothing(gg, shm, fault):
    """GG_FAULT on a mapped run: one error line, exit 1, no output and no
    temporary file (the mapping of the output is undone before it goes)."""
    out = shm["dir"] / "fails" / "o.tif"
    out.parent.mkdir()
    r = ortho(gg, shm, shm["u16"], out, ["-grid_step", "8"],
              {"GG_FAULT": fault, "GG_ORTHO_MAPPED": "1", "GG_ORTHO_BLOCK_ROWS": "64",
               "GG_RAW_READS": "NO" if fault.startswith("read") else "YES"}, check=False)
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("ERROR")]
    assert len(errors) == 1 and "injected fault" in errors[0], r.stderr
    assert list(out.parent.iterdir()) == []
    out.parent.rmdir()
