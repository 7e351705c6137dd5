#!/usr/bin/env python3
"""A synthetic hyperspectral scene with known classes, for the demo and for
trying the hyperspectral elements without data:

    synthetic_hsi.py OUT_DIR [--lines 200] [--samples 240] [--bands 224] [--seed 1]

Writes, in OUT_DIR:
  scene.img/.hdr      ENVI cube, BIL, int16 reflectance x 10000 (reflectance
                      scale factor 10000), wavelengths and FWHM 400-2500 nm
  materials.sli/.hdr  ENVI spectral library: the five material spectra
                      (reflectance), the references for hsiclassify
  truth.u8            raw uint8 class of every pixel, row-major (1-based in
                      library order; 0 where a pixel is a mixture)

The materials are smooth spectra built from a continuum and a few absorption
bands (vegetation-, soil-, water-, concrete- and roof-like, not measured
spectra). The scene is a grid of blocks of pure material with mixed borders,
a brightness change per block (illumination: a spectral angle method ignores
it) and noise.
"""
import argparse
import os

import numpy as np

MATERIALS = ["vegetation", "soil", "water", "concrete", "roof"]


def material_spectra(wavelengths_nm):
    w = wavelengths_nm / 1000.0  # micrometres

    def band(centre, width, depth):
        return 1.0 - depth * np.exp(-0.5 * ((w - centre) / width) ** 2)

    edge = 1.0 / (1.0 + np.exp(-(w - 0.72) / 0.015))  # the red edge
    vegetation = (0.05 + 0.45 * edge) * band(0.55, 0.03, -0.6) * band(1.45, 0.06, 0.5) * band(1.95, 0.08, 0.6)
    soil = (0.12 + 0.25 * (w - 0.4) / 2.1) * band(1.4, 0.05, 0.15) * band(2.2, 0.04, 0.2)
    water = 0.08 * np.exp(-(w - 0.4) / 0.25) + 0.005
    concrete = 0.30 + 0.05 * np.sin(3.0 * w) * band(2.33, 0.03, 0.1)
    roof = (0.10 + 0.20 * (w > 0.6)) * band(1.7, 0.05, 0.3) * band(2.3, 0.05, 0.3)
    return np.stack([vegetation, soil, water, concrete, roof]).astype(np.float64)


def write_header(path, entries):
    with open(path, "w") as f:
        f.write("ENVI\n")
        for key, value in entries:
            f.write(f"{key} = {value}\n")


def braces(values, fmt="{:.3f}"):
    return "{" + ", ".join(fmt.format(v) for v in values) + "}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--samples", type=int, default=240)
    ap.add_argument("--bands", type=int, default=224)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    rng = np.random.default_rng(a.seed)

    wavelengths = np.linspace(400.0, 2500.0, a.bands)
    fwhm = np.full(a.bands, (2500.0 - 400.0) / (a.bands - 1))
    spectra = material_spectra(wavelengths)  # materials x bands

    # Blocks of 40 x 40 pixels of one material each (random), a brightness
    # per block, and 4-pixel borders mixing neighbouring blocks.
    block = 40
    rows, cols = (a.lines + block - 1) // block, (a.samples + block - 1) // block
    block_class = rng.integers(0, len(MATERIALS), size=(rows, cols))
    block_gain = rng.uniform(0.6, 1.4, size=(rows, cols))
    y, x = np.mgrid[0:a.lines, 0:a.samples]
    by, bx = y // block, x // block
    cls = block_class[by, bx]
    gain = block_gain[by, bx]
    cube = spectra[cls] * gain[..., None]  # lines x samples x bands
    truth = (cls + 1).astype(np.uint8)
    border = ((y % block) < 2) | ((y % block) >= block - 2) | ((x % block) < 2) | ((x % block) >= block - 2)
    neighbour = block_class[np.minimum(by + 1, rows - 1), np.minimum(bx + 1, cols - 1)]
    mix = np.where(border, 0.5, 0.0)[..., None]
    cube = (1.0 - mix) * cube + mix * spectra[neighbour] * gain[..., None]
    truth[border & (neighbour != cls)] = 0
    # Noise of 1% of the signal plus a small floor (a sensor's shot and read noise).
    cube += rng.normal(0.0, 1.0, size=cube.shape) * (0.01 * np.abs(cube) + 0.0003)

    # BIL int16: line, band, sample.
    counts = np.clip(np.rint(cube * 10000.0), -32768, 32767).astype("<i2")
    counts.transpose(0, 2, 1).tofile(os.path.join(a.out_dir, "scene.img"))
    write_header(os.path.join(a.out_dir, "scene.hdr"), [
        ("description", "{synthetic scene of five materials (tools/synthetic_hsi.py)}"),
        ("samples", a.samples), ("lines", a.lines), ("bands", a.bands), ("header offset", 0),
        ("file type", "ENVI Standard"), ("data type", 2), ("interleave", "bil"), ("byte order", 0),
        ("reflectance scale factor", 10000), ("wavelength units", "Nanometers"),
        ("wavelength", braces(wavelengths)), ("fwhm", braces(fwhm))])

    spectra.astype("<f4").tofile(os.path.join(a.out_dir, "materials.sli"))
    write_header(os.path.join(a.out_dir, "materials.hdr"), [
        ("description", "{material spectra of the synthetic scene}"),
        ("samples", a.bands), ("lines", len(MATERIALS)), ("bands", 1), ("header offset", 0),
        ("file type", "ENVI Spectral Library"), ("data type", 4), ("interleave", "bsq"), ("byte order", 0),
        ("wavelength units", "Nanometers"), ("wavelength", braces(wavelengths)), ("fwhm", braces(fwhm)),
        ("spectra names", "{" + ", ".join(MATERIALS) + "}")])

    truth.tofile(os.path.join(a.out_dir, "truth.u8"))


if __name__ == "__main__":
    main()
