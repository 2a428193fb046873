#!/usr/bin/env bash
# bench_xcorr_process.sh -- the whole `gdal_xcorr -mode gmtsar` process on
# the standard job (bench_xcorr.c's data: two 11304 x 9216 CInt16 SLCs, the
# secondary the primary shifted by (3, -2) px plus noise; 20 x 50 patches,
# xsearch = ysearch = 128, range interpolation 2), as a GMTSAR user runs it:
# process start, context creation, PRM parsing, reading from page cache,
# offsets, freq_xcorr.dat written.  bench_xcorr times the library call
# alone; this adds everything around it.
#
#   bench/bench_xcorr_process.sh BIN_DIR [DIR] [DEVICE]   (RUNS=3)
#
# BIN_DIR holds bench_xcorr and gdal_xcorr (a build's bin/); DIR the data
# (default /dev/shm); DEVICE cuda (default), cpu or opencl; SIZE="W H" for
# smaller images (smoke runs); XCORR=path runs another gdal_xcorr on the
# same data (a before/after comparison); GEN=0 reuses the data of an
# earlier KEEP=1 run; SEARCH=64 sets xsearch = ysearch (default 128).
# Prints each
# run's wall time, CPU time (user + sys) and peak RSS (/usr/bin/time -v when
# present, else bash's clock only) and the mean offsets of the last
# freq_xcorr.dat.
# MIT licence.
set -euo pipefail
bin=${1:?usage: bench_xcorr_process.sh BIN_DIR [DIR] [DEVICE]}
dir=${2:-/dev/shm}
dev=${3:-cuda}
runs=${RUNS:-3}
# SIZE="W H" makes smaller images (smoke runs); the standard job is the default
xcorr=${XCORR:-$bin/gdal_xcorr}
if [ "${GEN:-1}" != 0 ]; then
    "$bin/bench_xcorr" -genonly -dir "$dir" ${SIZE:+-size $SIZE} >/dev/null
fi
[ "${KEEP:-0}" = 1 ] || trap 'rm -f "$dir"/gg_bench_master.* "$dir"/gg_bench_aligned.* "$dir"/gg_freq_xcorr.dat' EXIT
cat "$dir"/gg_bench_master.SLC "$dir"/gg_bench_aligned.SLC >/dev/null   # page cache
args=(-mode gmtsar "$dir/gg_bench_master.PRM" "$dir/gg_bench_aligned.PRM" -nx 20 -ny 50
      -xsearch "${SEARCH:-128}" -ysearch "${SEARCH:-128}" -device "$dev" -q -o "$dir/gg_freq_xcorr.dat")
echo "$xcorr ${args[*]}"
for r in $(seq 0 "$runs"); do
    label=$([ "$r" = 0 ] && echo "warm-up" || echo "run $r")
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v "$xcorr" "${args[@]}" 2>"$dir/gg_time.txt"
        wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/gg_time.txt")
        rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/gg_time.txt")
        usr=$(sed -n 's/.*User time (seconds): //p' "$dir/gg_time.txt")
        sys=$(sed -n 's/.*System time (seconds): //p' "$dir/gg_time.txt")
        echo "$label: wall $wall, CPU $usr + $sys s, peak RSS $((rss / 1024)) MiB"
        grep -h "gdal_xcorr trace\|ERROR" "$dir/gg_time.txt" || true
        rm -f "$dir/gg_time.txt"
    else
        t0=$(date +%s.%N)
        "$xcorr" "${args[@]}"
        t1=$(date +%s.%N)
        echo "$label: wall $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') s (no /usr/bin/time: RSS not measured)"
    fi
done
awk '{n++; x+=$2; y+=$4; c+=$5} END {printf "%d patches, mean xoff %.3f yoff %.3f corr %.1f\n", n, x/n, y/n, c/n}' \
    "$dir/gg_freq_xcorr.dat"
