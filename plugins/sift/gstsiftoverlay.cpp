/* siftoverlay: draws each frame's SIFT keypoints (GstSiftFeaturesMeta) into
 * the frame, in place: a circle of the keypoint's size (diameter) around it
 * and a radius along its angle, as OpenCV's DRAW_RICH_KEYPOINTS does. CPU
 * path (OpenCV's drawing functions); frames without the meta pass unchanged. */
#include "gstsiftoverlay.h"

#include <gst/video/video.h>
#include <opencv2/imgproc.hpp>

#include <cmath>

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_overlay_debug);
#define GST_CAT_DEFAULT gst_sift_overlay_debug

#define OVERLAY_FORMATS "{ RGBA, BGRA, BGRx, GRAY8 }"

struct _GstSiftOverlay {
  GstVideoFilter parent;
  guint color;  // 0xRRGGBB
  int thickness;
};

G_DEFINE_TYPE(GstSiftOverlay, gst_sift_overlay, GST_TYPE_VIDEO_FILTER)
GST_ELEMENT_REGISTER_DEFINE(siftoverlay, "siftoverlay", GST_RANK_NONE, GST_TYPE_SIFT_OVERLAY)

enum { PROP_0, PROP_COLOR, PROP_THICKNESS };

static GstStaticPadTemplate pad_caps_sink = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(OVERLAY_FORMATS)));
static GstStaticPadTemplate pad_caps_src = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(OVERLAY_FORMATS)));

static GstFlowReturn overlay_transform_frame_ip(GstVideoFilter *filter, GstVideoFrame *frame) {
  auto *self = GST_SIFT_OVERLAY(filter);
  const GstSiftFeaturesMeta *meta = gst_buffer_get_sift_features_meta(frame->buffer);
  if (!meta || meta->count == 0) return GST_FLOW_OK;
  GST_OBJECT_LOCK(self);
  const guint rgb = self->color;
  const int thickness = self->thickness;
  GST_OBJECT_UNLOCK(self);
  const double r = (rgb >> 16) & 0xff, g = (rgb >> 8) & 0xff, b = rgb & 0xff;
  const int w = GST_VIDEO_FRAME_WIDTH(frame), h = GST_VIDEO_FRAME_HEIGHT(frame);
  const size_t stride = size_t(GST_VIDEO_FRAME_PLANE_STRIDE(frame, 0));
  void *data = GST_VIDEO_FRAME_PLANE_DATA(frame, 0);
  cv::Mat image;
  cv::Scalar colour;
  switch (GST_VIDEO_FRAME_FORMAT(frame)) {
    case GST_VIDEO_FORMAT_RGBA:
      image = cv::Mat(h, w, CV_8UC4, data, stride);
      colour = cv::Scalar(r, g, b, 255);
      break;
    case GST_VIDEO_FORMAT_BGRA:
    case GST_VIDEO_FORMAT_BGRx:
      image = cv::Mat(h, w, CV_8UC4, data, stride);
      colour = cv::Scalar(b, g, r, 255);
      break;
    default:  // GRAY8: the colour's luma (BT.601)
      image = cv::Mat(h, w, CV_8UC1, data, stride);
      colour = cv::Scalar(std::round(0.299 * r + 0.587 * g + 0.114 * b));
      break;
  }
  // Keypoints found in a frame of another size are scaled to this one.
  const double sx = meta->image_width ? double(w) / meta->image_width : 1.0;
  const double sy = meta->image_height ? double(h) / meta->image_height : 1.0;
  for (guint i = 0; i < meta->count; ++i) {
    const GstSiftKeypoint &k = meta->keypoints[i];
    const cv::Point2d centre(k.x * sx, k.y * sy);
    const double radius = std::max(1.0, 0.5 * k.size * std::sqrt(sx * sy));
    cv::circle(image, cv::Point(cvRound(centre.x), cvRound(centre.y)), cvRound(radius), colour, thickness,
               cv::LINE_8);
    if (k.angle >= 0) {
      const double a = k.angle * CV_PI / 180.0;
      const cv::Point tip(cvRound(centre.x + radius * std::cos(a)), cvRound(centre.y + radius * std::sin(a)));
      cv::line(image, cv::Point(cvRound(centre.x), cvRound(centre.y)), tip, colour, thickness, cv::LINE_8);
    }
  }
  return GST_FLOW_OK;
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

static void gst_sift_overlay_class_init(GstSiftOverlayClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = overlay_set_property;
  gobject_class->get_property = overlay_get_property;
  const auto flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  g_object_class_install_property(
      gobject_class, PROP_COLOR,
      g_param_spec_uint("color", "Colour",
                        "Colour of the circles and angle lines as 0xRRGGBB (GRAY8 frames get its BT.601 luma)", 0,
                        0xffffff, 0x00ff00, flags));
  g_object_class_install_property(
      gobject_class, PROP_THICKNESS,
      g_param_spec_int("thickness", "Thickness", "Line thickness in pixels", 1, 32, 1, flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &pad_caps_sink);
  gst_element_class_add_static_pad_template(element_class, &pad_caps_src);
  gst_element_class_set_static_metadata(
      element_class, "SIFT keypoint overlay", "Filter/Effect/Video",
      "Draws the SIFT keypoints of each frame's GstSiftFeaturesMeta into the frame (RGBA, BGRA, BGRx, GRAY8): a "
      "circle of the keypoint's size and a line along its angle",
      "gst-cuda-sensing developers");
  GST_VIDEO_FILTER_CLASS(klass)->transform_frame_ip = overlay_transform_frame_ip;
  GST_DEBUG_CATEGORY_INIT(gst_sift_overlay_debug, "siftoverlay", 0, "SIFT keypoint overlay");
}

static void gst_sift_overlay_init(GstSiftOverlay *self) {
  self->color = 0x00ff00;
  self->thickness = 1;
}
