#!/usr/bin/env python3
"""The model zoo sweep: every keras.applications architecture and every keras-hub Backbone
family, built with seeded random weights (nothing is downloaded) and a small config, frozen
by tools/freeze.py as a user would, run by graphjit with the JIT off and at ON_2, on the CPU
and on the CUDA emulator, against TensorFlow's own output.

    python3 -m venv /tmp/zoovenv
    /tmp/zoovenv/bin/pip install -r bench/models/requirements.txt
    /tmp/zoovenv/bin/python bench/models/zoo.py [--graphjit build/bin/graphjit] [NAME...]
    /tmp/zoovenv/bin/python bench/models/zoo.py --list
    /tmp/zoovenv/bin/python bench/models/zoo.py --table bench/MODELS.md   (from the results)

NAME is a model (keras.applications.ResNet50 is "ResNet50", keras-hub's LlamaBackbone is
"Llama"), or "applications" / "hub" for a whole zoo; none: both. For each model, into
bench/models/out/zoo/NAME/ (git ignores it):
  model.pb                 the frozen graph (batch 1, every dimension fixed)
  <input>.npy, ref_*.npy   the seeded inputs; TensorFlow's outputs (a tf.compat.v1.Session
                           on the frozen graph, one thread, oneDNN off)
  result.json              what graphjit did: for each device and JIT level, whether it ran,
                           the largest error relative to the output's largest magnitude,
                           clusters, fallbacks, internal errors, ops left on the CPU of a GPU
                           session; the JIT off and ON_2 times at one thread (`graphjit bench`,
                           interleaved); or why it could not be built or frozen.
The table (--table) is made from every result.json there. A model counts as matching when
every output's largest error is at most 1e-3 of its largest magnitude (float32; TF32 off on
the emulator, as TensorFlow's CPU build has none). The sweep takes hours on two cores (the
emulator runs each GPU kernel thread by thread); it is not part of the tests. The small
models among it are fixtures in tests/data (tests/data/make_language_model_fixtures.py,
make_vision_model_fixtures.py). Each model is swept in a process of its own: one that
exhausts the machine's memory is reported as killed, and the sweep goes on.
"""

import argparse
import glob
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "out", "zoo")
TOLERANCE = 1e-3
DEVICES = ("cpu", "gpu-emu")
LEVELS = ("off", "on_2")

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


# ---- the models ----------------------------------------------------------------------------

# keras.applications: each constructor at the smallest input it accepts (most take 32x32;
# Inception and Xception 75x75), 10 classes, batch 1, its logits.
APPLICATION_SIZES = {"InceptionV3": 75, "InceptionResNetV2": 75, "Xception": 71, "NASNetLarge": 32}
# keras-hub: a tiny config per constructor argument's name; families that need more have
# their own in zoo_hub_configs.py (HUB_CONFIGS: the arguments, or a function that builds the
# backbone; HUB_INPUT_SHAPES and HUB_INPUT_VALUES where an input needs a given shape or values).
TINY = dict(vocabulary_size=64, num_layers=2, num_heads=2, num_query_heads=4, num_key_value_heads=2,
            hidden_dim=32, intermediate_dim=64, head_dim=8, max_sequence_length=64, num_attention_heads=4,
            embedding_dim=32, num_groups=1, num_inner_repetitions=1, num_segments=2, dropout=0.0,
            patch_size=4, image_shape=(32, 32, 3), num_experts=2, top_k=2, num_experts_per_tok=2,
            moe_intermediate_dim=32, shared_expert_intermediate_dim=32, mlp_dim=64, layer_norm_epsilon=1e-5)
SEQUENCE = 8


def applications():
    import keras
    return sorted(n for n in dir(keras.applications)
                  if n[0].isupper() and inspect.isfunction(getattr(keras.applications, n)))


def hub_families():
    import keras_hub
    return sorted(n[:-len("Backbone")] for n in dir(keras_hub.models)
                  if n.endswith("Backbone") and n != "Backbone")


def build_application(name):
    import keras
    size = APPLICATION_SIZES.get(name, 32)
    # The logits, not the softmax: random weights make some networks' softmax one-hot, whose
    # winner a rounding decides.
    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3), classes=10,
                                              classifier_activation=None)
    return model, {model.inputs[0].name: (1, size, size, 3)}, "input %dx%dx3, 10 classes, logits" % (size, size)


def build_hub(name):
    import keras_hub
    from zoo_hub_configs import HUB_CONFIGS, HUB_INPUT_SHAPES
    cls = getattr(keras_hub.models, name + "Backbone")
    config = HUB_CONFIGS.get(name)
    if callable(config):
        model = config()
        config = {"built by": "zoo_hub_configs.py"}
    elif config is not None:
        config = dict(config)
    else:
        params = inspect.signature(cls.__init__).parameters
        required = [p for p, v in params.items() if p not in ("self", "kwargs", "args") and v.default is inspect._empty
                    and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]
        missing = [p for p in required if p not in TINY]
        if missing:
            raise BuildError("no small config for its arguments " + ", ".join(missing))
        config = {p: v for p, v in TINY.items() if p in params}
    if "built by" not in config:
        model = cls(**config)
    given = HUB_INPUT_SHAPES.get(name, {})
    shapes = {}
    for t in model.inputs:
        dims = [1 if i == 0 and d is None else (SEQUENCE if d is None else d) for i, d in enumerate(t.shape)]
        shapes[t.name] = tuple(given.get(t.name, dims))
    return model, shapes, ", ".join("%s=%s" % kv for kv in sorted(config.items()))


class BuildError(Exception):
    pass


def feeds_for(model, shapes, rng, values=None):
    """Seeded inputs by name: token ids in [1, 64), a padding mask whose last two positions
    are padding, zero segment ids, normal floats for the rest; `values` (input -> a function
    of the shape) where an input needs particular values."""
    import numpy as np
    feeds = {}
    for t in model.inputs:
        shape, dtype = shapes[t.name], str(t.dtype)
        if values and t.name in values:
            feeds[t.name] = np.asarray(values[t.name](shape)).astype(dtype)
        elif "int" in dtype or "bool" in dtype:
            if "mask" in t.name:
                v = np.ones(shape, np.int32)
                v[..., -2:] = 0
            elif "token" in t.name or "ids" in t.name and "segment" not in t.name:
                v = rng.integers(1, 64, size=shape)
            else:
                v = np.zeros(shape)
            feeds[t.name] = v.astype(dtype if dtype != "bool" else np.bool_)
        else:
            feeds[t.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def seed_weights(model, rng):
    """Every weight moved by seeded noise, so that the ones and zeros a norm's scale or a bias
    starts with are exercised too; batch-norm variances kept positive."""
    for w in model.weights:
        v = w.numpy()
        if not str(v.dtype).startswith("float"):
            continue
        noise = rng.standard_normal(v.shape).astype(v.dtype) * 0.05
        w.assign(abs(v + noise) if "variance" in w.path else v + noise)


def freeze_model(model, feeds, directory):
    """The model's call on these inputs' shapes, saved as a SavedModel and frozen by
    tools/freeze.py; returns (GraphDef, {input: placeholder}, [output tensor names])."""
    import tensorflow as tf
    sys.path.insert(0, os.path.join(REPO, "tools"))
    import freeze
    names = list(feeds)
    spec = [tf.TensorSpec(feeds[n].shape, tf.as_dtype(feeds[n].dtype), name=n) for n in names]
    single = len(model.inputs) == 1 and not isinstance(model.input, dict)

    @tf.function(input_signature=spec)
    def serve(*args):
        x = args[0] if single else dict(zip(names, args))
        out = model(x, training=False)
        if isinstance(out, dict) and all(tf.is_tensor(v) for v in out.values()):
            return out
        return {"output_%d" % i: t for i, t in enumerate(tf.nest.flatten(out))}  # nested outputs, flat

    module = tf.Module()
    module.model, module.serve = model, serve
    saved = os.path.join(directory, "saved_model")
    tf.saved_model.save(module, saved, signatures={"serving_default": serve})
    frozen = freeze.freeze(saved)
    placeholders = {}
    for i in frozen.inputs:
        match = [n for n in names if i.name == n or i.name.endswith(n)]
        placeholders[match[0] if match else i.name] = i.name
    return frozen.graph_def, placeholders, [freeze.fetch_name(o.name) for o in frozen.outputs]


def run_tf(graph_def, feeds, fetches):
    import tensorflow as tf
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        names = [f if ":" in f else f + ":0" for f in fetches]
        return dict(zip(fetches, session.run(names, {k + ":0": v for k, v in feeds.items()})))


def file_key(tensor):
    return tensor.replace("/", "_").replace(":", "_")


# ---- graphjit ------------------------------------------------------------------------------

STAT = re.compile(r"(\w+)=([-\d.]+)")


def graphjit_run(graphjit, directory, feeds, fetches, device, level):
    """`graphjit run` of the frozen graph; {"ran", "error", "worst", stats...}."""
    import numpy as np
    out = os.path.join(directory, "gj_%s_%s" % (device, level))
    cmd = [graphjit, "run", os.path.join(directory, "model.pb"), "--device", device, "--jit", level, "--stats",
           "--threads", "1", "--out", out]
    for name in feeds:
        cmd += ["--feed", "%s=%s" % (name, os.path.join(directory, file_key(name) + ".npy"))]
    for f in fetches:
        cmd += ["--fetch", f]
    env = dict(os.environ, GRAPHJIT_FLAGS=(os.environ.get("GRAPHJIT_FLAGS", "") + " --gpu_tf32=off").strip())
    start = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    result = {"seconds": round(time.time() - start, 1)}
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if l.startswith("graphjit:") and "device gpu-emu" not in l]
        result.update(ran=False, error=(lines[-1] if lines else p.stderr.strip()[-300:])[len("graphjit: "):][:300])
        return result
    result["ran"] = True
    for line in (p.stdout + p.stderr).splitlines():
        if line.startswith("jit:"):
            result.update({k: float(v) for k, v in STAT.findall(line)})
    worst = 0.0
    for f in fetches:
        got = np.load(os.path.join(out, file_key(f) + ".npy")).astype(np.float64)
        ref = np.load(os.path.join(directory, "ref_" + file_key(f) + ".npy")).astype(np.float64)
        if got.shape != ref.shape:
            worst = float("inf")
            continue
        scale = max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)
        diff = np.abs(got - ref)
        if np.isnan(diff).any() and not np.array_equal(np.isnan(got), np.isnan(ref)):
            worst = float("inf")
        elif ref.size:
            worst = max(worst, float(np.nanmax(diff)) / scale)
    result["worst"] = worst
    return result


def graphjit_bench(graphjit, directory, feeds, iters):
    """The JIT off and ON_2 at one thread on the CPU, interleaved: {"off_ms", "on_2_ms"}."""
    report = os.path.join(directory, "bench.json")
    cmd = [graphjit, "bench", os.path.join(directory, "model.pb"), "--jit", "off,on_2", "--threads", "1",
           "--iters", str(iters), "--json", report]
    for name in feeds:
        cmd += ["--feed", "%s=%s" % (name, os.path.join(directory, file_key(name) + ".npy"))]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-300:]}
    with open(report) as f:
        data = json.load(f)
    times = {}
    for r in data.get("configs", []):
        times[r["jit"] + "_ms"] = r.get("median_ms")
    return times


def why(e):
    """An exception's type and its reason: of TensorFlow's traceback of the user's code, the
    last line that names an error (the arguments of the call that raised it come after)."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    named = [l for l in lines if re.match(r"^\w+(Error|Exception): ", l)]
    return "%s: %s" % (type(e).__name__, (named or lines or [""])[-1][:300])


def sweep_one(name, zoo, graphjit, iters, devices):
    import numpy as np
    directory = os.path.join(OUT, name)
    os.makedirs(directory, exist_ok=True)
    result = {"name": name, "zoo": zoo}
    rng = np.random.default_rng(1234)
    try:
        import keras
        keras.utils.set_random_seed(1234)
        model, shapes, config = (build_application if zoo == "applications" else build_hub)(name)
        result["config"] = config
        seed_weights(model, rng)
        values = None
        if zoo == "hub":
            from zoo_hub_configs import HUB_INPUT_VALUES
            values = HUB_INPUT_VALUES.get(name)
        feeds = feeds_for(model, shapes, rng, values)
    except Exception as e:  # noqa: BLE001
        result["build_error"] = why(e)
        return result
    try:
        with tempfile.TemporaryDirectory() as tmp:
            graph_def, placeholders, fetches = freeze_model(model, feeds, tmp)
        # The frozen graph's placeholders (an input nothing reads is gone).
        feeds = {placeholders[k]: v for k, v in feeds.items() if k in placeholders}
        refs = run_tf(graph_def, feeds, fetches)
    except Exception as e:  # noqa: BLE001
        result["freeze_error"] = why(e)
        return result
    with open(os.path.join(directory, "model.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))
    for k, v in feeds.items():
        np.save(os.path.join(directory, file_key(k) + ".npy"), v)
    for k, v in refs.items():
        np.save(os.path.join(directory, "ref_" + file_key(k) + ".npy"), v)
    result.update(nodes=len(graph_def.node), ops=sorted(set(n.op for n in graph_def.node)),
                  mb=round(graph_def.ByteSize() / 2**20, 1))
    for device in devices:
        for level in LEVELS:
            result["%s_%s" % (device, level)] = graphjit_run(graphjit, directory, feeds, fetches, device, level)
    if all(result.get("cpu_%s" % l, {}).get("ran") for l in LEVELS):
        result["bench"] = graphjit_bench(graphjit, directory, feeds, iters)
    return result


# ---- the table -----------------------------------------------------------------------------

def verdict(r, devices=DEVICES):
    if r.get("not_swept"):
        return "not swept yet"
    if "build_error" in r:
        return "not built: " + r["build_error"]
    if "freeze_error" in r:
        return "not frozen: " + r["freeze_error"]
    problems = {}  # what went wrong -> the runs it went wrong in
    for device in devices:
        for level in LEVELS:
            k = "%s_%s" % (device, level)
            run = r.get(k)
            if run is None:
                problem = "not run"
            elif not run["ran"]:
                problem = re.sub(r"^\S*model\.pb: ", "", run["error"])[:160]
            elif run["worst"] > TOLERANCE:
                problem = "error %.2g" % run["worst"]
            elif run.get("fallback", 0) or run.get("internal_errors", 0):
                problem = "%d fallbacks, %d internal errors" % (run.get("fallback", 0), run.get("internal_errors", 0))
            else:
                continue
            problems.setdefault(problem, []).append(k)
    runs = len(devices) * len(LEVELS)
    return "; ".join("%s: %s" % ("every run" if len(ks) == runs else ", ".join(ks), p) for p, ks in problems.items()) \
        or "matches"


def table(results, path):
    lines = [
        "# The model zoo",
        "",
        "Every `keras.applications` architecture and every keras-hub Backbone family, built with",
        "seeded random weights and a small config, frozen by `tools/freeze.py`, run by graphjit",
        "with the JIT off and at ON_2 on the CPU and on gpu-emu (TF32 off), against TensorFlow's",
        "output. Made by `bench/models/zoo.py` (versions: `bench/models/requirements.txt`); the",
        "table by `zoo.py --table bench/MODELS.md` from its results. *Error*: the largest",
        "difference from TensorFlow relative to the output's largest magnitude, over the four",
        "runs (matching: at most 1e-3). *Clusters*: ON_2's on the CPU / on gpu-emu. *CPU ops*:",
        "nodes of the gpu-emu ON_2 session left on its CPU. *Off / ON_2*: median ms of one run at",
        "one thread on the CPU (`graphjit bench`, interleaved).",
        "",
        "| model | zoo | nodes | result | error | clusters | CPU ops | off ms | ON_2 ms | ON_2 speed-up |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    counts = {"matches": 0, "total": 0, "not swept": 0}
    for r in sorted(results, key=lambda r: (r["zoo"], r["name"].lower())):
        counts["total"] += 1
        v = verdict(r)
        counts["matches"] += v == "matches"
        counts["not swept"] += v == "not swept yet"
        runs = [r.get("%s_%s" % (d, l)) for d in DEVICES for l in LEVELS]
        worst = max([x["worst"] for x in runs if x and x.get("ran")], default=None)
        cpu, gpu = r.get("cpu_on_2") or {}, r.get("gpu-emu_on_2") or {}
        b = r.get("bench") or {}
        off, on = b.get("off_ms"), b.get("on_2_ms")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r["zoo"], r.get("nodes", ""), v.replace("|", "\\|"),
            "" if worst is None else "%.1e" % worst,
            "%s / %s" % (int(cpu.get("clusters", 0)), int(gpu.get("clusters", 0))) if cpu.get("ran") else "",
            int(gpu["cpu_ops"]) if gpu.get("ran") and "cpu_ops" in gpu else "",
            "%.2f" % off if off else "", "%.2f" % on if on else "",
            "%.2fx" % (off / on) if off and on else ""))
    lines += ["", "%d of %d architectures match on both devices at both levels; %d not swept yet." % (
        counts["matches"], counts["total"], counts["not swept"]), ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("zoo: wrote %s (%d of %d match)" % (path, counts["matches"], counts["total"]))


def load_results():
    results = []
    for p in sorted(glob.glob(os.path.join(OUT, "*", "result.json"))):
        with open(p) as f:
            results.append(json.load(f))
    return results


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="models, or 'applications' / 'hub' (default: both zoos)")
    p.add_argument("--graphjit", default=os.path.join(REPO, "build", "bin", "graphjit"))
    p.add_argument("--devices", default=",".join(DEVICES))
    p.add_argument("--iters", type=int, default=20, help="timed runs per JIT level")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    p.add_argument("--table", help="write the table of every result so far to this file and exit")
    p.add_argument("--one", help=argparse.SUPPRESS)  # ZOO: sweep names[0] of that zoo in this process
    args = p.parse_args(argv)
    if args.table:
        results = load_results()
        try:  # the models not swept yet, as rows of their own
            swept = {r["name"] for r in results}
            for zoo, names in (("applications", applications()), ("hub", hub_families())):
                results += [{"name": n, "zoo": zoo, "not_swept": True} for n in names if n not in swept]
        except ImportError:
            pass
        table(results, args.table)
        return 0
    devices = args.devices.split(",")
    if args.one:
        result = sweep_one(args.names[0], args.one, args.graphjit, args.iters, devices)
        with open(os.path.join(OUT, args.names[0], "result.json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        return 0
    try:
        apps, hub = applications(), hub_families()
    except ImportError as e:
        print("zoo.py: %s: pip install -r bench/models/requirements.txt in a venv" % e, file=sys.stderr)
        return 2
    if args.list:
        print("applications:", " ".join(apps))
        print("hub:", " ".join(hub))
        return 0
    names = args.names or ["applications", "hub"]
    todo = []
    for n in names:
        if n in ("applications", "hub"):
            todo += [(m, n) for m in (apps if n == "applications" else hub)]
        elif n in apps:
            todo.append((n, "applications"))
        elif n in hub:
            todo.append((n, "hub"))
        else:
            print("zoo.py: no model '%s' (see --list)" % n, file=sys.stderr)
            return 2
    for i, (name, zoo) in enumerate(todo):
        # Each model in a process of its own: the memory of the last is returned, and one that
        # exhausts the machine's is that model's row, not the sweep's end.
        start = time.time()
        path = os.path.join(OUT, name, "result.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.remove(path)
        p = subprocess.run([sys.executable, __file__, "--one", zoo, "--graphjit", args.graphjit, "--devices",
                            args.devices, "--iters", str(args.iters), name], capture_output=True, text=True)
        if os.path.exists(path):
            with open(path) as f:
                result = json.load(f)
        else:
            why = ("killed (signal %d%s)" % (-p.returncode, ": out of memory" if p.returncode == -9 else "")
                   if p.returncode < 0 else (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:300])
            result = {"name": name, "zoo": zoo, "build_error": why}
        result["sweep_seconds"] = round(time.time() - start, 1)
        with open(path, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        print("[%d/%d] %-22s %s (%.0f s)" % (i + 1, len(todo), name, verdict(result, devices)[:200],
                                            time.time() - start), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
