#!/bin/bash
# bench_ortho_full.sh -- the full-size (24516 x 24576) gdal_ortho / gdalwarp
# side by side of bench/RESULTS.md (run from the repo root on the GPU machine,
# with the build folder's bin/ and lib/ and .gdalrt carried).
#
#   bench/bench_ortho_full.sh [<build dir> [<work dir> [all|cpu|short]]]
#
# Default build dir build-ortho-cuda, work dir ./bw.  "cpu" also times the
# CPU backend; "all" also gdalwarp with its default -wm (64 MB chunks).
set -u
nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader; nproc
B=$(cd "${1:-build-ortho-cuda}" && pwd); D=${2:-$PWD/bw}; ALL=${3:-}
export GGRT_GLOBAL=1; . .gdalrt/env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH GG_BACKEND_DIR=$B/lib
TIMEFORMAT='%R s'
mkdir -p "$D"; $B/bin/bench_ortho_make "$D" 24516 24576 > /dev/null
gdal_translate -q "$D/scene.vrt" "$D/scene.tif"; gdal_translate -q "$D/dem.vrt" "$D/dem.tif"; rm -f "$D/scene.raw"
df -T "$D" | tail -1
A=(-r cubic -t_srs EPSG:32632 -dem "$D/dem.tif")
for i in 1 2 3 4 5; do
  echo "gdal_ortho cuda run $i:"; time $B/bin/gdal_ortho -q -device cuda "${A[@]}" "$D/scene.tif" "$D/gpu.tif"
done
echo "gdalwarp -wm 6000 -multi ALL_CPUS:"; time gdalwarp -q -overwrite -wm 6000 -multi -wo NUM_THREADS=ALL_CPUS -rpc -to RPC_DEM="$D/dem.tif" -et 0 -r cubic -t_srs EPSG:32632 "$D/scene.tif" "$D/warp.tif"
echo "compare vs single-chunk gdalwarp:"; $B/bin/gg_compare -abs-tol 1 -rel-tol 1e-6 "$D/warp.tif" "$D/gpu.tif"
rm -f "$D/warp.tif"
echo "gdal_ortho cuda after gdalwarp (run 6):"; time $B/bin/gdal_ortho -q -device cuda "${A[@]}" "$D/scene.tif" "$D/gpu.tif"
if [[ $ALL == all ]]; then
  echo "gdalwarp default -wm (64 MB chunks), -multi ALL_CPUS:"; time gdalwarp -q -overwrite -multi -wo NUM_THREADS=ALL_CPUS -rpc -to RPC_DEM="$D/dem.tif" -et 0 -r cubic -t_srs EPSG:32632 "$D/scene.tif" "$D/warpc.tif"
fi
if [[ $ALL == all || $ALL == cpu ]]; then
  echo "gdal_ortho cpu backend:"; time $B/bin/gdal_ortho -q -device cpu "${A[@]}" "$D/scene.tif" "$D/cpu.tif"
fi
