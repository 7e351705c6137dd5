#!/usr/bin/python3
"""Coefficients of the double-precision phasor in kernels/sar/backprojection_math.h.

sin(2 pi r) = r P(r^2) and cos(2 pi r) = Q(r^2) for |r| <= 1/8 (an eighth of a
turn; the phasor reduces its argument to that range exactly). Least-squares
fits, weighted by the inverse of the function, at Chebyshev nodes in u = r^2,
computed with 60 significant digits; then the largest relative error of the
polynomials with their coefficients rounded to double, evaluated exactly.
Prints the two coefficient lists (lowest power first; the header takes the
sine's, then the cosine's) and those errors.

Needs python3-mpmath (Debian). Usage: tools/fit_turn_polynomials.py
"""
import mpmath as mp

mp.mp.dps = 60
RANGE = mp.mpf(1) / 8
NODES = 400


def sine_over_r(u):
    return mp.sin(2 * mp.pi * mp.sqrt(u)) / mp.sqrt(u) if u > 0 else 2 * mp.pi


def cosine(u):
    return mp.cos(2 * mp.pi * mp.sqrt(u))


def fit(function, degree):
    top = RANGE * RANGE
    nodes = [top / 2 * (1 - mp.cos(mp.pi * (k + mp.mpf(1) / 2) / NODES)) for k in range(NODES)]
    a = mp.matrix(NODES, degree + 1)
    b = mp.matrix(NODES, 1)
    for i, u in enumerate(nodes):
        value = function(u)
        weight = 1 / abs(value)
        for j in range(degree + 1):
            a[i, j] = u**j * weight
        b[i] = value * weight
    solution = mp.lu_solve(a.T * a, a.T * b)
    return [float(solution[j]) for j in range(degree + 1)]


def largest_relative_error(function, coefficients, samples=4001):
    worst = mp.mpf(0)
    for k in range(samples):
        r = RANGE * k / (samples - 1)
        u = r * r
        value = mp.mpf(0)
        for c in reversed(coefficients):
            value = value * u + mp.mpf(c)
        worst = max(worst, abs(value - function(u)) / abs(function(u)))
    return float(worst)


for name, function, degree in (("sine", sine_over_r, 6), ("cosine", cosine, 7)):
    coefficients = fit(function, degree)
    print("%s (%d terms), relative error %.3g:" % (name, degree + 1, largest_relative_error(function, coefficients)))
    print("  " + ", ".join(repr(c) for c in coefficients))
