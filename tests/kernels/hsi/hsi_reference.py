#!/usr/bin/python3
"""Reference computations for the hyperspectral kernel tests.

Run by the GoogleTest suite with Debian's /usr/bin/python3 (python3-numpy,
python3-spectral). Inputs and outputs are raw little-endian arrays whose
shapes are passed on the command line; everything is float64 unless named.

  sam-spectral CUBE_HDR LIBRARY_HDR ENTRIES_I32 BANDS_I32 OUT_ANGLES OUT_CLASSES
      Spectral Python: reads the cube and the library with spectral.envi,
      resamples the chosen library entries to the chosen cube bands with
      numpy.interp, and classifies with spectral.spectral_angles + argmin.
  scores METHOD PIXELS_F32 N BANDS REFS_F32 K SELECTED_I32 WAVELENGTHS OUT_SCORES OUT_CLASSES
      The published formulas in plain numpy (float64) for sam, sid,
      correlation, bandfit and euclidean.
  resample METHOD LIBRARY_F32 ENTRIES CHANNELS LIBRARY_WL TARGET_WL TARGETS TARGET_FWHM OUT
      linear: numpy.interp (NaN outside the library's range) over the
      library's channels sorted by wavelength;
      gaussian: numerical integration of the interpolated library against
      each target band's Gaussian response over centre +- 1.5 FWHM.
"""
import sys

import numpy as np


def read(path, dtype, shape):
    return np.fromfile(path, dtype=np.dtype(dtype).newbyteorder('<')).reshape(shape)


def write(path, array, dtype):
    np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder('<')).tofile(path)


def nanometres(values, units):
    units = (units or '').strip().lower()
    if units in ('micrometers', 'micrometres', 'microns', 'micron', 'um'):
        return np.asarray(values, float) * 1000.0
    if units in ('nanometers', 'nanometres', 'nm'):
        return np.asarray(values, float)
    values = np.asarray(values, float)
    return values * 1000.0 if values.max() < 100 else values


def sorted_by_wavelength(wavelengths, spectra):
    """numpy.interp needs increasing wavelengths; AVIRIS libraries repeat a
    stretch where spectrometers overlap."""
    order = np.argsort(wavelengths, kind='stable')
    wavelengths = np.asarray(wavelengths)[order]
    if (np.diff(wavelengths) <= 0).any():
        raise SystemExit('repeated library wavelengths: not handled by this reference')
    return wavelengths, spectra[..., order]


def sam_spectral(cube_hdr, library_hdr, entries_path, bands_path, out_angles, out_classes):
    import spectral
    import spectral.io.envi as envi
    img = envi.open(cube_hdr)
    # spectral_angles on float32 data sums the pixel norms in float32 (errors
    # up to ~1e-4 rad on these tiles), so the cube goes in as float64.
    cube = np.asarray(img.load(), dtype=np.float64)
    lib = envi.open(library_hdr)
    spectra = np.asarray(lib.spectra, dtype=np.float64)
    ignore = lib.metadata.get('data ignore value')
    if ignore is not None:
        ignore = float(ignore)
        missing = lib.spectra == np.float32(ignore)
        if abs(ignore) >= 1e20:
            # As our reader: a huge sentinel also marks samples of its sign
            # beyond its square root (convolution blends it into neighbours).
            missing |= np.sign(ignore) * spectra >= np.sqrt(abs(ignore))
        spectra[missing] = np.nan
    lib_nm, spectra = sorted_by_wavelength(nanometres(lib.bands.centers, lib.metadata.get('wavelength units')),
                                           spectra)
    cube_nm = nanometres(img.bands.centers, img.metadata.get('wavelength units'))
    entries = np.fromfile(entries_path, dtype='<i4')
    bands = np.fromfile(bands_path, dtype='<i4')
    refs = np.array([np.interp(cube_nm[bands], lib_nm, spectra[e], left=np.nan, right=np.nan) for e in entries])
    if not np.isfinite(refs).all():
        raise SystemExit('a chosen entry has no data at a chosen band')
    angles = spectral.spectral_angles(cube[:, :, bands], refs)
    classes = np.argmin(angles, axis=2)
    write(out_angles, angles.reshape(-1, len(entries)), 'f8')
    write(out_classes, classes.reshape(-1), 'i4')


SID_FLOOR = float(np.float32(1e-12))


def correlation(a, b):
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid='ignore', divide='ignore'):
        return (a @ b.T) / np.outer(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1))


def continuum_removed(s, t):
    start, end = s[:, :1], s[:, -1:]
    with np.errstate(invalid='ignore', divide='ignore'):
        removed = s / (start + (end - start) * t[None, :])
    removed[~((start[:, 0] > 0) & (end[:, 0] > 0))] = np.nan
    return removed


def method_scores(method, x, r, t):
    if method == 'sam':
        with np.errstate(invalid='ignore', divide='ignore'):
            c = (x @ r.T) / np.outer(np.linalg.norm(x, axis=1), np.linalg.norm(r, axis=1))
        return np.arccos(np.clip(c, -1, 1)), False
    if method == 'sid':
        xf = np.where(x < SID_FLOOR, SID_FLOOR, x)
        rf = np.where(r < SID_FLOOR, SID_FLOOR, r)
        p = xf / xf.sum(axis=1, keepdims=True)
        q = rf / rf.sum(axis=1, keepdims=True)
        d = p[:, None, :] - q[None, :, :]
        return (d * (np.log(p)[:, None, :] - np.log(q)[None, :, :])).sum(axis=2), False
    if method == 'correlation':
        return np.clip(correlation(x, r), -1, 1), True
    if method == 'bandfit':
        return np.clip(correlation(continuum_removed(x, t), continuum_removed(r, t)), -1, 1), True
    if method == 'euclidean':
        return np.sqrt(((x[:, None, :] - r[None, :, :]) ** 2).sum(axis=2)), False
    raise SystemExit('unknown method ' + method)


def scores(method, pixels_path, n, bands, refs_path, k, selected_path, wavelengths_path, out_scores, out_classes):
    n, bands, k = int(n), int(bands), int(k)
    selected = np.fromfile(selected_path, dtype='<i4')
    x = read(pixels_path, 'f4', (n, bands))[:, selected].astype(np.float64)
    r = read(refs_path, 'f4', (k, bands))[:, selected].astype(np.float64)
    wl = read(wavelengths_path, 'f8', (bands,))[selected]
    t = (wl - wl[0]) / (wl[-1] - wl[0])
    s, higher_better = method_scores(method, x, r, t)
    s[~np.isfinite(x).all(axis=1)] = np.nan  # no data
    classes = np.full(n, -1, dtype=np.int32)
    valid = ~np.isnan(s).all(axis=1)
    if valid.any():
        pick = np.nanargmax if higher_better else np.nanargmin
        classes[valid] = pick(s[valid], axis=1)
    write(out_scores, s, 'f8')
    write(out_classes, classes, 'i4')


def resample(method, library_path, entries, channels, library_wl_path, target_wl_path, targets, target_fwhm_path,
             out_path):
    entries, channels, targets = int(entries), int(channels), int(targets)
    lib = read(library_path, 'f4', (entries, channels)).astype(np.float64)
    wl, lib = sorted_by_wavelength(read(library_wl_path, 'f8', (channels,)), lib)
    target = read(target_wl_path, 'f8', (targets,))
    out = np.full((entries, targets), np.nan)
    # numpy 2 renamed trapz to trapezoid (Debian 12 has numpy 1.24, which only knows trapz).
    trapezoid = getattr(np, 'trapezoid', None) or np.trapz
    if method == 'linear':
        for e in range(entries):
            out[e] = np.interp(target, wl, lib[e], left=np.nan, right=np.nan)
    elif method == 'gaussian':
        fwhm = read(target_fwhm_path, 'f8', (targets,))
        for i in range(targets):
            lo, hi = target[i] - 1.5 * fwhm[i], target[i] + 1.5 * fwhm[i]
            if lo < wl[0] or hi > wl[-1]:
                continue
            grid = np.linspace(lo, hi, 6001)
            sigma = fwhm[i] / (2 * np.sqrt(2 * np.log(2)))
            g = np.exp(-0.5 * ((grid - target[i]) / sigma) ** 2)
            values = np.array([np.interp(grid, wl, lib[e]) for e in range(entries)])
            out[:, i] = trapezoid(values * g[None, :], grid, axis=1) / trapezoid(g, grid)
    else:
        raise SystemExit('unknown resampling ' + method)
    write(out_path, out, 'f8')


def main(argv):
    commands = {'sam-spectral': sam_spectral, 'scores': scores, 'resample': resample}
    if len(argv) < 2 or argv[1] not in commands:
        raise SystemExit(__doc__)
    commands[argv[1]](*argv[2:])


if __name__ == '__main__':
    main(sys.argv)
