#!/usr/bin/env python3
"""Runs TensorFlow fixtures (tests/data/**/manifest.json) through a graphjit binary and
checks every fetch against TensorFlow's output at the fixture's tolerance. A graph given as
a .pb file (the bench graphs) has no expected outputs: it runs with seeded random feeds,
and its outputs are checked against the same binary's op-by-op run on the CPU (--jit off:
the reference kernels) at rtol 1e-4, atol 1e-5. GEMMs on a GPU multiply in float32
(--gpu_tf32=off), as TensorFlow's CPU build does.

Each fixture is `graphjit run` with its feeds, fetches and --out, then `graphjit compare`
per fetch, so it needs nothing but the binary and Python (no numpy): it checks a release
unpacked on a machine without graphjit's build or TensorFlow, on any device.

  scripts/check_fixtures.py --graphjit dist/graphjit-0.1.0/bin/graphjit --device gpu --jit on_2 tests/data bench/graphs/*.pb
Exit status 1 if any fixture fails; one line per failure and a summary line.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time


def out_name(fetch):  # as `graphjit run --out` names it: "y:1" -> "y_1.npy", "a/b" -> "a_b.npy"
    return fetch.replace(":", "_").replace("/", "_") + ".npy"


def compare(graphjit, actual, expected, rtol, atol):
    run = subprocess.run([graphjit, "compare", str(actual), str(expected), "--rtol", str(rtol), "--atol", str(atol)],
                         capture_output=True, text=True)
    return None if run.returncode == 0 else (run.stdout + run.stderr).strip()[-400:]


def check_graph(graphjit, graph, device, jit, env, work):
    outs = []
    for run_device, run_jit in (("cpu", "off"), (device, jit)):
        out = pathlib.Path(tempfile.mkdtemp(dir=work))
        run = subprocess.run([graphjit, "run", str(graph), "--random-feeds", "--seed", "1", "--device", run_device,
                              "--jit", run_jit, "--out", str(out)], capture_output=True, text=True, env=env)
        if run.returncode != 0:
            return f"run on {run_device} at jit {run_jit} failed ({run.returncode}): {run.stderr.strip()[-400:]}"
        outs.append(out)
    files = sorted(p.name for p in outs[0].glob("*.npy"))
    if not files:
        return "no outputs"
    for name in files:
        error = compare(graphjit, outs[1] / name, outs[0] / name, 1e-4, 1e-5)
        if error:
            return f"{name} against op by op on the CPU: {error}"
    return None


def check(graphjit, manifest, device, jit, env, work):
    if manifest.suffix == ".pb":
        return check_graph(graphjit, manifest, device, jit, env, work)
    folder = manifest.parent
    m = json.loads(manifest.read_text())
    out = pathlib.Path(tempfile.mkdtemp(dir=work))
    cmd = [graphjit, "run", str(folder / m["model"]), "--device", device, "--jit", jit, "--out", str(out)]
    for name, file in m["feeds"].items():
        cmd += ["--feed", f"{name}={folder / file}"]
    for name in m["fetches"]:
        cmd += ["--fetch", name]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        return f"run failed ({run.returncode}): {run.stderr.strip()[-400:]}"
    tolerance = m["tolerance"]
    for name, file in m["fetches"].items():
        error = compare(graphjit, out / out_name(name), folder / file, tolerance["rtol"], tolerance["atol"])
        if error:
            return f"fetch {name}: {error}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphjit", required=True, help="the graphjit binary")
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu", "gpu-emu"])
    parser.add_argument("--jit", default="on_2", choices=["off", "on", "on_1", "on_2"])
    parser.add_argument("--min-cluster-size", type=int, default=1,
                        help="clusters of single ops too (1, the default), as the op fixtures' tests do")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("roots", nargs="+", help="folders searched for manifest.json, or graphs (.pb)")
    args = parser.parse_args()

    manifests = sorted(p for root in map(pathlib.Path, args.roots)
                       for p in ([root] if root.suffix == ".pb" else root.rglob("manifest.json")))
    if not manifests:
        sys.exit(f"check_fixtures: no manifest.json or graph in {' '.join(args.roots)}")
    env = dict(os.environ)
    # float32 products: TensorFlow's CPU build, which made the fixtures, has no TF32.
    env["GRAPHJIT_FLAGS"] = (env.get("GRAPHJIT_FLAGS", "") + f" --min_cluster_size={args.min_cluster_size}"
                             " --gpu_tf32=off").strip()
    start = time.time()
    failures = []
    with tempfile.TemporaryDirectory() as work, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(check, args.graphjit, m, args.device, args.jit, env, work): m for m in manifests}
        for future in concurrent.futures.as_completed(futures):
            error = future.result()
            if error:
                where = futures[future]
                failures.append(f"{where if where.suffix == '.pb' else where.parent}: {error}")
                print(f"FAIL {failures[-1]}", flush=True)
    print(f"check_fixtures: {len(manifests) - len(failures)}/{len(manifests)} fixtures and graphs match on {args.device} "
          f"at jit {args.jit} ({time.time() - start:.0f} s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
