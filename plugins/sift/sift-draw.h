// How siftoverlay marks a keypoint: a circle of the keypoint's size around
// it and a radius along its angle (OpenCV's DRAW_RICH_KEYPOINTS). The mark's
// geometry is computed once here for both paths: the CPU path draws it with
// OpenCV's cv::circle / cv::line, the GPU path (sift-draw.cu) tests each
// pixel with on_mark(), which the CPU tests compare with OpenCV's drawing.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/cuda_runtime.h"
#include "common/hd.h"

namespace gstsift {

// In pixels of the frame drawn on: integer centre and radius (as OpenCV's
// drawing functions take them) and the end of the angle line.
struct KeypointMark {
  int cx, cy, radius;
  int tip_x, tip_y;
  int has_line;  // 0 when the keypoint has no angle (-1)
};

// Whether a keypoint (of a frame scaled by (sx, sy) from this one) has a
// mark to draw: finite, of a size and place that integer pixel arithmetic
// holds (a meta attached by other code may carry anything).
inline bool keypoint_drawable(float x, float y, float size, double sx, double sy) {
  constexpr double kLimit = 1 << 24;  // pixels, far past any frame
  const double px = x * sx, py = y * sy, radius = 0.5 * size * std::sqrt(sx * sy);
  return std::isfinite(px) && std::isfinite(py) && std::isfinite(radius) && std::fabs(px) < kLimit &&
         std::fabs(py) < kLimit && radius < kLimit;
}

// The mark of a keypoint found in a frame scaled by (sx, sy) from this one.
inline KeypointMark keypoint_mark(float x, float y, float size, float angle, double sx, double sy) {
  const double px = x * sx, py = y * sy;
  const double radius = std::fmax(1.0, 0.5 * size * std::sqrt(sx * sy));
  KeypointMark m{int(std::lrint(px)), int(std::lrint(py)), int(std::lrint(radius)), 0, 0, angle >= 0 ? 1 : 0};
  if (m.has_line) {
    const double a = angle * M_PI / 180.0;
    m.tip_x = int(std::lrint(px + radius * std::cos(a)));
    m.tip_y = int(std::lrint(py + radius * std::sin(a)));
  }
  return m;
}

// Whether pixel (px, py) belongs to the mark drawn `thickness` pixels wide:
// its centre lies within half the thickness (at least half a pixel) of the
// circle or of the angle line.
CS_HD bool on_mark(const KeypointMark &m, int px, int py, int thickness) {
  const float half = thickness > 1 ? 0.5f * float(thickness) : 0.5f;
  const float dx = float(px - m.cx), dy = float(py - m.cy);
  if (fabsf(sqrtf(dx * dx + dy * dy) - float(m.radius)) <= half) return true;
  if (!m.has_line) return false;
  const float ex = float(m.tip_x - m.cx), ey = float(m.tip_y - m.cy), length2 = ex * ex + ey * ey;
  float t = length2 > 0.f ? (dx * ex + dy * ey) / length2 : 0.f;
  t = t < 0.f ? 0.f : (t > 1.f ? 1.f : t);
  const float ox = dx - t * ex, oy = dy - t * ey;
  return ox * ox + oy * oy <= half * half;
}

// Pixels a mark can touch: its centre +- this many.
CS_HD int mark_reach(const KeypointMark &m, int thickness) { return m.radius + thickness / 2 + 1; }

// Whether chroma sample (cx, cy) of a frame subsampled 2 x 2 (NV12, I420, P010)
// takes the mark's colour: when any of the up to four pixels it covers
// inside the width x height frame lies on the mark, so that a line one
// pixel wide keeps its colour wherever it runs.
CS_HD bool chroma_on_mark(const KeypointMark &m, int cx, int cy, int thickness, int width, int height) {
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int x = 2 * cx + dx, y = 2 * cy + dy;
      if (x < width && y < height && on_mark(m, x, y, thickness)) return true;
    }
  return false;
}

// A frame in device memory and the colour to draw with: its first plane
// (packed pixels or luma), and for 4:2:0 frames the two chroma planes.
struct DrawTarget {
  uint8_t *data;
  size_t pitch;
  int width, height;
  int pixel_bytes;     // 4 (RGBA, BGRA, BGRx), 1 (GRAY8, the luma of NV12 and I420) or 2 (the luma of P010)
  uint8_t colour[4];   // the bytes of one pixel of the first plane
  int thickness;
  // 4:2:0 chroma (null for the other formats): U at u[cy * u_pitch + cx *
  // chroma_step], V likewise (NV12: both in the interleaved plane, step 2;
  // I420: their own planes, step 1; P010: interleaved, step 4), each sample
  // chroma_bytes long (1, or 2 for P010).
  uint8_t *u, *v;
  size_t u_pitch, v_pitch;
  int chroma_step, chroma_bytes;
  uint8_t chroma[2][2];  // U's bytes, V's bytes
};

// Enqueues the drawing of `count` marks (device memory) into the frame on
// `stream`. Throws cs::CudaError (also in a build without CUDA).
void draw_marks_async(const DrawTarget &target, const KeypointMark *marks, int count, cs::StreamHandle stream);

}  // namespace gstsift
