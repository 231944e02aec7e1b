#!/usr/bin/env bash
# The demo: builds graphjit, then runs the bundled TensorFlow models end to end,
# printing each fetched tensor, how far it is from TensorFlow's own output, and timings.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

G=build/bin/graphjit
echo
echo "== MNIST softmax regression (TensorFlow 1 graph, frozen): y = softmax(x @ W + b) and its loss"
D=tests/data/mnist_softmax
$G run $D/model.pb --feed x=$D/x.npy --feed y_=$D/y_.npy --fetch y --fetch cross_entropy --fetch xent \
   --out build/demo/mnist --repeat 200
echo
echo "== Keras MLP (Dense-ReLU-Dense-ReLU-Dense-Softmax, frozen), from its text GraphDef"
D=tests/data/keras_mlp
$G run $D/model.pbtxt --feed input=$D/input.npy --out build/demo/keras_mlp --repeat 200
echo
echo "== Agreement with TensorFlow's outputs"
$G compare build/demo/mnist/y.npy tests/data/mnist_softmax/out_y.npy
$G compare build/demo/mnist/cross_entropy.npy tests/data/mnist_softmax/out_cross_entropy.npy
$G compare build/demo/keras_mlp/Identity.npy tests/data/keras_mlp/out_Identity.npy
echo
echo "== What the JIT would compile in the Keras transformer block (clustering at ON_2), and why the rest is left out"
$G clusters tests/data/transformer_block/model.pb --jit on_2 | head -12
echo "   ..."
D=tests/data/transformer_block
$G run $D/model.pb --feed x=$D/x.npy --jit on_2 --out build/demo/transformer --repeat 50
$G compare build/demo/transformer/Identity.npy $D/out_Identity.npy --rtol 1e-4 --atol 1e-5
echo
echo "== The same MLP on a batch of 4096 random rows, 2 threads"
$G run tests/data/keras_mlp/model.pb --random-feeds --shape input=4096,20 --threads 2 --repeat 50
