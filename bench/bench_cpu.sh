#!/usr/bin/env bash
# bench_cpu.sh -- times the airborne-SAR utilities against the nearest
# stock GDAL command on this machine's CPU, and records the result in
# bench/RESULTS.md (section "CPU", newest first).
#
#     bench/bench_cpu.sh [-b BUILD_DIR] [-s SIZE] [-r RUNS] [-d DEVICES] [-n]
#
#   -b  build dir with bin/ and lib/ (default build)
#   -s  image side in pixels (default 8192)
#   -r  timed runs per command (default 5, after one warm-up)
#   -d  geogpu devices to time (default "cpu"; e.g. "cpu,opencl" adds PoCL)
#   -n  do not write bench/RESULTS.md (print only)
#
# Pairs timed (same Float32 input, random non-zero, no nodata, GeoTIFF in
# and out, page cache warm):
#   gdal_translate -outsize 25% 25% -r average   vs  gdal_multilook -looks 4 4
#   gdalwarp -r bilinear of a copy whose geotransform is rotated by 30
#     degrees (a VRT), single-threaded and with -multi -wo NUM_THREADS=ALL_CPUS
#                                                vs  gdal_rotate -angle 30
#   gdal_radnorm alone: GDAL has no row/column gain normalisation.
# gdalwarp writes the rotated picture's bounding box (about 1.37 x 1.37
# times the input's pixels here) where gdal_rotate writes the input's size
# by default: gdal_rotate is also timed with -outsize set to gdalwarp's
# size, and the table gives every output size.
# Uses hyperfine when installed (apt-get install hyperfine), else a loop.
# MIT licence.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=build size=8192 runs=5 devices=cpu write=1
while getopts "b:s:r:d:n" o; do
    case $o in
    b) build=$OPTARG ;;
    s) size=$OPTARG ;;
    r) runs=$OPTARG ;;
    d) devices=$OPTARG ;;
    n) write=0 ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
    esac
done
[[ $build = /* ]] || build=$here/$build
for p in gdal_multilook gdal_rotate gdal_radnorm gg_make_input; do
    [[ -x $build/bin/$p ]] || { echo "bench_cpu: $build/bin/$p missing (build with GDAL and bench/)" >&2; exit 2; }
done
# Our plugin from this build (a stale one installed system-wide must not
# load into either side); libraries from this build.
export GDAL_DRIVER_PATH=$build/lib GG_BACKEND_DIR=$build/lib
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset GG_DEVICE

work=${GG_BENCH_WORK:-/tmp/ggbench_cpu}
mkdir -p "$work"
in=$work/in_f32_$size.tif
if [[ ! -s $in ]]; then
    echo "bench_cpu: making a ${size}x${size} Float32 input..." >&2
    "$build/bin/gg_make_input" -size "$size" -type Float32 -seed 7 "$in"
fi
vrt=$work/in_f32_${size}_rot30.vrt
gdal_translate -q -of VRT "$in" "$vrt"
gt=$(awk 'BEGIN { a = 30 * atan2(0, -1) / 180; printf "500000, %.17g, %.17g, 4000000, %.17g, %.17g", 10 * cos(a), 10 * sin(a), 10 * sin(a), -10 * cos(a) }')
sed -i "s|<GeoTransform>.*</GeoTransform>|<GeoTransform>$gt</GeoTransform>|" "$vrt"

# label|command
cmds=(
    "GDAL gdal_translate -r average|gdal_translate -q -outsize 25% 25% -r average $in $work/gdal_ml.tif"
)
IFS=, read -r -a devs <<<"$devices"
for d in "${devs[@]}"; do
    cmds+=("gdal_multilook ($d)|$build/bin/gdal_multilook -q -device $d -looks 4 4 $in $work/gg_ml_$d.tif")
done
cmds+=(
    "GDAL gdalwarp -r bilinear|gdalwarp -q -overwrite -r bilinear $vrt $work/gdal_rot.tif"
    "GDAL gdalwarp -r bilinear -multi -wo NUM_THREADS=ALL_CPUS|gdalwarp -q -overwrite -r bilinear -multi -wo NUM_THREADS=ALL_CPUS $vrt $work/gdal_rot_mt.tif"
)
# gdalwarp's output size (a VRT costs no pixels), for a like-for-like row
wsize=$(gdalwarp -q -overwrite -of VRT -r bilinear "$vrt" "$work/gdal_rot_size.vrt" >/dev/null 2>&1 &&
        gdalinfo "$work/gdal_rot_size.vrt" | sed -n 's/^Size is \([0-9]*\), \([0-9]*\)/\1 \2/p')
for d in "${devs[@]}"; do
    cmds+=("gdal_rotate ($d)|$build/bin/gdal_rotate -q -device $d -angle 30 $in $work/gg_rot_$d.tif")
    [[ -n $wsize ]] && cmds+=("gdal_rotate ($d), gdalwarp's output size|$build/bin/gdal_rotate -q -device $d -angle 30 -outsize $wsize $in $work/gg_rot_big_$d.tif")
done
for d in "${devs[@]}"; do
    cmds+=("gdal_radnorm ($d) (no GDAL equivalent)|$build/bin/gdal_radnorm -q -device $d $in $work/gg_rn_$d.tif")
done

# Times one command: median, min and max wall seconds of $runs runs.
time_one() {
    local cmd=$1
    if command -v hyperfine >/dev/null; then
        hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/hf.json" "$cmd" >/dev/null 2>&1 || return 1
        python3 - "$work/hf.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.3f %.3f %.3f" % (r["median"], r["min"], r["max"]))
EOF
    else
        local t=() i t0 t1
        # shellcheck disable=SC2086
        $cmd >/dev/null 2>&1 || return 1 # warm-up
        for ((i = 0; i < runs; i++)); do
            t0=$(date +%s.%N)
            # shellcheck disable=SC2086
            $cmd >/dev/null 2>&1 || return 1
            t1=$(date +%s.%N)
            t+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
        done
        printf '%s\n' "${t[@]}" | sort -g | awk '{v[NR] = $1} END {printf "%.3f %.3f %.3f\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR]}'
    fi
}

outsize() { gdalinfo "$1" 2>/dev/null | sed -n 's/^Size is \([0-9]*\), \([0-9]*\)/\1x\2/p'; }

model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
cores=$(nproc)
date=$(date -u +%Y-%m-%d)
tool=$(command -v hyperfine >/dev/null && hyperfine --version || echo "bash loop")
rows=()
for c in "${cmds[@]}"; do
    label=${c%%|*} cmd=${c#*|}
    echo "bench_cpu: $label ..." >&2
    if ! res=$(time_one "$cmd"); then
        show=${cmd//$work\//} show=${show//$build\/bin\//}
        rows+=("| $label | FAILED | | | \`$show\` |")
        continue
    fi
    read -r med mn mx <<<"$res"
    o=${cmd##* }
    show=${cmd//$work\//} show=${show//$build\/bin\//}
    rows+=("| $label | $med | $mn-$mx | $(outsize "$o") | \`$show\` |")
done

block=$(
    echo "### $date — $model, $cores cores"
    echo
    echo "Input ${size}x${size} Float32 GeoTIFF (random, non-zero, no nodata; $(du -m "$in" | cut -f1) MB), output GeoTIFF;"
    echo "wall-clock seconds, median (min-max) of $runs runs after 1 warm-up ($tool); $(gdal-config --version 2>/dev/null | sed 's/^/GDAL /');"
    echo "geogpu $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), build $(basename "$build") ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null))."
    echo "geogpu programs from $build/bin; file paths relative to the work folder ($work)."
    echo
    echo "| command | median s | min-max s | output size | command line |"
    echo "|---|---:|---:|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
)
echo "$block"
if [[ $write -eq 1 ]]; then
    res=$here/bench/RESULTS.md
    marker='<!-- CPU results: newest first; bench/bench_cpu.sh inserts below this line -->'
    grep -qF "$marker" "$res" || { echo "bench_cpu: marker line not found in $res; not written" >&2; exit 1; }
    tmp=$(mktemp)
    printf '%s\n' "$block" > "$work/block.md"
    awk -v m="$marker" -v f="$work/block.md" '{print} $0 == m {print ""; while ((getline l < f) > 0) print l}' "$res" > "$tmp"
    mv "$tmp" "$res"
    echo "bench_cpu: recorded in $res" >&2
fi
