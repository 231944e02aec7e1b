"""A GraphDef as peers.py exports it (`graph_json`: GRAPH.json, its nodes with their data
inputs and plain attrs), its constants, and the evaluation graph_to_jax and graph_to_torch
share: each node by the framework's function for its op, once, from the outputs back.
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
