#!/usr/bin/env python3
"""Freeze a TensorFlow SavedModel or a Keras model file into a GraphDef for graphjit.

Tested with TensorFlow 2.17.1 (tensorflow-cpu), Keras 3.15.1, NumPy 1.26.4 and
protobuf 4.25.9 (the versions pinned in tests/data/requirements.txt).  Other
TensorFlow 2.x / Keras 3 versions probably work but may trace different graphs.

Usage (from the repository root):

    /tmp/tfvenv/bin/python tools/freeze.py MODEL -o OUT.pb [options]

MODEL is either
  * a SavedModel directory (the one holding saved_model.pb), e.g. written by
    tf.saved_model.save() or Keras 3's model.export(); the function frozen is
    its signature --signature (default "serving_default"), i.e. the serving
    graph with training=False baked in; or
  * a Keras model file (.keras, or legacy .h5/.hdf5), loaded with
    keras.models.load_model() and traced as model(inputs, training=False).

What it does:
  1. traces the inference function into a concrete TensorFlow graph (with the
     placeholder shapes changed by --input-shape, if given);
  2. folds every variable into a Const (convert_variables_to_constants_v2),
     which also inlines the function calls (StatefulPartitionedCall);
  3. optionally runs grappler's constant folding (--constant-folding);
  4. keeps only the nodes the outputs need (graph_util.extract_sub_graph;
     control inputs count as needed);
  5. writes OUT: binary GraphDef, or protobuf text format if OUT ends in
     .pbtxt (deterministic serialization);
  6. prints a summary on stdout: the inputs (Placeholder names, dtypes,
     shapes; -1 is an unknown dimension), the outputs (signature key -> tensor
     name to pass to `graphjit run --fetch`), the op histogram and the node
     count.

--input-shape NAME=d0,d1,... sets the unknown dims of an input (-1 or ? keeps
one unknown). A Keras model is re-traced with that shape, so its shape
arithmetic (Shape -> StridedSlice/GatherV2 -> Reshape...) becomes constants. A
SavedModel signature is a function already traced with the saved shapes: only
the Placeholder gets the new shape, the shape arithmetic inside stays (grappler
does not fold shapes of fed placeholders either).

Example:

    tools/freeze.py /tmp/my_saved_model -o model.pb --input-shape x=1,224,224,3
    build/bin/graphjit run model.pb --feed x=x.npy --fetch Identity

Exit status: 0 on success; 2 for bad usage, a missing path, a model that cannot
be loaded or traced, an unknown signature, or when TensorFlow is not
importable.
"""

import argparse
import collections
import os
import re
import sys

TESTED_WITH = "TensorFlow 2.17.1 (tensorflow-cpu), Keras 3.15.1, NumPy 1.26.4"

# Must be set before TensorFlow is imported: quiet logs, and plain Eigen
# kernels instead of oneDNN so results do not depend on the host CPU.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")


class FreezeError(Exception):
    """A problem with the user's input (reported on stderr, exit status 2)."""


FrozenModel = collections.namedtuple("FrozenModel", "graph_def inputs outputs")
FrozenModel.__doc__ = """Result of freeze().

graph_def: the frozen tf.compat.v1.GraphDef.
inputs:    list of TensorInfo for the Placeholders (name is the node name).
outputs:   list of TensorInfo; key is the signature output key (or output_<i>),
           name the tensor name ("node:i") to fetch.
"""
TensorInfo = collections.namedtuple("TensorInfo", "key name dtype shape")


def _import_tf():
    try:
        import tensorflow as tf  # noqa: F401
    except ImportError as e:
        raise FreezeError(
            "cannot import TensorFlow (%s); this script was tested with %s: "
            "python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install -r "
            "tests/data/requirements.txt && /tmp/tfvenv/bin/python tools/freeze.py ..."
            % (e, TESTED_WITH))
    return tf


def parse_input_shape(text):
    """"NAME=d0,d1,..." -> (NAME, [d0, d1, ...]); -1 or ? keeps a dim unknown."""
    if "=" not in text:
        raise FreezeError("--input-shape %r: expected NAME=d0,d1,..." % text)
    name, dims = text.split("=", 1)
    out = []
    if dims.strip():
        for d in dims.split(","):
            d = d.strip()
            if d in ("?", "-1", "None"):
                out.append(None)
                continue
            try:
                v = int(d)
            except ValueError:
                v = -2
            if v < 0:
                raise FreezeError("--input-shape %r: bad dimension %r" % (text, d))
            out.append(v)
    return name.strip(), out


def _override_spec(tf, spec, name, overrides, used):
    """TensorSpec `spec` for input `name`, with its shape overridden if asked."""
    if name not in overrides:
        return tf.TensorSpec(spec.shape, spec.dtype, name=name)
    used.add(name)
    new = overrides[name]
    old = spec.shape
    if old.rank is not None and old.rank != len(new):
        raise FreezeError("--input-shape %s: rank %d, but the model's input has shape %s"
                          % (name, len(new), old))
    if old.rank is not None:
        for i, (o, n) in enumerate(zip(old.as_list(), new)):
            if o is not None and n is not None and o != n:
                raise FreezeError("--input-shape %s: dim %d is %d in the model, not %d"
                                  % (name, i, o, n))
        new = [o if n is None else n for o, n in zip(old.as_list(), new)]
    return tf.TensorSpec(new, spec.dtype, name=name)


def _op_name(name):
    """A valid TensorFlow node name derived from `name`."""
    n = re.sub(r"[^A-Za-z0-9_.\-/]", "_", name.split(":")[0])
    if not n or not re.match(r"[A-Za-z0-9.]", n[0]):
        n = "input" + n
    return n


def _trace_saved_model(tf, path, signature, overrides, used):
    try:
        loaded = tf.saved_model.load(path)
    except Exception as e:  # noqa: BLE001 - any loader failure is a user error
        raise FreezeError("cannot load SavedModel %s: %s" % (path, _first_line(e)))
    sigs = getattr(loaded, "signatures", {}) or {}
    if signature not in sigs:
        raise FreezeError("SavedModel %s has no signature %r (it has: %s)"
                          % (path, signature, ", ".join(sorted(sigs)) or "none"))
    sig = sigs[signature]
    # Signature functions take keyword arguments only.
    _, kwspecs = sig.structured_input_signature
    names = sorted(kwspecs)
    specs = [_override_spec(tf, kwspecs[k], k, overrides, used) for k in names]

    def call(*args):
        return sig(**dict(zip(names, args)))

    fn = tf.function(call, input_signature=specs, autograph=False)
    # Keep `loaded` alive while tracing/freezing (the variables belong to it).
    return fn.get_concrete_function(), names, loaded


def _trace_keras(tf, path, overrides, used):
    try:
        import keras
    except ImportError:
        keras = tf.keras
    try:
        model = keras.models.load_model(path, compile=False)
    except Exception as e:  # noqa: BLE001
        raise FreezeError("cannot load Keras model %s: %s" % (path, _first_line(e)))
    inputs = getattr(model, "inputs", None)
    if not inputs:
        raise FreezeError("Keras model %s has no defined inputs (build it with "
                          "keras.Input before saving)" % path)
    names, specs = [], []
    for i, t in enumerate(inputs):
        name = _op_name(getattr(t, "name", None) or "input_%d" % i)
        while name in names:
            name += "_%d" % i
        names.append(name)
        spec = tf.TensorSpec(list(t.shape), tf.as_dtype(t.dtype))
        specs.append(_override_spec(tf, spec, name, overrides, used))
    struct = getattr(model, "_inputs_struct", None)

    def call(*args):
        x = list(args)
        if struct is not None:
            try:
                x = tf.nest.pack_sequence_as(struct, x)
            except (TypeError, ValueError):
                pass
        elif len(x) == 1:
            x = x[0]
        return model(x, training=False)

    fn = tf.function(call, input_signature=specs, autograph=False)
    return fn.get_concrete_function(), names, model


def _first_line(e):
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]


def _output_keys(tf, structured):
    """Flattened output order -> keys ("output_0" for unnamed outputs)."""
    if isinstance(structured, dict):
        keys = []
        for k in sorted(structured):
            sub = tf.nest.flatten(structured[k])
            keys.extend([str(k)] if len(sub) == 1 else
                        ["%s_%d" % (k, j) for j in range(len(sub))])
        return keys
    return ["output_%d" % i for i in range(len(tf.nest.flatten(structured)))]


def constant_fold(graph_def, output_tensors):
    """Run grappler's constant folding (only) on graph_def, keeping outputs."""
    tf = _import_tf()
    from tensorflow.core.protobuf import (config_pb2, meta_graph_pb2,
                                          rewriter_config_pb2)
    from tensorflow.python.grappler import tf_optimizer
    from tensorflow.python.training import saver

    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
        meta = saver.export_meta_graph(graph_def=graph_def, graph=g)
    fetch = meta_graph_pb2.CollectionDef()
    for t in output_tensors:
        fetch.node_list.value.append(t)
    meta.collection_def["train_op"].CopyFrom(fetch)
    config = config_pb2.ConfigProto()
    rw = config.graph_options.rewrite_options
    rw.optimizers.append("constfold")
    rw.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
    rw.min_graph_nodes = -1
    return tf_optimizer.OptimizeGraph(config, meta)


def freeze(path, signature="serving_default", input_shapes=None, constant_folding=False):
    """Freeze the SavedModel directory or Keras file at `path`.

    input_shapes: {input name: [d0, d1, ...]} (None = keep unknown).
    Returns a FrozenModel; raises FreezeError for user errors.
    """
    tf = _import_tf()
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2)

    overrides = dict(input_shapes or {})
    used = set()
    if not os.path.exists(path):
        raise FreezeError("no such file or directory: %s" % path)
    if os.path.isdir(path):
        if not tf.saved_model.contains_saved_model(path):
            raise FreezeError("%s is a directory without saved_model.pb/.pbtxt, not a "
                              "SavedModel" % path)
        concrete, names, keepalive = _trace_saved_model(tf, path, signature, overrides, used)
    elif path.lower().endswith(KERAS_SUFFIXES):
        concrete, names, keepalive = _trace_keras(tf, path, overrides, used)
    else:
        raise FreezeError("%s: expected a SavedModel directory or a .keras/.h5 file" % path)
    unused = sorted(set(overrides) - used)
    if unused:
        raise FreezeError("--input-shape for unknown input(s) %s (inputs: %s)"
                          % (", ".join(unused), ", ".join(names)))

    try:
        frozen_fn = convert_variables_to_constants_v2(concrete)
    except Exception as e:  # noqa: BLE001
        raise FreezeError("cannot freeze %s: %s" % (path, _first_line(e)))
    del keepalive
    graph_def = frozen_fn.graph.as_graph_def()
    out_tensors = [t.name for t in frozen_fn.outputs]
    out_keys = _output_keys(tf, concrete.structured_outputs)
    if len(out_keys) != len(out_tensors):
        out_keys = ["output_%d" % i for i in range(len(out_tensors))]

    if constant_folding:
        graph_def = constant_fold(graph_def, out_tensors)

    # Keep only what the outputs need (Placeholders of unused inputs go too).
    out_nodes = list(dict.fromkeys(t.split(":")[0] for t in out_tensors))
    from tensorflow.python.util import deprecation
    with deprecation.silence():
        graph_def = tf.compat.v1.graph_util.extract_sub_graph(graph_def, out_nodes)

    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    inputs = []
    for n in graph_def.node:
        if n.op in ("Placeholder", "PlaceholderWithDefault"):
            t = g.get_tensor_by_name(n.name + ":0")
            inputs.append(TensorInfo(n.name, n.name, t.dtype.name, _dims(t.shape)))
    outputs = []
    for k, name in zip(out_keys, out_tensors):
        t = g.get_tensor_by_name(name)
        outputs.append(TensorInfo(k, name, t.dtype.name, _dims(t.shape)))
    return FrozenModel(graph_def, inputs, outputs)


def freeze_keras_model(model, input_shape):
    """Freeze an in-memory Keras model (one input) as a user would: saved as .keras, then
    frozen from the file with the input's shape set to `input_shape` (batch included).
    Returns a FrozenModel."""
    import tempfile
    try:
        import keras
    except ImportError:
        keras = _import_tf().keras
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        name = _op_name(keras.models.load_model(path, compile=False).inputs[0].name)
        return freeze(path, input_shapes={name: list(input_shape)})


def _dims(shape):
    if shape.rank is None:
        return None
    return [-1 if d is None else d for d in shape.as_list()]


def _shape_str(dims):
    return "<unknown rank>" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def fetch_name(tensor_name):
    """Tensor name as graphjit takes it: "node" for output 0, else "node:i"."""
    return tensor_name[:-2] if tensor_name.endswith(":0") else tensor_name


def write_graph(graph_def, out):
    """Write binary GraphDef, or text format if `out` ends in .pbtxt."""
    from google.protobuf import text_format
    d = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(d):
        raise FreezeError("output directory does not exist: %s" % d)
    if out.endswith(".pbtxt"):
        with open(out, "w") as f:
            f.write(text_format.MessageToString(graph_def))
    else:
        with open(out, "wb") as f:
            f.write(graph_def.SerializeToString(deterministic=True))


def summary(frozen):
    """Human-readable summary: inputs, outputs, op histogram, node count."""
    lines = ["inputs:"]
    for i in frozen.inputs:
        lines.append("  %s  %s  %s" % (i.name, i.dtype, _shape_str(i.shape)))
    lines.append("outputs (signature key -> tensor to fetch):")
    for o in frozen.outputs:
        lines.append("  %s -> %s  %s  %s  (graphjit --fetch %s)"
                     % (o.key, o.name, o.dtype, _shape_str(o.shape), fetch_name(o.name)))
    counts = collections.Counter(n.op for n in frozen.graph_def.node)
    lines.append("ops:")
    for op in sorted(counts):
        lines.append("  %-32s %d" % (op, counts[op]))
    lines.append("nodes: %d" % len(frozen.graph_def.node))
    return "\n".join(lines)


def build_parser():
    p = argparse.ArgumentParser(
        prog="freeze.py",
        description="Freeze a TensorFlow SavedModel directory or a Keras model file "
                    "(.keras/.h5) into an inference GraphDef that graphjit runs: "
                    "variables folded into constants, inference mode (training=False / "
                    "the serving signature), nodes the outputs do not need removed. "
                    "Tested with %s." % TESTED_WITH,
        epilog="Prints the inputs (Placeholder name, dtype, shape; -1 = unknown dim), the "
               "outputs (tensor names to --fetch), the op histogram and node count. "
               "Exit status 2 for a missing path or a model that cannot be loaded.")
    p.add_argument("model", help="SavedModel directory, or Keras .keras/.h5 file")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output GraphDef: binary unless OUT ends in .pbtxt (text format)")
    p.add_argument("--signature", default="serving_default",
                   help="SavedModel signature to freeze (default: %(default)s); "
                        "ignored for Keras files")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=d0,d1,...",
                   help="set unknown dims of input NAME (repeatable; -1 or ? keeps a "
                        "dim unknown; known dims must match); Keras models are re-traced "
                        "with it, SavedModel signatures only get the new Placeholder shape")
    p.add_argument("--constant-folding", action="store_true",
                   help="also run grappler's constant folding (folds e.g. Shape of "
                        "fully known shapes; off by default)")
    p.add_argument("--version", action="version",
                   version="freeze.py (tested with %s)" % TESTED_WITH)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        shapes = dict(parse_input_shape(s) for s in args.input_shape)
        frozen = freeze(args.model, args.signature, shapes, args.constant_folding)
        write_graph(frozen.graph_def, args.output)
    except FreezeError as e:
        print("freeze.py: error: %s" % e, file=sys.stderr)
        return 2
    print(summary(frozen))
    print("wrote %s" % args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
