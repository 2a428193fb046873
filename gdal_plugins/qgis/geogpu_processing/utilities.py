"""The geogpu utilities as QGIS Processing algorithms: one table entry each.

Pure Python (no QGIS import), so the table can be read and tested anywhere.

Adding a utility
----------------
Append one ``Utility(...)`` to ``UTILITIES``: its program name, title, group,
inputs, its own flags (typed parameters) and, when it writes several
products, the products.  Everything else -- the common GDAL-style
parameters (extent, nodata, output type, creation options, device), the
command line, progress, cancel, output collection and loading -- is generic.

A geogpu utility found next to the others but absent from the table still
appears, with parameters read from its ``--help`` (see ``from_help``); the
table entry only makes its parameters typed.

Parameter kinds
---------------
``Num(name, flag, label, "int"|"float", default, minimum, maximum)``,
``Pair(...)`` (a flag taking two numbers: two parameters NAME_X, NAME_Y),
``Flag(name, flag, label)`` (a switch), ``Enum(name, flag, label, choices)``,
``Text(name, flag, label)``, ``Folder(name, flag, label)``,
``Extent(name, flag, label, crs_param=...)`` (-flag xmin ymin xmax ymax, in
the CRS chosen in the parameter crs_param, else as given), ``Crs(name, flag,
label)`` (-flag EPSG:xxxx / WKT), ``Dataset(name, flag, label)`` (-flag
<raster> chosen as a layer: a DEM) and ``FileOut(name, flag, label)`` (an
extra file the utility writes).  Inputs: ``Raster(name, label)`` and
``Rasters(name, label)`` (one or more, stacked in order).  Products:
``Product(name, label, bands, flag)`` -- an output raster holding the
listed bands of what the utility wrote, requested by ``flag``.
"""
import re
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

GROUP_SAR = "SAR image products"
GROUP_INSAR = "Interferometry"
GROUP_RADAR = "Weather radar"
GROUP_OPTICAL = "Optical imagery"
GROUP_VIEW = "Quicklooks"


# ------------------------------------------------------------------ parameter kinds

@dataclass
class Param:
    name: str                  # Processing parameter name (upper case)
    flag: str                  # command-line flag, e.g. "-looks"
    label: str
    optional: bool = False
    advanced: bool = False

    def args(self, value):
        """Command-line arguments for a parameter value (None: not given)."""
        raise NotImplementedError


@dataclass
class Num(Param):
    type: str = "float"        # "int" or "float"
    default: Optional[float] = None
    minimum: Optional[float] = None
    maximum: Optional[float] = None

    def args(self, value):
        if value is None:
            return []
        return [self.flag, _num(value, self.type)]


@dataclass
class Pair(Param):
    """A flag with two numbers (x, y): parameters <name>_X and <name>_Y."""
    type: str = "int"
    default: Optional[Tuple[float, float]] = None
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    axes: Tuple[str, str] = ("x", "y")

    @property
    def names(self):
        return (f"{self.name}_{self.axes[0].upper()}", f"{self.name}_{self.axes[1].upper()}")

    def args(self, value):
        if value is None or any(v is None for v in value):
            return []
        return [self.flag] + [_num(v, self.type) for v in value]


@dataclass
class Flag(Param):
    default: bool = False

    def args(self, value):
        return [self.flag] if value else []


@dataclass
class Enum(Param):
    choices: Sequence[str] = ()
    default: int = 0
    omit_first: bool = False   # the first choice means "flag not given"

    def args(self, value):
        if value is None:
            return []
        i = int(value)
        if self.omit_first and i == 0:
            return []
        return [self.flag, self.choices[i]]


@dataclass
class Text(Param):
    default: Optional[str] = None
    nvalues: int = 1           # values are split on blanks when > 1

    def args(self, value):
        if value is None or str(value).strip() == "":
            return []
        vals = str(value).split() if self.nvalues > 1 else [str(value)]
        return [self.flag] + vals


@dataclass
class Folder(Param):
    def args(self, value):
        return [self.flag, str(value)] if value else []


@dataclass
class Extent(Param):
    """-flag xmin ymin xmax ymax (value: (xmin, ymin, xmax, ymax) already in
    the utility's CRS: the CRS chosen in the parameter named crs_param when
    that one is given, else the extent's own)."""
    crs_param: Optional[str] = None

    def args(self, value):
        if value is None:
            return []
        return [self.flag] + [repr(float(v)) for v in value]


@dataclass
class Crs(Param):
    """-flag <crs> (value: "EPSG:4326" or WKT)."""

    def args(self, value):
        return [self.flag, str(value)] if value else []


@dataclass
class FileOut(Param):
    """-flag <file>: an extra file the utility writes (a table, a report)."""
    file_filter: str = "All files (*)"

    def args(self, value):
        return [self.flag, str(value)] if value else []


@dataclass
class Dataset(Param):
    """-flag <raster> given as a layer (a DEM, a background): its source."""

    def args(self, value):
        return [self.flag, str(value)] if value else []


@dataclass
class Raster:
    name: str
    label: str
    multiple: bool = False
    file: bool = False         # a file parameter (raw data QGIS need not open as a layer)


def Rasters(name, label):
    return Raster(name, label, multiple=True)


def RawFile(name, label):
    return Raster(name, label, file=True)


@dataclass
class Product:
    """An output of a utility that writes several: the bands (by band
    description) it holds, and the flag that asks the utility for them
    (None: always written)."""
    name: str                  # Processing parameter name
    label: str
    bands: Sequence[str]
    flag: Optional[str] = None
    optional: bool = True


@dataclass
class Utility:
    program: str               # "gdal_multilook"
    title: str
    group: str
    help: str
    inputs: Sequence[Raster] = (Raster("INPUT", "Input raster"),)
    params: Sequence[Param] = ()
    products: Sequence[Product] = ()   # empty: one OUTPUT raster
    common: bool = True        # the geogpu common options (-of -co -ot -srcnodata ... -device)
    output: str = "raster"     # "raster", or "png" (a file destination)
    doc: str = ""              # docs page name
    from_help: bool = False    # parameters read from --help (no table entry)

    @property
    def name(self):
        """Algorithm id: the program name without gdal_."""
        return self.program[5:] if self.program.startswith("gdal_") else self.program


def _num(v, typ):
    if typ == "int":
        return str(int(round(float(v))))
    f = float(v)
    return repr(f) if f != int(f) or abs(f) >= 1e15 else str(int(f))


# ------------------------------------------------------------------ the table

QUICKLOOK_KINDS = ("auto", "coherence", "phase", "amplitude", "offsets", "reflectivity",
                   "velocity", "radar", "mask")

# the offset-estimation flags gdal_xcorr and gdal_coreg share
XCORR_PARAMS = [
    Pair("WINDOW", "-window", "Template size (across, down)", type="int", default=(64, 64),
         minimum=4),
    Pair("SEARCH", "-search", "Half search range (across, down)", type="int", default=(20, 20),
         minimum=1),
    Pair("SKIP", "-skip", "Window spacing (across, down)", type="int", default=(64, 64),
         minimum=1),
    Pair("START", "-start", "First template's top-left pixel (across, down); empty: search - "
         "gross", type="int", minimum=0, optional=True, advanced=True),
    Pair("COUNT", "-count", "Windows (across, down); empty: all that fit", type="int", minimum=1,
         optional=True, advanced=True),
    Pair("GROSS", "-gross", "Integer gross offset (across, down)", type="int", default=(0, 0),
         advanced=True),
    Num("ZOOM", "-zoom", "Zoom window (samples of the x2 surface)", type="int", default=16,
        minimum=4, advanced=True),
    Num("OVS", "-ovs", "Oversampling of the zoom surface", type="int", default=64, minimum=1,
        advanced=True),
    Flag("NODERAMP", "-noderamp", "Do not remove the phase ramp", advanced=True),
    Num("SNR_WINDOW", "-snr_window", "SNR statistics window (odd)", type="int", default=21,
        minimum=1, advanced=True),
    Num("MINVALID", "-minvalid", "Least valid fraction of a window", type="float", default=0.9,
        minimum=0.0, maximum=1.0, advanced=True),
]

UTILITIES = [
    Utility(
        "gdal_multilook", "Multilook", GROUP_SAR,
        "Averages non-overlapping blocks of x_looks by y_looks pixels: the intensity |z|² of "
        "complex input (the complex mean with 'complex'), the mean of real input. Partial blocks "
        "at the right and bottom edges are dropped; the geotransform is scaled.",
        params=[Pair("LOOKS", "-looks", "Looks along x (range, columns) and y (azimuth, rows)",
                     type="int", default=(4, 4), minimum=1),
                Flag("COMPLEX", "-complex", "Average complex values instead of intensity "
                     "(complex input)")],
        doc="gdal_multilook"),
    Utility(
        "gdal_rotate", "Rotate and scale", GROUP_SAR,
        "Rotates a raster about its centre (counter-clockwise as displayed) and scales it, with "
        "bilinear interpolation; the output stays georeferenced where the input was.",
        params=[Num("ANGLE", "-angle", "Rotation angle (degrees, counter-clockwise)",
                    type="float", default=0.0, minimum=-360.0, maximum=360.0),
                Num("SCALE", "-scale", "Scale factor", type="float", default=1.0,
                    minimum=1e-6),
                Pair("OUTSIZE", "-outsize", "Output size in pixels (width, height); "
                     "empty: the input size", type="int", default=None, minimum=1,
                     optional=True, advanced=True)],
        doc="gdal_rotate"),
    Utility(
        "gdal_radnorm", "Radiometric normalisation", GROUP_SAR,
        "Removes row and column gain profiles: F = coef · I · M / (Rmean(row) · Cmean(col)); "
        "the output mean is about coef. With 'levels', F is rounded to Byte levels 0..n-1 "
        "(nodata 255).",
        params=[Num("COEF", "-coef", "Target mean of the output", type="float", default=1.0,
                    minimum=1e-12),
                Num("LEVELS", "-levels", "Quantise to this many Byte levels (2..255; "
                    "empty: Float32 output)", type="int", default=None, minimum=2,
                    maximum=255, optional=True)],
        doc="gdal_radnorm"),
    Utility(
        "gdal_insar", "Interferogram and coherence", GROUP_INSAR,
        "Interferogram primary · conj(secondary), boxcar coherence and amplitude of two "
        "coregistered SLCs, optionally decimated by looks. Each requested product is its own "
        "output raster.",
        inputs=[Raster("PRIMARY", "Primary SLC"), Raster("SECONDARY", "Secondary SLC")],
        params=[Pair("WINDOW", "-window", "Coherence window (odd width, height)", type="int",
                     default=(5, 5), minimum=1),
                Pair("LOOKS", "-looks", "Looks (x, y): one output pixel per block", type="int",
                     default=(1, 1), minimum=1)],
        products=[Product("INTERFEROGRAM", "Interferogram", ("interferogram",), "-interferogram"),
                  Product("COHERENCE", "Coherence", ("coherence",), "-coherence"),
                  Product("AMPLITUDE", "Amplitude", ("amplitude",), "-amplitude")],
        doc="gdal_insar"),
    Utility(
        "gdal_ptsel", "PtSel persistent scatterers", GROUP_INSAR,
        "PtSel: for every pixel, the largest temporal coherence (tau_max) of its arcs to the "
        "neighbours in an r x r window, over a stack of single-reference interferograms (or "
        "coregistered SLCs). The layers are stacked band by band in the order given "
        "(chronological, the reference last).",
        inputs=[Rasters("INPUTS", "Interferograms (or SLCs), in order")],
        params=[Num("WINDOW", "-window", "Search window r (odd, >= 3)", type="int", default=11,
                    minimum=3),
                Num("MINDIST", "-mindist", "Skip neighbours closer than (pixels)", type="float",
                    default=1.0, minimum=0.0, advanced=True),
                Num("THRESHOLD", "-threshold", "PS threshold of the mask", type="float",
                    default=0.71, minimum=0.0, maximum=1.0),
                Text("CONJ", "-conj", "Conjugate these stack bands first (1-based, e.g. 3,7)",
                     optional=True, advanced=True),
                Flag("SLC", "-slc", "The layers are coregistered SLCs (no common reference)"),
                Folder("FILTER", "-filter", "Also write the coherence-weighted filtered "
                       "interferograms into this folder", optional=True, advanced=True)],
        products=[Product("OUTPUT", "tau_max", ("tau_max",), None, optional=False),
                  Product("OFFSETS", "Best neighbour offsets (best_dx, best_dy)",
                          ("best_dx", "best_dy"), "-offsets"),
                  Product("MASK", "PS mask", ("ps_mask",), "-mask")],
        doc="gdal_ptsel"),
    Utility(
        "gdal_xcorr", "Offsets by cross-correlation", GROUP_INSAR,
        "Sub-pixel offsets of a secondary SLC against a primary on a grid of windows: "
        "normalised cross-correlation of amplitudes, x2 oversampling, a zoomed peak, SNR and "
        "covariance. One output pixel per window, 7 bands: offset_down, offset_across, snr, "
        "cov_down, cov_across, cov_down_across, peak (secondary = primary + offset).",
        inputs=[Raster("PRIMARY", "Primary SLC"), Raster("SECONDARY", "Secondary SLC")],
        params=XCORR_PARAMS + [
            FileOut("TABLE", "-table", "Also write the windows as points (CSV or any OGR format)",
                    optional=True, file_filter="CSV (*.csv);;GeoPackage (*.gpkg)")],
        doc="gdal_xcorr"),
    Utility(
        "gdal_coreg", "Coregister (offsets, fit, resample)", GROUP_INSAR,
        "Coregisters a secondary SLC to a primary: dense sub-pixel offsets (as gdal_xcorr), a "
        "robust polynomial fit of them, and the secondary resampled onto the primary grid "
        "(CFloat32), from the fit or from the dense offsets.",
        inputs=[Raster("PRIMARY", "Primary SLC"), Raster("SECONDARY", "Secondary SLC")],
        params=XCORR_PARAMS + [
            Num("ORDER", "-order", "Polynomial order of the fit", type="int", default=1,
                minimum=1, maximum=3),
            Num("SNR", "-snr", "Use only windows with SNR >= this", type="float", default=0.0,
                minimum=0.0, advanced=True),
            Num("MINPEAK", "-minpeak", "Use only windows with NCC peak >= this", type="float",
                default=0.0, minimum=0.0, advanced=True),
            Num("KCUT", "-kcut", "Outlier cut (robust sigmas)", type="float", default=3.0,
                minimum=0.0, advanced=True),
            Enum("INTERP", "-interp", "Resampling kernel",
                 choices=("nearest", "bilinear", "bicubic", "sinc4", "sinc8"), default=4),
            FileOut("FIT", "-fit", "Write the fit as JSON", optional=True,
                    file_filter="JSON (*.json)"),
            FileOut("PRM", "-prm", "Write GMTSAR's PRM lines of the fit", optional=True,
                    file_filter="PRM (*.prm)"),
            Flag("DENSE", "-dense", "Resample from the dense offsets (bilinear between window "
                 "centres) instead of the fit; rejected windows take the fit", advanced=True),
            Dataset("OFFSETS", "-offsets", "Resample from this offsets raster (gdal_xcorr's "
                    "output) instead of the fit", optional=True),
            Text("CARRIER", "-carrier", "Carrier of the secondary, removed before the "
                 "interpolation: auto (estimated, the default), none, or azimuth,range in "
                 "cycles/pixel", optional=True, advanced=True)],
        doc="gdal_coreg"),
    Utility(
        "gdal_ortho", "Orthorectify (RPC + DEM)", GROUP_OPTICAL,
        "Orthorectifies an image with RPCs over a DEM, with the geometry of gdalwarp -rpc -to "
        "RPC_DEM=<dem> -et 0. The target extent is taken in the target CRS.",
        params=[Dataset("DEM", "-dem", "DEM (heights above the ellipsoid)", optional=True),
                Num("RPC_HEIGHT", "-rpc_height", "Constant height without a DEM (m)",
                    type="float", default=None, optional=True),
                Enum("DEM_INTERP", "-dem_interp", "DEM interpolation",
                     choices=("(default)", "near", "bilinear", "cubic"), default=0,
                     omit_first=True, optional=True, advanced=True),
                Num("DEM_MISSING", "-dem_missing", "Height where the DEM has no value (m)",
                    type="float", default=None, optional=True, advanced=True),
                Crs("DEM_SRS", "-dem_srs", "CRS of the DEM (if it has none)", optional=True,
                    advanced=True),
                Crs("T_SRS", "-t_srs", "Target CRS", optional=True),
                Pair("TR", "-tr", "Target resolution (x, y)", type="float", minimum=1e-12,
                     optional=True),
                Extent("TE", "-te", "Target extent", optional=True, crs_param="T_SRS"),
                Pair("TS", "-ts", "Target size (width, height)", type="int", minimum=1,
                     optional=True, advanced=True),
                Enum("R", "-r", "Resampling", choices=("near", "bilinear", "cubic"),
                     default=0)],
        doc="gdal_ortho"),
    Utility(
        "gdal_fmcw", "FMCW weather radar products", GROUP_RADAR,
        "Dual-polarisation FMCW weather-radar products (DBZ, ZDR, LDR, VEL, WIDTH, RHOHV, PHIDP, "
        "SNR, SNRVC, SNRHX) from raw HH/VV/HV sectors: a polar raster (rows = sectors, columns = "
        "range gates, one band per product), or with a grid cell size one georeferenced PPI "
        "raster per product.",
        inputs=[RawFile("INPUT", "Raw FMCW file (HH/VV/HV sectors)")],
        params=[Text("PRODUCTS", "-products", "Products, comma-separated (empty: all)",
                     optional=True),
                Num("GRID", "-grid", "PPI grid cell size (m); empty: the polar raster",
                    type="float", default=None, minimum=1e-3, optional=True),
                Num("MAX_RANGE", "-max_range", "Extent of the PPI grid (m of ground distance)",
                    type="float", default=None, minimum=1e-3, optional=True, advanced=True)],
        doc="gdal_fmcw"),
    Utility(
        "gdal_quicklook", "Quicklook (PNG)", GROUP_VIEW,
        "Writes a PNG a person would rather look at than read: coherence/tau with a colour bar, "
        "wrapped phase on a cyclic colour map, amplitude in dB with a robust stretch, offsets as "
        "arrows, radar reflectivity with the NWS palette, the other radar moments (ZDR, RHOHV, "
        "...) and velocity on their own scales, masks (PS) in two colours.",
        params=[Enum("KIND", "-kind", "Kind of picture", choices=QUICKLOOK_KINDS, default=0),
                Num("BAND", "-b", "Band", type="int", default=1, minimum=1),
                Num("SIZE", "-size", "Longest side (pixels)", type="int", default=1024,
                    minimum=16, advanced=True)],
        common=False, output="png", doc="gdal_quicklook"),
]


def by_program():
    return {u.program: u for u in UTILITIES}


# ------------------------------------------------------------------ from --help

_FLAG_LINE = re.compile(r"^\s{1,4}(-[A-Za-z][\w-]*)((?:\s+<[^>]+>)*)\s{2,}(.*)$")
_DEFAULT = re.compile(r"\(default:?\s*([-+0-9.eE ]+?)\)")
# a flag of the synopsis with its values: <name> placeholders or a|b|c choices
_SYN_FLAG = re.compile(r"(?<![\w<-])(-[A-Za-z][\w-]*)((?:\s+(?:<[^>]+>|[\w.:]+(?:\|[\w.:]+)+))*)")
# flags every geogpu utility has (gg_app): handled by the common parameters
COMMON_FLAGS = ("-of", "-co", "-ot", "-srcnodata", "-dstnodata", "-device", "-q", "-v")
SKIP_FLAGS = {"-of", "-q", "-quiet", "-v", "--help", "--version", "--help-general"}
# GDAL's conventions for well-known flags
EXTENT_FLAGS = {"-te"}
CRS_FLAGS = {"-t_srs", "-s_srs", "-a_srs", "-te_srs", "-dem_srs"}


def _synopsis_flags(synopsis):
    """[(flag, [values...], required)] from a GDAL-style usage text."""
    out, seen = [], set()
    depth, required_at = 0, []
    # which character positions are inside [ ]
    for i, ch in enumerate(synopsis):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        required_at.append(depth == 0)
    for m in _SYN_FLAG.finditer(synopsis):
        flag = m.group(1)
        if flag in seen or flag.startswith("--"):
            continue
        seen.add(flag)
        values = re.findall(r"<[^>]+>|[\w.:]+(?:\|[\w.:]+)+", m.group(2))
        out.append((flag, values, required_at[m.start()]))
    return out


def from_help(program, help_text):
    """A Utility built from a utility's --help (for utilities not yet in the
    table): the synopsis gives the flags, their values (<x> placeholders,
    a|b|c choices) and which are required; the per-flag help lines give
    descriptions and numeric defaults.  -te becomes an extent, -*_srs a CRS,
    choices an enum, a value with a numeric default a number, others text.
    The operands (before any ' | ' alternative) give the inputs."""
    lines = help_text.splitlines()
    usage, i = [], 0
    while i < len(lines) and lines[i].strip():
        usage.append(lines[i])
        i += 1
    synopsis = " ".join(l.strip() for l in usage)
    synopsis = re.sub(r"^Usage:\s*\S+", "", synopsis)
    synopsis = re.split(r"\s\|\s", synopsis)[0]   # the first form of the command line
    purpose = []
    i += 1
    while i < len(lines) and lines[i].strip():
        purpose.append(lines[i].strip())
        i += 1
    described = {}
    for line in lines[i:]:
        m = _FLAG_LINE.match(line)
        if m:
            described[m.group(1)] = m.group(3).strip()
    flags = _synopsis_flags(synopsis)
    names = {f for f, _, _ in flags}
    common = all(f in names for f in COMMON_FLAGS)
    params = []
    for flag, values, required in flags:
        if flag in SKIP_FLAGS or (common and flag in COMMON_FLAGS):
            continue
        name = flag.lstrip("-").upper().replace("-", "_")
        desc = described.get(flag) or " ".join([flag] + values)
        d = _DEFAULT.search(desc)
        nums = d.group(1).split() if d else []
        optional = not required
        choices = [v for v in values if "|" in v]
        if not values:
            params.append(Flag(name, flag, desc))
        elif flag in EXTENT_FLAGS and len(values) == 4:
            params.append(Extent(name, flag, desc, optional=optional))
        elif flag in CRS_FLAGS:
            params.append(Crs(name, flag, desc, optional=optional))
        elif len(values) == 1 and choices:
            opts = choices[0].split("|")
            params.append(Enum(name, flag, desc, optional=optional,
                               choices=["(default)"] + opts if optional else opts,
                               default=0, omit_first=optional))
        elif len(values) == 2 and (len(nums) == 2 or not nums):
            typ = "float" if any("." in n for n in nums) or "res" in " ".join(values) else "int"
            params.append(Pair(name, flag, desc, type=typ,
                               default=tuple(float(n) for n in nums) if nums else None,
                               optional=optional and not nums))
        elif len(values) == 1 and len(nums) == 1:
            typ = "float" if "." in nums[0] or "e" in nums[0].lower() else "int"
            params.append(Num(name, flag, desc, type=typ, default=float(nums[0]),
                              optional=optional))
        else:
            params.append(Text(name, flag, desc, optional=optional, nvalues=len(values)))
    last = usage[-1].split(" | ")[0] if usage else ""
    operands = re.findall(r"\[?<[^>]+>(?:\.\.\.)?\]?(?:\.\.\.)?", last)
    srcs = [o for o in operands if "dst" not in o and "out" not in o]
    if any("..." in o for o in srcs):
        inputs = (Rasters("INPUTS", "Input rasters, in order"),)
    elif len(srcs) >= 2:
        inputs = tuple(Raster(re.sub(r"\W", "", o).upper(), re.sub(r"[<>_\[\]]", " ", o).strip())
                       for o in srcs)
    else:
        inputs = (Raster("INPUT", "Input raster"),)
    return Utility(program, program[5:].replace("_", " ").capitalize(), "Other",
                   " ".join(purpose) or program, inputs=inputs, params=params,
                   common=common, doc=program, from_help=True)
