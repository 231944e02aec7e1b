#!/usr/bin/env python3
"""Generate graphjit test fixtures with real TensorFlow.

How to run (from the repository root):

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install -r tests/data/requirements.txt
    /tmp/tfvenv/bin/python tests/data/make_fixtures.py

`python3 tests/data/make_fixtures.py` also works if the active interpreter can
import tensorflow; otherwise it prints a one-line hint and exits with status 2.

For every fixture <name> the script writes, into tests/data/<name>/:
  model.pb       frozen GraphDef (binary, deterministic serialization)
  model.pbtxt    the same GraphDef in protobuf text format
  <feed>.npy     input tensors
  out_<f>.npy    outputs computed by TensorFlow running the *frozen* graph
  manifest.json  {"model", "feeds", "fetches", "tolerance", ...}
and it (re)writes tests/data/README.md with a summary of every fixture,
keeping the sections make_op_fixtures.py and make_model_fixtures.py wrote.

Everything is seeded and TensorFlow runs single-threaded with oneDNN
disabled, so re-running the script reproduces byte-identical files.
"""

import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Must be set before TensorFlow is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# oneDNN kernels may change float results depending on the host CPU; use the
# plain Eigen kernels so the reference outputs are reproducible.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

try:
    import numpy as np
    import tensorflow as tf
    from google.protobuf import text_format
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )
except ImportError as e:  # pragma: no cover
    print(
        "make_fixtures.py: cannot import TensorFlow (%s); create a venv: "
        "python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install -r "
        "tests/data/requirements.txt && /tmp/tfvenv/bin/python "
        "tests/data/make_fixtures.py" % e,
        file=sys.stderr,
    )
    sys.exit(2)

RTOL = 1e-5
ATOL = 1e-6
TOLERANCE_NOTE = (
    "A float32 reimplementation differs from TensorFlow only by summation "
    "order / exp/log implementation rounding (a few ulp, ~1e-7 relative per "
    "op, growing slowly with the 784/64-term dot products). TensorFlow's own "
    "float32 outputs are within ~5e-8 abs of a float64 reference, so rtol "
    "1e-5 leaves ample headroom for a different summation order; atol 1e-6 "
    "covers outputs "
    "near zero (tiny softmax probabilities) where relative error is "
    "meaningless. Observed max |TF - float64 numpy reference| is recorded "
    "in observed_max_abs_err_vs_float64."
)


def session_config():
    return tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
    )


def tensor_key(name):
    """TensorFlow tensor name -> manifest key ("n:0" -> "n", "n:1" stays)."""
    return name[:-2] if name.endswith(":0") else name


def run_frozen(graph_def, feeds, fetches):
    """Import a frozen GraphDef into a fresh graph and run it."""
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=g, config=session_config()) as sess:
        feed_dict = {
            g.get_tensor_by_name(k if ":" in k else k + ":0"): v
            for k, v in feeds.items()
        }
        outs = sess.run(
            [g.get_tensor_by_name(f if ":" in f else f + ":0") for f in fetches],
            feed_dict=feed_dict,
        )
    return dict(zip(fetches, outs))


def describe_attr(v):
    kind = v.WhichOneof("value")
    if kind == "type":
        return tf.dtypes.as_dtype(v.type).name
    if kind == "shape":
        if v.shape.unknown_rank:
            return "<unknown rank>"
        return "[" + ",".join(str(d.size) for d in v.shape.dim) + "]"
    if kind == "tensor":
        t = v.tensor
        dims = [d.size for d in t.tensor_shape.dim]
        return "tensor<%s%s>" % (tf.dtypes.as_dtype(t.dtype).name, dims)
    if kind == "list":
        lst = v.list
        for field in ("i", "f", "b", "s"):
            vals = list(getattr(lst, field))
            if vals:
                return str(vals)
        if lst.type:
            return str([tf.dtypes.as_dtype(x).name for x in lst.type])
        if lst.shape:
            return "<%d shapes>" % len(lst.shape)
        return "[]"
    if kind == "s":
        return repr(v.s.decode("utf-8", "replace"))
    if kind is None:
        return "<none>"
    return repr(getattr(v, kind))


def op_summary(graph_def):
    """Op type -> (count, {attr_name: sorted set of rendered values})."""
    counts = collections.Counter(n.op for n in graph_def.node)
    attrs = collections.defaultdict(lambda: collections.defaultdict(set))
    for n in graph_def.node:
        for k, v in n.attr.items():
            attrs[n.op][k].add(describe_attr(v))
    return counts, attrs


def write_fixture(name, graph_def, feeds, fetches, outputs, extra=None):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))
    tf.io.write_graph(graph_def, d, "model.pbtxt", as_text=True)

    feed_files = {}
    for k, v in feeds.items():
        fn = "%s.npy" % k.replace(":", "_").replace("/", "_")
        np.save(os.path.join(d, fn), v, allow_pickle=False)
        feed_files[tensor_key(k)] = fn
    fetch_files = {}
    for k in fetches:
        key = tensor_key(k)
        fn = "out_%s.npy" % key.replace(":", "_").replace("/", "_")
        np.save(os.path.join(d, fn), outputs[k], allow_pickle=False)
        fetch_files[key] = fn

    manifest = {
        "model": "model.pb",
        "model_text": "model.pbtxt",
        "feeds": feed_files,
        "fetches": fetch_files,
        "tolerance": {"rtol": RTOL, "atol": ATOL},
        "tolerance_note": TOLERANCE_NOTE,
        "generator": "tests/data/make_fixtures.py (tensorflow %s)" % tf.__version__,
    }
    if extra:
        manifest.update(extra)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return manifest


def check_against_reference(outputs, reference):
    """Max abs error of TF's float32 outputs vs a float64 numpy reference."""
    errs = {}
    for k, ref in reference.items():
        got = outputs[k].astype(np.float64)
        err = float(np.max(np.abs(got - ref)))
        errs[tensor_key(k)] = float("%.3g" % err)
        if not np.allclose(got, ref, rtol=RTOL, atol=ATOL):
            raise AssertionError(
                "%s: TF output outside fixture tolerance of float64 ref "
                "(max abs err %g)" % (k, err)
            )
    return errs


# --------------------------------------------------------------------------
# Fixture 1: TF1-style MNIST softmax regression (tf.compat.v1 graph mode).
# --------------------------------------------------------------------------
def make_mnist_softmax():
    rng = np.random.RandomState(1234)
    w_init = (rng.standard_normal((784, 10)) * 0.01).astype(np.float32)
    b_init = (rng.standard_normal((10,)) * 0.01).astype(np.float32)
    batch = 8
    x_val = rng.random_sample((batch, 784)).astype(np.float32)
    labels = rng.randint(0, 10, size=batch)
    y_val = np.eye(10, dtype=np.float32)[labels]

    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.set_random_seed(1234)
        x = tf.compat.v1.placeholder(tf.float32, [None, 784], name="x")
        y_ = tf.compat.v1.placeholder(tf.float32, [None, 10], name="y_")
        W = tf.compat.v1.Variable(w_init, name="W")
        b = tf.compat.v1.Variable(b_init, name="b")
        logits = tf.add(tf.matmul(x, W), b, name="logits")
        y = tf.nn.softmax(logits, name="y")
        tf.reduce_mean(
            -tf.reduce_sum(y_ * tf.math.log(y), axis=[1]), name="cross_entropy"
        )
        tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=logits),
            name="xent",
        )
        with tf.compat.v1.Session(graph=g, config=session_config()) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            frozen = tf.compat.v1.graph_util.convert_variables_to_constants(
                sess, g.as_graph_def(), ["y", "cross_entropy", "xent"]
            )

    feeds = {"x": x_val, "y_": y_val}
    fetches = ["y", "cross_entropy", "xent"]
    outputs = run_frozen(frozen, feeds, fetches)

    # float64 numpy reference of the same maths
    lg = x_val.astype(np.float64) @ w_init.astype(np.float64) + b_init
    e = np.exp(lg - lg.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    ce = np.mean(-np.sum(y_val * np.log(p), axis=1))
    errs = check_against_reference(
        outputs, {"y": p, "cross_entropy": np.float64(ce), "xent": np.float64(ce)}
    )
    return frozen, feeds, fetches, outputs, {"observed_max_abs_err_vs_float64": errs}


# --------------------------------------------------------------------------
# Fixture 2: small Keras MLP frozen via convert_variables_to_constants_v2.
# --------------------------------------------------------------------------
def make_keras_mlp():
    tf.keras.utils.set_random_seed(42)
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(20,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(10),
            tf.keras.layers.Softmax(),
        ]
    )
    # Seeded Glorot-uniform kernels but zero biases by default; give the biases
    # seeded non-zero values too so the bias adds are actually exercised.
    rng = np.random.RandomState(42)
    for layer in model.layers:
        if hasattr(layer, "bias") and layer.bias is not None:
            layer.bias.assign(
                (rng.standard_normal(layer.bias.shape) * 0.1).astype(np.float32)
            )

    fn = tf.function(
        lambda inp: model(inp, training=False),
        input_signature=[tf.TensorSpec([None, 20], tf.float32, name="input")],
    )
    concrete = fn.get_concrete_function()
    frozen_fn = convert_variables_to_constants_v2(concrete)
    graph_def = frozen_fn.graph.as_graph_def()
    out_names = [t.name for t in frozen_fn.outputs]
    in_names = [t.name for t in frozen_fn.inputs]
    assert in_names == ["input:0"], in_names
    assert len(out_names) == 1, out_names

    x_val = rng.standard_normal((4, 20)).astype(np.float32)
    feeds = {"input": x_val}
    fetches = [tensor_key(n) for n in out_names]
    outputs = run_frozen(graph_def, feeds, fetches)

    # float64 numpy reference
    h = x_val.astype(np.float64)
    weights = model.get_weights()
    for i in range(0, len(weights), 2):
        h = h @ weights[i].astype(np.float64) + weights[i + 1].astype(np.float64)
        if i < len(weights) - 2:
            h = np.maximum(h, 0.0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    errs = check_against_reference(outputs, {fetches[0]: ref})
    extra = {
        "observed_max_abs_err_vs_float64": errs,
        "keras_version": tf.keras.__version__,
    }
    return graph_def, feeds, fetches, outputs, extra


FIXTURES = [
    ("mnist_softmax", make_mnist_softmax,
     "TF1 MNIST softmax regression (tf.compat.v1 graph mode, frozen with "
     "graph_util.convert_variables_to_constants); W/b seeded normal*0.01."),
    ("keras_mlp", make_keras_mlp,
     "Keras 3 Sequential Dense(64,relu)->Dense(32,relu)->Dense(10)->Softmax, "
     "traced with tf.function and frozen with "
     "convert_variables_to_constants_v2."),
]


def main():
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    readme = [
        "# graphjit test fixtures",
        "",
        "Generated by `make_fixtures.py` with real TensorFlow "
        "(pinned in `requirements.txt`). Do not edit by hand; regenerate with:",
        "",
        "```sh",
        "python3 -m venv /tmp/tfvenv",
        "/tmp/tfvenv/bin/pip install -r tests/data/requirements.txt",
        "/tmp/tfvenv/bin/python tests/data/make_fixtures.py",
        "```",
        "",
        "Each folder holds `model.pb` (frozen binary GraphDef), `model.pbtxt` "
        "(same, text format), input `.npy` files, TensorFlow's outputs "
        "(`out_*.npy`, computed by running the frozen graph) and "
        "`manifest.json` (feeds/fetches -> files, comparison tolerance). "
        "Feed/fetch keys are tensor names, without `:0` for output 0.",
        "",
    ]
    for name, make, desc in FIXTURES:
        graph_def, feeds, fetches, outputs, extra = make()
        manifest = write_fixture(name, graph_def, feeds, fetches, outputs, extra)
        counts, attrs = op_summary(graph_def)

        lines = ["## %s" % name, "", desc, "", "Ops (%d nodes):" % len(graph_def.node), ""]
        for op in sorted(counts):
            a = attrs[op]
            attr_s = "; ".join(
                "%s=%s" % (k, "|".join(sorted(a[k])))
                for k in sorted(a)
                if not (op == "Const" and k == "value")
            )
            lines.append("- `%s` x%d%s" % (op, counts[op], (" — " + attr_s) if attr_s else ""))
        lines.append("")
        lines.append("Feeds:")
        lines.append("")
        for k, fn in manifest["feeds"].items():
            v = feeds[k]
            lines.append("- `%s` %s %s (`%s`)" % (k, v.dtype, list(v.shape), fn))
        lines.append("")
        lines.append("Fetches:")
        lines.append("")
        for k, fn in manifest["fetches"].items():
            v = np.asarray(outputs[k])
            lines.append("- `%s` %s %s (`%s`)" % (k, v.dtype, list(v.shape), fn))
        lines.append("")
        lines.append(
            "Tolerance: rtol %g, atol %g. Observed max abs error of TF vs a "
            "float64 numpy reference: %s"
            % (RTOL, ATOL, json.dumps(extra["observed_max_abs_err_vs_float64"],
                                     sort_keys=True))
        )
        lines.append("")
        print("\n".join(lines))
        readme.extend(lines)

    # Keep the README sections other generators own (make_op_fixtures.py,
    # make_model_fixtures.py), each between "<!-- ...: begin -->" and
    # "<!-- ...: end -->" markers.
    path = os.path.join(HERE, "README.md")
    kept = []
    if os.path.exists(path):
        with open(path) as f:
            kept = re.findall(r"<!-- [^\n]*?: begin -->\n.*?<!-- [^\n]*?: end -->",
                              f.read(), re.S)
    text = "\n".join(readme).rstrip("\n") + "\n"
    if kept:
        text += "\n" + "".join(block + "\n" for block in kept)
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
