"""The QGIS plugin object: registers the geogpu Processing provider (also
under qgis_process, which calls initProcessing only)."""
from qgis.core import QgsApplication

from .provider import GeogpuProvider


class GeogpuPlugin:

    def __init__(self, iface=None):
        self.iface = iface
        self.provider = None

    def initProcessing(self):
        if self.provider is None:
            self.provider = GeogpuProvider()
            QgsApplication.processingRegistry().addProvider(self.provider)

    def initGui(self):
        self.initProcessing()

    def unload(self):
        if self.provider is not None:
            QgsApplication.processingRegistry().removeProvider(self.provider)
            self.provider = None
