"""A TensorFlow GraphDef as a PyTorch function: the same math, op for op, for torch.compile.

The graph comes as graph_to_jax takes it (exported_graph.py: the JSON peers.py exports,
and its constants).
Float constants become tensors on the device once, when the function is made; integer
constants (axes, shapes, permutations) stay NumPy values, read as Python numbers, so the
function's shapes are static as torch.compile likes them.
"""

import numpy as np
import torch

import exported_graph


def _static(v):
    return np.asarray(v).tolist()


def _axes(x, axes):
    return tuple(int(a) % max(x.dim(), 1) for a in np.atleast_1d(_static(axes)))


def _reduce(name):
    def op(n, x, axes):
        keep = bool(n["attrs"].get("keep_dims", False))
        dims = _axes(x, axes)
        if name == "amax":
            return torch.amax(x, dim=dims, keepdim=keep)
        if name == "prod":
            for d in sorted(dims, reverse=True):
                x = torch.prod(x, dim=d, keepdim=keep)
            return x
        return getattr(torch, name)(x, dim=dims, keepdim=keep)
    return op


def _matmul(n, a, b):
    if n["attrs"].get("transpose_a"):
        a = a.t()
    if n["attrs"].get("transpose_b"):
        b = b.t()
    return a @ b


def _batch_matmul(n, a, b):
    if n["attrs"].get("adj_x"):
        a = a.transpose(-1, -2)
    if n["attrs"].get("adj_y"):
        b = b.transpose(-1, -2)
    return a @ b


def _squeeze(n, x):
    dims = n["attrs"].get("squeeze_dims", [])
    return x.squeeze(tuple(dims)) if dims else x.squeeze()


OPS = {
    "Identity": lambda n, x: x,
    "StopGradient": lambda n, x: x,
    "AddV2": lambda n, x, y: x + y,
    "Add": lambda n, x, y: x + y,
    "Sub": lambda n, x, y: x - y,
    "Mul": lambda n, x, y: x * y,
    "RealDiv": lambda n, x, y: x / y,
    "Maximum": lambda n, x, y: torch.maximum(x, y),
    "SquaredDifference": lambda n, x, y: (x - y) * (x - y),
    "BiasAdd": lambda n, x, b: x + b,
    "Neg": lambda n, x: -x,
    "Square": lambda n, x: x * x,
    "Exp": lambda n, x: torch.exp(x),
    "Log": lambda n, x: torch.log(x),
    "Tanh": lambda n, x: torch.tanh(x),
    "Erf": lambda n, x: torch.erf(x),
    "Erfc": lambda n, x: torch.erfc(x),
    "Rsqrt": lambda n, x: torch.rsqrt(x),
    "Relu": lambda n, x: torch.relu(x),
    "Relu6": lambda n, x: torch.clamp(x, 0, 6),
    "Sigmoid": lambda n, x: torch.sigmoid(x),
    "Softmax": lambda n, x: torch.softmax(x, dim=-1),
    "Sum": _reduce("sum"),
    "Mean": _reduce("mean"),
    "Max": _reduce("amax"),
    "Prod": _reduce("prod"),
    "MatMul": _matmul,
    "BatchMatMulV2": _batch_matmul,
    "Einsum": lambda n, *xs: torch.einsum(n["attrs"]["equation"], *xs),
    "Reshape": lambda n, x, shape: x.reshape(tuple(_static(shape))),
    "Transpose": lambda n, x, perm: x.permute(tuple(_static(perm))),
    "Squeeze": _squeeze,
    "ConcatV2": lambda n, *xs: torch.cat(xs[:-1], dim=int(_static(xs[-1]))),
    "FusedBatchNormV3": exported_graph.fused_batch_norm,
    "FusedBatchNormGradV3": exported_graph.fused_batch_norm_grad,
}


def make_function(graph, consts, inputs, outputs, device):
    """The graph as fn(*inputs) -> tuple(outputs) on `device`; `inputs`, `outputs` are names."""
    # Float constants as tensors on the device, made once; the rest stay NumPy (static).
    constants = {}
    for name, value in consts.items():
        value = np.asarray(value)
        constants[name] = torch.from_numpy(value.copy()).to(device) if value.dtype.kind == "f" else value
    return exported_graph.make_function(graph, constants, inputs, outputs, OPS, "PyTorch")
