#!/usr/bin/env python3
"""Fits the polynomial of the CPU backend's exp (backends/cpu/fast_exp.cc).

exp(x) = 2^k e^r with k = floor(x log2 e) and r = x - k ln 2 in [0, ln 2) (a little beyond
where the product's rounding makes k one too large or small): e^r ~ P(r), P of degree 6
with P(0) = 1 exactly (so that exp(0) = 1 and exp(k ln 2) are powers of two). Lawson's
iteration (weighted least squares converging to the minimax) on the relative error.
Prints the coefficients and the worst relative error, in float64 and evaluated in float32
by Horner's rule with fused multiply-adds as the kernel does. Needs numpy.
"""
import numpy as np

DEGREE = 6
r = np.linspace(-1e-5, np.log(2) + 1e-5, 40001)
y = np.exp(r)
# P(r) = 1 + r (c1 + c2 r + ...): fit the c's to (e^r - 1) / r, weighted by r / e^r
a = np.stack([r**i for i in range(1, DEGREE + 1)], axis=1)
w = np.ones_like(r)
for _ in range(200):
    sol = np.linalg.lstsq(a * (w / y)[:, None], (y - 1) * w / y, rcond=None)[0]
    err = np.abs(1 + a @ sol - y) / y
    w *= err / err.max() + 1e-3  # Lawson: weight grows where the error is large
    w /= w.sum()
c = np.concatenate([[1.0], sol])
f64 = np.abs(np.polyval(c[::-1], r) - y) / y


def horner32(coefficients, v):
    """Horner's rule in float32 with fused multiply-adds (the product is exact in float64)."""
    acc = np.float32(coefficients[-1]) * np.ones_like(v)
    for k in coefficients[-2::-1]:
        acc = (acc.astype(np.float64) * v.astype(np.float64) + np.float64(np.float32(k))).astype(np.float32)
    return acc


r32 = r.astype(np.float32)
f32 = np.abs(horner32(c, r32).astype(np.float64) - np.exp(r32.astype(np.float64))) / np.exp(r32.astype(np.float64))
print("P:", ", ".join("%.9e" % k for k in c))
print("max relative error: %.2g (float64), %.2g (float32, %.2f ulp)" % (f64.max(), f32.max(), f32.max() / 2**-24))
