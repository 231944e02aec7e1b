#!/usr/bin/env bash
# Runs graphjit's JIT on an x86-64 CPU without AVX-512, whatever CPU this machine has: the
# release build (build-release/, made by scripts/release.sh --tests: baseline x86-64 code,
# no -march) under qemu-user emulating an AMD EPYC of Zen 3 (AVX2 and FMA, no AVX-512; qemu
# faults on an AVX-512 instruction as that CPU would). The JIT detects that CPU, as LLVM
# reads it from CPUID, and compiles for it. Checked there:
#   1. the CPU graphjit sees (`graphjit devices`: znver3, 256-bit vectors), so that the
#      check cannot pass on the host's AVX-512 by mistake;
#   2. the lit tests (tests/lit), graphjit under qemu, FileCheck natively;
#   3. the CPU backend's and the JIT's unit tests (cpu_backend_test, jit_test);
#   4. a seed of the JIT's differential fuzzer against the reference kernels.
# The reverse, an AVX-512 CPU on a machine without one, qemu cannot emulate (its TCG has no
# AVX-512): the lit and unit tests check the code for x86-64-v4 on any host.
#   scripts/emulated_cpu_check.sh [--graphs N]
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=100
[ "${1:-}" = --graphs ] && graphs=$2
[ -x build-release/bin/graphjit ] || { echo "emulated_cpu_check: run scripts/release.sh --tests first" >&2; exit 2; }
scripts/setup.sh --packages qemu-user
cmake --build build-release -j2 --target jit_test cpu_backend_test > /dev/null
bin=$(readlink -f build-release/bin)
# EPYC-Milan less the features qemu's TCG does not implement (each would be a warning on
# every start; none is one the JIT uses).
cpu=EPYC-Milan,-pcid,-invpcid,-rdseed,-sha-ni,-rdpid,-fsrm,-fxsr-opt,-misalignsse,-3dnowprefetch,-osvw,-topoext
cpu+=,-perfctr-core,-clzero,-xsaveerptr,-wbnoinvd,-ibpb,-ibrs,-amd-stibp,-amd-ssbd,-nrip-save,-xsavec,-xsaves
emulated="qemu-x86_64 -cpu $cpu"
t0=$(date +%s)

# 1. The CPU the JIT sees.
seen=$($emulated "$bin/graphjit" devices --device cpu)
echo "emulated_cpu_check: $seen"
grep -q "JIT code for znver3, 256-bit vectors;" <<< "$seen" ||
  { echo "emulated_cpu_check: the emulated CPU is not an AVX2-only Zen 3" >&2; exit 1; }

# 2. The lit tests.
exec_root=$(mktemp -d)
trap 'rm -rf "$exec_root"' EXIT
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv --param graphjit="$emulated $bin/graphjit" \
  --param exec_root="$exec_root" tests/lit
t1=$(date +%s)

# 3. The unit tests of the code the JIT makes.
for test in cpu_backend_test jit_test; do
  $emulated "$bin/$test" --gtest_brief=1
done
t2=$(date +%s)

# 4. The fuzzer: random graphs, the JIT's code for Zen 3 against the reference kernels.
$emulated "$bin/jit_fuzz" --seed 20261207 --graphs "$graphs" --kernels "x86-64 (SSE2)" --known tests/fuzz/jit_fuzz_known.txt
echo "emulated_cpu_check: lit $((t1 - t0)) s, unit tests $((t2 - t1)) s, jit_fuzz ($graphs graphs) $(($(date +%s) - t2)) s"
