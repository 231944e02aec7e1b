#!/usr/bin/env bash
# Instrumented builds with clang-19 (called by scripts/test.sh):
#  1. ASan + UBSan at -O1 (the tests and tools at -O0): the unit, fixture and command-line tests, the fuzz
#     regression inputs, then the libFuzzer targets (tests/fuzz/): GraphDef import,
#     validation, shape inference and graph passes for FUZZ_SECONDS (default 60), seeded
#     with tests/data; the .npy reader and the configuration for 15 s each; the whole path
#     through the JIT for 30 s.
#  2. TSan: the concurrent Session::Run, thread-pool and JIT kernel-cache tests.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-60}

missing=()
for p in clang-19 libclang-rt-19-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

configure() {  # dir sanitizers
  CC=clang-19 CXX=clang++-19 cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DGRAPHJIT_SANITIZE="$2" -DGRAPHJIT_BUILD_BENCH=OFF > "$1.configure.log" 2>&1 || { cat "$1.configure.log"; exit 1; }
  rm -f "$1.configure.log"
}

t0=$(date +%s)
configure build-asan "address;undefined"
cmake --build build-asan -j2
# Leak checking stays on; oneDNN's and OpenMP's own allocations are not graphjit's.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j2 --timeout 900
t1=$(date +%s)
echo "sanitize.sh: ASan+UBSan build and tests took $((t1 - t0)) s"

# libFuzzer, each target from its corpus (build-asan/fuzz-corpus/<target>, kept between
# runs) and its seeds; the output goes to a log whose end is shown, with the sanitizer's
# report on a crash. A finding goes into tests/fuzz/regressions/<target>/ with its fix.
fuzz() {  # target seconds seed-dirs...
  local target=$1 seconds=$2
  shift 2
  mkdir -p "build-asan/fuzz-corpus/$target"
  if ! build-asan/bin/"$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=60 \
    -artifact_prefix="build-asan/$target-" "build-asan/fuzz-corpus/$target" "$@" > "build-asan/$target.log" 2>&1; then
    grep -v -E '^#[0-9]+' "build-asan/$target.log" | tail -n 40
    echo "sanitize.sh: $target found a crash (build-asan/$target-crash-*): add it to tests/fuzz/regressions/$target/ with the fix"
    exit 1
  fi
  echo "$target: $(grep -E '^#[0-9]+' "build-asan/$target.log" | tail -n 1)"
}
mkdir -p build-asan/fuzz-seeds
find tests/data -name 'model.pb*' -exec cp --backup=numbered {} build-asan/fuzz-seeds/ \;
fuzz graphdef_fuzzer "$FUZZ_SECONDS" tests/fuzz/corpus/graphdef_fuzzer build-asan/fuzz-seeds
fuzz npy_fuzzer 15 tests/fuzz/corpus/npy_fuzzer tests/data/ops
fuzz config_fuzzer 15 tests/fuzz/corpus/config_fuzzer
fuzz jit_path_fuzzer 30 tests/fuzz/corpus/jit_path_fuzzer
t2=$(date +%s)
echo "sanitize.sh: fuzzing took $((t2 - t1)) s"

configure build-tsan "thread"
cmake --build build-tsan -j2 --target session_test thread_pool_test jit_test
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/session_test --gtest_filter='Session.ConcurrentRunsAreIndependent:Session.TargetsAndControlEdgesAreHonoured'
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/thread_pool_test
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/jit_test --gtest_filter='Jit.ConcurrentRunsShareTheCache:Jit.TheCacheCompilesOncePerSignature:Jit.AsyncCompilationRunsOpByOpUntilTheKernelIsReady'
t3=$(date +%s)
echo "sanitize.sh: TSan build and tests took $((t3 - t2)) s"
