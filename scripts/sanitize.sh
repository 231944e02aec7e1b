#!/usr/bin/env bash
# Instrumented builds with clang-19 (called by scripts/test.sh):
#  1. ASan + UBSan at -O1: the unit, fixture and command-line tests, the fuzz
#     regression inputs, then libFuzzer on GraphDef import + validation + shape
#     inference for FUZZ_SECONDS (default 60), seeded with every model in tests/data.
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

corpus=build-asan/fuzz-corpus
mkdir -p "$corpus"
find tests/data -name 'model.pb*' -exec cp --backup=numbered {} "$corpus"/ \;
# The fuzzer's output goes to a log; its end is shown, with the sanitizer's report on a crash.
if ! build-asan/bin/graphdef_fuzzer -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=20 \
  -artifact_prefix=build-asan/ "$corpus" > build-asan/fuzz.log 2>&1; then
  grep -v -E '^#[0-9]+' build-asan/fuzz.log | tail -n 40
  echo "sanitize.sh: the fuzzer found a crash (build-asan/crash-*): add it to tests/fuzz/regressions/ with the fix"
  exit 1
fi
tail -n 5 build-asan/fuzz.log
t2=$(date +%s)
echo "sanitize.sh: fuzzing took $((t2 - t1)) s"

configure build-tsan "thread"
cmake --build build-tsan -j2 --target session_test thread_pool_test jit_test
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/session_test --gtest_filter='Session.ConcurrentRunsAreIndependent:Session.TargetsAndControlEdgesAreHonoured'
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/thread_pool_test
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/jit_test --gtest_filter='Jit.ConcurrentRunsShareTheCache:Jit.TheCacheCompilesOncePerSignature'
t3=$(date +%s)
echo "sanitize.sh: TSan build and tests took $((t3 - t2)) s"
