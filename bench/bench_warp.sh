#!/bin/bash
# bench_warp.sh -- gdal_warp beside gdalwarp -multi on one large UInt16 scene,
# each transformer, in the same call; the I/O references beside them (a
# gdal_translate copy of the scene, gdal_ortho on the same scene).  Run from
# the repo root on the GPU machine with the build's bin/ and lib/ and
# .gdalrt carried (bench/README.md).
#
#   bench/bench_warp.sh [<build dir> [<work dir> [<size> [<device>]]]]
#
# Defaults: build, ./bwarp, 16384, cuda.  Prints wall time and peak RSS of
# every run and gg_compare's agreement of each gdal_warp output with the
# gdalwarp output of the same command line.
set -u
B=$(cd "${1:-build}" && pwd); D=${2:-$PWD/bwarp}; N=${3:-16384}; DEV=${4:-cuda}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name --format=csv,noheader
echo "cores $(nproc)"
if [ -f .gdalrt/env.sh ]; then export GGRT_GLOBAL=1; . .gdalrt/env.sh; fi
export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-} GG_BACKEND_DIR=$B/lib GDAL_DRIVER_PATH=$B/lib:$B/plugins
mkdir -p "$D"

# wall seconds and peak RSS (MB) of a command
run() {
    local label=$1; shift
    local t0 t1 rss=""
    t0=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%M" -o "$D/rss.txt" "$@" > "$D/log.txt" 2>&1 || { echo "$label FAILED"; cat "$D/log.txt"; return 1; }
        rss=$(awk '{printf " peak %.0f MB", $1 / 1024}' "$D/rss.txt")
    else
        "$@" > "$D/log.txt" 2>&1 || { echo "$label FAILED"; cat "$D/log.txt"; return 1; }
    fi
    t1=$(date +%s.%N)
    echo "$label: $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s$rss"
}

# the scene: bench_ortho_make's UInt16 texture (RPCs for gdal_ortho), then a
# UTM copy of it and a GCP copy (25 GCPs of the UTM grid, bent a little)
$B/bin/bench_ortho_make "$D" "$N" "$N" > /dev/null
gdal_translate -q "$D/scene.vrt" "$D/rpc.tif"
rm -f "$D/scene.raw"
X0=500000; Y0=5000000; R=2
gdal_translate -q -a_srs EPSG:32632 -a_ullr $X0 $Y0 $((X0 + N * R)) $((Y0 - N * R)) \
    -co TILED=NO "$D/rpc.tif" "$D/utm.tif"
G=()
for j in 0 1 2 3 4; do for i in 0 1 2 3 4; do
    px=$((i * N / 4)); py=$((j * N / 4))
    e=$(awk -v p=$px -v q=$py -v n=$N -v x=$X0 -v r=$R 'BEGIN {printf "%.3f", x + p * r + 0.002 * r * (q - n / 2) * (q - n / 2) / n}')
    no=$(awk -v q=$py -v p=$px -v y=$Y0 -v r=$R 'BEGIN {printf "%.3f", y - q * r + 0.001 * r * p}')
    G+=(-gcp $px $py "$e" "$no")
done; done
gdal_translate -q -a_srs EPSG:32632 "${G[@]}" "$D/utm.tif" "$D/gcp.tif"
ls -la "$D"/utm.tif | awk '{printf "scene %s bytes\n", $5}'

PEER=(gdalwarp -q -overwrite -multi -wo NUM_THREADS=ALL_CPUS -wm 6000)
OURS=($B/bin/gdal_warp -q -overwrite -device "$DEV")
cmp() { $B/bin/gg_compare -abs-tol 1 -rel-tol 1e-6 "$1" "$2" | tail -1; }

echo "== I/O references"
run "gdal_translate copy" gdal_translate -q "$D/utm.tif" "$D/copy.tif"
run "gdal_ortho $DEV (same scene, RPC, no DEM, cubic)" $B/bin/gdal_ortho -q -device "$DEV" -r cubic -t_srs EPSG:32632 "$D/rpc.tif" "$D/ortho.tif"

case_() {
    local name=$1; shift
    local src=$1; shift
    echo "== $name"
    run "gdalwarp -multi" "${PEER[@]}" "$@" "$src" "$D/peer.tif"
    run "gdal_warp $DEV" "${OURS[@]}" "$@" "$src" "$D/ours.tif"
    run "gdal_warp $DEV (again)" "${OURS[@]}" "$@" "$src" "$D/ours.tif"
    echo "agreement: $(cmp "$D/peer.tif" "$D/ours.tif")"
}
case_ "UTM -> EPSG:3857 cubic, default -et" "$D/utm.tif" -t_srs EPSG:3857 -r cubic
case_ "UTM -> EPSG:3857 cubic, -et 0" "$D/utm.tif" -t_srs EPSG:3857 -r cubic -et 0
case_ "GCP order 2 bilinear" "$D/gcp.tif" -order 2 -r bilinear -wo SRC_FILL_RATIO_HEURISTICS=NO
case_ "GCP TPS bilinear" "$D/gcp.tif" -tps -r bilinear -wo SRC_FILL_RATIO_HEURISTICS=NO
case_ "RPC, no DEM, cubic, -et 0" "$D/rpc.tif" -rpc -t_srs EPSG:32632 -r cubic -et 0
case_ "UTM -> EPSG:3857 average, 12 m (about 4x coarser)" "$D/utm.tif" -t_srs EPSG:3857 -r average -tr 12 12
run "gdal_warp $DEV UTM -> EPSG:3857 cubic (reference of the lazy run)" "${OURS[@]}" -t_srs EPSG:3857 -r cubic "$D/utm.tif" "$D/ours.tif"
echo "== lazy: GG:warp through gdal_translate (GDAL's block reads, one block at a time)"
run "gdal_translate GG:warp $DEV" gdal_translate -q "GG:warp:t_srs=EPSG:3857:r=cubic:device=$DEV:$D/utm.tif" "$D/lazy.tif"
echo "agreement with gdal_warp: $(cmp "$D/ours.tif" "$D/lazy.tif")"
echo "== $DEV against the CPU backend, every kernel (2048 x 2048 crop)"
gdal_translate -q -srcwin 0 0 2048 2048 "$D/utm.tif" "$D/small.tif"
for r in near bilinear cubic cubicspline lanczos average; do
    for e in 0.125 0; do
        $B/bin/gdal_warp -q -overwrite -device "$DEV" -t_srs EPSG:4326 -et $e -r $r "$D/small.tif" "$D/a.tif"
        $B/bin/gdal_warp -q -overwrite -device cpu -t_srs EPSG:4326 -et $e -r $r "$D/small.tif" "$D/b.tif"
        echo "$r -et $e: $(cmp "$D/b.tif" "$D/a.tif")"
    done
done
if [ "$DEV" != cpu ]; then
    echo "== CPU backend"
    run "gdal_warp cpu UTM -> EPSG:3857 cubic" $B/bin/gdal_warp -q -overwrite -device cpu -t_srs EPSG:3857 -r cubic "$D/utm.tif" "$D/ours.tif"
fi
