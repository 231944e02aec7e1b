"""The table of scripts/gpu_check.sh's peers step: per GPU-sized graph (a folder of DIR),
graphjit's kernels (graphjit.json, `graphjit bench --json`) against JAX (jax.json, from
jax_gpu.py), torch.compile and PyTorch eager (torch.json, from torch_gpu.py), device-resident,
as Markdown.

  python3 bench/peers/peer_table.py DIR
"""

import glob
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def cell(v):
    return "-" if v is None else f"{v:.1f}"


def ratio(a, b):
    return "-" if not a or not b else f"{a / b:.2f}"


def main():
    print("\n| graph (float32) | graphjit kernels us | JAX us | torch.compile us | PyTorch eager us | graphjit / JAX "
          "| graphjit / torch.compile | peers' largest difference from graphjit |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for folder in sorted(glob.glob(os.path.join(sys.argv[1], "*"))):
        on = [c for c in load(os.path.join(folder, "graphjit.json")).get("configs", []) if c.get("jit") == "on"]
        ours = on[0].get("gpu", {}).get("measured_us") if on else None
        jax, torch = load(os.path.join(folder, "jax.json")), load(os.path.join(folder, "torch.json"))
        j, t, e = jax.get("device_resident_us"), torch.get("compiled_us"), torch.get("eager_us")
        diffs = ", ".join(f"{k} {d['max_rel_diff']:.1e}" for k, d in (("JAX", jax), ("torch", torch)) if "max_rel_diff" in d)
        print(f"| {os.path.basename(folder)} | {cell(ours)} | {cell(j)} | {cell(t)} | {cell(e)} | {ratio(ours, j)} "
              f"| {ratio(ours, t)} | {diffs or '-'} |")
    print("\n(graphjit: its kernels' event times per call; JAX: the jitted call on device arrays, block_until_ready;")
    print("PyTorch: CUDA events around the call; the difference is over the output's largest magnitude.")
    print("The goal: graphjit at most 0.8x of JAX's and of torch.compile's.)")


if __name__ == "__main__":
    main()
