#!/usr/bin/env bash
# Installs graphjit as a TensorFlow plugin into a Python environment (VENV, default
# build-tf/venv, made with TensorFlow and the rest of python/requirements.txt if new):
#  1. the Debian packages graphjit builds with (scripts/setup.sh --packages) and those the
#     plugin adds (python3-venv, ca-certificates for PyPI, dpkg-dev for apt-get source,
#     binutils for the tests' nm);
#  2. protobuf's Debian source package into build-deps/protobuf
#     (scripts/fetch_protobuf_source.sh): the plugin builds its own hidden protobuf from it;
#  3. `pip install --no-build-isolation .` (pyproject.toml: CMake through scikit-build-core,
#     in the release's build folder, build-release, whose objects scripts/release.sh reuses).
#   scripts/setup_tf_plugin.sh        then: build-tf/venv/bin/python examples/mnist_softmax_xla.py
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-build-tf/venv}
scripts/setup.sh --packages python3-venv dpkg-dev ca-certificates binutils

scripts/fetch_protobuf_source.sh

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
"$VENV/bin/pip" install -q -r python/requirements.txt
start=$(date +%s)
"$VENV/bin/pip" install -q --no-build-isolation --force-reinstall --no-deps .
echo "setup_tf_plugin: the plugin built and installed into $VENV in $(( $(date +%s) - start )) s"
