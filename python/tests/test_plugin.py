"""graphjit inside TensorFlow: each graph run with the plugin off and on gives the same numbers,
within the JIT's differential tolerance, and GraphjitCluster ops really ran."""

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

import graphjit_tf
from conftest import assert_close

RNG = np.random.default_rng(20261124)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def mlp(x, w1, b1, w2, b2):
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    return tf.nn.softmax(tf.tanh(tf.matmul(h, w2) + b2) * 3.0)


MLP_INPUTS = [normal(16, 32), normal(32, 64), normal(64), normal(64, 10), normal(10)]


def test_the_plugin_is_loaded_and_says_what_it_was_built_with():
    graphjit, tensorflow = graphjit_tf.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", graphjit)
    assert tensorflow.split(".")[:2] == tf.__version__.split(".")[:2]
    assert graphjit_tf.jit_level() == "OFF"
    with pytest.raises(ValueError, match="on_2"):
        graphjit_tf.set_jit_level("fast")


def test_options_change_what_is_clustered(jit_level, counted):
    def chain(x):
        return tf.nn.softmax(tf.exp(tf.tanh(x) * 2.0) + 1.0)

    x = normal(6, 10)
    jit_level("on_1")
    before = graphjit_tf.options()
    assert before["jit_level"] == "ON_1" and before["cluster_exclude_ops"] == []
    with pytest.raises(ValueError, match="min_cluster_size"):
        graphjit_tf.set_options("--min_cluster_size=many")
    assert graphjit_tf.options() == before  # all or nothing
    graphjit_tf.set_options("--cluster_exclude_ops=Exp")
    try:
        assert graphjit_tf.options()["cluster_exclude_ops"] == ["Exp"]
        with counted() as c:
            got = tf.function(chain)(x)
    finally:
        graphjit_tf.set_options("--cluster_exclude_ops=")
    assert c["cluster_runs"] >= 1 and "Exp" not in c.ops and "Softmax" in c.ops, c.ops
    jit_level("off")
    assert_close(got, tf.function(chain)(x))


def test_tf_function_graphs_give_tensorflows_numbers(jit_level, counted):
    jit_level("off")
    with counted() as off:
        want = tf.function(mlp)(*MLP_INPUTS)
    assert off["clusters"] == 0 and off["cluster_runs"] == 0
    for level in ("on_1", "on_2"):
        jit_level(level)
        with counted() as on:
            got = tf.function(mlp)(*MLP_INPUTS)  # a new function: traced and optimized again
        assert on["clusters"] >= 1 and on["cluster_runs"] >= 1 and on["cluster_errors"] == 0, level
        assert_close(got, want)


def session_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 32], name="x")
        y = mlp(x, *[tf.constant(v) for v in MLP_INPUTS[1:]])
    return graph, x, y


def test_session_graphs_give_tensorflows_numbers(jit_level, counted):
    x_value = normal(8, 32)
    results = {}
    for level in ("off", "on_1"):
        jit_level(level)
        graph, x, y = session_graph()
        with counted() as c, tf.compat.v1.Session(graph=graph) as sess:
            results[level] = [sess.run(y, {x: x_value * k}) for k in (1.0, 2.0)]
        if level == "on_1":
            assert c["cluster_runs"] >= 2 and c["cluster_errors"] == 0
    for got, want in zip(results["on_1"], results["off"]):
        assert_close(got, want)


def keras_model(weights=None):
    model = tf.keras.Sequential([
        tf.keras.Input((20,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(16, activation="tanh"),
        tf.keras.layers.Dense(5, activation="softmax"),
    ])
    if weights is not None:
        model.set_weights(weights)
    return model


def test_keras_inference_gives_tensorflows_numbers(jit_level, counted):
    tf.keras.utils.set_random_seed(1)
    weights = keras_model().get_weights()
    x = normal(64, 20)
    jit_level("off")
    want = keras_model(weights).predict(x, verbose=0)
    jit_level("on_1")
    with counted() as c:
        got = keras_model(weights).predict(x, verbose=0)
    assert c["cluster_runs"] >= 1 and c["cluster_errors"] == 0
    assert_close(got, want)


def test_a_keras_training_step_fuses_its_gradients_too(jit_level, counted):
    tf.keras.utils.set_random_seed(2)
    weights = keras_model().get_weights()
    x, y = normal(32, 20), np.eye(5, dtype=np.float32)[RNG.integers(0, 5, 32)]

    def train(level):
        jit_level(level)
        model = keras_model(weights)
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="categorical_crossentropy")
        losses = [float(model.train_on_batch(x, y)) for _ in range(3)]
        return losses, model.get_weights()

    want_losses, want_weights = train("off")
    with counted() as c:
        got_losses, got_weights = train("on_1")
    assert c["cluster_runs"] >= 3 and c["cluster_errors"] == 0
    # The backward pass is clustered: the activations' gradients and the bias gradients
    # (BiasAddGrad, as a Sum).
    assert {"ReluGrad", "TanhGrad", "Sum"} <= set(c.ops), c.ops
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4)
    for got, want in zip(got_weights, want_weights):
        assert_close(got, want)


def test_jit_scope_compiles_with_graphjit_even_at_level_off(jit_level, counted):
    def scoped(x):
        with tf.xla.experimental.jit_scope():
            y = tf.nn.relu(x * 2.0 + 1.0)
            z = tf.exp(-y) * x
        return z - 1.0

    x = normal(4, 8)
    jit_level("off")
    with counted() as c:
        got = tf.function(scoped)(x)
    assert c["clusters"] >= 1 and c["cluster_runs"] == 1
    assert {"Mul", "Relu", "Exp"} <= set(c.ops) and "Sub" not in c.ops, c.ops  # the scope, not the rest
    y = np.maximum(x * 2.0 + 1.0, 0.0)
    assert_close(got, np.exp(-y) * x - 1.0)


def test_jit_compile_functions_are_left_to_xla(jit_level, counted):
    jit_level("on_2")
    with counted() as c:
        got = tf.function(mlp, jit_compile=True)(*MLP_INPUTS)
    assert c["clusters"] == 0 and c["cluster_runs"] == 0
    jit_level("off")
    assert_close(got, tf.function(mlp)(*MLP_INPUTS))


def test_plugin_optimizers_can_be_switched_off(jit_level, counted):
    jit_level("on_2")
    tf.config.optimizer.set_experimental_options({"use_plugin_optimizers": False})
    try:
        with counted() as c:
            tf.function(mlp)(*MLP_INPUTS)
    finally:
        tf.config.optimizer.set_experimental_options({"use_plugin_optimizers": True})
    assert c["graphs"] == 0 and c["cluster_runs"] == 0


def test_an_op_graphjit_refuses_stays_with_tensorflow(jit_level, counted):
    def with_strings(x):
        y = tf.nn.relu(x * 2.0 + 1.0)
        text = tf.strings.as_string(y, precision=9)
        return tf.strings.to_number(text) * 3.0 - 1.0

    x = normal(3, 5)
    jit_level("off")
    want = tf.function(with_strings)(x)
    jit_level("on_1")
    with counted() as c:
        got = tf.function(with_strings)(x)
    assert c["cluster_runs"] >= 1 and "AsString" not in c.ops and "StringToNumber" not in c.ops
    assert_close(got, want)


def test_a_graph_graphjit_cannot_take_is_left_unchanged_with_one_warning(jit_level, counted, capfd):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
        p = tf.compat.v1.placeholder(tf.bool, [], name="p")
        f, t = tf.raw_ops.Switch(data=x * 2.0, pred=p)  # TensorFlow 1's control flow
        y = tf.raw_ops.Merge(inputs=[tf.exp(f) + 1.0, tf.nn.relu(t) - 1.0]).output
    jit_level("on_1")
    x_value = normal(4)
    with counted() as c, tf.compat.v1.Session(graph=graph) as sess:
        got_true = sess.run(y, {x: x_value, p: True})
        got_false = sess.run(y, {x: x_value, p: False})
    assert c["graphs_unchanged"] >= 1 and c["clusters"] == 0
    warnings = [line for line in capfd.readouterr().err.splitlines() if line.startswith("graphjit: ")]
    assert len(warnings) == c["graphs_unchanged"], warnings
    assert "TensorFlow 1 control flow" in warnings[0]
    assert_close(got_true, np.maximum(x_value * 2.0, 0.0) - 1.0)
    assert_close(got_false, np.exp(x_value * 2.0) + 1.0)


def test_concurrent_session_runs(jit_level, counted):
    jit_level("on_1")
    graph, x, y = session_graph()
    inputs = [normal(8, 32) for _ in range(4)]
    results, errors = {}, []
    with counted() as c, tf.compat.v1.Session(graph=graph) as sess:
        sess.run(y, {x: inputs[0]})  # compiled once

        def worker(k):
            try:
                results[k] = [sess.run(y, {x: inputs[k]}) for _ in range(20)]
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert c["cluster_runs"] >= 81 and c["cluster_errors"] == 0
    jit_level("off")
    graph, x, y = session_graph()
    with tf.compat.v1.Session(graph=graph) as sess:
        for k in range(4):
            want = sess.run(y, {x: inputs[k]})
            for got in results[k]:
                assert_close(got, want)


def test_only_the_entry_points_are_exported():
    path = graphjit_tf.library_path()
    defined = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True)
    names = {line.split()[-1] for line in defined.stdout.splitlines() if line.strip()}
    assert {"TF_InitKernel", "TF_InitGraph"} <= names
    assert all(n in ("TF_InitKernel", "TF_InitGraph") or n.startswith("GraphjitTF_") for n in names), names
    # ... and graphjit's LLVM, MLIR and protobuf are its own: nothing of theirs is bound to
    # TensorFlow's copies.
    undefined = subprocess.run(["nm", "-D", "-C", "--undefined-only", path], capture_output=True, text=True, check=True)
    foreign = [line for line in undefined.stdout.splitlines() if re.search(r"\b(llvm|mlir|google|Eigen)::", line)]
    assert not foreign, foreign[:10]


@pytest.mark.parametrize("first", ["tensorflow", "plugin"])
def test_loading_works_whichever_comes_first(first):
    # (The plugin opened with ctypes' default RTLD_LOCAL: opened RTLD_GLOBAL before
    # `import tensorflow`, TensorFlow's own libtensorflow_framework.so.2 crashes TensorFlow,
    # plugin or not.)
    script = f"""
import ctypes, os, sys
sys.path = [p for p in sys.path if p]
if {first == "plugin"}:
    import importlib.util, os
    site = os.path.dirname(os.path.dirname(importlib.util.find_spec("tensorflow").origin))
    ctypes.CDLL(os.path.join(site, "tensorflow-plugins", "libgraphjit_tf.so"))
import tensorflow as tf
import graphjit_tf
graphjit_tf.set_jit_level("on_1")
y = tf.function(lambda x: tf.nn.relu(x * 2.0 + 1.0) - 3.0)(tf.ones([4]))
print(*y.numpy().tolist(), graphjit_tf.stats()["cluster_runs"])
"""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd="/")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0.0", "0.0", "0.0", "0.0", "1"]


def test_a_second_process_loads_its_kernels_from_the_disk_cache(tmp_path):
    script = f"""
import sys
sys.path = [p for p in sys.path if p]
import numpy as np
import tensorflow as tf
import graphjit_tf
graphjit_tf.set_options("--jit_level=on_1 --cache_dir={tmp_path}")
f = tf.function(lambda x: tf.nn.softmax(tf.tanh(x * 2.0 + 1.0)))
y = f(tf.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)))
s = graphjit_tf.stats()
print(s["cluster_runs"], s["compiles"], s["disk_hits"], s["disk_writes"], *y.numpy().ravel().tolist())
"""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd="/")
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    first, second = (r.stdout.split() for r in runs)
    assert first[0] == second[0] == "1"  # one GraphjitCluster run
    assert int(first[1]) > 0 and first[2] == "0" and first[3] == first[1]  # compiled and written
    assert second[1] == "0" and second[2] == first[1] and second[3] == "0"  # loaded, nothing compiled
    assert second[4:] == first[4:]
    assert len(list(tmp_path.glob("*.gjk"))) == int(first[1])
