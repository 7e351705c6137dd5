// siftoverlay's drawing on device frames: one block per keypoint, its threads
// spread over the mark's bounding box, each pixel tested with on_mark()
// (sift-draw.h), then, for 4:2:0 frames, over the chroma samples of that box
// (chroma_on_mark). Overlapping marks write the same colour, so the order of
// writes does not matter.
#include "sift-draw.h"

#include "common/cuda_check.h"

namespace gstsift {

__global__ void draw_marks_kernel(DrawTarget target, const KeypointMark *marks) {
  const KeypointMark m = marks[blockIdx.x];
  const int reach = mark_reach(m, target.thickness);
  const int x0 = max(0, m.cx - reach), x1 = min(target.width - 1, m.cx + reach);
  const int y0 = max(0, m.cy - reach), y1 = min(target.height - 1, m.cy + reach);
  if (x0 > x1 || y0 > y1) return;
  const int w = x1 - x0 + 1, n = w * (y1 - y0 + 1);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int x = x0 + i % w, y = y0 + i / w;
    if (!on_mark(m, x, y, target.thickness)) continue;
    uint8_t *p = target.data + y * target.pitch + size_t(x) * target.pixel_bytes;
    for (int c = 0; c < target.pixel_bytes; ++c) p[c] = target.colour[c];
  }
  if (!target.u) return;
  const int cx0 = x0 / 2, cy0 = y0 / 2, cw = x1 / 2 - cx0 + 1, cn = cw * (y1 / 2 - cy0 + 1);
  for (int i = threadIdx.x; i < cn; i += blockDim.x) {
    const int cx = cx0 + i % cw, cy = cy0 + i / cw;
    if (!chroma_on_mark(m, cx, cy, target.thickness, target.width, target.height)) continue;
    uint8_t *u = target.u + cy * target.u_pitch + size_t(cx) * target.chroma_step;
    uint8_t *v = target.v + cy * target.v_pitch + size_t(cx) * target.chroma_step;
    for (int b = 0; b < target.chroma_bytes; ++b) u[b] = target.chroma[0][b], v[b] = target.chroma[1][b];
  }
}

void draw_marks_async(const DrawTarget &target, const KeypointMark *marks, int count, cs::StreamHandle stream) {
  if (count <= 0 || target.width <= 0 || target.height <= 0) return;
  draw_marks_kernel<<<count, 256, 0, reinterpret_cast<cudaStream_t>(stream)>>>(target, marks);
  cs::check_launch("draw_marks_kernel");
}

}  // namespace gstsift
