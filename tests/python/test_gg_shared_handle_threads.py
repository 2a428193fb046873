"""One GG dataset handle read from several threads at once (issue 36): the
driver serialises the RasterIO calls of a handle (GDAL 3.6's block cache is
not thread-safe for a shared handle; four threads on one multilook or
rotate handle got other blocks' pixels), so every thread gets the pixels a
single thread reads, band reads and dataset reads alike."""
import threading

import numpy as np
import pytest
from osgeo import gdal


@pytest.fixture(scope="module")
def rasters(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared")
    rng = np.random.default_rng(36)
    ds = gdal.GetDriverByName("GTiff").Create(str(folder / "r.tif"), 512, 768, 1, gdal.GDT_Float32)
    ds.GetRasterBand(1).WriteArray(rng.random((768, 512)).astype("f4"))
    ds = None
    ds = gdal.GetDriverByName("GTiff").Create(str(folder / "g.tif"), 512, 768, 1, gdal.GDT_Float32)
    ds.SetGeoTransform((633000, 10, 0, 5530000, 0, -10))
    ds.SetProjection('EPSG:32614')
    ds.GetRasterBand(1).WriteArray(rng.random((768, 512)).astype("f4"))
    ds = None
    for k in (1, 2):
        z = rng.standard_normal((768, 512)) + 1j * rng.standard_normal((768, 512))
        ds = gdal.GetDriverByName("GTiff").Create(str(folder / f"c{k}.tif"), 512, 768, 1,
                                                  gdal.GDT_CFloat32)
        ds.GetRasterBand(1).WriteArray(z.astype("c8"))
        ds = None
    return folder


PRODUCTS = {
    "multilook": "GG:multilook:looks=2x2:device=cpu:{d}/r.tif",
    "rotate": "GG:rotate:angle=10:device=cpu:{d}/r.tif",
    "coherence": "GG:coherence:window=5x5:device=cpu:{d}/c1.tif,{d}/c2.tif",
    "warp": "GG:warp:t_srs=EPSG:3857:r=cubic:device=cpu:{d}/g.tif",
}


def _threads(ds, ref, whole_dataset):
    """Four threads read the handle ds in rows of 32, each from another
    starting row (every row, whatever the height); returns each thread's
    image."""
    nb, h, w = ref.shape
    out = [np.zeros_like(ref) for _ in range(4)]
    errors = []

    def work(k):
        try:
            starts = list(range(0, h, 32))  # every row, from another row each
            r = k * len(starts) // 4
            for y in starts[r:] + starts[:r]:
                n = min(32, h - y)
                if whole_dataset:
                    out[k][:, y:y + n] = ds.ReadAsArray(0, y, w, n, buf_type=gdal.GDT_CFloat64
                                                        ).reshape(nb, n, w)
                else:
                    for b in range(nb):
                        out[k][b, y:y + n] = ds.GetRasterBand(b + 1).ReadAsArray(0, y, w, n)
        except Exception as e:  # noqa: BLE001  (reported by the test)
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return out


@pytest.mark.parametrize("whole_dataset", [False, True], ids=["bands", "dataset"])
@pytest.mark.parametrize("product", list(PRODUCTS))
def test_four_threads_on_one_handle_read_the_single_thread_pixels(rasters, product, whole_dataset):
    name = PRODUCTS[product].format(d=rasters)
    one = gdal.Open(name)  # bands of several types (coherence) compared as complex128
    ref = np.stack([one.GetRasterBand(b + 1).ReadAsArray().astype("c16")
                    for b in range(one.RasterCount)])
    one = None
    for trial in range(4):
        ds = gdal.Open(name)  # a fresh handle: an empty block cache
        for k, image in enumerate(_threads(ds, ref, whole_dataset)):
            assert np.array_equal(image, ref, equal_nan=True), f"trial {trial}, thread {k}"
        ds = None
