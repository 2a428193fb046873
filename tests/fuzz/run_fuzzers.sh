#!/usr/bin/env bash
# run_fuzzers.sh [SECONDS] [TARGET...] -- builds the libFuzzer targets with
# clang (ASan + UBSan + coverage) in build-fuzz/ and runs each for SECONDS
# (default 20) from its seed corpus (tests/fuzz/corpus/<target>; new inputs
# go to build-fuzz/corpus/<target>).  Prints executions per target; exits
# non-zero if any target crashed, leaked or timed out (the reproducer is
# left in build-fuzz/artifacts/).  GG_FUZZ_BUILD picks another build folder,
# GG_FUZZ_JOBS the build's parallelism, GG_FUZZ_SEED libFuzzer's seed
# (default 1; 0 draws one at random, as the long runs of docs/reliability.md
# do).  With a fixed seed each target runs a fixed number of executions
# (about SECONDS on the 2-core development machine, from the rates below)
# instead of running for SECONDS: a run then repeats exactly on any machine,
# so CI cannot meet an input the development run did not (a time limit,
# 10 x SECONDS, only stops a hang).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
shift || true
build=${GG_FUZZ_BUILD:-build-fuzz}
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S . -B "$build" -DGG_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
    -DGG_WITH_CUDA=OFF -DGG_WITH_OPENCL=OFF -DGG_BUILD_TESTS=OFF >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=($(cd tests/fuzz && ls fuzz_*.c fuzz_*.cpp | sed 's/\.c.*$//'))
cmake --build "$build" -j"${GG_FUZZ_JOBS:-$(nproc)}" --target "${targets[@]}" >"$build/build.log" 2>&1 ||
    { tail -40 "$build/build.log"; exit 1; }
mkdir -p "$build/artifacts"
# executions per second on the development machine (one core each)
declare -A rate=([fuzz_app_options]=300 [fuzz_fmcw_nc]=25 [fuzz_gg_spec]=15000 [fuzz_gmtsar]=330
                 [fuzz_mrr2]=250 [fuzz_op_options]=18 [fuzz_prm]=2500 [fuzz_rpc]=1100 [fuzz_tiff_strips]=100000)
seed=${GG_FUZZ_SEED:-1}
status=0
for t in "${targets[@]}"; do
    mkdir -p "$build/corpus/$t"
    log="$build/$t.log"
    # GDAL keeps process-wide caches that LeakSanitizer would report at exit
    # (targets that open datasets through GDAL's drivers).
    # Their third-party parsers (libnetcdf, libxml via GDAL) also allocate
    # whatever size a corrupt header claims and handle a NULL return: make
    # absurd allocations return NULL as on a real system, rather than
    # reporting them as out-of-memory.
    leaks=1 alloc=""
    case $t in
        fuzz_gg_spec|fuzz_fmcw_nc|fuzz_rpc|fuzz_gmtsar)
            leaks=0 alloc=":allocator_may_return_null=1:max_allocation_size_mb=1024" ;;
    esac
    # the utilities' parsers print their usage and ERROR lines: close
    # stdout/stderr (libFuzzer and the sanitizers keep their own copy)
    runs=-1 limit=$secs
    # fixed seed: a fixed number of executions, whatever the machine's speed
    # (the time limit only guards against a hang)
    [[ $seed == 0 ]] || { runs=$(( ${rate[$t]:-1000} * secs )); limit=$(( secs * 10 )); }
    if ASAN_OPTIONS=detect_leaks=$leaks$alloc UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$build/bin/$t" -max_total_time="$limit" -runs="$runs" -seed="$seed" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=4096 -close_fd_mask=3 \
        -artifact_prefix="$build/artifacts/$t-" "$build/corpus/$t" "tests/fuzz/corpus/$t" \
        </dev/null >"$log" 2>&1; then
        execs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | awk '{print $2}')
        echo "$t: ${execs:-?} executions (seed $seed), no crash"
    else
        echo "$t: FAILED (see $log)"; tail -30 "$log"; status=1
    fi
done
exit $status
