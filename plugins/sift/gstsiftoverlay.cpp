/* siftoverlay: draws each frame's SIFT keypoints (GstSiftFeaturesMeta) into
 * the frame, in place: a circle of the keypoint's size (diameter) around it
 * and a radius along its angle, as OpenCV's DRAW_RICH_KEYPOINTS does; frames
 * without keypoints pass untouched (not even mapped). YUV frames (4:2:0 such
 * as NV12, I420, P010 from decoders; 4:2:2 such as YUY2 from cameras; 4:4:4)
 * get the colour as Y'CbCr in the frame's colorimetry and bit depth: luma
 * on the marks' pixels, chroma on every sample that one of them falls in.
 *
 * Where it draws: on the CUDA backend, a frame in the project's device memory
 * (memory:CudaSensing) is drawn on the device, on the element's stream, and
 * stays there, and so is one in nvcodec's memory:CUDAMemory (NVDEC decoders,
 * cudaupload; in place when nvcodec took our CUDA context, else through a
 * device copy in ours, sift-nvcodec.h), so that
 * decode -> sift -> siftoverlay -> encode stays on the GPU; every other frame
 * is drawn on the CPU, in every format sift reads, from a mask that
 * OpenCV's cv::circle / cv::line rasterise (a device frame on the CPU backend
 * is downloaded by mapping it, and uploaded again at its next device use). Both paths draw
 * the same marks (sift-draw.h); the device rasterises them by distance to
 * the circle and the line, so its pixels can differ from OpenCV's by one. */
#include "gstsiftoverlay.h"

#include <gst/video/video.h>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <vector>

#include "common/parameter_upload.h"
#include "gst/cudasensing/gstcsmemory.h"
#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "gstcs-cxx.h"
#include "gstcs-gpu.h"
#include "sift-draw.h"
#include "sift-formats.h"
#include "sift-nvcodec.h"
#include "sift-properties.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_overlay_debug);
#define GST_CAT_DEFAULT gst_sift_overlay_debug

// On the device: packed 4-byte RGB, GRAY8 and 4:2:0 YUV (sift-draw.h). On
// the CPU: every format sift reads.
#define OVERLAY_DEVICE_FORMATS \
  "{ RGBA, BGRA, BGRx, GRAY8, NV12, I420, NV21, YV12, P010_10LE, P012_LE, P016_LE, I420_10LE }"

namespace {
// The CUDA side: a stream, the marks' upload, and a copy of frames in nvcodec's memory.
struct OverlayGpu {
  explicit OverlayGpu(int device) : gpu(device), marks(device) {}
  gstcs::ElementGpu gpu;
  cs::ParameterUploader marks;
  gstcs::DeviceScratch nvcodec_copy{gpu};
  int nvcodec_in_place = -1;  // whether the last frame in nvcodec's memory was drawn in place (logged on change)
};

// The CPU drawing's scratch: the marks rasterised into a mask (even
// dimensions, zero outside the frame and between frames) and its cells
// pooled for subsampled chroma.
struct CpuCanvas {
  cv::Mat mask, pooled, vertical, columns[2];
};
}  // namespace

struct _GstSiftOverlay {
  GstCsBaseTransform parent;
  guint color;  // 0xRRGGBB (object lock)
  int thickness;
  GstVideoInfo info;
  gboolean have_info;
  OverlayGpu *cuda;  // NULL on the CPU backend
  CpuCanvas *canvas;  // on the CPU: the marks' mask and its scratch, kept from frame to frame
};

G_DEFINE_TYPE(GstSiftOverlay, gst_sift_overlay, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(siftoverlay, "siftoverlay", GST_RANK_NONE, GST_TYPE_SIFT_OVERLAY)

enum { PROP_0, PROP_COLOR, PROP_THICKNESS };

// Every memory on both backends: the CPU backend maps device frames (ours
// or, in builds with gstreamer-cuda, nvcodec's memory:CUDAMemory).
#define OVERLAY_CAPS                                                                                   \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, OVERLAY_DEVICE_FORMATS) "; " \
  SIFT_NVCODEC_CAPS(OVERLAY_DEVICE_FORMATS)                                                         \
  GST_VIDEO_CAPS_MAKE(SIFT_FORMATS)
static GstStaticPadTemplate pad_caps_sink =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(OVERLAY_CAPS));
static GstStaticPadTemplate pad_caps_src =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(OVERLAY_CAPS));

// The colour 0xRRGGBB as each component of a frame of `info` stores it
// (R, G, B; Y, Cb, Cr; gray; alpha opaque): the component's sample bytes at
// the format's depth, shift and byte order. YUV takes the colour in the
// frame's matrix and range (BT.601 where the caps name none); gray, the
// BT.601 luma over the full range.
struct ComponentColour {
  int components;
  int sample_bytes[GST_VIDEO_MAX_COMPONENTS];
  uint8_t sample[GST_VIDEO_MAX_COMPONENTS][2];
};

static ComponentColour component_colour(const GstVideoInfo &info, guint rgb) {
  const GstVideoFormatInfo *f = info.finfo;
  const double rn = ((rgb >> 16) & 0xff) / 255.0, gn = ((rgb >> 8) & 0xff) / 255.0, bn = (rgb & 0xff) / 255.0;
  gdouble kr = 0.299, kb = 0.114;
  const bool yuv = GST_VIDEO_FORMAT_INFO_IS_YUV(f);
  if (yuv) gst_video_color_matrix_get_Kr_Kb(info.colorimetry.matrix, &kr, &kb);
  const double luma = kr * rn + (1.0 - kr - kb) * gn + kb * bn;
  gint offset[GST_VIDEO_MAX_COMPONENTS] = {}, scale[GST_VIDEO_MAX_COMPONENTS] = {};
  if (yuv) gst_video_color_range_offsets(info.colorimetry.range, f, offset, scale);  // at the format's depth
  ComponentColour c{};
  c.components = int(GST_VIDEO_FORMAT_INFO_N_COMPONENTS(f));
  for (int k = 0; k < c.components; ++k) {
    const int depth = GST_VIDEO_FORMAT_INFO_DEPTH(f, k), shift = GST_VIDEO_FORMAT_INFO_SHIFT(f, k);
    const long top = (1l << depth) - 1;
    long value = top;  // alpha
    if (k < 3 && GST_VIDEO_FORMAT_INFO_IS_RGB(f)) {
      value = std::lround((k == 0 ? rn : k == 1 ? gn : bn) * double(top));
    } else if (k < 3 && yuv) {
      const double v[3] = {luma, (bn - luma) / (2.0 * (1.0 - kb)), (rn - luma) / (2.0 * (1.0 - kr))};
      value = std::clamp(std::lround(offset[k] + scale[k] * v[k]), 0l, top);
    } else if (k == 0) {  // gray: the BT.601 luma of the 8-bit colour, scaled to the depth
      const double luma8 = 0.299 * ((rgb >> 16) & 0xff) + 0.587 * ((rgb >> 8) & 0xff) + 0.114 * (rgb & 0xff);
      value = std::lround(luma8 * double(top) / 255.0);
    }
    const unsigned stored = unsigned(value) << shift;
    c.sample_bytes[k] = depth + shift > 8 ? 2 : 1;
    for (int i = 0; i < c.sample_bytes[k]; ++i) {
      const int byte = GST_VIDEO_FORMAT_INFO_IS_LE(f) ? i : c.sample_bytes[k] - 1 - i;
      c.sample[k][byte] = uint8_t(stored >> (8 * i));
    }
  }
  return c;
}

// The byte offset of component k in its plane's pixel. GStreamer 1.22 gives
// P010/P012/P016's Cr offset in samples (1), not bytes (2): a plane of
// interleaved chroma alone (NV12, NV21, P010, ...) is therefore placed by the
// pair's order.
static gsize component_offset(const GstVideoInfo &info, int k, int sample_bytes) {
  const GstVideoFormatInfo *f = info.finfo;
  const bool chroma_pair = GST_VIDEO_FORMAT_INFO_IS_YUV(f) && (k == 1 || k == 2) &&
                           GST_VIDEO_FORMAT_INFO_PLANE(f, 1) == GST_VIDEO_FORMAT_INFO_PLANE(f, 2) &&
                           GST_VIDEO_FORMAT_INFO_PLANE(f, 0) != GST_VIDEO_FORMAT_INFO_PLANE(f, 1);
  if (!chroma_pair) return GST_VIDEO_FORMAT_INFO_POFFSET(f, k);
  return GST_VIDEO_FORMAT_INFO_POFFSET(f, k) < GST_VIDEO_FORMAT_INFO_POFFSET(f, 3 - k) ? 0 : gsize(sample_bytes);
}

// The colour as the device drawing takes it (sift-draw.h): the bytes of one
// pixel of the first plane (packed RGB: every byte no component holds set to
// 255, as for BGRx; GRAY8 and luma: the sample), and for 4:2:0 YUV a Cb and
// a Cr sample (`sample_bytes` each).
struct FrameColour {
  uint8_t first[4];
  uint8_t chroma[2][2];
  int sample_bytes;
};

// Planar or semi-planar YUV with chroma subsampled 2 x 2 (NV12, I420, P010, ...).
static bool is_420(const GstVideoInfo &info) {
  const GstVideoFormatInfo *f = info.finfo;
  return GST_VIDEO_FORMAT_INFO_IS_YUV(f) && GST_VIDEO_FORMAT_INFO_N_PLANES(f) > 1 && f->w_sub[1] == 1 &&
         f->h_sub[1] == 1;
}

static FrameColour frame_colour(const GstVideoInfo &info, guint rgb) {
  const ComponentColour cc = component_colour(info, rgb);
  const GstVideoFormatInfo *f = info.finfo;
  FrameColour c{};
  c.sample_bytes = cc.sample_bytes[0];
  if (GST_VIDEO_FORMAT_INFO_IS_RGB(f)) {
    std::fill(std::begin(c.first), std::end(c.first), uint8_t(255));
    for (int k = 0; k < cc.components; ++k) c.first[component_offset(info, k, 1)] = cc.sample[k][0];
  } else if (GST_VIDEO_FORMAT_INFO_IS_GRAY(f) && c.sample_bytes == 1) {
    std::fill(std::begin(c.first), std::end(c.first), cc.sample[0][0]);
  } else {
    std::copy_n(cc.sample[0], c.sample_bytes, c.first);
    for (int k = 1; k <= 2 && k < cc.components; ++k) std::copy_n(cc.sample[k], c.sample_bytes, c.chroma[k - 1]);
  }
  return c;
}

using Marks = std::vector<gstsift::KeypointMark>;

// The marks of the meta's keypoints in a width x height frame (keypoints
// found in a frame of another size are scaled to this one).
static Marks marks_of(const GstSiftFeaturesMeta *meta, int width, int height) {
  const double sx = meta->image_width ? double(width) / meta->image_width : 1.0;
  const double sy = meta->image_height ? double(height) / meta->image_height : 1.0;
  Marks marks;
  marks.reserve(meta->count);
  for (guint i = 0; i < meta->count; ++i) {
    const GstSiftKeypoint &k = meta->keypoints[i];
    if (gstsift::keypoint_drawable(k.x, k.y, k.size, sx, sy))
      marks.push_back(gstsift::keypoint_mark(k.x, k.y, k.size, k.angle, sx, sy));
  }
  if (marks.size() < meta->count)
    GST_DEBUG("%zu of %u keypoints have no drawable mark (not finite, or far out of any frame)",
              size_t(meta->count) - marks.size(), meta->count);
  return marks;
}

// The marks rasterised by OpenCV into `image` in `colour`: a packed frame
// itself, or the mask of a 4:2:0 YUV frame.
static void draw_marks(cv::Mat &image, const Marks &marks, const cv::Scalar &colour, int thickness) {
  for (const gstsift::KeypointMark &m : marks) {
    cv::circle(image, cv::Point(m.cx, m.cy), m.radius, colour, thickness, cv::LINE_8);
    if (m.has_line) cv::line(image, cv::Point(m.cx, m.cy), cv::Point(m.tip_x, m.tip_y), colour, thickness, cv::LINE_8);
  }
}

// pooled(cy, cx) is set where any mask pixel of the cell (1 << x_shift) x
// (1 << y_shift) at (cx, cy) is: maxima of row pairs, then of column pairs.
static const cv::Mat &pool_mask(CpuCanvas &canvas, int x_shift, int y_shift) {
  const cv::Mat &mask = canvas.mask;
  if (y_shift) {
    const cv::Mat even(mask.rows / 2, mask.cols, CV_8UC1, mask.data, mask.step * 2);
    const cv::Mat odd(mask.rows / 2, mask.cols, CV_8UC1, mask.data + mask.step, mask.step * 2);
    cv::max(even, odd, canvas.vertical);
  } else {
    canvas.vertical = mask;
  }
  if (!x_shift) return canvas.vertical;
  const cv::Mat pairs = canvas.vertical.reshape(2);  // the columns in pairs (the mask's width is even)
  cv::split(pairs, canvas.columns);  // into the canvas's planes: no allocation once their size is set
  cv::max(canvas.columns[0], canvas.columns[1], canvas.pooled);
  return canvas.pooled;
}

// Calls visit(x, y) for each set sample of a mask, row by row: eight bytes
// at a time are skipped while they are all zero (marks cover a small part
// of a frame).
template <class Visit>
static void for_each_marked(const cv::Mat &mask, Visit &&visit) {
  for (int y = 0; y < mask.rows; ++y) {
    const uint8_t *row = mask.ptr(y);
    int x = 0;
    for (; x + 8 <= mask.cols; x += 8) {
      uint64_t word;
      std::memcpy(&word, row + x, sizeof word);
      if (!word) continue;
      for (int i = 0; i < 8; ++i)
        if (row[x + i]) visit(x + i, y);
    }
    for (; x < mask.cols; ++x)
      if (row[x]) visit(x, y);
  }
}

// The samples of plane p's pixel: one channel per sample (1 or 2 bytes),
// the colour's component samples at their places, 255 in the bytes of a
// packed RGB pixel that hold no component (BGRx).
static cv::Scalar plane_colour(const GstVideoInfo &info, const ComponentColour &c, guint plane, int channels,
                               int sample_bytes) {
  cv::Scalar colour = cv::Scalar::all(255);
  for (int k = 0; k < c.components; ++k) {
    if (GST_VIDEO_INFO_COMP_PLANE(&info, k) != plane) continue;
    uint16_t value = 0;
    std::memcpy(&value, c.sample[k], size_t(c.sample_bytes[k]));  // the stored bytes, as the host reads them
    const int channel = int(component_offset(info, k, sample_bytes)) / sample_bytes;
    if (channel < channels) colour[channel] = sample_bytes == 1 ? value & 0xff : value;
  }
  return colour;
}

// Any format on the CPU, plane by plane. A plane whose samples are all at
// full resolution (packed RGB, gray, luma, 4:4:4) is drawn on by OpenCV
// directly; subsampled chroma planes take the colour on every sample whose
// cell holds a marked pixel (OpenCV's marks rasterised once into a mask,
// pooled per cell); a plane that mixes full-resolution luma with subsampled
// chroma (packed 4:2:2) gets its luma drawn directly, then its chroma set on
// the marked cells.
static void paint_marks(GstVideoFrame &frame, CpuCanvas &canvas, const Marks &marks, int thickness,
                        const ComponentColour &c) {
  const GstVideoInfo &info = frame.info;
  const GstVideoFormatInfo *f = info.finfo;
  const int width = GST_VIDEO_FRAME_WIDTH(&frame), height = GST_VIDEO_FRAME_HEIGHT(&frame);
  bool mask_drawn = false;
  auto mask = [&]() -> CpuCanvas & {
    if (!mask_drawn) {
      const cv::Size even((width + 1) & ~1, (height + 1) & ~1);
      if (canvas.mask.size() != even) canvas.mask = cv::Mat::zeros(even, CV_8UC1);
      cv::Mat frame_area = canvas.mask(cv::Rect(0, 0, width, height));
      draw_marks(frame_area, marks, cv::Scalar(255), thickness);
      mask_drawn = true;
    }
    return canvas;
  };
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info); ++p) {
    int first = -1;
    bool uniform = true;  // every component of the plane at one pixel stride and subsampling
    for (int k = 0; k < c.components; ++k) {
      if (GST_VIDEO_FORMAT_INFO_PLANE(f, k) != p) continue;
      if (first < 0) first = k;
      uniform = uniform && GST_VIDEO_FORMAT_INFO_PSTRIDE(f, k) == GST_VIDEO_FORMAT_INFO_PSTRIDE(f, first) &&
                f->w_sub[k] == f->w_sub[first] && f->h_sub[k] == f->h_sub[first];
    }
    if (first < 0) continue;  // a plane of no component (none among sift's formats)
    auto *data = static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
    if (uniform) {
      const int sample_bytes = c.sample_bytes[first];
      const int channels = GST_VIDEO_FORMAT_INFO_PSTRIDE(f, first) / sample_bytes;
      const int x_shift = int(f->w_sub[first]), y_shift = int(f->h_sub[first]);
      const cv::Size samples(GST_VIDEO_FRAME_COMP_WIDTH(&frame, first), GST_VIDEO_FRAME_COMP_HEIGHT(&frame, first));
      cv::Mat plane(samples, CV_MAKETYPE(sample_bytes == 1 ? CV_8U : CV_16U, channels), data, size_t(stride));
      const cv::Scalar colour = plane_colour(info, c, p, channels, sample_bytes);
      if (!x_shift && !y_shift)
        draw_marks(plane, marks, colour, thickness);
      else
        plane.setTo(colour, pool_mask(mask(), x_shift, y_shift)(cv::Rect(cv::Point(), samples)));
      continue;
    }
    // Packed 4:2:2: the luma drawn directly on the pixels' samples, which
    // writes the luma's colour into the chroma byte of each marked pixel too;
    // that byte belongs to a marked cell, which the chroma pass then sets.
    struct Target {
      uint8_t *base;
      gint step;
      const uint8_t *sample;
    };
    std::vector<Target> chroma;
    cv::Size cells;
    int x_shift = 0, y_shift = 0;
    for (int k = 0; k < c.components; ++k) {
      if (GST_VIDEO_FORMAT_INFO_PLANE(f, k) != p) continue;
      if (c.sample_bytes[k] != 1) throw std::logic_error("packed 4:2:2 of more than 8 bits");
      const gint step = GST_VIDEO_FORMAT_INFO_PSTRIDE(f, k);
      if (!f->w_sub[k] && !f->h_sub[k]) {
        cv::Mat pixels(height, width, CV_8UC(step), data, size_t(stride));
        cv::Scalar colour = cv::Scalar::all(0);
        colour[int(GST_VIDEO_FORMAT_INFO_POFFSET(f, k)) % step] = c.sample[k][0];
        draw_marks(pixels, marks, colour, thickness);
        continue;
      }
      chroma.push_back({data + component_offset(info, k, 1), step, c.sample[k]});
      cells = cv::Size(GST_VIDEO_FRAME_COMP_WIDTH(&frame, k), GST_VIDEO_FRAME_COMP_HEIGHT(&frame, k));
      x_shift = int(f->w_sub[k]);
      y_shift = int(f->h_sub[k]);
    }
    if (chroma.empty()) continue;
    for_each_marked(pool_mask(mask(), x_shift, y_shift)(cv::Rect(cv::Point(), cells)), [&](int x, int y) {
      for (const Target &t : chroma) t.base[y * stride + x * t.step] = t.sample[0];
    });
  }
  if (mask_drawn) canvas.mask.setTo(0);
}

static GstFlowReturn draw_on_cpu(GstSiftOverlay *self, GstBuffer *buf, const Marks &marks, guint rgb, int thickness) {
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &self->info, buf, GstMapFlags(GST_MAP_READWRITE))) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot map the frame for drawing"),
                      ("buffer of %" G_GSIZE_FORMAT " bytes for %dx%d %s", gst_buffer_get_size(buf),
                       GST_VIDEO_INFO_WIDTH(&self->info), GST_VIDEO_INFO_HEIGHT(&self->info),
                       GST_VIDEO_INFO_NAME(&self->info)));
    return GST_FLOW_ERROR;
  }
  paint_marks(frame, *self->canvas, marks, thickness, component_colour(self->info, rgb));
  gst_video_frame_unmap(&frame);
  return GST_FLOW_OK;
}

// Where component k of a frame laid out as `info` starts in its memory and
// its row stride: the first plane for k = 0, the chroma components Cb, Cr
// of 4:2:0 YUV for k = 1, 2 (a video meta's planes where there is one).
static void locate_component(const GstVideoInfo &info, const GstVideoMeta *vm, int k, int sample_bytes,
                             gsize *offset, gint *stride) {
  const guint plane = GST_VIDEO_INFO_COMP_PLANE(&info, k);
  *offset = (vm ? vm->offset[plane] : GST_VIDEO_INFO_PLANE_OFFSET(&info, plane)) +
            (k > 0 ? component_offset(info, k, sample_bytes) : 0);
  *stride = vm ? vm->stride[plane] : GST_VIDEO_INFO_PLANE_STRIDE(&info, plane);
}

// The drawing target of a frame of `info` at device address `base`, `bytes`
// long, laid out as `info` (or `vm`) says. Throws when it does not fit.
static gstsift::DrawTarget device_target(const GstVideoInfo &info, const GstVideoMeta *vm, uint8_t *base, gsize bytes,
                                         guint rgb, int thickness) {
  const FrameColour c = frame_colour(info, rgb);
  gstsift::DrawTarget target{};
  target.width = GST_VIDEO_INFO_WIDTH(&info);
  target.height = GST_VIDEO_INFO_HEIGHT(&info);
  target.pixel_bytes = GST_VIDEO_INFO_COMP_PSTRIDE(&info, 0);  // 4 packed, 1 GRAY8 and 8-bit luma, 2 16-bit luma
  target.thickness = thickness;
  std::copy(std::begin(c.first), std::end(c.first), target.colour);
  const bool yuv420 = is_420(info);
  gsize offset[3] = {};
  gint stride[3] = {};
  for (int k = 0; k < (yuv420 ? 3 : 1); ++k) {
    locate_component(info, vm, k, c.sample_bytes, &offset[k], &stride[k]);
    const int rows = GST_VIDEO_INFO_COMP_HEIGHT(&info, k), samples = GST_VIDEO_INFO_COMP_WIDTH(&info, k);
    const int step = k > 0 ? GST_VIDEO_INFO_COMP_PSTRIDE(&info, k) : target.pixel_bytes;
    const gsize end = offset[k] + gsize(stride[k]) * gsize(rows - 1) + gsize(samples - 1) * gsize(step) +
                      gsize(k > 0 ? c.sample_bytes : target.pixel_bytes);
    if (stride[k] <= 0 || end > bytes) throw std::runtime_error("the frame's buffer is smaller than its caps say");
  }
  target.data = base + offset[0];
  target.pitch = size_t(stride[0]);
  if (yuv420) {
    target.u = base + offset[1];
    target.v = base + offset[2];
    target.u_pitch = size_t(stride[1]);
    target.v_pitch = size_t(stride[2]);
    target.chroma_step = GST_VIDEO_INFO_COMP_PSTRIDE(&info, 1);
    target.chroma_bytes = c.sample_bytes;
    std::copy_n(&c.chroma[0][0], 4, &target.chroma[0][0]);
  }
  return target;
}

static const gstsift::KeypointMark *upload_marks(OverlayGpu &g, const Marks &marks) {
  return static_cast<const gstsift::KeypointMark *>(
      g.marks.upload(marks.data(), marks.size() * sizeof(gstsift::KeypointMark), g.gpu.stream()));
}

// The frame's one memory, to draw into: a device copy of its own where it
// is shared with another buffer (after a tee), as a CPU mapping for writing would make.
static GstMemory *writable_frame_memory(GstBuffer *buf) {
  GstMemory *mem = gst_buffer_peek_memory(buf, 0);
  if (gst_memory_is_writable(mem)) return mem;
  GstMemory *copy = gst_memory_copy(mem, 0, -1);
  if (!copy) throw std::runtime_error("cannot copy a shared device frame to draw into");
  gst_buffer_replace_memory(buf, 0, copy);
  return copy;
}

// A frame in our device memory, drawn in place on the element's stream.
static GstFlowReturn draw_on_device(GstSiftOverlay *self, GstBuffer *buf, const Marks &marks, guint rgb,
                                    int thickness) {
  OverlayGpu &g = *self->cuda;
  cs::DeviceGuard guard(g.gpu.device());
  GstMemory *mem = writable_frame_memory(buf);
  const cs::StreamHandle stream = g.gpu.stream();
  const gstsift::KeypointMark *d_marks = upload_marks(g, marks);
  cs::MirroredBuffer &frame = gstcs::mirrored(mem);
  // Not discarded: the marks go over the frame's pixels (a newer host copy is uploaded first).
  auto *base = static_cast<uint8_t *>(frame.begin_device_write(stream, false)) + mem->offset;
  gstsift::draw_marks_async(device_target(self->info, gst_buffer_get_video_meta(buf), base, mem->size, rgb, thickness),
                            d_marks, int(marks.size()), stream);
  frame.end_device_write(stream);
  return GST_FLOW_OK;
}

// A frame in nvcodec's memory: drawn where it is when nvcodec allocated it
// in our CUDA context; in another context (which our kernels may not touch)
// copied into our memory on the device, drawn there and copied back, in its
// own layout. The stream is waited for, since 1.22's memory has no fence for
// the next element to wait on.
static GstFlowReturn draw_on_nvcodec(GstSiftOverlay *self, GstBuffer *buf, const Marks &marks, guint rgb,
                                     int thickness) {
  OverlayGpu &g = *self->cuda;
  cs::DeviceGuard guard(g.gpu.device());
  gstsift::NvcodecFrame frame(writable_frame_memory(buf), g.gpu.device(), GST_MAP_READWRITE);
  const GstVideoInfo &layout = frame.info();
  if (GST_VIDEO_INFO_FORMAT(&layout) != GST_VIDEO_INFO_FORMAT(&self->info) ||
      GST_VIDEO_INFO_WIDTH(&layout) != GST_VIDEO_INFO_WIDTH(&self->info) ||
      GST_VIDEO_INFO_HEIGHT(&layout) != GST_VIDEO_INFO_HEIGHT(&self->info))
    throw std::runtime_error(std::string("nvcodec's memory holds a ") + GST_VIDEO_INFO_NAME(&layout) + " frame of " +
                             std::to_string(GST_VIDEO_INFO_WIDTH(&layout)) + "x" +
                             std::to_string(GST_VIDEO_INFO_HEIGHT(&layout)) + ", not what the caps say");
  const cs::StreamHandle stream = g.gpu.stream();
  const bool in_place = frame.in_our_context();
  if (g.nvcodec_in_place != int(in_place)) {
    g.nvcodec_in_place = int(in_place);
    GST_INFO_OBJECT(self, "frames in nvcodec's memory: %s",
                    in_place ? "drawn in place (our CUDA context)" : "drawn in a copy (another CUDA context)");
  }
  if (in_place) {
    gstsift::draw_marks_async(device_target(layout, nullptr, frame.data(), frame.size(), rgb, thickness),
                              upload_marks(g, marks), int(marks.size()), stream);
    g.gpu.synchronize();
    return GST_FLOW_OK;
  }
  auto *copy = static_cast<uint8_t *>(g.nvcodec_copy.reserve(frame.size()));
  // Each plane's rows, whole strides, in both directions.
  auto copy_planes = [&](bool back) {
    for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&layout); ++p) {
      const gsize offset = GST_VIDEO_INFO_PLANE_OFFSET(&layout, p);
      const size_t stride = size_t(GST_VIDEO_INFO_PLANE_STRIDE(&layout, p));
      int rows = 0;  // those of the plane's components
      for (guint k = 0; k < GST_VIDEO_INFO_N_COMPONENTS(&layout); ++k)
        if (GST_VIDEO_INFO_COMP_PLANE(&layout, k) == p) rows = GST_VIDEO_INFO_COMP_HEIGHT(&layout, k);
      if (offset + stride * size_t(rows) > frame.size())
        throw std::runtime_error("nvcodec's memory is smaller than its frame's layout");
      if (back)
        gstsift::copy_rows_between_contexts_async(frame.data() + offset, stride, frame.context(), copy + offset, stride,
                                                  nullptr, stride, rows, stream);
      else
        gstsift::copy_rows_between_contexts_async(copy + offset, stride, nullptr, frame.data() + offset, stride,
                                                  frame.context(), stride, rows, stream);
    }
  };
  copy_planes(false);
  gstsift::draw_marks_async(device_target(layout, nullptr, copy, frame.size(), rgb, thickness), upload_marks(g, marks),
                            int(marks.size()), stream);
  copy_planes(true);
  g.gpu.synchronize();
  return GST_FLOW_OK;
}

static GstFlowReturn overlay_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  auto *self = GST_SIFT_OVERLAY(trans);
  const GstSiftFeaturesMeta *meta = gst_buffer_get_sift_features_meta(buf);
  if (!meta || meta->count == 0) return GST_FLOW_OK;
  if (!self->have_info) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps were negotiated before the first frame"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK(self);
  const guint rgb = self->color;
  const int thickness = self->thickness;
  GST_OBJECT_UNLOCK(self);
  return gstcs::guard_flow(GST_ELEMENT(self), "Drawing SIFT keypoints", [&] {
    const Marks marks = marks_of(meta, GST_VIDEO_INFO_WIDTH(&self->info), GST_VIDEO_INFO_HEIGHT(&self->info));
    if (marks.empty()) return GST_FLOW_OK;  // nothing to draw: the frame is not even mapped
    GstMemory *first = gst_buffer_n_memory(buf) == 1 ? gst_buffer_peek_memory(buf, 0) : nullptr;
    if (self->cuda && gstsift::is_nvcodec_memory(first)) return draw_on_nvcodec(self, buf, marks, rgb, thickness);
    const bool on_device = self->cuda && first && gst_is_cs_memory(first) &&
                           gst_cs_memory_get_device_id(first) == self->cuda->gpu.device();
    return on_device ? draw_on_device(self, buf, marks, rgb, thickness) : draw_on_cpu(self, buf, marks, rgb, thickness);
  });
}

// nvcodec's elements next to it are offered our CUDA context (sift-nvcodec.h).
static gboolean overlay_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_SIFT_OVERLAY(trans);
  if (gstsift::answer_cuda_context_query(GST_CS_BASE_TRANSFORM(self), query)) return TRUE;
  return GST_BASE_TRANSFORM_CLASS(gst_sift_overlay_parent_class)->query(trans, direction, query);
}

static gboolean overlay_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *) {
  auto *self = GST_SIFT_OVERLAY(trans);
  self->have_info = gst_video_info_from_caps(&self->info, incaps);
  if (!self->have_info)
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot use the caps %" GST_PTR_FORMAT, incaps),
                      ("siftoverlay draws into video/x-raw " SIFT_FORMATS
                       " frames (in device memory: " OVERLAY_DEVICE_FORMATS ")"));
  return self->have_info;
}

static gboolean overlay_start(GstCsBaseTransform *base) {
  auto *self = GST_SIFT_OVERLAY(base);
  self->have_info = FALSE;
  if (!gst_cs_base_transform_use_cuda(base)) return TRUE;
  return gstcs::guard_bool(GST_ELEMENT(self), "Starting the CUDA overlay", [&] {
    self->cuda = new OverlayGpu(gst_cs_base_transform_get_device_id(base));
    return TRUE;
  });
}

static gboolean overlay_stop(GstCsBaseTransform *base) {
  auto *self = GST_SIFT_OVERLAY(base);
  delete self->cuda;  // waits for its stream
  self->cuda = nullptr;
  self->have_info = FALSE;
  *self->canvas = CpuCanvas();
  return TRUE;
}

static void overlay_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT_OVERLAY(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PROP_COLOR)
    self->color = g_value_get_uint(value);
  else if (prop_id == PROP_THICKNESS)
    self->thickness = g_value_get_int(value);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void overlay_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT_OVERLAY(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PROP_COLOR)
    g_value_set_uint(value, self->color);
  else if (prop_id == PROP_THICKNESS)
    g_value_set_int(value, self->thickness);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void overlay_finalize(GObject *object) {
  delete GST_SIFT_OVERLAY(object)->canvas;
  G_OBJECT_CLASS(gst_sift_overlay_parent_class)->finalize(object);
}

static void gst_sift_overlay_class_init(GstSiftOverlayClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->finalize = overlay_finalize;
  gobject_class->set_property = overlay_set_property;
  gobject_class->get_property = overlay_get_property;
  const auto flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  g_object_class_install_property(
      gobject_class, PROP_COLOR,
      g_param_spec_uint("color", "Colour",
                        "Colour of the circles and angle lines as 0xRRGGBB (GRAY8 frames get its BT.601 luma, "
                        "4:2:0 YUV frames its Y'CbCr in their colorimetry and depth)", 0,
                        0xffffff, 0x00ff00, flags));
  g_object_class_install_property(
      gobject_class, PROP_THICKNESS,
      g_param_spec_int("thickness", "Thickness", "Line thickness in pixels", 1, 32, 1, flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &pad_caps_sink);
  gst_element_class_add_static_pad_template(element_class, &pad_caps_src);
  gst_element_class_set_static_metadata(
      element_class, "SIFT keypoint overlay", "Filter/Effect/Video",
      "Draws the SIFT keypoints of each frame's GstSiftFeaturesMeta into the frame (every format sift reads: gray, "
      "YUV of 8 to 16 bits, packed RGB): a circle of the keypoint's size and a line along its angle; on the GPU for "
      "frames in device memory (CUDA backend; RGBA, BGRA, BGRx, GRAY8, 4:2:0 YUV), on the CPU otherwise",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_ip = overlay_transform_ip;
  trans_class->set_caps = overlay_set_caps;
  trans_class->query = overlay_query;
  trans_class->passthrough_on_same_caps = FALSE;
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  cs_class->start_backend = overlay_start;
  cs_class->stop_backend = overlay_stop;
  GST_DEBUG_CATEGORY_INIT(gst_sift_overlay_debug, "siftoverlay", 0, "SIFT keypoint overlay");
}

static void gst_sift_overlay_init(GstSiftOverlay *self) {
  self->color = 0x00ff00;
  self->thickness = 1;
  self->have_info = FALSE;
  self->cuda = nullptr;
  self->canvas = new CpuCanvas();
  gstsift::init_video_filter(GST_BASE_TRANSFORM(self));
}
