#!/usr/bin/env bash
# Set up, build and run the demo: every capability of geogpu on the real
# data in autotest_data/ (see its README for licences and provenance), on
# the best device found (or GG_DEVICE).  Each step prints one line: what it
# made, a figure that shows it worked (checked against a bound: the demo
# stops with an error naming the step when it is off), the device and the
# time of the step's geogpu commands.  Each step writes GeoTIFFs and PNG
# quicklooks into GG_DEMO_OUT (default demo_out/).
#   GG_DEVICE       auto (default), cpu, cuda[:N], opencl[:P[:D]]
#   GG_BUILD_DIR    build folder (default build)
#   GG_SKIP_SETUP=1 use the existing build: no apt, no build (scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${GG_SKIP_SETUP:-0}" = 1 ] || bash scripts/setup.sh
build="${GG_BUILD_DIR:-build}"
export PATH="$PWD/$build/bin:$PATH" GDAL_DRIVER_PATH="$PWD/$build/lib"
out="${GG_DEMO_OUT:-demo_out}"
mkdir -p "$out"
log="$out/demo.log"
: >"$log"
device="${GG_DEVICE:-auto}"
py=/usr/bin/python3
data=autotest_data
slc=$data/winnipeg_slc/winnipeg_hh.slc

step="" used="" ms=0
trap 'rc=$?; [ $rc = 0 ] || { echo "demo: step \"$step\" FAILED (last lines of $log:)" >&2;
      tail -n 5 "$log" >&2; }; exit $rc' EXIT

begin() { step=$1 used="" ms=0; }
# gg <utility> <args...>: a geogpu utility on the demo's device, timed; the
# device it reports (-v) is kept for the step's line
gg() {
  local t0 t1 tool=$1; shift
  t0=$(date +%s%N)
  "$tool" -device "$device" -v -q "$@" 2>>"$log"
  t1=$(date +%s%N)
  ms=$(( ms + (t1 - t0) / 1000000 ))
  used=$(grep -o 'device [a-z][^,;]*' "$log" | tail -n 1)
}
# look <src> <png> [quicklook options]: the step's picture
look() { local src=$1 png=$2; shift 2; gdal_quicklook -q "$@" "$src" "$out/$png" 2>>"$log"; }
# report <what it made> <figure step> <figure args...>: the step's line
report() {
  local what=$1 figure; shift
  figure=$($py scripts/demo_figure.py "$@" 2>>"$log")
  printf 'demo: %-9s %s: %s [%s, %d ms]\n' "$step" "$what" "$figure" "${used#device }" "$ms"
}

# --- the three airborne-SAR products -----------------------------------
begin multilook
gg gdal_multilook -looks 4 4 "$slc" "$out/slc_multilook.tif"
look "$out/slc_multilook.tif" slc_multilook.png
report "4x4 looks of the Winnipeg SLC (intensity)" multilook "$slc" "$out/slc_multilook.tif"

begin rotate
amp=$data/psps_houston/20180115_amp_crop.tif
gg gdal_rotate -angle 30 -scale 1.5 "$amp" "$out/amp_rotate.tif"
look "$out/amp_rotate.tif" amp_rotate.png
report "Houston amplitude rotated 30 deg x1.5" rotate "$amp" "$out/amp_rotate.tif" 30 1.5

begin radnorm
gg gdal_radnorm -coef 100 -levels 255 "$amp" "$out/amp_radnorm.tif"
look "$out/amp_radnorm.tif" amp_radnorm.png
report "Houston amplitude gain-normalised to 255 levels" radnorm "$amp" "$out/amp_radnorm.tif"

# --- coregistration --------------------------------------------------------
# The secondary is the real Winnipeg SLC under a known warp (sub-pixel
# shift + stretch) with straight fringes and decorrelation noise
# (scripts/demo_pair.py): there is one real SLC in autotest_data.
# Windows sized for a 250x250 scene.
begin coreg
applied=$($py scripts/demo_pair.py "$slc" "$out/secondary.tif" 2>>"$log")
read -r a0 a1 d0 d1 fx fy <<<"$applied"
windows=(-window 32 32 -search 8 8 -skip 16 16)
gg gdal_xcorr "${windows[@]}" "$slc" "$out/secondary.tif" "$out/offsets.tif"
gg gdal_coreg "${windows[@]}" -fit "$out/coreg_fit.json" "$slc" "$out/secondary.tif" \
   "$out/secondary_coreg.tif"
look "$out/offsets.tif" offsets.png -kind offsets
report "offsets ${windows[*]}, fit, resampled secondary" coreg "$slc" "$out/coreg_fit.json" \
       "$a0" "$a1" "$d0" "$d1"

# --- interferogram + coherence --------------------------------------------
begin insar
gg gdal_insar "$slc" "$out/secondary_coreg.tif" "$out/pair.tif"
gg gdal_insar -coherence "$slc" "$out/secondary.tif" "$out/pair_uncoregistered.tif"
look "$out/pair_coherence.tif" coherence.png
look "$out/pair_interferogram.tif" interferogram.png
report "interferogram, 5x5 coherence, amplitude" insar "$out/pair_interferogram.tif" \
       "$out/pair_coherence.tif" "$out/pair_uncoregistered.tif" "$fx" "$fy"

# --- the coherence onto a map with its geolocation arrays -----------------
# The Mojave geolocation of isce3's topo test (autotest_data/isce3_topo)
# is another scene's: this shows the geometry, not where Winnipeg lies.
begin warp
cat >"$out/pair_coherence_geoloc.vrt" <<EOF
<VRTDataset rasterXSize="250" rasterYSize="250">
  <Metadata domain="GEOLOCATION">
    <MDI key="X_DATASET">$PWD/$data/isce3_topo/x_250.rdr</MDI><MDI key="X_BAND">1</MDI>
    <MDI key="Y_DATASET">$PWD/$data/isce3_topo/y_250.rdr</MDI><MDI key="Y_BAND">1</MDI>
    <MDI key="PIXEL_OFFSET">0</MDI><MDI key="LINE_OFFSET">0</MDI>
    <MDI key="PIXEL_STEP">1</MDI><MDI key="LINE_STEP">1</MDI>
    <MDI key="SRS">GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]]</MDI>
  </Metadata>
  <VRTRasterBand dataType="Float32" band="1">
    <Description>coherence</Description><NoDataValue>nan</NoDataValue>
    <SimpleSource><SourceFilename relativeToVRT="1">pair_coherence.tif</SourceFilename>
      <SourceBand>1</SourceBand></SimpleSource>
  </VRTRasterBand>
</VRTDataset>
EOF
map=(-geoloc -t_srs EPSG:4326 -tr 0.0002 0.0002 -r bilinear)
gg gdal_warp -overwrite "${map[@]}" "$out/pair_coherence_geoloc.vrt" "$out/coherence_map.tif"
gdalwarp -q -overwrite "${map[@]}" "$out/pair_coherence_geoloc.vrt" "$out/coherence_map_gdalwarp.tif" \
  2>>"$log"
look "$out/coherence_map.tif" coherence_map.png -kind coherence
report "coherence on a WGS84 map (geolocation arrays)" warp "$out/coherence_map.tif" \
      "$out/coherence_map_gdalwarp.tif"

# --- PtSel on a real interferogram stack (Houston, 24 dates) ---------------
begin ptsel
gg gdal_ptsel -window 11 -mask "$data/psps_houston/igrams_crop.tif" "$out/ps.tif"
look "$out/ps_ps_mask.tif" ps_mask.png
look "$out/ps_tau_max.tif" ps_tau_max.png
report "PS mask of 24 interferograms, window 11" ptsel "$out/ps_ps_mask.tif" "$out/ps_tau_max.tif"

# --- orthorectification (RPC + DEM), beside gdalwarp -----------------------
begin ortho
scene=$data/rpc_mojave/scene.tif dem=$data/rpc_mojave/dem.tif
rm -f "$out/ortho.tif"
gg gdal_ortho -dem "$dem" -r cubic "$scene" "$out/ortho.tif"
# one chunk (no source fill-ratio split), as gdal_ortho: docs/gdal_ortho.md
gdalwarp -q -overwrite -rpc -to RPC_DEM="$dem" -et 0 -wm 2000 -wo SRC_FILL_RATIO_HEURISTICS=NO \
  -r cubic "$scene" "$out/ortho_gdalwarp.tif" 2>>"$log"
look "$out/ortho.tif" ortho.png
report "orthoimage of an RPC scene over its DEM" ortho "$out/ortho.tif" "$out/ortho_gdalwarp.tif"

# --- FMCW: the real MRR-2 spectra, and a simulated dual-pol sector scan ---
begin mrr2
gg gdal_fmcw "$data/mrr2_spectra/0308.raw.gz" "$out/mrr2.tif"
look "$out/mrr2.tif" mrr2_ze.png -b 1
report "MRR-2 Ze, W, width, Z, rain rate ... (time x height)" mrr2 "$out/mrr2.tif"

begin fmcw
rm -f "$out/storm.nc"
gdal_fmcw -simulate -sectors 36 -q "$out/storm.nc" 2>>"$log"
gg gdal_fmcw -grid 100 -products DBZ,ZDR,VEL "$out/storm.nc" "$out/ppi.tif"
look "$out/ppi_DBZ.tif" ppi_dbz.png
report "PPI DBZ, ZDR, VEL of a simulated storm (36 sectors)" storm "$out/ppi_DBZ.tif"

echo "demo: every step passed; outputs and quicklooks in $out/"
