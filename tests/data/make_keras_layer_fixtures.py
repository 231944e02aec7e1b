#!/usr/bin/env python3
"""Makes tests/data/keras_layers: one small Keras model per standard layer and activation.

    bench/peers/.venv/bin/python tests/data/make_keras_layer_fixtures.py [NAME...]

(bench/peers/run.sh makes that environment: TensorFlow 2.21, Keras 3.) Each model is an
input, the layer (some with a Dense or a pooling around it to give it a realistic input),
seeded weights with non-zero biases, saved as .keras and frozen by tools/freeze.py with its
batch size fixed, as a user would. Into tests/data/keras_layers/NAME/ it writes model.pb,
x.npy, TensorFlow's output out_*.npy (a tf.compat.v1.Session on the frozen GraphDef) and
manifest.json; the fixture tests run every one in graphjit and compare. A layer whose
frozen graph graphjit cannot run yet is listed, with why, in
tests/system/keras_layers_unsupported.txt, and the fixture tests check that it fails with
that reason. Everything is seeded: rerunning writes the same values (a few graphs differ in
TensorFlow's own process-wide counters, such as a custom gradient's id).
"""

import json
import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # reproducible reference values

import numpy as np
import tensorflow as tf
import keras

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "keras_layers")
sys.path.insert(0, os.path.join(REPO, "tools"))
import freeze  # noqa: E402  tools/freeze.py

L = keras.layers
IMAGE, SEQUENCE, FEATURES = (8, 8, 3), (6, 4), (5,)


def image(make):
    return IMAGE, make


def sequence(make):
    return SEQUENCE, make


def features(make):
    return FEATURES, make


# name -> (input shape without the batch, a function making the layers applied in order)
LAYERS = {
    "dense": features(lambda: [L.Dense(4)]),
    "conv1d": sequence(lambda: [L.Conv1D(3, 2, padding="same")]),
    "conv2d": image(lambda: [L.Conv2D(4, 3, padding="same")]),
    "conv2d_strided_valid": image(lambda: [L.Conv2D(4, 3, strides=2)]),
    "conv2d_transpose": image(lambda: [L.Conv2DTranspose(4, 3, strides=2, padding="same")]),
    "depthwise_conv2d": image(lambda: [L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)]),
    "separable_conv2d": image(lambda: [L.SeparableConv2D(4, 3, padding="same")]),
    "max_pooling2d": image(lambda: [L.MaxPooling2D(2)]),
    "average_pooling2d": image(lambda: [L.AveragePooling2D(2)]),
    "global_average_pooling2d": image(lambda: [L.GlobalAveragePooling2D()]),
    "global_max_pooling2d": image(lambda: [L.GlobalMaxPooling2D()]),
    "max_pooling1d": sequence(lambda: [L.MaxPooling1D(2)]),
    "zero_padding2d": image(lambda: [L.ZeroPadding2D(((1, 2), (0, 1)))]),
    "cropping2d": image(lambda: [L.Cropping2D(((1, 0), (2, 1)))]),
    "batch_normalization": image(lambda: [L.BatchNormalization()]),
    "layer_normalization": sequence(lambda: [L.LayerNormalization()]),
    "dropout": features(lambda: [L.Dense(4), L.Dropout(0.5)]),
    "flatten": image(lambda: [L.Flatten()]),
    "reshape": image(lambda: [L.Reshape((16, 12))]),
    "permute": image(lambda: [L.Permute((3, 1, 2))]),
    "repeat_vector": features(lambda: [L.RepeatVector(3)]),
    "multi_head_attention": sequence(lambda: [("attention", L.MultiHeadAttention(num_heads=2, key_dim=3))]),
    "simple_rnn": sequence(lambda: [L.SimpleRNN(3)]),
    "lstm": sequence(lambda: [L.LSTM(3)]),
    "gru": sequence(lambda: [L.GRU(3)]),
    "softmax_layer": features(lambda: [L.Dense(4), L.Softmax()]),
    "leaky_relu_layer": features(lambda: [L.Dense(4), L.LeakyReLU(negative_slope=0.2)]),
    "prelu": features(lambda: [L.Dense(4), L.PReLU()]),
    "elu_layer": features(lambda: [L.Dense(4), L.ELU()]),
    "relu_layer": features(lambda: [L.Dense(4), L.ReLU(max_value=6.0)]),
}
for act in ("relu", "sigmoid", "tanh", "softmax", "softplus", "softsign", "selu", "elu", "exponential", "gelu",
            "silu", "hard_sigmoid", "relu6", "log_softmax", "mish", "linear"):
    LAYERS["activation_" + act] = features(lambda act=act: [L.Dense(4, activation=act)])


def build(name):
    shape, make_layers = LAYERS[name]
    x_in = keras.Input(shape=shape, name="x")
    h = x_in
    for layer in make_layers():
        if isinstance(layer, tuple):  # self-attention: the layer takes (query, value)
            h = layer[1](h, h)
        else:
            h = layer(h)
    model = keras.Model(x_in, h, name=name)
    rng = np.random.default_rng(sum(map(ord, name)))
    for w in model.weights:  # seeded, and biases, betas and statistics not at their defaults
        v = rng.standard_normal(w.shape) * (0.1 if w.path.endswith(("bias", "beta", "moving_mean")) else 0.5)
        if w.path.endswith(("moving_variance", "gamma")):
            v = 0.5 + np.abs(v)
        w.assign(v.astype(np.float32))
    x = rng.standard_normal((2,) + shape).astype(np.float32)
    return model, x


def make(name):
    keras.backend.clear_session()
    keras.utils.set_random_seed(7)
    model, x = build(name)
    frozen = freeze.freeze_keras_model(model, x.shape)
    gd = frozen.graph_def
    feed = freeze.fetch_name(frozen.inputs[0].name)
    output = freeze.fetch_name(frozen.outputs[0].name)
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(gd, name="")
    with tf.compat.v1.Session(graph=g) as sess:
        y = sess.run(output + ":0", {feed + ":0": x})
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "model.pb"), "wb") as f:
        f.write(gd.SerializeToString(deterministic=True))
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "out_%s.npy" % output.replace("/", "_")), y)
    ops = sorted({n.op for n in gd.node} - {"Const", "Identity", "NoOp", "Placeholder"})
    manifest = {"model": "model.pb", "feeds": {feed: "x.npy"}, "fetches": {output: "out_%s.npy" % output.replace("/", "_")},
                "description": "Keras %s, input %s, frozen by tools/freeze.py" % (name, list(x.shape)),
                "graph_ops": ops, "generator": "tests/data/make_keras_layer_fixtures.py (tensorflow %s, keras %s)"
                % (tf.__version__, keras.__version__),
                "tolerance": {"rtol": 1e-5, "atol": 1e-5}}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print("%-28s %s" % (name, " ".join(ops)))


def main(argv):
    unknown = [a for a in argv if a not in LAYERS]
    if unknown:
        sys.exit("make_keras_layer_fixtures.py: unknown layer(s): " + ", ".join(unknown))
    tf.config.threading.set_intra_op_parallelism_threads(1)
    for name in argv or LAYERS:
        make(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
