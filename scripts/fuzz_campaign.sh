#!/usr/bin/env bash
# A long fuzzing campaign over the libFuzzer targets of tests/fuzz/, in the ASan+UBSan
# build that scripts/sanitize.sh makes (build-asan): each target runs for RUNS inputs
# (default 10M; the whole path through the JIT: JIT_RUNS, default 1M; at most MAX_SECONDS
# each if set) from its corpus
# (build-asan/fuzz-corpus/<target>, kept between runs) and its seeds, one target at a time
# on one core. Then each corpus is minimized (-merge=1) into tests/fuzz/corpus/<target>/,
# which seeds CI's short runs. Counts go to build-asan/campaign.txt; a finding stops the
# campaign with the sanitizer's report (add the input to tests/fuzz/regressions/<target>/
# with the fix).
#   scripts/fuzz_campaign.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10000000}
JIT_RUNS=${JIT_RUNS:-1000000}
MAX_SECONDS=${MAX_SECONDS:-0}  # per target; 0: no limit (a shorter run reports what it did)
targets=("$@")
((${#targets[@]})) || targets=(graphdef_fuzzer npy_fuzzer config_fuzzer jit_path_fuzzer)
[ -x build-asan/bin/graphdef_fuzzer ] || { echo "fuzz_campaign.sh: build-asan is missing: run scripts/sanitize.sh first" >&2; exit 2; }
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!tests/fuzz/corpus' || echo "+changes")
cmake --build build-asan -j2 --target "${targets[@]}" > /dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p build-asan/fuzz-seeds
find tests/data -name 'model.pb*' -exec cp --backup=numbered {} build-asan/fuzz-seeds/ \;
for target in "${targets[@]}"; do
  case $target in
    graphdef_fuzzer) seeds=(tests/fuzz/corpus/graphdef_fuzzer build-asan/fuzz-seeds) runs=$RUNS ;;
    npy_fuzzer) seeds=(tests/fuzz/corpus/npy_fuzzer tests/data/ops) runs=$RUNS ;;
    config_fuzzer) seeds=(tests/fuzz/corpus/config_fuzzer) runs=$RUNS ;;
    jit_path_fuzzer) seeds=(tests/fuzz/corpus/jit_path_fuzzer build-asan/fuzz-seeds) runs=$JIT_RUNS ;;
    *) echo "fuzz_campaign.sh: unknown target $target" >&2; exit 2 ;;
  esac
  corpus=build-asan/fuzz-corpus/$target
  mkdir -p "$corpus" "tests/fuzz/corpus/$target"
  start=$(date +%s)
  if ! nice build-asan/bin/"$target" -runs="$runs" -max_total_time="$MAX_SECONDS" -rss_limit_mb=3072 -timeout=60 -print_final_stats=1 \
    -artifact_prefix="build-asan/$target-" "$corpus" "${seeds[@]}" > "build-asan/$target.campaign.log" 2>&1; then
    grep -v -E '^#[0-9]+' "build-asan/$target.campaign.log" | tail -n 40
    echo "fuzz_campaign.sh: $target found something (build-asan/$target-crash-*)"
    exit 1
  fi
  done_line=$(grep -E '^Done [0-9]+ runs' "build-asan/$target.campaign.log" | tail -n 1)
  echo "$(date -u +%F) $commit $target: $done_line in $(( $(date +%s) - start )) s, no findings" | tee -a build-asan/campaign.txt
  # The corpus, minimized, seeds CI's runs: what it covers beyond the seeds (and the
  # committed corpus itself). The seeds go into the merge first, so only inputs that add
  # coverage to them are taken; copies of tests/data's files are then left out again.
  tmp=$(mktemp -d)
  for dir in "${seeds[@]}"; do
    [ "$dir" = "tests/fuzz/corpus/$target" ] && continue
    find "$dir" -type f -exec cp --backup=numbered {} "$tmp"/ \;
  done
  mapfile -t seeded < <(ls "$tmp")
  cp "tests/fuzz/corpus/$target"/* "$tmp"/ 2>/dev/null || true
  nice build-asan/bin/"$target" -merge=1 -rss_limit_mb=3072 -timeout=60 "$tmp" "$corpus" > /dev/null 2>&1
  for f in "${seeded[@]}"; do rm -f "$tmp/$f"; done
  rm -rf "tests/fuzz/corpus/$target"
  mkdir -p "tests/fuzz/corpus/$target"
  find "$tmp" -type f -exec cp {} "tests/fuzz/corpus/$target"/ \;
  rm -rf "$tmp"
done
