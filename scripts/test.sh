#!/usr/bin/env bash
# Builds graphjit and runs the whole test suite (ctest), then the sanitizer builds and the
# fuzzer (scripts/sanitize.sh), printing how long each stage took.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
scripts/setup.sh
t1=$(date +%s)
echo "test.sh: setup + build took $((t1 - t0)) s"
ctest --test-dir build --output-on-failure -j2 --timeout 600
t2=$(date +%s)
echo "test.sh: tests took $((t2 - t1)) s"
# The TensorFlow plugin: built and installed into build-tf/venv (pip install .), then its
# tests in TensorFlow (pytest).
scripts/setup_tf_plugin.sh
TF_CPP_MIN_LOG_LEVEL=2 build-tf/venv/bin/python -m pytest -q -p no:cacheprovider python/tests
t3=$(date +%s)
echo "test.sh: the TensorFlow plugin (build and tests) took $((t3 - t2)) s"
scripts/sanitize.sh
t4=$(date +%s)
echo "test.sh: sanitizers and fuzzing took $((t4 - t3)) s (total $((t4 - t0)) s)"
