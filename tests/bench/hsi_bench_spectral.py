#!/usr/bin/python3
"""Times Spectral Python's spectral.spectral_angles (+ argmin, the SAM class map)
on a cube of hsi_bench's size, for the GPU-vs-Spectral-Python ratio.

Prints `seconds_per_cube S`. spectral_angles works pixel by pixel (numpy
einsum over the bands), so its time is linear in the lines: with --time-lines
N < --lines it times the first N lines and scales to the whole cube (and
says so); --time-lines 0 times the whole cube.

Usage: hsi_bench_spectral.py [--samples 1024] [--lines 1024] [--bands 224]
                             [--references 64] [--time-lines 128] [--repeats 3]
Needs numpy and Spectral Python (Debian: python3-numpy python3-spectral).
"""
import argparse
import sys
import time

import numpy as np

try:
    import spectral
except ImportError as e:
    sys.stderr.write("Spectral Python is not installed (python3-spectral): %s\n" % e)
    sys.exit(3)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=1024)
    p.add_argument("--lines", type=int, default=1024)
    p.add_argument("--bands", type=int, default=224)
    p.add_argument("--references", type=int, default=64)
    p.add_argument("--time-lines", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    lines = a.lines if a.time_lines <= 0 else min(a.time_lines, a.lines)
    rng = np.random.default_rng(1)
    # Positive spectra like hsi_bench's (the values do not change the time).
    members = (0.2 + 0.5 * rng.random((a.references, 1))
               + 0.1 * np.sin(np.linspace(0, 8, a.bands)[None, :] * rng.random((a.references, 1)) * 3))
    cube = (rng.random((lines, a.samples, a.bands), dtype=np.float32) * 0.05
            + members[rng.integers(0, a.references, (lines, a.samples))].astype(np.float32))
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        classes = np.argmin(spectral.spectral_angles(cube, members), axis=2)
        times.append(time.perf_counter() - t0)
    assert classes.shape == (lines, a.samples)
    best = sorted(times)[len(times) // 2]
    print("spectral %s, numpy %s: spectral_angles + argmin on %d x %d x %d f32 vs %d references: %.3f s (median of %d)"
          % (spectral.__version__, np.__version__, a.samples, lines, a.bands, a.references, best, a.repeats))
    if lines != a.lines:
        print("scaled from %d to %d lines (time is linear in the pixels)" % (lines, a.lines))
    print("seconds_per_cube %.6f" % (best * a.lines / lines))


if __name__ == "__main__":
    main()
