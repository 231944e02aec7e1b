#!/usr/bin/env bash
# Builds graphjit and runs the whole test suite (ctest), the TensorFlow plugin's tests, the
# release's checks (built, unpacked elsewhere, run there; the JIT on an emulated CPU without
# AVX-512; its Python wheel in a fresh venv), then the sanitizer builds and the fuzzer
# (scripts/sanitize.sh), printing how long each stage took.
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
# The release with its tests (scripts/release.sh --tests; built in the plugin's build folder,
# so only what the plugin does not share is compiled), unpacked elsewhere and run there as on
# a machine without graphjit's build: every fixture and bench graph on the CPU, a fuzz seed
# of the JIT against its reference kernels (built for a baseline x86-64 CPU: their answers
# must be the native build's), then its own scripts/gpu_check.sh against the CUDA emulator
# (fixtures and the GPU suites; the demo benches on gpu-emu).
scripts/release.sh --tests
unpacked=$(mktemp -d)
for archive in dist/graphjit-*-linux-x86_64.tar.xz; do tar -C "$unpacked" -xJf "$archive"; done
release=$(echo "$unpacked"/graphjit-*)
python3 "$release/scripts/check_fixtures.py" --graphjit "$release/bin/graphjit" --device cpu --jit on_2 --jobs 2 \
  "$release/tests/data" "$release"/bench/graphs/*.pb
"$release/bin/jit_fuzz" --seed 20261127 --graphs 500 --kernels "x86-64 (SSE2)" --known tests/fuzz/jit_fuzz_known.txt
# The Python package: its wheel installed in a fresh venv with only NumPy (and pytest, which
# runs its tests below); gpu_check.sh's Python steps run there too.
python3 -m venv "$unpacked/venv"
"$unpacked/venv/bin/pip" install -q numpy pytest dist/graphjit-*-py3-none-linux_x86_64.whl
PYTHON="$unpacked/venv/bin/python" "$release/scripts/gpu_check.sh" --device gpu-emu --out build-release/gpu-check --no-bench
# The JIT on a CPU without AVX-512, whatever CPU this is: the release build under qemu-user as
# an AMD EPYC of Zen 3 (AVX2 only): the lit tests, the JIT's unit tests and a fuzz seed.
scripts/emulated_cpu_check.sh
# The Python package's tests, against the wheel: TensorFlow's fixtures, DLPack on the CPU
# and the emulator (streams, alignment, two GPUs, faults, fork), errors and threads.
"$unpacked/venv/bin/python" -m pytest -q -p no:cacheprovider tests/python
rm -rf "$unpacked"
t4=$(date +%s)
echo "test.sh: the release (build, package, checks unpacked) took $((t4 - t3)) s"
scripts/sanitize.sh
t5=$(date +%s)
echo "test.sh: sanitizers and fuzzing took $((t5 - t4)) s (total $((t5 - t0)) s)"
