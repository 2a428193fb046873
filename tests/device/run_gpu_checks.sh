#!/usr/bin/env bash
# run_gpu_checks.sh -- the checks and benchmarks of geogpu on the lent GPU
# machine (Ubuntu 24.04, CUDA, no GDAL), run from the repository root with
# the bundle of scripts/pack_gpu_bundle.sh carried as .gdalrt:
#
#     tests/device/run_gpu_checks.sh [options]
#
#   --devices LIST      devices to check (default cpu,cuda,opencl;
#                       env GG_CHECK_DEVICES).  opencl is dropped, with a
#                       notice, when no OpenCL device can be opened.
#   --bench-devices L   devices for bench_kernels (default: --devices)
#   --size N            end-to-end and benchmark image side (default 8192)
#   --reps N            timed runs of each utility (default 3; median)
#   --bench-reps N      timed runs of each kernel (default 20)
#   --bench-args "..."  more bench_kernels options (e.g. "-batch 10")
#   --sanitize          also run compute-sanitizer memcheck and racecheck over the C tests
#                       with GG_TEST_DEVICES=cuda (if compute-sanitizer exists)
#   --skip WHAT         comma list of tests,e2e,peers,bench to leave out
#   --bundle PATH       the carried env script (default .gdalrt/env.sh);
#                       "none": use a local build instead (see --build)
#   --build DIR         build dir for --bundle none (default build)
#   --out DIR           where logs go (default $OUT, else ./out)
#
# Env GG_CHECK_BUDGET (seconds, default 540): parts that would not finish
# within it are skipped and listed (the device tool kills a command at 600).
#
# Writes to the out dir: results.txt (everything that matters, also
# printed last), env.log, tests.log, sanitizer.log, e2e.log, bench.log --
# six files, inside the device tool's limit of eight.  Rasters go to
# $GG_CHECK_WORK (default /tmp/ggwork), never to the out dir.
# Exit status: 0 when every check passed, 1 otherwise.
#
# Dry run without a GPU (here, PoCL for OpenCL):
#     tests/device/run_gpu_checks.sh --devices cpu,opencl --size 2048 \
#         --bundle none --build build-tools --out /tmp/ggout
# MIT licence.
set -uo pipefail

devices=${GG_CHECK_DEVICES:-cpu,cuda,opencl}
bench_devices=""
size=8192
reps=3
bench_reps=20
bench_args=""
sanitize=0
skip=""
bundle=.gdalrt/env.sh
build=build
out=${OUT:-out}
while [[ $# -gt 0 ]]; do
    case $1 in
    --devices) devices=$2; shift ;;
    --bench-devices) bench_devices=$2; shift ;;
    --size) size=$2; shift ;;
    --reps) reps=$2; shift ;;
    --bench-reps) bench_reps=$2; shift ;;
    --bench-args) bench_args=$2; shift ;;
    --sanitize) sanitize=1 ;;
    --skip) skip=$2; shift ;;
    --bundle) bundle=$2; shift ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    -h | --help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "run_gpu_checks: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
skipped() { [[ ,$skip, == *,$1,* ]]; }
# The device tool stops a command at 600 s: parts that would not fit in
# what is left of GG_CHECK_BUDGET (default 540 s) are skipped, and said so.
budget=${GG_CHECK_BUDGET:-540}
not_run=()
enough() { # enough SECONDS WHAT
    if (( budget - SECONDS < $1 )); then
        not_run+=("$2"); say "SKIPPED for time ($((budget - SECONDS)) s of the budget left): $2"; return 1
    fi
}

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${GG_CHECK_WORK:-/tmp/ggwork}
mkdir -p "$work"
results=$out/results.txt
: > "$results"
failures=()
fail() { failures+=("$*"); say "FAIL: $*"; }
say() { echo "$*" | tee -a "$results"; }
section() { say ""; say "## $*"; say ""; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }  # no bc there

# ------------------------------------------------------------ environment
if [[ $bundle == none ]]; then
    [[ $build = /* ]] || build=$PWD/$build
    [[ -d $build/bin ]] || { echo "run_gpu_checks: no $build/bin" >&2; exit 2; }
    export GDAL_DRIVER_PATH=$build/lib GG_BACKEND_DIR=$build/lib
    GGRT_LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    ggbin=$build/bin
    ggrun() { LD_LIBRARY_PATH="$GGRT_LD_LIBRARY_PATH" PATH="$ggbin:$PATH" "$@"; }
else
    [[ -f $bundle ]] || { echo "run_gpu_checks: $bundle not found (carry .gdalrt; scripts/pack_gpu_bundle.sh makes it)" >&2; exit 2; }
    # shellcheck disable=SC1090
    . "$bundle" || { echo "run_gpu_checks: cannot set up the bundle" >&2; exit 2; }
    ggbin=$GGRT/bin
fi

{
    echo "# geogpu GPU checks"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm); $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null)"
    echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
    echo "repo: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | grep -q . && echo '(with uncommitted changes)')"
    echo "options: devices=$devices size=$size reps=$reps bench_reps=$bench_reps sanitize=$sanitize skip=${skip:-none} bundle=$bundle"
} | tee -a "$results"

{
    echo "== nvidia-smi -L"; nvidia-smi -L 2>&1 || echo "(nvidia-smi not available)"
    echo "== nvidia-smi query"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
        --format=csv 2>&1 || true
    echo "== nvcc"; nvcc --version 2>&1 | tail -2 || true
    echo "== bundle"; [[ -n ${GGRT:-} ]] && head -12 "$GGRT/MANIFEST.txt"
    echo "== unresolved libraries of the bundled programs (ldd)"
    for f in "$ggbin"/* "$GG_BACKEND_DIR"/*.so*; do
        [[ -f $f && ! -L $f ]] || continue
        ggrun ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|$(basename "$f"): |"
    done
    echo "(end)"
    echo "== OpenCL ICDs"; ls -l /etc/OpenCL/vendors 2>&1; cat /etc/OpenCL/vendors/*.icd 2>/dev/null; echo
    echo "== GDAL"; ggrun gdalinfo --version 2>&1; ggrun gdalinfo --formats 2>&1 | grep -E '^ *GG ' || echo "GG driver NOT registered"
} > "$out/env.log" 2>&1
say ""
gpus=$(nvidia-smi -L 2>/dev/null)
say "nvidia-smi -L: ${gpus:-(no NVIDIA GPU visible)}"
grep -A1 '^name,' "$out/env.log" | tail -1 | sed 's/^/gpu: /' | tee -a "$results"
say "gdal: $(sed -n '/^== GDAL/,$p' "$out/env.log" | sed -n 2p)"
grep -q '^ *GG -raster-' "$out/env.log" || fail "GDAL does not register the GG driver (gdal_GeoGPU.so; env.log)"
unresolved=$(sed -n '/^== unresolved/,/^(end)/p' "$out/env.log" | sed '1d;$d')
[[ -n $unresolved ]] && fail "unresolved libraries in the bundle: $(echo "$unresolved" | tr '\n' ';')"

# Devices geogpu sees, then each requested one opened (bench_kernels
# -probe says why one cannot start).  An opencl that cannot open is dropped
# with a notice (the NVIDIA OpenCL ICD may be absent there); any other is
# a failure, and dropped so that the rest still runs.
probe() { ggrun bench_kernels -probe "$1" 2>&1; }
section "devices geogpu sees"
say "$(ggrun bench_kernels -list 2>&1)"
say ""
keep=()
IFS=, read -r -a want <<<"$devices"
for d in "${want[@]}"; do
    p=$(probe "$d")
    if [[ $p != *": OK "* && ${d%%:*} == opencl ]]; then
        # NVIDIA's ICD library on disk but not registered: point the loader at it
        nvocl=$( (ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}';
                  ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null) | head -1)
        if [[ -n $nvocl ]]; then
            mkdir -p "$work/icd" && echo "$nvocl" > "$work/icd/nvidia.icd"
            export OCL_ICD_VENDORS=$work/icd OCL_ICD_FILENAMES=$nvocl
            p=$(probe "$d")
            [[ $p == *": OK "* ]] && say "note: NVIDIA OpenCL at $nvocl was not registered in /etc/OpenCL/vendors; used it through OCL_ICD_VENDORS"
        fi
    fi
    say "$p"
    if [[ $p == *": OK "* ]]; then
        keep+=("$d")
    elif [[ ${d%%:*} == opencl ]]; then
        say ""
        say "NOTICE: OpenCL device '$d' cannot be opened: the NVIDIA OpenCL ICD looks missing"
        say "        (/etc/OpenCL/vendors: $(ls /etc/OpenCL/vendors 2>/dev/null | tr '\n' ' ' || true)"
        say "        libnvidia-opencl.so.1: ${nvocl:-not found}).  Continuing WITHOUT opencl."
        say ""
    else
        fail "device $d cannot be opened: ${p#*UNAVAILABLE }"
    fi
done
devices=$(IFS=,; echo "${keep[*]}")
[[ -n $devices ]] || { fail "no device to check"; devices=cpu; }
[[ -z $bench_devices ]] && bench_devices=$devices
IFS=, read -r -a devs <<<"$devices"
say ""
say "checking devices: $devices"

# ------------------------------------------------------------ (a) C tests
if ! skipped tests; then
    section "C tests (GG_TEST_DEVICES=$devices)"
    : > "$out/tests.log"
    # test_ortho checks that the ortho kernel's block size reaches its maximum
    # theoretical occupancy by the CUDA rules: it needs the kernel's register
    # count (cuobjdump) and the device's compute capability
    GG_OCC_CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
    cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -1)
    GG_OCC_REGS=$([[ -n $cuobjdump ]] && "$cuobjdump" --dump-resource-usage "$GG_BACKEND_DIR/libgeogpu_cuda.so" 2>/dev/null |
        grep -A1 'gg_k_ortho' | grep -o 'REG:[0-9]*' | head -1 | cut -d: -f2)
    export GG_OCC_CC GG_OCC_REGS
    for t in test_runtime test_ops test_coherence test_ptsel test_faults test_xcorr test_fmcw test_coreg test_ortho; do
        if [[ ! -x $ggbin/$t ]]; then fail "$t not built/bundled"; continue; fi
        t0=$(now)
        GG_TEST_DEVICES=$devices ggrun "$t" >> "$out/tests.log" 2>&1
        rc=$?
        t1=$(now)
        line=$(grep -E "^$t: " "$out/tests.log" | tail -1)
        say "$(printf '%-14s rc=%d  %6.1f s  %s' "$t" "$rc" "$(elapsed "$t0" "$t1")" "${line:-no summary line}")"
        [[ $rc -eq 0 ]] || fail "$t (exit $rc; FAIL lines in tests.log)"
    done
    grep -m 20 '^FAIL' "$out/tests.log" | tee -a "$results"
fi

# ------------------------------------------------------------ (b) end to end
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# time_cmd CMD... : runs it reps times (bundle env); the median wall time
# goes to $tmed, the exit status of the last failing run to $trc
time_cmd() {
    local times=() t0 t1 rc r
    trc=0
    for ((r = 0; r < reps; r++)); do
        echo "+ $*" >> "$out/e2e.log"
        t0=$(now)
        ggrun "$@" > "$work/last.log" 2>&1
        rc=$?
        cat "$work/last.log" >> "$out/e2e.log"
        t1=$(now)
        [[ $rc -eq 0 ]] || trc=$rc
        times+=("$(elapsed "$t0" "$t1")")
    done
    tmed=$(printf '%s\n' "${times[@]}" | median)
}

if ! skipped e2e; then
    section "end to end: ${size}x${size}, wall clock (median of $reps runs, GeoTIFF in and out, page cache warm)"
    : > "$out/e2e.log"
    f32=$work/in_f32.tif c64=$work/in_c64.tif
    t0=$(now)
    ggrun gg_make_input -size "$size" -type Float32 -seed 11 -nodata -9999 -nodata-frac 0.001 "$f32" >> "$out/e2e.log" 2>&1 &&
        ggrun gg_make_input -size "$size" -type CFloat32 -seed 12 -nodata -9999 -nodata-frac 0.001 "$c64" >> "$out/e2e.log" 2>&1
    if [[ $? -ne 0 ]]; then
        fail "gg_make_input (see e2e.log)"
    else
        say "inputs: $(basename "$f32") Float32, $(basename "$c64") CFloat32, random, 0.1% nodata (-9999); made in $(elapsed "$t0" "$(now)") s"
        # a copy of the Float32 input whose geotransform is rotated by 30
        # degrees: gdalwarp to north-up then rotates the picture (the GDAL
        # peer of gdal_rotate), into the rotated picture's bounding box
        vrt=$work/in_f32_rot30.vrt
        ggrun gdal_translate -q -of VRT "$f32" "$vrt" >> "$out/e2e.log" 2>&1
        gt=$(awk 'BEGIN { a = 30 * atan2(0, -1) / 180; printf "500000, %.17g, %.17g, 4000000, %.17g, %.17g", 10 * cos(a), 10 * sin(a), 10 * sin(a), -10 * cos(a) }')
        sed -i "s|<GeoTransform>.*</GeoTransform>|<GeoTransform>$gt</GeoTransform>|" "$vrt"
        wsize=$(ggrun gdalwarp -q -overwrite -of VRT -r bilinear "$vrt" "$work/warp_size.vrt" >/dev/null 2>&1 &&
                ggrun gdalinfo "$work/warp_size.vrt" | sed -n 's/^Size is \([0-9]*\), \([0-9]*\)/\1 \2/p')
        # name | utility and options | input | compare options
        cases=(
            "multilook_f32|gdal_multilook -looks 4 4|$f32|-rel-tol 1e-5"
            "multilook_c64|gdal_multilook -looks 4 4|$c64|-rel-tol 1e-5"
            "rotate_f32|gdal_rotate -angle 30|$f32|-rel-tol 1e-4"
            "rotate_c64|gdal_rotate -angle 30|$c64|-rel-tol 1e-4"
            ${wsize:+"rotate_f32_warpsize|gdal_rotate -angle 30 -outsize $wsize|$f32|-rel-tol 1e-4"}
            "radnorm_f32|gdal_radnorm|$f32|-rel-tol 1e-5"
            "radnorm_q_f32|gdal_radnorm -coef 40 -levels 255|$f32|-rel-tol 1e-3 -abs-tol 1"
            "radnorm_c64|gdal_radnorm|$c64|-rel-tol 1e-5"
        )
        hdr="| case | command |"
        sep="|---|---|"
        for d in "${devs[@]}"; do hdr+=" $d s |"; sep+="---:|"; done
        for ((i = 0; i < ${#devs[@]}; i++)); do for ((j = i + 1; j < ${#devs[@]}; j++)); do
            hdr+=" ${devs[i]} vs ${devs[j]} |"; sep+="---|"
        done; done
        table=("$hdr" "$sep")
        for c in "${cases[@]}"; do
            IFS='|' read -r name cmd input cmpopt <<<"$c"
            enough 60 "end-to-end case $name" || continue
            rowtxt="| $name | \`$cmd\` |"
            # shellcheck disable=SC2206
            argv=($cmd)
            for d in "${devs[@]}"; do
                o=$work/${name}_$d.tif
                rm -f "$o"
                # -v: the log shows the device really used
                time_cmd "${argv[@]}" -v -device "$d" "$input" "$o"
                used=$(grep -m1 -oE ': device [a-z]+' "$work/last.log" | awk '{print $NF}')
                if [[ $trc -ne 0 || ! -s $o ]]; then
                    fail "$name on $d (exit $trc; e2e.log)"
                    rowtxt+=" FAIL |"
                elif [[ ${used:-?} != "${d%%:*}" ]]; then
                    fail "$name -device $d ran on '${used:-?}' (e2e.log)"
                    rowtxt+=" WRONG DEVICE |"
                else
                    rowtxt+=" $(printf '%.2f' "$tmed") |"
                fi
            done
            for ((i = 0; i < ${#devs[@]}; i++)); do for ((j = i + 1; j < ${#devs[@]}; j++)); do
                a=$work/${name}_${devs[i]}.tif b=$work/${name}_${devs[j]}.tif
                if [[ -s $a && -s $b ]]; then
                    # shellcheck disable=SC2086
                    res=$(ggrun gg_compare $cmpopt "$a" "$b" 2>&1)
                    rc=$?
                    echo "compare $name ${devs[i]} ${devs[j]}: $res" >> "$out/e2e.log"
                    [[ $rc -eq 0 ]] || fail "$name: ${devs[i]} and ${devs[j]} differ: $res"
                    rowtxt+=" $(sed -E 's/valid=[0-9]+ nodata=[0-9]+ //; s/mask_diff=/mask /; s/max_abs=/max /; s/rel_l2=/rel /' <<<"$res") |"
                else
                    rowtxt+=" - |"
                fi
            done; done
            table+=("$rowtxt")
        done
        printf '%s\n' "${table[@]}" | tee -a "$results"
        say ""
        say "compare: relative L2 over pixels valid in both, max abs difference, pixels whose nodata mask differs (must be 0)"

        # The nearest GDAL equivalents on the same machine (peer figures
        # for bench/RESULTS.md); timings only, plus one consistency check.
        if ! skipped peers && enough 60 "GDAL peers"; then
            section "GDAL peers on this machine (same inputs, median of $reps runs)"
            peers=(
                "gdal_translate -outsize 25% 25% -r average (vs gdal_multilook -looks 4 4, Float32)|gdal_translate -q -outsize 25% 25% -r average $f32 $work/peer_ml.tif"
                "gdalwarp -r bilinear, 30 deg rotated geotransform, output ${wsize/ /x} (vs gdal_rotate -angle 30 [-outsize $wsize])|gdalwarp -q -overwrite -r bilinear $vrt $work/peer_rot.tif"
                "gdalwarp -r bilinear -multi -wo NUM_THREADS=ALL_CPUS (same)|gdalwarp -q -overwrite -r bilinear -multi -wo NUM_THREADS=ALL_CPUS $vrt $work/peer_rot_mt.tif"
            )
            say "| GDAL command | s |"
            say "|---|---:|"
            for p in "${peers[@]}"; do
                IFS='|' read -r label cmd <<<"$p"
                # shellcheck disable=SC2086
                time_cmd $cmd
                [[ $trc -eq 0 ]] || fail "peer: $label (exit $trc)"
                say "| $label | $(printf '%.2f' "$tmed") |"
            done
            if [[ -s $work/peer_ml.tif && -s $work/multilook_f32_${devs[0]}.tif ]]; then
                say ""
                say "gdal_translate -r average vs gdal_multilook (${devs[0]}), info only: $(ggrun gg_compare "$work/peer_ml.tif" "$work/multilook_f32_${devs[0]}.tif" 2>&1)"
            fi
        fi
    fi
fi

# ------------------------------------------------------------ (c) kernels
if ! skipped bench && enough 60 "kernel benchmark"; then
    section "kernel benchmark (bench_kernels -size $size -reps $bench_reps $bench_args $bench_devices)"
    # shellcheck disable=SC2086
    ggrun bench_kernels -size "$size" -reps "$bench_reps" $bench_args -o "$work/bench.md" \
        "$bench_devices" > "$out/bench.log" 2>&1
    rc=$?
    if [[ -s $work/bench.md ]]; then cat "$work/bench.md" >> "$results"; cat "$work/bench.md"; fi
    grep '^FAIL' "$out/bench.log" | tee -a "$results"
    [[ $rc -eq 0 ]] || fail "bench_kernels (exit $rc; bench.log)"
fi

# ------------------------------------------------------------ (d) sanitizer
# last: the slowest and optional part
if [[ $sanitize -eq 1 ]] && ! skipped tests && enough 120 "compute-sanitizer"; then
    section "compute-sanitizer memcheck + racecheck (GG_TEST_DEVICES=cuda)"
    : > "$out/sanitizer.log"
    csan=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
               /usr/local/cuda/compute-sanitizer/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
    if [[ -z $csan ]]; then
        say "compute-sanitizer: not found, skipped"
    elif [[ ,$devices, != *,cuda,* ]]; then
        say "compute-sanitizer: no cuda device, skipped"
    else
        for tool in memcheck racecheck; do
            for t in test_runtime test_ops test_coherence test_ptsel test_xcorr test_fmcw test_coreg test_ortho; do
                [[ -x $ggbin/$t ]] || continue
                # compute-sanitizer keeps the machine's own libraries; only
                # the test gets the bundle's (through env)
                "$csan" --tool "$tool" --error-exitcode 99 \
                    env LD_LIBRARY_PATH="$GGRT_LD_LIBRARY_PATH" GG_TEST_DEVICES=cuda "$ggbin/$t" \
                    >> "$out/sanitizer.log" 2>&1
                rc=$?
                say "$(printf '%-9s %-14s rc=%d  %s' "$tool" "$t" "$rc" "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer.log" | tail -1)")"
                [[ $rc -eq 0 ]] || fail "compute-sanitizer $tool $t (exit $rc; sanitizer.log)"
            done
        done
    fi
fi

# ------------------------------------------------------------ verdict
section "verdict"
[[ ${#not_run[@]} -gt 0 ]] && say "not run for lack of time (rerun with --skip for the parts done): ${not_run[*]}"
if [[ ${#failures[@]} -eq 0 ]]; then
    if [[ ${#not_run[@]} -gt 0 ]]; then say "ALL CHECKS THAT RAN PASSED ($devices); some parts were not run (above)"
    else say "ALL CHECKS PASSED ($devices)"; fi
    exit 0
fi
say "${#failures[@]} FAILURE(S):"
for f in "${failures[@]}"; do say "  - $f"; done
exit 1
