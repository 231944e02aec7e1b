"""A TensorFlow GraphDef as a JAX function: the same math, op for op, for jax.jit.

The graph comes as the JSON that peers.py exports (nodes with their data inputs and
plain attrs) and an .npz of its constants, so this module needs no TensorFlow. Shapes
are static: values computed from shapes (Shape, StridedSlice of it, Pack, ...) stay
NumPy arrays at trace time, as XLA's constant folding would make them.
"""

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import erf, erfc

import exported_graph


def _xp(*values):
    return np if all(isinstance(v, (np.ndarray, np.generic, int, float)) for v in values) else jnp


def _static(v):
    return np.asarray(v).tolist()


def _binary(f):
    return lambda n, x, y: f(_xp(x, y), x, y)


def _reduce(name):
    def op(n, x, axes):
        axes = tuple(int(a) % max(x.ndim, 1) for a in np.atleast_1d(_static(axes)))
        return getattr(_xp(x), name)(x, axis=axes, keepdims=bool(n["attrs"].get("keep_dims", False)))
    return op


def _matmul(n, a, b):
    if n["attrs"].get("transpose_a"):
        a = a.T
    if n["attrs"].get("transpose_b"):
        b = b.T
    return jnp.matmul(a, b)


def _batch_matmul(n, a, b):
    if n["attrs"].get("adj_x"):
        a = jnp.swapaxes(a, -1, -2)
    if n["attrs"].get("adj_y"):
        b = jnp.swapaxes(b, -1, -2)
    return jnp.matmul(a, b)


def _conv2d(n, x, w):
    a = n["attrs"]
    strides, dilations = a["strides"], a.get("dilations", [1, 1, 1, 1])
    if a.get("data_format", "NHWC") != "NHWC" or a["padding"] not in ("SAME", "VALID"):
        raise NotImplementedError("Conv2D: NHWC with SAME or VALID padding only")
    return lax.conv_general_dilated(x, w, window_strides=strides[1:3], padding=a["padding"],
                                    rhs_dilation=dilations[1:3], dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _depthwise_conv2d(n, x, w):
    a = n["attrs"]
    if a.get("data_format", "NHWC") != "NHWC" or a["padding"] not in ("SAME", "VALID"):
        raise NotImplementedError("DepthwiseConv2dNative: NHWC with SAME or VALID padding only")
    kh, kw, c, m = w.shape
    return lax.conv_general_dilated(x, w.reshape(kh, kw, 1, c * m), window_strides=a["strides"][1:3],
                                    padding=a["padding"], rhs_dilation=a.get("dilations", [1, 1, 1, 1])[1:3],
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=c)


def _pad(n, x, paddings):
    return jnp.pad(x, [tuple(p) for p in _static(paddings)])


def _max_pool(n, x):
    a = n["attrs"]
    return lax.reduce_window(x, -jnp.inf, lax.max, tuple(a["ksize"]), tuple(a["strides"]), a["padding"])


def _strided_slice(n, x, begin, end, strides):
    a = n["attrs"]
    if a.get("ellipsis_mask", 0) or a.get("new_axis_mask", 0):
        raise NotImplementedError("StridedSlice: ellipsis and new-axis masks")
    index, shrink = [], []
    for i, (b, e, s) in enumerate(zip(_static(begin), _static(end), _static(strides))):
        b = None if a.get("begin_mask", 0) >> i & 1 else b
        e = None if a.get("end_mask", 0) >> i & 1 else e
        if a.get("shrink_axis_mask", 0) >> i & 1:
            index.append(b)
            continue
        index.append(slice(b, e, s))
    return x[tuple(index)]


def _slice(n, x, begin, size):
    index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(_static(begin), _static(size)))
    return x[index]


def _softmax_xent(n, logits, labels):
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(labels * log_p, axis=-1), jnp.exp(log_p) - labels


OPS = {
    "Identity": lambda n, x: x,
    "StopGradient": lambda n, x: x,
    "AddV2": _binary(lambda xp, x, y: x + y),
    "Add": _binary(lambda xp, x, y: x + y),
    "Sub": _binary(lambda xp, x, y: x - y),
    "Mul": _binary(lambda xp, x, y: x * y),
    "RealDiv": _binary(lambda xp, x, y: x / y),
    "Pow": _binary(lambda xp, x, y: xp.power(x, y)),
    "Maximum": _binary(lambda xp, x, y: xp.maximum(x, y)),
    "SquaredDifference": _binary(lambda xp, x, y: (x - y) * (x - y)),
    "BiasAdd": lambda n, x, b: x + b,
    "Neg": lambda n, x: -x,
    "Square": lambda n, x: x * x,
    "Exp": lambda n, x: jnp.exp(x),
    "Log": lambda n, x: jnp.log(x),
    "Log1p": lambda n, x: jnp.log1p(x),
    "Expm1": lambda n, x: jnp.expm1(x),
    "Tanh": lambda n, x: jnp.tanh(x),
    "Sigmoid": lambda n, x: jax.nn.sigmoid(x),
    "Softplus": lambda n, x: jax.nn.softplus(x),
    "Elu": lambda n, x: jax.nn.elu(x),
    "Selu": lambda n, x: jax.nn.selu(x),
    "Erf": lambda n, x: erf(x),
    "Erfc": lambda n, x: erfc(x),
    "Rsqrt": lambda n, x: lax.rsqrt(x),
    "Relu": lambda n, x: jnp.maximum(x, 0),
    "Relu6": lambda n, x: jnp.clip(x, 0, 6),
    "Softmax": lambda n, x: jax.nn.softmax(x, axis=-1),
    "Sum": _reduce("sum"),
    "Mean": _reduce("mean"),
    "Max": _reduce("max"),
    "Prod": _reduce("prod"),
    "MatMul": _matmul,
    "BatchMatMulV2": _batch_matmul,
    "Einsum": lambda n, *xs: jnp.einsum(n["attrs"]["equation"], *xs),
    "Conv2D": _conv2d,
    "DepthwiseConv2dNative": _depthwise_conv2d,
    "Pad": _pad,
    "MaxPool": _max_pool,
    "Reshape": lambda n, x, shape: _xp(x).reshape(x, tuple(_static(shape))),
    "Transpose": lambda n, x, perm: _xp(x).transpose(x, tuple(_static(perm))),
    "Squeeze": lambda n, x: _xp(x).squeeze(x, axis=tuple(n["attrs"].get("squeeze_dims", [])) or None),
    "ConcatV2": lambda n, *xs: _xp(*xs[:-1]).concatenate(xs[:-1], axis=int(_static(xs[-1]))),
    "Pack": lambda n, *xs: _xp(*xs).stack(xs, axis=n["attrs"].get("axis", 0)),
    "GatherV2": lambda n, x, i, axis: _xp(x, i).take(x, i, axis=int(_static(axis))),
    "Shape": lambda n, x: np.array(x.shape, dtype=n["attrs"].get("out_type", "int32")),
    "StridedSlice": _strided_slice,
    "Slice": _slice,
    "SoftmaxCrossEntropyWithLogits": _softmax_xent,
    "FusedBatchNormV3": exported_graph.fused_batch_norm,
    "FusedBatchNormGradV3": exported_graph.fused_batch_norm_grad,
}


def make_function(graph, consts, inputs, outputs):
    """The graph as fn(*inputs) -> tuple(outputs); `inputs` and `outputs` are names."""
    return exported_graph.make_function(graph, {k: np.asarray(v) for k, v in consts.items()}, inputs, outputs, OPS, "JAX")
