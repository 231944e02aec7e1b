#!/usr/bin/env python3
"""Generate the Keras model fixtures that are frozen with tools/freeze.py.

How to run (from the repository root):

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install -r tests/data/requirements.txt
    /tmp/tfvenv/bin/python tests/data/make_model_fixtures.py [NAME...]

`python3 tests/data/make_model_fixtures.py` also works if the active
interpreter can import tensorflow; otherwise it prints a one-line hint and
exits with status 2.

Each fixture is a seeded Keras 3 model, saved to a temporary .keras file and
frozen by tools/freeze.py (freeze.freeze(): convert_variables_to_constants_v2
on model(x, training=False), no grappler constant folding, unneeded nodes
stripped) - exactly what `tools/freeze.py MODEL.keras -o model.pb` writes.
Into tests/data/<name>/ it writes:
  model.pb       frozen GraphDef (binary, deterministic serialization)
  model.pbtxt    the same GraphDef in protobuf text format
  <feed>.npy     input tensors
  out_<f>.npy    outputs computed by TensorFlow running the *frozen* graph
  manifest.json  {"model", "feeds", "fetches", "tolerance", ...}
and the "model fixtures" section of tests/data/README.md.

TensorFlow's float32 outputs are checked against a float64 NumPy
reimplementation of the model (from the same weights); the observed max abs
error is recorded in the manifest.  Everything is seeded and TensorFlow runs
single-threaded with oneDNN disabled, so re-running the script reproduces
byte-identical files.
"""

import collections
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Must be set before TensorFlow is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# oneDNN kernels may change float results depending on the host CPU; use the
# plain Eigen kernels so the reference outputs are reproducible.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

try:
    import numpy as np
    import tensorflow as tf
    import keras
except ImportError as e:  # pragma: no cover
    print(
        "make_model_fixtures.py: cannot import TensorFlow (%s); create a venv: "
        "python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install -r "
        "tests/data/requirements.txt && /tmp/tfvenv/bin/python "
        "tests/data/make_model_fixtures.py" % e,
        file=sys.stderr,
    )
    sys.exit(2)

sys.path.insert(0, os.path.join(REPO, "tools"))
sys.path.insert(0, HERE)
import freeze  # noqa: E402  tools/freeze.py
from make_fixtures import op_summary, run_frozen, tensor_key  # noqa: E402

Fixture = collections.namedtuple("Fixture", "name desc make")
Tol = collections.namedtuple("Tol", "rtol atol note")


def session_free_seed(seed):
    """Fresh Keras state (layer-name counters) and seeded RNGs."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    return np.random.RandomState(seed)


def freeze_keras(model, feeds):
    """Save `model` as .keras, freeze it with tools/freeze.py, run the result."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.keras")
        model.save(path)
        frozen = freeze.freeze(path)
    in_names = [i.name for i in frozen.inputs]
    assert in_names == list(feeds), (in_names, list(feeds))
    fetches = [freeze.fetch_name(o.name) for o in frozen.outputs]
    outputs = run_frozen(frozen.graph_def, feeds, fetches)
    return frozen, fetches, outputs


def check(outputs, reference, tol):
    """Max abs error of TF's float32 outputs vs the float64 reference."""
    errs = {}
    for k, ref in reference.items():
        got = outputs[k].astype(np.float64)
        assert got.shape == ref.shape, (k, got.shape, ref.shape)
        err = float(np.max(np.abs(got - ref)))
        errs[tensor_key(k)] = float("%.3g" % err)
        if not np.allclose(got, ref, rtol=tol.rtol, atol=tol.atol):
            raise AssertionError("%s: TF output outside the fixture tolerance of the "
                                 "float64 reference (max abs err %g)" % (k, err))
    return errs


# --------------------------------------------------------------------------
# float64 NumPy building blocks.
# --------------------------------------------------------------------------
def softmax64(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm64(x, gamma, beta, eps):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * gamma + beta


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu64(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def conv2d64(x, k, b, padding):
    """NHWC stride-1 convolution, kernel [kh, kw, cin, cout]."""
    kh, kw = k.shape[:2]
    if padding == "same":
        ph, pw = kh - 1, kw - 1
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    n, h, w, _ = x.shape
    oh, ow = h - kh + 1, w - kw + 1
    out = np.zeros((n, oh, ow, k.shape[3]))
    for i in range(kh):
        for j in range(kw):
            out += x[:, i:i + oh, j:j + ow, :] @ k[i, j]
    return out + b


def maxpool2_64(x):
    n, h, w, c = x.shape
    return x[:, : h // 2 * 2, : w // 2 * 2, :].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def f64(v):
    return np.asarray(v, np.float64)


# --------------------------------------------------------------------------
# transformer_block
# --------------------------------------------------------------------------
TRANSFORMER_TOL = Tol(1e-4, 1e-5, (
    "float32 transformer encoder block: dot products of length 32 and 64, a "
    "16-wide softmax, exact GELU (erf) and two LayerNorms, whose 1/std (std ~ "
    "0.3-1) amplifies absolute errors. Another float32 implementation differs "
    "from TensorFlow by summation order (BatchMatMul/Einsum/MatMul), exp/erf/rsqrt "
    "approximations and mean/variance rounding: a few 1e-7 relative per op, a few "
    "1e-6 absolute at the output (values ~N(0,1) after the final LayerNorm). rtol "
    "1e-4 / atol 1e-5 leaves ~10x headroom over that. TensorFlow's own float32 "
    "output was checked against a float64 NumPy reimplementation from the same "
    "weights; the observed max abs error is in observed_max_abs_err_vs_float64."))


def make_transformer_block():
    rng = session_free_seed(2024)
    L = keras.layers
    x_in = keras.Input(shape=(16, 32), name="x")
    mha = L.MultiHeadAttention(num_heads=4, key_dim=8, name="mha")
    ln1 = L.LayerNormalization(name="ln1")
    ffn1 = L.Dense(64, activation="gelu", name="ffn1")  # keras 3: exact (erf) GELU
    ffn2 = L.Dense(32, name="ffn2")
    ln2 = L.LayerNormalization(name="ln2")
    h = ln1(L.Add(name="res1")([x_in, mha(x_in, x_in)]))
    y = ln2(L.Add(name="res2")([h, ffn2(ffn1(h))]))
    model = keras.Model(x_in, y, name="transformer_block")
    assert ffn1.activation.__name__ == "gelu"

    # Glorot kernels are seeded; biases default to 0 and LayerNorm to gamma=1,
    # beta=0: give all of them seeded non-trivial values.
    for layer in (mha.query_dense, mha.key_dense, mha.value_dense, mha.output_dense,
                  ffn1, ffn2):
        layer.bias.assign((rng.standard_normal(layer.bias.shape) * 0.1).astype(np.float32))
    for ln in (ln1, ln2):
        ln.gamma.assign(rng.uniform(0.5, 1.5, ln.gamma.shape).astype(np.float32))
        ln.beta.assign((rng.standard_normal(ln.beta.shape) * 0.1).astype(np.float32))

    x_val = rng.standard_normal((2, 16, 32)).astype(np.float32)
    feeds = {"x": x_val}
    frozen, fetches, outputs = freeze_keras(model, feeds)
    assert len(fetches) == 1, fetches

    # float64 NumPy reference.
    x = f64(x_val)

    def proj(dense, t):
        return np.einsum("btd,dnh->btnh", t, f64(dense.kernel)) + f64(dense.bias)

    q, k, v = proj(mha.query_dense, x), proj(mha.key_dense, x), proj(mha.value_dense, x)
    scores = np.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(8.0)
    ctx = np.einsum("bnts,bsnh->btnh", softmax64(scores), v)
    att = np.einsum("btnh,nhd->btd", ctx, f64(mha.output_dense.kernel)) + f64(mha.output_dense.bias)
    h = layer_norm64(x + att, f64(ln1.gamma), f64(ln1.beta), ln1.epsilon)
    f = gelu64(h @ f64(ffn1.kernel) + f64(ffn1.bias)) @ f64(ffn2.kernel) + f64(ffn2.bias)
    ref = layer_norm64(h + f, f64(ln2.gamma), f64(ln2.beta), ln2.epsilon)
    errs = check(outputs, {fetches[0]: ref}, TRANSFORMER_TOL)
    return frozen, feeds, fetches, outputs, TRANSFORMER_TOL, errs


# --------------------------------------------------------------------------
# small_cnn
# --------------------------------------------------------------------------
CNN_TOL = Tol(1e-4, 1e-6, (
    "float32 CNN ending in a softmax (probabilities in [0, 1]): convolutions sum "
    "9 and 72 products, the Dense layer 576; inference BatchNorm scales by "
    "gamma/sqrt(var+eps) (up to ~2). Another float32 implementation (im2col/GEMM, "
    "Winograd, a fused BatchNorm, different summation order) changes the logits "
    "by a few 1e-6 absolute at most, i.e. the probabilities by a few 1e-6 "
    "relative; rtol 1e-4 leaves ample headroom, atol 1e-6 covers the tiny "
    "probabilities where relative error is meaningless. TensorFlow's own float32 "
    "output was checked against a float64 NumPy reimplementation from the same "
    "weights; the observed max abs error is in observed_max_abs_err_vs_float64."))


def make_small_cnn():
    rng = session_free_seed(1998)
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1), name="image"),
            L.Conv2D(8, 3, padding="same", name="conv1"),
            L.BatchNormalization(name="bn1"),
            L.ReLU(name="relu1"),
            L.MaxPool2D(2, name="pool1"),
            L.Conv2D(16, 3, strides=1, padding="valid", name="conv2"),
            L.BatchNormalization(name="bn2"),
            L.ReLU(name="relu2"),
            L.MaxPool2D(2, name="pool2"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="logits"),
            L.Softmax(name="probs"),
        ],
        name="small_cnn",
    )
    conv1, bn1, conv2, bn2, dense = (model.get_layer(n) for n in
                                     ("conv1", "bn1", "conv2", "bn2", "logits"))
    for layer in (conv1, conv2, dense):
        layer.bias.assign((rng.standard_normal(layer.bias.shape) * 0.1).astype(np.float32))
    # Non-trivial inference BatchNorm: moving statistics and affine parameters.
    for bn in (bn1, bn2):
        c = bn.gamma.shape
        bn.moving_mean.assign((rng.standard_normal(c) * 0.3).astype(np.float32))
        bn.moving_variance.assign(rng.uniform(0.25, 2.0, c).astype(np.float32))
        bn.gamma.assign(rng.uniform(0.5, 1.5, c).astype(np.float32))
        bn.beta.assign((rng.standard_normal(c) * 0.2).astype(np.float32))

    x_val = rng.uniform(0.0, 1.0, (4, 28, 28, 1)).astype(np.float32)
    feeds = {"image": x_val}
    frozen, fetches, outputs = freeze_keras(model, feeds)
    assert len(fetches) == 1, fetches

    def bn64(t, bn):
        return ((t - f64(bn.moving_mean)) / np.sqrt(f64(bn.moving_variance) + bn.epsilon)
                * f64(bn.gamma) + f64(bn.beta))

    t = conv2d64(f64(x_val), f64(conv1.kernel), f64(conv1.bias), "same")
    t = maxpool2_64(np.maximum(bn64(t, bn1), 0.0))
    t = conv2d64(t, f64(conv2.kernel), f64(conv2.bias), "valid")
    t = maxpool2_64(np.maximum(bn64(t, bn2), 0.0))
    logits = t.reshape(t.shape[0], -1) @ f64(dense.kernel) + f64(dense.bias)
    errs = check(outputs, {fetches[0]: softmax64(logits)}, CNN_TOL)
    return frozen, feeds, fetches, outputs, CNN_TOL, errs


FIXTURES = [
    Fixture("transformer_block",
            "Keras 3 transformer encoder block: input x [batch, 16, 32] -> "
            "MultiHeadAttention(num_heads=4, key_dim=8) self-attention -> residual "
            "Add -> LayerNormalization -> Dense(64, gelu exact/erf) -> Dense(32) -> "
            "residual Add -> LayerNormalization. Seeded weights, non-zero biases and "
            "LayerNorm gamma/beta; batch of 2. Saved as .keras and frozen with "
            "tools/freeze.py (default options).",
            make_transformer_block),
    Fixture("small_cnn",
            "Keras 3 CNN: image [batch, 28, 28, 1] -> Conv2D(8, 3, same) -> "
            "BatchNormalization -> ReLU -> MaxPool2D(2) -> Conv2D(16, 3, valid) -> "
            "BatchNormalization -> ReLU -> MaxPool2D(2) -> Flatten -> Dense(10) -> "
            "Softmax. Seeded weights, non-zero biases, BatchNorm moving mean/variance "
            "and gamma/beta set from a seeded RNG (inference BN); batch of 4. Saved "
            "as .keras and frozen with tools/freeze.py (default options).",
            make_small_cnn),
]


def write_fixture(fx, frozen, feeds, fetches, outputs, tol, errs):
    d = os.path.join(HERE, fx.name)
    os.makedirs(d, exist_ok=True)
    graph_def = frozen.graph_def
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
    counts, _ = op_summary(graph_def)
    manifest = {
        "model": "model.pb",
        "model_text": "model.pbtxt",
        "feeds": feed_files,
        "fetches": fetch_files,
        "tolerance": {"rtol": tol.rtol, "atol": tol.atol},
        "tolerance_note": tol.note,
        "description": fx.desc,
        "graph_ops": dict(sorted(counts.items())),
        "observed_max_abs_err_vs_float64": errs,
        "generator": "tests/data/make_model_fixtures.py via tools/freeze.py "
                     "(tensorflow %s)" % tf.__version__,
        "keras_version": keras.__version__,
    }
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return manifest


README_BEGIN = "<!-- model fixtures (make_model_fixtures.py): begin -->"
README_END = "<!-- model fixtures (make_model_fixtures.py): end -->"
README_HEAD = """\
## Keras model fixtures frozen with tools/freeze.py

Generated by `make_model_fixtures.py`: each model is built in Keras 3 with
seeded weights, saved to a temporary `.keras` file and frozen by
`tools/freeze.py` (variables -> Const, `training=False`, nodes the output
does not need removed, no constant folding). Same files as above; the
manifest also has `description` and `graph_ops` (op histogram). Regenerate
(all, or only some fixtures) with:

```sh
/tmp/tfvenv/bin/python tests/data/make_model_fixtures.py [NAME...]
```
"""


def readme_lines(fx, manifest, frozen, feeds, outputs):
    graph_def = frozen.graph_def
    counts, attrs = op_summary(graph_def)
    lines = ["### %s" % fx.name, "", fx.desc, "", "Ops (%d nodes):" % len(graph_def.node), ""]
    for op in sorted(counts):
        a = attrs[op]
        attr_s = "; ".join("%s=%s" % (k, "|".join(sorted(a[k]))) for k in sorted(a)
                           if not (op == "Const" and k == "value"))
        lines.append("- `%s` x%d%s" % (op, counts[op], (" — " + attr_s) if attr_s else ""))
    lines += ["", "Feeds:", ""]
    for k, fn in manifest["feeds"].items():
        v = feeds[k]
        lines.append("- `%s` %s %s (`%s`)" % (k, v.dtype, list(v.shape), fn))
    lines += ["", "Fetches:", ""]
    for k, fn in manifest["fetches"].items():
        v = np.asarray(outputs[k])
        lines.append("- `%s` %s %s (`%s`)" % (k, v.dtype, list(v.shape), fn))
    lines += ["", "Tolerance: rtol %g, atol %g. Observed max abs error of TF vs a float64 "
              "numpy reference: %s" % (manifest["tolerance"]["rtol"],
                                       manifest["tolerance"]["atol"],
                                       json.dumps(manifest["observed_max_abs_err_vs_float64"],
                                                  sort_keys=True)), ""]
    return lines


def update_readme(sections):
    """Rewrite the model-fixtures section of tests/data/README.md."""
    path = os.path.join(HERE, "README.md")
    text = open(path).read() if os.path.exists(path) else ""
    old = {}
    if README_BEGIN in text and README_END in text:
        head, rest = text.split(README_BEGIN, 1)
        body, tail = rest.split(README_END, 1)
        # Keep the sections of fixtures not regenerated this time.
        for chunk in body.split("\n### ")[1:]:
            old[chunk.split("\n", 1)[0].strip()] = "### " + chunk.rstrip("\n") + "\n"
        tail = tail.lstrip("\n")
    else:
        head, tail = text.rstrip("\n") + "\n\n", ""
    parts = []
    for fx in FIXTURES:
        if fx.name in sections:
            parts.append("\n".join(sections[fx.name]).rstrip("\n") + "\n")
        elif fx.name in old:
            parts.append(old[fx.name])
    section = "%s\n%s\n%s%s\n" % (README_BEGIN, README_HEAD, "\n".join(parts), README_END)
    text = head + section + ("\n" + tail if tail else "")
    with open(path, "w") as f:
        f.write(text)


def main(argv):
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    names = [fx.name for fx in FIXTURES]
    unknown = [a for a in argv if a not in names]
    if unknown:
        print("make_model_fixtures.py: unknown fixture(s): %s (have: %s)"
              % (", ".join(unknown), ", ".join(names)), file=sys.stderr)
        return 2
    sections = {}
    for fx in FIXTURES:
        if argv and fx.name not in argv:
            continue
        frozen, feeds, fetches, outputs, tol, errs = fx.make()
        manifest = write_fixture(fx, frozen, feeds, fetches, outputs, tol, errs)
        sections[fx.name] = readme_lines(fx, manifest, frozen, feeds, outputs)
        print("\n".join(sections[fx.name]))
    update_readme(sections)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
