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
          clang valgrind)

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
