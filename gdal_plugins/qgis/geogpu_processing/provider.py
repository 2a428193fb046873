"""The geogpu Processing provider: one algorithm per geogpu utility (the
table in utilities.py, plus any geogpu utility found beside them; typed
parameters from each utility's --describe), and the provider settings
(folder of the utilities, compute device)."""
import os
from pathlib import Path

from qgis.core import QgsProcessingProvider
from qgis.PyQt.QtGui import QIcon

from . import runner
from .algorithm import UtilityAlgorithm
from .utilities import UTILITIES, describe, from_description, resolve

SETTING_FOLDER = "GEOGPU_UTILITIES_FOLDER"
SETTING_DEVICE = "GEOGPU_DEVICE"
ICON = Path(__file__).resolve().parent / "icon.svg"


def _config():
    """ProcessingConfig (from the processing plugin), or None outside QGIS's
    Processing framework (then environment defaults apply)."""
    try:
        from processing.core.ProcessingConfig import ProcessingConfig, Setting
        return ProcessingConfig, Setting
    except ImportError:
        return None, None


class GeogpuProvider(QgsProcessingProvider):

    def __init__(self):
        super().__init__()

    def id(self):
        return "geogpu"

    def name(self):
        return "geogpu"

    def longName(self):
        return "geogpu: GPU radar and remote-sensing processing"

    def icon(self):
        return QIcon(str(ICON))

    def svgIconPath(self):
        return str(ICON)

    def load(self):
        config, Setting = _config()
        if config is not None:
            config.settingIcons[self.name()] = self.icon()
            config.addSetting(Setting(
                self.name(), SETTING_FOLDER,
                "Folder of the geogpu utilities (empty: GG_BUILD_DIR/bin, PATH, install folder)",
                "", valuetype=Setting.FOLDER))
            config.addSetting(Setting(
                self.name(), SETTING_DEVICE,
                "Compute device: auto, cpu, cuda[:N], opencl[:P[:D]], cuda:all",
                os.environ.get("GG_DEVICE", "auto")))
            config.readSettings()
        register_gdal_plugin(self.settings().get("folder", ""))
        self.refreshAlgorithms()
        return True

    def unload(self):
        config, _ = _config()
        if config is not None:
            config.removeSetting(SETTING_FOLDER)
            config.removeSetting(SETTING_DEVICE)

    def settings(self):
        """{'folder': ..., 'device': ...} as set now (read at every run)."""
        config, _ = _config()
        folder = device = ""
        if config is not None:
            folder = config.getSetting(SETTING_FOLDER) or ""
            device = config.getSetting(SETTING_DEVICE) or ""
        return {"folder": str(folder).strip(), "device": str(device).strip()}

    def loadAlgorithms(self):
        """One algorithm per table entry, its parameters from the utility's
        --describe (run once per program file, cached), and one per geogpu
        utility found beside them without an entry (all from --describe)."""
        folder = self.settings().get("folder", "")
        found = runner.discover(folder)
        for u in UTILITIES:
            path = found.get(u.program)
            if path is None and u.described:
                try:
                    path = runner.find_utility(u.program, folder)
                except FileNotFoundError:
                    path = None
            u = resolve(u, path)
            if u.problem:
                _log(f"geogpu: {u.program}: {u.problem}")
            self.addAlgorithm(UtilityAlgorithm(u, self.settings))
        known = {u.program for u in UTILITIES}
        for program, path in found.items():
            if program in known:
                continue
            try:
                self.addAlgorithm(UtilityAlgorithm(from_description(program, describe(path)),
                                                   self.settings, path))
            except Exception as e:  # one odd utility must not hide the others
                _log(f"geogpu: {program} skipped: {e}")


def _log(message):
    from qgis.core import QgsMessageLog
    QgsMessageLog.logMessage(message, "geogpu")


def register_gdal_plugin(folder=""):
    """Makes QGIS's GDAL see the GG driver (GG: strings and .ggvrt files as
    layers) when it did not find gdal_GeoGPU.so itself: looks beside the
    utilities (../lib), in GG_BUILD_DIR/lib and in the install folder."""
    from osgeo import gdal
    if gdal.GetDriverByName("GG") is not None:
        return True
    candidates = []
    try:
        candidates.append(runner.find_utility("gdal_multilook", folder).parent.parent / "lib")
    except FileNotFoundError:
        pass
    if os.environ.get("GG_BUILD_DIR"):
        candidates.append(Path(os.environ["GG_BUILD_DIR"]) / "lib")
    try:
        from . import _install
        candidates.append(Path(_install.PLUGIN_DIR))
    except ImportError:
        pass
    old = gdal.GetConfigOption("GDAL_DRIVER_PATH")
    for c in candidates:
        if (c / "gdal_GeoGPU.so").exists():
            gdal.SetConfigOption("GDAL_DRIVER_PATH", str(c))
            try:
                gdal.AllRegister()
            finally:
                gdal.SetConfigOption("GDAL_DRIVER_PATH", old)
            if gdal.GetDriverByName("GG") is not None:
                return True
    return False
