#!/usr/bin/env python3
"""Generate the vision model fixtures: keras.applications architectures at tiny configs,
frozen from their .keras files with tools/freeze.py as a user would.

How to run (from the repository root; the environment of the language model fixtures):

    python3 -m venv /tmp/hubvenv
    /tmp/hubvenv/bin/pip install -r tests/data/requirements-keras-hub.txt
    /tmp/hubvenv/bin/python tests/data/make_vision_model_fixtures.py [NAME...]

Each fixture is a keras.applications family built by its base constructor with a tiny
config and seeded random weights (nothing is downloaded), every weight moved by seeded
noise, on one seeded 32x32 RGB image in [0, 255). Into tests/data/vision_models/<name>/:
  model.pb          the frozen GraphDef (binary, deterministic)
  input_layer.npy   the image [1, 32, 32, 3]
  out_Identity.npy  the logits [1, 10], as TensorFlow computes them with the frozen graph
  manifest.json     {"model", "feeds", "fetches", "tolerance", ...}
What they need beyond the CNNs graphjit has run: ConvNeXt's frozen graph keeps its grouped
(depthwise) convolutions in StatefulPartitionedCall nodes of functions in the graph's
library (Keras compiles them with XLA), and LayerNorm and GELU in a CNN.
TensorFlow runs single-threaded with oneDNN off, so re-running reproduces the files.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT_DIR = os.path.join(HERE, "vision_models")

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

try:
    import numpy as np
    import tensorflow as tf
    import keras
    from keras.src.applications import convnext
    sys.path.insert(0, HERE)
    from make_fixtures import run_frozen  # a Session on the frozen graph, one thread
except ImportError as e:  # pragma: no cover
    print("make_vision_model_fixtures.py: cannot import Keras (%s): pip install -r "
          "tests/data/requirements-keras-hub.txt in a venv" % e, file=sys.stderr)
    sys.exit(2)

SIZE = 32
FAMILIES = {
    "convnext": ("ConvNeXt", lambda: convnext.ConvNeXt(
        depths=[1, 1, 1, 1], projection_dims=[8, 16, 32, 64], weights=None,
        input_shape=(SIZE, SIZE, 3), classes=10, name="convnext_tiny_config"),
        "depths [1, 1, 1, 1], projection_dims [8, 16, 32, 64]"),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def build(name):
    keras.utils.set_random_seed(1234)
    model = FAMILIES[name][1]()
    noise = np.random.default_rng(sum(map(ord, name)))
    for w in model.weights:
        w.assign(w.numpy() + noise.normal(0.0, 0.05, w.shape).astype(w.dtype))
    return model


def freeze(model, tmp):
    path = os.path.join(tmp, "model.keras")
    model.save(path)
    frozen = os.path.join(tmp, "model.pb")
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "freeze.py"), path, "-o", frozen,
                    "--input-shape", "input_layer=1,%d,%d,3" % (SIZE, SIZE)],
                   check=True, stdout=subprocess.DEVNULL)
    return frozen


def make(name):
    out = os.path.join(OUT_DIR, name)
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    feeds = {"input_layer": (rng.random((1, SIZE, SIZE, 3)) * 255).astype(np.float32)}
    with tempfile.TemporaryDirectory() as tmp:
        frozen = freeze(build(name), tmp)
        graph_def = tf.compat.v1.GraphDef()
        with open(frozen, "rb") as f:
            graph_def.ParseFromString(f.read())
        logits = run_frozen(graph_def, feeds, ["Identity"])["Identity"]
        with open(frozen, "rb") as f, open(os.path.join(out, "model.pb"), "wb") as g:
            g.write(f.read())
    for k, v in feeds.items():
        np.save(os.path.join(out, k + ".npy"), v)
    np.save(os.path.join(out, "out_Identity.npy"), logits)
    calls = sum(n.op in ("PartitionedCall", "StatefulPartitionedCall") for n in graph_def.node)
    manifest = {
        "model": "model.pb",
        "feeds": {k: k + ".npy" for k in feeds},
        "fetches": {"Identity": "out_Identity.npy"},
        "output": "Identity",
        "nodes": len(graph_def.node),
        "function_calls": calls,
        "tolerance": TOLERANCE,
        "description": "keras.applications %s(%s), seeded random weights; input float32 [1, %d, %d, 3]" % (
            FAMILIES[name][0], FAMILIES[name][2], SIZE, SIZE),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print("%-8s %d nodes, %d function calls, |logits| <= %.3f" % (
        name, len(graph_def.node), calls, float(np.abs(logits).max())))


def main(argv):
    unknown = [a for a in argv if a not in FAMILIES]
    if unknown:
        print("make_vision_model_fixtures.py: unknown %s (known: %s)" % (", ".join(unknown), ", ".join(FAMILIES)),
              file=sys.stderr)
        return 2
    for name in argv or sorted(FAMILIES):
        make(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
