#!/usr/bin/env bash
# `graphjit aot` end to end: the MNIST, Keras MLP and transformer-block fixtures compiled
# ahead of time,
# the example program (examples/aot) built with CMake against each, its results equal to
# `graphjit run`'s (the JIT at ON_2, within 1e-5) and within the fixtures' tolerance of
# TensorFlow's; the programs depend on no LLVM, MLIR or graphjit library; a graph with ops
# the JIT does not compile is refused with exit status 2, naming them.
#   tests/aot/aot_example_test.sh GRAPHJIT SOURCE_DIR
set -euo pipefail
G=$1
SRC=$2
D=$SRC/tests/data
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$G" aot "$D/mnist_softmax/model.pb" --shape x=8,784 --shape y_=8,10 --fetch y --fetch xent --fetch cross_entropy -o "$WORK/gen" --class Mnist
"$G" aot "$D/keras_mlp/model.pb" --shape input=4,20 --fetch Identity -o "$WORK/gen" --class KerasMlp
"$G" aot "$D/transformer_block/model.pb" --shape x=2,16,32 --fetch Identity -o "$WORK/gen" --class Transformer
cmake -S "$SRC/examples/aot" -B "$WORK/build" -DGRAPHJIT_AOT_DIR="$WORK/gen" "-DGRAPHJIT_AOT_CLASSES=Mnist;KerasMlp;Transformer" > /dev/null
cmake --build "$WORK/build" -j2 > /dev/null
mkdir -p "$WORK"/{aot,run}_{mnist,mlp,transformer}

M=$D/mnist_softmax
"$WORK/build/aot_Mnist" x="$M/x.npy" y_="$M/y_.npy" "$WORK/aot_mnist"
"$G" run "$M/model.pb" --feed x="$M/x.npy" --feed y_="$M/y_.npy" --fetch y --fetch xent --fetch cross_entropy --jit on_2 --out "$WORK/run_mnist" > /dev/null
for f in y xent cross_entropy; do
  "$G" compare "$WORK/aot_mnist/$f.npy" "$WORK/run_mnist/$f.npy" --rtol 1e-5 --atol 1e-6
  "$G" compare "$WORK/aot_mnist/$f.npy" "$M/out_$f.npy" --rtol 1e-5 --atol 1e-6
done

K=$D/keras_mlp
"$WORK/build/aot_KerasMlp" input="$K/input.npy" "$WORK/aot_mlp"
"$G" run "$K/model.pb" --feed input="$K/input.npy" --jit on_2 --out "$WORK/run_mlp" > /dev/null
"$G" compare "$WORK/aot_mlp/Identity.npy" "$WORK/run_mlp/Identity.npy" --rtol 1e-5 --atol 1e-6
"$G" compare "$WORK/aot_mlp/Identity.npy" "$K/out_Identity.npy" --rtol 1e-5 --atol 1e-6

T=$D/transformer_block
"$WORK/build/aot_Transformer" x="$T/x.npy" "$WORK/aot_transformer"
"$G" run "$T/model.pb" --feed x="$T/x.npy" --jit on_2 --out "$WORK/run_transformer" > /dev/null
"$G" compare "$WORK/aot_transformer/Identity.npy" "$WORK/run_transformer/Identity.npy" --rtol 1e-5 --atol 1e-6
"$G" compare "$WORK/aot_transformer/Identity.npy" "$T/out_Identity.npy" --rtol 1e-4 --atol 1e-5

for p in aot_Mnist aot_KerasMlp aot_Transformer; do
  if ldd "$WORK/build/$p" | grep -Ei 'llvm|mlir|graphjit|protobuf|dnnl'; then
    echo "aot_example_test: $p depends on the libraries above" >&2
    exit 1
  fi
done

# Wrong input: a shape the placeholder does not have.
status=0
"$G" aot "$K/model.pb" --shape input=4,784 --fetch Identity -o "$WORK/bad" 2> "$WORK/bad.err" || status=$?
if [ "$status" != 2 ] || ! grep -q "does not match the placeholder's \[?,20\]" "$WORK/bad.err"; then
  echo "aot_example_test: a wrong --shape should exit 2 saying so (exit $status):" >&2
  cat "$WORK/bad.err" >&2
  exit 1
fi

status=0
"$G" aot "$D/small_cnn/model.pb" --shape image=4,28,28,1 --fetch Identity -o "$WORK/cnn" 2> "$WORK/cnn.err" || status=$?
if [ "$status" != 2 ] || ! grep -q "cannot be compiled" "$WORK/cnn.err" || ! grep -q "(_FusedConv2D)" "$WORK/cnn.err" ||
   ! grep -q "(MaxPool)" "$WORK/cnn.err" || [ -e "$WORK/cnn" ]; then
  echo "aot_example_test: a graph with convolutions should exit 2 naming them (exit $status):" >&2
  cat "$WORK/cnn.err" >&2
  exit 1
fi
echo "aot_example_test: passed"
