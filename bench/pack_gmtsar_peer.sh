#!/usr/bin/env bash
# pack_gmtsar_peer.sh -- packs a GMTSAR xcorr binary built against the
# system's GMT so that it runs on a machine without GMT (the lent GPU host),
# for bench_xcorr_vs_gmtsar.sh there:
#
#   bench/pack_gmtsar_peer.sh GMTSAR_XCORR OUT_DIR
#
# OUT_DIR/bin/xcorr            the binary
# OUT_DIR/bin/xcorr-peer       wrapper: sets LD_LIBRARY_PATH to OUT_DIR/lib and
#                              GMT_SHAREDIR to OUT_DIR/share/gmt, then runs it;
#                              PEER_FFTW_THREADS=n preloads the shim below
#                              (FFTW planned with n threads)
# OUT_DIR/lib/                 its shared-library closure (ldd), without the
#                              C library's own objects (libc, libm, libpthread,
#                              libdl, librt, ld-linux ...), which the host has;
#                              plus libfftw_nthreads_shim.so (fftw_nthreads_shim.c)
#
# libgmt links GDAL, netCDF, curl, GEOS and LAPACK/BLAS, whose closure is
# about 165 MB; xcorr calls none of them (it uses GMT's session and FFT
# only).  So by default those libraries (STUB, a regular expression on the
# sonames libgmt needs) are replaced by stubs with the same soname that
# define the symbols libgmt imports from them (libgmt is bound at load
# time, BIND_NOW, so every symbol must exist); each stub function aborts
# with a message if ever called, so a stub can never change a result.
# FULL=1 copies the real closure instead.
# OUT_DIR/share/gmt/           an empty GMT share folder: GMT_Create_Session
#                              only needs it to exist for what xcorr does
#
# GMTSAR is GPL and is not part of this project; the packed folder is a
# measurement aid that stays outside the repository.  MIT licence.
set -euo pipefail
src=${1:?usage: pack_gmtsar_peer.sh GMTSAR_XCORR OUT_DIR}
out=${2:?usage: pack_gmtsar_peer.sh GMTSAR_XCORR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/bin" "$out/lib" "$out/share/gmt"
out=$(cd "$out" && pwd)
cp -f "$src" "$out/bin/xcorr"

# the loader and the C library's own objects come from the host
skip='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libnsl|libanl|libmvec)\.so'
stub_re=${STUB:-^lib(gdal|netcdf|curl|geos_c|lapack|blas)[-.]}
[ "${FULL:-0}" = 1 ] && stub_re='^$'
declare -A where=()
while read -r name path; do where[$name]=$path; done < <(ldd "$src" | awk '/=> \// {print $1, $3}')
gmtlib=$(ldd "$src" | awk '$1 ~ /^libgmt\.so/ {print $3}')

# symbols the packed libraries (libgmt and libpostscriptlight) import
imports() { nm -D --undefined-only "$@" 2>/dev/null | awk '{sub(/@.*/, "", $2); print $2}' | sort -u; }

# a stub for library $1 (soname) at $2, for the symbols importers need
make_stub() {
    local soname=$1 real=$2 c=$tmp/$1.c map=$tmp/$1.map
    {
        echo '#include <stdio.h>'
        echo '#include <stdlib.h>'
        echo "static void gg_stub(const char *f) { fprintf(stderr, \"xcorr-peer: %s (stubbed $soname) called\\n\", f); abort(); }"
        nm -D --defined-only -S "$real" | awk '{sub(/@.*/, "", $NF); print}' |
            awk -v want="$tmp/imports" 'BEGIN {while ((getline l < want) > 0) w[l] = 1}
                NF == 4 && ($NF in w) && !seen[$NF]++ {
                    if ($3 ~ /^[TtWi]$/) printf "void %s(void) { gg_stub(\"%s\"); }\n", $4, $4
                    else printf "char %s[0x%s];\n", $4, $2 }
                NF == 3 && ($NF in w) && !seen[$NF]++ && $2 ~ /^[TtWi]$/ {
                    printf "void %s(void) { gg_stub(\"%s\"); }\n", $3, $3 }'
    } >"$c"
    # the symbol versions the importers bind to (curl's CURL_GNUTLS_3 ...)
    objdump -T "$real" | awk -v want="$tmp/imports" 'BEGIN {while ((getline l < want) > 0) w[l] = 1}
        NF >= 7 && ($NF in w) && $(NF-1) ~ /^[A-Za-z_]/ && $(NF-1) != "Base" {v[$(NF-1)] = v[$(NF-1)] " " $NF ";"}
        END {n = 0; for (k in v) {printf "%s { global:%s };\n", k, v[k]; n++}
             printf "%s\n", n ? "" : "{ global: *; };"}' >"$map"
    cc -shared -fPIC -O0 -w -Wl,-soname,"$soname" -Wl,--version-script="$map" -o "$out/lib/$soname" "$c"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# walk the NEEDED graph from the binary, not into stubbed libraries
queue=("$src") done_=()
declare -A seen=()
imports "$gmtlib" "$(dirname "$gmtlib")"/libpostscriptlight.so.* >"$tmp/imports"
while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}; queue=("${queue[@]:1}")
    for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        [ -n "${seen[$n]:-}" ] && continue
        seen[$n]=1
        [[ $n =~ $skip ]] && continue
        p=${where[$n]:?"$n not found by ldd"}
        if [[ $n =~ $stub_re ]]; then
            make_stub "$n" "$p"
            echo "  stub  $n ($(grep -c '^void\|^char' "$tmp/$n.c") symbols)"
        else
            cp -fL "$p" "$out/lib/$n"
            queue+=("$p")
        fi
    done
done
cc -O2 -shared -fPIC -o "$out/lib/libfftw_nthreads_shim.so" "$here/fftw_nthreads_shim.c" -ldl
echo "GMT share folder for xcorr-peer: left empty on purpose (see pack_gmtsar_peer.sh)" >"$out/share/gmt/README"

cat >"$out/bin/xcorr-peer" <<'EOF'
#!/bin/sh
# Runs the packed GMTSAR xcorr with its own libraries (pack_gmtsar_peer.sh).
# PEER_FFTW_THREADS=n: FFTW planned with n threads instead of GMT's choice.
root=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
GMT_SHAREDIR=$root/share/gmt
export LD_LIBRARY_PATH GMT_SHAREDIR
if [ -n "${PEER_FFTW_THREADS:-}" ]; then
    LD_PRELOAD=$root/lib/libfftw_nthreads_shim.so${LD_PRELOAD:+:$LD_PRELOAD}
    FFTW_SHIM_NTHREADS=$PEER_FFTW_THREADS
    export LD_PRELOAD FFTW_SHIM_NTHREADS
fi
exec "$root/bin/xcorr" "$@"
EOF
chmod +x "$out/bin/xcorr-peer" "$out/bin/xcorr"
echo "packed $(ls "$out/lib" | wc -l) libraries into $out: $(du -sh "$out" | cut -f1)"
