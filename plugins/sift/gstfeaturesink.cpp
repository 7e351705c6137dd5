/* featuresink: writes each frame's SIFT features (GstSiftFeaturesMeta) to a
 * file: the project's binary record format (README: one record per frame,
 * read into numpy in a few lines) or OpenCV FileStorage YAML/XML (a sequence
 * `frames` of maps: pts, width, height, descriptor_format, keypoints,
 * descriptors). A frame without the meta gives a record with no keypoints. */
#include "gstfeaturesink.h"

#include <opencv2/core.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "sift/features_cpu.h"

GST_DEBUG_CATEGORY_STATIC(gst_feature_sink_debug);
#define GST_CAT_DEFAULT gst_feature_sink_debug

typedef enum {
  GST_FEATURE_SINK_FORMAT_BINARY = 0,
  GST_FEATURE_SINK_FORMAT_YAML = 1,
  GST_FEATURE_SINK_FORMAT_XML = 2,
} GstFeatureSinkFormat;

static GType gst_feature_sink_format_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_FEATURE_SINK_FORMAT_BINARY, "Binary records (see the sift plugin's README; numpy reads them)", "binary"},
      {GST_FEATURE_SINK_FORMAT_YAML, "OpenCV FileStorage YAML (cv::FileStorage reads it)", "opencv-yaml"},
      {GST_FEATURE_SINK_FORMAT_XML, "OpenCV FileStorage XML (cv::FileStorage reads it)", "opencv-xml"},
      {0, nullptr, nullptr}};
  if (g_once_init_enter(&type)) {
    GType t = g_enum_register_static("GstFeatureSinkFormat", values);
    g_once_init_leave(&type, t);
  }
  return type;
}

struct _GstFeatureSink {
  GstBaseSink parent;
  gchar *location;
  GstFeatureSinkFormat format;
  std::FILE *file;
  cv::FileStorage *storage;
  guint64 frames;
};

G_DEFINE_TYPE(GstFeatureSink, gst_feature_sink, GST_TYPE_BASE_SINK)
GST_ELEMENT_REGISTER_DEFINE(featuresink, "featuresink", GST_RANK_NONE, GST_TYPE_FEATURE_SINK)

enum { PROP_0, PROP_LOCATION, PROP_FORMAT };

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static gboolean feature_sink_start(GstBaseSink *sink) {
  auto *self = GST_FEATURE_SINK(sink);
  GST_OBJECT_LOCK(self);
  const std::string location = self->location ? self->location : "";
  const GstFeatureSinkFormat format = self->format;
  GST_OBJECT_UNLOCK(self);
  if (location.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No file name given"), ("Set the location property"));
    return FALSE;
  }
  self->frames = 0;
  if (format == GST_FEATURE_SINK_FORMAT_BINARY) {
    self->file = std::fopen(location.c_str(), "wb");
    if (!self->file) {
      GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("Cannot open %s for writing", location.c_str()),
                        ("%s", std::strerror(errno)));
      return FALSE;
    }
    return TRUE;
  }
  try {
    const int flags = cv::FileStorage::WRITE |
                      (format == GST_FEATURE_SINK_FORMAT_XML ? cv::FileStorage::FORMAT_XML : cv::FileStorage::FORMAT_YAML);
    auto storage = std::make_unique<cv::FileStorage>(location, flags);
    if (!storage->isOpened()) throw std::runtime_error("cv::FileStorage could not open it");
    *storage << "frames" << "[";
    self->storage = storage.release();
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("Cannot open %s for writing", location.c_str()), ("%s", e.what()));
    return FALSE;
  }
  return TRUE;
}

static gboolean feature_sink_stop(GstBaseSink *sink) {
  auto *self = GST_FEATURE_SINK(sink);
  gboolean ok = TRUE;
  if (self->file) {
    if (std::fclose(self->file) != 0) {
      GST_ELEMENT_ERROR(self, RESOURCE, CLOSE, ("Cannot close %s", self->location), ("%s", std::strerror(errno)));
      ok = FALSE;
    }
    self->file = nullptr;
  }
  if (self->storage) {
    try {
      *self->storage << "]";
      self->storage->release();
    } catch (const std::exception &e) {
      GST_ELEMENT_ERROR(self, RESOURCE, CLOSE, ("Cannot finish %s", self->location), ("%s", e.what()));
      ok = FALSE;
    }
    delete self->storage;
    self->storage = nullptr;
  }
  GST_INFO_OBJECT(self, "%" G_GUINT64_FORMAT " frames written", self->frames);
  return ok;
}

static GstFlowReturn feature_sink_render(GstBaseSink *sink, GstBuffer *buffer) {
  auto *self = GST_FEATURE_SINK(sink);
  const GstSiftFeaturesMeta *meta = gst_buffer_get_sift_features_meta(buffer);
  sift_cpu::Features f;
  guint width = 0, height = 0;
  GstSiftDescriptorFormat format = GST_SIFT_DESCRIPTOR_OPENCV;
  if (meta) {
    f.keypoints = gst_sift::keypoints(*meta);
    f.descriptors = gst_sift::descriptors(*meta);
    width = meta->image_width;
    height = meta->image_height;
    format = meta->descriptor_format;
  } else {
    GST_LOG_OBJECT(self, "buffer without SIFT features: empty record");
  }
  const uint64_t pts = GST_BUFFER_PTS_IS_VALID(buffer) ? GST_BUFFER_PTS(buffer) : UINT64_MAX;
  try {
    if (self->file) {
      sift_cpu::write_record(self->file, pts, width, height, sift_cpu::DescriptorFormat(format), f);
    } else {
      cv::FileStorage &fs = *self->storage;
      fs << "{";
      fs << "pts" << (pts == UINT64_MAX ? -1.0 : double(pts));
      fs << "width" << int(width) << "height" << int(height);
      fs << "descriptor_format" << int(format);
      cv::write(fs, "keypoints", f.keypoints);
      fs << "descriptors" << f.descriptors;
      fs << "}";
    }
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write the features of frame %" G_GUINT64_FORMAT " to %s",
                                              self->frames, self->location),
                      ("%s", e.what()));
    return GST_FLOW_ERROR;
  }
  ++self->frames;
  return GST_FLOW_OK;
}

static void feature_sink_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_FEATURE_SINK(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PROP_LOCATION) {
    g_free(self->location);
    self->location = g_value_dup_string(value);
  } else if (prop_id == PROP_FORMAT) {
    self->format = GstFeatureSinkFormat(g_value_get_enum(value));
  } else {
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void feature_sink_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_FEATURE_SINK(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PROP_LOCATION)
    g_value_set_string(value, self->location);
  else if (prop_id == PROP_FORMAT)
    g_value_set_enum(value, self->format);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void feature_sink_finalize(GObject *object) {
  auto *self = GST_FEATURE_SINK(object);
  g_free(self->location);
  G_OBJECT_CLASS(gst_feature_sink_parent_class)->finalize(object);
}

static void gst_feature_sink_class_init(GstFeatureSinkClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = feature_sink_set_property;
  gobject_class->get_property = feature_sink_get_property;
  gobject_class->finalize = feature_sink_finalize;
  const auto flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_LOCATION,
      g_param_spec_string("location", "File location", "File to write the features of every frame to (overwritten)",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_FORMAT,
      g_param_spec_enum("format", "File format",
                        "binary: one record per frame (40-byte header, 28-byte keypoints, descriptor rows; see the "
                        "sift plugin's README); opencv-yaml / opencv-xml: cv::FileStorage with a sequence 'frames'",
                        gst_feature_sink_format_get_type(), GST_FEATURE_SINK_FORMAT_BINARY, flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT features file sink", "Sink/File",
      "Writes the SIFT keypoints and descriptors of each frame (GstSiftFeaturesMeta) to a file: binary records "
      "that numpy reads, or OpenCV FileStorage YAML/XML",
      "gst-cuda-sensing developers");
  GstBaseSinkClass *sink_class = GST_BASE_SINK_CLASS(klass);
  sink_class->start = feature_sink_start;
  sink_class->stop = feature_sink_stop;
  sink_class->render = feature_sink_render;
  gst_type_mark_as_plugin_api(gst_feature_sink_format_get_type(), GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_feature_sink_debug, "featuresink", 0, "SIFT features file sink");
}

static void gst_feature_sink_init(GstFeatureSink *self) {
  self->format = GST_FEATURE_SINK_FORMAT_BINARY;
  gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}
