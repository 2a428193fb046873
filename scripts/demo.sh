#!/usr/bin/env bash
# Set up, build and run the demo: the three airborne-SAR products on the
# embedded real data (autotest_data/), on the best device found (or
# GG_DEVICE), with GeoTIFF outputs, PNG quicklooks, the device and times.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build="${GG_BUILD_DIR:-build}"
export PATH="$PWD/$build/bin:$PATH" GDAL_DRIVER_PATH="$PWD/$build/lib"
out="${GG_DEMO_OUT:-demo_out}"
mkdir -p "$out"
slc=autotest_data/winnipeg_slc/winnipeg_hh.slc
amp=autotest_data/psps_houston/20180115_amp_crop.tif
device="${GG_DEVICE:-auto}"

run() { # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  "$@" -device "$device" -v -q
  t1=$(date +%s%N)
  printf 'demo: %-30s %d ms\n' "$name" $(( (t1 - t0) / 1000000 ))
}

run "multilook 4x4 (SLC)" gdal_multilook -looks 4 4 "$slc" "$out/slc_multilook.tif"
run "rotate 30deg x1.5" gdal_rotate -angle 30 -scale 1.5 "$amp" "$out/amp_rotate.tif"
run "radnorm coef 100, 255 levels" gdal_radnorm -coef 100 -levels 255 "$amp" "$out/amp_radnorm.tif"

# quicklooks (gdal_quicklook: dB with a robust stretch and a colour bar;
# intensity spans decades)
for f in slc_multilook amp_rotate amp_radnorm; do
  gdal_quicklook -q "$out/$f.tif" "$out/$f.png"
done
echo "demo: outputs in $out/: $(cd "$out" && ls *.tif *.png | tr '\n' ' ')"
