#!/usr/bin/env python3
"""gst-cuda-sensing's results in Python: numpy views of what the elements
attach to their buffers, for applications that take buffers from an appsink
(python3-gst-1.0). Language bindings cannot read the C struct metas; with
`custom-meta=true` the elements attach the same data as GstCustomMetas,
which these functions read:

    sift / siftdescribe custom-meta=true   sift_features(buffer)
    siftmatch custom-meta=true             sift_matches(buffer)
    sarsim / cphdsrc custom-meta=true      sar_pulses(buffer)   (kept through sarpulsecompress)
    sarbackproject custom-meta=true        sar_image_grid(buffer)
Buffers themselves:
    sarbackproject's images                sar_image(buffer, caps)  complex64 (rows, columns)
    envisrc blocks, hsiclassify's maps     hsi_lines(buffer)        the scene lines they hold

Each returns None where the buffer has no such data. The arrays are copies,
valid after the buffer is gone.

Run as a program, it prints what each buffer of a pipeline carries (the
pipeline ends in an appsink this adds):

    cudasensing_meta.py 'sarsim num-pulses=256 custom-meta=true ! sarpulsecompress'
"""
import sys
from typing import NamedTuple, Optional

import numpy as np

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

# A keypoint as OpenCV's cv::KeyPoint (featuresink's binary records too).
KEYPOINT = np.dtype([("x", "=f4"), ("y", "=f4"), ("size", "=f4"), ("angle", "=f4"), ("response", "=f4"),
                     ("octave", "=i4"), ("class_id", "=i4")])
# A match: indices into this frame's keypoints and the reference's.
MATCH = np.dtype([("query_index", "=u4"), ("train_index", "=u4"), ("distance", "=f4"), ("inlier", "=i4")])
# A pulse's parameters (GstSarPulseParameters: CPHD's per-vector parameters).
PULSE = np.dtype([
    ("tx_time", "=f8"), ("tx_pos", "=f8", 3), ("tx_vel", "=f8", 3),
    ("rcv_time", "=f8"), ("rcv_pos", "=f8", 3), ("rcv_vel", "=f8", 3),
    ("srp_pos", "=f8", 3), ("amp_sf", "=f8"), ("a_fdop", "=f8"), ("a_frr1", "=f8"), ("a_frr2", "=f8"),
    ("fx1", "=f8"), ("fx2", "=f8"), ("fxn1", "=f8"), ("fxn2", "=f8"),
    ("toa1", "=f8"), ("toa2", "=f8"), ("toae1", "=f8"), ("toae2", "=f8"),
    ("td_tropo_srp", "=f8"), ("td_iono_srp", "=f8"), ("sc0", "=f8"), ("scss", "=f8"), ("signal", "=i8"),
    ("tx_acx", "=f8", 3), ("tx_acy", "=f8", 3), ("tx_eb", "=f8", 2),
    ("rcv_acx", "=f8", 3), ("rcv_acy", "=f8", 3), ("rcv_eb", "=f8", 2),
])
_DESCRIPTOR_TYPES = {"opencv": np.uint8, "float": np.float32, "rootsift": np.float32}


class Features(NamedTuple):
    keypoints: np.ndarray    # KEYPOINT records, strongest first
    descriptors: np.ndarray  # (count, length): uint8 for "opencv", float32 for "float" and "rootsift"
    descriptor_format: str
    image_size: tuple        # (width, height) of the frame the keypoints are in


class Matches(NamedTuple):
    matches: np.ndarray               # MATCH records
    train_count: int                  # keypoints of the reference (previous frame or reference)
    homography: Optional[np.ndarray]  # 3x3, train ~ H * query, when one was found


class Pulses(NamedTuple):
    first_pulse: int       # the block's first pulse in the collection
    parameters: np.ndarray  # PULSE records, one per pulse (row) of the block


class ImageGrid(NamedTuple):
    width: int
    height: int
    spacing: tuple          # (x, y) metres per pixel
    centre: np.ndarray      # ECF metres of pixel (width // 2, height // 2)
    origin: np.ndarray      # ECF metres of pixel (0, 0)
    axis_x: np.ndarray      # ECF unit vector of increasing column (east)
    axis_y: np.ndarray      # ECF unit vector of increasing row (south)
    pulses: tuple           # (first, last) pulse index of the aperture
    pulse_times: tuple      # (first, last) transmit time, s

    def ecf(self, column, row):
        """ECF position (metres) of a pixel, fractional positions allowed."""
        return (self.origin + np.multiply.outer(np.asarray(column, float) * self.spacing[0], self.axis_x)
                + np.multiply.outer(np.asarray(row, float) * self.spacing[1], self.axis_y))


def _structure(buffer, name):
    meta = buffer.get_custom_meta(name)
    return meta.get_structure() if meta is not None else None


def _records(structure, field, dtype):
    return np.frombuffer(structure.get_value(field).get_data(), dtype=dtype).copy()


def _vector(structure, field):
    return np.array(list(structure.get_value(field)), dtype=float)


def sift_features(buffer) -> Optional[Features]:
    s = _structure(buffer, "GstSiftFeatures")
    if s is None:
        return None
    keypoints = _records(s, "keypoints", KEYPOINT)
    form = s.get_value("descriptor-format")
    descriptors = _records(s, "descriptors", _DESCRIPTOR_TYPES[form]).reshape(len(keypoints),
                                                                              s.get_value("descriptor-length"))
    return Features(keypoints, descriptors, form, (s.get_value("image-width"), s.get_value("image-height")))


def sift_matches(buffer) -> Optional[Matches]:
    s = _structure(buffer, "GstSiftMatches")
    if s is None:
        return None
    homography = _vector(s, "homography").reshape(3, 3) if s.get_value("has-homography") else None
    return Matches(_records(s, "matches", MATCH), s.get_value("train-count"), homography)


def sar_pulses(buffer) -> Optional[Pulses]:
    s = _structure(buffer, "GstSarPulses")
    if s is None:
        return None
    if s.get_value("record-size") != PULSE.itemsize:
        raise ValueError("pulse records of %d bytes, this reader knows %d" % (s.get_value("record-size"),
                                                                             PULSE.itemsize))
    return Pulses(s.get_value("first-pulse"), _records(s, "pulses", PULSE))


def sar_image_grid(buffer) -> Optional[ImageGrid]:
    s = _structure(buffer, "GstSarImageGrid")
    if s is None:
        return None
    return ImageGrid(s.get_value("width"), s.get_value("height"), (s.get_value("spacing-x"), s.get_value("spacing-y")),
                     _vector(s, "centre"), _vector(s, "origin"), _vector(s, "axis-x"), _vector(s, "axis-y"),
                     (s.get_value("first-pulse"), s.get_value("last-pulse")),
                     (s.get_value("first-pulse-time"), s.get_value("last-pulse-time")))


def sar_image(buffer, caps) -> Optional[np.ndarray]:
    s = caps.get_structure(0)
    if s.get_name() != "application/x-sar-image" or s.get_value("format") != "CF32":
        return None
    ok, info = buffer.map(Gst.MapFlags.READ)
    if not ok:
        raise RuntimeError("cannot map the image")
    try:
        return np.frombuffer(info.data, dtype=np.complex64).reshape(s.get_value("height"),
                                                                    s.get_value("width")).copy()
    finally:
        buffer.unmap(info)


def hsi_lines(buffer) -> Optional[range]:
    if buffer.offset == Gst.BUFFER_OFFSET_NONE or buffer.offset_end == Gst.BUFFER_OFFSET_NONE:
        return None
    return range(buffer.offset, buffer.offset_end)


def describe(buffer, caps) -> str:
    """One line on what `buffer` carries."""
    parts = []
    f = sift_features(buffer)
    if f is not None:
        parts.append("%d keypoints, %s descriptors %s" % (len(f.keypoints), f.descriptor_format,
                                                         f.descriptors.shape))
    m = sift_matches(buffer)
    if m is not None:
        parts.append("%d matches (%d inliers) of %d reference keypoints%s" % (
            len(m.matches), int(np.count_nonzero(m.matches["inlier"])), m.train_count,
            ", homography" if m.homography is not None else ""))
    p = sar_pulses(buffer)
    if p is not None:
        parts.append("pulses %d..%d, tx_time %.6f..%.6f s" % (
            p.first_pulse, p.first_pulse + len(p.parameters) - 1, p.parameters["tx_time"][0],
            p.parameters["tx_time"][-1]))
    g = sar_image_grid(buffer)
    if g is not None:
        parts.append("%dx%d image grid at %.3f x %.3f m of pulses %d..%d" % (g.width, g.height, g.spacing[0],
                                                                             g.spacing[1], *g.pulses))
    lines = hsi_lines(buffer)
    if lines is not None and caps.get_structure(0).get_name() == "application/x-hyperspectral":
        parts.append("lines %d..%d" % (lines.start, lines.stop - 1))
    elif lines is not None and not parts:
        parts.append("offsets %d..%d (lines of a class map)" % (lines.start, lines.stop - 1))
    return "; ".join(parts) if parts else "nothing this reader knows"


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    Gst.init(None)
    pipeline = Gst.parse_launch(argv[1] + " ! appsink name=cudasensing_meta_sink sync=false")
    sink = pipeline.get_by_name("cudasensing_meta_sink")
    pipeline.set_state(Gst.State.PLAYING)
    count = 0
    while True:
        sample = sink.emit("pull-sample")
        if sample is None:
            break
        buffer = sample.get_buffer()
        pts = "none" if buffer.pts == Gst.CLOCK_TIME_NONE else "%.6f s" % (buffer.pts / Gst.SECOND)
        print("buffer %d (pts %s): %s" % (count, pts, describe(buffer, sample.get_caps())))
        count += 1
    message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if message is not None:
        error, debug = message.parse_error()
        sys.stderr.write("error: %s\n%s\n" % (error.message, debug or ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
