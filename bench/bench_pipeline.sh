#!/usr/bin/env bash
# bench_pipeline.sh -- the image utilities end to end on large inputs (whole
# process, GeoTIFF in and out, page cache warm), beside their I/O floor
# (bench_io_floor: the same source windows read and an output of the same
# size and types written through the same pipeline, no device work), beside
# GDAL's own copy of similar bytes (gdal_translate), and optionally beside a
# second build of geogpu (before/after a change), runs interleaved.  On the
# GPU machine, from the repository root, with the bundle of
# scripts/pack_gpu_bundle.sh carried as .gdalrt:
#
#   bench/bench_pipeline.sh NEW_BUILD [BASE_BUILD] [WORK]
#
# NEW_BUILD / BASE_BUILD hold bin/ and lib/ (a build folder or a bundle);
# WORK (default /dev/shm/gg_pipeline) gets the inputs.  SIZE (default 8192)
# is the side of the square inputs, DEVICES (default "cuda cpu") the
# devices, RUNS (default 3) the timed runs of each command (the median is
# printed; the two builds' runs alternate).  Prints one table row per case:
# the median seconds of each build, of the floor and of the GDAL copy, the
# new build's time over the floor, and whether the two builds' outputs are
# byte-identical.
# MIT licence.
set -uo pipefail
new=$(cd "${1:?usage: bench_pipeline.sh NEW_BUILD [BASE_BUILD] [WORK]}" && pwd)
base=${2:-}
[[ -n $base ]] && base=$(cd "$base" && pwd)
work=${3:-/dev/shm/gg_pipeline}
size=${SIZE:-8192}
devices=${DEVICES:-cuda cpu}
runs=${RUNS:-3}
mkdir -p "$work"

# wall seconds of one run of a command (its output discarded), FAIL if it fails
once() {
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null 2>"$work/err.log" || { echo FAIL; sed -n 1,3p "$work/err.log" >&2; return; }
    e=$(date +%s.%N)
    awk -v a="$s" -v b="$e" 'BEGIN { print b - a }'
}

# the median of the numbers on stdin (FAIL if any run failed)
median() {
    local t
    t=$(sort -g)
    grep -q FAIL <<<"$t" && { echo FAIL; return; }
    sed -n "$(((runs + 1) / 2))p" <<<"$t" | xargs printf '%.2f'
}

# runs a utility of build $1 with LD_LIBRARY_PATH/GDAL_DRIVER_PATH of that build
with() {
    local b=$1
    shift
    LD_LIBRARY_PATH=$b/lib:${LD_LIBRARY_PATH:-} GDAL_DRIVER_PATH=$b/lib:$b/plugins GG_BACKEND_DIR=$b/lib "$b/bin/$@"
}

gen() { with "$new" gg_make_input "$@" >/dev/null; }
f32=$work/f32.tif c1=$work/c1.tif c2=$work/c2.tif
[[ -f $f32 ]] || gen -size "$size" -type Float32 -seed 1 "$f32"
[[ -f $c1 ]] || gen -size "$size" -type CFloat32 -seed 2 "$c1"
[[ -f $c2 ]] || gen -size "$size" -type CFloat32 -seed 3 "$c2"
q=$((size / 4))
stack=$work/stack.tif
[[ -f $stack ]] || gen -size "${q}x${q}" -type CFloat32 -bands 30 -seed 4 "$stack"

echo "inputs ${size}x${size} (stack ${q}x${q}x30 CFloat32), runs $runs, $(nproc) processors"
nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1
printf '| case | device | new s |%s floor s | new / floor | GDAL copy s | GDAL copy command |%s\n' \
    "${base:+ base s |}" "${base:+ same bytes |}"
printf '|---|---|---:|%s---:|---:|---:|---|%s\n' "${base:+---:|}" "${base:+---|}"

# wall seconds of one bench_io_floor process, as the utilities are timed
floor_once() {
    once with "$new" bench_io_floor "$@" "$work/floor.tif"
    rm -f "$work"/floor*.tif
}

# case name, GDAL copy arguments (input, output size, type), floor arguments
# (op, key=value..., inputs), utility + args
run_case() {
    local name=$1 copy=$2 floor=$3
    shift 3
    local gcopy gfloor i
    gcopy=$(for ((i = 0; i < runs; i++)); do once gdal_translate -q $copy "$work/copy.tif"; done | median)
    gfloor=$(for ((i = 0; i < runs; i++)); do floor_once $floor; done | median)
    for dev in $devices; do
        local tn tb="" same="" f
        # the two builds' runs interleaved, so that neither gains from the other's warm-up
        : >"$work/tn" ; : >"$work/tb"
        for ((i = 0; i < runs; i++)); do
            once with "$new" "$@" -device "$dev" "$work/new.tif" >>"$work/tn"
            [[ -n $base ]] && once with "$base" "$@" -device "$dev" "$work/base.tif" >>"$work/tb"
        done
        tn=$(median <"$work/tn")
        if [[ -n $base ]]; then
            tb=$(median <"$work/tb")
            same=yes
            for f in "$work"/new*.tif; do
                cmp -s "$f" "$work/base${f#"$work"/new}" || same=NO
            done
        fi
        printf '| %s | %s | %s |%s %s | %s | %s | `gdal_translate %s` |%s\n' "$name" "$dev" \
            "$tn" "${base:+ $tb |}" "$gfloor" \
            "$(awk -v a="$tn" -v b="$gfloor" 'BEGIN { if (b > 0 && a + 0 == a) printf "%.2f", a / b; else print "-" }')" \
            "$gcopy" "${copy//$work\//}" "${base:+ $same |}"
    done
    rm -f "$work"/new*.tif "$work"/base*.tif "$work/copy.tif"
}

run_case multilook_f32 "-outsize 25% 25% -r average $f32" "multilook looks=4x4 $f32" \
    gdal_multilook -q -looks 4 4 "$f32"
run_case multilook_c64 "-outsize 25% 25% -r average -ot Float32 $c1" "multilook looks=4x4 $c1" \
    gdal_multilook -q -looks 4 4 "$c1"
run_case rotate_f32 "$f32" "rotate angle=30 $f32" gdal_rotate -q -angle 30 "$f32"
run_case radnorm_f32 "$f32" "radnorm $f32" gdal_radnorm -q "$f32"
run_case insar_c64 "-b 1 -b 1 $c1" "coherence $c1 $c2" gdal_insar -q "$c1" "$c2"
run_case ptsel_c64 "-b 1 $stack" "ptsel window=11 $stack" gdal_ptsel -q -window 11 "$stack"
rm -rf "$work"
