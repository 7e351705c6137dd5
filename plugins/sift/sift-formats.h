// The frame formats sift and siftpyramid take, and where each keeps the
// luma they read (sift-luma.h): every format whose plane 0 holds an 8-bit
// to 16-bit Y sample per pixel (gray, planar and semi-planar YUV, packed
// 4:2:2 and 4:4:4), and packed RGB of 8-bit colours. The layout comes from
// GStreamer's own description of the format (GstVideoFormatInfo), not a
// table of ours; the tests check it against GStreamer's unpacking for every
// format listed here.
#pragma once

#include <gst/video/video.h>

#include <stdexcept>
#include <string>

#include "sift-luma.h"

// Decoders' 8-, 10-, 12- and 16-bit outputs (NVDEC: NV12, P010_10LE,
// P016_LE, Y444, Y444_16LE), cameras' (YUY2, UYVY, GRAY16) and packed RGB.
#define SIFT_FORMATS                                                                                        \
  "{ GRAY8, NV12, I420, RGBA, BGRA, BGRx, RGBx, ARGB, ABGR, xRGB, xBGR, RGB, BGR, YV12, NV21, Y42B, Y444, " \
  "NV16, YUY2, UYVY, YVYU, AYUV, GRAY16_LE, GRAY16_BE, P010_10LE, P012_LE, P016_LE, I420_10LE, I420_12LE, "   \
  "Y444_16LE }"

namespace gstsift {

// Throws std::invalid_argument for a format whose plane 0 has no such luma.
inline LumaLayout luma_layout(GstVideoFormat format) {
  const GstVideoFormatInfo *f = format == GST_VIDEO_FORMAT_UNKNOWN ? nullptr : gst_video_format_get_info(format);
  const auto refuse = [&](const char *why) {
    return std::invalid_argument(std::string("sift cannot read the luma of ") +
                                 (f ? GST_VIDEO_FORMAT_INFO_NAME(f) : "an unknown format") + " frames: " + why);
  };
  if (!f) throw refuse("no such format");
  if (GST_VIDEO_FORMAT_INFO_IS_COMPLEX(f) || GST_VIDEO_FORMAT_INFO_IS_TILED(f) ||
      GST_VIDEO_FORMAT_INFO_HAS_PALETTE(f))
    throw refuse("packed bit fields, tiles or a palette");
  LumaLayout l;
  l.pixel_bytes = GST_VIDEO_FORMAT_INFO_PSTRIDE(f, 0);
  if (GST_VIDEO_FORMAT_INFO_IS_RGB(f)) {
    if (GST_VIDEO_FORMAT_INFO_N_PLANES(f) != 1 || (l.pixel_bytes != 3 && l.pixel_bytes != 4))
      throw refuse("not packed RGB");
    for (int c = 0; c < 3; ++c)
      if (GST_VIDEO_FORMAT_INFO_DEPTH(f, c) != 8) throw refuse("colours of other than 8 bits");
    l.rgb = true;
    l.order = {int(GST_VIDEO_FORMAT_INFO_POFFSET(f, 0)), int(GST_VIDEO_FORMAT_INFO_POFFSET(f, 1)),
               int(GST_VIDEO_FORMAT_INFO_POFFSET(f, 2))};
    return l;
  }
  if (!GST_VIDEO_FORMAT_INFO_IS_YUV(f) && !GST_VIDEO_FORMAT_INFO_IS_GRAY(f)) throw refuse("neither YUV nor gray");
  if (GST_VIDEO_FORMAT_INFO_PLANE(f, 0) != 0) throw refuse("Y is not in plane 0");
  const int top_bit = GST_VIDEO_FORMAT_INFO_DEPTH(f, 0) + GST_VIDEO_FORMAT_INFO_SHIFT(f, 0);
  if (GST_VIDEO_FORMAT_INFO_DEPTH(f, 0) < 8 || top_bit > 16) throw refuse("Y of fewer than 8 or more than 16 bits");
  l.offset = int(GST_VIDEO_FORMAT_INFO_POFFSET(f, 0));
  l.wide = top_bit > 8;
  if (l.wide) {
    l.big_endian = !GST_VIDEO_FORMAT_INFO_IS_LE(f);
    l.right_shift = top_bit - 8;
  }
  return l;
}

}  // namespace gstsift
