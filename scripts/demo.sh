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
echo "== What the JIT compiles in the Keras transformer block (clustering at ON_1), and why the rest is left out"
$G clusters tests/data/transformer_block/model.pb --jit on > build/demo/transformer_clusters.txt
head -8 build/demo/transformer_clusters.txt
echo "   ... ($(wc -l < build/demo/transformer_clusters.txt) lines in build/demo/transformer_clusters.txt)"
D=tests/data/transformer_block
echo "== The transformer block with the JIT on: each cluster compiled (layer norms and the softmax are one kernel each)"
GRAPHJIT_FLAGS=--jit_verbose $G run $D/model.pb --feed x=$D/x.npy --jit on --out build/demo/transformer --repeat 50 --stats
$G compare build/demo/transformer/Identity.npy $D/out_Identity.npy --rtol 1e-4 --atol 1e-5
$G dump $D/model.pb --feed x=$D/x.npy --jit on --to build/demo/transformer_dump > /dev/null
echo "   its fusion plans (all stages in build/demo/transformer_dump/):"
cat build/demo/transformer_dump/cluster_*/01_fusion_plan.txt | sed 's/^/   /'
echo
echo "== Softmax over rows of 1024, as TensorFlow's Python writes it (Max, Sub, Exp, Sum, RealDiv): JIT off vs on, 1 thread"
$G bench bench/graphs/softmax_decomposed_1024.pb --jit off,on --iters 50
echo
echo "== Layer norm from primitives, 2 threads"
$G bench bench/graphs/layer_norm.pb --jit off,on --iters 50 --threads 2
echo
echo "== The same MLP on a batch of 4096 random rows, 2 threads"
$G run tests/data/keras_mlp/model.pb --random-feeds --shape input=4096,20 --threads 2 --repeat 50
echo
echo "== The GPU backend on the CUDA emulator (gpu-emu: the PTX graphjit emits runs on this CPU; no GPU is used)"
$G devices
D=tests/data/transformer_block
echo "   The transformer block on the GPU, unfused (each op its own kernel) and fused, its GEMMs in"
echo "   float32 as TensorFlow's CPU computed the fixture (--gpu_tf32=off), then in TF32 (the default):"
F32="GRAPHJIT_FLAGS=--gpu_tf32=off"
env $F32 $G run $D/model.pb --feed x=$D/x.npy --device gpu-emu --jit off --out build/demo/transformer_gpu_off --stats 2>&1 | grep -v "^graphjit: device"
env $F32 $G run $D/model.pb --feed x=$D/x.npy --device gpu-emu --jit on --out build/demo/transformer_gpu_on --stats 2>&1 | grep -v "^graphjit: device"
$G compare build/demo/transformer_gpu_off/Identity.npy $D/out_Identity.npy --rtol 1e-4 --atol 1e-5
$G compare build/demo/transformer_gpu_on/Identity.npy $D/out_Identity.npy --rtol 1e-4 --atol 1e-5
$G run $D/model.pb --feed x=$D/x.npy --device gpu-emu --jit on --out build/demo/transformer_gpu_tf32 2>&1 | grep -v "^graphjit: device"
$G compare build/demo/transformer_gpu_tf32/Identity.npy $D/out_Identity.npy --rtol 1e-2 --atol 1e-2
echo "   Fused vs unfused GPU kernels, with the performance model's time for the emulated H100 (the wall times are the emulator's):"
for g in softmax_decomposed_1024 layer_norm gelu_exact bias_relu_tanh sum_of_squares; do
  echo "-- $g"
  $G bench bench/graphs/$g.pb --device gpu-emu --jit off,on --iters 1 2>&1 | sed -n '/^GPU kernels/,$p'
done
echo "   Convolutional networks: cuDNN's convolutions, the pools, batch norms and epilogues in compiled"
echo "   kernels, nothing on the CPU (cpu_ops=0); fused against unfused (the same cuDNN calls, each"
echo "   epilogue op a kernel):"
env $F32 $G run tests/data/mobilenet_v2_small/model.pb --feed input_layer=tests/data/mobilenet_v2_small/x.npy \
  --fetch Identity --device gpu-emu --jit on --out build/demo/mobilenet_gpu --stats 2>&1 | grep "^jit:\|^cpu_ops"
$G compare build/demo/mobilenet_gpu/Identity.npy tests/data/mobilenet_v2_small/out_Identity.npy --rtol 1e-3 --atol 1e-4
for m in "small_cnn --shape image=8,28,28,1" "mobilenet_v2_small"; do
  set -- $m
  echo "-- $1"
  $G bench tests/data/$1/model.pb ${2:+$2 $3} --device gpu-emu --jit off,on --iters 1 2>&1 | sed -n '/^GPU kernels/,$p' |
    grep -v "^on  *cluster\|^off  *cluster"
done
echo
echo "== graphjit inside TensorFlow: TensorFlow's MNIST XLA tutorial (softmax regression, 1000 steps of"
echo "   GradientDescentOptimizer(0.5) in a tf.compat.v1.Session) without and with the plugin at ON_1"
scripts/setup_tf_plugin.sh
build-tf/venv/bin/python examples/mnist_softmax_xla.py --trace build/demo/mnist_timeline.json 2>&1 | grep -v -E "^(WARNING: All log|I0000|W0000|To enable the following)"
echo
echo "== graphjit from Python (the package python/graphjit over the C API, capi/graphjit.h): the BERT-like"
echo "   encoder from NumPy on the CPU and on the CUDA emulator"
GRAPHJIT_LIBRARY=build/lib/libgraphjit_c.so PYTHONPATH=python build-tf/venv/bin/python examples/python_api.py
