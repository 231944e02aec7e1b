#!/usr/bin/env python3
"""Generate the decoder-only language model fixtures: keras-hub backbones frozen with tools/freeze.py.

How to run (from the repository root):

    python3 -m venv /tmp/hubvenv
    /tmp/hubvenv/bin/pip install -r tests/data/requirements-keras-hub.txt
    KERAS_BACKEND=tensorflow /tmp/hubvenv/bin/python tests/data/make_language_model_fixtures.py [NAME...]

Each fixture is one keras-hub backbone family (Llama, Mistral, Gemma, Phi-3, Qwen, Falcon)
built with a tiny config and seeded random weights (nothing is downloaded), every weight
moved by seeded noise so that the ones and zeros a norm's scale or a bias starts with are
exercised too. Its call on token ids and a padding mask, both int32 [1, 8] (the last two
positions padding), is saved as a SavedModel and frozen by `tools/freeze.py` as a user would.
Into tests/data/language_models/<name>/ it writes:
  model.pb                        the frozen GraphDef (binary, deterministic)
  token_ids.npy, padding_mask.npy the inputs
  out_Identity.npy                the hidden states [1, 8, hidden], as TensorFlow computes
                                  them with the frozen graph
  manifest.json                   {"model", "feeds", "fetches", "tolerance", ...}
What the families need beyond the BERT-like encoders: rotary position embeddings (Sin,
Cos), grouped-query attention, RMS norms, gated MLPs; Gemma's All, Falcon's Cumsum (ALiBi).
TensorFlow runs single-threaded with oneDNN off, so re-running reproduces the files.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT_DIR = os.path.join(HERE, "language_models")

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

try:
    import numpy as np
    import tensorflow as tf
    import keras
    import keras_hub
except ImportError as e:  # pragma: no cover
    print("make_language_model_fixtures.py: cannot import keras-hub (%s): pip install -r "
          "tests/data/requirements-keras-hub.txt in a venv" % e, file=sys.stderr)
    sys.exit(2)

VOCABULARY = 64
SEQUENCE = 8
COMMON = dict(vocabulary_size=VOCABULARY, num_layers=2, hidden_dim=32, intermediate_dim=64)
GQA = dict(num_query_heads=4, num_key_value_heads=2)
FAMILIES = {
    "llama": ("LlamaBackbone", dict(COMMON, **GQA)),
    "mistral": ("MistralBackbone", dict(COMMON, **GQA)),
    "gemma": ("GemmaBackbone", dict(COMMON, head_dim=8, **GQA)),
    "phi3": ("Phi3Backbone", dict(COMMON, **GQA)),
    "qwen": ("QwenBackbone", dict(COMMON, **GQA)),
    "falcon": ("FalconBackbone", dict(COMMON, num_attention_heads=4)),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def build(name):
    cls, config = FAMILIES[name]
    keras.utils.set_random_seed(1234)
    model = getattr(keras_hub.models, cls)(**config)
    noise = np.random.default_rng(sum(map(ord, name)))
    for w in model.weights:
        w.assign(w.numpy() + noise.normal(0.0, 0.05, w.shape).astype(w.dtype))
    return model


def freeze(model, tmp):
    spec = [tf.TensorSpec([1, SEQUENCE], tf.int32, name="token_ids"),
            tf.TensorSpec([1, SEQUENCE], tf.int32, name="padding_mask")]

    @tf.function(input_signature=spec)
    def serve(token_ids, padding_mask):
        return {"hidden": model({"token_ids": token_ids, "padding_mask": padding_mask}, training=False)}

    module = tf.Module()
    module.model, module.serve = model, serve
    saved = os.path.join(tmp, "saved_model")
    tf.saved_model.save(module, saved, signatures={"serving_default": serve})
    frozen = os.path.join(tmp, "model.pb")
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "freeze.py"), saved, "-o", frozen],
                   check=True, stdout=subprocess.DEVNULL)
    return frozen


def run_frozen(frozen, feeds, fetch):
    graph_def = tf.compat.v1.GraphDef()
    with open(frozen, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        return session.run(fetch + ":0", {k + ":0": v for k, v in feeds.items()}), len(graph_def.node)


def make(name):
    out = os.path.join(OUT_DIR, name)
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    feeds = {"token_ids": rng.integers(1, VOCABULARY, size=(1, SEQUENCE)).astype(np.int32),
             "padding_mask": np.array([[1] * (SEQUENCE - 2) + [0, 0]], np.int32)}
    with tempfile.TemporaryDirectory() as tmp:
        frozen = freeze(build(name), tmp)
        hidden, nodes = run_frozen(frozen, feeds, "Identity")
        with open(frozen, "rb") as f, open(os.path.join(out, "model.pb"), "wb") as g:
            g.write(f.read())
    for k, v in feeds.items():
        np.save(os.path.join(out, k + ".npy"), v)
    np.save(os.path.join(out, "out_Identity.npy"), hidden)
    cls, config = FAMILIES[name]
    manifest = {
        "model": "model.pb",
        "feeds": {k: k + ".npy" for k in feeds},
        "fetches": {"Identity": "out_Identity.npy"},
        "output": "Identity",
        "nodes": nodes,
        "tolerance": TOLERANCE,
        "description": "keras-hub %s(%s), seeded random weights; inputs int32 [1, %d]" % (
            cls, ", ".join("%s=%s" % kv for kv in sorted(config.items())), SEQUENCE),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "keras_hub": keras_hub.__version__,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print("%-8s %s, %d nodes, |hidden| <= %.3f" % (name, cls, nodes, float(np.abs(hidden).max())))


def main(argv):
    unknown = [a for a in argv if a not in FAMILIES]
    if unknown:
        print("make_language_model_fixtures.py: unknown family %s (%s)" % (", ".join(unknown), ", ".join(FAMILIES)),
              file=sys.stderr)
        return 2
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    for name in argv or list(FAMILIES):
        make(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
