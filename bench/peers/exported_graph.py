"""A GraphDef as peers.py exports it (`graph_json`: GRAPH.json, its nodes with their data
inputs and plain attrs), its constants, and the evaluation graph_to_jax and graph_to_torch
share: each node by the framework's function for its op, once, from the outputs back, and
the ops both write alike (the batch norm and its gradient, in array methods both have).
"""

import json
import os
import time

import numpy as np


def load(path):
    """GRAPH.json and its constants: GRAPH.npz, or GRAPH.consts/ (each Const node's value,
    '/' in its name as '_', as `graphjit run --fetch <Const> --out GRAPH.consts` writes)."""
    with open(path + ".json") as f:
        graph = json.load(f)
    if os.path.exists(path + ".npz"):
        return graph, dict(np.load(path + ".npz"))
    return graph, {n["name"]: np.load(os.path.join(path + ".consts", n["name"].replace("/", "_") + ".npy"))
                   for n in graph["nodes"] if n["op"] == "Const"}


def make_function(graph, constants, inputs, outputs, ops, framework):
    """fn(*inputs) -> tuple(outputs): each node's `ops[op](node, *its inputs' values)`, a
    Const's value from `constants`; `inputs` and `outputs` are names."""
    nodes = {n["name"]: n for n in graph["nodes"]}

    def fn(*args):
        values = {name: (v,) for name, v in zip(inputs, args)}

        def get(ref):
            name, _, index = ref.partition(":")
            if name not in values:
                n = nodes[name]
                if n["op"] == "Const":
                    values[name] = (constants[name],)
                elif n["op"] not in ops:
                    raise NotImplementedError("no %s for op %s" % (framework, n["op"]))
                else:
                    out = ops[n["op"]](n, *[get(i) for i in n["inputs"]])
                    values[name] = out if isinstance(out, tuple) else (out,)
            return values[name][int(index or 0)]

        return tuple(get(o) for o in outputs)

    return fn


# ---- ops both frameworks write the same way (NumPy-like arrays: JAX's, PyTorch's)

def _channel_layout(n):
    """A batch norm's reduced axes and the shape that broadcasts a [C] vector against x."""
    if n["attrs"].get("data_format", "NHWC") == "NCHW":
        return (0, 2, 3), (1, -1, 1, 1)
    return (0, 1, 2), (1, 1, 1, -1)


def fused_batch_norm(n, x, scale, offset, mean, variance):
    """FusedBatchNormV3 (float32): y, the running mean and variance, the batch's (or the given)
    mean and variance, and an empty reserve."""
    a = n["attrs"]
    axes, per_channel = _channel_layout(n)
    eps = a.get("epsilon", 1e-4)
    running_mean, running_variance = mean, variance
    if a.get("is_training", True):
        mean = x.mean(axis=axes)
        variance = ((x - mean.reshape(per_channel)) ** 2).mean(axis=axes)
        count = int(np.prod(x.shape)) // int(scale.shape[0])
        factor = a.get("exponential_avg_factor", 1.0)
        unbiased = variance * (count / max(count - 1, 1))
        if factor == 1.0:
            running_mean, running_variance = mean, unbiased
        else:
            running_mean = (1 - factor) * running_mean + factor * mean
            running_variance = (1 - factor) * running_variance + factor * unbiased
    s = scale * (variance + eps) ** -0.5
    y = (x - mean.reshape(per_channel)) * s.reshape(per_channel) + offset.reshape(per_channel)
    return y, running_mean, running_variance, mean, variance, mean[:0]


def fused_batch_norm_grad(n, dy, x, scale, mean, variance, reserve):
    """FusedBatchNormGradV3 (float32): dx, d_scale, d_offset and two zero placeholders."""
    axes, per_channel = _channel_layout(n)
    inverse = (variance + n["attrs"].get("epsilon", 1e-4)) ** -0.5
    normalized = (x - mean.reshape(per_channel)) * inverse.reshape(per_channel)
    d_offset, d_scale = dy.sum(axis=axes), (dy * normalized).sum(axis=axes)
    g = dy
    if n["attrs"].get("is_training", True):
        count = int(np.prod(x.shape)) // int(scale.shape[0])
        g = dy - (d_offset / count).reshape(per_channel) - normalized * (d_scale / count).reshape(per_channel)
    zero = d_offset[:1].sum() * 0
    return (scale * inverse).reshape(per_channel) * g, d_scale, d_offset, zero, zero


def wall_us(call):
    """One call's wall time in microseconds."""
    t0 = time.perf_counter()
    call()
    return (time.perf_counter() - t0) * 1e6


def median_us(call, iters, timed=wall_us):
    """The median of `iters` calls after 20 warm-up calls, each timed by `timed(call)` (us)."""
    for _ in range(20):
        call()
    return float(np.median([timed(call) for _ in range(iters)]))
