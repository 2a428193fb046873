#!/usr/bin/env bash
# bench_xcorr_memory.sh -- peak memory, wall and CPU time of whole
# gdal_xcorr processes on bench_xcorr.c's standard data (two 11304 x 9216
# CInt16 SLCs, the secondary the primary shifted by (3, -2) px plus noise),
# optionally beside another gdal_xcorr build and GMTSAR's own xcorr, all in
# the same call on the same files:
#   - GMTSAR mode, 20 x 50 patches, range interpolation 2, for each search
#     of SEARCHES (default "128 64");
#   - the NCC (quality) mode on 1000 windows (40 x 25, template 64 x 64,
#     search 32, skip 256 x 320), reading the same files through a GDAL raw
#     VRT.
#
#   bench/bench_xcorr_memory.sh BIN_DIR [DIR] [DEVICE]
#
# BIN_DIR holds bench_xcorr and gdal_xcorr (a build's bin/); DIR the data
# (default /dev/shm); DEVICE cpu (default), cuda or opencl.  Environment:
# RUNS (default 2) runs of each command after one warm-up; BEFORE=path of
# another gdal_xcorr run beside (a before/after comparison, outputs
# compared); PEER=path of GMTSAR's xcorr binary, run in DIR on the same
# PRMs (PEER_ENV, e.g. "OMP_NUM_THREADS=1", goes before it); SEARCHES;
# NCC=0 skips the NCC mode; GEN=0 reuses the data of an earlier KEEP=1 run.
# Each run prints wall time, CPU time (user + sys: the machine may be
# shared, so both are given) and peak RSS from /usr/bin/time (when present).
# MIT licence.
set -euo pipefail
bin=${1:?usage: bench_xcorr_memory.sh BIN_DIR [DIR] [DEVICE]}
dir=${2:-/dev/shm}
dev=${3:-cpu}
runs=${RUNS:-2}
searches=${SEARCHES:-128 64}
if [ "${GEN:-1}" != 0 ]; then
    "$bin/bench_xcorr" -genonly -dir "$dir" >/dev/null
fi
[ "${KEEP:-0}" = 1 ] || trap 'rm -f "$dir"/gg_bench_master.* "$dir"/gg_bench_aligned.* "$dir"/gg_mem_* "$dir"/freq_xcorr.dat' EXIT
cat "$dir"/gg_bench_master.SLC "$dir"/gg_bench_aligned.SLC >/dev/null   # page cache
W=$(sed -n 's/^num_rng_bins = //p' "$dir/gg_bench_master.PRM")
H=$(sed -n 's/^num_valid_az = //p' "$dir/gg_bench_master.PRM")

# one command RUNS + 1 times (the first a warm-up): label, then the command;
# without /usr/bin/time (the GPU machine may lack it) bash's time gives the
# times and the peak RSS is not measured (printed as -1)
timed() {
    local label=$1
    shift
    for r in $(seq 0 "$runs"); do
        if [ -x /usr/bin/time ]; then
            /usr/bin/time -f "%e %U %S %M" -o "$dir/gg_mem_time.txt" "$@" >/dev/null 2>"$dir/gg_mem_err.txt" ||
                { echo "$label: failed:"; cat "$dir/gg_mem_err.txt"; return 1; }
        else
            { TIMEFORMAT="%R %U %S -1024"; time "$@" >/dev/null 2>"$dir/gg_mem_err.txt"; } 2>"$dir/gg_mem_time.txt" ||
                { echo "$label: failed:"; cat "$dir/gg_mem_err.txt"; return 1; }
        fi
        read -r wall user sys rss <"$dir/gg_mem_time.txt"
        printf '%s %s: wall %.2f s, cpu %.2f s (user %.2f + sys %.2f), peak RSS %d MiB\n' \
            "$label" "$([ "$r" = 0 ] && echo warm-up || echo "run $r")" "$wall" \
            "$(awk -v a="$user" -v b="$sys" 'BEGIN {print a + b}')" "$user" "$sys" $((rss / 1024))
    done
}
mean_offsets() {
    awk '{n++; x+=$2; y+=$4; c+=$5} END {printf "%d patches, mean xoff %.3f yoff %.3f corr %.1f\n", n, x/n, y/n, c/n}' "$1"
}

echo "device $dev, $(nproc) cores, data ${W} x ${H} in $dir, $(date -u +%FT%TZ)"
for s in $searches; do
    args=(-mode gmtsar "$dir/gg_bench_master.PRM" "$dir/gg_bench_aligned.PRM" -nx 20 -ny 50
          -xsearch "$s" -ysearch "$s" -device "$dev" -q)
    echo "== GMTSAR mode, search $s: gdal_xcorr ${args[*]} -o ..."
    timed "gdal_xcorr (this build)" "$bin/gdal_xcorr" "${args[@]}" -o "$dir/gg_mem_after.dat"
    mean_offsets "$dir/gg_mem_after.dat"
    if [ -n "${BEFORE:-}" ]; then
        timed "gdal_xcorr (BEFORE)" "$BEFORE" "${args[@]}" -o "$dir/gg_mem_before.dat"
        if cmp -s "$dir/gg_mem_after.dat" "$dir/gg_mem_before.dat"; then
            echo "freq_xcorr.dat: identical to BEFORE's"
        else
            echo "freq_xcorr.dat: differs from BEFORE's in $(paste "$dir/gg_mem_after.dat" "$dir/gg_mem_before.dat" |
                awk '{for (i = 1; i <= 5; i++) if ($i != $(i + 5)) {n++; break}} END {print n + 0}') of 1000 rows"
        fi
    fi
    if [ -n "${PEER:-}" ]; then
        # GMTSAR's xcorr writes freq_xcorr.dat in the current folder
        (cd "$dir" && timed "GMTSAR xcorr ${PEER_ENV:-}" env ${PEER_ENV:-} "$PEER" gg_bench_master.PRM \
            gg_bench_aligned.PRM -nx 20 -ny 50 -xsearch "$s" -ysearch "$s")
        mean_offsets "$dir/freq_xcorr.dat"
    fi
done

if [ "${NCC:-1}" != 0 ]; then
    for f in master aligned; do
        cat >"$dir/gg_mem_$f.vrt" <<EOF
<VRTDataset rasterXSize="$W" rasterYSize="$H">
  <VRTRasterBand dataType="CInt16" band="1" subClass="VRTRawRasterBand">
    <SourceFilename relativetoVRT="1">gg_bench_$f.SLC</SourceFilename>
    <ImageOffset>0</ImageOffset><PixelOffset>4</PixelOffset><LineOffset>$((4 * W))</LineOffset>
    <ByteOrder>LSB</ByteOrder>
  </VRTRasterBand>
</VRTDataset>
EOF
    done
    nargs=(-window 64 64 -search 32 32 -skip 256 320 -count 40 25 -device "$dev" -q
           "$dir/gg_mem_master.vrt" "$dir/gg_mem_aligned.vrt")
    echo "== NCC mode, 1000 windows: gdal_xcorr ${nargs[*]} out.tif"
    timed "gdal_xcorr (this build)" "$bin/gdal_xcorr" "${nargs[@]}" "$dir/gg_mem_after.tif"
    if [ -n "${BEFORE:-}" ]; then
        timed "gdal_xcorr (BEFORE)" "$BEFORE" "${nargs[@]}" "$dir/gg_mem_before.tif"
        # the bands BEFORE has (this build may add bands after them)
        /usr/bin/python3 - "$dir/gg_mem_after.tif" "$dir/gg_mem_before.tif" <<'EOF' || true
import sys
from osgeo import gdal
import numpy as np
a, b = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
d = max(float(np.nanmax(np.abs(a.GetRasterBand(k).ReadAsArray() - b.GetRasterBand(k).ReadAsArray())))
        for k in range(1, b.RasterCount + 1))
print(f"NCC bands 1-{b.RasterCount}: max |this - BEFORE| = {d:g}")
EOF
    fi
fi
