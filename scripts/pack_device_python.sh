#!/usr/bin/env bash
# pack_device_python.sh -- packs, for the lent GPU machine, what a Python
# program of ours needs there beyond its own Python 3.12 + numpy 2.x:
# GDAL's Python bindings (osgeo, gdal_array with numpy), dask and
# distributed with their pure-Python needs, the GDAL runtime and our build.
# Used by bench/bench_distributed.py (geogpu.distributed over several GPUs).
#
# Run here (Debian bookworm) after a CUDA build:
#     scripts/pack_device_python.sh BUILD_DIR [OUT_DIR]     (OUT_DIR default: build-devpy)
# OUT_DIR must be git-ignored (the build* pattern is); carry it with the call:
#     run(carry=["OUT_DIR"], command=". OUT_DIR/env.sh && python3 ...")
# Output:
#     OUT_DIR/gdalrt.tar.xz  the GDAL + geogpu runtime, made by
#                            scripts/pack_gpu_bundle.sh (run on a copy, so that
#                            the shared .gdalrt/ is left alone)
#     OUT_DIR/site.tar.xz    site-packages for CPython 3.12: osgeo (built here
#                            from the GDAL sdist matching `gdal-config
#                            --version`, against numpy 2 headers), dask,
#                            distributed, tornado, tblib, zict, partd, locket
#                            and the rest of their Requires-Dist
#     OUT_DIR/env.sh         source it there (bash, from anywhere): unpacks once
#                            into $GGPY (default /tmp/ggpy), exports PATH,
#                            LD_LIBRARY_PATH, PYTHONPATH, GDAL_DATA, PROJ_DATA,
#                            GG_LIBRARY, GG_BACKEND_DIR
#     OUT_DIR/MANIFEST.txt   versions and sizes
#
# Libraries there: a bundled library whose soname the machine's own loader
# already knows is NOT put on LD_LIBRARY_PATH (GGPY_LIBS=overlay, default):
# Ubuntu 24.04's copies are newer than bookworm's, and the machine's Python
# links its own extension modules (pyexpat, _ssl, _sqlite3, ...) against
# them -- bookworm's libexpat first on the path breaks `import pyexpat`.
# GDAL's own libraries (libgdal, libproj + proj.db, libgeos, ...) and ours
# always come from the bundle.  GGPY_LIBS=all puts the whole bundle first,
# as .gdalrt/env.sh does.
#
# Env here: GG_PY312 -- the CPython 3.12 that builds the bindings (default:
#   python3.12 on PATH, else pyenv's 3.12.x); GG_DEVPY_CACHE -- downloads and
#   the build venv (default /tmp/gg_devpy_cache); GG_DEVPY_MAX_MB (default 56):
#   refuse an OUT_DIR larger than this (the device tool carries 64 MiB in all).
# Needs network access to PyPI here (pip download); nothing is fetched there.
# MIT licence.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "pack_device_python: $*" >&2; exit 1; }
[[ $# -ge 1 ]] || die "usage: $0 BUILD_DIR [OUT_DIR]"
build=$1
[[ $build = /* ]] || build="$here/$build"
out=${2:-build-devpy}
[[ $out = /* ]] || out="$here/$out"
[[ -d $build/lib ]] || die "no lib/ in build dir '$build' (build first)"
mkdir -p "$out"
if git -C "$here" rev-parse --git-dir >/dev/null 2>&1 && [[ $out == "$here"/* ]]; then
    git -C "$here" check-ignore -q "$out" || die "'$out' is not git-ignored (it would travel twice)"
fi
cache=${GG_DEVPY_CACHE:-/tmp/gg_devpy_cache}
max_mb=${GG_DEVPY_MAX_MB:-56}
gdal_version=$(gdal-config --version) || die "gdal-config not found (apt-get install libgdal-dev)"

is312() { [[ -x $1 ]] && [[ $("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) == 3.12 ]]; }
py=${GG_PY312:-}
if [[ -z $py ]]; then
    for c in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12.*/bin/python3 2>/dev/null) \
             $(command -v python3.12 || true); do
        is312 "$c" && { py=$c; break; }
    done
fi
[[ -n $py ]] && is312 "$py" || die "no CPython 3.12 here (set GG_PY312 to one: the GPU machine's Python is 3.12)"

stage=$(mktemp -d /tmp/ggdevpy.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$cache" "$stage/site"

# ------------------------------------------------ GDAL + geogpu runtime
# The shared script writes to <its repo>/.gdalrt: run a copy whose "repo"
# is the stage folder.
mkdir -p "$stage/pack/scripts"
cp "$here/scripts/pack_gpu_bundle.sh" "$stage/pack/scripts/"
GG_BUNDLE_ALLOW_PARTIAL=1 GG_BUNDLE_MAX_MB=$max_mb \
    bash "$stage/pack/scripts/pack_gpu_bundle.sh" "$build" 2>&1 | sed 's/^/  /'
[[ -f $stage/pack/.gdalrt/bundle.tar.xz ]] || die "pack_gpu_bundle.sh made no bundle"

# ------------------------------------------------ GDAL's Python bindings
venv="$cache/venv312"
if [[ ! -x $venv/bin/python ]]; then
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q "numpy>=2" setuptools wheel
fi
gwhl=$(ls "$cache"/wheels/gdal-"$gdal_version"-cp312-*.whl 2>/dev/null | head -1 || true)
if [[ -z $gwhl ]]; then
    "$venv/bin/python" -m pip download -q --no-binary :all: --no-deps -d "$cache/sdist" \
        "GDAL==$gdal_version"
    rm -rf "$stage/gdalsrc" && mkdir "$stage/gdalsrc"
    tar -C "$stage/gdalsrc" -xzf "$cache/sdist/GDAL-$gdal_version.tar.gz"
    # numpy 2 headers: the extension then loads with any numpy 2.x there
    PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip wheel -q --no-build-isolation --no-deps \
        -w "$cache/wheels" "$stage/gdalsrc/GDAL-$gdal_version"
    gwhl=$(ls "$cache"/wheels/gdal-"$gdal_version"-cp312-*.whl | head -1)
fi

# ------------------------------------------------ dask + distributed
# Pinned so that a re-pack gives the versions measured with; every
# Requires-Dist (not extras) of both, for CPython 3.12.
dask_pins=(dask==2026.8.0 distributed==2026.8.0)
wdir="$cache/dask-wheels"
if [[ ! -f $wdir/.complete ]]; then
    rm -rf "$wdir"
    "$venv/bin/python" -m pip download -q --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 \
        --platform manylinux1_x86_64 -d "$wdir" "${dask_pins[@]}"
    touch "$wdir/.complete"
fi
"$venv/bin/python" -m pip install -q --no-index --no-deps --no-compile --target "$stage/site" \
    "$gwhl" "$wdir"/*.whl
# what the device has anyway or we never run
rm -rf "$stage/site/bin" "$stage/site"/osgeo_utils "$stage/site"/GDAL*.data
find "$stage/site" -name '__pycache__' -prune -exec rm -rf {} +
find "$stage/site" -name '*.so' -exec strip --strip-unneeded {} +

# ------------------------------------------------ pack
mkdir -p "$out"
rm -f "$out"/*.tmp
cp "$stage/pack/.gdalrt/bundle.tar.xz" "$out/gdalrt.tar.xz.tmp"
tar -C "$stage" -cf - site | xz -9 -T0 -c > "$out/site.tar.xz.tmp"
mv "$out/gdalrt.tar.xz.tmp" "$out/gdalrt.tar.xz"
mv "$out/site.tar.xz.tmp" "$out/site.tar.xz"

{
    echo "geogpu device Python bundle, packed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "build dir: $build"
    echo "GDAL $gdal_version bindings built with $("$venv/bin/python" -c 'import sys, numpy; print("CPython", sys.version.split()[0], "numpy", numpy.__version__)')"
    echo "site-packages:"
    (cd "$stage/site" && ls -d *.dist-info | sed 's/\.dist-info$//; s/^/  /')
    echo
    printf '%-16s %8s bytes\n' gdalrt.tar.xz "$(stat -c %s "$out/gdalrt.tar.xz")" \
        site.tar.xz "$(stat -c %s "$out/site.tar.xz")"
    echo
    sed -n '1,200p' "$stage/pack/.gdalrt/MANIFEST.txt"
} > "$out/MANIFEST.txt"

cat > "$out/env.sh" <<'EOF'
# source OUT_DIR/env.sh  -- on the GPU machine (bash).  Made by
# scripts/pack_device_python.sh; GGPY_LIBS=overlay (default) or all.
_ggpy_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GGPY=${GGPY:-/tmp/ggpy}
if [ ! -f "$GGPY/.unpacked" ] || [ "$_ggpy_here/gdalrt.tar.xz" -nt "$GGPY/.unpacked" ] ||
   [ "$_ggpy_here/site.tar.xz" -nt "$GGPY/.unpacked" ]; then
    rm -rf "$GGPY" && mkdir -p "$GGPY" &&
        tar -C "$GGPY" -xJf "$_ggpy_here/gdalrt.tar.xz" &&
        tar -C "$GGPY" -xJf "$_ggpy_here/site.tar.xz" && touch "$GGPY/.unpacked" ||
        { echo "env.sh: cannot unpack $_ggpy_here" >&2; return 1; }
fi
export GGPY
# the bundle's own env (GDAL_DATA, PROJ_DATA, GG_BACKEND_DIR, GGRT_LD_LIBRARY_PATH)
GGRT="$GGPY/ggrt"; GGRT_GLOBAL=0; . "$GGPY/ggrt/env.sh"
_ggpy_lib="$GGRT/lib"
if [ "${GGPY_LIBS:-overlay}" != all ]; then
    # the bundled libraries the machine lacks, and GDAL's and ours always
    _ggpy_lib="$GGPY/lib"
    rm -rf "$_ggpy_lib" && mkdir -p "$_ggpy_lib"
    _ggpy_known=$(ldconfig -p 2>/dev/null | awk '/x86-64/ {print $1}')
    for _ggpy_f in "$GGRT"/lib/*.so*; do
        _ggpy_n=$(basename "$_ggpy_f")
        case $_ggpy_n in
        libgdal*|libproj*|libgeos*|libgeotiff*|libgeogpu*|libspatialite*|libogdi*) ;;
        *) printf '%s\n' "$_ggpy_known" | grep -qxF "$_ggpy_n" && continue ;;
        esac
        ln -s "$_ggpy_f" "$_ggpy_lib/$_ggpy_n"
    done
fi
# GGRT_LD_LIBRARY_PATH begins with $GGRT/lib: the chosen folder instead
export LD_LIBRARY_PATH="$_ggpy_lib${GGRT_LD_LIBRARY_PATH#"$GGRT/lib"}"
export PATH="$GGRT/bin:$PATH"
export PYTHONPATH="$GGPY/site${PYTHONPATH:+:$PYTHONPATH}"
export GG_LIBRARY="$GGRT/lib"
unset _ggpy_here _ggpy_lib _ggpy_known _ggpy_f _ggpy_n
EOF

bytes=$(du -sb "$out" | cut -f1)
echo "pack_device_python: $out: $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB"
sed -n '3,40p' "$out/MANIFEST.txt" | grep -v '^$' | head -30
[[ $bytes -le $((max_mb * 1048576)) ]] || die "$out is over GG_DEVPY_MAX_MB=$max_mb MiB"
