"""One QGIS Processing algorithm per geogpu utility, generic over the
utilities table (utilities.py): typed parameters from the utility's
--describe (the op's option description) and the table's hints, the
command line built from them, the utility run with its GDAL progress
mapped to the feedback's, cancel honoured, products collected and loaded."""
import os
import time
import uuid
from pathlib import Path

from qgis.core import (QgsCoordinateReferenceSystem, QgsProcessing, QgsProcessingAlgorithm,
                       QgsProcessingContext, QgsProcessingException,
                       QgsProcessingOutputMultipleLayers, QgsProcessingParameterBoolean,
                       QgsProcessingParameterCrs, QgsProcessingParameterDefinition,
                       QgsProcessingParameterEnum, QgsProcessingParameterExtent,
                       QgsProcessingParameterFile, QgsProcessingParameterFileDestination,
                       QgsProcessingParameterMultipleLayers, QgsProcessingParameterNumber,
                       QgsProcessingParameterRasterDestination,
                       QgsProcessingParameterRasterLayer, QgsProcessingParameterString,
                       QgsProcessingUtils)

from . import outputs, runner
from .utilities import (Crs, Dataset, Enum, Extent, FileOut, Flag, Folder, Num, Pair, Text,
                        resolve)

DATA_TYPES = ["(product's own)", "Byte", "Int16", "UInt16", "Int32", "UInt32", "Float32",
              "Float64", "CInt16", "CInt32", "CFloat32", "CFloat64"]


def _given(parameters, name):
    v = parameters.get(name)
    return v is not None and not (isinstance(v, str) and v.strip() == "")


class UtilityAlgorithm(QgsProcessingAlgorithm):
    """A geogpu utility as an algorithm.  settings() returns the provider's
    settings: {'folder': ..., 'device': ...}."""

    def __init__(self, utility, settings, program_path=None):
        super().__init__()
        self.utility = utility
        self.settings = settings
        self.program_path = program_path

    # ------------------------------------------------------------ identity
    def createInstance(self):
        u = self.utility
        if u.problem:  # not found or not described at load: the folder setting may be set now
            try:
                path = self.program_path or runner.find_utility(
                    u.program, self.settings().get("folder", ""))
            except FileNotFoundError:
                path = None
            u = resolve(u, path)
        return UtilityAlgorithm(u, self.settings, self.program_path)

    def name(self):
        return self.utility.name

    def displayName(self):
        return self.utility.title

    def group(self):
        return self.utility.group

    def groupId(self):
        return self.utility.group.lower().replace(" ", "_")

    def shortHelpString(self):
        u = self.utility
        text = u.help
        text += f"\n\nRuns {u.program}; see `man {u.program}` or docs/{u.doc or u.program}.md."
        if u.from_describe:
            text += " (Parameters read from the utility's --describe.)"
        if u.problem:
            text += f"\n\nNot usable now: {u.problem}"
        return text

    # ---------------------------------------------------------- parameters
    def initAlgorithm(self, config=None):
        u = self.utility
        for inp in u.inputs:
            if inp.file:
                self.addParameter(QgsProcessingParameterFile(inp.name, inp.label))
            elif inp.multiple:
                self.addParameter(QgsProcessingParameterMultipleLayers(
                    inp.name, inp.label, QgsProcessing.TypeRaster))
            else:
                self.addParameter(QgsProcessingParameterRasterLayer(inp.name, inp.label))
        for p in u.params:
            for d in self._definitions(p):
                if p.advanced:
                    d.setFlags(d.flags() | QgsProcessingParameterDefinition.FlagAdvanced)
                self.addParameter(d)
        if u.common:
            self._common_parameters()
        if u.output == "png":
            self.addParameter(QgsProcessingParameterFileDestination(
                "OUTPUT", "Quicklook", "PNG files (*.png)"))
        elif u.products:
            for pr in u.products:
                self.addParameter(QgsProcessingParameterRasterDestination(
                    pr.name, pr.label, optional=pr.optional,
                    createByDefault=not pr.optional or pr.flag is None or
                    pr.name in ("INTERFEROGRAM", "COHERENCE", "AMPLITUDE")))
        else:
            self.addParameter(QgsProcessingParameterRasterDestination("OUTPUT", "Output"))
        self.addOutput(QgsProcessingOutputMultipleLayers("FILES", "Every file written"))

    @staticmethod
    def _number(name, label, typ, default, minimum, maximum, optional):
        t = (QgsProcessingParameterNumber.Integer if typ == "int"
             else QgsProcessingParameterNumber.Double)
        d = QgsProcessingParameterNumber(name, label, t, default, optional)
        if minimum is not None:
            d.setMinimum(minimum)
        if maximum is not None:
            d.setMaximum(maximum)
        return d

    def _definitions(self, p):
        if isinstance(p, Pair):
            dflt = p.default or (None, None)
            return [self._number(n, f"{p.label} [{axis}]", p.type, dflt[k], p.minimum,
                                 p.maximum, p.optional)
                    for k, (n, axis) in enumerate(zip(p.names, p.axes))]
        if isinstance(p, Num):
            return [self._number(p.name, p.label, p.type, p.default, p.minimum, p.maximum,
                                 p.optional)]
        if isinstance(p, Flag):
            return [QgsProcessingParameterBoolean(p.name, p.label, p.default, p.optional)]
        if isinstance(p, Enum):
            return [QgsProcessingParameterEnum(p.name, p.label, list(p.choices), False,
                                               p.default, p.optional)]
        if isinstance(p, Folder):
            return [QgsProcessingParameterFile(p.name, p.label,
                                               QgsProcessingParameterFile.Folder,
                                               optional=p.optional)]
        if isinstance(p, Extent):
            return [QgsProcessingParameterExtent(p.name, p.label, optional=p.optional)]
        if isinstance(p, Crs):
            return [QgsProcessingParameterCrs(p.name, p.label, optional=p.optional)]
        if isinstance(p, Dataset):
            return [QgsProcessingParameterRasterLayer(p.name, p.label, optional=p.optional)]
        if isinstance(p, FileOut):
            return [QgsProcessingParameterFileDestination(p.name, p.label, p.file_filter,
                                                          optional=p.optional,
                                                          createByDefault=False)]
        if isinstance(p, Text):
            return [QgsProcessingParameterString(p.name, p.label, p.default, False, p.optional)]
        raise TypeError(f"unknown parameter kind {type(p).__name__}")

    def _common_parameters(self):
        adv = QgsProcessingParameterDefinition.FlagAdvanced
        ext = QgsProcessingParameterExtent(
            "EXTENT", "Process only this extent (inputs clipped first)", optional=True)
        self.addParameter(ext)
        for d in (
                self._number("SRCNODATA", "Input nodata value (default: the input's)", "float",
                             None, None, None, True),
                self._number("DSTNODATA", "Output nodata value", "float", None, None, None,
                             True),
                QgsProcessingParameterEnum("DATA_TYPE", "Output data type", DATA_TYPES, False,
                                           0, True),
                QgsProcessingParameterString("CREATION_OPTIONS",
                                             "Creation options (NAME=VALUE|NAME=VALUE)", None,
                                             False, True),
                QgsProcessingParameterCrs("ASSIGN_CRS",
                                          "Assign this CRS to the outputs (no reprojection)",
                                          None, True),
                QgsProcessingParameterString("DEVICE", "Device (empty: the provider setting)",
                                             None, False, True)):
            d.setFlags(d.flags() | adv)
            self.addParameter(d)

    # ------------------------------------------------------------ command
    def _value(self, p, parameters, context):
        """The Python value of one table parameter (None: not given)."""
        if isinstance(p, Pair):
            if not all(_given(parameters, n) for n in p.names):
                return None
            return tuple(self.parameterAsDouble(parameters, n, context) for n in p.names)
        if not _given(parameters, p.name):
            return None
        if isinstance(p, Num):
            return self.parameterAsDouble(parameters, p.name, context)
        if isinstance(p, Flag):
            return self.parameterAsBoolean(parameters, p.name, context)
        if isinstance(p, Enum):
            return self.parameterAsEnum(parameters, p.name, context)
        if isinstance(p, Extent):
            # in the CRS the utility works in (its target CRS parameter), else as given
            crs = QgsCoordinateReferenceSystem()
            if p.crs_param and _given(parameters, p.crs_param):
                crs = self.parameterAsCrs(parameters, p.crs_param, context)
            r = self.parameterAsExtent(parameters, p.name, context, crs)
            return (r.xMinimum(), r.yMinimum(), r.xMaximum(), r.yMaximum())
        if isinstance(p, Dataset):
            lyr = self.parameterAsRasterLayer(parameters, p.name, context)
            return lyr.source() if lyr is not None else None
        if isinstance(p, FileOut):
            return self.parameterAsFileOutput(parameters, p.name, context) or None
        if isinstance(p, Crs):
            crs = self.parameterAsCrs(parameters, p.name, context)
            return crs.authid() or crs.toWkt() if crs.isValid() else None
        return self.parameterAsString(parameters, p.name, context)

    def _inputs(self, parameters, context, feedback, tmpdir):
        """Input names for the command line, in the table's order, layers
        clipped to EXTENT when given."""
        names = []
        clip = self.utility.common and _given(parameters, "EXTENT")

        def layer_source(lyr):
            src = lyr.source()
            return self._clip(src, lyr, parameters, context, feedback, tmpdir) if clip else src

        for inp in self.utility.inputs:
            if inp.file:
                if clip:
                    raise QgsProcessingException(f"{inp.label}: an extent does not apply to it")
                names.append(self.parameterAsFile(parameters, inp.name, context))
            elif inp.multiple:
                ls = self.parameterAsLayerList(parameters, inp.name, context)
                if not ls:
                    raise QgsProcessingException(f"{inp.label}: no layer given")
                names += [layer_source(lyr) for lyr in ls]
            else:
                lyr = self.parameterAsRasterLayer(parameters, inp.name, context)
                if lyr is None:
                    raise QgsProcessingException(f"{inp.label}: not a raster layer")
                names.append(layer_source(lyr))
        return names

    def _clip(self, src, layer, parameters, context, feedback, tmpdir):
        from osgeo import gdal
        ds = gdal.Open(src)
        if ds is None:
            raise QgsProcessingException(f"cannot open {src}: {gdal.GetLastErrorMsg()}")
        gt = ds.GetGeoTransform(can_return_null=True)
        if gt is None:
            raise QgsProcessingException(
                f"{layer.name()} has no georeferencing: an extent cannot be applied to it")
        crs = layer.crs() if layer.crs().isValid() else QgsCoordinateReferenceSystem()
        r = self.parameterAsExtent(parameters, "EXTENT", context, crs)
        vrt = os.path.join(tmpdir, f"clip_{uuid.uuid4().hex[:8]}.vrt")
        out = gdal.Translate(vrt, ds, format="VRT",
                             projWin=[r.xMinimum(), r.yMaximum(), r.xMaximum(), r.yMinimum()])
        if out is None:
            raise QgsProcessingException(f"{layer.name()}: the extent does not overlap it "
                                         f"({gdal.GetLastErrorMsg()})")
        feedback.pushInfo(f"{layer.name()} clipped to {out.RasterXSize}x{out.RasterYSize} "
                          "pixels")
        out = None
        return vrt

    def command(self, parameters, context, feedback, dst, tmpdir):
        """[program, args...] of the run (dst: the destination the utility
        writes); also the list of requested products."""
        u = self.utility
        args = []
        for p in u.params:
            args += p.args(self._value(p, parameters, context))
        if u.common:
            for name, flag in (("SRCNODATA", "-srcnodata"), ("DSTNODATA", "-dstnodata")):
                if _given(parameters, name):
                    v = self.parameterAsDouble(parameters, name, context)
                    args += [flag, repr(v)]
            t = self.parameterAsEnum(parameters, "DATA_TYPE", context) \
                if _given(parameters, "DATA_TYPE") else 0
            if t > 0:
                args += ["-ot", DATA_TYPES[t]]
            co = self.parameterAsString(parameters, "CREATION_OPTIONS", context) \
                if _given(parameters, "CREATION_OPTIONS") else ""
            for item in co.split("|"):
                if item.strip():
                    args += ["-co", item.strip()]
            device = (self.parameterAsString(parameters, "DEVICE", context)
                      if _given(parameters, "DEVICE") else "") or self.settings().get("device", "")
            if device and device.lower() != "auto":  # auto: GG_DEVICE, else auto
                args += ["-device", device]
        requested = []
        for pr in u.products:
            if _given(parameters, pr.name):
                path = self.parameterAsOutputLayer(parameters, pr.name, context)
                if path:
                    requested.append((pr, path))
        if u.products:
            if not requested:
                raise QgsProcessingException("no output requested")
            for pr, _ in requested:
                if pr.flag:
                    args.append(pr.flag)
        program = self.program_path or runner.find_utility(u.program,
                                                           self.settings().get("folder", ""))
        inputs = self._inputs(parameters, context, feedback, tmpdir)
        return [str(program)] + args + inputs + [str(dst)], requested

    # ---------------------------------------------------------------- run
    def processAlgorithm(self, parameters, context, feedback):
        u = self.utility
        if u.problem:  # its parameters could not be read: running it would drop them
            raise QgsProcessingException(u.problem)
        tmpdir = QgsProcessingUtils.tempFolder()
        if u.output == "png":
            dst = self.parameterAsFileOutput(parameters, "OUTPUT", context)
            requested = []
        elif u.products:
            requested = [(pr, self.parameterAsOutputLayer(parameters, pr.name, context))
                         for pr in u.products if _given(parameters, pr.name)]
            requested = [(pr, p) for pr, p in requested if p]
            if not requested:
                raise QgsProcessingException("no output requested")
            first = Path(requested[0][1])
            dst = first.with_name(f".geogpu_{uuid.uuid4().hex[:12]}{first.suffix or '.tif'}")
        else:
            dst = self.parameterAsOutputLayer(parameters, "OUTPUT", context)
        argv, requested = self.command(parameters, context, feedback, dst, tmpdir)
        feedback.pushCommandInfo(" ".join(_quote(a) for a in argv))

        folders = {str(Path(dst).parent)}
        for p in u.params:
            if isinstance(p, Folder):
                v = self._value(p, parameters, context)
                if v:
                    folders.add(v)
        errors = []

        def on_stderr(line):
            if line.startswith("ERROR"):
                errors.append(line)  # reported once, below
            else:
                feedback.pushInfo(line)

        started = time.time()
        try:
            rc, err = runner.run(argv, on_progress=feedback.setProgress,
                                 on_stdout_line=feedback.pushConsoleInfo,
                                 on_stderr_line=on_stderr, is_cancelled=feedback.isCanceled,
                                 output_folders=sorted(folders))
        except runner.Cancelled as e:
            if requested:
                outputs.distribute(dst, [])  # removes what was written
            feedback.reportError(str(e))
            return {}
        if rc != 0:
            if requested:
                outputs.distribute(dst, [])
            raise QgsProcessingException(errors[0] if errors else
                                         f"{u.program} failed (exit {rc}): {err.strip()[-500:]}")
        for line in errors:  # errors the utility survived
            feedback.reportError(line)

        results, files = {}, []
        if requested:
            co = []
            if u.common and _given(parameters, "CREATION_OPTIONS"):
                co = [c for c in self.parameterAsString(parameters, "CREATION_OPTIONS",
                                                        context).split("|") if c.strip()]
            try:
                outputs.distribute(dst, [(pr.bands, path) for pr, path in requested], co)
            except RuntimeError as e:
                raise QgsProcessingException(f"{u.program}: {e}")
            for pr, path in requested:
                results[pr.name] = path
                files.append(path)
        else:
            results["OUTPUT"] = str(dst)
            if os.path.exists(dst):
                files.append(str(dst))
            else:  # a utility that split its bands into files (<stem>_<band><ext>)
                self._forget(context, dst)
                for f in outputs.written_files(dst, since=started):
                    files.append(str(f))
                    self._load(context, f, results)
                if files:
                    results["OUTPUT"] = files[0]
        for p in u.params:  # folders the utility wrote into (ptsel -filter)
            if isinstance(p, Folder):
                v = self._value(p, parameters, context)
                if v:
                    stem = Path(requested[0][1] if requested else dst).stem
                    for f in sorted(Path(v).glob(f"*{stem}*")):
                        files.append(str(f))
                        self._load(context, f, results)
        if u.common and _given(parameters, "ASSIGN_CRS"):
            self._assign_crs(parameters, context, files)
        results["FILES"] = files
        return results

    def _load(self, context, path, results):
        """A file beyond the declared outputs: loaded when the run ends."""
        details = QgsProcessingContext.LayerDetails(Path(path).stem, context.project(), "FILES")
        context.addLayerToLoadOnCompletion(str(path), details)

    @staticmethod
    def _forget(context, path):
        """The destination was not written (its bands went to files of their
        own): QGIS must not try to load it."""
        layers = context.layersToLoadOnCompletion()
        if str(path) in layers:
            del layers[str(path)]
            context.setLayersToLoadOnCompletion(layers)

    def _assign_crs(self, parameters, context, files):
        from osgeo import gdal
        crs = self.parameterAsCrs(parameters, "ASSIGN_CRS", context)
        if not crs.isValid():
            return
        wkt = crs.toWkt(QgsCoordinateReferenceSystem.WKT_PREFERRED_GDAL)
        for f in files:
            if str(f).lower().endswith(".png"):
                continue
            ds = gdal.Open(str(f), gdal.GA_Update)
            if ds is not None:
                ds.SetProjection(wkt)
                ds = None


def _quote(a):
    a = str(a)
    return a if a and all(c.isalnum() or c in "-_./:=,+" for c in a) else "'" + a.replace("'", "'\\''") + "'"
