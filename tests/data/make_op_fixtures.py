#!/usr/bin/env python3
"""Generate per-op golden fixtures for graphjit with real TensorFlow.

How to run (from the repository root):

    python3 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install -r tests/data/requirements.txt
    /tmp/tfvenv/bin/python tests/data/make_op_fixtures.py

`python3 tests/data/make_op_fixtures.py` also works if the active interpreter
can import tensorflow; otherwise it prints a one-line hint and exits with
status 2.  `make_op_fixtures.py CASE...` regenerates only the named cases.

Every case is a tiny TF1-style graph (tf.compat.v1 placeholders with fully or
partly known shapes, the op under test, Const inputs for axes/shape/perm...).
TensorFlow runs the serialized GraphDef (re-imported into a fresh graph, the
same bytes graphjit reads) on seeded inputs and the script writes, into
tests/data/ops/<case>/:
  model.pb       binary GraphDef (deterministic serialization)
  <feed>.npy     inputs, one per placeholder fed
  out_<f>.npy    TensorFlow's outputs; fetch "node:i" is stored as out_node_i.npy
  manifest.json  {"model", "feeds", "fetches", "tolerance", "tolerance_note", ...}
plus tests/data/ops/README.md (index of the cases) and a short section of
tests/data/README.md (between the "ops fixtures" markers).

float16/bfloat16 outputs are stored widened to float32 (exact), because NumPy
has no bfloat16 and graphjit's .npy writer widens both; the TensorFlow dtype is
recorded in the manifest's "fetch_dtypes".  bfloat16 inputs are fed as float32
(values exactly representable in bfloat16) and Cast to bfloat16 in the graph.

Where a float64 reference is cheap (elementwise ops: the same TF op run in
float64; reductions/matmul/softmax: NumPy in float64) the script checks that
TensorFlow itself is within the case's tolerance of that reference, rounded to
the output dtype, and records the observed max abs error in
"observed_max_abs_err_vs_float64".

Everything is seeded (one RandomState per case, seeded from the case name)
and TensorFlow runs single-threaded with oneDNN disabled, so re-running the
script reproduces byte-identical files.
"""

import collections
import json
import os
import shutil
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OPS_DIR = os.path.join(HERE, "ops")

# Must be set before TensorFlow is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# oneDNN kernels may change float results depending on the host CPU; use the
# plain Eigen kernels so the reference outputs are reproducible.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

try:
    import numpy as np
    import tensorflow as tf
    from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2
except ImportError as e:  # pragma: no cover
    print(
        "make_op_fixtures.py: cannot import TensorFlow (%s); create a venv: "
        "python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install -r "
        "tests/data/requirements.txt && /tmp/tfvenv/bin/python "
        "tests/data/make_op_fixtures.py" % e,
        file=sys.stderr,
    )
    sys.exit(2)

NAN = float("nan")
INF = float("inf")
BF16 = tf.bfloat16.as_numpy_dtype

# --------------------------------------------------------------------------
# Tolerances.  (rtol, atol, note)
# --------------------------------------------------------------------------
Tol = collections.namedtuple("Tol", "rtol atol note")

EXACT = Tol(0.0, 0.0,
    "Integer, bool, shape or pure data-movement result: every correct "
    "implementation produces exactly these values.")
IEEE = Tol(0.0, 0.0,
    "Each output element is one correctly rounded IEEE-754 operation "
    "(+, -, *, /, or alpha*x) or an exact one (negation, abs, sign, "
    "floor/ceil/round, max/min, relu, select, comparison), so the result is "
    "fully determined; NaN only has to match NaN. The generator checked that "
    "TensorFlow equals the float64 result rounded to the output dtype exactly.")
ROUND1 = Tol(1e-6, 0.0,
    "IEEE defines the correctly rounded result, but TensorFlow (Eigen fast "
    "math) uses a hardware approximation refined by a Newton step for "
    "reciprocal/rsqrt (e.g. TF gives 1/1 = 0.99999994), and (x-y)^2 rounds "
    "twice; rtol 1e-6 (~8 ulp of float32) accepts either way of computing it.")
TRANS = Tol(1e-5, 1e-6,
    "float32 transcendental function: TensorFlow (Eigen's vectorised "
    "polynomial approximations) and another libm/approximation differ by a few "
    "ulp (~1e-7 relative); rtol 1e-5 leaves ample headroom, atol 1e-6 covers "
    "results near zero or underflowing (where TF flushes to 0 or denormals).")
ACCUM = Tol(1e-5, 1e-6,
    "float32 accumulation (sum/mean/prod/dot products/softmax normaliser): "
    "implementations differ in summation order and exp rounding (a few ulp, "
    "~1e-7 relative for these short reductions); rtol 1e-5 leaves headroom, "
    "atol 1e-6 covers results near zero where relative error is meaningless.")
ACCUM_K64 = Tol(1e-5, 1e-5,
    "float32 dot products of length 64 (|terms| ~1, |sums| up to ~20): "
    "summation-order differences reach a few 1e-6 absolute; rtol 1e-5, "
    "atol 1e-5.")
F64_TRANS = Tol(1e-12, 1e-14,
    "float64 transcendental function: libm/Eigen approximations agree to a "
    "few ulp (~1e-16 relative); rtol 1e-12 leaves ample headroom.")
F16 = Tol(1e-3, 1e-4,
    "float16: TensorFlow computes each op in float32 and rounds to float16; "
    "1 ulp of float16 is 2^-10 (~9.8e-4) relative, so rtol 1e-3 accepts a "
    "1-ulp rounding difference (e.g. computing in float32 vs float64 before "
    "rounding). Expected values are stored widened to float32 (exact).")
BF16_TOL = Tol(1e-2, 1e-3,
    "bfloat16: TensorFlow computes each op in float32 and rounds "
    "(round-to-nearest-even) to bfloat16; 1 ulp of bfloat16 is 2^-7 (~7.8e-3) "
    "relative, so rtol 1e-2 accepts a 1-ulp rounding difference. Inputs are "
    "fed as float32 and Cast in the graph; expected values are stored widened "
    "to float32 (exact).")


# --------------------------------------------------------------------------
# Case registry.
# --------------------------------------------------------------------------
Case = collections.namedtuple("Case", "name desc tol build")
CASES = []


def add_case(name, desc, tol, build):
    assert all(c.name != name for c in CASES), name
    CASES.append(Case(name, desc, tol, build))


class Builder(object):
    """Collects feeds, fetches and an optional float64 reference for a case."""

    def __init__(self, rng):
        self.rng = rng
        self.feeds = collections.OrderedDict()
        self.fetches = []
        self.ref = None  # callable -> {fetch: float64 array}, run after TF
        self.graph_def = None  # a GraphDef made another way than in the case's graph

    def ph(self, name, value, shape="full", dtype=None):
        """Placeholder `name` fed with `value`.

        shape: "full" = value's shape; "batch" = first dim unknown; None =
        unknown rank; or an explicit list with None for unknown dims.
        """
        value = np.asarray(value)
        if shape == "full":
            shape = list(value.shape)
        elif shape == "batch":
            shape = [None] + list(value.shape[1:])
        self.feeds[name] = value
        return tf.compat.v1.placeholder(
            dtype or tf.as_dtype(value.dtype), shape, name=name)

    def ph_bf16(self, name, value, shape="full"):
        """float32 placeholder (bfloat16-exact values) Cast to bfloat16."""
        value = np.asarray(value, np.float32).astype(BF16).astype(np.float32)
        p = self.ph(name, value, shape)
        return tf.raw_ops.Cast(x=p, DstT=tf.bfloat16, name=name + "_bf16")

    def fetch(self, *names):
        self.fetches.extend(names)

    def graph_of(self, fn, frozen, **feeds):
        """fn(*placeholders) in the case's graph, one placeholder per feed (in order); or,
        `frozen`, the tf.function of fn frozen as tools/freeze.py freezes one (its If and
        While nodes lowered to Switch, Merge and the loop ops) as the case's GraphDef."""
        if not frozen:
            return fn(*[self.ph(k, v) for k, v in feeds.items()])
        from tensorflow.python.framework.convert_to_constants import (
            convert_variables_to_constants_v2)
        specs = [tf.TensorSpec(np.shape(v), tf.as_dtype(np.asarray(v).dtype), name=k) for k, v in feeds.items()]
        concrete = tf.function(fn, input_signature=specs).get_concrete_function()
        self.graph_def = convert_variables_to_constants_v2(concrete).graph.as_graph_def()
        self.feeds.update(feeds)


def const(value, name, dtype=None):
    return tf.constant(np.asarray(value, dtype) if dtype else value, name=name)


def i32(v):
    return np.asarray(v, np.int32)


def i64(v):
    return np.asarray(v, np.int64)


def f32(v):
    return np.asarray(v, np.float32)


def normal(rng, shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def uniform(rng, shape, lo, hi, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def ints(rng, shape, lo, hi, dtype=np.int32):
    return rng.randint(lo, hi, size=shape).astype(dtype)


def sprinkle(rng, a, vals):
    """Copy of `a` with `vals` at distinct random positions."""
    a = np.array(a, copy=True)
    flat = a.reshape(-1)
    idx = rng.permutation(flat.size)[: len(vals)]
    flat[idx] = np.asarray(vals, a.dtype)
    return a


def sprinkle2(rng, a, b, pairs):
    """Copies of same-shaped a, b with (a_i, b_i) pairs at random positions."""
    a, b = np.array(a, copy=True), np.array(b, copy=True)
    idx = rng.permutation(a.size)[: len(pairs)]
    fa, fb = a.reshape(-1), b.reshape(-1)
    for k, (u, v) in zip(idx, pairs):
        fa[k], fb[k] = u, v
    return a, b


def eager64(op, arg_values, attrs):
    """Run tf.raw_ops.<op> eagerly on float64 copies of the inputs."""
    kwargs = {k: tf.constant(np.asarray(v).astype(np.float64))
              for k, v in arg_values.items()}
    kwargs.update(attrs)
    return getattr(tf.raw_ops, op)(**kwargs).numpy()


# --------------------------------------------------------------------------
# Generic elementwise cases.
# --------------------------------------------------------------------------
UNARY_ARG = {"Relu": "features", "Relu6": "features", "LeakyRelu": "features",
             "Elu": "features", "Selu": "features", "Softplus": "features",
             "Softsign": "features"}


def unary(name, op, data, tol, attrs=None, shape="full", dtype="same",
          desc=None, ref=True):
    """y = op(x); data(rng) -> x. dtype "bf16" feeds float32 and casts."""
    attrs = attrs or {}

    def build(b):
        x = data(b.rng)
        xt = b.ph_bf16("x", x, shape) if dtype == "bf16" else b.ph("x", x, shape)
        getattr(tf.raw_ops, op)(**{UNARY_ARG.get(op, "x"): xt}, name="y", **attrs)
        b.fetch("y")
        if ref:
            b.ref = lambda: {"y": eager64(op, {UNARY_ARG.get(op, "x"): b.feeds["x"]}, attrs)}

    add_case(name, desc or "%s%s on %s" % (op, " %s" % attrs if attrs else "",
                                           _shape_desc(data)), tol, build)


def binary(name, op, data, tol, shapes=("full", "full"), dtype="same",
           desc=None, ref=True, argnames=("x", "y")):
    """z = op(x, y); data(rng) -> (x, y)."""

    def build(b):
        xv, yv = data(b.rng)
        if dtype == "bf16":
            xt, yt = b.ph_bf16("x", xv, shapes[0]), b.ph_bf16("y", yv, shapes[1])
        else:
            xt, yt = b.ph("x", xv, shapes[0]), b.ph("y", yv, shapes[1])
        getattr(tf.raw_ops, op)(**{argnames[0]: xt, argnames[1]: yt}, name="z")
        b.fetch("z")
        if ref:
            b.ref = lambda: {"z": eager64(op, {argnames[0]: b.feeds["x"],
                                               argnames[1]: b.feeds["y"]}, {})}

    add_case(name, desc or "%s on %s" % (op, _shape_desc(data)), tol, build)


def _shape_desc(data):
    out = data(np.random.RandomState(0))
    if isinstance(out, tuple):
        return " and ".join("%s%s" % (np.asarray(v).dtype, list(np.shape(v))) for v in out)
    return "%s%s" % (np.asarray(out).dtype, list(np.shape(out)))


# ----------------------------- unary float32 -------------------------------
def _n(shape, scale=1.0, specials=()):
    return lambda r: sprinkle(r, normal(r, shape, scale), specials)


def _u(shape, lo, hi, specials=()):
    return lambda r: sprinkle(r, uniform(r, shape, lo, hi), specials)


SPECIAL = [NAN, INF, -INF, -0.0, 0.0]
unary("neg_f32", "Neg", _n([3, 4], 1, SPECIAL), IEEE)
unary("abs_f32", "Abs", _n([3, 4], 1, SPECIAL), IEEE)
unary("sign_f32", "Sign", _n([3, 4], 1, SPECIAL), IEEE)
unary("exp_f32", "Exp", _u([2, 3, 4], -10, 10, [NAN, INF, -INF, 100.0, -100.0, 88.0, -0.0]), TRANS)
unary("log_f32", "Log", _u([3, 4], 0.01, 100, [0.0, -0.0, -1.0, INF, NAN, 1.0]), TRANS)
unary("log1p_f32", "Log1p", _u([3, 4], -0.99, 10, [-1.0, -2.0, 1e-8, -1e-8, INF, NAN]), TRANS)
unary("sqrt_f32", "Sqrt", _u([3, 4], 0, 100, [0.0, -0.0, -1.0, INF, NAN, 1e-30]), ROUND1)
unary("rsqrt_f32", "Rsqrt", _u([3, 4], 0.01, 100, [0.0, INF, -1.0, NAN, 1e-30, 1.0]), ROUND1)
unary("square_f32", "Square", _n([3, 4], 10, [NAN, INF, -INF, -0.0, 1e20]), IEEE)
unary("reciprocal_f32", "Reciprocal", _n([3, 4], 1, [0.0, -0.0, INF, -INF, NAN, 1.0]), ROUND1)
unary("tanh_f32", "Tanh", _n([2, 3, 4], 3, [NAN, INF, -INF, 20.0, -20.0, 1e-4, -1e-4, 0.0]), TRANS)
# Sin and Cos over the whole float range: the reduction by pi/2 must be exact for large
# arguments too (rotary position embeddings reach thousands; 1e30 and 3e38 need all of
# 2/pi's bits).
TRIG_SPECIAL = [NAN, INF, -INF, -0.0, 0.0, 1e-30, 1.5707964, 3.1415927, 2048.0, -4095.5, 12345.678,
                1e4, -1e5, 1e8, 1e30, -3e38]
unary("sin_f32", "Sin", _n([4, 6], 3, TRIG_SPECIAL), TRANS,
      desc="Sin on float32[4, 6] incl. large arguments (2048, 1e8, 1e30, -3e38), +/-inf, NaN")
unary("cos_f32", "Cos", _n([4, 6], 3, TRIG_SPECIAL), TRANS,
      desc="Cos on float32[4, 6] incl. large arguments (2048, 1e8, 1e30, -3e38), +/-inf, NaN")
# A float's class: NaN, +-Inf, the largest finite, subnormals and zeros.
CLASS_SPECIAL = [NAN, INF, -INF, 3.4028235e38, -3.4028235e38, 1e-45, -1e-40, 0.0, -0.0]
for _op, _name in (("IsNan", "is_nan"), ("IsInf", "is_inf"), ("IsFinite", "is_finite")):
    unary(_name + "_f32", _op, _n([3, 5], 10, CLASS_SPECIAL), IEEE,
          desc="%s on float32[3, 5] incl. NaN, +/-inf, +/-FLT_MAX, subnormals, +/-0" % _op)
    unary(_name + "_f16", _op, lambda r: sprinkle(r, normal(r, [3, 4], 100, np.float16), [NAN, INF, -INF, 65504.0]),
          IEEE, desc="%s on float16[3, 4] incl. NaN, +/-inf, 65504" % _op)
unary("sigmoid_f32", "Sigmoid", _n([2, 3, 4], 5, [NAN, INF, -INF, 100.0, -100.0, 30.0, -30.0]), TRANS)
unary("relu_f32", "Relu", _n([3, 4], 1, [INF, -INF, -0.0]), IEEE, shape="batch")
unary("relu6_f32", "Relu6", _u([3, 4], -10, 10, [INF, -INF, 6.0, 0.0]), IEEE)
unary("leaky_relu_f32", "LeakyRelu", _n([3, 4], 3, [INF, -INF, -0.0]), IEEE, attrs={"alpha": 0.3})
unary("elu_f32", "Elu", _n([3, 4], 3, [INF, -INF, -30.0]), TRANS)
unary("selu_f32", "Selu", _n([3, 4], 3, [INF, -INF, -30.0]), TRANS)
unary("softplus_f32", "Softplus",
      _n([4, 5], 3, [100.0, -100.0, 30.0, -30.0, 1e4, -1e4, 20.0, -20.0, 15.0, -15.0, INF, -INF]),
      TRANS, desc="Softplus on float32[4, 5] incl. large +/- values (+/-15, 20, 30, 100, 1e4, inf)")
unary("erf_f32", "Erf", _n([3, 4], 2, [NAN, INF, -INF, 0.0, 5.0, -5.0, 1e-5]), TRANS)
unary("erfc_f32", "Erfc", _n([4, 5], 3, [NAN, INF, -INF, 0.0, 3.0, 5.0, 8.0, 9.5, -5.0, 1e-5]), TRANS,
      desc="Erfc on float32[4, 5] incl. its tail (3, 5, 8, 9.5) and +/-inf")
unary("softsign_f32", "Softsign", _n([3, 4], 3, [NAN, INF, -INF, 0.0, -0.0, 1e30, -1e30]), ROUND1)
unary("floor_f32", "Floor", _n([3, 4], 5, [NAN, INF, -INF, -0.0, -0.5, 0.5, 2.0, -2.0, 1e10]), IEEE)
unary("ceil_f32", "Ceil", _n([3, 4], 5, [NAN, INF, -INF, -0.0, -0.5, 0.5, 2.0, -2.0, 1e10]), IEEE)
unary("round_f32", "Round",
      _n([4, 5], 5, [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -0.49999997,
                     4.5000005, NAN, INF, -INF]),
      IEEE, desc="Round (half to even) on float32[4, 5] incl. +/-0.5, 1.5, 2.5, 3.5 halves")

# ----------------------------- binary float32 ------------------------------


def _pairs(shape, pairs, scale=1.0):
    return lambda r: sprinkle2(r, normal(r, shape, scale), normal(r, shape, scale), pairs)


def _two(sx, sy, scale=1.0, fx=None, fy=None):
    def data(r):
        x = fx(r, sx) if fx else normal(r, sx, scale)
        y = fy(r, sy) if fy else normal(r, sy, scale)
        return x, y
    return data


binary("add_f32", "Add",
       _pairs([3, 4], [(INF, -INF), (NAN, 1.0), (-0.0, -0.0), (INF, 1.0), (3e38, 3e38),
                       (-INF, -INF), (1.0, NAN)]),
       IEEE, shapes=("batch", "full"),
       desc="Add float32[3, 4] + [3, 4] with inf-inf, NaN, -0, overflow; x placeholder [?, 4]")
binary("add_broadcast_f32", "Add", _two([3, 1], [1, 4]), IEEE)
binary("addv2_f32", "AddV2",
       _pairs([2, 3, 4], [(INF, -INF), (NAN, 2.0), (-0.0, 0.0), (-INF, 5.0)]), IEEE,
       shapes=(None, "full"), desc="AddV2 float32[2, 3, 4] with specials; x unknown rank")
binary("addv2_scalar_f32", "AddV2", _two([], [3, 4]), IEEE)
binary("addv2_broadcast_rank3_f32", "AddV2", _two([4], [2, 3, 4]), IEEE)
binary("addv2_broadcast_mixed_f32", "AddV2", _two([2, 1, 4], [3, 1]), IEEE,
       shapes=([None, 1, 4], [None, 1]))
binary("sub_f32", "Sub",
       _pairs([3, 4], [(INF, INF), (NAN, 1.0), (-0.0, 0.0), (INF, -INF), (1.0, 1.0)]), IEEE)
binary("sub_broadcast_f32", "Sub", _two([2, 3, 4], [3, 1]), IEEE)
binary("sub_scalar_f32", "Sub", _two([3, 4], []), IEEE)
binary("mul_f32", "Mul",
       _pairs([3, 4], [(0.0, INF), (-0.0, 5.0), (NAN, 0.0), (1e30, 1e30), (-INF, -2.0)]), IEEE,
       shapes=("full", None))
binary("mul_broadcast_f32", "Mul", _two([3, 1], [1, 4]), IEEE)
binary("realdiv_f32", "RealDiv",
       _pairs([3, 4], [(1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (1.0, -0.0), (INF, INF), (NAN, 1.0),
                       (0.0, 5.0), (INF, 2.0), (3.0, INF)]),
       IEEE, desc="RealDiv float32[3, 4] incl. x/0 (+/-inf), 0/0 (NaN), 1/-0 (-inf), inf/inf")
binary("realdiv_broadcast_f32", "RealDiv", _two([2, 3, 4], [4]), IEEE)


def _divnonan_data(r):
    x, y = sprinkle2(r, normal(r, [3, 4]), normal(r, [3, 4]),
                     [(1.0, 0.0), (0.0, 0.0), (NAN, 0.0), (INF, 0.0), (-1.0, -0.0),
                      (INF, INF), (-3.0, 0.0), (2.0, 4.0)])
    return x, y


binary("divnonan_f32", "DivNoNan", _divnonan_data, IEEE,
       desc="DivNoNan float32[3, 4]: divisor 0/-0 gives 0 even for NaN/inf numerators")
binary("divnonan_broadcast_f32", "DivNoNan",
       lambda r: (normal(r, [3, 4]), f32([0.0, 2.0, -0.0, -0.5])), IEEE,
       desc="DivNoNan float32[3, 4] / [4] with zero (and -0) divisor columns")

MINMAX_PAIRS = [(NAN, 1.0), (1.0, NAN), (NAN, NAN), (INF, -INF), (-INF, 3.0), (2.0, 2.0)]
binary("maximum_f32", "Maximum", _pairs([3, 4], MINMAX_PAIRS), IEEE,
       desc="Maximum float32[3, 4] with NaN in either/both inputs (TF propagates NaN)")
binary("minimum_f32", "Minimum", _pairs([3, 4], MINMAX_PAIRS), IEEE,
       desc="Minimum float32[3, 4] with NaN in either/both inputs (TF propagates NaN)")
binary("maximum_broadcast_f32", "Maximum",
       lambda r: (sprinkle(r, normal(r, [3, 1]), [NAN]), sprinkle(r, normal(r, [1, 4]), [NAN])),
       IEEE, desc="Maximum float32[3, 1] vs [1, 4], one NaN in each (NaN rows/cols)")
binary("minimum_scalar_f32", "Minimum", _two([], [2, 3, 4]), IEEE)
binary("squared_difference_f32", "SquaredDifference",
       _pairs([3, 4], [(INF, 1.0), (NAN, 1.0), (1e20, -1e20), (-INF, INF)], 3.0), ROUND1)
binary("squared_difference_broadcast_f32", "SquaredDifference", _two([2, 3, 4], [4]), ROUND1)
binary("pow_f32", "Pow",
       lambda r: sprinkle2(
           r, uniform(r, [4, 5], 0.1, 3.0), uniform(r, [4, 5], -3.0, 3.0),
           [(0.0, 0.0), (-2.0, 3.0), (-2.0, 2.0), (-2.0, 0.5), (0.0, -1.0), (INF, 0.0),
            (NAN, 0.0), (1.0, NAN), (2.0, -INF), (0.5, INF), (-8.0, 1.0 / 3), (2.0, 10.0),
            (10.0, 40.0), (0.0, 2.0)]),
       TRANS, desc="Pow float32[4, 5]: positive bases, negative base with integer and "
                   "fractional exponents, 0^0, 0^-1, inf^0, NaN^0, 1^NaN, overflow")
binary("pow_scalar_exponent_f32", "Pow", lambda r: (normal(r, [3, 4], 2.0), f32(3.0)), TRANS,
       desc="Pow float32[3, 4] (negative bases) ** scalar 3")

# AddN (n inputs) -----------------------------------------------------------


def _addn_build(b):
    xs = [b.ph("x%d" % i, normal(b.rng, [3, 4])) for i in range(3)]
    tf.raw_ops.AddN(inputs=xs, name="z")
    b.fetch("z")
    b.ref = lambda: {"z": sum(b.feeds["x%d" % i].astype(np.float64) for i in range(3))}


add_case("addn_f32", "AddN of three float32[3, 4]", Tol(
    1e-6, 1e-6, "Sum of three float32 values: the result depends on the addition "
    "order (one extra rounding, ~1e-7 relative, absolute near cancellation); "
    "rtol 1e-6, atol 1e-6."), _addn_build)


def _addn_i32_build(b):
    xs = [b.ph("x%d" % i, ints(b.rng, [2, 3], -100, 100)) for i in range(4)]
    tf.raw_ops.AddN(inputs=xs, name="z")
    b.fetch("z")


add_case("addn_i32", "AddN of four int32[2, 3]", EXACT, _addn_i32_build)

# ----------------------------- other dtypes --------------------------------
unary("exp_f64", "Exp",
      lambda r: sprinkle(r, uniform(r, [3, 4], -20, 20, np.float64), [NAN, INF, -INF, 800.0]),
      F64_TRANS,
      desc="Exp on float64[3, 4]")
unary("tanh_f64", "Tanh", lambda r: sprinkle(r, normal(r, [3, 4], 3, np.float64), [NAN, INF, -INF]),
      F64_TRANS, desc="Tanh on float64[3, 4]")
unary("sin_f64", "Sin", lambda r: sprinkle(r, normal(r, [3, 4], 100, np.float64), [NAN, INF, -0.0, 1e22]),
      F64_TRANS, desc="Sin on float64[3, 4]")
unary("cos_f64", "Cos", lambda r: sprinkle(r, normal(r, [3, 4], 100, np.float64), [NAN, -INF, 0.0, 1e22]),
      F64_TRANS, desc="Cos on float64[3, 4]")
unary("sqrt_f64", "Sqrt", lambda r: uniform(r, [3, 4], 0, 100, np.float64), Tol(
    1e-15, 0.0, "float64 sqrt is correctly rounded; rtol 1e-15 (a few ulp) allows a "
    "non-IEEE implementation."), desc="Sqrt on float64[3, 4]")
binary("add_f64", "Add",
       lambda r: sprinkle2(r, normal(r, [3, 4], 1, np.float64), normal(r, [3, 4], 1, np.float64),
                           [(INF, -INF), (NAN, 1.0), (1e308, 1e308)]),
       IEEE, desc="Add float64[3, 4] incl. inf-inf, NaN, overflow")
binary("mul_f64", "Mul",
       lambda r: (normal(r, [3, 1], 1, np.float64), normal(r, [1, 4], 1, np.float64)), IEEE)
binary("realdiv_f64", "RealDiv",
       lambda r: (normal(r, [2, 3, 4], 1, np.float64), normal(r, [4], 1, np.float64)), IEEE)

binary("add_f16", "Add", lambda r: (normal(r, [3, 4], 1, np.float16), normal(r, [3, 4], 1, np.float16)), F16)
binary("mul_f16", "Mul", lambda r: (normal(r, [3, 1], 2, np.float16), normal(r, [1, 4], 2, np.float16)), F16)
binary("maximum_f16", "Maximum",
       lambda r: (normal(r, [3, 4], 1, np.float16), normal(r, [4], 1, np.float16)), IEEE)
unary("relu_f16", "Relu", lambda r: normal(r, [3, 4], 1, np.float16), IEEE)
unary("exp_f16", "Exp", lambda r: normal(r, [3, 4], 2, np.float16), F16)
unary("tanh_f16", "Tanh", lambda r: normal(r, [3, 4], 2, np.float16), F16)
unary("sigmoid_f16", "Sigmoid", lambda r: normal(r, [3, 4], 3, np.float16), F16)
unary("sin_f16", "Sin", lambda r: normal(r, [3, 4], 100, np.float16), F16)
unary("cos_f16", "Cos", lambda r: normal(r, [3, 4], 100, np.float16), F16)

# The other trigonometric and hyperbolic functions, expm1 and erfinv, each over its domain
# and past it (NaN there), with its poles, overflows and signed zeros.
unary("tan_f32", "Tan", _n([4, 6], 3, TRIG_SPECIAL + [1.5707963, -1.5707964]), TRANS,
      desc="Tan on float32[4, 6] incl. near its poles, large arguments (1e8, 1e30, -3e38), +/-inf, NaN")
_INV = [NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 1.0000001, -1.5, 1e-30, 0.99999994, -0.5]
unary("asin_f32", "Asin", _u([4, 5], -1, 1, _INV), TRANS,
      desc="Asin on float32[4, 5] in [-1, 1] incl. +/-1, just past them, +/-inf, NaN, +/-0")
unary("acos_f32", "Acos", _u([4, 5], -1, 1, _INV), TRANS,
      desc="Acos on float32[4, 5] in [-1, 1] incl. +/-1, just past them, +/-inf, NaN, +/-0")
unary("atan_f32", "Atan", _n([4, 5], 10, [NAN, INF, -INF, -0.0, 0.0, 1e30, -1e-30, 1.0, -1.0]), TRANS)
unary("sinh_f32", "Sinh", _n([4, 5], 5, [NAN, INF, -INF, -0.0, 89.0, 90.0, -89.5, 1e-6, -1e-30]), TRANS,
      desc="Sinh on float32[4, 5] incl. its overflow (89, 90), +/-inf, NaN, tiny arguments")
unary("cosh_f32", "Cosh", _n([4, 5], 5, [NAN, INF, -INF, -0.0, 89.0, 90.0, -89.5, 1e-6]), TRANS,
      desc="Cosh on float32[4, 5] incl. its overflow (89, 90), +/-inf, NaN")
unary("asinh_f32", "Asinh", _n([4, 5], 100, [NAN, INF, -INF, -0.0, 3e38, -3e38, 1e-30, 0.5]), TRANS)
unary("acosh_f32", "Acosh", _u([4, 5], 1, 100, [NAN, INF, -INF, 1.0, 0.99999994, 0.0, 3e38, 1.0000001]), TRANS,
      desc="Acosh on float32[4, 5] in [1, 100] incl. 1, just below it, 0, 3e38, +/-inf, NaN")
unary("atanh_f32", "Atanh", _u([4, 5], -1, 1, _INV), TRANS,
      desc="Atanh on float32[4, 5] in (-1, 1) incl. its poles +/-1, past them, +/-inf, NaN, +/-0")
unary("expm1_f32", "Expm1", _u([4, 5], -5, 5, [NAN, INF, -INF, -0.0, 1e-10, -1e-7, 88.7, 89.0, -100.0]), TRANS,
      desc="Expm1 on float32[4, 5] incl. tiny arguments (1e-10), its overflow (88.7, 89), -100, +/-inf, NaN, -0")
unary("erfinv_f32", "Erfinv", _u([4, 5], -1, 1, _INV + [0.9999, -0.99999994, 1e-4]), TRANS,
      ref=False,  # TensorFlow's float32 Erfinv rounds x / 2 + 1 / 2: 0.99999994 and 1.0000001 give inf
      desc="Erfinv on float32[4, 5] in (-1, 1) incl. its poles +/-1, their neighbours (inf: TensorFlow rounds "
      "x / 2 + 1 / 2 in float32), past them, +/-inf, NaN, +/-0")
unary("erfinv_f64", "Erfinv", lambda r: sprinkle(r, uniform(r, [3, 4], -1, 1).astype(np.float64), [NAN, 1.0, -0.0]),
      F64_TRANS)
unary("atanh_f16", "Atanh", lambda r: uniform(r, [3, 4], -1, 1).astype(np.float16), F16)
unary("expm1_bf16", "Expm1", _u([3, 4], -3, 3), BF16_TOL, dtype="bf16", desc="Expm1 on bfloat16 (fed as float32, Cast in the graph) [3, 4]")
unary("tan_f64", "Tan", lambda r: sprinkle(r, normal(r, [3, 4], 3, np.float64), [NAN, 1e22]), F64_TRANS)
binary("atan2_f32", "Atan2",
       _pairs([4, 5], [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.0, 0.0), (-1.0, -0.0), (INF, INF),
                       (-INF, INF), (INF, -INF), (NAN, 1.0), (1.0, NAN), (1e-30, -1e30), (3.0, -INF)], 3.0),
       TRANS, argnames=("y", "x"),
       desc="Atan2(y, x) float32[4, 5] incl. every signed zero pair, infinities, NaN, tiny over huge")
binary("atan2_broadcast_f16", "Atan2", lambda r: (normal(r, [3, 4], 2, np.float16), normal(r, [4], 2, np.float16)),
       F16, argnames=("y", "x"), desc="Atan2(y, x) float16[3, 4] over [4]")
_XPAIRS = [(0.0, 0.0), (0.0, -1.0), (0.0, NAN), (0.0, INF), (-0.0, 2.0), (1.0, 0.0), (NAN, 0.0), (2.0, INF), (-3.0, 1e-30)]
binary("xlogy_f32", "Xlogy", _pairs([3, 5], _XPAIRS, 2.0), TRANS,
       desc="Xlogy float32[3, 5] incl. x = 0 (0 for any y: 0, -1, NaN, inf), y = 0, NaN x, huge and tiny y")
binary("xlog1py_f32", "Xlog1py", _pairs([3, 5], _XPAIRS + [(1.0, -1.0), (1.0, 1e-10)], 2.0), TRANS,
       desc="Xlog1py float32[3, 5] incl. x = 0 (0 for any y), y = -1, tiny y, NaN x")
binary("xdivy_f32", "Xdivy", _pairs([3, 5], _XPAIRS, 2.0), ROUND1,
       desc="Xdivy float32[3, 5] incl. x = 0 (0 for any y: 0, NaN, inf), y = 0, NaN x")
binary("xlogy_broadcast_bf16", "Xlogy", _two([3, 1], [1, 4], 2.0, fy=lambda r, s: uniform(r, s, 0.1, 5)), BF16_TOL,
       dtype="bf16", desc="Xlogy bfloat16 (fed as float32, Cast in the graph) [3, 1] and [1, 4]")


def clip_case(name, shape, lo, hi, dtype=np.float32, specials=()):
    """ClipByValue(t, lo, hi) with scalar or full-shape bounds (constants)."""
    def build(b):
        x = b.ph("t", sprinkle(b.rng, normal(b.rng, shape, 3).astype(dtype), specials)
                 if dtype != np.int32 else ints(b.rng, shape, -9, 9, np.int32))
        tf.raw_ops.ClipByValue(t=x, clip_value_min=const(np.asarray(lo, dtype), "lo"),
                               clip_value_max=const(np.asarray(hi, dtype), "hi"), name="y")
        b.fetch("y")
    add_case(name, "ClipByValue %s%s to [%s, %s]%s" % (np.dtype(dtype).name, list(shape), lo if np.ndim(lo) == 0 else
             "a tensor", hi if np.ndim(hi) == 0 else "a tensor", " incl. NaN, +/-inf" if specials else ""), IEEE, build)


clip_case("clip_by_value_f32", [3, 5], -1.0, 2.0, specials=[NAN, INF, -INF, -0.0])
clip_case("clip_by_value_i32", [4, 3], -2, 5, np.int32)
clip_case("clip_by_value_tensors_f16", [2, 3], [[-1, 0, 1], [-2, 2, 0]], [[1, 1, 2], [0, 3, 0.5]], np.float16)
clip_case("clip_by_value_nan_bounds_f32", [2, 4], NAN, [[1, NAN, 2, 3], [NAN, 0, 0, 1]])

_bf = "bfloat16 (fed as float32, Cast in the graph)"
unary("relu_bf16", "Relu", _n([3, 4], 2, [INF, -INF]), IEEE, dtype="bf16",
      desc="Relu on %s [3, 4]" % _bf)
unary("tanh_bf16", "Tanh", _n([3, 4], 2), BF16_TOL, dtype="bf16", desc="Tanh on %s [3, 4]" % _bf)
unary("exp_bf16", "Exp", _n([3, 4], 2), BF16_TOL, dtype="bf16", desc="Exp on %s [3, 4]" % _bf)
unary("sin_bf16", "Sin", _n([3, 4], 50), BF16_TOL, dtype="bf16", desc="Sin on %s [3, 4]" % _bf)
unary("cos_bf16", "Cos", _n([3, 4], 50), BF16_TOL, dtype="bf16", desc="Cos on %s [3, 4]" % _bf)
binary("add_bf16", "Add", _two([3, 4], [3, 4]), BF16_TOL, dtype="bf16",
       desc="Add %s [3, 4] + [3, 4]" % _bf)
binary("mul_bf16", "Mul", _two([3, 1], [1, 4], 3.0), BF16_TOL, dtype="bf16",
       desc="Mul %s [3, 1] * [1, 4]" % _bf)

_I32 = lambda sx, sy, lo=-1000, hi=1000: (
    lambda r: (ints(r, sx, lo, hi), ints(r, sy, lo, hi)))
_I64 = lambda sx, sy, lo, hi: (
    lambda r: (ints(r, sx, lo, hi, np.int64), ints(r, sy, lo, hi, np.int64)))
binary("add_i32", "Add", _I32([3, 4], [3, 4]), EXACT, ref=False)


def _nonzero_divisors(sx, sy, dtype=np.int32):
    def data(r):
        y = ints(r, sy, 1, 8, dtype) * np.where(r.rand(*sy) < 0.5, -1, 1).astype(dtype)
        return ints(r, sx, -30, 30, dtype), y
    return data


binary("floordiv_i32", "FloorDiv", _nonzero_divisors([3, 4], [3, 4]), EXACT, ref=False,
       desc="FloorDiv (Python's //) of int32 of both signs: rounds toward minus infinity")
binary("floormod_i32", "FloorMod", _nonzero_divisors([3, 4], [3, 4]), EXACT, ref=False,
       desc="FloorMod (Python's %) of int32 of both signs: the divisor's sign")
binary("floormod_broadcast_i64", "FloorMod", _nonzero_divisors([2, 3, 4], [4], np.int64), EXACT, ref=False)
# Activation gradients (training graphs): TensorFlow multiplies the gradient by 0 or 1, so a
# NaN or infinite gradient where the activation is flat stays NaN.
binary("relu_grad_f32", "ReluGrad",
       _pairs([3, 5], [(1.0, 0.0), (1.0, -0.0), (INF, -1.0), (NAN, 2.0), (2.0, NAN), (-INF, 3.0)]),
       IEEE, argnames=("gradients", "features"))
binary("relu6_grad_f32", "Relu6Grad",
       _pairs([3, 5], [(1.0, 6.0), (1.0, 5.999), (1.0, 0.0), (INF, 7.0), (NAN, 2.0), (2.0, NAN)], scale=4.0),
       IEEE, argnames=("gradients", "features"))
binary("tanh_grad_f32", "TanhGrad",
       _pairs([3, 5], [(1.0, INF), (-1.0, 2.0), (0.0, NAN), (NAN, 1.0)]), ROUND1, argnames=("y", "dy"))
binary("sigmoid_grad_f32", "SigmoidGrad",
       _pairs([3, 5], [(1.0, INF), (0.0, 2.0), (0.5, NAN), (NAN, 1.0)]), ROUND1, argnames=("y", "dy"))
binary("floordiv_f32", "FloorDiv",
       _pairs([3, 4], [(7.5, -2.0), (-7.5, 2.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (INF, 3.0), (NAN, 1.0)], 5.0),
       ROUND1, desc="FloorDiv of float32: floor(x / y), with x / 0, inf and NaN")
binary("floormod_f32", "FloorMod",
       _pairs([3, 4], [(7.5, -2.0), (-7.5, 2.0), (1.0, 0.0), (INF, 3.0), (3.0, INF), (-3.0, INF), (NAN, 1.0)], 5.0),
       ROUND1, desc="FloorMod of float32: fmod(x, y) moved to the divisor's sign, with y = 0 and infinities")
binary("addv2_i32", "AddV2", _I32([3, 1], [1, 4]), EXACT, ref=False)
binary("sub_i32", "Sub", _I32([2, 3, 4], [4]), EXACT, ref=False)
binary("mul_i32", "Mul", _I32([3, 4], [3, 4]), EXACT, ref=False)
binary("maximum_i32", "Maximum", _I32([3, 4], [3, 4], -5, 5), EXACT, ref=False)
binary("minimum_i32", "Minimum", _I32([3, 1], [1, 4]), EXACT, ref=False)
binary("add_i64", "Add", _I64([3, 4], [3, 4], -2**40, 2**40), EXACT, ref=False,
       desc="Add int64[3, 4] with values beyond int32 range")
binary("sub_i64", "Sub", _I64([3, 4], [4], -2**40, 2**40), EXACT, ref=False)
binary("mul_i64", "Mul", _I64([3, 4], [3, 4], -2**31, 2**31), EXACT, ref=False,
       desc="Mul int64[3, 4] with products beyond int32 range")
binary("maximum_i64", "Maximum", _I64([3, 4], [], -2**40, 2**40), EXACT, ref=False)
binary("minimum_i64", "Minimum", _I64([3, 4], [3, 4], -2**40, 2**40), EXACT, ref=False)
unary("neg_i32", "Neg", lambda r: ints(r, [3, 4], -1000, 1000), EXACT, ref=False)
unary("abs_i32", "Abs", lambda r: ints(r, [3, 4], -1000, 1000), EXACT, ref=False)
unary("sign_i32", "Sign", lambda r: ints(r, [3, 4], -3, 4), EXACT, ref=False)
unary("square_i32", "Square", lambda r: ints(r, [3, 4], -1000, 1000), EXACT, ref=False)
unary("neg_i64", "Neg", lambda r: ints(r, [3, 4], -2**40, 2**40, np.int64), EXACT, ref=False)
unary("abs_i64", "Abs", lambda r: ints(r, [3, 4], -2**40, 2**40, np.int64), EXACT, ref=False)

# ----------------------------- comparisons ---------------------------------
CMP_PAIRS = [(NAN, NAN), (NAN, 1.0), (1.0, NAN), (-0.0, 0.0), (INF, INF), (-INF, INF),
             (2.0, 2.0), (3.0, 3.0)]
for _op, _nm in [("Equal", "equal"), ("NotEqual", "not_equal"), ("Less", "less"),
                 ("LessEqual", "less_equal"), ("Greater", "greater"),
                 ("GreaterEqual", "greater_equal")]:
    binary("%s_f32" % _nm, _op, _pairs([3, 4], CMP_PAIRS), EXACT, ref=False,
           desc="%s float32[3, 4] incl. NaN (never equal), -0 == 0, inf, ties" % _op)
binary("less_broadcast_f32", "Less", _two([3, 1], [1, 4]), EXACT, ref=False)
binary("greater_equal_scalar_f32", "GreaterEqual", _two([2, 3, 4], []), EXACT, ref=False)
binary("equal_broadcast_f32", "Equal",
       lambda r: (np.round(normal(r, [2, 3, 4])), np.round(normal(r, [4]))), EXACT, ref=False)
binary("equal_i32", "Equal", _I32([3, 4], [3, 4], -2, 3), EXACT, ref=False)
binary("less_i32", "Less", _I32([3, 1], [1, 4], -3, 4), EXACT, ref=False)
binary("greater_i64", "Greater", _I64([3, 4], [3, 4], -2, 3), EXACT, ref=False)
binary("less_equal_i64", "LessEqual", _I64([2, 3, 4], [4], -2**40, 2**40), EXACT, ref=False)
_BOOL = lambda sx, sy: (lambda r: (r.rand(*sx) < 0.5, r.rand(*sy) < 0.5))
binary("equal_bool", "Equal", _BOOL([3, 4], [3, 4]), EXACT, ref=False)
binary("not_equal_bool", "NotEqual", _BOOL([3, 1], [1, 4]), EXACT, ref=False)
binary("logical_and_bool", "LogicalAnd", _BOOL([3, 4], [3, 4]), EXACT, ref=False)
binary("logical_and_broadcast_bool", "LogicalAnd", _BOOL([3, 1], [1, 4]), EXACT, ref=False)
binary("logical_or_bool", "LogicalOr", _BOOL([2, 3, 4], [4]), EXACT, ref=False)
unary("logical_not_bool", "LogicalNot", lambda r: r.rand(3, 4) < 0.5, EXACT, ref=False)

# ----------------------------- Select / SelectV2 ---------------------------


def select_case(name, op, sc, sx, sy, desc, dtype=np.float32, shapes=("full",) * 3):
    def build(b):
        c = b.ph("cond", b.rng.rand(*sc) < 0.5 if sc else np.bool_(True), shapes[0])
        if dtype == np.float32:
            xv = sprinkle(b.rng, normal(b.rng, sx), [NAN]) if sx else f32(1.5)
            yv = normal(b.rng, sy)
        else:
            xv, yv = ints(b.rng, sx, -100, 100, dtype), ints(b.rng, sy, -100, 100, dtype)
        x, y = b.ph("x", xv, shapes[1]), b.ph("y", yv, shapes[2])
        if op == "Select":
            tf.raw_ops.Select(condition=c, x=x, y=y, name="z")
        else:
            tf.raw_ops.SelectV2(condition=c, t=x, e=y, name="z")
        b.fetch("z")

    add_case(name, desc, IEEE if dtype == np.float32 else EXACT, build)


select_case("select_f32", "Select", [3, 4], [3, 4], [3, 4],
            "Select (v1) with bool[3, 4] condition, float32[3, 4] branches (a NaN in x)")
select_case("select_rank1_cond_f32", "Select", [3], [3, 4], [3, 4],
            "Select (v1) with rank-1 bool[3] condition selecting whole rows of float32[3, 4]")
select_case("select_rank1_cond_rank3_i32", "Select", [2], [2, 3, 4], [2, 3, 4],
            "Select (v1) with rank-1 bool[2] condition selecting rows of int32[2, 3, 4]",
            dtype=np.int32)
select_case("select_scalar_cond_f32", "Select", [], [3, 4], [3, 4],
            "Select (v1) with scalar bool condition (true)")
select_case("selectv2_broadcast_f32", "SelectV2", [3, 1], [1, 4], [],
            "SelectV2 broadcasting bool[3, 1], float32[1, 4], float32 scalar -> [3, 4]")
select_case("selectv2_rank3_f32", "SelectV2", [4], [2, 3, 4], [3, 1],
            "SelectV2 broadcasting bool[4], float32[2, 3, 4], float32[3, 1]",
            shapes=("full", "batch", "full"))
select_case("selectv2_scalar_x_f32", "SelectV2", [2, 3], [], [2, 3],
            "SelectV2 with scalar then-branch")
select_case("selectv2_i64", "SelectV2", [3, 4], [3, 4], [4],
            "SelectV2 int64 with bool[3, 4], int64[3, 4], int64[4]", dtype=np.int64)

# ----------------------------- Cast ----------------------------------------


def cast_case(name, data, dst, desc, tol=EXACT, shape="full"):
    def build(b):
        x = b.ph("x", data(b.rng), shape)
        tf.raw_ops.Cast(x=x, DstT=dst, name="y")
        b.fetch("y")

    add_case(name, desc, tol, build)


cast_case("cast_f32_i32",
          lambda r: sprinkle(r, normal(r, [3, 4], 10), [-2.7, 2.7, -0.5, 0.5, -0.0, 1e9, -1e9]),
          tf.int32, "Cast float32 -> int32 (truncation toward zero), finite in-range values")
cast_case("cast_i32_f32",
          lambda r: sprinkle(r, ints(r, [3, 4], -1000, 1000),
                             [16777217, -16777219, 2147483647, -2147483648, 0]),
          tf.float32, "Cast int32 -> float32 incl. values that must round (2^24+1, INT_MAX)")
cast_case("cast_f32_bool",
          lambda r: sprinkle(r, normal(r, [3, 4]), [0.0, -0.0, NAN, INF, -INF, 1e-30]),
          tf.bool, "Cast float32 -> bool (x != 0; NaN -> true, -0 -> false)")
cast_case("cast_bool_f32", lambda r: r.rand(3, 4) < 0.5, tf.float32, "Cast bool -> float32")
cast_case("cast_f32_f16",
          lambda r: sprinkle(r, normal(r, [4, 5], 100),
                             [NAN, INF, -INF, 65504.0, 65519.0, 65520.0, 1e5, -1e5,
                              1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 2.0 ** -14, -0.0]),
          tf.float16, "Cast float32 -> float16 (round to nearest even: ties 1+2^-11, "
          "1+3*2^-11; 65520 and 1e5 overflow to inf; NaN/inf)")
cast_case("cast_f32_bf16",
          lambda r: sprinkle(r, normal(r, [4, 5], 100),
                             [NAN, INF, -INF, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
                              1.0 + 2.0 ** -8 + 2.0 ** -20, 3.3e38, 3.4028235e38, -0.0,
                              1e-30]),
          tf.bfloat16, "Cast float32 -> bfloat16 (round to nearest even: ties 1+2^-8, "
          "1+3*2^-8; FLT_MAX rounds to inf; NaN/inf)")
cast_case("cast_f16_f32", lambda r: sprinkle(r, normal(r, [3, 4], 100, np.float16),
                                             [NAN, INF, -INF, 65504.0]),
          tf.float32, "Cast float16 -> float32 (exact)")
cast_case("cast_i32_bool", lambda r: ints(r, [3, 4], -2, 3), tf.bool, "Cast int32 -> bool")
cast_case("cast_bool_i32", lambda r: r.rand(3, 4) < 0.5, tf.int32, "Cast bool -> int32")
cast_case("cast_i32_i64", lambda r: ints(r, [3, 4], -2**31, 2**31 - 1), tf.int64,
          "Cast int32 -> int64 (sign extension)")
cast_case("cast_i64_f32",
          lambda r: sprinkle(r, ints(r, [3, 4], -2**40, 2**40, np.int64), [2**53 + 1, -(2**62)]),
          tf.float32, "Cast int64 -> float32 (rounding of large values)")
cast_case("cast_f32_f64", lambda r: sprinkle(r, normal(r, [3, 4]), [NAN, INF, -INF]),
          tf.float64, "Cast float32 -> float64 (exact)", shape=None)

# ----------------------------- Placeholder / Const / Identity --------------


def _ph_partial(b):
    x = b.ph("x", normal(b.rng, [3, 4]), [None, 4])
    tf.identity(x, name="y")
    b.fetch("x", "y")


add_case("placeholder_partial_shape_f32",
         "Placeholder float32[?, 4] fed [3, 4]; fetches the placeholder itself and "
         "an Identity of it", EXACT, _ph_partial)


def _ph_unknown_rank(b):
    x = b.ph("x", ints(b.rng, [2, 3, 2], -10, 10), None)
    tf.identity(x, name="y")
    b.fetch("y")


add_case("placeholder_unknown_rank_i32", "Placeholder int32 of unknown rank fed [2, 3, 2]",
         EXACT, _ph_unknown_rank)


def _ph_scalar(b):
    x = b.ph("x", np.float32(2.5))
    tf.identity(x, name="y")
    b.fetch("y")


add_case("placeholder_scalar_f32", "Scalar float32 Placeholder (shape [])", EXACT, _ph_scalar)


def _pwd(fed):
    def build(b):
        d = const(f32([[1, 2, 3, 4], [5, 6, 7, 8]]), "default")
        if fed:
            b.feeds["x"] = normal(b.rng, [3, 4])
        tf.raw_ops.PlaceholderWithDefault(input=d, shape=[None, 4], name="x")
        tf.identity(tf.compat.v1.get_default_graph().get_tensor_by_name("x:0"), name="y")
        b.fetch("y")
    return build


add_case("placeholder_with_default_fed_f32",
         "PlaceholderWithDefault float32[?, 4] (default [2, 4] Const) fed a [3, 4] value",
         EXACT, _pwd(True))
add_case("placeholder_with_default_unfed_f32",
         "PlaceholderWithDefault float32[?, 4] not fed: yields its default [2, 4] Const",
         EXACT, _pwd(False))


def _dims(shape):
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in shape])


def _const_content(b):
    const(np.arange(12, dtype=np.float32).reshape(3, 4) * 0.25 - 1, "c")
    b.fetch("c")


def _const_splat(b):
    # tf.constant(2.5, shape=[3, 4]) stores one float_val for all 12 elements.
    tf.constant(2.5, shape=[3, 4], dtype=tf.float32, name="c")
    b.fetch("c")


def _const_repeat_last(b):
    # A TensorProto with fewer values than elements repeats the last value.
    p = tensor_pb2.TensorProto(dtype=types_pb2.DT_INT32, tensor_shape=_dims([2, 3]),
                               int_val=[7, -1, 4])
    tf.raw_ops.Const(value=p, dtype=tf.int32, name="c")
    b.fetch("c")


def _const_dtypes(b):
    const(np.array([[1, -2**40], [3, 2**62]], np.int64), "c_i64")
    const(np.array([True, False, True]), "c_bool")
    const(np.array([0.1, -1e300, 2.5], np.float64), "c_f64")
    const(np.array([0.1, -65504, 2.5], np.float16), "c_f16")
    const(np.array([0.1, -3e38, 2.5], np.float32).astype(BF16), "c_bf16")
    const(np.float32(-3.25), "c_scalar")
    const(np.zeros([0, 3], np.float32), "c_empty")
    # Value-list encodings (no tensor_content).
    for name, dt, field, vals, shape in [
        ("v_f32", types_pb2.DT_FLOAT, "float_val", [1.5, -2.0], [2]),
        ("v_i64", types_pb2.DT_INT64, "int64_val", [2**40, -3], [2]),
        ("v_bool", types_pb2.DT_BOOL, "bool_val", [True], [3]),
        ("v_f64", types_pb2.DT_DOUBLE, "double_val", [0.5, 0.25, -1.0], [3]),
        # float16 values are stored as their bit patterns in half_val.
        ("v_f16", types_pb2.DT_HALF, "half_val",
         [int(np.float16(v).view(np.uint16)) for v in (1.5, -0.25)], [2]),
    ]:
        p = tensor_pb2.TensorProto(dtype=dt, tensor_shape=_dims(shape), **{field: vals})
        tf.raw_ops.Const(value=p, dtype=tf.as_dtype(dt), name=name)
    b.fetch("c_i64", "c_bool", "c_f64", "c_f16", "c_bf16", "c_scalar", "c_empty",
            "v_f32", "v_i64", "v_bool", "v_f64", "v_f16")


add_case("const_f32", "Const float32[3, 4] (tensor_content encoding)", EXACT, _const_content)
add_case("const_splat_f32", "Const float32[3, 4] from a single float_val (splat)", EXACT,
         _const_splat)
add_case("const_repeat_last_i32",
         "Const int32[2, 3] with int_val [7, -1, 4]: missing values repeat the last one",
         EXACT, _const_repeat_last)
add_case("const_dtypes",
         "Const of int64, bool, float64, float16, bfloat16, scalar and empty [0, 3] "
         "tensors (tensor_content) and float_val/int64_val/bool_val (splat)/double_val/"
         "half_val encodings", EXACT, _const_dtypes)


def _identity(b):
    x = b.ph("x", normal(b.rng, [3, 4]), "batch")
    tf.raw_ops.Identity(input=x, name="y")
    b.fetch("y")


def _identity_n(b):
    x = b.ph("x", normal(b.rng, [3, 4]))
    i = b.ph("i", ints(b.rng, [5], -9, 9))
    tf.raw_ops.IdentityN(input=[x, i], name="y")
    b.fetch("y", "y:1")


def _noop(b):
    x = b.ph("x", normal(b.rng, [3, 4]))
    noop = tf.raw_ops.NoOp(name="noop")
    with tf.control_dependencies([noop]):
        t = tf.raw_ops.Identity(input=x, name="y")
    with tf.control_dependencies([noop, t.op]):
        tf.raw_ops.Neg(x=x, name="z")
    b.fetch("y", "z")


def _stop_gradient(b):
    x = b.ph("x", normal(b.rng, [2, 3, 4]))
    tf.raw_ops.StopGradient(input=x, name="y")
    b.fetch("y")


def _check_numerics(b):
    x = b.ph("x", normal(b.rng, [3, 4]))
    tf.raw_ops.CheckNumerics(tensor=x, message="x is bad", name="y")
    b.fetch("y")


add_case("identity_f32", "Identity float32[?, 4]", EXACT, _identity)
add_case("identity_n_mixed", "IdentityN of float32[3, 4] and int32[5]; fetches y and y:1",
         EXACT, _identity_n)
add_case("noop_control_dep_f32",
         "NoOp used as a control dependency of Identity (y) and Neg (z, also "
         "control-dependent on y)", EXACT, _noop)
add_case("stop_gradient_f32", "StopGradient float32[2, 3, 4]", EXACT, _stop_gradient)
add_case("check_numerics_f32",
         "CheckNumerics on finite float32[3, 4] (passes the input through)", EXACT,
         _check_numerics)

# ----------------------------- BiasAdd -------------------------------------


def biasadd_case(name, sx, sb, fmt, xshape="full"):
    def build(b):
        x = b.ph("x", normal(b.rng, sx), xshape)
        bias = b.ph("bias", normal(b.rng, sb))
        tf.raw_ops.BiasAdd(value=x, bias=bias, data_format=fmt, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": b.feeds["x"].astype(np.float64) + (
            b.feeds["bias"].astype(np.float64).reshape(
                [-1] + [1] * (len(sx) - 2)) if fmt == "NCHW" else b.feeds["bias"])}

    add_case(name, "BiasAdd %s float32%s + bias%s" % (fmt, sx, sb), IEEE, build)


biasadd_case("biasadd_nhwc_f32", [2, 3, 4, 5], [5], "NHWC", xshape="batch")
biasadd_case("biasadd_rank2_f32", [3, 4], [4], "NHWC")
biasadd_case("biasadd_nchw_f32", [2, 3, 4, 5], [3], "NCHW")
biasadd_case("biasadd_nchw_rank3_f32", [2, 3, 4], [3], "NCHW")

# ----------------------------- MatMul / BatchMatMulV2 ----------------------


def matmul_case(name, m, k, n, ta, tb, tol=ACCUM, ashape="full"):
    def build(b):
        av = normal(b.rng, [k, m] if ta else [m, k])
        bv = normal(b.rng, [n, k] if tb else [k, n])
        a, bb = b.ph("a", av, ashape), b.ph("b", bv)
        tf.raw_ops.MatMul(a=a, b=bb, transpose_a=ta, transpose_b=tb, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": (av.T if ta else av).astype(np.float64)
                         @ (bv.T if tb else bv).astype(np.float64)}

    add_case(name, "MatMul transpose_a=%s transpose_b=%s: [%d, %d] x [%d, %d] -> [%d, %d]"
             % (ta, tb, m, k, k, n, m, n), tol, build)


matmul_case("matmul_f32", 3, 4, 5, False, False, ashape="batch")
matmul_case("matmul_transpose_a_f32", 3, 4, 5, True, False)
matmul_case("matmul_transpose_b_f32", 3, 4, 5, False, True)
matmul_case("matmul_transpose_ab_f32", 3, 4, 5, True, True)
matmul_case("matmul_k64_f32", 5, 64, 6, False, False, tol=ACCUM_K64)



def int_matmul_case(name, dtype, m, k, n, ta, tb, lo, hi, batch=None):
    def build(b):
        shape_a = ([batch] if batch else []) + ([k, m] if ta else [m, k])
        shape_b = ([batch] if batch else []) + ([n, k] if tb else [k, n])
        a, bb = b.ph("a", ints(b.rng, shape_a, lo, hi, dtype)), b.ph("b", ints(b.rng, shape_b, lo, hi, dtype))
        if batch:
            tf.raw_ops.BatchMatMulV2(x=a, y=bb, adj_x=ta, adj_y=tb, name="y")
        else:
            tf.raw_ops.MatMul(a=a, b=bb, transpose_a=ta, transpose_b=tb, name="y")
        b.fetch("y")

    op = "BatchMatMulV2" if batch else "MatMul"
    add_case(name, "%s of %s in [%d, %d) (transposed: %s, %s), %d x %d x %d%s: exact, products and sums "
             "wrapping around" % (op, np.dtype(dtype).name, lo, hi, ta, tb, m, k, n,
                                  ", batch %d" % batch if batch else ""), EXACT, build)


# Values whose products and sums overflow: they wrap, as TensorFlow's kernels compute them.
int_matmul_case("matmul_transpose_ab_i32", np.int32, 3, 7, 4, True, True, -100000, 100000)
int_matmul_case("matmul_i64", np.int64, 4, 5, 3, False, False, -(1 << 40), 1 << 40)
int_matmul_case("batch_matmul_v2_adj_x_i32", np.int32, 3, 6, 2, True, False, -50, 50, batch=2)

HALF_GEMM = Tol(1e-2, 1e-2,
    "float16/bfloat16 dot products of length 16: TensorFlow's CPU kernel and a "
    "GPU's cuBLASLt (float32 sums, rounded once) differ by a few units in the "
    "last place of the 16-bit result; rtol and atol 1e-2.")


def half_matmul_case(name, dtype, m, k, n, batch=None):
    def build(b):
        shape_a = ([batch] if batch else []) + [m, k]
        shape_b = ([batch] if batch else []) + [k, n]
        if dtype == "bf16":
            av = normal(b.rng, shape_a).astype(BF16).astype(np.float32)
            bv = normal(b.rng, shape_b).astype(BF16).astype(np.float32)
            a, bb = b.ph_bf16("a", av), b.ph_bf16("b", bv)
        else:
            av, bv = normal(b.rng, shape_a, 1, np.float16), normal(b.rng, shape_b, 1, np.float16)
            a, bb = b.ph("a", av), b.ph("b", bv)
        if batch:
            y = tf.raw_ops.BatchMatMulV2(x=a, y=bb, name="y16")
        else:
            y = tf.raw_ops.MatMul(a=a, b=bb, name="y16")
        tf.raw_ops.Cast(x=y, DstT=tf.float32, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": np.matmul(av.astype(np.float64), bv.astype(np.float64))}

    op = "BatchMatMulV2" if batch else "MatMul"
    dims = ("[%d, %d, %d] x [%d, %d, %d]" % (batch, m, k, batch, k, n)) if batch else (
        "[%d, %d] x [%d, %d]" % (m, k, k, n))
    what = "bfloat16 (fed as float32, Cast in the graph)" if dtype == "bf16" else "float16"
    add_case(name, "%s of %s %s, Cast to float32" % (op, what, dims), HALF_GEMM, build)


half_matmul_case("matmul_f16", "f16", 5, 16, 6)
half_matmul_case("matmul_bf16", "bf16", 5, 16, 6)
half_matmul_case("batch_matmul_v2_f16", "f16", 3, 16, 4, batch=2)


def bmm_case(name, sx, sy, adj_x, adj_y, desc, xshape="full"):
    def build(b):
        xv, yv = normal(b.rng, sx), normal(b.rng, sy)
        x, y = b.ph("x", xv, xshape), b.ph("y", yv)
        tf.raw_ops.BatchMatMulV2(x=x, y=y, adj_x=adj_x, adj_y=adj_y, name="z")
        b.fetch("z")

        def ref():
            u, v = xv.astype(np.float64), yv.astype(np.float64)
            if adj_x:
                u = np.swapaxes(u, -1, -2)
            if adj_y:
                v = np.swapaxes(v, -1, -2)
            return {"z": np.matmul(u, v)}
        b.ref = ref

    add_case(name, desc, ACCUM, build)


bmm_case("batch_matmul_v2_f32", [2, 3, 4], [2, 4, 5], False, False,
         "BatchMatMulV2 [2, 3, 4] x [2, 4, 5]", xshape="batch")
bmm_case("batch_matmul_v2_adj_x_f32", [2, 4, 3], [2, 4, 5], True, False,
         "BatchMatMulV2 adj_x: [2, 4, 3]^T x [2, 4, 5]")
bmm_case("batch_matmul_v2_adj_y_f32", [2, 3, 4], [2, 5, 4], False, True,
         "BatchMatMulV2 adj_y: [2, 3, 4] x [2, 5, 4]^T")
bmm_case("batch_matmul_v2_adj_xy_f32", [2, 4, 3], [2, 5, 4], True, True,
         "BatchMatMulV2 adj_x and adj_y: [2, 4, 3]^T x [2, 5, 4]^T")
bmm_case("batch_matmul_v2_broadcast_f32", [2, 1, 3, 4], [3, 4, 5], False, False,
         "BatchMatMulV2 batch broadcasting [2, 1, 3, 4] x [3, 4, 5] -> [2, 3, 3, 5]")
bmm_case("batch_matmul_v2_broadcast_rank2_f32", [3, 4], [2, 4, 5], False, False,
         "BatchMatMulV2 rank-2 lhs broadcast over batch: [3, 4] x [2, 4, 5] -> [2, 3, 5]")
bmm_case("batch_matmul_v2_broadcast_adj_y_f32", [2, 3, 4], [1, 5, 4], False, True,
         "BatchMatMulV2 adj_y with batch broadcasting [2, 3, 4] x [1, 5, 4]^T")

# ----------------------------- Softmax / LogSoftmax ------------------------


def _softmax64(x, log):
    x = x.astype(np.float64)
    m = np.max(x, axis=-1, keepdims=True)
    s = x - m
    lse = np.log(np.sum(np.exp(s), axis=-1, keepdims=True))
    return s - lse if log else np.exp(s - lse)


def softmax_case(name, op, shape, desc, big=False):
    def build(b):
        x = normal(b.rng, shape, 2.0)
        if big:  # stability: a row of huge logits and a row with -inf
            x.reshape(-1, shape[-1])[0] += 1000.0
            x.reshape(-1, shape[-1])[1, 0] = -INF
        xt = b.ph("x", x, "batch")
        getattr(tf.raw_ops, op)(logits=xt, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": _softmax64(x, op == "LogSoftmax")}

    add_case(name, desc, ACCUM, build)


softmax_case("softmax_f32", "Softmax", [3, 5],
             "Softmax float32[?, 5] fed [3, 5]; row 0 has logits ~1000 (needs max "
             "subtraction), row 1 has a -inf logit", big=True)
softmax_case("softmax_rank3_f32", "Softmax", [2, 3, 5], "Softmax over the last axis of [2, 3, 5]")
softmax_case("log_softmax_f32", "LogSoftmax", [3, 5],
             "LogSoftmax float32[?, 5] fed [3, 5]; row 0 has logits ~1000, row 1 a -inf "
             "logit (-> -inf)", big=True)
softmax_case("log_softmax_rank3_f32", "LogSoftmax", [2, 3, 5],
             "LogSoftmax over the last axis of [2, 3, 5]")


def _xent(broadcast):
    def build(b):
        logits = normal(b.rng, [4, 5], 2.0)
        lab = b.rng.rand(1 if broadcast else 4, 5).astype(np.float32)
        lab /= lab.sum(axis=1, keepdims=True)
        f, l = b.ph("logits", logits, "batch"), b.ph("labels", lab, "batch")
        tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=f, labels=l, name="xent")
        b.fetch("xent", "xent:1")

        def ref():
            lsm = _softmax64(logits, True)
            lab64 = np.broadcast_to(lab.astype(np.float64), lsm.shape)
            return {"xent": -np.sum(lab64 * lsm, axis=1), "xent:1": np.exp(lsm) - lab64}
        b.ref = ref
    return build


add_case("softmax_xent_f32",
         "SoftmaxCrossEntropyWithLogits float32[4, 5]; fetches loss (xent) and backprop "
         "(xent:1)", ACCUM, _xent(False))
add_case("softmax_xent_broadcast_labels_f32",
         "SoftmaxCrossEntropyWithLogits with labels [1, 5] broadcast against logits [4, 5]",
         ACCUM, _xent(True))

# ----------------------------- Reductions ----------------------------------
NP_REDUCE = {"Sum": np.sum, "Mean": np.mean, "Max": np.max, "Min": np.min, "Prod": np.prod}


def reduce_case(name, op, axes, keep, dtype=np.float32, shape=(2, 3, 4), tidx=np.int32,
                xshape="full", tol=None):
    def build(b):
        if dtype == np.float32:
            x = normal(b.rng, list(shape), 1.0)
            if op == "Prod":
                x = uniform(b.rng, list(shape), 0.5, 1.5) * np.sign(normal(b.rng, list(shape)))
        else:
            x = ints(b.rng, list(shape), -7, 8, dtype)
        xt = b.ph("x", x, xshape)
        ax = const(np.asarray(axes, tidx), "axes")
        getattr(tf.raw_ops, op)(input=xt, axis=ax, keep_dims=keep, name="y")
        b.fetch("y")
        if dtype == np.float32:
            a = tuple(np.asarray(axes).reshape(-1).tolist())
            b.ref = lambda: {"y": NP_REDUCE[op](x.astype(np.float64), axis=a, keepdims=keep)}

    if tol is None:
        tol = EXACT if dtype != np.float32 else (IEEE if op in ("Max", "Min") else ACCUM)
    desc = "%s over axes %s (%s) of %s%s, keep_dims=%s" % (
        op, axes, np.dtype(tidx).name, np.dtype(dtype).name, list(shape), keep)
    if op == "Mean" and dtype != np.float32:
        desc += " (integer mean truncates toward zero)"
    add_case(name, desc, tol, build)


def logical_reduce_case(name, op, axes, keep, shape=(2, 3, 4), density=0.8):
    """All or Any of bools over axes (a dim of 0 gives All's true and Any's false)."""
    def build(b):
        x = b.rng.uniform(size=shape) < density
        if x.size:
            x.flat[0] = op == "Any"  # the first output is decided by one element
        xt = b.ph("x", x)
        getattr(tf.raw_ops, op)(input=xt, axis=const(np.asarray(axes, np.int32), "axes"), keep_dims=keep, name="y")
        b.fetch("y")
        a = tuple(np.asarray(axes).reshape(-1).tolist())
        b.ref = lambda: {"y": (np.all if op == "All" else np.any)(x, axis=a, keepdims=keep)}

    add_case(name, "%s over axes %s of bool%s, keep_dims=%s" % (op, axes, list(shape), keep), EXACT, build)


logical_reduce_case("all_axis1_bool", "All", [1], False)
logical_reduce_case("all_axes02_keepdims_bool", "All", [0, 2], True, density=0.93)
logical_reduce_case("all_empty_dim_bool", "All", [1], False, shape=(3, 0, 2))
logical_reduce_case("any_axis2_bool", "Any", [2], False, density=0.1)
logical_reduce_case("any_all_axes_bool", "Any", [0, 1, 2], False, density=0.02)
logical_reduce_case("any_empty_dim_bool", "Any", [-2], True, shape=(3, 0, 2))

def scan_case(name, op, axis, exclusive=False, reverse=False, dtype=np.float32, shape=(2, 5, 3), tol=None):
    """Cumsum or Cumprod along axis, with TensorFlow's exclusive and reverse."""
    def build(b):
        if dtype == np.int32:
            x = ints(b.rng, list(shape), -3, 4, np.int32)
        elif op == "Cumprod":
            x = (uniform(b.rng, list(shape), 0.5, 1.5) * np.sign(normal(b.rng, list(shape)))).astype(dtype)
        else:
            x = normal(b.rng, list(shape), 1.0).astype(dtype)
        xt = b.ph("x", x)
        getattr(tf.raw_ops, op)(x=xt, axis=const(np.asarray(axis, np.int32), "axis"), exclusive=exclusive,
                                reverse=reverse, name="y")
        b.fetch("y")

    flags = ", ".join(f for f, on in (("exclusive", exclusive), ("reverse", reverse)) if on)
    add_case(name, "%s along axis %d of %s%s%s" % (op, axis, np.dtype(dtype).name, list(shape),
                                                   " (%s)" % flags if flags else ""),
             tol or (EXACT if dtype == np.int32 else ACCUM), build)


scan_case("cumsum_axis1_f32", "Cumsum", 1)
scan_case("cumsum_exclusive_f32", "Cumsum", -1, exclusive=True)
scan_case("cumsum_reverse_f32", "Cumsum", 0, reverse=True)
scan_case("cumsum_exclusive_reverse_f32", "Cumsum", 1, exclusive=True, reverse=True)
scan_case("cumsum_i32", "Cumsum", 2, dtype=np.int32)
scan_case("cumsum_empty_f32", "Cumsum", 1, shape=(2, 0, 3))
scan_case("cumsum_f16", "Cumsum", 1, dtype=np.float16, tol=F16)
scan_case("cumprod_axis1_f32", "Cumprod", 1)
scan_case("cumprod_exclusive_reverse_f32", "Cumprod", 2, exclusive=True, reverse=True)
scan_case("cumprod_i32", "Cumprod", 1, dtype=np.int32)

reduce_case("sum_axis1_f32", "Sum", [1], False, xshape="batch")
reduce_case("sum_axes02_f32", "Sum", [0, 2], False)
reduce_case("sum_neg_axis_keepdims_f32", "Sum", [-1], True)
reduce_case("sum_all_f32", "Sum", [0, 1, 2], False)
reduce_case("sum_scalar_axis_f32", "Sum", 0, False)
reduce_case("sum_empty_axes_f32", "Sum", np.zeros([0], np.int32), False, tol=IEEE)
reduce_case("sum_axes_i64_f32", "Sum", [-2, 0], True, tidx=np.int64)
reduce_case("sum_rank2_axis0_f32", "Sum", [0], False, shape=(5, 3))
reduce_case("sum_i32", "Sum", [0, 2], True, dtype=np.int32)
reduce_case("sum_all_i32", "Sum", [0, 1, 2], False, dtype=np.int32)
reduce_case("mean_axis1_f32", "Mean", [1], False)
reduce_case("mean_axes02_keepdims_f32", "Mean", [0, 2], True, xshape=[None, 3, None])
reduce_case("mean_neg_axes_f32", "Mean", [-1, -3], False)
reduce_case("mean_i32", "Mean", [1], False, dtype=np.int32)
reduce_case("mean_all_i32", "Mean", [0, 1, 2], True, dtype=np.int32)
reduce_case("max_axis0_f32", "Max", [0], False)
reduce_case("max_axes02_keepdims_f32", "Max", [0, 2], True)
reduce_case("max_neg_axis_f32", "Max", [-1], False, xshape=None)
reduce_case("max_i32", "Max", [1, 2], False, dtype=np.int32)
reduce_case("min_axis2_f32", "Min", [2], True)
reduce_case("min_axes01_f32", "Min", [0, 1], False)
reduce_case("min_i64", "Min", [0], False, dtype=np.int64)
reduce_case("prod_axis1_f32", "Prod", [1], False)
reduce_case("prod_axes02_keepdims_f32", "Prod", [0, 2], True)
reduce_case("prod_i32", "Prod", [-1], False, dtype=np.int32, shape=(3, 4))

# ----------------------------- ArgMax --------------------------------------


def argmax_case(name, axis, out_type, data, desc, op="ArgMax"):
    def build(b):
        x = b.ph("x", data(b.rng), "full")
        getattr(tf.raw_ops, op)(input=x, dimension=const(np.int32(axis), "axis"),
                                output_type=out_type, name="y")
        b.fetch("y")

    add_case(name, desc, EXACT, build)


argmax_case("argmax_axis0_i64", 0, tf.int64, lambda r: normal(r, [3, 4]),
            "ArgMax float32[3, 4] axis 0, output_type int64")
argmax_case("argmax_axis1_i32", 1, tf.int32, lambda r: normal(r, [3, 4]),
            "ArgMax float32[3, 4] axis 1, output_type int32")
argmax_case("argmax_axis1_i64_rank3", 1, tf.int64, lambda r: normal(r, [2, 3, 4]),
            "ArgMax float32[2, 3, 4] axis 1, output_type int64")
argmax_case("argmax_neg_axis_i32", -1, tf.int32, lambda r: normal(r, [2, 3, 4]),
            "ArgMax float32[2, 3, 4] axis -1, output_type int32")
argmax_case("argmax_ties_f32", 1, tf.int64,
            lambda r: np.round(normal(r, [4, 6], 0.7)).astype(np.float32),
            "ArgMax with ties (small integers as float32[4, 6]) axis 1: TF returns the "
            "first maximal index")
argmax_case("argmax_i32_input", 0, tf.int32, lambda r: ints(r, [5, 3], -3, 4),
            "ArgMax int32[5, 3] axis 0 (with ties)")
argmax_case("argmin_axis1_i64", 1, tf.int64, lambda r: normal(r, [3, 5]),
            "ArgMin float32[3, 5] axis 1, output_type int64", op="ArgMin")
argmax_case("argmin_axis0_i32_rank3", 0, tf.int32, lambda r: normal(r, [3, 2, 4]),
            "ArgMin float32[3, 2, 4] axis 0, output_type int32", op="ArgMin")
argmax_case("argmin_ties_f32", -1, tf.int64,
            lambda r: np.round(normal(r, [4, 6], 0.7)).astype(np.float32),
            "ArgMin with ties (small integers as float32[4, 6]) axis -1: TF returns the "
            "first minimal index", op="ArgMin")
argmax_case("argmin_i64_input", 1, tf.int32, lambda r: ints(r, [3, 7], -3, 4, np.int64),
            "ArgMin int64[3, 7] axis 1 (with ties)", op="ArgMin")


# ----------------------------- Shape manipulation --------------------------


def simple_case(name, desc, fn, tol=EXACT):
    def build(b):
        fn(b)
    add_case(name, desc, tol, build)


def _reshape(shape_in, new_shape, xshape="full", tshape=np.int32, dtype=np.float32):
    def fn(b):
        x = b.ph("x", normal(b.rng, shape_in) if dtype == np.float32
                 else ints(b.rng, shape_in, -50, 50, dtype), xshape)
        tf.raw_ops.Reshape(tensor=x, shape=const(np.asarray(new_shape, tshape), "shape"),
                           name="y")
        b.fetch("y")
    return fn


simple_case("reshape_f32", "Reshape float32[2, 3, 4] to [4, -1]", _reshape([2, 3, 4], [4, -1]))
simple_case("reshape_partial_f32", "Reshape float32[?, 4] (fed [3, 4]) to [-1, 2, 2]",
            _reshape([3, 4], [-1, 2, 2], xshape="batch"))
simple_case("reshape_i64_shape_i32", "Reshape int32[2, 6] to [3, -1, 2] with an int64 shape",
            _reshape([2, 6], [3, -1, 2], tshape=np.int64, dtype=np.int32))
simple_case("reshape_to_scalar_f32", "Reshape float32[1, 1] to [] (scalar)",
            _reshape([1, 1], np.zeros([0], np.int32)))


def _transpose(shape_in, perm, tperm=np.int32, dtype=np.float32):
    def fn(b):
        x = b.ph("x", normal(b.rng, shape_in) if dtype == np.float32
                 else ints(b.rng, shape_in, -50, 50, dtype))
        tf.raw_ops.Transpose(x=x, perm=const(np.asarray(perm, tperm), "perm"), name="y")
        b.fetch("y")
    return fn


simple_case("transpose_rank3_f32", "Transpose float32[2, 3, 4] perm [2, 0, 1]",
            _transpose([2, 3, 4], [2, 0, 1]))
simple_case("transpose_rank3_021_f32", "Transpose float32[2, 3, 4] perm [0, 2, 1]",
            _transpose([2, 3, 4], [0, 2, 1]))
simple_case("transpose_rank4_f32", "Transpose float32[2, 3, 4, 5] perm [0, 3, 1, 2] (NHWC->NCHW)",
            _transpose([2, 3, 4, 5], [0, 3, 1, 2]))
simple_case("transpose_rank4_perm_i64_f32",
            "Transpose float32[2, 3, 4, 5] perm [3, 2, 1, 0] given as int64",
            _transpose([2, 3, 4, 5], [3, 2, 1, 0], tperm=np.int64))
simple_case("transpose_rank2_i32", "Transpose int32[3, 4] perm [1, 0]",
            _transpose([3, 4], [1, 0], dtype=np.int32))


def _expand_dims(axis, taxis=np.int32):
    def fn(b):
        x = b.ph("x", normal(b.rng, [3, 4]))
        tf.raw_ops.ExpandDims(input=x, axis=const(np.asarray(axis, taxis), "axis"), name="y")
        b.fetch("y")
    return fn


simple_case("expand_dims_axis0_f32", "ExpandDims float32[3, 4] axis 0", _expand_dims(0))
simple_case("expand_dims_neg1_f32", "ExpandDims float32[3, 4] axis -1", _expand_dims(-1))
simple_case("expand_dims_neg2_f32", "ExpandDims float32[3, 4] axis -2 (int64 axis)",
            _expand_dims(-2, np.int64))


def _squeeze(shape_in, dims, xshape="full"):
    def fn(b):
        x = b.ph("x", normal(b.rng, shape_in), xshape)
        tf.raw_ops.Squeeze(input=x, axis=dims, name="y")
        b.fetch("y")
    return fn


simple_case("squeeze_all_f32", "Squeeze float32[1, 3, 1, 4] without squeeze_dims",
            _squeeze([1, 3, 1, 4], []))
simple_case("squeeze_dims_f32", "Squeeze float32[1, 3, 1, 4] squeeze_dims [2]",
            _squeeze([1, 3, 1, 4], [2]))
simple_case("squeeze_neg_dims_f32", "Squeeze float32[1, 3, 1, 4] squeeze_dims [0, -2]",
            _squeeze([1, 3, 1, 4], [0, -2]))
simple_case("squeeze_partial_shape_f32",
            "Squeeze float32[?, 1, 4] (fed [3, 1, 4]) squeeze_dims [1]",
            _squeeze([3, 1, 4], [1], xshape="batch"))


def _concat(shapes, axis, dtype=np.float32, xshapes=None):
    def fn(b):
        xs = []
        for i, s in enumerate(shapes):
            v = normal(b.rng, s) if dtype == np.float32 else ints(b.rng, s, -50, 50, dtype)
            xs.append(b.ph("x%d" % i, v, xshapes[i] if xshapes else "full"))
        tf.raw_ops.ConcatV2(values=xs, axis=const(np.int32(axis), "axis"), name="y")
        b.fetch("y")
    return fn


simple_case("concat_axis0_f32", "ConcatV2 axis 0 of float32 [2, 4], [1, 4], [3, 4]",
            _concat([[2, 4], [1, 4], [3, 4]], 0, xshapes=["batch", "full", "batch"]))
simple_case("concat_axis1_f32", "ConcatV2 axis 1 of float32 [3, 2], [3, 1], [3, 3]",
            _concat([[3, 2], [3, 1], [3, 3]], 1))
simple_case("concat_neg_axis_f32", "ConcatV2 axis -1 of float32 [2, 3, 1], [2, 3, 2]",
            _concat([[2, 3, 1], [2, 3, 2]], -1))
simple_case("concat_axis1_rank3_i32", "ConcatV2 axis 1 of int32 [2, 1, 4], [2, 2, 4]",
            _concat([[2, 1, 4], [2, 2, 4]], 1, dtype=np.int32))


def _pack(shape, n, axis, dtype=np.float32):
    def fn(b):
        xs = [b.ph("x%d" % i, normal(b.rng, shape) if dtype == np.float32
                   else ints(b.rng, shape, -50, 50, dtype)) for i in range(n)]
        tf.raw_ops.Pack(values=xs, axis=axis, name="y")
        b.fetch("y")
    return fn


simple_case("pack_axis0_f32", "Pack three float32[3, 4] along axis 0", _pack([3, 4], 3, 0))
simple_case("pack_axis1_f32", "Pack three float32[3, 4] along axis 1", _pack([3, 4], 3, 1))
simple_case("pack_neg_axis_f32", "Pack two float32[3, 4] along axis -1", _pack([3, 4], 2, -1))
simple_case("pack_scalars_i32", "Pack four int32 scalars along axis 0", _pack([], 4, 0, np.int32))


def _slice(shape_in, begin, size, tidx=np.int32, dtype=np.float32):
    def fn(b):
        x = b.ph("x", normal(b.rng, shape_in) if dtype == np.float32
                 else ints(b.rng, shape_in, -50, 50, dtype))
        tf.raw_ops.Slice(input=x, begin=const(np.asarray(begin, tidx), "begin"),
                         size=const(np.asarray(size, tidx), "size"), name="y")
        b.fetch("y")
    return fn


simple_case("slice_f32", "Slice float32[2, 3, 4] begin [1, 0, 1] size [1, -1, 2]",
            _slice([2, 3, 4], [1, 0, 1], [1, -1, 2]))
simple_case("slice_rank2_f32", "Slice float32[4, 5] begin [1, 2] size [2, -1]",
            _slice([4, 5], [1, 2], [2, -1]))
simple_case("slice_i64_index_i32", "Slice int32[3, 4] begin [0, 1] size [-1, 2] (int64 indices)",
            _slice([3, 4], [0, 1], [-1, 2], tidx=np.int64, dtype=np.int32))


def _shape_op(op, out_type=None, xshape=(None, 3, 4), shape_in=(2, 3, 4)):
    def fn(b):
        x = b.ph("x", normal(b.rng, list(shape_in)),
                 None if xshape is None else list(xshape))
        kw = {"out_type": out_type} if out_type is not None else {}
        getattr(tf.raw_ops, op)(input=x, name="y", **kw)
        b.fetch("y")
    return fn


simple_case("shape_i32", "Shape (int32) of float32[?, 3, 4] fed [2, 3, 4]",
            _shape_op("Shape", tf.int32))
simple_case("shape_i64", "Shape (out_type int64) of an unknown-rank placeholder fed [2, 3, 4]",
            _shape_op("Shape", tf.int64, xshape=None))
simple_case("shape_scalar_i32", "Shape of a scalar: int32[0]",
            _shape_op("Shape", tf.int32, xshape=(), shape_in=()))
simple_case("size_i32", "Size (int32) of float32[?, 3, 4] fed [2, 3, 4]",
            _shape_op("Size", tf.int32))
simple_case("size_i64", "Size (out_type int64) of unknown-rank placeholder fed [2, 3, 4]",
            _shape_op("Size", tf.int64, xshape=None))
simple_case("rank_f32", "Rank of an unknown-rank placeholder fed [2, 3, 4]",
            _shape_op("Rank", xshape=None))


def _fill_const(b):
    v = b.ph("value", np.float32(1.25))
    tf.raw_ops.Fill(dims=const(i32([2, 3]), "dims"), value=v, name="y")
    b.fetch("y")


def _fill_dynamic(b):
    x = b.ph("x", normal(b.rng, [3, 2]), [None, None])
    tf.raw_ops.Fill(dims=tf.raw_ops.Shape(input=x, name="dims"),
                    value=const(np.int32(7), "value"), name="y")
    b.fetch("y")


def _fill_i64dims(b):
    tf.raw_ops.Fill(dims=const(i64([2, 1, 3]), "dims"), value=const(np.bool_(True), "value"),
                    name="y")
    b.fetch("y")


simple_case("fill_f32", "Fill dims Const [2, 3] with a fed float32 scalar", _fill_const)
simple_case("fill_dynamic_i32", "Fill int32 7 with dims = Shape of a [?, ?] placeholder fed [3, 2]",
            _fill_dynamic)
simple_case("fill_i64_dims_bool", "Fill bool true with int64 dims [2, 1, 3]", _fill_i64dims)


def _like(op, dtype):
    def fn(b):
        if dtype == np.bool_:
            v = b.rng.rand(3, 4) < 0.5
        elif dtype == np.float32:
            v = sprinkle(b.rng, normal(b.rng, [3, 4]), [NAN, INF])
        else:
            v = ints(b.rng, [3, 4], -5, 5, dtype)
        x = b.ph("x", v, "batch")
        getattr(tf.raw_ops, op)(x=x, name="y")
        b.fetch("y")
    return fn


for _op, _nm in [("ZerosLike", "zeros_like"), ("OnesLike", "ones_like")]:
    simple_case("%s_f32" % _nm, "%s float32[?, 4] (input has NaN/inf)" % _op, _like(_op, np.float32))
    simple_case("%s_i32" % _nm, "%s int32[?, 4]" % _op, _like(_op, np.int32))
    simple_case("%s_bool" % _nm, "%s bool[?, 4]" % _op, _like(_op, np.bool_))
simple_case("zeros_like_i64", "ZerosLike int64[?, 4]", _like("ZerosLike", np.int64))


def _broadcast_to(shape_in, target, dtype=np.float32, tidx=np.int32):
    def fn(b):
        x = b.ph("x", normal(b.rng, shape_in) if dtype == np.float32
                 else ints(b.rng, shape_in, -9, 9, dtype))
        tf.raw_ops.BroadcastTo(input=x, shape=const(np.asarray(target, tidx), "shape"), name="y")
        b.fetch("y")
    return fn


simple_case("broadcast_to_f32", "BroadcastTo float32[3] -> [2, 3]", _broadcast_to([3], [2, 3]))
simple_case("broadcast_to_rank3_f32", "BroadcastTo float32[3, 1] -> [2, 3, 4]",
            _broadcast_to([3, 1], [2, 3, 4]))
simple_case("broadcast_to_scalar_i32", "BroadcastTo int32 scalar -> [2, 2] (int64 shape)",
            _broadcast_to([], [2, 2], np.int32, np.int64))
simple_case("broadcast_to_same_f32", "BroadcastTo float32[2, 3] -> [2, 3] (no-op)",
            _broadcast_to([2, 3], [2, 3]))


def _broadcast_args(s0, s1, dtype):
    def fn(b):
        a = b.ph("s0", np.asarray(s0, dtype))
        c = b.ph("s1", np.asarray(s1, dtype))
        tf.raw_ops.BroadcastArgs(s0=a, s1=c, name="y")
        b.fetch("y")
    return fn


simple_case("broadcast_args_i32", "BroadcastArgs int32 [2, 1, 3] and [4, 1] -> [2, 4, 3]",
            _broadcast_args([2, 1, 3], [4, 1], np.int32))
simple_case("broadcast_args_i64", "BroadcastArgs int64 [5] and [3, 1, 1] -> [3, 1, 5]",
            _broadcast_args([5], [3, 1, 1], np.int64))
simple_case("broadcast_args_scalar_i32", "BroadcastArgs int32 [] (rank 0) and [2, 3] -> [2, 3]",
            _broadcast_args(np.zeros([0], np.int32), [2, 3], np.int32))


# ----------------------------- Unpack / Split / SplitV ---------------------
def _data(rng, shape, dtype):
    if dtype == np.float32:
        return normal(rng, shape)
    return ints(rng, shape, -50, 50, dtype)


def _unpack(shape, axis, dtype=np.float32):
    num = shape[axis]

    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv)
        tf.raw_ops.Unpack(value=x, num=num, axis=axis, name="y")
        names = ["y"] + ["y:%d" % i for i in range(1, num)]
        b.fetch(*names)
        b.ref = lambda: {n: np.take(xv, i, axis=axis) for i, n in enumerate(names)}
    return fn


simple_case("unpack_axis0_f32", "Unpack float32[3, 4] axis 0 (num 3); fetches y, y:1, y:2",
            _unpack([3, 4], 0))
simple_case("unpack_axis1_i32", "Unpack int32[2, 3, 4] axis 1 (num 3) -> three [2, 4]",
            _unpack([2, 3, 4], 1, np.int32))
simple_case("unpack_neg_axis_f32", "Unpack float32[2, 3] axis -1 (num 3) -> three [2]",
            _unpack([2, 3], -1))


def _split(shape, axis, num_split, dtype=np.float32, xshape="full"):
    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv, xshape)
        tf.raw_ops.Split(axis=const(np.int32(axis), "axis"), value=x, num_split=num_split,
                         name="y")
        names = ["y"] + ["y:%d" % i for i in range(1, num_split)]
        b.fetch(*names)
        b.ref = lambda: dict(zip(names, np.split(xv, num_split, axis=axis)))
    return fn


simple_case("split_2_axis0_f32", "Split float32[?, 3] (fed [4, 3]) num_split 2 along axis "
            "input 0", _split([4, 3], 0, 2, xshape="batch"))
simple_case("split_3_axis1_f32", "Split float32[2, 6] num_split 3 along axis input 1",
            _split([2, 6], 1, 3))
simple_case("split_3_neg_axis_i32", "Split int32[2, 2, 6] num_split 3 along axis input -1",
            _split([2, 2, 6], -1, 3, np.int32))


def _splitv(shape, sizes, axis, tlen=np.int32, dtype=np.float32):
    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv)
        tf.raw_ops.SplitV(value=x, size_splits=const(np.asarray(sizes, tlen), "size_splits"),
                          axis=const(np.int32(axis), "axis"), num_split=len(sizes), name="y")
        names = ["y"] + ["y:%d" % i for i in range(1, len(sizes))]
        b.fetch(*names)

        def ref():
            s = list(sizes)
            if -1 in s:
                s[s.index(-1)] = shape[axis] - (sum(s) + 1)
            return dict(zip(names, np.split(xv, np.cumsum(s)[:-1], axis=axis)))
        b.ref = ref
    return fn


simple_case("splitv_neg1_f32", "SplitV float32[2, 7] size_splits [2, -1, 3] (int32) axis 1 "
            "-> [2, 2], [2, 2], [2, 3]", _splitv([2, 7], [2, -1, 3], 1))
simple_case("splitv_axis0_i64_sizes_f32", "SplitV float32[6, 2] size_splits [-1, 4] (int64) "
            "axis 0 -> [2, 2], [4, 2]", _splitv([6, 2], [-1, 4], 0, tlen=np.int64))

# ----------------------------- StridedSlice ---------------------------------


def _strided_slice(shape, begin, end, strides, npslice, dtype=np.float32, index=np.int32,
                   **masks):
    """Raw StridedSlice; npslice is the equivalent NumPy index expression."""
    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv)
        tf.raw_ops.StridedSlice(
            input=x, begin=const(np.asarray(begin, index), "begin"),
            end=const(np.asarray(end, index), "end"),
            strides=const(np.asarray(strides, index), "strides"), name="y", **masks)
        b.fetch("y")
        b.ref = lambda: {"y": xv[npslice]}
    return fn


def _ss_desc(shape, begin, end, strides, masks, extra=""):
    m = ", ".join("%s=%d" % kv for kv in sorted(masks.items()))
    return "StridedSlice float32%s begin %s end %s strides %s%s%s" % (
        shape, begin, end, strides, (", " + m) if m else "", extra)


def _ss_case(name, shape, begin, end, strides, npslice, extra="", **kw):
    masks = {k: v for k, v in kw.items() if k.endswith("_mask")}
    other = {k: v for k, v in kw.items() if not k.endswith("_mask")}
    desc = _ss_desc(shape, begin, end, strides, masks, extra)
    if other.get("dtype") == np.int32:
        desc = desc.replace("float32", "int32", 1)
    simple_case(name, desc, _strided_slice(shape, begin, end, strides, npslice, **kw))


_ss_case("strided_slice_f32", [4, 5, 6], [1, 0, 2], [3, 5, 6], [1, 2, 2],
         np.s_[1:3, 0:5:2, 2:6:2], extra=" (int64 begin/end/strides)", index=np.int64)
_ss_case("strided_slice_neg_strides_f32", [4, 5], [-1, 4], [-4, -6], [-1, -2],
         np.s_[3:0:-1, 4::-2],
         extra=" (x[3:0:-1, 4::-2]; negative begin/end, end -6 clamps before index 0)")
_ss_case("strided_slice_begin_end_mask_f32", [4, 5], [2, 1], [3, 4], [1, 1], np.s_[:3, 1:],
         extra=" (x[:3, 1:])", begin_mask=1, end_mask=2)
_ss_case("strided_slice_ellipsis_mask_f32", [2, 3, 4], [0, 1], [0, 3], [1, 1],
         np.s_[..., 1:3], extra=" (x[..., 1:3])", ellipsis_mask=1)
_ss_case("strided_slice_new_axis_mask_f32", [3, 4], [0, 0, 1], [0, 0, 4], [1, 1, 1],
         np.s_[:, None, 1:], extra=" (x[:, newaxis, 1:])", begin_mask=1, end_mask=1,
         new_axis_mask=2)
_ss_case("strided_slice_shrink_axis_mask_f32", [3, 4, 5], [1, 0, 2], [2, 0, 3], [1, 1, 1],
         np.s_[1, :, 2], extra=" (x[1, :, 2])", begin_mask=2, end_mask=2,
         shrink_axis_mask=5)
_ss_case("strided_slice_all_masks_i32", [2, 3, 4, 5], [1, 0, 0, 4], [2, 0, 0, 0],
         [1, 1, 1, -2], np.s_[1, ..., None, 4::-2],
         extra=" (x[1, ..., newaxis, 4::-2]: shrink, ellipsis, new axis, end_mask with a "
         "negative stride)", dtype=np.int32, ellipsis_mask=2, new_axis_mask=4,
         shrink_axis_mask=1, end_mask=8)


def _ss_python(shape, getitem, npslice, dtype=np.float32, xshape="full"):
    """StridedSlice written by TensorFlow's Python slicing (node "strided_slice")."""
    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv, xshape)
        y = getitem(x)
        assert y.op.type == "StridedSlice" and y.op.name == "strided_slice", y.op.name
        b.fetch("strided_slice")
        b.ref = lambda: {"strided_slice": xv[npslice]}
    return fn


simple_case("strided_slice_py_rows_step_f32",
            "StridedSlice from Python x[1:, ::2] on float32[?, 5] fed [4, 5] (end_mask; "
            "fetch strided_slice)",
            _ss_python([4, 5], lambda x: x[1:, ::2], np.s_[1:, ::2], xshape="batch"))
simple_case("strided_slice_py_ellipsis_index_f32",
            "StridedSlice from Python x[..., 0] on float32[2, 3, 4] (ellipsis + shrink)",
            _ss_python([2, 3, 4], lambda x: x[..., 0], np.s_[..., 0]))
simple_case("strided_slice_py_newaxis_f32",
            "StridedSlice from Python x[:, tf.newaxis, 1:3] on float32[3, 4] (new axis)",
            _ss_python([3, 4], lambda x: x[:, tf.newaxis, 1:3], np.s_[:, None, 1:3]))
simple_case("strided_slice_py_reverse_f32",
            "StridedSlice from Python x[::-1] on float32[4, 3] (stride -1, begin/end masks)",
            _ss_python([4, 3], lambda x: x[::-1], np.s_[::-1]))
simple_case("strided_slice_py_last_two_i32",
            "StridedSlice from Python x[-2:] on int32[5, 2] (negative begin, end_mask)",
            _ss_python([5, 2], lambda x: x[-2:], np.s_[-2:], dtype=np.int32))


def _shape_shrink(b):
    x = b.ph("x", normal(b.rng, [2, 3, 4]), [None, 3, 4])
    tf.raw_ops.Shape(input=x, out_type=tf.int32, name="shape")[0]
    b.fetch("strided_slice")
    b.ref = lambda: {"strided_slice": np.int32(2)}


simple_case("strided_slice_shape_shrink_i32",
            "StridedSlice shape[0] (shrink_axis_mask=1) of Shape(float32[?, 3, 4]) fed "
            "[2, 3, 4] -> int32 scalar (as Keras Flatten writes it)", _shape_shrink)

# ----------------------------- Tile ----------------------------------------


def _tile(shape, multiples, dtype=np.float32, tmult=np.int32):
    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv)
        tf.raw_ops.Tile(input=x, multiples=const(np.asarray(multiples, tmult), "multiples"),
                        name="y")
        b.fetch("y")
        b.ref = lambda: {"y": np.tile(xv, multiples)}
    return fn


simple_case("tile_f32", "Tile float32[2, 3] multiples [2, 3] -> [4, 9]", _tile([2, 3], [2, 3]))
simple_case("tile_rank3_i32", "Tile int32[2, 1, 3] multiples [1, 3, 2] (int64) -> [2, 3, 6]",
            _tile([2, 1, 3], [1, 3, 2], np.int32, np.int64))

# ----------------------------- ReverseV2 -----------------------------------


def _reverse(shape, axes, dtype=np.float32, taxis=np.int32):
    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv)
        tf.raw_ops.ReverseV2(tensor=x, axis=const(np.asarray(axes, taxis), "axis"), name="y")
        b.fetch("y")
        b.ref = lambda: {"y": np.flip(xv, axis=tuple(axes)) if axes else xv}
    return fn


simple_case("reverse_v2_f32", "ReverseV2 float32[3, 5] axis [1] -> the rows' columns reversed",
            _reverse([3, 5], [1]))
simple_case("reverse_v2_neg_axes_i32", "ReverseV2 int32[2, 3, 4] axis [-1, 0] (int64) -> both ends reversed",
            _reverse([2, 3, 4], [-1, 0], np.int32, np.int64))
simple_case("reverse_v2_middle_f32", "ReverseV2 float32[2, 4, 3] axis [1] -> the middle dim reversed",
            _reverse([2, 4, 3], [1]))


# ----------------------------- BiasAddGrad ---------------------------------


def _bias_add_grad(shape, data_format):
    def fn(b):
        gv = normal(b.rng, shape)
        g = b.ph("g", gv)
        tf.raw_ops.BiasAddGrad(out_backprop=g, data_format=data_format, name="y")
        b.fetch("y")
        channel = len(shape) - 1 if data_format == "NHWC" else 1
        axes = tuple(i for i in range(len(shape)) if i != channel)
        b.ref = lambda: {"y": gv.astype(np.float64).sum(axis=axes)}
    return fn


simple_case("bias_add_grad_f32", "BiasAddGrad float32[37, 6] -> the columns' sums [6]",
            _bias_add_grad([37, 6], "NHWC"), tol=ACCUM)
simple_case("bias_add_grad_nhwc_f32", "BiasAddGrad float32[2, 3, 4, 5] NHWC -> [5]",
            _bias_add_grad([2, 3, 4, 5], "NHWC"), tol=ACCUM)
simple_case("bias_add_grad_nchw_f32", "BiasAddGrad float32[2, 3, 4, 5] NCHW -> [3]",
            _bias_add_grad([2, 3, 4, 5], "NCHW"), tol=ACCUM)


# ----------------------------- Range ---------------------------------------


def _range(start, limit, delta, dtype, fed_limit=False):
    def fn(b):
        s = const(np.asarray(start, dtype), "start")
        if fed_limit:
            lim = b.ph("limit", np.asarray(limit, dtype))
        else:
            lim = const(np.asarray(limit, dtype), "limit")
        d = const(np.asarray(delta, dtype), "delta")
        tf.raw_ops.Range(start=s, limit=lim, delta=d, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": np.arange(np.float64(start), np.float64(limit),
                                        np.float64(delta))}
    return fn


RANGE_F32 = Tol(1e-6, 1e-6,
    "float32 Range: TensorFlow accumulates (v += delta, one rounding per step) while "
    "another implementation may compute start + i*delta; the two differ by a few ulp "
    "(relative ~1e-7, absolute ~1e-7 near 0); the element count ceil(|limit-start|/"
    "|delta|) is exact here.")
simple_case("range_i32", "Range int32 start 2, limit 11 (fed scalar), delta 3 -> [2, 5, 8]",
            _range(2, 11, 3, np.int32, fed_limit=True))
simple_case("range_neg_delta_i32", "Range int32 start 10, limit -1, delta -4 -> [10, 6, 2]",
            _range(10, -1, -4, np.int32))
simple_case("range_f32", "Range float32 start 0.5, limit 3, delta 0.25 (exact values)",
            _range(0.5, 3.0, 0.25, np.float32))
simple_case("range_neg_delta_f32",
            "Range float32 start 1, limit -1.2, delta -0.3 -> 8 values (1 ... -1.1)",
            _range(1.0, -1.2, -0.3, np.float32), tol=RANGE_F32)

# ----------------------------- GatherV2 ------------------------------------


def _gather(pshape, indices, axis, batch_dims=0, dtype=np.float32, tind=np.int32,
            taxis=np.int32):
    def fn(b):
        pv = _data(b.rng, pshape, dtype)
        iv = np.asarray(indices, tind)
        p, i = b.ph("params", pv), b.ph("indices", iv)
        tf.raw_ops.GatherV2(params=p, indices=i, axis=const(np.asarray(axis, taxis), "axis"),
                            batch_dims=batch_dims, name="y")
        b.fetch("y")

        def ref():
            if batch_dims == 0:
                return {"y": np.take(pv, iv, axis=axis)}
            return {"y": np.stack([np.take(pv[k], iv[k], axis=axis - 1)
                                   for k in range(pv.shape[0])])}
        b.ref = ref
    return fn


simple_case("gather_v2_axis0_f32",
            "GatherV2 float32[5, 3] indices int32 [4] (with repeats) axis 0 -> [4, 3]",
            _gather([5, 3], [4, 0, 2, 4], 0))
simple_case("gather_v2_axis1_f32",
            "GatherV2 float32[2, 5, 3] indices int64 [2, 2] axis 1 -> [2, 2, 2, 3]",
            _gather([2, 5, 3], [[1, 3], [4, 0]], 1, tind=np.int64))
simple_case("gather_v2_neg_axis_f32",
            "GatherV2 float32[3, 4] indices int32 [3] axis -1 (int64 axis) -> [3, 3]",
            _gather([3, 4], [3, 1, 1], -1, taxis=np.int64))
simple_case("gather_v2_scalar_index_f32",
            "GatherV2 float32[5, 3] scalar index 2 axis 0 -> [3]", _gather([5, 3], 2, 0))
simple_case("gather_v2_batch_dims1_f32",
            "GatherV2 float32[2, 5, 3] indices int32 [2, 4] axis 1 batch_dims 1 -> [2, 4, 3]",
            _gather([2, 5, 3], [[0, 4, 4, 1], [3, 2, 0, 0]], 1, batch_dims=1))
simple_case("gather_v2_shape_i32",
            "GatherV2 int32[3] (a shape vector) indices [0, 1] axis 0 (as tf.tensordot "
            "writes it)", _gather([3], [0, 1], 0, dtype=np.int32))

# ----------------------------- OneHot --------------------------------------


def _one_hot(indices, depth, on, off, axis, dtype=np.float32, tind=np.int32):
    def fn(b):
        iv = np.asarray(indices, tind)
        i = b.ph("indices", iv)
        tf.raw_ops.OneHot(indices=i, depth=const(np.int32(depth), "depth"),
                          on_value=const(np.asarray(on, dtype), "on_value"),
                          off_value=const(np.asarray(off, dtype), "off_value"),
                          axis=axis, name="y")
        b.fetch("y")

        def ref():
            oh = (iv[..., None] == np.arange(depth)).astype(np.float64)
            r = np.where(oh == 1, float(on), float(off))
            return {"y": r if axis == -1 else np.moveaxis(r, -1, axis)}
        b.ref = ref
    return fn


simple_case("one_hot_f32",
            "OneHot int32 indices [5] (incl. -1 and 4 = depth: all-off rows) depth 4, "
            "on 1, off 0, axis -1 -> float32[5, 4]",
            _one_hot([2, -1, 0, 4, 3], 4, 1.0, 0.0, -1))
simple_case("one_hot_axis0_on_off_f32",
            "OneHot int64 indices [2, 3] depth 4, on 5, off -1, axis 0 -> float32[4, 2, 3]",
            _one_hot([[0, 3, 1], [2, 2, 0]], 4, 5.0, -1.0, 0, tind=np.int64))
simple_case("one_hot_axis1_i32",
            "OneHot int32 indices [2, 3] depth 3, on 7, off 2, axis 1 -> int32[2, 3, 3]",
            _one_hot([[0, 2, 1], [1, 1, 5]], 3, 7, 2, 1, dtype=np.int32))

# ----------------------------- Pad / PadV2 / MirrorPad ---------------------


def _pad(op, shape, paddings, dtype=np.float32, tpad=np.int32, cval=None, mode=None):
    def fn(b):
        xv = _data(b.rng, shape, dtype)
        x = b.ph("x", xv)
        pads = const(np.asarray(paddings, tpad), "paddings")
        if op == "Pad":
            tf.raw_ops.Pad(input=x, paddings=pads, name="y")
        elif op == "PadV2":
            tf.raw_ops.PadV2(input=x, paddings=pads,
                             constant_values=const(np.asarray(cval, dtype), "constant_values"),
                             name="y")
        else:
            tf.raw_ops.MirrorPad(input=x, paddings=pads, mode=mode, name="y")
        b.fetch("y")
        if op == "MirrorPad":
            b.ref = lambda: {"y": np.pad(xv, paddings, mode=mode.lower())}
        else:
            b.ref = lambda: {"y": np.pad(xv, paddings, constant_values=cval or 0)}
    return fn


simple_case("pad_f32", "Pad float32[2, 3] paddings [[1, 0], [2, 1]] -> [3, 6]",
            _pad("Pad", [2, 3], [[1, 0], [2, 1]]))
simple_case("pad_rank3_i32", "Pad int32[1, 2, 3] paddings int64 [[0, 1], [1, 1], [0, 0]]",
            _pad("Pad", [1, 2, 3], [[0, 1], [1, 1], [0, 0]], np.int32, np.int64))
simple_case("padv2_f32", "PadV2 float32[2, 3] paddings [[0, 2], [1, 1]] constant_values -1.5",
            _pad("PadV2", [2, 3], [[0, 2], [1, 1]], cval=-1.5))
simple_case("mirror_pad_reflect_f32",
            "MirrorPad REFLECT float32[3, 4] paddings [[2, 1], [3, 2]] (max pads: dim-1)",
            _pad("MirrorPad", [3, 4], [[2, 1], [3, 2]], mode="REFLECT"))
simple_case("mirror_pad_symmetric_f32",
            "MirrorPad SYMMETRIC float32[2, 3, 4] paddings [[0, 1], [3, 1], [4, 2]] (max "
            "pads: dim)", _pad("MirrorPad", [2, 3, 4], [[0, 1], [3, 1], [4, 2]],
                               mode="SYMMETRIC"))

# ----------------------------- Where (coordinates) -------------------------


def _where(data, xshape="full"):
    def fn(b):
        xv = data(b.rng)
        x = b.ph("x", xv, xshape)
        tf.raw_ops.Where(condition=x, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": np.argwhere(xv != 0).astype(np.int64)}
    return fn


simple_case("where_bool", "Where bool[3, 4] (one input) -> int64 [N, 2] coordinates in "
            "row-major order", _where(lambda r: r.rand(3, 4) < 0.5))
simple_case("where_f32", "Where float32[2, 3, 2] (nonzero incl. NaN is true, -0 false) -> "
            "int64 [N, 3]; placeholder [?, 3, 2]",
            _where(lambda r: sprinkle(r, np.round(normal(r, [2, 3, 2], 0.7)),
                                      [NAN, -0.0, 0.0]), xshape="batch"))
simple_case("where_none_true_bool", "Where bool[4] all false -> int64 [0, 1] (empty)",
            _where(lambda r: np.zeros([4], np.bool_)))

# ------------- DepthToSpace, SpaceToBatchND, MatrixBandPart, GatherNd, Resize* -------------


def _moved(dtype, shape, rng):
    """Distinct values of a type (float16 and bfloat16 fed as themselves or float32)."""
    if dtype in (np.int32, np.int64, np.uint8):
        return ints(rng, shape, 0 if dtype == np.uint8 else -50, 50, dtype)
    return normal(rng, shape).astype(dtype)


def movement_case(name, desc, op, x_shape, dtype=np.float32, consts=(), tol=EXACT, **attrs):
    """`op`(x, *consts) with x a placeholder of `dtype` (bfloat16: fed as float32, Cast) and
    the constants (name, value) after it; output "y" (a 16-bit float one Cast to float32)."""
    def build(b):
        if dtype == BF16:
            x = b.ph_bf16("x", normal(b.rng, x_shape))
        else:
            x = b.ph("x", _moved(dtype, x_shape, b.rng))
        first = {"GatherNd": "params", "ResizeBilinear": "images", "ResizeNearestNeighbor": "images"}.get(op, "input")
        args = dict({first: x}, **{n: const(v, n) for n, v in consts})
        y = getattr(tf.raw_ops, op)(**args, **attrs, name="y16" if dtype in (np.float16, BF16) else "y")
        if dtype in (np.float16, BF16) and y.dtype != tf.float32:
            tf.raw_ops.Cast(x=y, DstT=tf.float32, name="y")
        elif dtype in (np.float16, BF16):
            tf.identity(y, name="y")
        b.fetch("y")
    add_case(name, desc, tol, build)


movement_case("depth_to_space_f32", "DepthToSpace float32[1, 2, 3, 8] block_size 2 -> [1, 4, 6, 2]",
              "DepthToSpace", [1, 2, 3, 8], block_size=2)
movement_case("depth_to_space_i32", "DepthToSpace int32[2, 1, 2, 9] block_size 3 -> [2, 3, 6, 1]",
              "DepthToSpace", [2, 1, 2, 9], np.int32, block_size=3)
movement_case("space_to_depth_f32", "SpaceToDepth float32[1, 4, 6, 3] block_size 2 -> [1, 2, 3, 12]",
              "SpaceToDepth", [1, 4, 6, 3], block_size=2)
movement_case("space_to_depth_f16", "SpaceToDepth float16[2, 3, 3, 2] block_size 3 -> [2, 1, 1, 18], Cast to float32",
              "SpaceToDepth", [2, 3, 3, 2], np.float16, block_size=3)
movement_case("space_to_batch_nd_f32",
              "SpaceToBatchND float32[1, 5, 4, 2] block_shape [2, 2] paddings [[1, 0], [0, 2]] -> [4, 3, 3, 2]",
              "SpaceToBatchND", [1, 5, 4, 2], consts=[("block_shape", i32([2, 2])),
                                                     ("paddings", i32([[1, 0], [0, 2]]))])
movement_case("space_to_batch_nd_rank3_i64",
              "SpaceToBatchND int32[2, 4, 3] block_shape [2] (int64) paddings [[1, 1]] -> [4, 3, 3]",
              "SpaceToBatchND", [2, 4, 3], np.int32, consts=[("block_shape", i64([2])), ("paddings", i64([[1, 1]]))])
movement_case("batch_to_space_nd_f32",
              "BatchToSpaceND float32[4, 3, 2, 2] block_shape [2, 2] crops [[1, 0], [0, 1]] -> [1, 5, 3, 2]",
              "BatchToSpaceND", [4, 3, 2, 2], consts=[("block_shape", i32([2, 2])), ("crops", i32([[1, 0], [0, 1]]))])
movement_case("batch_to_space_nd_bf16",
              "BatchToSpaceND bfloat16[6, 2, 2, 1] block_shape [3, 1] crops [[2, 0], [0, 0]] -> [2, 4, 2, 1], Cast",
              "BatchToSpaceND", [6, 2, 2, 1], BF16, consts=[("block_shape", i32([3, 1])), ("crops", i32([[2, 0], [0, 0]]))])
movement_case("matrix_band_part_causal_f32",
              "MatrixBandPart float32[2, 5, 5] num_lower -1 num_upper 0 (a causal mask's lower triangle)",
              "MatrixBandPart", [2, 5, 5], consts=[("num_lower", i32(-1)), ("num_upper", i32(0))])
movement_case("matrix_band_part_band_i64",
              "MatrixBandPart int32[3, 4, 6] num_lower 1 num_upper 2 (int64): a band",
              "MatrixBandPart", [3, 4, 6], np.int32, consts=[("num_lower", i64(1)), ("num_upper", i64(2))])
movement_case("matrix_band_part_f16",
              "MatrixBandPart float16[4, 3] num_lower 0 num_upper -1 (the upper triangle), Cast to float32",
              "MatrixBandPart", [4, 3], np.float16, consts=[("num_lower", i32(0)), ("num_upper", i32(-1))])
movement_case("gather_nd_pairs_f32", "GatherNd float32[3, 4, 2] at int32 [[0, 1], [2, 3], [1, 0]] -> [3, 2]",
              "GatherNd", [3, 4, 2], consts=[("indices", i32([[0, 1], [2, 3], [1, 0]]))])
movement_case("gather_nd_elements_i64", "GatherNd int32[2, 3] at int64 [[[1, 2]], [[0, 0]]] -> [2, 1] (elements)",
              "GatherNd", [2, 3], np.int32, consts=[("indices", i64([[[1, 2]], [[0, 0]]]))])
movement_case("gather_nd_rows_f16", "GatherNd float16[4, 3] at [[3], [0], [3]] -> [3, 3] (rows), Cast to float32",
              "GatherNd", [4, 3], np.float16, consts=[("indices", i32([[3], [0], [3]]))])


def topk_case(name, shape, k, dtype=np.float32, index_type=tf.int32, specials=()):
    """TopKV2 over the last dim (sorted): ties (repeated values, -0 and +0) ordered by index."""
    def build(b):
        if dtype == np.int32:
            x = ints(b.rng, shape, -3, 4, np.int32)
        else:
            x = sprinkle(b.rng, np.round(normal(b.rng, shape, 2) * 2) / 2, specials).astype(dtype)
        xt = b.ph("x", x)
        v, i = tf.raw_ops.TopKV2(input=xt, k=const(np.int32(k), "k"), sorted=True, index_type=index_type, name="top")
        tf.identity(v if dtype != np.float16 else tf.cast(v, tf.float32), name="values")
        tf.identity(i, name="indices")
        b.fetch("values", "indices")
    add_case(name, "TopKV2 %s%s k=%d (%s indices), values rounded to halves: ties%s" % (
        np.dtype(dtype).name, list(shape), k, index_type.name, ", +/-inf, -0 and +0" if specials else ""), EXACT, build)


topk_case("top_k_f32", [3, 9], 4, specials=[INF, -INF, -0.0, 0.0])
topk_case("top_k_all_i32_i64", [2, 6], 6, np.int32, tf.int64)
topk_case("top_k_f16", [4, 5], 2, np.float16)
topk_case("top_k_k0_f32", [2, 3], 0)


def indexed_write_case(name, desc, fn, tol=EXACT):
    """A case whose graph `fn(b)` builds from placeholders and constants; output "y"."""
    def build(b):
        fn(b)
        b.fetch(*getattr(b, "outputs", ["y"]))
    add_case(name, desc, tol, build)


def _scatter_nd(b):
    tf.raw_ops.ScatterNd(indices=const(i32([[1, 0], [3, 2], [1, 0], [0, 1]]), "indices"),
                         updates=b.ph("updates", normal(b.rng, [4, 3])), shape=const(i32([4, 3, 3]), "shape"), name="y")


def _tensor_scatter(op, dtype):
    def fn(b):
        t = b.ph("tensor", _moved(dtype, [5, 2], b.rng))
        tf.raw_ops.__dict__[op](tensor=t, indices=const(i64([[4], [0], [4]]), "indices"),
                                updates=const(_moved(dtype, [3, 2], np.random.RandomState(7)), "updates"), name="y")
    return fn


def _segment_sum(op, dtype, ids, segments=None):
    def fn(b):
        data = b.ph("data", _moved(dtype, [len(ids), 3], b.rng))
        args = dict(data=data, segment_ids=const(i32(ids), "segment_ids"))
        if segments is not None:
            args["num_segments"] = const(i32(segments), "num_segments")
        tf.raw_ops.__dict__[op](**args, name="y")
    return fn


def _unique(b):
    x = b.ph("x", f32([3.0, -0.0, 1.0, 3.0, 0.0, NAN, 2.0, NAN, 1.0]))
    y, idx = tf.raw_ops.Unique(x=x, out_idx=tf.int64, name="u")
    tf.identity(y, name="y")
    tf.identity(idx, name="idx")
    b.outputs = ["y", "idx"]


def _bincount(b):
    arr = b.ph("arr", i32([0, 3, 3, 1, 7, 2, 3, 0]))
    tf.raw_ops.Bincount(arr=arr, size=const(np.int32(5), "size"), weights=const(f32([]), "weights"), name="y")


def _dense_bincount(b):
    x = b.ph("input", i64([[0, 1, 1, 4], [2, 2, 0, 9]]))
    tf.raw_ops.DenseBincount(input=x, size=const(np.int64(5), "size"), weights=const(f32(np.arange(8).reshape(2, 4) / 4), "weights"),
                             binary_output=False, name="y")


def _linspace(start, stop, num, dtype=np.float32):
    def fn(b):
        tf.raw_ops.LinSpace(start=b.ph("start", np.asarray(start, dtype)), stop=b.ph("stop", np.asarray(stop, dtype)),
                            num=const(np.int32(num), "num"), name="y")
    return fn


indexed_write_case("scatter_nd_f32", "ScatterNd float32 updates [4, 3] at int32 [[1, 0], [3, 2], [1, 0], [0, 1]] into [4, 3, 3] "
                   "(a repeated index: summed)", _scatter_nd, ACCUM)
indexed_write_case("tensor_scatter_update_i32", "TensorScatterUpdate int32[5, 2] at int64 [[4], [0], [4]] (the later update "
                   "of row 4 kept)", _tensor_scatter("TensorScatterUpdate", np.int32))
indexed_write_case("tensor_scatter_add_f32", "TensorScatterAdd float32[5, 2] at int64 [[4], [0], [4]] (row 4 added twice)",
                   _tensor_scatter("TensorScatterAdd", np.float32), ACCUM)
indexed_write_case("unsorted_segment_sum_f32", "UnsortedSegmentSum float32[6, 3] by [2, 0, -1, 2, 4, 0] into 5 segments "
                   "(-1 dropped, segment 1 and 3 empty)", _segment_sum("UnsortedSegmentSum", np.float32, [2, 0, -1, 2, 4, 0], 5),
                   ACCUM)
indexed_write_case("unsorted_segment_sum_i32", "UnsortedSegmentSum int32[4, 3] by [1, 1, 0, 1] into 3 segments",
                   _segment_sum("UnsortedSegmentSum", np.int32, [1, 1, 0, 1], 3))
indexed_write_case("segment_sum_f32", "SegmentSum float32[6, 3] by sorted [0, 0, 1, 3, 3, 3] (segment 2 empty)",
                   _segment_sum("SegmentSum", np.float32, [0, 0, 1, 3, 3, 3]), ACCUM)
indexed_write_case("unique_f32", "Unique float32[9] with -0 and +0 (one value), two NaNs (two values), int64 indices",
                   _unique)
indexed_write_case("bincount_i32", "Bincount int32[8] size 5 without weights (7 dropped)", _bincount)
indexed_write_case("dense_bincount_rows_f32", "DenseBincount int64[2, 4] size 5 with float32 weights, per row (9 dropped)",
                   _dense_bincount, ACCUM)
indexed_write_case("linspace_f32", "LinSpace float32 from -1.5 to 2.25, 7 values", _linspace(-1.5, 2.25, 7), ROUND1)
indexed_write_case("linspace_one_f64", "LinSpace float64 from 3 to 5, 1 value (start)", _linspace(3.0, 5.0, 1, np.float64))


def resize_case(name, op, shape, size, align, half, dtype=np.float32):
    flags = "align_corners" if align else "half_pixel_centers" if half else "neither flag"
    movement_case(name, "%s %s%s to %s, %s" % (op, np.dtype(dtype).name if dtype != BF16 else "bfloat16", list(shape),
                                               list(size), flags),
                  op, shape, dtype, consts=[("size", i32(size))], tol=ACCUM if op == "ResizeBilinear" else EXACT,
                  align_corners=align, half_pixel_centers=half)


for _op, _short in (("ResizeBilinear", "bilinear"), ("ResizeNearestNeighbor", "nearest")):
    for _align, _half, _flag in ((False, False, "legacy"), (True, False, "align"), (False, True, "half")):
        resize_case("resize_%s_up_%s_f32" % (_short, _flag), _op, [1, 3, 4, 2], [5, 7], _align, _half)
        resize_case("resize_%s_down_%s_f32" % (_short, _flag), _op, [2, 6, 5, 1], [4, 3], _align, _half)
resize_case("resize_bilinear_half_u8", "ResizeBilinear", [1, 4, 4, 3], [6, 5], False, True, np.uint8)
resize_case("resize_bilinear_legacy_f16", "ResizeBilinear", [1, 3, 3, 2], [4, 6], False, False, np.float16)
resize_case("resize_nearest_half_i32", "ResizeNearestNeighbor", [1, 3, 5, 2], [7, 4], False, True, np.int32)
resize_case("resize_nearest_align_f16", "ResizeNearestNeighbor", [1, 4, 3, 1], [3, 8], True, False, np.float16)


# ----------------------------- Conv2D / DepthwiseConv2dNative --------------


def _same_pads(size, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return total // 2, total - total // 2


def _conv_pads(xshape, kshape, strides, dilations, padding, explicit):
    if padding == "VALID":
        return [(0, 0), (0, 0)]
    if padding == "EXPLICIT":
        return [tuple(explicit[2:4]), tuple(explicit[4:6])]
    return [_same_pads(xshape[1 + i], kshape[i], strides[1 + i], dilations[1 + i])
            for i in range(2)]


def _windows(xp, kh, kw, oh, ow, strides, dilations):
    """Yield (i, j, x window [N, oh, ow, C]) for every filter tap."""
    sh, sw = strides[1], strides[2]
    dh, dw = dilations[1], dilations[2]
    for i in range(kh):
        for j in range(kw):
            yield i, j, xp[:, i * dh: i * dh + (oh - 1) * sh + 1: sh,
                           j * dw: j * dw + (ow - 1) * sw + 1: sw, :]


def _out_size(size, k, s, d, pads):
    return (size + pads[0] + pads[1] - ((k - 1) * d + 1)) // s + 1


def conv2d64(x, w, strides, dilations, pads, depthwise=False):
    x, w = x.astype(np.float64), w.astype(np.float64)
    kh, kw = w.shape[:2]
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    oh = _out_size(x.shape[1], kh, strides[1], dilations[1], pads[0])
    ow = _out_size(x.shape[2], kw, strides[2], dilations[2], pads[1])
    cout = w.shape[2] * w.shape[3] if depthwise else w.shape[3]
    out = np.zeros((x.shape[0], oh, ow, cout))
    cg = w.shape[2]  # a group's input channels (groups: the input's channels / cg)
    og = cout // (x.shape[3] // cg)  # its output channels
    for i, j, win in _windows(xp, kh, kw, oh, ow, strides, dilations):
        if depthwise:
            out += (win[..., :, None] * w[i, j]).reshape(out.shape)
        else:
            for g in range(x.shape[3] // cg):
                out[..., g * og:(g + 1) * og] += win[..., g * cg:(g + 1) * cg] @ w[i, j][:, g * og:(g + 1) * og]
    return out


def _conv(xshape, kshape, strides, padding, dilations=(1, 1, 1, 1), explicit=(),
          depthwise=False):
    def fn(b):
        xv, wv = normal(b.rng, xshape), normal(b.rng, kshape, 0.5)
        x = b.ph("x", xv)
        w = const(wv, "filter")
        kw = dict(input=x, filter=w, strides=list(strides), padding=padding,
                  dilations=list(dilations), data_format="NHWC", name="y")
        if padding == "EXPLICIT":
            kw["explicit_paddings"] = list(explicit)
        if depthwise:
            tf.raw_ops.DepthwiseConv2dNative(**kw)
        else:
            tf.raw_ops.Conv2D(**kw)
        b.fetch("y")
        pads = _conv_pads(xshape, kshape, strides, dilations, padding, explicit)
        b.ref = lambda: {"y": conv2d64(xv, wv, strides, dilations, pads, depthwise)}
    return fn


def _conv_desc(op, xshape, kshape, strides, padding, dilations=(1, 1, 1, 1), explicit=()):
    s = "%s NHWC float32%s filter %s strides %s padding %s" % (
        op, xshape, kshape, list(strides), padding)
    if padding == "EXPLICIT":
        s += " explicit_paddings %s" % list(explicit)
    if tuple(dilations) != (1, 1, 1, 1):
        s += " dilations %s" % list(dilations)
    return s


def conv_case(name, xshape, kshape, strides, padding, dilations=(1, 1, 1, 1), explicit=(),
              depthwise=False, note=""):
    op = "DepthwiseConv2dNative" if depthwise else "Conv2D"
    simple_case(name, _conv_desc(op, xshape, kshape, strides, padding, dilations, explicit)
                + note, _conv(xshape, kshape, strides, padding, dilations, explicit,
                              depthwise), tol=ACCUM)


conv_case("conv2d_same_f32", [2, 5, 5, 3], [3, 3, 3, 4], (1, 1, 1, 1), "SAME")
conv_case("conv2d_valid_f32", [1, 6, 5, 2], [3, 2, 2, 3], (1, 1, 1, 1), "VALID")
conv_case("conv2d_same_stride2_f32", [1, 6, 7, 2], [3, 3, 2, 3], (1, 2, 2, 1), "SAME",
          note=" (even/odd sizes: SAME pads 0/1 and 1/1)")
conv_case("conv2d_valid_stride2_f32", [1, 7, 7, 2], [3, 3, 2, 3], (1, 2, 2, 1), "VALID")
conv_case("conv2d_dilation2_f32", [1, 7, 7, 2], [3, 3, 2, 2], (1, 1, 1, 1), "SAME",
          dilations=(1, 2, 2, 1))
conv_case("conv2d_explicit_f32", [1, 5, 6, 2], [2, 3, 2, 3], (1, 1, 2, 1), "EXPLICIT",
          explicit=(0, 0, 1, 2, 2, 0, 0, 0))
conv_case("conv2d_grouped_f32", [1, 5, 5, 4], [3, 3, 2, 6], (1, 1, 1, 1), "SAME",
          note=" (2 groups: the filter holds half the input's channels)")
conv_case("conv2d_grouped_depthwise_f32", [2, 6, 5, 3], [3, 3, 1, 6], (1, 2, 1, 1), "SAME",
          note=" (one group per channel, as Keras writes Conv2D(groups=channels): a depthwise convolution)")
conv_case("depthwise_conv2d_same_f32", [1, 5, 5, 3], [3, 3, 3, 2], (1, 1, 1, 1), "SAME",
          depthwise=True, note=" (channel multiplier 2 -> 6 channels)")
conv_case("depthwise_conv2d_valid_stride2_f32", [2, 7, 6, 2], [3, 3, 2, 2], (1, 2, 2, 1),
          "VALID", depthwise=True, note=" (channel multiplier 2)")

def dilated_conv_case(name, xshape, kshape, rate, padding, depthwise):
    """A dilated convolution as TensorFlow writes it: SpaceToBatchND, the convolution (VALID),
    BatchToSpaceND (tf.nn.depthwise_conv2d with a rate; tf.nn.with_space_to_batch)."""
    def build(b):
        xv, wv = normal(b.rng, xshape), normal(b.rng, kshape, 0.5)
        x, w = b.ph("x", xv), const(wv, "filter")
        if depthwise:
            y = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], padding, dilations=[rate, rate])
        else:
            y = tf.nn.with_space_to_batch(
                x, dilation_rate=[rate, rate], padding=padding, filter_shape=kshape[:2],
                op=lambda inp, num_spatial_dims, pad: tf.nn.conv2d(inp, w, [1, 1, 1, 1], pad))
        tf.identity(y, name="y")
        b.fetch("y")
        pads = _conv_pads(xshape, kshape, (1, 1, 1, 1), (1, rate, rate, 1), padding, ())
        b.ref = lambda: {"y": conv2d64(xv, wv, (1, 1, 1, 1), (1, rate, rate, 1), pads, depthwise)}

    op = "DepthwiseConv2dNative" if depthwise else "Conv2D"
    add_case(name, "%s NHWC float32%s filter %s rate %d padding %s, as SpaceToBatchND, %s (VALID), "
             "BatchToSpaceND" % (op, xshape, kshape, rate, padding, op), ACCUM, build)


dilated_conv_case("dilated_depthwise_same_f32", [1, 7, 9, 3], [3, 3, 3, 1], 2, "SAME", True)
dilated_conv_case("dilated_depthwise_valid_f32", [2, 8, 7, 2], [3, 3, 2, 2], 2, "VALID", True)
dilated_conv_case("dilated_conv2d_same_f32", [1, 9, 6, 2], [3, 3, 2, 4], 3, "SAME", False)


def half_conv_case(name, dtype, xshape, kshape, strides, padding, depthwise=False):
    """A float16 or bfloat16 convolution (a filter constant of the type), Cast to float32."""
    def build(b):
        if dtype == "bf16":
            xv = normal(b.rng, xshape).astype(BF16).astype(np.float32)
            wv = normal(b.rng, kshape, 0.5).astype(BF16).astype(np.float32)
            x, w = b.ph_bf16("x", xv), const(wv.astype(BF16), "filter")
        else:
            xv, wv = normal(b.rng, xshape, 1, np.float16), normal(b.rng, kshape, 0.5, np.float16)
            x, w = b.ph("x", xv), const(wv, "filter")
        kw = dict(input=x, filter=w, strides=list(strides), padding=padding, data_format="NHWC", name="y16")
        y = tf.raw_ops.DepthwiseConv2dNative(**kw) if depthwise else tf.raw_ops.Conv2D(**kw)
        tf.raw_ops.Cast(x=y, DstT=tf.float32, name="y")
        b.fetch("y")
        pads = _conv_pads(xshape, kshape, strides, (1, 1, 1, 1), padding, ())
        b.ref = lambda: {"y": conv2d64(xv, wv, strides, (1, 1, 1, 1), pads, depthwise)}

    op = "DepthwiseConv2dNative" if depthwise else "Conv2D"
    what = "bfloat16 (fed as float32, Cast in the graph)" if dtype == "bf16" else "float16"
    add_case(name, "%s NHWC %s %s filter %s strides %s padding %s, Cast to float32" % (
        op, what, xshape, kshape, list(strides), padding), HALF_GEMM, build)


half_conv_case("conv2d_same_stride2_f16", "f16", [2, 6, 7, 4], [3, 3, 4, 5], (1, 2, 2, 1), "SAME")
half_conv_case("conv2d_same_bf16", "bf16", [1, 5, 5, 3], [3, 3, 3, 4], (1, 1, 1, 1), "SAME")
half_conv_case("conv2d_grouped_f16", "f16", [1, 5, 6, 4], [3, 3, 1, 8], (1, 1, 1, 1), "SAME")
half_conv_case("depthwise_conv2d_same_f16", "f16", [1, 5, 6, 3], [3, 3, 3, 2], (1, 1, 1, 1), "SAME",
               depthwise=True)


def conv2d_backprop_input64(xshape, w, dy, strides, dilations, pads):
    """Scatters each output gradient back through the filter taps that made it."""
    w, dy = w.astype(np.float64), dy.astype(np.float64)
    kh, kw = w.shape[:2]
    n, h, wd, c = xshape
    dx = np.zeros((n, h + pads[0][0] + pads[0][1], wd + pads[1][0] + pads[1][1], c))
    oh, ow = dy.shape[1], dy.shape[2]
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dilations[1], j * dilations[2]
            dx[:, r0: r0 + (oh - 1) * strides[1] + 1: strides[1],
               c0: c0 + (ow - 1) * strides[2] + 1: strides[2], :] += dy @ w[i, j].T
    return dx[:, pads[0][0]: pads[0][0] + h, pads[1][0]: pads[1][0] + wd, :]


def _conv_backprop_input(xshape, kshape, strides, padding, dilations=(1, 1, 1, 1), explicit=()):
    def fn(b):
        pads = _conv_pads(xshape, kshape, strides, dilations, padding, explicit)
        oh = _out_size(xshape[1], kshape[0], strides[1], dilations[1], pads[0])
        ow = _out_size(xshape[2], kshape[1], strides[2], dilations[2], pads[1])
        dyv, wv = normal(b.rng, [xshape[0], oh, ow, kshape[3]]), normal(b.rng, kshape, 0.5)
        dy = b.ph("dy", dyv)
        kw = dict(input_sizes=const(np.array(xshape, np.int32), "input_sizes"), filter=const(wv, "filter"),
                  out_backprop=dy, strides=list(strides), padding=padding, dilations=list(dilations),
                  data_format="NHWC", name="y")
        if padding == "EXPLICIT":
            kw["explicit_paddings"] = list(explicit)
        tf.raw_ops.Conv2DBackpropInput(**kw)
        b.fetch("y")
        b.ref = lambda: {"y": conv2d_backprop_input64(xshape, wv, dyv, strides, dilations, pads)}
    return fn


def conv_backprop_input_case(name, xshape, kshape, strides, padding, dilations=(1, 1, 1, 1), explicit=(),
                             note=""):
    simple_case(name, _conv_desc("Conv2DBackpropInput", xshape, kshape, strides, padding, dilations, explicit)
                .replace(" float32", " float32 input") + note,
                _conv_backprop_input(xshape, kshape, strides, padding, dilations, explicit), tol=ACCUM)


conv_backprop_input_case("conv2d_backprop_input_same_stride2_f32", [2, 6, 7, 3], [3, 3, 3, 4], (1, 2, 2, 1), "SAME",
                         note=" (Keras's Conv2DTranspose)")
conv_backprop_input_case("conv2d_backprop_input_valid_f32", [1, 5, 6, 2], [2, 3, 2, 3], (1, 1, 1, 1), "VALID")
# (TensorFlow's CPU kernel has no dilations.)
conv_backprop_input_case("conv2d_backprop_input_explicit_f32", [1, 5, 6, 2], [2, 3, 2, 3], (1, 2, 1, 1),
                         "EXPLICIT", explicit=(0, 0, 1, 2, 2, 0, 0, 0))


# ----------------------------- while loops -----------------------------------


def _while_loop(b):
    """x = x * 0.5 + c, n times: a StatelessWhile whose cond and body are functions."""
    xv, cv = normal(b.rng, [2, 3]), normal(b.rng, [2, 3])
    x = b.ph("x", xv)
    n = b.ph("n", np.int32(4))
    c = const(cv, "c")
    _, y = tf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 0.5 + c), [tf.constant(0), x])
    tf.identity(y, name="y")
    b.fetch("y")

    def ref():
        v = xv.astype(np.float64)
        for _ in range(4):
            v = v * 0.5 + cv
        return {"y": v}
    b.ref = ref


simple_case("while_loop_f32", "tf.while_loop (a StatelessWhile with cond and body functions): x = x * 0.5 + c, "
            "n = 4 times", _while_loop, tol=ROUND1)

# ----------------------------- conditionals ----------------------------------


def _conds(p, x, c):
    """Two conditionals on p and one on not p, the first holding another on sum(x) > 0."""
    y = tf.cond(p, lambda: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(x) + c, lambda: x - c),
                lambda: x * 2.0)
    z = tf.cond(tf.logical_not(p), lambda: tf.abs(x), lambda: tf.tanh(x) * c)
    return tf.identity(y, name="y"), tf.identity(z, name="z")


def _conds_ref(xv, cv, p):
    x = xv.astype(np.float64)
    if p:
        y = np.maximum(x, 0) + cv if x.sum() > 0 else x - cv
    else:
        y = x * 2
    return {"y": y, "z": np.tanh(x) * cv if p else np.abs(x)}


def _cond_case(form, p):
    def fn(b):
        xv, cv = normal(b.rng, [2, 3]), normal(b.rng, [2, 3])
        from tensorflow.python.ops import control_flow_util
        v2 = control_flow_util.ENABLE_CONTROL_FLOW_V2
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = form != "v1"
        try:
            b.graph_of(lambda x, p: _conds(p, x, tf.constant(cv, name="c")), form == "lowered", x=xv, p=np.bool_(p))
        finally:
            control_flow_util.ENABLE_CONTROL_FLOW_V2 = v2
        b.fetch("y", "z")
        b.ref = lambda: _conds_ref(xv, cv, p)
    return fn


for _form, _desc in [("functional", "StatelessIf nodes with then and else functions (tf.cond)"),
                     ("v1", "Switch and Merge (tf.cond in a TensorFlow 1 graph)"),
                     ("lowered", "Switch and Merge as freezing a tf.function lowers its If nodes")]:
    for _p in (True, False):
        simple_case("cond_%s_%s_f32" % (_form, "true" if _p else "false"),
                    "Conditionals as %s: y = p ? (sum(x) > 0 ? relu(x) + c : x - c) : 2x, "
                    "z = !p ? |x| : tanh(x) * c, p = %s" % (_desc, _p), _cond_case(_form, _p), tol=TRANS)


def _cond_in_loop(lowered):
    def fn(b):
        xv = normal(b.rng, [2, 3])

        def loop(x, n):
            body = lambda i, v: (i + 1, tf.cond(tf.equal(i % 2, 0), lambda: v * 0.5, lambda: v + 1.0))
            return tf.identity(tf.while_loop(lambda i, v: i < n, body, [tf.constant(0), x])[1], name="y")
        b.graph_of(loop, lowered, x=xv, n=np.int32(5))
        b.fetch("y")

        def ref():
            v = xv.astype(np.float64)
            for i in range(5):
                v = v * 0.5 if i % 2 == 0 else v + 1.0
            return {"y": v}
        b.ref = ref
    return fn


simple_case("cond_in_loop_f32", "tf.cond inside tf.while_loop's body (a StatelessIf in a StatelessWhile's body "
            "function): v = i even ? v * 0.5 : v + 1, 5 times", _cond_in_loop(False), tol=ROUND1)
simple_case("cond_in_loop_lowered_f32", "tf.cond inside tf.while_loop's body as freezing a tf.function lowers "
            "them (Switch and Merge inside the loop's frame)", _cond_in_loop(True), tol=ROUND1)


def _nested_loops(lowered):
    def fn(b):
        xv = normal(b.rng, [2, 3])

        def loops(x, n):
            def outer_body(i, v):
                inner = tf.while_loop(lambda j, u: j < i, lambda j, u: (j + 1, u * 0.5 + 1.0), [tf.constant(0), v])
                return i + 1, inner[1]
            return tf.identity(tf.while_loop(lambda i, v: i < n, outer_body, [tf.constant(0), x])[1], name="y")
        b.graph_of(loops, lowered, x=xv, n=np.int32(4))
        b.fetch("y")

        def ref():
            v = xv.astype(np.float64)
            for i in range(4):
                for _ in range(i):
                    v = v * 0.5 + 1.0
            return {"y": v}
        b.ref = ref
    return fn


simple_case("nested_while_f32", "a tf.while_loop in a tf.while_loop's body (a StatelessWhile in a StatelessWhile's "
            "body function): the inner runs i times in outer iteration i, v = v * 0.5 + 1", _nested_loops(False),
            tol=ROUND1)
simple_case("nested_while_lowered_f32", "the same nested loops as freezing a tf.function lowers them (a frame "
            "inside a frame)", _nested_loops(True), tol=ROUND1)

# ----------------------------- MaxPool / AvgPool ---------------------------


def pool64(x, k, s, padding, op):
    x = x.astype(np.float64)
    pads = ([(0, 0), (0, 0)] if padding == "VALID" else
            [_same_pads(x.shape[1 + i], k, s, 1) for i in range(2)])
    fill = -np.inf if op == "MaxPool" else 0.0
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)], constant_values=fill)
    cnt = np.pad(np.ones_like(x), [(0, 0), pads[0], pads[1], (0, 0)])
    oh = _out_size(x.shape[1], k, s, 1, pads[0])
    ow = _out_size(x.shape[2], k, s, 1, pads[1])
    st = (1, s, s, 1)
    wins = [w for _, _, w in _windows(xp, k, k, oh, ow, st, (1, 1, 1, 1))]
    if op == "MaxPool":
        return np.max(wins, axis=0)
    counts = [w for _, _, w in _windows(cnt, k, k, oh, ow, st, (1, 1, 1, 1))]
    return np.sum(wins, axis=0) / np.sum(counts, axis=0)


def pool_case(name, op, xshape, k, s, padding, note=""):
    def fn(b):
        xv = normal(b.rng, xshape)
        x = b.ph("x", xv, "batch")
        kw = dict(ksize=[1, k, k, 1], strides=[1, s, s, 1], padding=padding,
                  data_format="NHWC", name="y")
        if op == "MaxPool":
            tf.raw_ops.MaxPool(input=x, **kw)
        else:
            tf.raw_ops.AvgPool(value=x, **kw)
        b.fetch("y")
        b.ref = lambda: {"y": pool64(xv, k, s, padding, op)}

    simple_case(name, "%s NHWC float32[?, %d, %d, %d] fed %s ksize %d strides %d %s%s"
                % (op, xshape[1], xshape[2], xshape[3], xshape, k, s, padding, note), fn,
                tol=IEEE if op == "MaxPool" else ACCUM)


pool_case("max_pool_k2_s2_valid_f32", "MaxPool", [2, 6, 5, 3], 2, 2, "VALID")
pool_case("max_pool_k3_s2_same_f32", "MaxPool", [1, 7, 6, 2], 3, 2, "SAME",
          " (padding never wins the max)")
pool_case("avg_pool_k2_s2_valid_f32", "AvgPool", [2, 6, 5, 3], 2, 2, "VALID")
pool_case("avg_pool_k3_s2_same_f32", "AvgPool", [1, 7, 6, 2], 3, 2, "SAME",
          " (edge windows divide by the number of non-padding elements)")

# ----------------------------- FusedBatchNormV3 (inference) ----------------


def _fused_bn(xshape, eps, xph="full"):
    def fn(b):
        c = xshape[-1]
        xv = normal(b.rng, xshape, 2.0)
        scale, offset = uniform(b.rng, [c], 0.5, 1.5), normal(b.rng, [c], 0.3)
        mean, var = normal(b.rng, [c], 0.5), uniform(b.rng, [c], 0.25, 2.0)
        x = b.ph("x", xv, xph)
        tf.raw_ops.FusedBatchNormV3(
            x=x, scale=const(scale, "scale"), offset=const(offset, "offset"),
            mean=const(mean, "mean"), variance=const(var, "variance"), epsilon=eps,
            exponential_avg_factor=1.0, data_format="NHWC", is_training=False, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": (xv.astype(np.float64) - mean) / np.sqrt(var.astype(np.float64)
                                                                       + eps) * scale + offset}
    return fn


BN_TOL = Tol(1e-5, 2e-6,
    "Inference batch norm y = (x - mean) * rsqrt(var + eps) * scale + offset: "
    "implementations differ in the order of operations (e.g. (x - mean) * s + offset "
    "vs x * s + (offset - mean * s) with s = scale * rsqrt(var + eps)) and in "
    "rsqrt vs 1/sqrt rounding: a few ulp of |x * s| (~1e-7 relative, a few 1e-7 "
    "absolute near cancellation); rtol 1e-5, atol 2e-6.")
simple_case("fused_batch_norm_v3_nhwc_f32",
            "FusedBatchNormV3 is_training=False NHWC float32[2, 4, 4, 3], epsilon 0.001, "
            "exponential_avg_factor 1; Const scale/offset/mean/variance; fetches only "
            "output 0 (y)", _fused_bn([2, 4, 4, 3], 0.001), tol=BN_TOL)
simple_case("fused_batch_norm_v3_partial_shape_f32",
            "FusedBatchNormV3 is_training=False NHWC float32[?, 3, 5, 4] fed [1, 3, 5, 4], "
            "epsilon 1e-5; fetches only y", _fused_bn([1, 3, 5, 4], 1e-5, xph="batch"),
            tol=BN_TOL)

# ----------------------------- FusedBatchNormV3 (training) and its gradient --


def _bn_axes(fmt):
    return (0, 1, 2) if fmt == "NHWC" else (0, 2, 3)


def _per_channel(v, fmt):
    return v if fmt == "NHWC" else v.reshape(-1, 1, 1)


def _bn_train_ref(xv, scale, offset, eps, fmt, factor=1.0, mean_in=None, var_in=None):
    """float64 reference of FusedBatchNormV3 in training: y and outputs 1-4."""
    x = xv.astype(np.float64)
    axes = _bn_axes(fmt)
    n = x.size // len(scale)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    y = (x - _per_channel(mean, fmt)) / np.sqrt(_per_channel(var, fmt) + eps)
    y = y * _per_channel(scale, fmt) + _per_channel(offset, fmt)
    running_mean, running_var = mean, var * n / max(n - 1, 1)
    if factor != 1.0:
        running_mean = (1 - factor) * mean_in + factor * running_mean
        running_var = (1 - factor) * var_in + factor * running_var
    return {"y": y, "y:1": running_mean, "y:2": running_var, "y:3": mean, "y:4": var}


def _fused_bn_training(xshape, fmt, eps, dtype=np.float32, factor=1.0, xph="full"):
    def fn(b):
        c = xshape[3 if fmt == "NHWC" else 1]
        # A mean large against the spread: a one-pass variance would lose it.
        xv = (normal(b.rng, xshape, 2.0) + 30.0).astype(dtype)
        scale, offset = uniform(b.rng, [c], 0.5, 1.5), normal(b.rng, [c], 0.3)
        if factor != 1.0:
            mean_in, var_in = normal(b.rng, [c], 0.5), uniform(b.rng, [c], 0.25, 2.0)
        else:
            mean_in = var_in = np.zeros([0], np.float32)
        x = b.ph("x", xv, xph)
        tf.raw_ops.FusedBatchNormV3(
            x=x, scale=const(scale, "scale"), offset=const(offset, "offset"),
            mean=const(mean_in, "mean"), variance=const(var_in, "variance"), epsilon=eps,
            exponential_avg_factor=factor, data_format=fmt, is_training=True, name="y")
        b.fetch("y", "y:1", "y:2", "y:3", "y:4")
        b.ref = lambda: _bn_train_ref(xv, scale, offset, eps, fmt, factor, mean_in, var_in)
    return fn


BN_TRAIN_TOL = Tol(2e-5, 1e-5,
    "Training batch norm: per-channel means and variances of a few hundred float32 elements "
    "(summation order differs between implementations: a few ulp of the sums), the variance "
    "of x less its mean (|mean| ~30 against a spread of 2: the centered values keep ~5 fewer "
    "bits), then y = (x - mean) * scale * rsqrt(var + eps) + offset; rtol 2e-5, atol 1e-5.")
simple_case("fused_batch_norm_v3_training_nhwc_f32",
            "FusedBatchNormV3 is_training=True NHWC float32[4, 5, 6, 3] (mean ~30, spread 2), "
            "epsilon 0.001, exponential_avg_factor 1 with empty mean/variance; fetches y and "
            "outputs 1-4 (running mean and unbiased variance, batch mean and variance)",
            _fused_bn_training([4, 5, 6, 3], "NHWC", 0.001), tol=BN_TRAIN_TOL)
simple_case("fused_batch_norm_v3_training_nchw_avg_f32",
            "FusedBatchNormV3 is_training=True NCHW float32[?, 4, 5, 6] fed [3, 4, 5, 6], "
            "epsilon 1e-5, exponential_avg_factor 0.25 blending the given mean/variance; "
            "fetches y and outputs 1-4",
            _fused_bn_training([3, 4, 5, 6], "NCHW", 1e-5, factor=0.25, xph="batch"),
            tol=BN_TRAIN_TOL)
simple_case("fused_batch_norm_v3_training_f16",
            "FusedBatchNormV3 is_training=True NHWC float16[2, 4, 4, 8] (statistics in "
            "float32), epsilon 0.001; fetches y and outputs 1-4",
            _fused_bn_training([2, 4, 4, 8], "NHWC", 0.001, dtype=np.float16),
            tol=Tol(2e-3, 2e-3, "float16 x and y around a float32 batch norm: a float16 ulp of "
                    "|x| ~30 is 0.016 (x is stored rounded, the reference reads the same values); y "
                    "rounds to float16 (~1e-3 relative); rtol 2e-3, atol 2e-3."))


def _bn_grad_ref(dyv, xv, scale, mean, var, eps, fmt, training):
    """float64 reference of FusedBatchNormGradV3: dx, d_scale, d_offset."""
    dy, x = dyv.astype(np.float64), xv.astype(np.float64)
    axes = _bn_axes(fmt)
    inv = 1.0 / np.sqrt(np.asarray(var, np.float64) + eps)
    xn = (x - _per_channel(np.asarray(mean, np.float64), fmt)) * _per_channel(inv, fmt)
    sum_dy, sum_dy_xn = dy.sum(axis=axes), (dy * xn).sum(axis=axes)
    g = dy
    if training:
        n = x.size // len(scale)
        g = dy - _per_channel(sum_dy / n, fmt) - xn * _per_channel(sum_dy_xn / n, fmt)
    return {"grad": _per_channel(scale * inv, fmt) * g, "grad:1": sum_dy_xn, "grad:2": sum_dy}


def _fused_bn_grad(xshape, fmt, eps, training):
    def fn(b):
        c = xshape[3 if fmt == "NHWC" else 1]
        xv, dyv = normal(b.rng, xshape, 2.0) + 1.0, normal(b.rng, xshape)
        scale, offset = uniform(b.rng, [c], 0.5, 1.5), normal(b.rng, [c], 0.3)
        x, dy = b.ph("x", xv), b.ph("dy", dyv)
        if training:  # the batch statistics from the forward op, as TensorFlow's gradient reads them
            fwd = tf.raw_ops.FusedBatchNormV3(
                x=x, scale=const(scale, "scale"), offset=const(offset, "offset"),
                mean=const(np.zeros([0], np.float32), "mean"),
                variance=const(np.zeros([0], np.float32), "variance"), epsilon=eps,
                data_format=fmt, is_training=True, name="forward")
            mean, var, reserve = fwd[3], fwd[4], fwd[5]
            axes = _bn_axes(fmt)
            mean_v, var_v = xv.astype(np.float64).mean(axis=axes), xv.astype(np.float64).var(axis=axes)
        else:
            mean_v, var_v = normal(b.rng, [c], 0.5), uniform(b.rng, [c], 0.25, 2.0)
            mean, var = const(mean_v, "mean"), const(var_v, "variance")
            reserve = const(np.zeros([0], np.float32), "reserve")
        tf.raw_ops.FusedBatchNormGradV3(
            y_backprop=dy, x=x, scale=const(scale, "scale_for_grad"), reserve_space_1=mean,
            reserve_space_2=var, reserve_space_3=reserve, epsilon=eps, data_format=fmt,
            is_training=training, name="grad")
        b.fetch("grad", "grad:1", "grad:2")
        b.ref = lambda: _bn_grad_ref(dyv, xv, scale, mean_v, var_v, eps, fmt, training)
    return fn


BN_GRAD_TOL = Tol(1e-4, 2e-5,
    "Batch norm gradient: per-channel sums of dy and dy * x^ over ~100 float32 elements "
    "(|sums| up to ~30, summation order differs: a few ulp of the sums) and, in training, "
    "dx = scale * rsqrt(var + eps) * (dy - sum(dy) / n - x^ * sum(dy * x^) / n), which "
    "cancels (its terms are ~1, the result can be ~1e-2); rtol 1e-4, atol 2e-5.")
simple_case("fused_batch_norm_grad_v3_training_nhwc_f32",
            "FusedBatchNormGradV3 is_training=True NHWC float32[2, 4, 5, 3] of a training "
            "FusedBatchNormV3's batch mean and variance (outputs 3, 4, 5), epsilon 0.001; fetches "
            "x, scale and offset backprops",
            _fused_bn_grad([2, 4, 5, 3], "NHWC", 0.001, True), tol=BN_GRAD_TOL)
simple_case("fused_batch_norm_grad_v3_training_nchw_f32",
            "FusedBatchNormGradV3 is_training=True NCHW float32[2, 3, 4, 5] of a training "
            "FusedBatchNormV3's batch statistics, epsilon 1e-5; fetches the three backprops",
            _fused_bn_grad([2, 3, 4, 5], "NCHW", 1e-5, True), tol=BN_GRAD_TOL)
simple_case("fused_batch_norm_grad_v3_inference_nhwc_f32",
            "FusedBatchNormGradV3 is_training=False NHWC float32[2, 4, 5, 3] with Const mean "
            "and variance, epsilon 0.001; fetches the three backprops",
            _fused_bn_grad([2, 4, 5, 3], "NHWC", 0.001, False), tol=BN_GRAD_TOL)

# ----------------------------- SparseSoftmaxCrossEntropyWithLogits ---------


def _sparse_xent(tlab):
    def fn(b):
        logits = normal(b.rng, [4, 5], 2.0)
        logits[0] += 100.0  # large logits: needs the max subtraction
        lab = np.asarray([0, 4, 2, 2], tlab)
        f, l = b.ph("logits", logits, "batch"), b.ph("labels", lab, "batch")
        tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=f, labels=l, name="xent")
        b.fetch("xent", "xent:1")

        def ref():
            lsm = _softmax64(logits, True)
            oh = np.eye(5)[lab]
            return {"xent": -np.sum(oh * lsm, axis=1), "xent:1": np.exp(lsm) - oh}
        b.ref = ref
    return fn


simple_case("sparse_softmax_xent_i32_f32",
            "SparseSoftmaxCrossEntropyWithLogits float32[4, 5] logits (row 0 ~ +100), int32 "
            "labels [4]; fetches loss (xent) and backprop (xent:1)", _sparse_xent(np.int32),
            tol=ACCUM)
simple_case("sparse_softmax_xent_i64_f32",
            "SparseSoftmaxCrossEntropyWithLogits float32[4, 5] logits, int64 labels [4]; "
            "fetches loss (xent) and backprop (xent:1)", _sparse_xent(np.int64), tol=ACCUM)

# ----------------------------- Einsum --------------------------------------


def _einsum(equation, shapes):
    def fn(b):
        vals = [normal(b.rng, s) for s in shapes]
        xs = [b.ph("x%d" % i, v) for i, v in enumerate(vals)]
        tf.raw_ops.Einsum(inputs=xs, equation=equation, name="y")
        b.fetch("y")
        b.ref = lambda: {"y": np.einsum(equation, *[v.astype(np.float64) for v in vals])}
    return fn


for _name, _eq, _shapes, _note in [
        ("einsum_mha_scores_f32", "BTNH,BSNH->BNTS", [[2, 3, 2, 4], [2, 5, 2, 4]],
         " (Keras 3 MultiHeadAttention attention scores)"),
        ("einsum_mha_context_f32", "BNTS,BSNH->BTNH", [[2, 2, 3, 5], [2, 5, 2, 4]],
         " (Keras 3 MultiHeadAttention attention output)"),
        ("einsum_matmul_f32", "ij,jk->ik", [[3, 4], [4, 5]], ""),
        ("einsum_bmm_f32", "bij,bjk->bik", [[2, 3, 4], [2, 4, 5]], ""),
        ("einsum_bhqd_f32", "bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]], ""),
        ("einsum_dense_qkv_f32", "abc,cde->abde", [[2, 3, 4], [4, 2, 3]],
         " (Keras EinsumDense query/key/value projection; Keras 3 lowers it to "
         "BatchMatMulV2, tf.keras 2 writes Einsum)"),
        ("einsum_dense_out_f32", "abcd,cde->abe", [[2, 3, 2, 3], [2, 3, 4]],
         " (Keras EinsumDense attention output projection)")]:
    simple_case(_name, "Einsum '%s' float32 %s%s" % (
        _eq, " and ".join(str(s) for s in _shapes), _note), _einsum(_eq, _shapes), tol=ACCUM)


# --------------------------------------------------------------------------
# Running and writing.
# --------------------------------------------------------------------------
def session_config():
    return tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)


def tensor_key(name):
    return name[:-2] if name.endswith(":0") else name


def run_graph_def(graph_def, feeds, fetches):
    """Import the serialized GraphDef into a fresh graph and run it."""
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=g, config=session_config()) as sess:
        feed_dict = {g.get_tensor_by_name(k if ":" in k else k + ":0"): v
                     for k, v in feeds.items()}
        outs = sess.run([g.get_tensor_by_name(f if ":" in f else f + ":0") for f in fetches],
                        feed_dict=feed_dict)
    return dict(zip(fetches, outs))


def file_name(key):
    return key.replace(":", "_").replace("/", "_")


def storable(v):
    """(array to save, original dtype name if widened)."""
    v = np.asarray(v)
    if v.dtype == np.float16 or v.dtype == BF16:
        return v.astype(np.float32), v.dtype.name
    return v, None


def check_ref(case, outputs, ref):
    """Max abs error of TF's outputs vs a float64 reference (rounded to the
    output dtype); raises if outside the case's tolerance."""
    errs = {}
    for k, r in ref.items():
        got = np.asarray(outputs[k])
        want = np.asarray(r, np.float64).astype(got.dtype).astype(np.float64)
        got = got.astype(np.float64)
        assert got.shape == want.shape, (case.name, k, got.shape, want.shape)
        nan_ok = np.array_equal(np.isnan(got), np.isnan(want))
        inf_ok = (np.array_equal(np.isinf(got), np.isinf(want))
                  and np.array_equal(got[np.isinf(got)], want[np.isinf(want)]))
        fin = np.isfinite(got) & np.isfinite(want)
        diff = np.abs(got[fin] - want[fin])
        err = float(diff.max()) if diff.size else 0.0
        bad = diff > case.tol.atol + case.tol.rtol * np.abs(want[fin])
        if not (nan_ok and inf_ok) or bad.any():
            raise AssertionError(
                "%s/%s: TensorFlow is outside the case tolerance of the float64 "
                "reference (nan_ok=%s inf_ok=%s max abs err %g)\nTF:  %s\nref: %s"
                % (case.name, k, nan_ok, inf_ok, err, got.reshape(-1), want.reshape(-1)))
        errs[tensor_key(k)] = float("%.3g" % err)
    return errs


def make_case(case):
    rng = np.random.RandomState(zlib.crc32(case.name.encode()) & 0x7FFFFFFF)
    b = Builder(rng)
    g = tf.Graph()
    with g.as_default():
        case.build(b)
    graph_def = b.graph_def or g.as_graph_def()
    outputs = run_graph_def(graph_def, b.feeds, b.fetches)
    extra = {}
    if b.ref is not None:
        extra["observed_max_abs_err_vs_float64"] = check_ref(case, outputs, b.ref())

    d = os.path.join(OPS_DIR, case.name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "model.pb"), "wb") as f:
        f.write(graph_def.SerializeToString(deterministic=True))
    feed_files = {}
    for k, v in b.feeds.items():
        fn = "%s.npy" % file_name(k)
        np.save(os.path.join(d, fn), np.asarray(v), allow_pickle=False)
        feed_files[tensor_key(k)] = fn
    fetch_files, widened = {}, {}
    for k in b.fetches:
        key = tensor_key(k)
        fn = "out_%s.npy" % file_name(key)
        v, orig = storable(outputs[k])
        if orig:
            widened[key] = orig
        np.save(os.path.join(d, fn), v, allow_pickle=False)
        fetch_files[key] = fn

    ops = sorted(set(n.op for n in graph_def.node))
    manifest = {
        "model": "model.pb",
        "feeds": feed_files,
        "fetches": fetch_files,
        "tolerance": {"rtol": case.tol.rtol, "atol": case.tol.atol},
        "tolerance_note": case.tol.note,
        "description": case.desc,
        "graph_ops": ops,
        "generator": "tests/data/make_op_fixtures.py (tensorflow %s)" % tf.__version__,
    }
    if widened:
        manifest["fetch_dtypes"] = widened
        manifest["fetch_dtypes_note"] = (
            "These fetches are %s in TensorFlow; their expected values are "
            "stored widened to float32 (exact)." % "/".join(sorted(set(widened.values()))))
    manifest.update(extra)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return manifest


README_BEGIN = "<!-- ops fixtures (make_op_fixtures.py): begin -->"
README_END = "<!-- ops fixtures (make_op_fixtures.py): end -->"
README_SECTION = """\
## ops/ — per-op fixtures

`ops/<case>/` holds one tiny TF1-style graph per op/dtype/attribute combination
(%d cases; index in `ops/README.md`), generated by `make_op_fixtures.py` with
real TensorFlow: `model.pb` (binary GraphDef, no pbtxt), the fed inputs
`<feed>.npy`, TensorFlow's outputs `out_<fetch>.npy` (fetch `node:i` ->
`out_node_i.npy`) and `manifest.json` (same keys as above plus `description`,
`graph_ops`, and `fetch_dtypes` when a float16/bfloat16 output is stored
widened to float32). Tolerances are per case: 0/0 for integer, bool, shape and
exactly rounded ops, looser for transcendental, accumulating, f16 and bf16
ops; `tolerance_note` says why. Regenerate (all, or only some cases) with:

```sh
/tmp/tfvenv/bin/python tests/data/make_op_fixtures.py [CASE...]
```

`make_fixtures.py` rewrites this file but keeps this section.
"""


def write_readmes(manifests):
    # The TensorFlow versions that made the cases (each manifest names its own).
    versions = sorted({m["generator"].split("tensorflow ")[-1].rstrip(")") for m in manifests.values()})
    lines = ["# Per-op fixtures", "",
             "Generated by `../make_op_fixtures.py` (TensorFlow %s); do not edit by "
             "hand. One folder per case; see `../README.md`." % ", ".join(versions), "",
             "| case | description | ops in graph | rtol | atol |",
             "|---|---|---|---|---|"]
    for c in CASES:
        m = manifests[c.name]
        lines.append("| `%s` | %s | %s | %g | %g |" % (
            c.name, c.desc.replace("|", "\\|"), ", ".join(m["graph_ops"]),
            c.tol.rtol, c.tol.atol))
    with open(os.path.join(OPS_DIR, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    path = os.path.join(HERE, "README.md")
    text = open(path).read() if os.path.exists(path) else ""
    section = "%s\n%s%s\n" % (README_BEGIN, README_SECTION % len(CASES), README_END)
    if README_BEGIN in text and README_END in text:
        head, rest = text.split(README_BEGIN, 1)
        tail = rest.split(README_END, 1)[1].lstrip("\n")
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


def load_manifest(name):
    with open(os.path.join(OPS_DIR, name, "manifest.json")) as f:
        return json.load(f)


def main(argv):
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    names = [c.name for c in CASES]
    unknown = [a for a in argv if a not in names]
    if unknown:
        print("make_op_fixtures.py: unknown case(s): %s" % ", ".join(unknown), file=sys.stderr)
        return 2
    selected = [c for c in CASES if not argv or c.name in argv]
    os.makedirs(OPS_DIR, exist_ok=True)
    if not argv:  # full run: drop folders of cases that no longer exist
        for entry in sorted(os.listdir(OPS_DIR)):
            p = os.path.join(OPS_DIR, entry)
            if (entry not in names and os.path.isdir(p)
                    and os.path.exists(os.path.join(p, "manifest.json"))):
                shutil.rmtree(p)
    manifests = {}
    for c in selected:
        manifests[c.name] = make_case(c)
        print("%-40s %s" % (c.name, c.desc))
    for c in CASES:
        if c.name not in manifests:
            manifests[c.name] = load_manifest(c.name)
    write_readmes(manifests)
    print("%d cases written to %s" % (len(selected), OPS_DIR))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
