#!/usr/bin/env python3
"""Start-up with the disk kernel cache: a model's compile time in a fresh process with an
empty --cache_dir (cold) and with the cache the cold process left (warm), interleaved.

    python3 bench/warm_start.py [--model tests/data/transformer_block] [--rounds 7]
        [--graphjit build/bin/graphjit] [--device cpu|gpu-emu]

Each process runs the model once at --jit on with --stats; its compile_ms is the time the
JIT spent making kernels (compiling them cold; loading them from the cache warm, which
still specializes, plans and emits each cluster). Prints the medians and warm/cold.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def run(graphjit, model, flags):
    env = dict(os.environ, GRAPHJIT_FLAGS=flags)
    feeds = []
    for name in sorted(os.listdir(model)):
        if name.endswith(".npy") and not name.startswith("out_"):
            feeds += ["--feed", f"{name[:-4]}={os.path.join(model, name)}"]
    r = subprocess.run([graphjit, "run", os.path.join(model, "model.pb"), *feeds, "--jit", "on", "--stats"],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"warm_start.py: graphjit failed:\n{r.stderr}")
    text = r.stdout + r.stderr
    stat = lambda name: float(re.search(rf" {name}=([0-9.]+)", text).group(1))
    return stat("compile_ms"), int(stat("compiles")), int(stat("disk_hits"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tests/data/transformer_block")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--graphjit", default="build/bin/graphjit")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    cold, warm = [], []
    for _ in range(a.rounds):
        cache = tempfile.mkdtemp(prefix="graphjit-warm-start-")
        try:
            flags = f"--cache_dir={cache} --device={a.device}"
            ms, compiles, hits = run(a.graphjit, a.model, flags)
            assert compiles > 0 and hits == 0, (compiles, hits)
            cold.append(ms)
            ms, compiles, hits = run(a.graphjit, a.model, flags)
            assert compiles == 0 and hits > 0, (compiles, hits)
            warm.append(ms)
        finally:
            shutil.rmtree(cache)
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"{a.model} on {a.device}, {a.rounds} rounds: compile_ms cold {c:.1f} (min {min(cold):.1f}), "
          f"warm {w:.1f} (min {min(warm):.1f}); warm/cold {w / c:.3f}")


if __name__ == "__main__":
    main()
