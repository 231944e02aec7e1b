"""JAX (XLA:GPU) on a GraphDef, timed as graphjit's GPU calls are compared with it.

The graph comes as peers.py exports it for its JAX worker (`export_for_jax`: GRAPH.json and
GRAPH.npz of its constants), or with the constants as .npy files in GRAPH.consts/ (each
Const node's value, '/' in its name as '_': what `graphjit run --no-optimize --jit off
--fetch <each Const> --out GRAPH.consts` writes), for a machine without TensorFlow.
Prints one JSON line: the compile time, the median device-resident call (inputs already on
the device, outputs waited for), the median host-to-host call (NumPy in, NumPy out), and
with --expect the largest difference from the expected output over its largest magnitude.

  python3 bench/peers/jax_gpu.py GRAPH --feed x=x.npy --fetch Identity [--precision highest] [--expect y.npy]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exported_graph  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graph", help="the exported graph, without .json")
    p.add_argument("--feed", action="append", default=[], help="NAME=FILE.npy")
    p.add_argument("--fetch", action="append", default=[], help="a tensor to fetch")
    p.add_argument("--precision", default="highest", help="jax_default_matmul_precision (highest: f32 GEMMs)")
    p.add_argument("--expect", help="FILE.npy: the first fetch's expected value")
    p.add_argument("--iters", type=int, default=300)
    args = p.parse_args()
    import jax
    jax.config.update("jax_default_matmul_precision", args.precision)
    import graph_to_jax

    graph, consts = exported_graph.load(args.graph)
    feeds = dict(f.split("=", 1) for f in args.feed)
    names = list(feeds)
    host = [np.load(feeds[k]) for k in names]
    fn = jax.jit(graph_to_jax.make_function(graph, consts, names, args.fetch))
    on_device = [jax.device_put(h) for h in host]
    t0 = time.perf_counter()
    out = [o.block_until_ready() for o in fn(*on_device)]
    compile_ms = (time.perf_counter() - t0) * 1e3
    resident = exported_graph.median_us(lambda: [o.block_until_ready() for o in fn(*on_device)], args.iters)
    host_to_host = exported_graph.median_us(lambda: [np.asarray(o) for o in fn(*[jax.device_put(h) for h in host])],
                                            args.iters)
    result = {"graph": os.path.basename(args.graph), "backend": jax.default_backend(), "precision": args.precision,
              "compile_ms": round(compile_ms, 1), "device_resident_us": round(resident, 1),
              "host_to_host_us": round(host_to_host, 1)}
    if args.expect:
        want = np.load(args.expect).astype(np.float64)
        result["max_rel_diff"] = float(np.max(np.abs(np.asarray(out[0]).astype(np.float64) - want)) / np.max(np.abs(want)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
