#!/usr/bin/env python3
"""Conv2D in graphjit (oneDNN) against TensorFlow's own CPU Conv2D, on the shapes of the
small_cnn fixture, and the whole small_cnn model, in one run.

Each case is a GraphDef written by TensorFlow; TensorFlow runs it in a tf.compat.v1
Session, graphjit runs the same file with `graphjit run --repeat`. Both report the median
time of one Session::Run over many runs, with the same intra/inter-op thread count, and
interleaved (TF, graphjit, TF, graphjit) to share the machine's noise.

    /tmp/tfvenv/bin/python bench/conv_vs_tf.py [--batch 64] [--threads 1 2]

Needs the pinned TensorFlow of tests/data/requirements.txt and build/bin/graphjit.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
try:
    import numpy as np
    import tensorflow as tf
except ImportError:
    sys.exit("needs TensorFlow: python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install -r tests/data/requirements.txt")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAPHJIT = os.path.join(ROOT, "build", "bin", "graphjit")


def conv_graph(batch, h, w, cin, cout, k, padding, path):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, h, w, cin], name="x")
        f = tf.constant(np.random.default_rng(0).standard_normal((k, k, cin, cout)).astype(np.float32))
        tf.nn.conv2d(x, f, strides=1, padding=padding, name="y")
    with open(path, "wb") as out:
        out.write(g.as_graph_def().SerializeToString())
    return np.random.default_rng(1).standard_normal((batch, h, w, cin)).astype(np.float32)


def tf_median_ms(model, feeds, fetch, threads, runs):
    gd = tf.compat.v1.GraphDef()
    with open(model, "rb") as f:
        gd.ParseFromString(f.read())
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
    with tf.compat.v1.Session(graph=g, config=config) as s:
        feed = {g.get_tensor_by_name(k + ":0"): v for k, v in feeds.items()}
        out = g.get_tensor_by_name(fetch + ":0")
        for _ in range(5):
            s.run(out, feed)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            s.run(out, feed)
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def graphjit_median_ms(model, feeds, fetch, threads, runs, tmp):
    args = [GRAPHJIT, "run", model, "--fetch", fetch, "--threads", str(threads), "--repeat", str(runs)]
    for name, value in feeds.items():
        path = os.path.join(tmp, name + ".npy")
        np.save(path, value)
        args += ["--feed", f"{name}={path}"]
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    return float(re.search(r"run ([0-9.]+) ms \(median", r.stderr).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    cases = []
    # The two convolutions of tests/data/small_cnn: 28x28x1 -> 8 (SAME), 13x13x8 -> 16 (VALID).
    for name, (h, w, cin, cout, k, pad) in {"conv1 28x28x1->8 SAME": (28, 28, 1, 8, 3, "SAME"),
                                            "conv2 13x13x8->16 VALID": (13, 13, 8, 16, 3, "VALID")}.items():
        path = os.path.join(tmp, name.split()[0] + ".pb")
        x = conv_graph(a.batch, h, w, cin, cout, k, pad, path)
        cases.append((name, path, {"x": x}, "y"))
    # The fixed cost of one Session::Run in each system (TensorFlow's includes its Python
    # client), on the same input: subtract it to compare the kernels themselves.
    ident = os.path.join(tmp, "identity.pb")
    g = tf.Graph()
    with g.as_default():
        tf.identity(tf.compat.v1.placeholder(tf.float32, [None, 28, 28, 1], name="x"), name="y")
    with open(ident, "wb") as out:
        out.write(g.as_graph_def().SerializeToString())
    image = np.random.default_rng(2).standard_normal((a.batch, 28, 28, 1)).astype(np.float32)
    cases.insert(0, ("session overhead (Identity)", ident, {"x": image}, "y"))
    cases.append(("small_cnn model", os.path.join(ROOT, "tests/data/small_cnn/model.pb"), {"image": image}, "Identity"))

    print(f"batch {a.batch}, median of {a.runs} runs, TensorFlow {tf.__version__} (oneDNN opts "
          f"{os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'default')})\n")
    print("| case | threads | TensorFlow ms | graphjit ms | graphjit / TF | same, minus each session's overhead |")
    print("| --- | --- | --- | --- | --- | --- |")
    overhead = {}
    for name, model, feeds, fetch in cases:
        for t in a.threads:
            tf_ms = tf_median_ms(model, feeds, fetch, t, a.runs)
            gj_ms = graphjit_median_ms(model, feeds, fetch, t, a.runs, tmp)
            if name.startswith("session overhead"):
                overhead[t] = (tf_ms, gj_ms)
                net = "-"
            else:
                tf_net, gj_net = tf_ms - overhead[t][0], gj_ms - overhead[t][1]
                net = f"{gj_net / tf_net:.2f}x ({gj_net:.3f} / {tf_net:.3f} ms)" if tf_net > 0 else "-"
            print(f"| {name} | {t} | {tf_ms:.3f} | {gj_ms:.3f} | {gj_ms / tf_ms:.2f}x | {net} |")


if __name__ == "__main__":
    main()
