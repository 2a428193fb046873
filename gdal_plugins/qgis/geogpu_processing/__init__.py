"""geogpu QGIS plugin: a Processing provider over the geogpu gdal_* utilities.

The folder is named geogpu_processing (not geogpu) so that the geogpu Python
package stays importable from QGIS's Python console.
"""


def classFactory(iface):
    from .plugin import GeogpuPlugin
    return GeogpuPlugin(iface)
