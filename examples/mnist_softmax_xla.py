"""TensorFlow's MNIST XLA tutorial (mnist_softmax_xla.py), with graphjit as the JIT.

Softmax regression, y = softmax(x @ W + b), trained with GradientDescentOptimizer(0.5) on
batches of 100 in a tf.compat.v1.Session, twice: with TensorFlow alone, then with graphjit's
plugin at ON_1 (graphjit_tf.set_jit_level: TensorFlow does not hand a plugin the session's
ConfigProto, where the tutorial sets global_jit_level). The digits are scikit-learn's
handwritten 8x8 digits (load_digits: 1797 images that ship inside the package; nothing is
downloaded). Prints both runs' losses and accuracies and how far apart they are, and writes
a Chrome trace of the last step with graphjit (open it in chrome://tracing or Perfetto)
that shows the GraphjitCluster ops.

    build-tf/venv/bin/python examples/mnist_softmax_xla.py [--steps 1000] [--trace timeline.json]
"""

import argparse
import json
import sys
import time

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from tensorflow.python.client import timeline

import graphjit_tf


def digits():
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[data.target]
    return (x[:1500], y[:1500]), (x[1500:], y[1500:])


def train(level, steps, trace_path):
    graphjit_tf.set_jit_level(level)
    (x_train, y_train), (x_test, y_test) = digits()
    batches = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 64])
        w = tf.Variable(tf.zeros([64, 10]))
        b = tf.Variable(tf.zeros([10]))
        y = tf.matmul(x, w) + b
        y_ = tf.compat.v1.placeholder(tf.float32, [None, 10])
        cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
        train_step = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
        correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        init = tf.compat.v1.global_variables_initializer()
    losses = []
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        start = time.perf_counter()
        for step in range(steps):
            batch = batches.choice(len(x_train), 100, replace=False)
            feed = {x: x_train[batch], y_: y_train[batch]}
            if step == steps - 1 and trace_path:
                options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
                metadata = tf.compat.v1.RunMetadata()
                _, loss = sess.run([train_step, cross_entropy], feed, options=options, run_metadata=metadata)
                with open(trace_path, "w") as f:
                    f.write(timeline.Timeline(metadata.step_stats).generate_chrome_trace_format())
            else:
                _, loss = sess.run([train_step, cross_entropy], feed)
            losses.append(loss)
        seconds = time.perf_counter() - start
        acc = sess.run(accuracy, {x: x_test, y_: y_test})
    return np.array(losses), float(acc), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--trace", default="timeline.json", help="Chrome trace of graphjit's last step")
    args = parser.parse_args()

    ref_losses, ref_acc, ref_s = train("off", args.steps, None)
    before = graphjit_tf.stats()
    losses, acc, s = train("on_1", args.steps, args.trace)
    after = graphjit_tf.stats()

    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    clusters = sorted({e["args"]["name"] for e in events if e.get("args", {}).get("op") == "GraphjitCluster"})
    rel = np.abs(losses - ref_losses) / np.maximum(np.abs(ref_losses), 1e-30)
    print(f"TensorFlow {tf.__version__}, graphjit {graphjit_tf.version()[0]}; {args.steps} steps of 100 digits")
    print(f"{'step':>6} {'loss, TensorFlow':>18} {'loss, graphjit ON_1':>20}")
    for step in sorted({0, 1, 10, 100, args.steps // 2, args.steps - 1} & set(range(args.steps))):
        print(f"{step:>6} {ref_losses[step]:>18.6f} {losses[step]:>20.6f}")
    print(f"largest relative loss difference over all {args.steps} steps: {rel.max():.2e} (at step {rel.argmax()})")
    print(f"test accuracy ({297} digits): TensorFlow {100 * ref_acc:.2f}%, graphjit {100 * acc:.2f}%")
    print(f"training time: TensorFlow {ref_s:.2f} s, graphjit {s:.2f} s (compile included)")
    print(f"GraphjitCluster ops made: {after['clusters'] - before['clusters']}, runs: "
          f"{after['cluster_runs'] - before['cluster_runs']}, compiles: {after['cache_misses'] - before['cache_misses']}")
    ops = {op: n - before["clustered_ops"].get(op, 0) for op, n in after["clustered_ops"].items()
           if n > before["clustered_ops"].get(op, 0)}
    print("ops in them:", ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(ops.items())))
    print(f"the last step's trace: {args.trace}, GraphjitCluster ops in it: {', '.join(clusters) or 'none'}")
    ok = rel.max() <= 1e-4 and abs(acc - ref_acc) <= 0.005 and clusters
    if not ok:
        print("FAILED: the losses differ by more than 1e-4, the accuracies by more than 0.5 points, "
              "or no GraphjitCluster op ran", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
