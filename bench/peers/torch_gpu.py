"""PyTorch (torch.compile, and eager) on a GraphDef, timed as jax_gpu.py times JAX.

The graph and its constants come as jax_gpu.py takes them (GRAPH.json with GRAPH.npz, or
GRAPH.consts/). Prints one JSON line: torch.compile's compile time, the median
device-resident call of the compiled function and of the eager one (inputs already on the
device; on a GPU timed by CUDA events around the call), the median host-to-host call of the
compiled one (NumPy in, NumPy out), and with --expect the largest difference from the
expected output over its largest magnitude.

  python3 bench/peers/torch_gpu.py GRAPH --feed x=x.npy --fetch y [--precision highest|tf32] [--expect y.npy]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exported_graph  # noqa: E402


def cuda_us(call):
    """One call's time in microseconds between CUDA events recorded around it."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graph", help="the exported graph, without .json")
    p.add_argument("--feed", action="append", default=[], help="NAME=FILE.npy")
    p.add_argument("--fetch", action="append", default=[], help="a tensor to fetch")
    p.add_argument("--precision", default="highest", choices=["highest", "tf32"],
                   help="float32 GEMMs in float32 (highest) or TF32")
    p.add_argument("--expect", help="FILE.npy: the first fetch's expected value")
    p.add_argument("--iters", type=int, default=300)
    args = p.parse_args()
    import torch
    import graph_to_torch

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    graph, consts = exported_graph.load(args.graph)
    feeds = dict(f.split("=", 1) for f in args.feed)
    names = list(feeds)
    host = [np.load(feeds[k]) for k in names]
    eager = graph_to_torch.make_function(graph, consts, names, args.fetch, device)
    compiled = torch.compile(eager)
    on_device = [torch.from_numpy(h).to(device) for h in host]
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    timed = cuda_us if cuda else exported_graph.wall_us
    with torch.no_grad():
        t0 = time.perf_counter()
        out = compiled(*on_device)
        sync()
        compile_ms = (time.perf_counter() - t0) * 1e3
        result = {"graph": os.path.basename(args.graph), "device": torch.cuda.get_device_name() if cuda else "cpu",
                  "torch": torch.__version__, "precision": args.precision, "compile_ms": round(compile_ms, 1),
                  "compiled_us": round(exported_graph.median_us(lambda: compiled(*on_device), args.iters, timed), 1),
                  "eager_us": round(exported_graph.median_us(lambda: eager(*on_device), args.iters, timed), 1),
                  "host_to_host_us": round(exported_graph.median_us(
                      lambda: [o.cpu().numpy() for o in compiled(*[torch.from_numpy(h).to(device) for h in host])],
                      args.iters), 1)}
        if args.expect:
            want = np.load(args.expect).astype(np.float64)
            result["max_rel_diff"] = float(np.max(np.abs(out[0].cpu().numpy().astype(np.float64) - want)) / np.max(np.abs(want)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
