#!/usr/bin/env bash
# Installs what a fresh Debian bookworm machine lacks (apt) and builds
# geogpu into build/.  Used by scripts/demo.sh and scripts/test.sh.
#   GG_BUILD_DIR   build folder (default: build)
#   GG_SKIP_APT=1  skip the package step
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config git
          libgdal-dev gdal-bin python3-gdal python3-numpy python3-scipy python3-pytest
          libfftw3-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libvkfft-dev
          python3-pil fonts-dejavu-core qgis python3-qgis qgis-providers python3-distributed
          clang valgrind libnetcdf-dev python3-pip)

if [ "${GG_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# CUDA is not a Debian package: use the toolkit at /usr/local/cuda when present.
cuda_args=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi

build="${GG_BUILD_DIR:-build}"
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" "$@" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)"

# Test-only peers (never product dependencies): Py-ART and xradar read the
# CfRadial files gdal_fmcw writes; IMProToo (GPL-3) is the MRR-2 reference.
# They go into $build/test_peers (tests/python put it on sys.path after the
# system's packages), never into the system: Debian's numpy 1.24, scipy,
# matplotlib, fsspec ... stay as they are.  The set is fixed (--no-deps: no
# resolver run, which backtracks for minutes against Debian's versions):
# releases whose wheels run on numpy 1.24.  GG_SKIP_PEERS=1, or no network:
# not installed, and their tests skip with the reason.
PEERS=(arm_pyart==1.18.7 xradar==0.6.5 xarray==2024.3.0 xarray-datatree==0.0.15 pandas==2.1.4
       netCDF4==1.7.5.1.post1 cftime==1.6.6.1 h5netcdf==1.8.2 h5py==3.16.0 IMProToo==0.108
       pooch==1.9.0 platformdirs==4.14.8 cmweather==0.3.2 open-radar-data==0.9.0
       lat-lon-parser==1.3.1 mda-xdrlib==0.2.0 tzdata==2026.6 typing_extensions==4.16.0
       s3fs==2022.11.0 aiobotocore==2.4.2 botocore==1.27.59 jmespath==1.1.0 aiohttp==3.14.5
       aiohappyeyeballs==2.7.1 aioitertools==0.13.0 aiosignal==1.4.0 frozenlist==1.8.0
       multidict==7.2.1 propcache==0.5.4 yarl==1.25.1 wrapt==2.5.2)
if [ "${GG_SKIP_PEERS:-0}" != 1 ]; then
  PYTHONUSERBASE="$(cd "$build" && pwd)/test_peers" /usr/bin/python3 -m pip install -q --user \
      --break-system-packages --no-deps --only-binary=:all: "${PEERS[@]}" ||
    echo "setup: test peers (Py-ART, xradar, IMProToo) not installed; their tests will skip"
fi
