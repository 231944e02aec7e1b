#!/usr/bin/env python3
"""Write the benchmark graphs as TensorFlow's Python API writes them.

How to run (from the repository root), with the pinned fixture environment:

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install -r tests/data/requirements.txt
    /tmp/tfvenv/bin/python bench/graphs/make_bench_graphs.py [cpu|large|gpu]

Each graph is a tf.function traced for one static input shape, with its
weights as Const nodes (made inside the traced function), written to bench/graphs/<name>.pb (deterministic binary
GraphDef). Its input is the placeholder "x" and its output the node "y".
bench/graphs/manifest.json lists, per graph, the input shape, the output and
what the work is. The same files feed graphjit's Google Benchmark suite
(bench/jit_bench.cc), `graphjit bench` and the peer comparison.

bench/graphs/gpu/ (with its own manifest.json) holds GPU-sized versions: 8192 x 4096
float32 inputs (128 MiB), larger than an H100's or H200's L2 cache (50-60 MB), so a
fused kernel's DRAM bandwidth can be measured on them; the tanh(relu(x + b)) of
8192 x 8192 and the dense + softmax of an 8192 x 1024 x 1024 GEMM are the sizes measured
on an H200 before. They are for a GPU (scripts/gpu_check.sh --device gpu); the CPU and
the CUDA emulator's checks run the graphs of bench/graphs only. Each also comes as
<name>.json, the graph as bench/peers' JAX and PyTorch runners take it (a GPU machine
has no TensorFlow; their constants are fetched by graphjit there).

bench/graphs/large/ (with its own manifest.json) holds the elementwise, softmax and layer
norm graphs at the sizes a CPU's users run: inputs of 16 MiB and 64 MiB (past every
core's L2 cache), for bench/peers, where each is timed against the copy of its bytes.
"""

import json
import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

try:
    import numpy as np
    import tensorflow as tf
except ImportError as e:  # pragma: no cover
    print("make_bench_graphs.py: cannot import TensorFlow (%s); see the docstring" % e, file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
import peers  # noqa: E402  (graph_json: the graphs for the JAX and PyTorch runners)
ELEMENTS = 1 << 20  # every [N x D] input holds 2^20 floats (4 MiB)


def softmax_decomposed(x):
    # As it is written in Python: exp(x - max(x)) / sum(exp(x - max(x))).
    e = tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))
    return e / tf.reduce_sum(e, axis=-1, keepdims=True)


def softmax_op(x):
    return tf.nn.softmax(x)


def bias_relu_tanh(d):
    b = np.random.default_rng(1).normal(size=[d]).astype(np.float32)
    return lambda x: tf.tanh(tf.nn.relu(tf.nn.bias_add(x, tf.constant(b))))


def layer_norm(d):
    rng = np.random.default_rng(2)
    gamma = rng.normal(1.0, 0.1, size=[d]).astype(np.float32)
    beta = rng.normal(0.0, 0.1, size=[d]).astype(np.float32)

    def f(x):
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
        return (x - mean) * tf.math.rsqrt(variance + 1e-5) * tf.constant(gamma) + tf.constant(beta)

    return f


def gelu_exact(x):
    return 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


def dense_softmax(d_in, d_out):
    rng = np.random.default_rng(3)
    w = (rng.normal(size=[d_in, d_out]) / math.sqrt(d_in)).astype(np.float32)
    b = rng.normal(0.0, 0.1, size=[d_out]).astype(np.float32)
    return lambda x: softmax_decomposed(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, tf.constant(w)), tf.constant(b))))


def column_mean(x):
    # Per-feature means over a batch, as batch normalization computes them.
    return tf.reduce_mean(x, axis=0)


def sum_of_squares(x):
    # An L2 loss: every element into one number.
    return tf.reduce_sum(tf.square(x))


def column_sum_of_squares(x):
    # Per-column sums of squares over the rows: a column reduction of x * x.
    return tf.reduce_sum(tf.square(x), axis=0)


def gpu_graphs():
    rows, cols = 8192, 4096
    return [
        ("softmax_op", [rows, cols], softmax_op, "the Softmax op over rows of %d" % cols),
        ("softmax_decomposed", [rows, cols], softmax_decomposed,
         "softmax over rows of %d from Max, Sub, Exp, Sum, RealDiv" % cols),
        ("layer_norm", [rows, cols], layer_norm(cols), "layer norm over rows of %d from primitives" % cols),
        ("gelu_exact", [rows, cols], gelu_exact, "0.5 x (1 + erf(x / sqrt 2))"),
        ("bias_relu_tanh", [rows, cols], bias_relu_tanh(cols), "tanh(relu(x + b))"),
        ("bias_relu_tanh_8192", [rows, rows], bias_relu_tanh(rows), "tanh(relu(x + b)), 8192 x 8192"),
        ("dense_softmax", [rows, 1024], dense_softmax(1024, 1024), "softmax(relu(x @ W + b)), W 1024x1024"),
        ("column_sum_of_squares", [rows, cols], column_sum_of_squares, "sum over the rows of x^2 (%d outputs)" % cols),
        ("batch_norm_train_step", [256, 32, 32, 128], batch_norm_train_step(128),
         "a training batch norm's forward and backward over 128 channels (NHWC)"),
        # Rows longer than a block's shared memory (1 MB each): a thread-block cluster per row.
        ("softmax_long_rows", [128, 262144], softmax_decomposed,
         "softmax over rows of 262144 from Max, Sub, Exp, Sum, RealDiv"),
    ]


def graphs():
    g = []
    for d in (128, 1024, 8192):
        n = ELEMENTS // d
        g.append(("softmax_decomposed_%d" % d, [n, d], softmax_decomposed,
                  "softmax over rows of %d from Max, Sub, Exp, Sum, RealDiv" % d))
        g.append(("softmax_op_%d" % d, [n, d], softmax_op, "the Softmax op over rows of %d" % d))
    g.append(("bias_relu_tanh", [1024, 1024], bias_relu_tanh(1024), "tanh(relu(x + b))"))
    g.append(("layer_norm", [1024, 1024], layer_norm(1024), "layer norm over rows of 1024 from primitives"))
    g.append(("gelu_exact", [1024, 1024], gelu_exact, "0.5 x (1 + erf(x / sqrt 2))"))
    g.append(("dense_softmax", [1024, 256], dense_softmax(256, 256), "softmax(relu(x @ W + b)), W 256x256"))
    g.append(("column_mean", [1024, 1024], column_mean, "mean over the batch (axis 0)"))
    g.append(("sum_of_squares", [1024, 1024], sum_of_squares, "sum of x^2 over every element"))
    return g


def large_graphs():
    g = []
    for mib, square, rows in ((16, 2048, 4096), (64, 4096, 16384)):
        # 2^22 or 2^24 floats: square inputs for the elementwise graphs, rows of 1024 for the others.
        g.append(("bias_relu_tanh_%dmb" % mib, [square, square], bias_relu_tanh(square), "tanh(relu(x + b))"))
        g.append(("gelu_exact_%dmb" % mib, [square, square], gelu_exact, "0.5 x (1 + erf(x / sqrt 2))"))
        g.append(("softmax_op_%dmb" % mib, [rows, 1024], softmax_op, "the Softmax op over rows of 1024"))
        g.append(("softmax_decomposed_%dmb" % mib, [rows, 1024], softmax_decomposed,
                  "softmax over rows of 1024 from Max, Sub, Exp, Sum, RealDiv"))
        g.append(("layer_norm_%dmb" % mib, [rows, 1024], layer_norm(1024), "layer norm over rows of 1024 from primitives"))
    return g


def batch_norm_train_step(c):
    # A batch norm's training step: the forward op on the batch's statistics (two column
    # reductions and a normalization), relu(y) standing for the gradient from above, and
    # the backward op's dx (two more column reductions and an elementwise pass).
    rng = np.random.default_rng(4)
    scale = rng.normal(1.0, 0.1, size=[c]).astype(np.float32)
    offset = rng.normal(0.0, 0.1, size=[c]).astype(np.float32)
    empty = np.zeros([0], np.float32)

    def f(x):
        y, _, _, mean, variance, reserve = tf.raw_ops.FusedBatchNormV3(
            x=x, scale=tf.constant(scale), offset=tf.constant(offset), mean=tf.constant(empty),
            variance=tf.constant(empty), epsilon=1e-3, is_training=True)
        dx = tf.raw_ops.FusedBatchNormGradV3(
            y_backprop=tf.nn.relu(y), x=x, scale=tf.constant(scale), reserve_space_1=mean,
            reserve_space_2=variance, reserve_space_3=reserve, epsilon=1e-3, is_training=True)[0]
        return dx

    return f


def write(folder, graphs, peer_json=False):
    os.makedirs(folder, exist_ok=True)
    manifest = {}
    for name, shape, fn, what in graphs:
        f = tf.function(lambda x, fn=fn: tf.identity(fn(x), name="y"),
                        input_signature=[tf.TensorSpec(shape, tf.float32, name="x")])
        gd = f.get_concrete_function().graph.as_graph_def()
        with open(os.path.join(folder, name + ".pb"), "wb") as out:
            out.write(gd.SerializeToString(deterministic=True))
        if peer_json:
            with open(os.path.join(folder, name + ".json"), "w") as out:
                json.dump(peers.graph_json(gd)[0], out, sort_keys=True)
        manifest[name] = {"input": "x", "shape": shape, "output": "y", "work": what}
        print("%-24s %-14s %3d nodes" % (name, shape, len(gd.node)))
    manifest["_generator"] = "bench/graphs/make_bench_graphs.py (tensorflow %s)" % tf.__version__
    with open(os.path.join(folder, "manifest.json"), "w") as out:
        json.dump(manifest, out, indent=2, sort_keys=True)
        out.write("\n")


def main():
    # make_bench_graphs.py [cpu|large|gpu]: these sets only (default: all).
    which = sys.argv[1:] or ["cpu", "large", "gpu"]
    if "cpu" in which:
        write(HERE, graphs())
    if "large" in which:
        write(os.path.join(HERE, "large"), large_graphs())
    if "gpu" in which:
        write(os.path.join(HERE, "gpu"), gpu_graphs(), peer_json=True)


if __name__ == "__main__":
    main()
