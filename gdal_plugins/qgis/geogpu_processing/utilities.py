"""The geogpu utilities as QGIS Processing algorithms.

Pure Python (no QGIS import), so the table can be read and tested anywhere.

Where the parameters come from
------------------------------
Every gg_app utility answers ``--describe`` with JSON: its op's options from
the op's one option description (gg_op_options: key, flag, kind, range,
default, choices, help, required) and the utility's own flags (flag, values,
kind, help).  The provider runs ``--describe`` once per utility when it
loads (``describe``, cached per program file) and makes the typed
Processing parameters from it (``params_from_description``):

==========  ==============================================================
kind        Processing parameter
==========  ==============================================================
int, float  ``Num``: a number with the table's minimum, maximum, default
size        ``Pair``: two numbers NAME_X, NAME_Y (the table's WxH default)
bool        ``Flag``: a switch; checked gives the flag, which sets the
            option to its ``switch_value`` (``-noderamp``: deramp=no), so
            the switch is off by default
choice      ``Enum``: the table's choices, its default selected
string      ``Text``
file        ``FileOut`` (own flags: a file the utility writes)
folder      ``Folder``; dataset: ``Dataset`` (a raster layer)
==========  ==============================================================

The parameter name is the flag upper-cased (``-looks`` -> LOOKS_X/LOOKS_Y,
``-snr_window`` -> SNR_WINDOW, ``-noderamp`` -> NODERAMP).  Options without
a flag (not on the command line) and the common options (-srcnodata,
-dstnodata: the generic parameters) are not offered; a value equal to the
table's default is left off the command line, so the utility's table
decides it.

The table
---------
``UTILITIES`` holds what a description cannot give: presentation.  One
``Utility(...)`` per utility: program, title, group, help text, inputs,
products (output rasters, their bands and the flag requesting each), docs
page, and ``hints`` keyed by option key (op options) or flag (own flags):
``Hint(label=..., advanced=..., hidden=..., file_filter=...)``.  Hints never
state a default, a range or a flag.

An option whose flag takes several numbers (``values`` of --describe names
them: gdal_ortho's ``-tr <xres> <yres>``) is a ``Pair`` of two, a ``Text``
of more.  A hint's ``widget`` may show a string option as a raster layer
(``dataset``: a DEM) or a CRS (``crs``), and a flag of four numbers as an
extent (``extent``, in the CRS of the parameter named by ``crs_param``):
presentation only, the option is the table's.

Programs that do not answer ``--describe`` (gdal_quicklook) keep
hand-written ``params``.  A geogpu utility found beside the others without
a table entry is offered with everything from its ``--describe``
(``from_description``).

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
import dataclasses
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence, Tuple

GROUP_SAR = "SAR image products"
GROUP_INSAR = "Interferometry"
GROUP_RADAR = "Weather radar"
GROUP_OPTICAL = "Optical imagery"
GROUP_VIEW = "Quicklooks"
GROUP_GEOMETRY = "Geometry"


# ------------------------------------------------------------------ parameter kinds

@dataclass
class Param:
    name: str                  # Processing parameter name (upper case)
    flag: str                  # command-line flag, e.g. "-looks"
    label: str
    optional: bool = False
    advanced: bool = False
    key: Optional[str] = None  # the op option it sets (None: the utility's own flag)
    required: bool = False     # always on the command line
    omit_default: bool = False  # a value equal to default is left off (the table's default)

    def args(self, value):
        """Command-line arguments for a parameter value (None: not given)."""
        raise NotImplementedError

    def _left_off(self, value):
        return self.omit_default and not self.required and self.default is not None and \
            self.same_as_default(value)

    def same_as_default(self, value):
        return value == self.default


@dataclass
class Num(Param):
    type: str = "float"        # "int" or "float"
    default: Optional[float] = None
    minimum: Optional[float] = None
    maximum: Optional[float] = None

    def same_as_default(self, value):
        return _num(value, self.type) == _num(self.default, self.type)

    def args(self, value):
        if value is None or self._left_off(value):
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

    def same_as_default(self, value):
        return [_num(v, self.type) for v in value] == [_num(v, self.type) for v in self.default]

    def args(self, value):
        if value is None or any(v is None for v in value) or self._left_off(value):
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
        if (self.omit_first and i == 0) or self._left_off(i):
            return []
        return [self.flag, self.choices[i]]


@dataclass
class Text(Param):
    default: Optional[str] = None
    nvalues: int = 1           # values are split on blanks when > 1
    repeat: Optional[str] = None  # a repeatable flag: items split on this, one flag each

    def args(self, value):
        if value is None or str(value).strip() == "" or self._left_off(str(value)):
            return []
        if self.repeat:
            items = [v.strip() for v in str(value).split(self.repeat) if v.strip()]
            return [a for v in items for a in (self.flag, v)]
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
class Hint:
    """Presentation of one option (keyed by op option key or own flag in
    Utility.hints): never a default, a range or a flag."""
    label: Optional[str] = None    # None: the help line of --describe
    advanced: bool = False
    hidden: bool = False           # not offered (another interface, e.g. -mode gmtsar)
    file_filter: Optional[str] = None  # file kinds: the file dialog's filter
    widget: Optional[str] = None   # "dataset", "crs" or "extent": how the option is chosen
    crs_param: Optional[str] = None  # extent: the parameter whose CRS it is given in
    repeat: Optional[str] = None   # a repeatable flag: its items separated by this


@dataclass
class Utility:
    program: str               # "gdal_multilook"
    title: str
    group: str
    help: str
    inputs: Sequence[Raster] = (Raster("INPUT", "Input raster"),)
    params: Sequence[Param] = ()  # hand-written: only programs without --describe
    products: Sequence[Product] = ()   # empty: one OUTPUT raster
    common: bool = True        # the geogpu common options (-of -co -ot -srcnodata ... -device)
    output: str = "raster"     # "raster", or "png" (a file destination)
    doc: str = ""              # docs page name
    hints: Dict[str, Hint] = field(default_factory=dict)
    described: bool = True     # parameters from --describe (False: hand-written params)
    from_describe: bool = False  # no table entry: everything from --describe
    problem: Optional[str] = None  # why the parameters could not be read (run refused)

    @property
    def name(self):
        """Algorithm id: the program name without gdal_."""
        return self.program[5:] if self.program.startswith("gdal_") else self.program


def _num(v, typ):
    """A number as the Python package writes it (geogpu.format_option): the
    same option string whichever front end gave it."""
    if typ == "int":
        return str(int(round(float(v))))
    return repr(float(v))


# ------------------------------------------------------------------ the table

QUICKLOOK_KINDS = ("auto", "coherence", "phase", "amplitude", "offsets", "reflectivity",
                   "velocity", "radar", "mask")

# presentation of the offset-estimation options gdal_xcorr and gdal_coreg share
XCORR_HINTS = {
    "window": Hint("Template size (across, down)"),
    "search": Hint("Half search range (across, down)"),
    "skip": Hint("Window spacing (across, down)"),
    "start": Hint("First template's top-left pixel (across, down); empty: search - gross",
                  advanced=True),
    "count": Hint("Windows (across, down); empty: all that fit", advanced=True),
    "gross": Hint("Integer gross offset (across, down)", advanced=True),
    "zoom": Hint("Zoom window (samples of the x2 surface, multiple of 4)", advanced=True),
    "ovs": Hint("Oversampling of the zoom surface", advanced=True),
    "deramp": Hint("Do not remove the phase ramp", advanced=True),
    "snrwindow": Hint("SNR statistics window (odd)", advanced=True),
    "minvalid": Hint("Least valid fraction of a window", advanced=True),
}

UTILITIES = [
    Utility(
        "gdal_multilook", "Multilook", GROUP_SAR,
        "Averages non-overlapping blocks of x_looks by y_looks pixels: the intensity |z|² of "
        "complex input (the complex mean with 'complex'), the mean of real input. Partial blocks "
        "at the right and bottom edges are dropped; the geotransform is scaled.",
        hints={"looks": Hint("Looks along x (range, columns) and y (azimuth, rows)"),
               "complex": Hint("Average complex values instead of intensity (complex input)")},
        doc="gdal_multilook"),
    Utility(
        "gdal_rotate", "Rotate and scale", GROUP_SAR,
        "Rotates a raster about its centre (counter-clockwise as displayed) and scales it, with "
        "bilinear interpolation; the output stays georeferenced where the input was.",
        hints={"angle": Hint("Rotation angle (degrees, counter-clockwise)"),
               "scale": Hint("Scale factor"),
               "outsize": Hint("Output size in pixels (width, height); empty: the input size",
                               advanced=True)},
        doc="gdal_rotate"),
    Utility(
        "gdal_radnorm", "Radiometric normalisation", GROUP_SAR,
        "Removes row and column gain profiles: F = coef · I · M / (Rmean(row) · Cmean(col)); "
        "the output mean is about coef. With 'levels', F is rounded to Byte levels 0..n-1 "
        "(nodata 255).",
        hints={"coef": Hint("Target mean of the output"),
               "levels": Hint("Quantise to this many Byte levels (0: Float32 output)")},
        doc="gdal_radnorm"),
    Utility(
        "gdal_insar", "Interferogram and coherence", GROUP_INSAR,
        "Interferogram primary · conj(secondary), boxcar coherence and amplitude of two "
        "coregistered SLCs, optionally decimated by looks. Each requested product is its own "
        "output raster.",
        inputs=[Raster("PRIMARY", "Primary SLC"), Raster("SECONDARY", "Secondary SLC")],
        hints={"window": Hint("Coherence window (odd width, height)"),
               "looks": Hint("Looks (x, y): one output pixel per block")},
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
        hints={"window": Hint("Search window r (odd)"),
               "mindist": Hint("Skip neighbours closer than (pixels)", advanced=True),
               "threshold": Hint("PS threshold of the mask"),
               "conj": Hint("Conjugate these stack bands first (1-based, e.g. 3,7)",
                            advanced=True),
               "slc": Hint("The layers are coregistered SLCs (no common reference)"),
               "-filter": Hint("Also write the coherence-weighted filtered interferograms into "
                               "this folder", advanced=True)},
        products=[Product("OUTPUT", "tau_max", ("tau_max",), None, optional=False),
                  Product("OFFSETS", "Best neighbour offsets (best_dx, best_dy)",
                          ("best_dx", "best_dy"), "-offsets"),
                  Product("MASK", "PS mask", ("ps_mask",), "-mask")],
        doc="gdal_ptsel"),
    Utility(
        "gdal_xcorr", "Offsets by cross-correlation", GROUP_INSAR,
        "Sub-pixel offsets of a secondary SLC against a primary on a grid of windows: "
        "normalised cross-correlation of amplitudes, x2 oversampling, a zoomed peak, SNR and "
        "covariance. One output pixel per window, 8 bands: offset_down, offset_across, snr, "
        "cov_down, cov_across, cov_down_across, peak, peak_ratio (secondary = primary + offset; "
        "peak_ratio near 1: a pure-noise window).",
        inputs=[Raster("PRIMARY", "Primary SLC"), Raster("SECONDARY", "Secondary SLC")],
        hints=dict(XCORR_HINTS, **{
            "-table": Hint("Also write the windows as points (CSV or any OGR format)",
                           file_filter="CSV (*.csv);;GeoPackage (*.gpkg)"),
            "-mode": Hint(hidden=True)}),   # GMTSAR's interface: another command line
        doc="gdal_xcorr"),
    Utility(
        "gdal_coreg", "Coregister (offsets, fit, resample)", GROUP_INSAR,
        "Coregisters a secondary SLC to a primary: dense sub-pixel offsets (as gdal_xcorr), a "
        "robust polynomial fit of them, and the secondary resampled onto the primary grid "
        "(CFloat32), from the fit or from the dense offsets.",
        inputs=[Raster("PRIMARY", "Primary SLC"), Raster("SECONDARY", "Secondary SLC")],
        hints=dict(XCORR_HINTS, **{
            "interp": Hint("Resampling kernel"),
            "-order": Hint("Polynomial order of the fit"),
            "-snr": Hint("Use only windows with SNR >= this", advanced=True),
            "-minpeak": Hint("Use only windows with NCC peak >= this", advanced=True),
            "-kcut": Hint("Outlier cut (robust sigmas)", advanced=True),
            "-fit": Hint("Write the fit as JSON", file_filter="JSON (*.json)"),
            "-prm": Hint("Write GMTSAR's PRM lines of the fit", file_filter="PRM (*.prm)"),
            "-dense": Hint("Resample from the dense offsets (bilinear between window centres) "
                           "instead of the fit; rejected windows take the fit", advanced=True),
            "-offsets": Hint("Resample from this offsets raster (gdal_xcorr's output) instead "
                             "of the fit"),
            "-carrier": Hint(advanced=True)}),
        doc="gdal_coreg"),
    Utility(
        "gdal_ortho", "Orthorectify (RPC + DEM)", GROUP_OPTICAL,
        "Orthorectifies an image with RPCs over a DEM, with the geometry of gdalwarp -rpc -to "
        "RPC_DEM=<dem> -et 0. The target extent is taken in the target CRS.",
        # the parameters: gdal_ortho --describe (its option table, gg_ortho_options.c)
        hints={"dem": Hint("DEM (heights above the ellipsoid)", widget="dataset"),
               "rpc_height": Hint("Height added to the DEM, the height without a DEM (m)"),
               "dem_interp": Hint("DEM interpolation", advanced=True),
               "dem_missing": Hint("Height where the DEM has no value (m)", advanced=True),
               "dem_srs": Hint("CRS of the DEM (overrides its own)", widget="crs",
                               advanced=True),
               "t_srs": Hint("Target CRS", widget="crs"),
               "tr": Hint("Target resolution (x, y)"),
               "te": Hint("Target extent", widget="extent", crs_param="T_SRS"),
               "ts": Hint("Target size (width, height)", advanced=True),
               "r": Hint("Resampling"),
               "grid_step": Hint(advanced=True),
               "ot": Hint(hidden=True),        # the common DATA_TYPE parameter gives -ot
               "-outdir": Hint(hidden=True)},  # batch mode: one OUTPUT here
        doc="gdal_ortho"),
    Utility(
        "gdal_warp", "Warp (reproject, GCPs, geolocation arrays)", GROUP_GEOMETRY,
        "gdalwarp's answer on the device: map reprojection, GCP polynomials and thin-plate "
        "splines, geolocation arrays (radar-geometry products onto a map) and RPCs. Several "
        "inputs are mosaicked in order.",
        inputs=[Rasters("INPUT", "Input rasters")],
        # the parameters: gdal_warp --describe (its option table, gg_warp_options.c)
        hints={"s_srs": Hint("Source CRS (overrides its own)", widget="crs", advanced=True),
               "t_srs": Hint("Target CRS", widget="crs"),
               "te": Hint("Target extent", widget="extent", crs_param="T_SRS"),
               "te_srs": Hint(hidden=True),   # the extent widget gives -te in the target CRS
               "tr": Hint("Target resolution (x, y)"),
               "ts": Hint("Target size (width, height)", advanced=True),
               "r": Hint("Resampling"),
               "et": Hint("Error threshold (source pixels; 0: exact)", advanced=True),
               "order": Hint("GCP polynomial order", advanced=True),
               "tps": Hint("Thin-plate spline through the GCPs", advanced=True),
               "rpc": Hint("Use the RPCs", advanced=True),
               "geoloc": Hint("Use the geolocation arrays"),
               "to": Hint("Transformer options NAME=VALUE, separated by | (e.g. "
                          "RPC_DEM=dem.tif|RPC_HEIGHT=30)", advanced=True, repeat="|"),
               "wo": Hint("Warp options NAME=VALUE, separated by |", advanced=True,
                          repeat="|"),
               "ot": Hint(hidden=True)},      # the common DATA_TYPE parameter gives -ot
        doc="gdal_warp"),
    Utility(
        "gdal_fmcw", "FMCW weather radar products", GROUP_RADAR,
        "Dual-polarisation FMCW weather-radar products (DBZ, ZDR, LDR, VEL, WIDTH, RHOHV, PHIDP, "
        "SNR, SNRVC, SNRHX) from raw HH/VV/HV sectors: a polar raster (rows = sectors, columns = "
        "range gates, one band per product), or with a grid cell size one georeferenced PPI "
        "raster per product; Metek MRR-2 raw spectra (.raw, .raw.gz): a time x height raster "
        "(ZE, W, WIDTH, SNR, NOISE, FLAG, Z, PIA, RR, LWC).",
        inputs=[RawFile("INPUT", "Raw FMCW file (HH/VV/HV sectors) or MRR-2 spectra")],
        hints={"-products": Hint("Products, comma-separated (empty: all)"),
               "-grid": Hint("PPI grid cell size (m); empty: the polar raster"),
               "-max_range": Hint("Extent of the PPI grid (m of ground distance)",
                                  advanced=True),
               "-average": Hint("MRR-2: averaging interval (s); empty: every record",
                                advanced=True)},
        doc="gdal_fmcw"),
    Utility(
        "gdal_quicklook", "Quicklook (PNG)", GROUP_VIEW,
        "Writes a PNG a person would rather look at than read: coherence/tau with a colour bar, "
        "wrapped phase on a cyclic colour map, amplitude in dB with a robust stretch, offsets as "
        "arrows, radar reflectivity with the NWS palette, the other radar moments (ZDR, RHOHV, "
        "...) and velocity on their own scales, masks (PS) in two colours.",
        # a Python program (geogpu.quicklook), no --describe: hand-written
        params=[Enum("KIND", "-kind", "Kind of picture", choices=QUICKLOOK_KINDS, default=0),
                Num("BAND", "-b", "Band", type="int", default=1, minimum=1),
                Num("SIZE", "-size", "Longest side (pixels)", type="int", default=1024,
                    minimum=16, advanced=True)],
        described=False, common=False, output="png", doc="gdal_quicklook"),
]


def by_program():
    return {u.program: u for u in UTILITIES}


# ------------------------------------------------------------------ from --describe

_CACHE = {}


def describe(path, timeout=20):
    """The utility's --describe JSON (a dict), run once per program file
    (cached by path, size and modification time).  RuntimeError when the
    program does not answer it."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        p = subprocess.run([str(path), "--describe"], capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{os.path.basename(str(path))} --describe failed: "
                               f"{(p.stderr or p.stdout).strip()[-300:]}")
        try:
            _CACHE[key] = json.loads(p.stdout)
        except ValueError as e:
            raise RuntimeError(f"{os.path.basename(str(path))} --describe: not JSON ({e})")
    return _CACHE[key]


def _param_name(flag):
    return flag.lstrip("-").upper().replace("-", "_")


def _label(hint, text, flag):
    if hint.label:
        return hint.label
    text = (text or flag).strip()
    return text[:1].upper() + text[1:]


def _size(text):
    """'64x32' -> (64, 32); None stays None."""
    if text is None:
        return None
    x, y = text.lower().split("x")
    return (int(x), int(y))


def _number(text, kind):
    if text is None:
        return None
    return int(text) if kind == "int" else float(text)


def op_option_param(o, hint=None):
    """The Processing parameter of one op option of --describe (None: not
    on the command line, or a common option)."""
    hint = hint or Hint()
    if not o.get("flag") or o.get("common") or hint.hidden:
        return None
    kind, flag, default, req = o["kind"], o["flag"], o.get("default"), bool(o.get("required"))
    name = _param_name(flag)
    common = dict(advanced=hint.advanced, key=o["key"], required=req, omit_default=True,
                  optional=not req and default is None)
    nvalues = len(re.findall(r"<[^>]+>", o.get("values") or "")) if kind != "size" else 2
    if hint.widget in ("dataset", "crs", "extent"):
        label = _label(hint, o.get("help"), flag)
        extra = {k: v for k, v in common.items() if k != "omit_default"}
        if hint.widget == "dataset":
            return Dataset(name, flag, label, **extra)
        if hint.widget == "crs":
            return Crs(name, flag, label, **extra)
        return Extent(name, flag, label, crs_param=hint.crs_param, **extra)
    if kind in ("int", "float") and nvalues == 2:  # a flag of two numbers (-tr <xres> <yres>)
        return Pair(name, flag, _label(hint, o.get("help"), flag), type=kind,
                    minimum=o.get("min"), maximum=o.get("max"), **common)
    if kind in ("int", "float") and nvalues > 2:
        return Text(name, flag, _label(hint, o.get("help"), flag), nvalues=nvalues, **common)
    if kind == "bool":
        label = hint.label or (_label(hint, o.get("help"), flag) if o.get("switch_value") == "yes"
                               else f"{flag}: {o['key']}={o.get('switch_value')} "
                                    f"(default {default}: {o.get('help')})")
        # the switch sets the option to switch_value, not its default: off by default
        return Flag(name, flag, label, default=(default == o.get("switch_value")),
                    **dict(common, optional=False))
    label = _label(hint, o.get("help"), flag)
    if kind in ("int", "float"):
        return Num(name, flag, label, type=kind,
                   default=_number(default, kind),
                   minimum=o.get("min"), maximum=o.get("max"), **common)
    if kind == "size":
        return Pair(name, flag, label, type="int", default=_size(default),
                    minimum=o.get("min"), maximum=o.get("max"), **common)
    if kind == "choice":
        choices = [c for c in (o.get("choices") or "").split(",") if c]
        if default is None and not req:
            return Enum(name, flag, label, choices=["(default)"] + choices, default=0,
                        omit_first=True, **common)
        return Enum(name, flag, label, choices=choices,
                    default=choices.index(default) if default in choices else 0, **common)
    return Text(name, flag, label, default=default, repeat=hint.repeat, **common)


def own_flag_param(f, hint=None):
    """The Processing parameter of one of the utility's own flags (the
    'flags' of --describe: a kind and a help line, no default): optional,
    left off the command line when empty."""
    hint = hint or Hint()
    if hint.hidden:
        return None
    flag, kind, values = f["flag"], f.get("kind") or "string", f.get("values") or ""
    name, label = _param_name(flag), _label(hint, f.get("help"), flag)
    n = len(re.findall(r"<[^>]+>", values)) or (1 if values else 0)
    common = dict(advanced=hint.advanced, required=bool(f.get("required")),
                  optional=not f.get("required"))
    if kind == "bool" or not values:
        return Flag(name, flag, label, **dict(common, optional=False))
    if kind in ("int", "float") and n == 2:
        return Pair(name, flag, label, type=kind, **common)
    if kind in ("int", "float") and n == 1:
        return Num(name, flag, label, type=kind, **common)
    if kind == "choice":
        return Enum(name, flag, label, choices=["(default)"] + values.split("|"), default=0,
                    omit_first=True, **common)
    if kind == "file":
        return FileOut(name, flag, label, file_filter=hint.file_filter or "All files (*)",
                       **common)
    if kind == "folder":
        return Folder(name, flag, label, **common)
    if kind == "dataset":
        return Dataset(name, flag, label, **common)
    return Text(name, flag, label, nvalues=max(n, 1), **common)


def params_from_description(d, hints=None, skip_flags=()):
    """The typed parameters of a --describe JSON: the op options (with a
    flag, not common), then the utility's own flags; skip_flags (product
    flags, which outputs request) left out."""
    hints = hints or {}
    out, seen = [], set(skip_flags)
    for o in d.get("options", []):
        p = op_option_param(o, hints.get(o["key"]))
        if p is not None and p.flag not in seen:
            seen.add(p.flag)
            out.append(p)
    for f in d.get("flags", []):
        p = own_flag_param(f, hints.get(f["flag"]))
        if p is not None and f["flag"] not in seen:
            seen.add(f["flag"])
            out.append(p)
    return out


def with_description(u, d):
    """The table entry u with its parameters made from its --describe."""
    skip = [pr.flag for pr in u.products if pr.flag]
    return dataclasses.replace(u, params=params_from_description(d, u.hints, skip),
                               help=u.help or d.get("purpose", ""), problem=None)


def _inputs_from_operands(operands):
    srcs = re.findall(r"<[^>]+>(?:\.\.\.)?|\.\.\.", operands or "")[:-1]  # the last: dst
    if any("..." in s for s in srcs):
        return (Rasters("INPUTS", "Input rasters, in order"),)
    names = [re.sub(r"\W", "", s).upper() for s in srcs]
    if len(names) >= 2:
        return tuple(Raster(n, n.replace("_", " ").capitalize()) for n in names)
    return (Raster("INPUT", "Input raster"),)


def from_description(program, d):
    """A Utility for a geogpu utility without a table entry: title, help,
    inputs (its operands) and parameters all from its --describe."""
    return Utility(program, program[5:].replace("_", " ").capitalize(), "Other",
                   (d.get("purpose") or program).replace("\n", " "),
                   inputs=_inputs_from_operands(d.get("operands")),
                   params=params_from_description(d), doc=program, from_describe=True)


def resolve(u, path):
    """The table entry u ready for QGIS: its parameters from path's
    --describe (path None: the program was not found), or as written for
    programs without --describe.  When the description cannot be read the
    entry keeps no parameters and says why in problem."""
    if not u.described:
        return u
    if path is None:
        return dataclasses.replace(u, problem=f"{u.program} not found; set the geogpu provider "
                                   "setting 'Folder of the geogpu utilities'")
    try:
        return with_description(u, describe(path))
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        return dataclasses.replace(u, problem=str(e))
