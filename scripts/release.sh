#!/usr/bin/env bash
# Builds graphjit's release for x86-64 Linux into dist/ (in build-release/):
#   dist/graphjit-<version>-linux-x86_64.tar.xz, one folder graphjit-<version>/ with
#     bin/graphjit                 the command line
#     lib/libgraphjit.so           graphjit with LLVM, MLIR and protobuf linked in
#     lib/libdnnl.so.*, ...        the shared libraries it still needs (oneDNN, OpenMP, OpenCL's loader)
#     lib/cuda_emulator/           the CUDA emulator and its cuBLASLt and cuDNN stand-ins (--device gpu-emu)
#     lib/libgraphjit_c.so, include/graphjit.h   the C API
#     README.md, licenses/         graphjit's README and the licenses of what is bundled
#   dist/graphjit-<version>-py3-none-linux_x86_64.whl, the Python package `graphjit`: its
#     modules (python/graphjit) with lib/ beside them (scripts/make_wheel.py), for any CPython 3
# Unpacked anywhere it needs only glibc and libstdc++ (and libgcc_s). Nothing is compiled
# for this machine's CPU (no -march): the reference kernels are baseline x86-64, and the JIT
# compiles for the CPU it runs on. The archive must stay within 40 MB.
# With --tests, also dist/graphjit-<version>-tests-linux-x86_64.tar.xz, to unpack over the
# first: the GPU suites' test binaries in bin/ (fixtures_test, gpu_jit_test, cli_test,
# jit_fuzz), the fixtures (tests/data), the bench graphs, the real models where
# bench/models/make_models.py made them (MobileNetV2, the BERT-like encoder, the LSTM) and
# scripts/gpu_check.sh with what it runs (gpu_stream_check.py and the Python package's modules),
# which runs them on a GPU machine (see the README).
#   scripts/release.sh [--tests]
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_MB=40
tests=OFF
case ${1:-} in
  "") ;;
  --tests) tests=ON ;;
  *) echo "usage: scripts/release.sh [--tests]" >&2; exit 2 ;;
esac
test_binaries=(fixtures_test gpu_jit_test cli_test jit_fuzz)

scripts/setup.sh --packages dpkg-dev xz-utils
scripts/fetch_protobuf_source.sh

start=$(date +%s)
# (The TensorFlow plugin, built in the same folder by `pip install .`, shares its objects.)
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHJIT_RELEASE=ON -DGRAPHJIT_TF_PLUGIN=OFF -DGRAPHJIT_BUILD_TESTS=$tests \
  > build-release.configure.log 2>&1 || { cat build-release.configure.log; exit 1; }
rm -f build-release.configure.log
targets=(graphjit graphjit_c cuda_emulator cublaslt_emulator cudnn_emulator)
[ "$tests" = ON ] && targets+=("${test_binaries[@]}")
cmake --build build-release -j2 --target "${targets[@]}"
echo "release: built in $(( $(date +%s) - start )) s"

version=$(sed -n 's/^project(graphjit VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
name=graphjit-$version
stage=build-release/stage/$name
rm -rf build-release/stage
mkdir -p "$stage/bin" "$stage/lib/cuda_emulator" "$stage/licenses" "$stage/include"
strip -o "$stage/bin/graphjit" build-release/bin/graphjit
strip -o "$stage/lib/libgraphjit.so" build-release/lib/libgraphjit.so
strip -o "$stage/lib/libgraphjit_c.so" build-release/lib/libgraphjit_c.so
cp capi/graphjit.h "$stage/include/"
for f in build-release/lib/cuda_emulator/libcuda.so.1 build-release/lib/cuda_emulator/libcublasLt.so.13 \
  build-release/lib/cuda_emulator/libcudnn.so.9; do
  strip -o "$stage/lib/cuda_emulator/$(basename "$f")" "$(readlink -f "$f")"
done

# Every library the binary loads that is not glibc's, libstdc++ or libgcc_s goes into lib/
# under its soname, with its package's license.
system='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so'
stage_abs=$(readlink -f "$stage")
needed() {  # "soname path" of each library that the binary (or an emulator library) loads from outside the folder
  for f in "$stage/bin/graphjit" "$stage/lib/libgraphjit_c.so" "$stage"/lib/cuda_emulator/*; do ldd "$f"; done |
    awk '$2 == "=>" {print $1, $3}' | sort -u | while read -r soname path; do
      [[ $soname =~ $system ]] || [[ $(readlink -f "$path") == "$stage_abs"/* ]] || echo "$soname $path"
    done
}
needed | while read -r soname path; do  # ldd lists what the binary loads, its libraries' libraries too
  [ -f "$path" ] || { echo "release: $soname is not found ($path)" >&2; exit 1; }
  file=$(readlink -f "$path")
  strip -o "$stage/lib/$soname" "$file"
  # dpkg knows a file under the name its package gave it: /usr/lib/... or /lib/...
  package=$(dpkg -S "$file" 2>/dev/null || dpkg -S "${file#/usr}")
  package=${package%%:*}
  cp "/usr/share/doc/$package/copyright" "$stage/licenses/$package.txt"
done
# What is linked in: LLVM and MLIR (Debian's llvm-19 and mlir-19), protobuf (built from its
# source), and the header-only Eigen, CLI11 and nlohmann/json.
for package in libllvm19 libmlir-19 libeigen3-dev libcli11-dev nlohmann-json3-dev; do
  cp "/usr/share/doc/$package/copyright" "$stage/licenses/$package.txt"
done
cp build-deps/protobuf/LICENSE "$stage/licenses/protobuf.txt"
cp README.md "$stage/"

# Nothing outside the folder but the system's own libraries.
outside=$(needed)
if [ -n "$outside" ]; then
  echo "release: these libraries would come from outside the archive:" $outside >&2
  exit 1
fi

pack() {  # staging folder, archive, xz level: prints the archive's size in bytes
  mkdir -p dist
  tar -C "$(dirname "$1")" --owner=0 --group=0 -cf - "$name" | xz -T2 "-$3" > "$2"
  stat -c %s "$2"
}
archive=dist/$name-linux-x86_64.tar.xz
bytes=$(pack "$stage" "$archive" 6)  # -9: 4% smaller, 3x the time
echo "release: $archive, $(( bytes / 1000 / 1000 )) MB ($(du -sh "$stage" | cut -f1) unpacked)"
if (( bytes > MAX_MB * 1000 * 1000 )); then
  echo "release: the archive is over $MAX_MB MB" >&2
  exit 1
fi
wheel=$(python3 scripts/make_wheel.py "$stage" "$version" dist)
echo "release: $wheel, $(( $(stat -c %s "$wheel") / 1000 / 1000 )) MB"

if [ "$tests" = ON ]; then
  tests_stage=build-release/stage-tests/$name
  rm -rf build-release/stage-tests
  mkdir -p "$tests_stage/bin" "$tests_stage/tests/system" "$tests_stage/tests/fuzz" "$tests_stage/bench" "$tests_stage/scripts"
  for t in "${test_binaries[@]}"; do strip -o "$tests_stage/bin/$t" "build-release/bin/$t"; done
  cp -r tests/data "$tests_stage/tests/"
  cp tests/system/*.txt "$tests_stage/tests/system/"
  cp tests/fuzz/jit_fuzz_known.txt "$tests_stage/tests/fuzz/"
  cp -r bench/graphs "$tests_stage/bench/"
  # The peers' GPU runners (JAX, PyTorch), which gpu_check.sh times on the GPU-sized graphs.
  mkdir -p "$tests_stage/bench/peers"
  cp bench/peers/graph_to_jax.py bench/peers/jax_gpu.py bench/peers/graph_to_torch.py bench/peers/torch_gpu.py \
    bench/peers/exported_graph.py bench/peers/peer_table.py \
    "$tests_stage/bench/peers/"
  # The real models that fit (bench/models/make_models.py's, where they were made): a GPU
  # machine may have no TensorFlow to make them. ResNet50 (94 MB) does not fit.
  for model in mobilenet_v2 bert_encoder lstm_classifier; do
    if [ -f "bench/models/out/$model/manifest.json" ]; then
      mkdir -p "$tests_stage/bench/models"
      cp -r "bench/models/out/$model" "$tests_stage/bench/models/"
    fi
  done
  cp scripts/gpu_check.sh scripts/check_fixtures.py scripts/gpu_stream_check.py "$tests_stage/scripts/"
  mkdir -p "$tests_stage/python/graphjit"
  cp python/graphjit/*.py "$tests_stage/python/graphjit/"
  tests_archive=dist/$name-tests-linux-x86_64.tar.xz
  bytes=$(pack "$tests_stage" "$tests_archive" 2)  # mostly float weights: -6 is 2% smaller, 2x the time
  echo "release: $tests_archive, $(( bytes / 1000 / 1000 )) MB: unpack it over the release, then $name/scripts/gpu_check.sh"
fi
