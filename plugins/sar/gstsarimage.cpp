/* sarimage: complex SAR image -> grey-level picture for people and for stock
 * elements (pngenc, videoconvert ! x264enc, autovideosink).
 *
 * Magnitude in dB, `dynamic-range` dB below a reference mapped linearly onto
 * 0..255 (GRAY8) or 0..65535 (GRAY16_LE); the reference is each image's peak,
 * or `reference-level` dB when `fixed-reference` is set (one scale for every
 * frame of a video). The mapping is kernels/sar/image_display.h's. Runs on
 * the CPU; device-memory images are mapped, which downloads them. The image
 * meta (grid, pulses) is kept on the output. */
#include "gstsarimage.h"

#include <gst/video/video.h>

#include <complex>
#include <string>

#include "../core/gstcs-cxx.h"
#include "sar-common.h"
#include "sar/image_display.h"

GST_DEBUG_CATEGORY_STATIC(gst_sar_image_debug);
#define GST_CAT_DEFAULT gst_sar_image_debug

namespace {
constexpr double kDefaultDynamicRange = 50.0;
}

struct _GstSarImage {
  GstBaseTransform parent;
  // properties
  gdouble dynamic_range;
  gdouble reference_level;
  gboolean fixed_reference;
  // negotiated
  gint64 width, height;
  gboolean sixteen_bit;
  GstVideoInfo out_info;  // the frames' layout (set_caps): a stop mid-frame may have taken the pad's caps already
};

G_DEFINE_TYPE(GstSarImage, gst_sar_image, GST_TYPE_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(sarimage, "sarimage", GST_RANK_NONE, GST_TYPE_SAR_IMAGE)

#define SINK_CAPS GST_SAR_IMAGE_MEDIA_TYPE ", format=(string)CF32"
#define SRC_CAPS "video/x-raw, format=(string){GRAY8, GRAY16_LE}"
static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_SAR_IMAGE_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_CS_DEVICE "), format=(string)CF32; " SINK_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(SRC_CAPS ", width=(int)[1, 65536], height=(int)[1, 65536], framerate=(fraction)[0/1, MAX]"));

enum { PROP_0, PROP_DYNAMIC_RANGE, PROP_REFERENCE_LEVEL, PROP_FIXED_REFERENCE };

// Carries width and height from each structure of `caps` into `to` (a media type without them).
static GstCaps *with_sizes_of(GstCaps *caps, const char *to) {
  GstCaps *out = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GstStructure *s = gst_caps_get_structure(caps, i);
    GstCaps *one = gst_caps_from_string(to);
    GstStructure *o = gst_caps_get_structure(one, 0);
    for (const char *field : {"width", "height"})
      if (const GValue *v = gst_structure_get_value(s, field)) gst_structure_set_value(o, field, v);
    out = gst_caps_merge(out, one);
  }
  return out;
}

static GstCaps *image_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                     GstCaps *filter) {
  GstCaps *result;
  if (direction == GST_PAD_SINK) {
    GstCaps *video = with_sizes_of(caps, SRC_CAPS);
    // Still images: no fixed rate (pngenc and x264enc take timestamps as they come).
    for (guint i = 0; i < gst_caps_get_size(video); ++i)
      gst_structure_set(gst_caps_get_structure(video, i), "framerate", GST_TYPE_FRACTION, 0, 1, nullptr);
    result = video;
  } else {
    GstCaps *media = with_sizes_of(caps, SINK_CAPS);
    result = gst_cs_caps_any_memory(media);
    gst_caps_unref(media);
  }
  result = gstcs::filtered(result, filter);
  GST_DEBUG_OBJECT(trans, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
                   direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
}

static gboolean image_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_SAR_IMAGE(trans);
  gstsar::SarImageFormat f;
  std::string why;
  if (!gstsar::parse_sar_image_caps(incaps, &f, &why)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("sarimage cannot take this stream: %s", why.c_str()),
                      ("input caps: %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, outcaps) || GST_VIDEO_INFO_WIDTH(&info) != f.width ||
      GST_VIDEO_INFO_HEIGHT(&info) != f.height) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("sarimage: output caps do not match the image size"),
                      ("%" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, incaps, outcaps));
    return FALSE;
  }
  self->width = f.width;
  self->height = f.height;
  self->sixteen_bit = GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_GRAY16_LE;
  self->out_info = info;
  return TRUE;
}

// Output frames only (an image never comes back from a frame). GRAY rows are
// padded to 4 bytes in GStreamer's layout, so the size comes from the video info.
static gboolean image_transform_size(GstBaseTransform *, GstPadDirection direction, GstCaps *, gsize,
                                     GstCaps *othercaps, gsize *othersize) {
  if (direction != GST_PAD_SINK) return FALSE;
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, othercaps)) return FALSE;
  *othersize = GST_VIDEO_INFO_SIZE(&info);
  return TRUE;
}

static GstFlowReturn image_transform(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer *outbuf) {
  auto *self = GST_SAR_IMAGE(trans);
  const size_t pixels = size_t(self->width) * size_t(self->height);
  if (gst_buffer_get_size(inbuf) != pixels * sizeof(std::complex<float>)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("Image buffer of %" G_GSIZE_FORMAT " bytes; %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                       " CF32 pixels need %zu",
                       gst_buffer_get_size(inbuf), self->width, self->height, pixels * sizeof(std::complex<float>)),
                      (nullptr));
    return GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK(self);
  const double range = self->dynamic_range, level = self->reference_level;
  const bool fixed = self->fixed_reference;
  GST_OBJECT_UNLOCK(self);
  return gstcs::guard_flow(GST_ELEMENT(self), "Scaling the image", [&] {
    GstMapInfo in;
    if (!gst_buffer_map(inbuf, &in, GST_MAP_READ)) throw std::runtime_error("cannot map the input image");
    const auto *image = reinterpret_cast<const std::complex<float> *>(in.data);
    cs::sar::DisplayScale scale;
    scale.reference_db = fixed ? float(level) : cs::sar::peak_db(image, pixels);
    scale.dynamic_range_db = float(range);
    scale.max_level = self->sixteen_bit ? 65535.0f : 255.0f;
    GstVideoFrame frame;
    if (!gst_video_frame_map(&frame, &self->out_info, outbuf, GST_MAP_WRITE)) {
      gst_buffer_unmap(inbuf, &in);
      throw std::runtime_error("cannot map the output frame");
    }
    auto *rows = static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
    const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
    for (int64_t r = 0; r < self->height; ++r) {
      const std::complex<float> *row = image + r * self->width;
      if (self->sixteen_bit)
        cs::sar::to_display_levels(row, size_t(self->width), scale, reinterpret_cast<uint16_t *>(rows + r * stride));
      else
        cs::sar::to_display_levels(row, size_t(self->width), scale, rows + r * stride);
    }
    gst_video_frame_unmap(&frame);
    gst_buffer_unmap(inbuf, &in);
    return GST_FLOW_OK;
  });
}

static void image_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_SAR_IMAGE(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_DYNAMIC_RANGE: self->dynamic_range = g_value_get_double(value); break;
    case PROP_REFERENCE_LEVEL: self->reference_level = g_value_get_double(value); break;
    case PROP_FIXED_REFERENCE: self->fixed_reference = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void image_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SAR_IMAGE(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_DYNAMIC_RANGE: g_value_set_double(value, self->dynamic_range); break;
    case PROP_REFERENCE_LEVEL: g_value_set_double(value, self->reference_level); break;
    case PROP_FIXED_REFERENCE: g_value_set_boolean(value, self->fixed_reference); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

// A frame is the image pixel for pixel: its grid meta still holds (the base
// class keeps only metas tagged for memory alone).
static gboolean image_transform_meta(GstBaseTransform *trans, GstBuffer *outbuf, GstMeta *meta, GstBuffer *inbuf) {
  if (meta->info->api == GST_SAR_IMAGE_META_API_TYPE) return TRUE;
  return GST_BASE_TRANSFORM_CLASS(gst_sar_image_parent_class)->transform_meta(trans, outbuf, meta, inbuf);
}

static void gst_sar_image_class_init(GstSarImageClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = image_set_property;
  gobject_class->get_property = image_get_property;
  const GParamFlags flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_CONTROLLABLE);
  g_object_class_install_property(
      gobject_class, PROP_DYNAMIC_RANGE,
      g_param_spec_double("dynamic-range", "Dynamic range",
                          "dB below the reference shown; weaker pixels are black, the reference is white", 1.0, 400.0,
                          kDefaultDynamicRange, flags));
  g_object_class_install_property(
      gobject_class, PROP_REFERENCE_LEVEL,
      g_param_spec_double("reference-level", "Reference level",
                          "With fixed-reference: the level shown as white, in dB (20 log10 of a pixel's magnitude)",
                          -400.0, 400.0, 0.0, flags));
  g_object_class_install_property(
      gobject_class, PROP_FIXED_REFERENCE,
      g_param_spec_boolean("fixed-reference", "Fixed reference",
                           "Use reference-level as white for every image (one scale for a video) instead of each "
                           "image's peak",
                           FALSE, flags));
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SAR image to picture", "Filter/Converter/Radar/Video",
      "Complex SAR image -> magnitude in dB over a dynamic range below the peak (or a fixed level) -> GRAY8 or "
      "GRAY16_LE video frames for pngenc, encoders and displays",
      "gst-cuda-sensing developers");
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_caps = image_transform_caps;
  trans_class->set_caps = image_set_caps;
  trans_class->transform_size = image_transform_size;
  trans_class->transform = image_transform;
  trans_class->transform_meta = image_transform_meta;
  GST_DEBUG_CATEGORY_INIT(gst_sar_image_debug, "sarimage", 0, "SAR image to picture");
}

static void gst_sar_image_init(GstSarImage *self) {
  self->dynamic_range = kDefaultDynamicRange;
  self->reference_level = 0.0;
  self->fixed_reference = FALSE;
  self->width = self->height = 0;
  self->sixteen_bit = FALSE;
}
