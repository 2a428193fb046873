#!/bin/bash
# bench_ortho.sh -- gdal_ortho against gdalwarp on one ZY-3-size scene and a
# batch, on the GPU machine with the carried GDAL runtime (.gdalrt).
#
#   bench/bench_ortho.sh <build dir> <work dir> [<width> <height> [<batch n> <batch size>]]
#
# Inputs come from bench_ortho_make (no GDAL needed there), converted to
# uncompressed GeoTIFF.  Reports the end-to-end wall time of gdal_ortho on
# CUDA and on the CPU backend, of
# `gdalwarp -multi -wo NUM_THREADS=ALL_CPUS -rpc -to RPC_DEM=... -et 0` on
# the same host and inputs, and gg_compare between the two outputs.
set -u
B=$(cd "$1" && pwd); D=$2; W=${3:-24516}; H=${4:-24576}; NB=${5:-16}; BS=${6:-4096}
export GGRT_GLOBAL=1
. .gdalrt/env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH GG_BACKEND_DIR=$B/lib
TIMEFORMAT='%R s'
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; nproc
mkdir -p "$D/batch"
$B/bin/bench_ortho_make "$D" "$W" "$H"
echo "translate scene to GeoTIFF:"; time gdal_translate -q "$D/scene.vrt" "$D/scene.tif"
gdal_translate -q "$D/dem.vrt" "$D/dem.tif"; rm -f "$D/scene.raw"
ARGS=(-r cubic -t_srs EPSG:32632 -dem "$D/dem.tif")
for i in 1 2; do
  echo "gdal_ortho cuda run $i:"; time $B/bin/gdal_ortho -q -v -device cuda "${ARGS[@]}" "$D/scene.tif" "$D/gpu.tif"
done
gdalinfo "$D/gpu.tif" | grep "Size is"
echo "gdalwarp -multi ALL_CPUS:"; time gdalwarp -q -overwrite -multi -wo NUM_THREADS=ALL_CPUS -rpc -to RPC_DEM="$D/dem.tif" -et 0 -r cubic -t_srs EPSG:32632 "$D/scene.tif" "$D/warp.tif"
echo "compare (whole image, edges included):"; $B/bin/gg_compare -abs-tol 1 -mask-tol 100000000 "$D/warp.tif" "$D/gpu.tif"
echo "gdal_ortho cpu backend:"; time timeout 240 $B/bin/gdal_ortho -q -device cpu "${ARGS[@]}" "$D/scene.tif" "$D/cpu.tif"
rm -f "$D/warp.tif" "$D/cpu.tif" "$D/scene.tif"
# batch: NB scenes of BS x BS
$B/bin/bench_ortho_make "$D/batch" "$BS" "$BS" > /dev/null
gdal_translate -q "$D/batch/scene.vrt" "$D/batch/s0.tif"
for i in $(seq 1 $((NB - 1))); do cp "$D/batch/s0.tif" "$D/batch/s$i.tif"; done
mkdir -p "$D/bout"
for n in 1 4 $NB; do
  echo "batch of $n scenes ${BS}x${BS}:"; time $B/bin/gdal_ortho -q -device cuda "${ARGS[@]}" -outdir "$D/bout" $(for i in $(seq 0 $((n - 1))); do echo "$D/batch/s$i.tif"; done)
done
echo "gdalwarp, one batch scene:"; time gdalwarp -q -overwrite -multi -wo NUM_THREADS=ALL_CPUS -rpc -to RPC_DEM="$D/dem.tif" -et 0 -r cubic -t_srs EPSG:32632 "$D/batch/s0.tif" "$D/bw.tif"
