#!/usr/bin/env python3
"""Fits the rational approximation behind the erfc that jit/elemental.cc emits.

erfc(a) = e^(-a^2) R(a) for a >= 0, R = erfcx, the scaled complementary error function:
R(a) ~ P(a) / Q(a) on [0, 10] (beyond 10, erfc is below float32's smallest subnormal), P of
degree 4 and Q of degree 5 (so P / Q falls as 1 / (a sqrt(pi)) does), Q(0) = 1: linear
least squares on the relative error, reweighted by the previous Q until it settles
(Loeb's iteration). Prints the coefficients and the worst relative error, in float64 and
evaluated in float32 by Horner's rule with fused multiply-adds, as the kernel does.
Needs numpy and scipy (bench/peers/.venv has both).
"""
import numpy as np
from scipy.special import erfcx

a = np.linspace(0.0, 10.0, 40001)
y = erfcx(a)
NP, NQ = 4, 5
q_prev = np.ones_like(a)
for _ in range(20):
    m = np.hstack([(a**i)[:, None] for i in range(NP + 1)] + [(-y * a**j)[:, None] for j in range(1, NQ + 1)])
    w = 1 / (y * q_prev)
    sol = np.linalg.lstsq(m * w[:, None], y * w, rcond=None)[0]
    p, q = sol[:NP + 1], np.concatenate([[1.0], sol[NP + 1:]])
    q_prev = np.polyval(q[::-1], a)
f64 = np.abs(np.polyval(p[::-1], a) / q_prev - y) / y


def horner32(c, v):
    """Horner's rule in float32 with fused multiply-adds (the product is exact in float64)."""
    r = np.float32(c[-1]) * np.ones_like(v)
    for k in c[-2::-1]:
        r = (r.astype(np.float64) * v.astype(np.float64) + np.float64(np.float32(k))).astype(np.float32)
    return r


a32 = a.astype(np.float32)
exact = erfcx(a32.astype(np.float64))
f32 = np.abs((horner32(p, a32) / horner32(q, a32)).astype(np.float64) - exact) / exact
print("P:", ", ".join("%.9e" % c for c in p))
print("Q:", ", ".join("%.9e" % c for c in q))
print("max relative error: %.2g (float64), %.2g (float32)" % (f64.max(), f32.max()))
