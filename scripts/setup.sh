#!/usr/bin/env bash
# Installs the Debian packages graphjit needs (only those missing), then configures
# and builds into build/. Used by scripts/demo.sh and scripts/test.sh.
#   scripts/setup.sh [--packages EXTRA...]   (--packages: install them too, and build nothing)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ ccache pkg-config
          libprotobuf-dev protobuf-compiler libeigen3-dev libdnnl-dev ocl-icd-opencl-dev
          libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev llvm-19-tools python3
          llvm-19-dev libmlir-19-dev libzstd-dev clang-format-19)
build=1
if [ "${1:-}" = "--packages" ]; then
  build=0
  shift
  PACKAGES+=("$@")
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

((build)) || exit 0
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
rm -f build.configure.log
cmake --build build -j2
