#!/usr/bin/python3
"""The elements from a Python application: numpy arrays in through appsrc,
results out of appsink buffers through tools/cudasensing_meta.py, each
checked against what the input says it must be.

    pipelines/python-appsink.py [BUILD_DIR=build] [OUT_DIR=out/python-appsink]

- SIFT: a picture (scikit-image's astronaut) shifted by a known step each
  frame, pushed as GRAY8 numpy frames; sift and siftmatch attach their
  results (custom-meta=true). The homography must be the shift, and each
  match's distance the one between its two descriptors.
- SAR: simulated point targets; the pulses are read after pulse compression,
  the image and its grid after backprojection. Each target's peak must lie
  where the grid puts its position, within a pixel.
- Hyperspectral: a synthetic scene (tools/synthetic_hsi.py) classified in
  blocks of lines; the class map is put together from each block's lines.
  The blocks must cover the scene once, and the pure pixels agree with the
  scene's truth.
Writes OUT_DIR/summary.txt; exits 1 when a check fails. Runs on the CPU
backends where there is no GPU.
"""
import os
import subprocess
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tools"))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build"))
out = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "out", "python-appsink"))
os.makedirs(out, exist_ok=True)
os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "plugins") + (
    ":" + os.environ["GST_PLUGIN_PATH"] if os.environ.get("GST_PLUGIN_PATH") else "")
os.environ.setdefault("GST_REGISTRY", os.path.join(build, "python-appsink-registry.bin"))

import gi  # noqa: E402

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

import cudasensing_meta as csm  # noqa: E402

Gst.init(None)
failures = []
summary = []


def check(ok, what):
    summary.append(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


def run(description, frames=(), caps=None):
    """Runs `description` (appsrc "src" optional, appsink(s) named "out*"),
    pushing `frames` (numpy arrays) with `caps`; returns {sink name: [(buffer, caps)]}."""
    pipeline = Gst.parse_launch(description)
    sinks = [e for e in pipeline.iterate_sinks() if e.get_name().startswith("out")]
    pipeline.set_state(Gst.State.PLAYING)
    src = pipeline.get_by_name("src")
    if src is not None:
        src.set_property("caps", Gst.Caps.from_string(caps))
        src.set_property("format", Gst.Format.TIME)
        for i, frame in enumerate(frames):
            buffer = Gst.Buffer.new_wrapped(np.ascontiguousarray(frame).tobytes())
            buffer.pts, buffer.duration = i * Gst.SECOND // 30, Gst.SECOND // 30
            src.emit("push-buffer", buffer)
        src.emit("end-of-stream")
    results = {}
    for sink in sinks:
        got = []
        while (sample := sink.emit("pull-sample")) is not None:
            got.append((sample.get_buffer(), sample.get_caps()))
        results[sink.get_name()] = got
    error = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if error is not None:
        raise RuntimeError("%s: %s" % (description, error.parse_error()[0].message))
    return results


def sift_part():
    from skimage import color, data
    picture = (color.rgb2gray(data.astronaut()) * 255).astype(np.uint8)
    step = np.array([3, 2])  # the view moves by (x, y) pixels a frame: content moves by -step
    width, height, n = 320, 240, 6
    frames = [picture[40 + k * step[1]:40 + k * step[1] + height, 60 + k * step[0]:60 + k * step[0] + width]
              for k in range(n)]
    caps = "video/x-raw,format=GRAY8,width=%d,height=%d,framerate=30/1" % (width, height)
    got = run("appsrc name=src ! sift custom-meta=true ! "
              "siftmatch custom-meta=true homography=true ! appsink name=out sync=false", frames, caps)["out"]
    check(len(got) == n, "SIFT: %d frames out of %d" % (len(got), n))
    previous = None
    worst_shift, worst_distance, matched = 0.0, 0.0, 0
    for k, (buffer, _) in enumerate(got):
        features, matches = csm.sift_features(buffer), csm.sift_matches(buffer)
        if features is None or matches is None:
            check(False, "SIFT: frame %d has its features and matches" % k)
            return
        if previous is not None:
            m = matches.matches
            matched += len(m)
            query = features.descriptors[m["query_index"]].astype(np.float32)
            train = previous.descriptors[m["train_index"]].astype(np.float32)
            worst_distance = max(worst_distance, float(np.max(np.abs(np.linalg.norm(query - train, axis=1)
                                                                     - m["distance"]))))
            if matches.homography is None:
                check(False, "SIFT: frame %d has a homography" % k)
                return
            h = matches.homography / matches.homography[2, 2]
            # train ~ H * query: a point of this frame lies `step` further in the previous one
            worst_shift = max(worst_shift, float(np.max(np.abs(h[:2, 2] - step))),
                              float(np.max(np.abs(h[:2, :2] - np.eye(2))) * width))
        previous = features
    summary.append("SIFT: %d keypoints in the first frame, %d matches over %d frame pairs" % (
        len(csm.sift_features(got[0][0]).keypoints), matched, n - 1))
    check(worst_shift < 0.5, "SIFT: homographies within %.3f px of the frames' shift" % worst_shift)
    check(worst_distance < 1e-3 * 512, "SIFT: match distances equal their descriptors' (worst %.2g)" % worst_distance)


def sar_part():
    targets = [(0.1, 0.1), (12.1, -9.1), (-18.1, 13.9)]  # off the pixel grid
    target_text = ";".join("%g,%g,0,1" % t for t in targets)
    got = run('sarsim num-pulses=384 prf=250 pulses-per-buffer=64 custom-meta=true targets="%s" ! '
              "sarpulsecompress window=taylor upsample=4 ! tee name=t "
              # the pulses' sink holds the first block until the image is made (preroll): its queue unbounded
              "t. ! queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! appsink name=out_pulses sync=false "
              "t. ! queue ! sarbackproject width=160 height=160 pixel-spacing=0.25 custom-meta=true ! "
              "appsink name=out_image sync=false" % target_text)
    pulses = [csm.sar_pulses(b) for b, _ in got["out_pulses"]]
    check(all(p is not None for p in pulses) and
          [p.first_pulse for p in pulses] == list(range(0, 384, 64)),
          "SAR: %d blocks of pulses, contiguous from 0" % len(pulses))
    track = np.concatenate([p.parameters["tx_pos"] for p in pulses])
    summary.append("SAR: platform moved %.1f m over %d pulses" % (np.linalg.norm(track[-1] - track[0]), len(track)))
    (buffer, caps), = got["out_image"]
    image, grid = csm.sar_image(buffer, caps), csm.sar_image_grid(buffer)
    check(grid is not None and image.shape == (grid.height, grid.width), "SAR: an image with its grid")
    check(grid.pulses == (0, 383), "SAR: the image's aperture is pulses %d..%d" % grid.pulses)
    # Targets are metres east and north of the scene centre: in the image's
    # plane, along axis_x (east) and against axis_y (south).
    magnitude = np.abs(image)
    worst = 0.0
    for east, north in targets:
        where = grid.centre + east * grid.axis_x - north * grid.axis_y
        column = np.dot(where - grid.origin, grid.axis_x) / grid.spacing[0]
        row = np.dot(where - grid.origin, grid.axis_y) / grid.spacing[1]
        c0, r0 = int(round(column)), int(round(row))
        window = magnitude[r0 - 4:r0 + 5, c0 - 4:c0 + 5]
        r, c = np.unravel_index(np.argmax(window), window.shape)
        worst = max(worst, float(np.hypot(r0 - 4 + r - row, c0 - 4 + c - column)))
    check(worst <= 1.0, "SAR: every target's peak within %.2f px of its grid position" % worst)


def hsi_part():
    scene = os.path.join(out, "hsi")
    subprocess.run([sys.executable, os.path.join(root, "tools", "synthetic_hsi.py"), scene], check=True,
                   stdout=subprocess.DEVNULL)
    got = run("envisrc location=%s lines-per-buffer=37 ! hsiclassify library=%s ! appsink name=out sync=false" % (
        os.path.join(scene, "scene.hdr"), os.path.join(scene, "materials.hdr")))["out"]
    truth = np.fromfile(os.path.join(scene, "truth.u8"), np.uint8)
    caps = got[0][1].get_structure(0)
    width = caps.get_value("width")
    lines = truth.size // width
    classes = np.zeros((lines, width), np.uint8)
    covered = np.zeros(lines, int)
    for buffer, _ in got:
        block = csm.hsi_lines(buffer)
        ok, info = buffer.map(Gst.MapFlags.READ)
        classes[block.start:block.stop] = np.frombuffer(info.data, np.uint8).reshape(len(block), width)
        buffer.unmap(info)
        covered[block.start:block.stop] += 1
    check(np.all(covered == 1), "HSI: %d blocks cover the scene's %d lines once" % (len(got), lines))
    pure = truth > 0
    agreement = 100.0 * np.mean(classes.reshape(-1)[pure] == truth[pure])
    check(agreement > 99.0, "HSI: %.2f%% of pure pixels in their true class" % agreement)


for part in (sift_part, sar_part, hsi_part):
    try:
        part()
    except Exception as e:  # a part that cannot run is a failure, the others still run
        check(False, "%s: %s" % (part.__name__, e))
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write("\n".join(summary) + "\n")
print("\n".join(summary))
sys.exit(1 if failures else 0)
