#!/usr/bin/env bash
# graphjit on a GPU in one go, from an unpacked release with its tests (scripts/release.sh
# --tests: both archives unpacked into one folder) or from a build tree:
#  1. `graphjit devices`
#  2. every TensorFlow fixture (tests/data) at on_2 on the device, against TensorFlow's outputs,
#     and the bench graphs against op by op on the CPU
#  3. the GPU test suites (fixtures, GPU JIT, GPU trace) with GRAPHJIT_TEST_DEVICE=<device>,
#     and scripts/gpu_stream_check.py: producers whose values are still being written when
#     they hand them over through DLPack (on the driver through ctypes; PyTorch's where
#     installed), a sliced (misaligned) feed, a convolution with launch graphs and
#     --gpu_autotune=off from a warm disk cache, a second GPU where there is one (in $PYTHON,
#     python3 by default, where it has NumPy)
#  4. compute-sanitizer memcheck and racecheck on the fixture models, fused (hardware only)
#  5. `graphjit bench --jit off,on` on the bench graphs (on hardware, the GPU-sized ones of
#     bench/graphs/gpu too), the fixture models and the real models where they are
#     (bench/models/out, or a release's bench/models): each fused kernel's measured time and
#     DRAM bandwidth against the device's peak, next to the performance model's prediction
#  6. ncu's DRAM throughput of each fused kernel of the bench graphs and the GPU-sized ones
#     (hardware with ncu only)
#  7. the peers on the GPU-sized graphs (hardware, with JAX or PyTorch for CUDA in python3):
#     graphjit's kernels against JAX's (XLA:GPU) jitted call, torch.compile's and PyTorch
#     eager's, device-resident, all in float32 (graphjit with --gpu_tf32=off), each peer's
#     output checked against graphjit's
# It writes OUT/summary.md (and each step's log beside it) and exits non-zero on any
# mismatch, test failure or sanitizer error. With --device gpu-emu (the CUDA emulator, as in
# CI) it skips what needs hardware and says so.
#   scripts/gpu_check.sh [--device gpu|gpu-emu] [--out DIR] [--graphjit BIN] [--no-bench]
# (--no-bench: without step 5, as the test command runs it on gpu-emu, where the demo benches.)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
device=gpu
out=gpu-check
graphjit=""
bench=1
while (($#)); do
  case $1 in
    --device) device=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --graphjit) graphjit=$2; shift 2 ;;
    --no-bench) bench=0; shift ;;
    *) echo "usage: scripts/gpu_check.sh [--device gpu|gpu-emu] [--out DIR] [--graphjit BIN] [--no-bench]" >&2; exit 2 ;;
  esac
done
[[ $device == gpu || $device == gpu-emu ]] || { echo "gpu_check: --device is gpu or gpu-emu" >&2; exit 2; }
# graphjit: a release's bin/graphjit, else a build tree's; the test binaries beside it.
if [ -z "$graphjit" ]; then
  graphjit=$root/bin/graphjit
  [ -x "$graphjit" ] || graphjit=$root/build/bin/graphjit
fi
[ -x "$graphjit" ] || { echo "gpu_check: no graphjit at $graphjit" >&2; exit 2; }
bin=$(cd "$(dirname "$graphjit")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.md
failed=0
start=$(date +%s)
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH=$PATH:$CUDA_HOME/bin
if [ "$device" = gpu ] && [ -d "$CUDA_HOME/lib64" ]; then  # cuBLASLt from the toolkit
  export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA_HOME/lib64
fi
# cuDNN: the toolkit's, else the one a Python package brought (PyTorch's nvidia-cudnn wheel);
# without one, convolutions run on the CPU (graphjit says so) and the CNN checks fail.
if [ "$device" = gpu ] && ! ldconfig -p 2>/dev/null | grep -q 'libcudnn.so.9 '; then
  for d in "$CUDA_HOME/lib" $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null | \
             xargs -n1 -I{} echo {}/nvidia/cudnn/lib); do
    if [ -e "$d/libcudnn.so.9" ]; then
      export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
      break
    fi
  done
fi
hardware() { [ "$device" = gpu ]; }

{
  echo "# graphjit GPU check ($device), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- graphjit: \`$("$graphjit" --version 2>&1)\` ($graphjit)"
  echo "- host: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
  echo "- LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-(none)}"
} > "$summary"

step() {  # name: runs the rest, logs to OUT/<name>.log, records the outcome and time
  local name=$1
  shift
  local t0=$(date +%s)
  echo "gpu_check: $name ..."
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local took=$(( $(date +%s) - t0 ))
  if ((rc == 0)); then
    echo "- **$name**: ok ($took s)" >> "$summary"
  else
    echo "- **$name**: FAILED, exit $rc ($took s); the end of $name.log:" >> "$summary"
    { echo '```'; tail -n 25 "$out/$name.log"; echo '```'; } >> "$summary"
    failed=1
  fi
  echo "gpu_check: $name: exit $rc ($took s)"
}
skip() { echo "- **$1**: skipped: $2" >> "$summary"; echo "gpu_check: $1: skipped: $2"; }

# 1. The device as graphjit sees it.
step devices "$graphjit" devices --device "$device"
sed -n 's/^/    /p' "$out/devices.log" >> "$summary"

# The real models, where they were made (bench/models/make_models.py) and carried: each has
# a manifest as the fixtures do.
real_models=()
for dir in "$root"/bench/models/out/*/ "$root"/bench/models/*/; do
  [ -f "$dir/manifest.json" ] && real_models+=("${dir%/}")
done

# 2. Every fixture, fused at on_2 (single ops too), on the device; the bench graphs against
#    op by op on the CPU.
jobs=$(nproc)
[ "$device" = gpu ] && jobs=4  # one GPU: a few processes at a time
step fixtures python3 "$root/scripts/check_fixtures.py" --graphjit "$graphjit" --device "$device" --jit on_2 \
  --jobs "$jobs" "$root/tests/data" "${real_models[@]}" "$root"/bench/graphs/*.pb
tail -n 1 "$out/fixtures.log" | sed 's/^/    /' >> "$summary"

# 3. The GPU suites of the tests.
if [ -x "$bin/fixtures_test" ] && [ -x "$bin/gpu_jit_test" ] && [ -x "$bin/cli_test" ]; then
  suites() (
    export GRAPHJIT_TEST_DEVICE=$device
    # A release's tests find its tree so; a build tree's know their paths.
    if [ "$bin" = "$root/bin" ]; then export GRAPHJIT_TEST_ROOT=$root; fi
    "$bin/gpu_jit_test" && "$bin/fixtures_test" --gtest_filter='*RunsOnTheGpu*' && "$bin/cli_test" --gtest_filter='*Gpu*'
  )
  step tests suites
  grep -E '^\[  (PASSED|FAILED)' "$out/tests.log" | sed 's/^/    /' >> "$summary"
else
  skip tests "no test binaries beside $graphjit (scripts/release.sh --tests)"
fi
# The Python package (a release's tests archive carries its modules; a build tree has them
# in python/) over the C API beside graphjit, in $PYTHON (python3 by default) with NumPy.
python=${PYTHON:-python3}
if "$python" -c "import numpy" 2>/dev/null && [ -f "$root/python/graphjit/__init__.py" ]; then
  step streams env PYTHONPATH="$root/python" GRAPHJIT_LIBRARY="$(dirname "$bin")/lib/libgraphjit_c.so" \
    "$python" "$root/scripts/gpu_stream_check.py" --device "$device" --graphjit "$graphjit" --data "$root/tests/data"
  grep -E '^(ok|FAILED|skipped)' "$out/streams.log" | sed 's/^/    /' >> "$summary"
else
  skip streams "needs python3 with NumPy and graphjit's Python modules"
fi

# 4. compute-sanitizer on the fixture models, fused.
models=(mnist_softmax keras_mlp small_cnn transformer_block mobilenet_v2_small)
feeds_of() {  # model folder -> its fixture's feeds as graphjit options, one per line
  python3 -c "import json, sys; m = json.load(open(sys.argv[1] + '/manifest.json'))
for name, file in m['feeds'].items(): print('--feed'); print(name + '=' + sys.argv[1] + '/' + file)" "$1"
}
if hardware && command -v compute-sanitizer > /dev/null; then
  sanitize() {
    local tool=$1 model status=0
    for model in "${models[@]}"; do
      local dir=$root/tests/data/$model feeds
      mapfile -t feeds < <(feeds_of "$dir")
      echo "== $model ($tool)"
      compute-sanitizer --tool "$tool" --error-exitcode 1 "$graphjit" run "$dir/model.pb" "${feeds[@]}" \
        --device gpu --jit on_2 > "$out/sanitizer-$tool-$model.txt" 2>&1 || status=1
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|error" "$out/sanitizer-$tool-$model.txt" | tail -n 2
    done
    return $status
  }
  step memcheck sanitize memcheck
  step racecheck sanitize racecheck
else
  skip compute-sanitizer "needs a GPU and compute-sanitizer"
fi

# 5. Fused against unfused on the device, the model's prediction beside the measurement.
bench_all() {
  local graph status=0 name feeds
  local sized=()  # the GPU-sized graphs (bench/graphs/gpu: 128 MiB inputs), on a GPU only
  hardware && sized=("$root"/bench/graphs/gpu/*.pb)
  for graph in "$root"/bench/graphs/*.pb "${sized[@]}" "${models[@]/#/$root/tests/data/}" "${real_models[@]}"; do
    feeds=()
    if [ -d "$graph" ]; then  # a fixture model, with its feeds
      name=$(basename "$graph")
      mapfile -t feeds < <(feeds_of "$graph")
      graph=$graph/model.pb
    else
      name=$(basename "$graph" .pb)
    fi
    echo "== $name"
    "$graphjit" bench "$graph" "${feeds[@]}" --device "$device" --jit off,on --iters "$iters" \
      --json "$out/bench-$name.json" || status=1
  done
  return $status
}
if ((bench)); then
iters=20
hardware || iters=2  # the emulator runs kernels on the CPU, slowly
step bench bench_all
python3 - "$out" "$device" >> "$summary" << 'EOF'
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "bench-*.json"))):
    doc = json.load(open(path))
    by_jit = {c["jit"]: c for c in doc["configs"]}
    off, on = by_jit.get("off"), by_jit.get("on")
    if not off or not on:
        continue
    gpu = on.get("gpu", {})
    measured = gpu.get("measured_us")
    rows.append((os.path.basename(path)[6:-5], off["median_ms"], on["median_ms"], gpu.get("predicted_us") or 0,
                 "-" if measured is None else f"{measured:.1f}"))
print("\n| graph | off ms | on ms | off/on | kernels predicted us | kernels measured us |")
print("| --- | --- | --- | --- | --- | --- |")
for name, off, on, predicted, measured in rows:
    print(f"| {name} | {off:.3f} | {on:.3f} | {off / on:.2f} | {predicted:.1f} | {measured} |")
print("\n(measured: the kernels' own event times on the device; the emulator has none)")
if sys.argv[2] == "gpu-emu":
    print("(on gpu-emu the times are the emulator's, work on the CPU: they say nothing of a GPU's speed)")
EOF
else
  skip bench "--no-bench"
fi

# 6. DRAM throughput of each fused kernel.
if hardware && command -v ncu > /dev/null; then
  ncu_all() {
    local graph
    for graph in "$root"/bench/graphs/*.pb "$root"/bench/graphs/gpu/*.pb; do
      echo "== $(basename "$graph" .pb)"
      ncu --csv --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
        "$graphjit" run "$graph" --random-feeds --device gpu --jit on --repeat 2 2>/dev/null | grep -E '^"' || return 1
    done
  }
  step ncu ncu_all
else
  skip ncu "needs a GPU and ncu"
fi

# 7. The peers on the GPU-sized graphs, device-resident, in float32.
peers_have() { python3 -c "import $1" > /dev/null 2>&1; }
if hardware && [ -d "$root/bench/peers" ] && (peers_have jax || peers_have torch); then
  peers_all() {
    local graph name dir peer status=0
    for graph in "$root"/bench/graphs/gpu/*.pb; do
      name=$(basename "$graph" .pb)
      dir=$out/peers/$name
      mkdir -p "$dir"
      echo "== $name"
      # The input (seeded), the graph's constants and graphjit's output, for the peers.
      python3 -c "import json, sys, numpy as np
shape = json.load(open(sys.argv[1]))[sys.argv[2]]['shape']
np.save(sys.argv[3], np.random.default_rng(1).standard_normal(shape).astype(np.float32))" \
        "$root/bench/graphs/gpu/manifest.json" "$name" "$dir/x.npy" || { status=1; continue; }
      local consts=()
      mapfile -t consts < <(python3 -c "import json, sys
for n in json.load(open(sys.argv[1]))['nodes']:
    if n['op'] == 'Const': print('--fetch'); print(n['name'])" "$root/bench/graphs/gpu/$name.json")
      cp "$root/bench/graphs/gpu/$name.json" "$dir/graph.json"
      "$graphjit" run "$graph" --no-optimize --jit off --feed "x=$dir/x.npy" "${consts[@]}" --out "$dir/graph.consts" \
        > /dev/null || { status=1; continue; }
      GRAPHJIT_FLAGS=--gpu_tf32=off "$graphjit" run "$graph" --device gpu --jit on --feed "x=$dir/x.npy" --fetch y \
        --out "$dir" > /dev/null || { status=1; continue; }
      GRAPHJIT_FLAGS=--gpu_tf32=off "$graphjit" bench "$graph" --device gpu --jit on --iters 20 \
        --json "$dir/graphjit.json" > /dev/null || status=1
      for peer in jax torch; do
        peers_have "$peer" || continue
        python3 "$root/bench/peers/${peer}_gpu.py" "$dir/graph" --feed "x=$dir/x.npy" --fetch y --precision highest \
          --expect "$dir/y.npy" --iters 100 > "$dir/$peer.json" || status=1
        cat "$dir/$peer.json"
      done
    done
    return $status
  }
  step peers peers_all
  python3 "$root/bench/peers/peer_table.py" "$out/peers" >> "$summary"
else
  skip peers "needs a GPU and python3 with JAX or PyTorch for CUDA"
fi

echo "- total: $(( $(date +%s) - start )) s; $( ((failed)) && echo FAILED || echo all passed)" >> "$summary"
echo "gpu_check: $summary"
cat "$summary"
exit $failed
