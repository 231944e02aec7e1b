#!/usr/bin/env python3
"""What one element of a math function costs: graphjit's loop against XLA's (JAX's), on this CPU.

Run it with the peers' environment (bench/peers/run.sh makes it) after building graphjit:

    bench/peers/.venv/bin/python bench/peers/math_cost.py [--out bench/MATH_COST.md] [FUNCTION...]

For each function (tanh, exp, Elu's exp(x) - 1, sigmoid, erf, erfc, log, log1p, softplus,
both GELUs, ...) it writes the GraphDef y = f(x) of a vector of 2^17 float32 (512 KiB, in
and out within one core's L2 cache: the loop's work, not memory's) with TensorFlow, and
  - graphjit: compiles it at ON_2 (`graphjit dump`) and reads its loop from the assembly;
  - XLA: jax.jit of the same graph (graph_to_jax.py), its object file from --xla_dump_to,
    disassembled by objdump.
The hot loop of each is the innermost loop that stores a vector; its instructions per
element are its instructions over the floats it stores. Then both are timed, interleaved,
on one core (graphjit bench; the compiled JAX function), in ns per element. A loop that
calls out (a libm function) is marked: its count is not the whole cost.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GRAPHJIT = os.path.join(REPO, "build", "bin", "graphjit")
N = 1 << 17
ROUNDS = 5

# name -> (y as TensorFlow computes it from x, the inputs' range)
FUNCTIONS = {
    "tanh": (lambda tf, x: tf.tanh(x), (-5, 5)),
    "exp": (lambda tf, x: tf.exp(x), (-20, 20)),
    "elu": (lambda tf, x: tf.nn.elu(x), (-5, 5)),
    "selu": (lambda tf, x: tf.nn.selu(x), (-5, 5)),
    "sigmoid": (lambda tf, x: tf.sigmoid(x), (-10, 10)),
    "erf": (lambda tf, x: tf.math.erf(x), (-3, 3)),
    "erfc": (lambda tf, x: tf.math.erfc(x), (-3, 5)),
    "log": (lambda tf, x: tf.math.log(x), (0.001, 1000)),
    "log1p": (lambda tf, x: tf.math.log1p(x), (-0.9, 1000)),
    "softplus": (lambda tf, x: tf.nn.softplus(x), (-20, 20)),
    "gelu_exact": (lambda tf, x: tf.nn.gelu(x, approximate=False), (-5, 5)),
    "gelu_tanh": (lambda tf, x: tf.nn.gelu(x, approximate=True), (-5, 5)),
    # bench/graphs/large/gelu_exact_*: GELU by erf, as BERT's reference code writes it
    "gelu_erf": (lambda tf, x: 0.5 * x * (1 + tf.math.erf(x / 2**0.5)), (-5, 5)),
}


def write_graphs(names, folder):
    import numpy as np
    import tensorflow as tf
    sys.path.insert(0, HERE)
    import peers
    rng = np.random.default_rng(0)
    for name in names:
        fn, (lo, hi) = FUNCTIONS[name]
        f = tf.function(lambda x: tf.identity(fn(tf, x), name="y"),
                        input_signature=[tf.TensorSpec([N], tf.float32, name="x")])
        gd = f.get_concrete_function().graph.as_graph_def()
        base = os.path.join(folder, name)
        open(base + ".pb", "wb").write(gd.SerializeToString(deterministic=True))
        graph, consts = peers.graph_json(gd)
        json.dump(graph, open(base + ".json", "w"))
        np.savez(base + ".npz", **consts)
        np.save(base + "_x.npy", rng.uniform(lo, hi, N).astype(np.float32))


# ---------------------------------------------------------------- reading loops

LANES = {"zmm": 16, "ymm": 8, "xmm": 4}


def instructions_of_s(text):
    """An assembly file's (labels, instruction) list: labels are those naming the instruction."""
    out, labels = [], []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        if line.endswith(":"):
            labels.append(line[:-1])
        elif not line.startswith("."):
            out.append((labels, line))
            labels = []
    return out


def instructions_of_objdump(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S.*)$", line)
        if m:
            out.append(([m.group(1)], m.group(2).strip()))
    return out


def jump_target(instruction):
    m = re.match(r"j[a-z]+\s+(\.L\w+|[0-9a-f]+)\b", instruction)
    return m.group(1) if m else None


def stored(instruction):
    """The vector register a store writes to memory (vmovups/vmovaps/vmovntps %zmmN, mem), else None."""
    m = re.match(r"v(movups|movaps|movntps|movdqu32|movdqu64)\s+(%[xyz]mm\d+),\s*[^%]*\(", instruction)
    return m.group(2) if m else None


def hot_loop(instructions):
    """The innermost loop that stores vectors: (its instructions, floats stored per trip)."""
    where = {}
    for i, (labels, _) in enumerate(instructions):
        for label in labels:
            where[label] = i
    loops = []
    for j, (_, instruction) in enumerate(instructions):
        t = jump_target(instruction)
        if t in where and where[t] <= j:
            loops.append((where[t], j))
    innermost = [(i, j) for i, j in loops if not any(i <= a and b <= j and (a, b) != (i, j) for a, b in loops)]
    best = None
    for i, j in innermost:
        body = [ins for _, ins in instructions[i:j + 1]]
        # Each register stored counts once: XLA also spills its results to the stack.
        lanes = sum(LANES[r[1:4]] for r in {stored(ins) for ins in body} - {None})
        if lanes and (best is None or len(body) / lanes < len(best[0]) / best[1]):
            best = (body, lanes)
    return best


def describe(loop):
    if loop is None:
        return {"per_element": None, "calls": False, "vector": "—"}
    body, lanes = loop
    widths = {w for ins in body for w in re.findall(r"%([xyz]mm)\d+", ins)}
    widest = max(widths, key=lambda w: LANES[w]) if widths else "scalar"
    divisions = sum(1 for ins in body if re.match(r"v(div|sqrt)p", ins))
    return {"per_element": len(body) / lanes, "calls": any(ins.startswith("call") for ins in body),
            "vector": widest, "divisions_per_element": divisions / lanes, "body": body, "lanes": lanes}


# ---------------------------------------------------------------- the two systems

def graphjit_loop(name, folder):
    out = os.path.join(folder, name + "_dump")
    subprocess.run([GRAPHJIT, "dump", os.path.join(folder, name + ".pb"), "--to", out, "--jit", "on_2", "--feed",
                    "x=" + os.path.join(folder, name + "_x.npy")], check=True, capture_output=True)
    loops = []
    for d in sorted(os.listdir(out)):
        asm = os.path.join(out, d, "08_asm.s")
        if os.path.exists(asm):
            loops.append(hot_loop(instructions_of_s(open(asm).read())))
    return describe(loops[0] if len(loops) == 1 else None)


def graphjit_time(name, folder):
    js = os.path.join(folder, name + "_bench.json")
    subprocess.run([GRAPHJIT, "bench", os.path.join(folder, name + ".pb"), "--jit", "on_2", "--threads", "1",
                    "--iters", "200", "--json", js, "--feed", "x=" + os.path.join(folder, name + "_x.npy"),
                    "--fetch", "y"], check=True, capture_output=True)
    return json.load(open(js))["configs"][0]["median_ms"]


class Xla:
    """jax.jit of each graph; its objects land in `dump` (XLA_FLAGS are read at import)."""

    def __init__(self, dump):
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false --xla_dump_to=" + dump
        import jax
        sys.path.insert(0, HERE)
        import graph_to_jax
        self.jax, self.graph_to_jax, self.dump, self.compiled = jax, graph_to_jax, dump, {}

    def compile(self, name, folder):
        import numpy as np
        before = set(os.listdir(self.dump)) if os.path.isdir(self.dump) else set()
        graph = json.load(open(os.path.join(folder, name + ".json")))
        consts = dict(np.load(os.path.join(folder, name + ".npz")))
        fn = self.jax.jit(self.graph_to_jax.make_function(graph, consts, ["x"], ["y"]))
        x = self.jax.device_put(np.load(os.path.join(folder, name + "_x.npy")))
        compiled = fn.lower(x).compile()
        self.compiled[name] = lambda: [o.block_until_ready() for o in compiled(x)]
        self.compiled[name]()
        objects = [f for f in sorted(set(os.listdir(self.dump)) - before) if f.endswith(".o")]
        loops = []
        for o in objects:
            text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", os.path.join(self.dump, o)],
                                  check=True, capture_output=True, text=True).stdout
            loop = hot_loop(instructions_of_objdump(text))
            if loop:
                loops.append(loop)
        return describe(loops[0] if len(loops) == 1 else None)

    def time(self, name, iters=200):
        run = self.compiled[name]
        ms = []
        for _ in range(iters):
            t0 = time.perf_counter()
            run()
            ms.append((time.perf_counter() - t0) * 1e3)
        return sorted(ms)[len(ms) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("functions", nargs="*", help="only these (default: all)")
    p.add_argument("--out", help="write the table here (Markdown)")
    p.add_argument("--loops", action="store_true", help="print each hot loop")
    a = p.parse_args()
    names = a.functions or list(FUNCTIONS)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    folder = tempfile.mkdtemp(prefix="graphjit-math-cost-")
    write_graphs(names, folder)
    xla = Xla(os.path.join(folder, "xla"))
    rows = {}
    for name in names:
        rows[name] = {"graphjit": graphjit_loop(name, folder), "xla": xla.compile(name, folder), "ms": {"graphjit": [], "xla": []}}
        if a.loops:
            for system in ("graphjit", "xla"):
                print("== %s, %s (%s floats a trip)" % (name, system, rows[name][system].get("lanes")))
                print("\n".join(rows[name][system].get("body", [])))
    for _ in range(ROUNDS):
        for name in names:
            rows[name]["ms"]["graphjit"].append(graphjit_time(name, folder))
            rows[name]["ms"]["xla"].append(xla.time(name))
    lines = ["| function | graphjit instructions / element | XLA instructions / element | graphjit vector | XLA vector "
             "| divisions / element: graphjit / XLA | graphjit ns / element | XLA ns / element | graphjit / XLA |",
             "|---|---|---|---|---|---|---|---|---|"]

    def count(d):
        return "—" if d["per_element"] is None else "%.2f%s" % (d["per_element"], " + calls" if d["calls"] else "")

    for name in names:
        r = rows[name]
        ns = {s: sorted(v)[len(v) // 2] * 1e6 / N for s, v in r["ms"].items()}
        lines.append("| %s | %s | %s | %s | %s | %s / %s | %.3f | %.3f | %.2f |" % (
            name, count(r["graphjit"]), count(r["xla"]), r["graphjit"]["vector"], r["xla"]["vector"],
            "%.3f" % r["graphjit"].get("divisions_per_element", 0), "%.3f" % r["xla"].get("divisions_per_element", 0),
            ns["graphjit"], ns["xla"], ns["graphjit"] / ns["xla"]))
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        import jax
        # "cpu: MODEL, N hardware threads; JIT code for CPU, N-bit vectors; reference kernels for ISA"
        cpu = subprocess.run([GRAPHJIT, "devices", "--device", "cpu"], capture_output=True, text=True).stdout.strip()
        head = ("# What one element of a math function costs: graphjit against XLA\n\n"
                "Written by `bench/peers/math_cost.py` on %s: y = f(x) over %d float32 (in and out within one "
                "core's L2 cache), one thread, %d interleaved rounds of 200 calls, medians. Instructions per "
                "element: the hot loop's instructions over the floats it stores (graphjit: its assembly at ON_2; "
                "XLA: jax %s's object file). graphjit's %s.\n\n" % (time.strftime("%Y-%m-%d"), N, ROUNDS,
                                                              jax.__version__, cpu))
        open(a.out, "w").write(head + table)
        print("wrote " + a.out)


if __name__ == "__main__":
    main()
