#!/usr/bin/env python3
"""What a second thread brings: `graphjit bench --threads 1,2 --jit off,on` on every bench
graph and fixture model (and the fixture MLP on a batch of 4096), each work in a few
interleaved runs (the middle one shown), written as a Markdown table.

The goal it checks: no work is slower at 2 threads than at 1 (beyond 10% noise), and every
work taking more than 1 ms at 1 thread is at least 1.6x faster at 2, or gets 90% of the
speed-up a same-size copy gets from the second thread in the same run.

    build/bin/graphjit must exist (scripts/setup.sh builds it)
    bench/thread_scaling.py [--iters N] [--runs K] [--out bench/THREADS.md] [--work NAME ...]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAPHJIT = os.path.join(ROOT, "build", "bin", "graphjit")


def works():
    """(name, graphjit bench arguments) for every work."""
    graphs = os.path.join(ROOT, "bench", "graphs")
    with open(os.path.join(graphs, "manifest.json")) as f:
        manifest = json.load(f)
    for name, entry in sorted(manifest.items()):
        if name.startswith("_"):
            continue
        shape = ",".join(str(d) for d in entry["shape"])
        yield name, [os.path.join(graphs, name + ".pb"), "--shape", f"{entry['input']}={shape}"]
    data = os.path.join(ROOT, "tests", "data")
    for model in ["mnist_softmax", "keras_mlp", "small_cnn", "transformer_block"]:
        with open(os.path.join(data, model, "manifest.json")) as f:
            manifest = json.load(f)
        args = [os.path.join(data, model, manifest["model"])]
        for feed, file in manifest["feeds"].items():
            args += ["--feed", f"{feed}={os.path.join(data, model, file)}"]
        for fetch in manifest["fetches"]:
            args += ["--fetch", fetch]
        yield model, args
    yield "keras_mlp batch 4096", [os.path.join(data, "keras_mlp", "model.pb"), "--shape", "input=4096,20"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "THREADS.md"))
    parser.add_argument("--runs", type=int, default=3, help="bench runs per work; the table shows the middle one")
    parser.add_argument("--work", nargs="*", help="only these works")
    args = parser.parse_args()
    if not os.access(GRAPHJIT, os.X_OK):
        sys.exit(f"thread_scaling: {GRAPHJIT} is missing: run scripts/setup.sh first")

    rows, failures = [], []
    for name, bench_args in works():
        if args.work and name not in args.work:
            continue
        docs = []
        for _ in range(args.runs):
            with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
                cmd = [GRAPHJIT, "bench", *bench_args, "--jit", "off,on", "--threads", "1,2", "--iters",
                       str(args.iters), "--json", tmp.name]
                run = subprocess.run(cmd, capture_output=True, text=True)
                if run.returncode != 0:
                    sys.exit(f"thread_scaling: {' '.join(cmd)} failed:\n{run.stderr}")
                docs.append(json.load(open(tmp.name)))
        for jit in ["off", "on"]:
            # Per run: (speed-up against the copy's, speed-up, copy's speed-up, 1 thread ms, 2 threads ms).
            measured = []
            for doc in docs:
                by = {(c["jit"], c["threads"]): c for c in doc["configs"]}
                one, two = by[(jit, 1)], by[(jit, 2)]
                speedup = one["median_ms"] / two["median_ms"]
                copy = two["stream_gbs"] / one["stream_gbs"]
                measured.append((speedup / copy, speedup, copy, one["median_ms"], two["median_ms"]))
            # The run in the middle, by speed-up against the copy: all its numbers come from that one run.
            _, speedup, copy, one_ms, two_ms = sorted(measured)[len(measured) // 2]
            if speedup < 0.9:
                verdict = "slower"
            elif one_ms > 1.0 and speedup < 1.6 and speedup < 0.9 * copy:
                verdict = "too little"
            else:
                verdict = "ok"
            if verdict != "ok":
                failures.append(f"{name} jit {jit}: {verdict}")
            every = " ".join(f"{m[1]:.2f}/{m[2]:.2f}" for m in measured)
            rows.append((name, jit, one_ms, two_ms, speedup, copy, every, verdict))
            print(f"{name:28} jit {jit:3}  1 thread {one_ms:9.3f} ms  2 threads {two_ms:9.3f} ms"
                  f"  {speedup:5.2f}x (copy {copy:4.2f}x)  runs {every}  {verdict}", flush=True)

    # "cpu: MODEL, N hardware threads; JIT code for CPU, N-bit vectors; reference kernels for ISA"
    cpu = subprocess.run([GRAPHJIT, "devices", "--device", "cpu"], capture_output=True, text=True).stdout.strip()
    with open(args.out, "w") as f:
        f.write("# One thread against two\n\n")
        f.write(f"Written by `bench/thread_scaling.py --iters {args.iters} --runs {args.runs}` on "
                f"{cpu.removeprefix('cpu: ')} ({platform.system()} {platform.release()}). Each work is {args.runs} `graphjit bench --jit off,on "
                "--threads 1,2` runs: in each, the four configurations interleaved, medians, each timed run "
                "right after an untimed one of the same configuration and followed by a copy of the largest input at the same thread count. A row shows the run in the middle by "
                "speed-up against the copy's; the last column lists every run's speed-up/copy's speed-up, so "
                "the machine's noise shows.\n\n")
        f.write("Goal: no work slower at 2 threads than at 1 (beyond 10%); every work over 1 ms at 1 thread at "
                "least 1.6x faster at 2, or at 90% of the copy's speed-up.\n\n")
        f.write("| work | jit | 1 thread ms | 2 threads ms | speed-up | copy's speed-up | goal | every run |\n")
        f.write("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n")
        for name, jit, one, two, speedup, copy, every, verdict in rows:
            f.write(f"| {name} | {jit} | {one:.3f} | {two:.3f} | {speedup:.2f}x | {copy:.2f}x | {verdict} | {every} |\n")
        f.write("\n" + ("Every work meets the goal.\n" if not failures else
                        "Not met: " + "; ".join(failures) + ".\n"))
    print(f"thread_scaling: wrote {args.out}; " + ("every work meets the goal" if not failures else
                                                   f"{len(failures)} do not: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
