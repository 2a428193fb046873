#!/usr/bin/env bash
# pack_gpu_bundle.sh -- packs a self-contained GDAL + geogpu runtime for the
# lent GPU machine (Ubuntu 24.04, no GDAL there).
#
# Run here (Debian bookworm) after building:
#     scripts/pack_gpu_bundle.sh [BUILD_DIR]        (default: build)
# Output (git-ignored, carry it with the device call):
#     .gdalrt/bundle.tar.xz   the runtime, unpacked there to /tmp/ggrt
#     .gdalrt/env.sh          source it there: unpacks once, exports the env
#     .gdalrt/MANIFEST.txt    what was packed, with sizes
#
# What goes in: our build's binaries and libraries, the shared-library
# closure (ldd) of those and of Debian's libgdal.so.32, proj.db and
# gdal-data.  What stays out: glibc (Ubuntu 24.04's is newer, and bookworm
# binaries run on a newer glibc, not the reverse), and everything the GPU
# machine must provide itself -- the CUDA driver, cuFFT, the OpenCL ICD
# loader and NVIDIA's libraries -- because a copy from here would not
# match its driver.  libstdc++/libgcc_s/libgomp go into lib/compat, used
# only where the machine lacks them (its newer ones must win otherwise).
# A copy of bookworm's OpenCL ICD loader goes into lib/opencl, used only
# where the machine has no libOpenCL.so.1 at all.
#
# Env: GG_BUNDLE_MAX_MB (default 60) -- refuse a bundle larger than this;
#      GG_BUNDLE_XZ (default "-9 -T0") -- xz options;
#      GG_BUNDLE_ALLOW_PARTIAL=1 -- pack even when programs the device
#      checks need are missing from the build.
# MIT licence.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build="$here/$build"
out="$here/.gdalrt"
max_mb=${GG_BUNDLE_MAX_MB:-60}
xzopt=${GG_BUNDLE_XZ:--9 -T0}
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libgdal=/usr/lib/$multiarch/libgdal.so.32

die() { echo "pack_gpu_bundle: $*" >&2; exit 1; }
[[ -d $build/bin || -d $build/lib ]] || die "no bin/ or lib/ in build dir '$build' (build first)"
[[ -e $libgdal ]] || die "$libgdal not found (apt-get install libgdal32)"
command -v xz >/dev/null || die "xz not found"

stage=$(mktemp -d /tmp/ggbundle.XXXXXX)
trap 'rm -rf "$stage"' EXIT
root="$stage/ggrt"
mkdir -p "$root"/{bin,lib/compat,lib/opencl,plugins,share/proj,share/gdal}

is_elf() { [[ -f $1 ]] && [[ $(head -c4 "$1" | od -An -c | tr -d ' ') == '177ELF' ]]; }

# ------------------------------------------------------------ our build
roots=()
n_ours=0
for f in "$build"/bin/*; do
    is_elf "$f" && [[ -x $f ]] || continue
    cp -p "$f" "$root/bin/"
    roots+=("$f"); n_ours=$((n_ours + 1))
done
# libgeogpu*.so* (keep the soname symlinks as links) and the GDAL plugin,
# wherever the build put it
while IFS= read -r -d '' f; do
    case $(basename "$f") in
    gdal_*.so) cp -p "$f" "$root/plugins/"; roots+=("$f"); n_ours=$((n_ours + 1)) ;;
    *) cp -P "$f" "$root/lib/"; [[ -L $f ]] || { roots+=("$f"); n_ours=$((n_ours + 1)); } ;;
    esac
done < <(find "$build" \( -path "$build/CMakeFiles" -prune \) -o \
              \( -name 'libgeogpu*.so*' -o -name 'gdal_GeoGPU.so' \) \( -type f -o -type l \) -print0)
[[ $n_ours -gt 0 ]] || die "nothing built in $build"
# A device run costs scarce GPU time: refuse a bundle that lacks what
# tests/device/run_gpu_checks.sh needs (GG_BUNDLE_ALLOW_PARTIAL=1 packs anyway).
need=(bin/gdal_multilook bin/gdal_rotate bin/gdal_radnorm bin/test_runtime bin/test_ops
      bin/bench_kernels bin/gg_make_input bin/gg_compare bin/gdal_fmcw bin/test_fmcw bin/bench_fmcw bin/gdal_coreg bin/gdal_xcorr bin/gdal_ortho bin/test_ortho
      lib/libgeogpu.so.0 lib/libgeogpu_cuda.so lib/libgeogpu_opencl.so plugins/gdal_GeoGPU.so)
lacking=()
for f in "${need[@]}"; do [[ -e $root/$f ]] || lacking+=("$f"); done
if [[ ${#lacking[@]} -gt 0 ]]; then
    msg="not in $build: ${lacking[*]} (configure with -DGG_WITH_CUDA=ON -DGG_WITH_OPENCL=ON -DGG_WITH_GDAL=ON, with bench/ added, and build all)"
    [[ ${GG_BUNDLE_ALLOW_PARTIAL:-0} == 1 ]] || die "$msg; GG_BUNDLE_ALLOW_PARTIAL=1 packs anyway"
    echo "pack_gpu_bundle: warning: $msg" >&2
fi

# A few stock GDAL programs, for inspecting outputs there.
for p in gdalinfo gdal_translate gdalwarp gdallocationinfo; do
    if [[ -x /usr/bin/$p ]]; then cp -p "/usr/bin/$p" "$root/bin/"; roots+=("/usr/bin/$p"); fi
done
roots+=("$libgdal")
cp -p "$(readlink -f "$libgdal")" "$root/lib/libgdal.so.32"

# ------------------------------------------------------------ the closure
# Excluded: glibc itself, and the libraries that must come from the GPU
# machine's driver / toolkit.
glibc_re='^(libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libthread_db|libnss_[a-z]+|ld-linux-x86-64)\.so'
gpu_re='^(libcuda|libcufft|libcufftw|libcudart|libnvrtc|libnvJitLink|libOpenCL|libnvidia-|libnvcuvid|libnvoptix)'
compat_re='^(libstdc\+\+|libgcc_s|libgomp)\.so'
declare -A seen=()
missing=()
for r in "${roots[@]}"; do
    # lines "name => /path (addr)" or "/path (addr)" or "name => not found"
    while read -r name arrow path _; do
        [[ $arrow == "=>" ]] || continue
        if [[ $path == not ]]; then
            [[ $name =~ $gpu_re ]] || missing+=("$name (needed by $(basename "$r"))")
            continue
        fi
        [[ $name =~ $glibc_re || $name =~ $gpu_re ]] && continue
        case $path in "$build"/*) continue ;; esac   # ours, already copied
        [[ -n ${seen[$name]:-} ]] && continue
        seen[$name]=$path
    done < <(ldd "$r" 2>/dev/null || true)
done
n_closure=0
for name in "${!seen[@]}"; do
    src=$(readlink -f "${seen[$name]}")
    if [[ $name =~ $compat_re ]]; then dst="$root/lib/compat/$name"; else dst="$root/lib/$name"; fi
    [[ -e $dst ]] || { cp -p "$src" "$dst"; n_closure=$((n_closure + 1)); }
done
if [[ ${#missing[@]} -gt 0 ]]; then
    printf 'pack_gpu_bundle: warning: unresolved here: %s\n' "${missing[@]}" >&2
fi

# Fallback OpenCL ICD loader (only used there if the machine has none).
ocl=$(ldconfig -p | awk '/libOpenCL\.so\.1 .*x86-64/ {print $NF; exit}')
[[ -n $ocl ]] && cp -p "$(readlink -f "$ocl")" "$root/lib/opencl/libOpenCL.so.1"

# ------------------------------------------------------------ data files
projdb=""
for d in "${PROJ_DATA:-}" "${PROJ_LIB:-}" /usr/share/proj; do
    [[ -n $d && -f $d/proj.db ]] && { projdb=$d; break; }
done
[[ -n $projdb ]] || die "proj.db not found (PROJ_DATA)"
cp -p "$projdb/proj.db" "$root/share/proj/"
[[ -f $projdb/proj.ini ]] && cp -p "$projdb/proj.ini" "$root/share/proj/"
gdaldata=${GDAL_DATA:-$(gdal-config --datadir 2>/dev/null || echo /usr/share/gdal)}
[[ -d $gdaldata ]] || die "gdal-data not found (GDAL_DATA)"
cp -pr "$gdaldata"/. "$root/share/gdal/"

# ------------------------------------------------------------ env script
cat > "$root/env.sh" <<'EOF'
# Source this (bash) on the GPU machine: exports what the bundled
# programs need.  It deliberately does not touch PATH/LD_LIBRARY_PATH of
# the calling shell unless GGRT_GLOBAL=1: use the function ggrun to run a
# bundled program, so that the machine's own tools (nvidia-smi,
# compute-sanitizer, python3) keep their own libraries.
GGRT=${GGRT:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
export GGRT
_gg_lp="$GGRT/lib"
# lib/compat only where the machine lacks the library (its own are newer)
for _gg_l in libstdc++.so.6 libgcc_s.so.1 libgomp.so.1; do
    if ! ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$_gg_l "; then
        _gg_lp="$_gg_lp:$GGRT/lib/compat"; break
    fi
done
# Folders where a CUDA toolkit or its pip wheels keep their libraries
_gg_cudadirs="/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib
  $(ls -d /usr/local/cuda-*/lib* /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib \
          /usr/local/lib/python3*/dist-packages/nvidia/*/lib 2>/dev/null)"
# The machine's OpenCL loader, else the bundled one
if ! ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so\.1 '; then
    _gg_ocl=""
    for _gg_d in $_gg_cudadirs; do
        [ -e "$_gg_d/libOpenCL.so.1" ] && { _gg_ocl=$_gg_d; break; }
    done
    _gg_lp="$_gg_lp:${_gg_ocl:-$GGRT/lib/opencl}"
fi
# cuFFT (libcufft.so.12 for CUDA 13) from the machine when the loader does
# not know it
if ! ldconfig -p 2>/dev/null | grep -q 'libcufft\.so\.12 '; then
    for _gg_d in $_gg_cudadirs; do
        [ -e "$_gg_d/libcufft.so.12" ] && { _gg_lp="$_gg_lp:$_gg_d"; break; }
    done
fi
export GGRT_LD_LIBRARY_PATH="$_gg_lp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PROJ_DATA="$GGRT/share/proj" PROJ_LIB="$GGRT/share/proj"
export GDAL_DATA="$GGRT/share/gdal"
export GDAL_DRIVER_PATH="$GGRT/plugins"
export GG_BACKEND_DIR="$GGRT/lib"
unset _gg_lp _gg_l _gg_d _gg_ocl _gg_cudadirs
ggrun() { LD_LIBRARY_PATH="$GGRT_LD_LIBRARY_PATH" PATH="$GGRT/bin:$PATH" "$@"; }
if [ "${GGRT_GLOBAL:-0}" = 1 ]; then
    export LD_LIBRARY_PATH="$GGRT_LD_LIBRARY_PATH" PATH="$GGRT/bin:$PATH"
fi
EOF

# ------------------------------------------------------------ measure, pack
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
dirbytes() { du -sb "$1" | cut -f1; }
{
    echo "geogpu GPU-machine bundle, packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME")"
    echo "build dir: $build ($(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo no-git))"
    echo "gdal: $(gdal-config --version 2>/dev/null || echo '?')  ($libgdal)"
    echo
    for d in bin lib lib/compat lib/opencl plugins share/proj share/gdal; do
        printf '%-12s %8s MiB  %4d files\n' "$d" "$(mb "$(dirbytes "$root/$d")")" \
            "$(find "$root/$d" -maxdepth 1 \( -type f -o -type l \) | wc -l)"
    done
    echo
    echo "files (bytes):"
    (cd "$root" && find . \( -type f -o -type l \) ! -path './share/gdal/*' -printf '%s %p\n' | sort -k2)
} > "$stage/MANIFEST.txt"
cp "$stage/MANIFEST.txt" "$root/MANIFEST.txt"

mkdir -p "$out"
rm -f "$out/bundle.tar.xz.tmp"
# shellcheck disable=SC2086
tar -C "$stage" -cf - ggrt | xz $xzopt -c > "$out/bundle.tar.xz.tmp"
mv "$out/bundle.tar.xz.tmp" "$out/bundle.tar.xz"
cp "$stage/MANIFEST.txt" "$out/MANIFEST.txt"

# The carried env script: unpacks once into /tmp/ggrt, then sources the
# bundle's own env.sh.
cat > "$out/env.sh" <<'EOF'
# source .gdalrt/env.sh  -- on the GPU machine, from the repository root.
_gg_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GGRT=${GGRT:-/tmp/ggrt}
if [ ! -f "$GGRT/env.sh" ] || [ "$_gg_here/bundle.tar.xz" -nt "$GGRT/env.sh" ]; then
    rm -rf "$GGRT" && mkdir -p "$(dirname "$GGRT")" &&
        tar -C "$(dirname "$GGRT")" -xJf "$_gg_here/bundle.tar.xz" &&
        { [ "$(basename "$GGRT")" = ggrt ] || mv "$(dirname "$GGRT")/ggrt" "$GGRT"; } ||
        { echo "env.sh: cannot unpack $_gg_here/bundle.tar.xz" >&2; return 1; }
    touch "$GGRT/env.sh"
fi
. "$GGRT/env.sh"
unset _gg_here
EOF

unpacked=$(dirbytes "$root")
packed=$(stat -c %s "$out/bundle.tar.xz")
echo "pack_gpu_bundle: $n_ours files of ours, $n_closure libraries of the closure"
echo "pack_gpu_bundle: unpacked $(mb "$unpacked") MiB, bundle.tar.xz $(mb "$packed") MiB -> $out"
sed -n '5,12p' "$out/MANIFEST.txt"
if [[ $packed -gt $((max_mb * 1048576)) ]]; then
    die "bundle is $(mb "$packed") MiB, over GG_BUNDLE_MAX_MB=$max_mb (the device tool carries 64 MiB in all)"
fi
