#!/usr/bin/python3
"""Jasper Ridge (jasperRidge2_R198.mat) -> ENVI files for the hyperspectral elements.

Writes into OUT_DIR:
  jasper_ridge.img/.hdr       the 100 x 100 x 198 scene, uint16 (data type 12), BSQ
  jasper_class_means.sli/.hdr ENVI spectral library: the mean spectrum of each class
                              (pixels labelled by the argmax of the abundances A)
  jasper_endmembers.sli/.hdr  ENVI spectral library: the file's endmembers M
  jasper_labels.img/.hdr      ENVI classification: argmax of A + 1 (0 unused)

The .mat file keeps pixels as the columns of Y in MATLAB (column-major) order,
so pixel p is at line p % rows, sample p // rows. The file carries no
wavelengths (only which of AVIRIS' 224 bands were kept, `SlectBands`), so the
cube and the libraries have none either: the classifier then takes library
channel i for cube band i. Class names come from the file's `cood` cell
("1-tree" -> "tree").

Usage: jasper_to_envi.py [--force] JASPER_MAT OUT_DIR
Existing outputs are kept unless --force is given. Needs numpy and scipy.
"""
import argparse
import os
import sys

import numpy as np
import scipy.io

BASE_NAMES = ("jasper_ridge", "jasper_class_means", "jasper_endmembers", "jasper_labels")
# Colours of the classes in the classification header (class 0 first).
CLASS_COLOURS = ((0, 0, 0), (34, 139, 34), (30, 90, 220), (170, 120, 60), (200, 200, 200))


def fail(message):
    sys.stderr.write("jasper_to_envi: %s\n" % message)
    sys.exit(1)


def field(mat, name, path):
    if name not in mat:
        fail("%s: no variable '%s' (is this jasperRidge2_R198.mat?)" % (path, name))
    return mat[name]


def envi_list(values):
    return "{" + ", ".join(str(v) for v in values) + "}"


def write_header(path, lines):
    with open(path, "w") as out:
        out.write("ENVI\n")
        for key, value in lines:
            out.write("%s = %s\n" % (key, value))


def write_library(base, spectra, names, description, band_note):
    """spectra: channels x entries."""
    data = np.ascontiguousarray(spectra.T.astype("<f4"))
    data.tofile(base + ".sli")
    write_header(base + ".hdr", [
        ("description", "{%s}" % description),
        ("samples", spectra.shape[0]),
        ("lines", spectra.shape[1]),
        ("bands", 1),
        ("header offset", 0),
        ("file type", "ENVI Spectral Library"),
        ("data type", 4),
        ("interleave", "bsq"),
        ("byte order", 0),
        ("spectra names", envi_list(names)),
        ("band names", band_note),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mat", help="jasperRidge2_R198.mat")
    parser.add_argument("out_dir", help="folder for the ENVI files (created)")
    parser.add_argument("--force", action="store_true", help="rewrite existing outputs")
    args = parser.parse_args()

    os.makedirs(args.out_dir, exist_ok=True)
    bases = [os.path.join(args.out_dir, b) for b in BASE_NAMES]
    if not args.force and all(os.path.exists(b + ".hdr") for b in bases):
        print("jasper_to_envi: %s already holds the ENVI files (--force rewrites them)" % args.out_dir)
        return
    try:
        mat = scipy.io.loadmat(args.mat)
    except (OSError, ValueError, NotImplementedError) as e:
        fail("cannot read %s: %s" % (args.mat, e))

    Y = field(mat, "Y", args.mat)
    A = field(mat, "A", args.mat)
    M = field(mat, "M", args.mat)
    rows = int(np.squeeze(field(mat, "nRow", args.mat)))
    cols = int(np.squeeze(field(mat, "nCol", args.mat)))
    bands, pixels = Y.shape
    if pixels != rows * cols:
        fail("%s: Y has %d pixels, nRow x nCol = %d x %d" % (args.mat, pixels, rows, cols))
    if A.shape[1] != pixels or M.shape[0] != bands or M.shape[1] != A.shape[0]:
        fail("%s: shapes do not agree: Y %s, A %s, M %s" % (args.mat, Y.shape, A.shape, M.shape))
    if Y.min() < 0 or Y.max() > 65535 or not np.all(Y == np.round(Y)):
        fail("%s: Y is not unsigned 16-bit counts" % args.mat)
    classes = A.shape[0]
    names = ["class %d" % (k + 1) for k in range(classes)]
    if "cood" in mat and mat["cood"].size == classes:
        names = [str(np.squeeze(c)).split("-", 1)[-1] for c in mat["cood"].ravel()]
    kept = [int(b) for b in np.ravel(mat.get("SlectBands", np.arange(1, bands + 1)))]
    band_note = envi_list("AVIRIS band %d" % b for b in kept)

    # Scene: BSQ planes, line-major within a plane.
    cube = np.stack([Y[b].reshape(cols, rows).T for b in range(bands)])
    cube.astype("<u2").tofile(bases[0] + ".img")
    write_header(bases[0] + ".hdr", [
        ("description", "{Jasper Ridge, AVIRIS, %d of 224 bands (jasperRidge2_R198.mat)}" % bands),
        ("samples", cols),
        ("lines", rows),
        ("bands", bands),
        ("header offset", 0),
        ("file type", "ENVI Standard"),
        ("data type", 12),
        ("interleave", "bsq"),
        ("byte order", 0),
        ("band names", band_note),
    ])

    labels = A.argmax(axis=0)
    means = np.stack([Y[:, labels == k].astype(np.float64).mean(axis=1) for k in range(classes)], axis=1)
    write_library(bases[1], means, names, "Jasper Ridge class means (argmax of the abundances)", band_note)
    write_library(bases[2], M, names, "Jasper Ridge endmembers M", band_note)

    label_image = (labels + 1).reshape(cols, rows).T.astype(np.uint8)
    label_image.tofile(bases[3] + ".img")
    colours = [c for k in range(classes + 1) for c in CLASS_COLOURS[k % len(CLASS_COLOURS)]]
    write_header(bases[3] + ".hdr", [
        ("description", "{Jasper Ridge labels: argmax of the abundances A, 1-based}"),
        ("samples", cols),
        ("lines", rows),
        ("bands", 1),
        ("header offset", 0),
        ("file type", "ENVI Classification"),
        ("data type", 1),
        ("interleave", "bsq"),
        ("byte order", 0),
        ("classes", classes + 1),
        ("class names", envi_list(["Unclassified"] + names)),
        ("class lookup", envi_list(colours)),
    ])
    print("jasper_to_envi: %d x %d x %d scene, %d classes (%s) -> %s" %
          (cols, rows, bands, classes, ", ".join(names), args.out_dir))


if __name__ == "__main__":
    main()
