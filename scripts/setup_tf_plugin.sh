#!/usr/bin/env bash
# Installs graphjit as a TensorFlow plugin into a Python environment (VENV, default
# build-tf/venv, made with TensorFlow and the rest of python/requirements.txt if new):
#  1. the Debian packages graphjit builds with (scripts/setup.sh --packages) and those the
#     plugin adds (python3-venv, ca-certificates for PyPI, dpkg-dev for apt-get source,
#     binutils for the tests' nm);
#  2. protobuf's Debian source package, of the version of the installed protoc, into
#     build-deps/protobuf (a deb-src line is added to apt's sources if there is none):
#     the plugin builds its own hidden protobuf from it;
#  3. `pip install --no-build-isolation .` (pyproject.toml: CMake through scikit-build-core,
#     in build-tf/cmake).
#   scripts/setup_tf_plugin.sh        then: build-tf/venv/bin/python examples/mnist_softmax_xla.py
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-build-tf/venv}
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

scripts/setup.sh --packages python3-venv dpkg-dev ca-certificates binutils

if [ ! -f build-deps/protobuf/CMakeLists.txt ]; then
  version=$(dpkg-query -W -f='${Version}' libprotobuf-dev)
  if ! apt-get source --print-uris "protobuf=$version" > /dev/null 2>&1; then
    echo "setup_tf_plugin: adding Debian's source repositories (deb-src) to apt"
    # The same repositories as the binary packages', in either of apt's formats.
    shopt -s nullglob
    deb822=(/etc/apt/sources.list.d/*.sources)
    one_line=()
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      if [ -f "$f" ]; then one_line+=("$f"); fi
    done
    if ((${#deb822[@]})); then
      sed 's/^Types: deb$/Types: deb-src/' "${deb822[@]}" | $SUDO tee /etc/apt/sources.list.d/graphjit-deb-src.sources > /dev/null
    fi
    if ((${#one_line[@]})); then
      sed -n 's/^deb /deb-src /p' "${one_line[@]}" | $SUDO tee /etc/apt/sources.list.d/graphjit-deb-src.list > /dev/null
    fi
    $SUDO apt-get update -qq
  fi
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get source -qq "protobuf=$version" > /dev/null 2>&1) \
    || { echo "setup_tf_plugin: apt-get source protobuf=$version failed" >&2; exit 1; }
  mkdir -p build-deps
  rm -rf build-deps/protobuf
  mv "$tmp"/protobuf-*/ build-deps/protobuf
  rm -rf "$tmp"
fi

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
"$VENV/bin/pip" install -q -r python/requirements.txt
start=$(date +%s)
"$VENV/bin/pip" install -q --no-build-isolation --force-reinstall --no-deps .
echo "setup_tf_plugin: the plugin built and installed into $VENV in $(( $(date +%s) - start )) s"
