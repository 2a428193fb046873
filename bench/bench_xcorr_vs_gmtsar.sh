#!/usr/bin/env bash
# bench_xcorr_vs_gmtsar.sh -- GMTSAR's own xcorr beside `gdal_xcorr -mode
# gmtsar -device cpu` on the standard job (bench_xcorr.c's data: two
# 11304 x 9216 CInt16 SLCs, the secondary the primary shifted by (3, -2) px
# plus noise; 20 x 50 patches, xsearch = ysearch = S, range interpolation 2,
# correlation interpolation 16: both programs' defaults), whole processes
# pinned to the same cores.
#
#   bench/bench_xcorr_vs_gmtsar.sh GMTSAR_XCORR GG_BIN_DIR [DIR] [CORES]
#
# GMTSAR_XCORR: GMTSAR's xcorr (or the xcorr-peer wrapper of
# pack_gmtsar_peer.sh); GG_BIN_DIR holds bench_xcorr and gdal_xcorr; DIR the
# data and outputs (default /dev/shm/gg_vs_gmtsar); CORES a taskset list
# (default: every core this shell may use).  Environment: RUNS (default 2) timed
# runs of each variant; WARMUP=full (default: one untimed run of the same
# job first), small (an untimed 2 x 1-patch job: loads the binary, the
# libraries and the page cache without the full cost) or 0; SEARCHES
# (default "64 128"); VARIANTS (default "gmtsar-default gmtsar-1thread
# geogpu geogpu-passive"); SIZE="W H" smaller images (smoke runs);
# GEN=0 reuses the data of an earlier KEEP=1 run; FFTW_SHIM the
# libfftw_nthreads_shim.so to use (default: next to GMTSAR_XCORR, in ../lib,
# or built here from fftw_nthreads_shim.c).
#
# The variants:
#   gmtsar-default  xcorr as it is: GMT plans FFTW with as many threads as
#                   the machine has processors (the affinity mask is not
#                   consulted), which for xcorr's small FFTs is slower;
#   gmtsar-1thread  xcorr with FFTW planned on one thread (LD_PRELOAD of
#                   fftw_nthreads_shim.c; GMT has no setting for it);
#   gmtsar-kissfft  (not in the default list) xcorr with GMT's own Kiss FFT
#                   (GMT_FFT = kissfft in a gmt.conf of its working folder):
#                   one thread, and no FFTW plan made for every call;
#   geogpu          gdal_xcorr -mode gmtsar -device cpu (OpenMP);
#   geogpu-passive  the same with OMP_WAIT_POLICY=passive.
# Each run prints wall time, CPU time (user + sys: the robust figure on a
# loaded machine) and peak RSS (/usr/bin/time; without it bash's clock and
# no RSS).  Then the medians, the ratios GMTSAR / geogpu, and the agreement
# of the freq_xcorr.dat files row by row (share of patches with identical
# offsets, max |difference|).
# MIT licence.
set -euo pipefail
peer=${1:?usage: bench_xcorr_vs_gmtsar.sh GMTSAR_XCORR GG_BIN_DIR [DIR] [CORES]}
bin=${2:?usage: bench_xcorr_vs_gmtsar.sh GMTSAR_XCORR GG_BIN_DIR [DIR] [CORES]}
dir=${3:-/dev/shm/gg_vs_gmtsar}
ncpu=$(nproc --all 2>/dev/null || nproc)
# default: the cores this shell may run on (a container may hold fewer than the host has)
cores=${4:-$(taskset -pc $$ 2>/dev/null | sed 's/.*: //' || echo "0-$((ncpu - 1))")}
runs=${RUNS:-2}
warmup=${WARMUP:-full}
searches=${SEARCHES:-64 128}
variants=${VARIANTS:-gmtsar-default gmtsar-1thread geogpu geogpu-passive}
here=$(cd "$(dirname "$0")" && pwd)
peer=$(cd "$(dirname "$peer")" && pwd)/$(basename "$peer")
bin=$(cd "$bin" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)      # the PRMs name their SLCs by this path

if command -v taskset >/dev/null; then
    pin=(taskset -c "$cores")
else
    pin=()
    echo "note: no taskset here, processes not pinned"
fi

# the LD_PRELOAD library for the one-thread variant
shim=${FFTW_SHIM:-}
if [ -z "$shim" ] && [[ " $variants " == *" gmtsar-1thread "* ]]; then
    for c in "$(dirname "$peer")/libfftw_nthreads_shim.so" "$(dirname "$peer")/../lib/libfftw_nthreads_shim.so"; do
        [ -f "$c" ] && { shim=$(cd "$(dirname "$c")" && pwd)/$(basename "$c"); break; }
    done
    if [ -z "$shim" ]; then
        cc -O2 -shared -fPIC -o "$dir/libfftw_nthreads_shim.so" "$here/fftw_nthreads_shim.c" -ldl
        shim=$dir/libfftw_nthreads_shim.so
    fi
fi

if [ "${GEN:-1}" != 0 ]; then
    "$bin/bench_xcorr" -genonly -dir "$dir" ${SIZE:+-size $SIZE} >/dev/null
fi
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"/gg_bench_master.* "$dir"/gg_bench_aligned.* "$dir"/vs_*' EXIT
cat "$dir"/gg_bench_master.SLC "$dir"/gg_bench_aligned.SLC >/dev/null   # page cache
W=$(sed -n 's/^num_rng_bins = //p' "$dir/gg_bench_master.PRM")
H=$(sed -n 's/^num_valid_az = //p' "$dir/gg_bench_master.PRM")

echo "== $(date -u +%FT%TZ), $(uname -n): $ncpu processors ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), pinned to cores $cores"
echo "== load before: $(uptime)"
echo "== data ${W} x ${H} CInt16 in $dir; $runs timed run(s) per variant, warm-up: $warmup"
echo "== GMTSAR: $peer${shim:+ (one-thread shim: $shim)}"
echo "== geogpu: $bin/gdal_xcorr"

# the command of one variant for search $1 and patches $2 x $3; writes into
# the variant's folder (xcorr writes freq_xcorr.dat in its working folder)
variant_cmd() {
    local v=$1 s=$2 nx=$3 ny=$4 out=$dir/vs_$1
    local job=("$dir/gg_bench_master.PRM" "$dir/gg_bench_aligned.PRM" -nx "$nx" -ny "$ny" -xsearch "$s" -ysearch "$s")
    case $v in
        gmtsar-default) cmd=(env -C "$out" "${pin[@]}" "$peer" "${job[@]}") ;;
        gmtsar-1thread) cmd=(env -C "$out" LD_PRELOAD="$shim" FFTW_SHIM_NTHREADS=1 FFTW_SHIM_VERBOSE=1
                             "${pin[@]}" "$peer" "${job[@]}") ;;
        gmtsar-kissfft) printf 'GMT_FFT = kissfft\n' >"$out/gmt.conf"
                        cmd=(env -C "$out" "${pin[@]}" "$peer" "${job[@]}") ;;
        geogpu) cmd=("${pin[@]}" "$bin/gdal_xcorr" -mode gmtsar "${job[@]}" -device cpu -q -o "$out/freq_xcorr.dat") ;;
        geogpu-passive) cmd=(env OMP_WAIT_POLICY=passive "${pin[@]}" "$bin/gdal_xcorr" -mode gmtsar "${job[@]}"
                             -device cpu -q -o "$out/freq_xcorr.dat") ;;
        *) echo "unknown variant $v" >&2; exit 2 ;;
    esac
}

# one timed invocation: prints "wall user sys rss_kib" into $dir/vs_time.txt
timed_once() {
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%e %U %S %M" -o "$dir/vs_time.txt" "$@" >"$dir/vs_out.txt" 2>"$dir/vs_err.txt"
    else
        { TIMEFORMAT="%R %U %S -1"; time "$@" >"$dir/vs_out.txt" 2>"$dir/vs_err.txt"; } 2>"$dir/vs_time.txt"
    fi
}

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# rows of two freq_xcorr.dat files: same locations, share with identical
# offsets (as written, 3 decimals), largest offset and correlation differences
compare() {
    paste "$1" "$2" | awk -v a="$3" -v b="$4" '
        function abs(x) { return x < 0 ? -x : x }
        { n++
          if ($1 != $6 || $3 != $8) loc++
          if ($2 == $7 && $4 == $9) same++
          if ($2 == $7) sx++
          if ($4 == $9) sy++
          if (abs($2 - $7) > dx) dx = abs($2 - $7)
          if (abs($4 - $9) > dy) dy = abs($4 - $9)
          if (abs($5 - $10) > dc) dc = abs($5 - $10) }
        END { printf "  %s vs %s: %d rows, %d with other locations; identical offsets in %d (%.1f %%; x %.1f %%, y %.1f %%); max |dx| %.3f px, max |dy| %.3f px, max |dcorr| %.2f\n",
                     a, b, n, loc, same, 100 * same / n, 100 * sx / n, 100 * sy / n, dx, dy, dc }'
    [ "$(wc -l <"$1")" = "$(wc -l <"$2")" ] || echo "  (row counts differ: $(wc -l <"$1") / $(wc -l <"$2"))"
}

for s in $searches; do
    echo
    echo "==== search $s (xsearch = ysearch = $s, -nx 20 -ny 50)"
    variant_cmd geogpu "$s" 20 50
    echo "  geogpu: ${cmd[*]}"
    variant_cmd gmtsar-default "$s" 20 50
    echo "  GMTSAR: ${cmd[*]}"
    declare -A wall_med=() cpu_med=() rss_max=()
    for v in $variants; do
        mkdir -p "$dir/vs_$v"
        rm -f "$dir/vs_$v/freq_xcorr.dat"
        if [ "$warmup" = full ] || [ "$warmup" = small ]; then
            if [ "$warmup" = full ]; then variant_cmd "$v" "$s" 20 50; else variant_cmd "$v" "$s" 2 1; fi
            timed_once "${cmd[@]}" || { echo "  $v warm-up failed:"; cat "$dir/vs_err.txt"; exit 1; }
            grep -h "fftw shim" "$dir/vs_err.txt" | head -1 | sed "s/^/  $v: /" || true
        fi
        variant_cmd "$v" "$s" 20 50
        walls=() cpus=() rss=0
        for r in $(seq 1 "$runs"); do
            timed_once "${cmd[@]}" || { echo "  $v failed:"; cat "$dir/vs_err.txt"; exit 1; }
            [ "$warmup" != 0 ] || [ "$r" != 1 ] || grep -h "fftw shim" "$dir/vs_err.txt" | head -1 | sed "s/^/  $v: /" || true
            read -r w u sy m <"$dir/vs_time.txt"
            c=$(awk -v a="$u" -v b="$sy" 'BEGIN {printf "%.2f", a + b}')
            printf '  %-15s run %d: wall %7.2f s, cpu %7.2f s (user %.2f + sys %.2f), peak RSS %s MiB\n' \
                "$v" "$r" "$w" "$c" "$u" "$sy" "$([ "$m" -ge 0 ] && echo $((m / 1024)) || echo '?')"
            walls+=("$w") cpus+=("$c")
            [ "$m" -gt "$rss" ] && rss=$m
        done
        wall_med[$v]=$(printf '%s\n' "${walls[@]}" | median)
        cpu_med[$v]=$(printf '%s\n' "${cpus[@]}" | median)
        rss_max[$v]=$([ -x /usr/bin/time ] && echo $((rss / 1024)) || echo '?')
    done
    echo "  -- medians (search $s):"
    for v in $variants; do
        printf '  %-15s wall %7.2f s, cpu %7.2f s, peak RSS %s MiB\n' "$v" "${wall_med[$v]}" "${cpu_med[$v]}" "${rss_max[$v]}"
    done
    echo "  -- GMTSAR / geogpu (wall; cpu):"
    for g in $variants; do
        [[ $g == geogpu* ]] || continue
        for p in $variants; do
            [[ $p == gmtsar* ]] || continue
            awk -v p="$p" -v g="$g" -v pw="${wall_med[$p]}" -v gw="${wall_med[$g]}" -v pc="${cpu_med[$p]}" -v gc="${cpu_med[$g]}" \
                'BEGIN {printf "  %-15s / %-15s %6.2fx wall; %6.2fx cpu\n", p, g, pw / gw, pc / gc}'
        done
    done
    echo "  -- offsets:"
    set -- $variants
    ref=$1
    for v in $variants; do [[ $v == gmtsar* ]] && { ref=$v; [ "$v" = gmtsar-1thread ] && break; }; done
    for v in $variants; do
        [ "$v" = "$ref" ] || compare "$dir/vs_$ref/freq_xcorr.dat" "$dir/vs_$v/freq_xcorr.dat" "$ref" "$v"
    done
    unset wall_med cpu_med rss_max
done
echo
echo "== load after: $(uptime)"
