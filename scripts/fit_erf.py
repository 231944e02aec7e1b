#!/usr/bin/env python3
"""Fits the rational approximation of erf that jit/elemental.cc emits.

erf(x) ~ x * P(x^2) / Q(x^2) on [0, 4] (erf is odd; |x| > 4 is +-1 in float32), with P of
degree 6 and Q of degree 5, Q(0) = 1: linear least squares on the relative error,
reweighted by the previous Q until it settles (Loeb's iteration). Prints the
coefficients and the worst relative error, in float64 and evaluated in float32 by
Horner's rule as the kernel does. Needs numpy and scipy (bench/peers/.venv has both).
"""
import numpy as np
from scipy.special import erf

x = np.concatenate([np.geomspace(1e-6, 1e-4, 200), np.linspace(1e-4, 4.0, 20000)])
y, t = erf(x), x * x
NP, NQ = 7, 5
q_prev = np.ones_like(t)
for _ in range(12):
    a = np.hstack([(x * t**i)[:, None] for i in range(NP)] + [(-y * t**j)[:, None] for j in range(1, NQ + 1)])
    w = 1 / (y * q_prev)
    sol = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)[0]
    p, q = sol[:NP], np.concatenate([[1.0], sol[NP:]])
    q_prev = np.polyval(q[::-1], t)
f64 = np.abs(x * np.polyval(p[::-1], t) / q_prev - y) / y


def horner32(c, v):
    r = np.float32(c[-1])
    for a in c[-2::-1]:
        r = np.float32(r * v + np.float32(a))
    return r


x32 = x.astype(np.float32)
t32 = x32 * x32
f32 = np.abs((x32 * horner32(p, t32) / horner32(q, t32)).astype(np.float64) - erf(x32.astype(np.float64)))
f32 /= erf(x32.astype(np.float64))
print("P:", ", ".join("%.9e" % c for c in p))
print("Q:", ", ".join("%.9e" % c for c in q))
print("max relative error: %.2g (float64), %.2g (float32)" % (f64.max(), f32.max()))
