#!/usr/bin/env python3
"""graphjit against the systems a user would pick instead, on the same work, in one run.

Run it with bench/peers/run.sh (which makes the pinned environment). For each thread
count (1 and 2) and each work (the bench graphs of bench/graphs, the fixture models of
tests/data, and the real models bench/models/make_models.py makes, as TensorFlow wrote
them), it times, interleaved:

  tf            TensorFlow, default (Grappler on, XLA off): a tf.function of the GraphDef
  tf_xla_auto   the same with XLA auto-clustering on the CPU
                (TF_XLA_FLAGS=--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit)
  tf_jit        the same function with jit_compile=True
  tf_graphjit   TensorFlow with graphjit's plugin at ON_1 (scripts/setup_tf_plugin.sh's
                environment, build-tf/venv): what the plugin brings a TensorFlow user
  jax           jax.jit of the same math, op for op (graph_to_jax.py)
  graphjit_off  graphjit with the JIT off, on the GraphDef TensorFlow wrote
  graphjit_on   graphjit with the JIT on (ON_1: XLA auto-clustering's level)
  graphjit_on_2 graphjit at ON_2 (whole models in one cluster, as jit_compile and JAX
                compile a whole function): the ratios are this one's
  copy          for the bench graphs whose output is their input's size: NumPy's copy of
                the input into a buffer of the output's size (one thread's memcpy), the
                time a loop that reads its input and writes its output once cannot beat

Every system's outputs are compared with TensorFlow's before anything is timed. Each
Python system runs in a worker process of its own (pinned to one core for 1 thread);
graphjit runs as `graphjit bench`, one level per batch (each in a process of its own,
so each compiles what it runs). One more work is TensorFlow's only: a training step of the
MNIST XLA tutorial (softmax regression, GradientDescent(0.5), as a tf.function with
variables) on the MNIST fixture's batch. A round
times one batch of every (work, system); the medians are over all rounds. The results
go to bench/RESULTS.md.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GRAPHJIT = os.path.join(REPO, "build", "bin", "graphjit")
SYSTEMS = ["tf", "tf_xla_auto", "tf_jit", "tf_graphjit", "jax", "graphjit_off", "graphjit_on", "graphjit_on_2"]
RATIO_SYSTEM = "graphjit_on_2"
WORKER_OF = {"tf": "tf", "tf_jit": "tf", "tf_xla_auto": "tf_xla_auto", "tf_graphjit": "tf_graphjit", "jax": "jax"}
TF_SYSTEMS = ("tf", "tf_xla_auto", "tf_jit", "tf_graphjit")
# TensorFlow with the plugin installed (scripts/setup_tf_plugin.sh): the same TensorFlow.
PLUGIN_PYTHON = os.path.join(REPO, "build-tf", "venv", "bin", "python")
BATCH_SECONDS = 0.2
RTOL, ATOL = 1e-4, 1e-5


# ---------------------------------------------------------------- the work

REAL_MODELS = ("mobilenet_v2", "resnet50", "bert_encoder", "lstm_classifier")


def works(selected):
    """name -> {"model", "feeds": {name: .npy path}, "fetches": [names], "rtol", "atol"}."""
    out = {}
    data = os.path.join(tempfile.gettempdir(), "graphjit-peers-feeds")
    os.makedirs(data, exist_ok=True)
    rng = np.random.default_rng(0)
    for folder in (os.path.join(REPO, "bench", "graphs"), os.path.join(REPO, "bench", "graphs", "large")):
        manifest = json.load(open(os.path.join(folder, "manifest.json")))
        for name, m in sorted(manifest.items()):
            if name.startswith("_") or (selected and name not in selected):
                continue
            x = os.path.join(data, name + "_x.npy")
            np.save(x, rng.standard_normal(m["shape"]).astype(np.float32))
            out[name] = {"model": os.path.join(folder, name + ".pb"), "feeds": {m["input"]: x},
                         "fetches": [m["output"]], "copy": True}
    for model in ("keras_mlp", "transformer_block", "small_cnn", "mnist_softmax"):
        d = os.path.join(REPO, "tests", "data", model)
        m = json.load(open(os.path.join(d, "manifest.json")))
        out[model] = {"model": os.path.join(d, m["model"]),
                      "feeds": {k: os.path.join(d, v) for k, v in m["feeds"].items()},
                      "fetches": sorted(m["fetches"])}
    for model in REAL_MODELS:  # their output only: fetching inner tensors would limit fusion
        d = os.path.join(REPO, "bench", "models", "out", model)
        if not os.path.exists(os.path.join(d, "manifest.json")):
            continue
        m = json.load(open(os.path.join(d, "manifest.json")))
        out[model] = {"model": os.path.join(d, m["model"]),
                      "feeds": {k: os.path.join(d, v) for k, v in m["feeds"].items()},
                      "fetches": [m["output"]], "rtol": m["tolerance"]["rtol"], "atol": m["tolerance"]["atol"]}
    d = os.path.join(REPO, "tests", "data", "mnist_softmax")
    out["mnist_train_step"] = {"train": True, "feeds": {"x": os.path.join(d, "x.npy"), "y": os.path.join(d, "y_.npy")},
                               "fetches": ["loss"]}
    return {k: v for k, v in out.items() if not selected or k in selected}


def mnist_train_step(tf, feeds, jit_compile):
    """One step of TensorFlow's MNIST XLA tutorial: softmax regression, GradientDescent(0.5).
    Returns the step (its loss) and its arguments."""
    x, y = tf.constant(feeds["x"]), tf.constant(feeds["y"])
    w = tf.Variable(tf.zeros([x.shape[1], y.shape[1]]))
    b = tf.Variable(tf.zeros([y.shape[1]]))

    @tf.function(jit_compile=jit_compile)
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, w) + b))
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.5 * dw)
        b.assign_sub(0.5 * db)
        return [loss]

    return step, [x, y]


def graph_json(gd):
    """A GraphDef as the JSON graph_to_jax and graph_to_torch take, and its constants."""
    import tensorflow as tf
    nodes, consts = [], {}
    for n in gd.node:
        attrs = {}
        for k, v in n.attr.items():
            kind = v.WhichOneof("value")
            if kind == "list":
                attrs[k] = list(v.list.i) or [s.decode() for s in v.list.s]
            elif kind == "type":
                attrs[k] = tf.dtypes.as_dtype(v.type).name
            elif kind in ("i", "b", "f"):
                attrs[k] = getattr(v, kind)
            elif kind == "s":
                attrs[k] = v.s.decode()
        if n.op == "Const":
            consts[n.name] = tf.make_ndarray(n.attr["value"].tensor)
        nodes.append({"name": n.name, "op": n.op, "attrs": attrs,
                      "inputs": [i for i in n.input if not i.startswith("^")]})
    return {"nodes": nodes}, consts


def export_for_jax(work, path):
    """The GraphDef as JSON (+ its constants as .npz), for the JAX worker."""
    import tensorflow as tf
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(open(work["model"], "rb").read())
    graph, consts = graph_json(gd)
    json.dump(graph, open(path + ".json", "w"))
    np.savez(path + ".npz", **consts)


# ---------------------------------------------------------------- workers

def worker(kind, threads):
    """Serves {"cmd": "load"|"time", ...} lines on stdin, one JSON answer per line."""
    if threads == 1:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if kind == "jax":
        # One thread: pinned to one core, and Eigen's thread pool off. (XLA reads no thread
        # count from XLA_FLAGS; a word without "--" there ends its flags.)
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=%s" % ("true" if threads > 1 else "false")
    if kind == "tf_xla_auto":
        os.environ["TF_XLA_FLAGS"] = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if kind == "tf_graphjit":
        import graphjit_tf
        graphjit_tf.set_jit_level("on_1")
    loaded = {}  # (work, system) -> (fn, args)
    if kind == "jax":
        import jax
        import graph_to_jax
    elif kind == "copy":
        pass
    else:
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)

    def load(req):
        work = req["work"]
        feeds = {k: np.load(v) for k, v in work["feeds"].items()}
        names = list(feeds)
        if kind == "copy":
            xs = [feeds[k] for k in names]
            dsts = [np.empty_like(x) for x in xs]
            run = lambda: [np.copyto(d, x) for d, x in zip(dsts, xs)]
            run()
            t0 = time.perf_counter()
            run()
            loaded[(req["name"], req["system"])] = run
            return {"ms": (time.perf_counter() - t0) * 1e3}
        if kind == "jax":
            graph = json.load(open(req["jax_graph"] + ".json"))
            consts = dict(np.load(req["jax_graph"] + ".npz"))
            fn = jax.jit(graph_to_jax.make_function(graph, consts, names, work["fetches"]))
            args = [jax.device_put(feeds[k]) for k in names]
            t0 = time.perf_counter()
            compiled = fn.lower(*args).compile()
            compile_ms = (time.perf_counter() - t0) * 1e3
            run = lambda: [o.block_until_ready() for o in compiled(*args)]
        elif work.get("train"):
            fn, args = mnist_train_step(tf, feeds, req["system"] == "tf_jit")
            t0 = time.perf_counter()
            fn(*args)  # the first step (from zeros): the one every system's outputs are compared on
            compile_ms = (time.perf_counter() - t0) * 1e3
            fn, args = mnist_train_step(tf, feeds, req["system"] == "tf_jit")
            run = lambda: fn(*args)
        else:
            gd = tf.compat.v1.GraphDef()
            gd.ParseFromString(open(work["model"], "rb").read())
            specs = [tf.TensorSpec(feeds[k].shape, tf.as_dtype(feeds[k].dtype), name=k) for k in names]

            def imported(*xs):
                fetches = [f if ":" in f else f + ":0" for f in work["fetches"]]
                return tf.graph_util.import_graph_def(gd, input_map={k + ":0": x for k, x in zip(names, xs)},
                                                      return_elements=fetches, name="")

            wrapped = tf.compat.v1.wrap_function(imported, specs)
            # The concrete function: no Python-side dispatch on each call.
            fn = tf.function(lambda *xs: wrapped(*xs), jit_compile=req["system"] == "tf_jit").get_concrete_function(*specs)
            args = [tf.constant(feeds[k]) for k in names]
            t0 = time.perf_counter()
            fn(*args)
            compile_ms = (time.perf_counter() - t0) * 1e3  # the first call: tracing, and XLA's compiles
            run = lambda: fn(*args)  # eager: returns when the outputs are computed
        outputs = [np.asarray(o) for o in run()]
        t0 = time.perf_counter()
        run()
        loaded[(req["name"], req["system"])] = run
        out = os.path.join(req["dir"], req["system"] + ".npz")
        np.savez(out, *outputs)
        return {"outputs": out, "compile_ms": compile_ms, "ms": (time.perf_counter() - t0) * 1e3}

    def timed(req):
        run = loaded[(req["name"], req["system"])]
        ms = []
        for _ in range(req["iters"]):
            t0 = time.perf_counter()
            run()
            ms.append((time.perf_counter() - t0) * 1e3)
        return {"ms": ms}

    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = load(req) if req["cmd"] == "load" else timed(req)
        except Exception as e:  # reported, not fatal: the table says why a cell is empty
            answer = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


class Worker:
    def __init__(self, kind, threads):
        python = PLUGIN_PYTHON if kind == "tf_graphjit" else sys.executable
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--worker", kind, "--threads",
                                      str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=HERE)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("a worker died")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# ---------------------------------------------------------------- graphjit

def jit_level(system):
    """graphjit_on_2 -> on_2"""
    return system[len("graphjit_"):]


def graphjit(args, threads):
    cmd = ([] if threads > 1 else ["taskset", "-c", str(min(os.sched_getaffinity(0)))]) + [GRAPHJIT] + args
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def feed_args(work):
    return sum((["--feed", "%s=%s" % kv] for kv in work["feeds"].items()), []) + sum(
        (["--fetch", f] for f in work["fetches"]), [])


# ---------------------------------------------------------------- the run

def agree(work, want, got):
    if len(want) != len(got):
        return False
    rtol, atol = work.get("rtol", RTOL), work.get("atol", ATOL)
    return all(w.shape == g.shape and np.allclose(g, w, rtol=rtol, atol=atol) for w, g in zip(want, got))


def run_threads(threads, all_works, rounds, tmp):
    workers = {k: Worker(k, threads) for k in ("tf", "tf_xla_auto", "tf_graphjit", "jax", "copy")}
    results = {}  # (work, system) -> {"ms": [...], "compile_ms", "error"}
    try:
        # 1. Load, check agreement, estimate each batch's size.
        for name, work in all_works.items():
            d = os.path.join(tmp, "%s_t%d" % (name, threads))
            os.makedirs(d, exist_ok=True)
            if not work.get("train"):
                export_for_jax(work, os.path.join(d, "graph"))
            reference = None
            for system in SYSTEMS:
                r = {"ms": []}
                if work.get("train") and system not in TF_SYSTEMS:
                    results[(name, system)] = {"ms": [], "error": "a training step with variables: TensorFlow only"}
                    continue
                if system.startswith("graphjit"):
                    out = os.path.join(d, system)
                    graphjit(["run", work["model"], "--jit", jit_level(system), "--threads", str(threads), "--out", out] +
                             feed_args(work), threads)
                    files = [os.path.join(out, f.replace("/", "_").replace(":", "_") + ".npy") for f in work["fetches"]]
                    outputs = [np.load(f) for f in files]
                    r["iters"] = 0
                else:
                    a = workers[WORKER_OF[system]].ask(cmd="load", name=name, system=system, work=work, dir=d,
                                                       jax_graph=os.path.join(d, "graph"))
                    if "error" in a:
                        results[(name, system)] = {"ms": [], "error": a["error"]}
                        print("  %-24s %-13s %s" % (name, system, a["error"]), flush=True)
                        continue
                    z = np.load(a["outputs"])
                    outputs = [z["arr_%d" % i] for i in range(len(z.files))]
                    r["compile_ms"] = a["compile_ms"]
                    r["iters"] = max(3, int(BATCH_SECONDS * 1e3 / max(a["ms"], 1e-3)))
                if reference is None:
                    reference = outputs
                elif not agree(work, reference, outputs):
                    r["error"] = "outputs differ from TensorFlow's"
                results[(name, system)] = r
                print("  %-24s %-13s %s" % (name, system, r.get("error", "agrees")), flush=True)
            feeds = [np.load(f, mmap_mode="r") for f in work["feeds"].values()]
            if work.get("copy") and reference and sum(o.nbytes for o in reference) == sum(f.nbytes for f in feeds):
                a = workers["copy"].ask(cmd="load", name=name, system="copy", work=work)
                results[(name, "copy")] = {"ms": [], "iters": max(3, int(BATCH_SECONDS * 1e3 / max(a["ms"], 1e-3)))}
        # 2. Rounds: one batch of every (work, system), interleaved.
        for rnd in range(rounds):
            for name, work in all_works.items():
                for system in SYSTEMS:
                    r = results[(name, system)]
                    if "error" in r:
                        continue
                    if system.startswith("graphjit"):
                        # A batch of its own, back to back, as each Python system's: between
                        # runs of another level (the op-by-op one moves tens of MB) the input
                        # would come from memory, not from the cache.
                        js = os.path.join(tmp, "bench.json")
                        iters = max(3, min(2000, int(BATCH_SECONDS * 1e3 / max(_median(results[(name, "tf")]["ms"] or [1]), 1e-3))))
                        graphjit(["bench", work["model"], "--jit", jit_level(system), "--iters", str(iters),
                                  "--threads", str(threads), "--json", js] + feed_args(work), threads)
                        c = json.load(open(js))["configs"][0]
                        r.setdefault("batch_medians", []).append(c["median_ms"])
                        if rnd == 0:
                            r["compile_ms"] = c["compile_ms"]
                    else:
                        a = workers[WORKER_OF[system]].ask(cmd="time", name=name, system=system, iters=r["iters"])
                        if "error" in a:
                            r["error"] = a["error"]
                        else:
                            r["ms"] += a["ms"]
                if (name, "copy") in results:
                    r = results[(name, "copy")]
                    r["ms"] += workers["copy"].ask(cmd="time", name=name, system="copy", iters=r["iters"])["ms"]
            print("round %d/%d done (%d thread%s)" % (rnd + 1, rounds, threads, "" if threads == 1 else "s"), flush=True)
    finally:
        for w in workers.values():
            w.close()
    for r in results.values():
        if "batch_medians" in r:
            r["ms"] = r["batch_medians"]
    return results


def _median(v):
    return float(np.median(v)) if len(v) else float("nan")


def versions():
    out = {"python": platform.python_version()}
    for mod in ("tensorflow", "jax", "jaxlib", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            pass
    out["graphjit"] = subprocess.run([GRAPHJIT, "--version"], capture_output=True, text=True).stdout.split()[1]  # "graphjit 0.1.0 (...)"
    try:
        out["graphjit_commit"] = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                                text=True).stdout.strip()
    except OSError:
        pass
    return out


def machine():
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    keep = ("Model name", "CPU(s)", "Thread(s) per core", "L1d cache", "L2 cache", "L3 cache")
    lines = [" ".join(l.split()) for l in lscpu.splitlines() if l.split(":")[0].strip() in keep]
    flags = [f for f in ("avx2", "avx512f", "avx512bw", "fma") if f in lscpu.split()]
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    # "cpu: MODEL, N hardware threads; JIT code for CPU, N-bit vectors; reference kernels for ISA"
    code = subprocess.run([GRAPHJIT, "devices", "--device", "cpu"], capture_output=True, text=True).stdout.strip()
    return lines + ["vector: " + ", ".join(flags), "graphjit's " + code, "memory: %.0f GiB" % mem,
                    "kernel: " + platform.release()]


def table(all_works, results, threads):
    peers = ["tf", "tf_xla_auto", "tf_jit", "jax"]
    head = ("| work | " + " | ".join(SYSTEMS) + " | copy | on_2/tf | on_2/xla_auto | on_2/tf_jit | on_2/jax | on_2/copy "
            "| tf_graphjit/tf | compile ms: xla_auto / tf_jit / jax / graphjit |")
    rows = [head, "|" + "---|" * (len(SYSTEMS) + 9)]
    for name in all_works:
        med = {s: _median(results[(name, s)]["ms"]) if "error" not in results[(name, s)] else None for s in SYSTEMS}
        med["copy"] = _median(results[(name, "copy")]["ms"]) if (name, "copy") in results else None
        cells = ["%.3f" % med[s] if med[s] is not None else "—" for s in SYSTEMS + ["copy"]]
        on = med[RATIO_SYSTEM]
        ratios = ["%.2f" % (on / med[p]) if on is not None and med[p] else "—" for p in peers + ["copy"]]
        plugin = med["tf_graphjit"]
        ratios.append("%.2f" % (plugin / med["tf"]) if plugin is not None and med["tf"] else "—")
        comp = [results[(name, s)].get("compile_ms") for s in ("tf_xla_auto", "tf_jit", "jax")]
        comp.append(results[(name, RATIO_SYSTEM)].get("compile_ms"))
        rows.append("| %s | %s | %s | %s |" % (name, " | ".join(cells), " | ".join(ratios),
                                             " / ".join("%.0f" % c if c is not None else "—" for c in comp)))
    errors = ["- %s, %s: %s" % (n, s, r["error"]) for (n, s), r in results.items() if "error" in r]
    return "\n".join(rows) + ("\n\nNot timed:\n" + "\n".join(errors) if errors else "") + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--work", nargs="*", help="only these works (default: all)")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "RESULTS.md"))
    a = p.parse_args()
    if a.worker:
        return worker(a.worker, a.threads[0])
    if not os.path.exists(GRAPHJIT):
        sys.exit("peers.py: %s is missing; build graphjit first (scripts/setup.sh)" % GRAPHJIT)
    all_works = works(a.work)
    tmp = tempfile.mkdtemp(prefix="graphjit-peers-")
    started = time.time()
    sections = []
    try:
        for threads in a.threads:
            print("== %d thread%s" % (threads, "" if threads == 1 else "s"), flush=True)
            results = run_threads(threads, all_works, a.rounds, tmp)
            sections.append("## %d thread%s\n\n%s" % (threads, "" if threads == 1 else "s",
                                                      table(all_works, results, threads)))
            print(sections[-1], flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    v = versions()
    text = ["# graphjit against TensorFlow, XLA and JAX", "",
            "Written by `bench/peers/run.sh` on %s (%.0f s). Median ms per run of each work; the ratios are "
            "graphjit's time at ON_2 (its whole-model level, as jit_compile and JAX compile a whole function) / the peer's (below 1: graphjit is faster); ON_1 is XLA auto-clustering's level. tf_graphjit is TensorFlow with graphjit's plugin at ON_1, and tf_graphjit/tf what the plugin brings a TensorFlow user. Every system's outputs were "
            "checked against TensorFlow's (rtol %g, atol %g; the real models: their manifests') before timing. Rounds: %d, each one batch "
            "(about %.1f s) of every work on every system, interleaved. Compile ms: XLA auto-clustering and "
            "jit_compile, the first call (tracing and compiles); JAX, lower+compile; graphjit at ON_2, its "
            "compile stages (each graphjit level runs in a process of its own). copy: for the bench graphs whose "
            "output is their input's size, NumPy's copy of the input into a buffer of the output's size (one thread, "
            "in both tables), the time of reading the input and writing the output once; the graphs of "
            "bench/graphs/large (names ending in _16mb and _64mb) have inputs of 16 and 64 MiB." % (datetime.date.today().isoformat(), time.time() - started, RTOL, ATOL, a.rounds,
                         BATCH_SECONDS), "",
            "Machine: " + "; ".join(machine()), "",
            "Versions: " + ", ".join("%s %s" % kv for kv in v.items()), ""] + sections
    open(a.out, "w").write("\n".join(text))
    print("wrote " + a.out)


if __name__ == "__main__":
    main()
