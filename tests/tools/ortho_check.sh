#!/bin/bash
# ortho_check.sh -- quick device checks of gdal_ortho before the full-size
# bench (bench/bench_ortho_full.sh); run from the repo root on the GPU
# machine, with .gdalrt and the build folder's bin/ and lib/ carried:
#   1. tests/c/test_ortho on cpu,<device> (float64 reference incl. the
#      stretched kernels, device agreement, the occupancy check with the
#      kernel's register count from cuobjdump);
#   2. on a 1536 x 1536 scene from bench_ortho_make: gdal_translate of
#      GG:ortho:... equals gdal_ortho (same device), for the default grid
#      and for a 2.2x downsampled one (stretched cubic), and both are within
#      1 DN of a single-chunk gdalwarp.
#
#   tests/tools/ortho_check.sh [<build dir> [<device> [<work dir>]]]
set -u
B=$(cd "${1:-build-h5-cuda}" && pwd); DEV=${2:-cuda}; D=${3:-/tmp/bcheck}
if [[ -f .gdalrt/env.sh ]]; then export GGRT_GLOBAL=1; . .gdalrt/env.sh; fi
export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-} GG_BACKEND_DIR=$B/lib GDAL_DRIVER_PATH=$B/lib
if [[ $DEV == cuda ]]; then
  GG_OCC_CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
  co=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -1)
  GG_OCC_REGS=$([[ -n $co ]] && "$co" --dump-resource-usage "$B/lib/libgeogpu_cuda.so" 2>/dev/null |
      grep -A1 'gg_k_ortho' | grep -o 'REG:[0-9]*' | head -1 | cut -d: -f2)
  export GG_OCC_CC GG_OCC_REGS
  echo "occupancy inputs: cc $GG_OCC_CC, registers ${GG_OCC_REGS:-unknown}"
fi
echo "== test_ortho (cpu,$DEV)"
GG_TEST_DEVICES=cpu,$DEV "$B/bin/test_ortho" | tail -25
echo "test_ortho rc=${PIPESTATUS[0]}"

mkdir -p "$D"; "$B/bin/bench_ortho_make" "$D" 1536 1536 > /dev/null
gdal_translate -q "$D/scene.vrt" "$D/scene.tif"; gdal_translate -q "$D/dem.vrt" "$D/dem.tif"
for grid in default ts700; do
  if [[ $grid == default ]]; then G=(); K=""; else G=(-ts 700 700); K="ts=700,700:"; fi
  echo "== $grid grid, cubic, $DEV"
  "$B/bin/gdal_ortho" -q -v -device "$DEV" -r cubic -t_srs EPSG:32632 "${G[@]}" -dem "$D/dem.tif" \
      "$D/scene.tif" "$D/o_$grid.tif" 2>&1 | grep -E "kernel scales|ERROR"
  gdal_translate -q "GG:ortho:dem=$D/dem.tif:r=cubic:t_srs=EPSG:32632:${K}device=$DEV:$D/scene.tif" \
      "$D/g_$grid.tif"
  echo -n "GG:ortho vs gdal_ortho (exact): "; "$B/bin/gg_compare" -abs-tol 0 -rel-tol 0 "$D/o_$grid.tif" "$D/g_$grid.tif"
  gdalwarp -q -overwrite -wm 2000 -rpc -to RPC_DEM="$D/dem.tif" -et 0 -r cubic -t_srs EPSG:32632 \
      "${G[@]}" "$D/scene.tif" "$D/w_$grid.tif"
  echo -n "gdal_ortho vs single-chunk gdalwarp (1 DN): "; "$B/bin/gg_compare" -abs-tol 1 -rel-tol 1e-6 "$D/w_$grid.tif" "$D/o_$grid.tif"
done
rm -rf "$D"
