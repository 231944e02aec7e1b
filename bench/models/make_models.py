#!/usr/bin/env python3
"""Makes the real models graphjit is measured on, frozen as a TensorFlow user would.

    bench/peers/.venv/bin/python bench/models/make_models.py [NAME...] [--out DIR]

(bench/peers/run.sh makes that environment; any Python that imports TensorFlow 2.x and
Keras 3 works.) For each model, seeded, into DIR/NAME/ (default bench/models/out, which git
ignores: the files are tens of MB):
  model.pb       the Keras model frozen by tools/freeze.py, batch size fixed
  x.npy          a seeded input
  out_*.npy      TensorFlow's values of the output and of tensors at several depths,
                 computed by a tf.compat.v1.Session on the frozen GraphDef itself
  manifest.json  {"model", "feeds", "fetches", "depths", "output", "tolerance", ...}

Models (TensorFlow 2.21's Keras 3 writes the graphs):
  mobilenet_v2   keras.applications.MobileNetV2, 96x96x3, 10 classes, batch 4
  resnet50       keras.applications.ResNet50, 64x64x3, 10 classes, batch 4
  bert_encoder   2 encoder blocks (MultiHeadAttention 4 heads of 64, LayerNorm, Dense 1024
                 with Keras's default exact GELU, Dense 256), batch 8, sequence 128, width 256
  lstm_classifier  LSTM(64) over 32 steps of 16 features, Dense(10) with softmax, batch 8
  mobilenet_v2_small  MobileNetV2 with width 0.35, 32x32x3, batch 2: the test fixture
                 tests/data/mobilenet_v2_small (`make_models.py mobilenet_v2_small --out
                 tests/data`), which the fixture tests check at every depth recorded
  bert_encoder_small, lstm_classifier_small  the two above at sizes the CUDA emulator runs
                 in a test (2 blocks of 2 heads of 16, width 32, Dense 128, sequence 16,
                 batch 2; LSTM(16) over 8 steps of 4 features, batch 2): test fixtures too
  bert_encoder_small_mixed  bert_encoder_small under Keras's mixed_float16 policy (float16
                 GEMMs and activations, float32 weights cast in the graph, a float32
                 output): a test fixture
Random weights would leave MobileNetV2's activations dead (its softmax is exactly uniform):
the batch-norm statistics are set from the activations of a seeded batch, layer by layer,
so every depth carries signal (calibrate_batch_norms).
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # reproducible reference values

import numpy as np
import tensorflow as tf
import keras

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools"))
import freeze  # noqa: E402  tools/freeze.py

# Ops whose outputs can be a layer's activations (the batch-sized ones are picked).
ACTIVATIONS = {"Relu", "Relu6", "AddV2", "Add", "_FusedConv2D", "Conv2D", "DepthwiseConv2dNative",
               "FusedBatchNormV3", "Einsum", "MatMul", "BatchMatMulV2", "Softmax", "Mul", "MaxPool",
               "Mean", "BiasAdd"}


def calibrate_batch_norms(model, rng):
    """Sets each BatchNormalization's moving mean and variance to its input's statistics on
    a seeded batch of 16, layer by layer from the input, so each layer sees the activations
    the calibrated layers before it make: what training would converge to, without training.

    A variance is at least a tenth of the layer's mean variance: a channel that is (nearly)
    constant on the batch would otherwise be divided by almost 0 and make the model chaotic
    (a last-bit difference anywhere changing its output).
    """
    x = rng.standard_normal((16,) + tuple(model.inputs[0].shape[1:])).astype(np.float32)
    for layer in model.layers:
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        probe = keras.Model(model.inputs, layer.input)
        a = probe(x, training=False).numpy().astype(np.float64)
        axes = tuple(range(a.ndim - 1))
        var = a.var(axis=axes)
        layer.moving_mean.assign(a.mean(axis=axes).astype(np.float32))
        layer.moving_variance.assign(np.maximum(var, 0.1 * var.mean()).astype(np.float32))


def mobilenet_v2(rng):
    model = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), classes=10)
    x = rng.standard_normal((4, 96, 96, 3)).astype(np.float32)
    calibrate_batch_norms(model, rng)
    return model, x


def resnet50(rng):
    model = keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
    x = rng.standard_normal((4, 64, 64, 3)).astype(np.float32)
    calibrate_batch_norms(model, rng)
    return model, x


def bert_encoder(rng, batch=8, seq=128, width=256, heads=4, ffn=1024, mixed=False):
    L = keras.layers
    if mixed:  # Keras's mixed precision: float16 compute, float32 weights and output
        keras.mixed_precision.set_global_policy("mixed_float16")
    x_in = keras.Input(shape=(seq, width), name="x")
    h = x_in
    for i in range(2):
        a = L.MultiHeadAttention(num_heads=heads, key_dim=width // heads, name="mha%d" % i)(h, h)
        h = L.LayerNormalization(name="ln%d_a" % i)(L.Add()([h, a]))
        f = L.Dense(width, name="ffn%d_out" % i)(L.Dense(ffn, activation="gelu", name="ffn%d_in" % i)(h))
        h = L.LayerNormalization(name="ln%d_b" % i)(L.Add()([h, f]))
    if mixed:
        h = L.Activation("linear", dtype="float32", name="output")(h)
        keras.mixed_precision.set_global_policy("float32")
    model = keras.Model(x_in, h, name="bert_encoder")
    for layer in model.layers:  # seeded biases: zeros would hide a wrong broadcast
        for w in layer.weights:
            if w.path.endswith("bias") or w.path.endswith("beta"):
                w.assign((rng.standard_normal(w.shape) * 0.1).astype(np.float32))
    x = rng.standard_normal((batch, seq, width)).astype(np.float32)
    return model, x


def bert_encoder_small(rng):
    return bert_encoder(rng, batch=2, seq=16, width=32, heads=2, ffn=128)


def bert_encoder_small_mixed(rng):
    return bert_encoder(rng, batch=2, seq=16, width=32, heads=2, ffn=128, mixed=True)


def lstm_classifier(rng, batch=8, steps=32, features=16, units=64):
    x_in = keras.Input(shape=(steps, features), name="x")
    h = keras.layers.LSTM(units, name="lstm")(x_in)
    model = keras.Model(x_in, keras.layers.Dense(10, activation="softmax", name="head")(h), name="lstm_classifier")
    for w in model.weights:
        if w.path.endswith("bias"):
            w.assign((rng.standard_normal(w.shape) * 0.1).astype(np.float32))
    return model, rng.standard_normal((batch, steps, features)).astype(np.float32)


def lstm_classifier_small(rng):
    return lstm_classifier(rng, batch=2, steps=8, features=4, units=16)


def mobilenet_v2_small(rng):
    model = keras.applications.MobileNetV2(weights=None, alpha=0.35, input_shape=(32, 32, 3), classes=10)
    x = rng.standard_normal((2, 32, 32, 3)).astype(np.float32)
    calibrate_batch_norms(model, rng)
    return model, x


MODELS = {"mobilenet_v2": mobilenet_v2, "resnet50": resnet50, "bert_encoder": bert_encoder,
          "lstm_classifier": lstm_classifier, "mobilenet_v2_small": mobilenet_v2_small,
          "bert_encoder_small": bert_encoder_small, "bert_encoder_small_mixed": bert_encoder_small_mixed,
          "lstm_classifier_small": lstm_classifier_small}
FIXTURES = {"mobilenet_v2_small", "bert_encoder_small", "bert_encoder_small_mixed",
            "lstm_classifier_small"}  # for tests/data
# Another float32 implementation (summation order, Winograd, folded batch norms) differs from
# TensorFlow by a few 1e-6 per layer; ResNet50's 53 layers grow that to a few 1e-4 at its
# deepest recorded depth (values up to 13): TensorFlow with and without its oneDNN kernels
# differ by 2.5e-4 there.
# The mixed-precision encoder's float16 tensors carry 11-bit mantissas: 1 unit in the last
# place is 1e-3 relative, and TensorFlow's CPU kernels and cuBLASLt's float32 sums round
# differently layer after layer.
TOLERANCE = {"resnet50": 1e-3, "bert_encoder_small_mixed": 3e-2}


def depths(graph_def, output, batch, count=4):
    """`count` activations (batch-sized outputs of ACTIVATIONS ops) spread evenly through the
    graph's node order, then the output."""
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")

    def batch_sized(name):
        shape = g.get_tensor_by_name(name + ":0").shape
        return shape.rank is not None and shape.rank >= 2 and shape[0] == batch

    # (Not inside a while loop: a tensor of one iteration cannot be fetched.)
    nodes = [n.name for n in graph_def.node
             if n.op in ACTIVATIONS and n.name != output and "/while/" not in n.name and batch_sized(n.name)]
    picks = [nodes[int(len(nodes) * (k + 1) / (count + 1))] for k in range(count)] if nodes else []
    return picks + [output]


def run_frozen(graph_def, feeds, fetches):
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf.compat.v1.Session(graph=g, config=config) as sess:
        return sess.run([f + ":0" for f in fetches], {k + ":0": v for k, v in feeds.items()})


def make(name, out_dir):
    keras.backend.clear_session()
    keras.utils.set_random_seed(2026)
    rng = np.random.default_rng(2026)
    model, x = MODELS[name](rng)
    frozen = freeze.freeze_keras_model(model, x.shape)
    gd = frozen.graph_def
    feed = freeze.fetch_name(frozen.inputs[0].name)
    output = freeze.fetch_name(frozen.outputs[0].name)
    fetches = depths(gd, output, x.shape[0])
    values = run_frozen(gd, {feed: x}, fetches)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.pb"), "wb") as f:
        f.write(gd.SerializeToString(deterministic=True))
    np.save(os.path.join(d, "x.npy"), x)
    outs = {}
    for fetch, v in zip(fetches, values):
        fn = "out_%s.npy" % fetch.replace("/", "_")
        np.save(os.path.join(d, fn), v)
        outs[fetch] = fn
    manifest = {"model": "model.pb", "feeds": {feed: "x.npy"}, "fetches": outs, "output": output,
                "nodes": len(gd.node), "tensorflow": tf.__version__, "keras": keras.__version__,
                "tolerance": {"rtol": TOLERANCE.get(name, 1e-4), "atol": TOLERANCE.get(name, 1e-4)}}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    spread = ", ".join("%s %.3g" % (k.split("/")[-1], float(np.std(v))) for k, v in zip(fetches, values))
    print("%s: %d nodes, feed %s %s, std at depths: %s" % (name, len(gd.node), feed, list(x.shape), spread))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", choices=[[]] + list(MODELS), default=[],
                   help="default: the benchmark models (all but the test fixtures)")
    p.add_argument("--out", default=os.path.join(HERE, "out"))
    a = p.parse_args(argv)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    for name in a.names or [m for m in MODELS if m not in FIXTURES]:
        make(name, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
