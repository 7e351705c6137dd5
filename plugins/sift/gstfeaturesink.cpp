/* featuresink: writes each frame's SIFT features (GstSiftFeaturesMeta) to a
 * file: the project's binary record format (README: one record per frame,
 * read into numpy in a few lines) or OpenCV FileStorage YAML/XML (a sequence
 * `frames` of maps: pts, width, height, descriptor_format, keypoints,
 * descriptors). A frame without the meta gives a record with no keypoints.
 *
 * Every format is written through one FILE, each record flushed and checked,
 * so that a full disk or a failing device is an error at that frame, not a
 * file silently cut short: cv::FileStorage ignores failed writes, so the
 * YAML/XML records are formed by a FileStorage in memory and written here. */
#include "gstfeaturesink.h"

#include <gst/video/video.h>
#include <opencv2/core.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "gstcs-cxx.h"
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
  GstFeatureSinkFormat format_in_use;  // from start to stop
  std::string *text_end;               // YAML/XML: what closes the document after the last record
  bool write_failed;                   // an error was posted: the file is not finished
  guint64 frames;
  guint caps_width, caps_height;  // the frames' size by their caps (video/x-raw), 0 otherwise
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
  self->write_failed = false;
  self->format_in_use = format;
  self->file = std::fopen(location.c_str(), "wb");
  if (!self->file) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("Cannot open %s for writing", location.c_str()),
                      ("%s", std::strerror(errno)));
    return FALSE;
  }
  return TRUE;
}

static int storage_flags(GstFeatureSinkFormat format) {
  return cv::FileStorage::WRITE | cv::FileStorage::MEMORY |
         (format == GST_FEATURE_SINK_FORMAT_XML ? cv::FileStorage::FORMAT_XML : cv::FileStorage::FORMAT_YAML);
}

// A FileStorage document holding a sequence `frames` of `records` (0 or 1)
// maps written by `write`, split into what comes before the records, the
// records, and what closes the document (cv::FileStorage's own text, so that
// the file reads as if FileStorage had written it).
struct TextDocument {
  std::string head, records, end;
};

template <class Write>
static TextDocument text_document(GstFeatureSinkFormat format, bool with_record, Write &&write) {
  cv::FileStorage fs(format == GST_FEATURE_SINK_FORMAT_XML ? ".xml" : ".yml", storage_flags(format));
  fs << "frames" << "[";
  if (with_record) {
    fs << "{";
    write(fs);
    fs << "}";
  }
  fs << "]";
  const std::string text = fs.releaseAndGetString();
  if (!with_record) return {text, "", ""};
  const bool xml = format == GST_FEATURE_SINK_FORMAT_XML;
  const std::string open = xml ? "<frames>\n" : "frames:\n", close = xml ? "</frames>" : "";
  const size_t first = text.find(open), last = xml ? text.rfind(close) : text.size();
  if (first == std::string::npos || last == std::string::npos || last < first + open.size())
    throw std::runtime_error("unexpected cv::FileStorage output");
  const size_t records = first + open.size();
  return {text.substr(0, records), text.substr(records, last - records), text.substr(last)};
}

// Writes all of `bytes` and flushes them: a short write or a failed flush
// (a full disk shows there) throws.
static void write_checked(std::FILE *file, const void *bytes, size_t size) {
  if ((size && std::fwrite(bytes, 1, size, file) != size) || std::fflush(file) != 0)
    throw std::runtime_error(std::string("write failed: ") + std::strerror(errno));
}

static gboolean feature_sink_stop(GstBaseSink *sink) {
  auto *self = GST_FEATURE_SINK(sink);
  gboolean ok = TRUE;
  if (self->file && self->format_in_use != GST_FEATURE_SINK_FORMAT_BINARY && !self->write_failed) {
    try {  // the end of the document, or a whole empty one
      const std::string end = self->text_end ? *self->text_end
                                             : text_document(self->format_in_use, false, [](cv::FileStorage &) {}).head;
      write_checked(self->file, end.data(), end.size());
    } catch (const std::exception &e) {
      GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot finish %s", self->location), ("%s", e.what()));
      ok = FALSE;
    }
  }
  delete self->text_end;
  self->text_end = nullptr;
  if (self->file) {
    if (std::fclose(self->file) != 0) {
      GST_ELEMENT_ERROR(self, RESOURCE, CLOSE, ("Cannot close %s", self->location), ("%s", std::strerror(errno)));
      ok = FALSE;
    }
    self->file = nullptr;
  }
  GST_INFO_OBJECT(self, "%" G_GUINT64_FORMAT " frames written", self->frames);
  return ok;
}

static gboolean feature_sink_set_caps(GstBaseSink *sink, GstCaps *caps) {
  auto *self = GST_FEATURE_SINK(sink);
  GstVideoInfo info;
  const bool video = gst_video_info_from_caps(&info, caps);
  self->caps_width = video ? guint(GST_VIDEO_INFO_WIDTH(&info)) : 0;
  self->caps_height = video ? guint(GST_VIDEO_INFO_HEIGHT(&info)) : 0;
  return TRUE;
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
    width = self->caps_width;
    height = self->caps_height;
  }
  const uint64_t pts = GST_BUFFER_PTS_IS_VALID(buffer) ? GST_BUFFER_PTS(buffer) : UINT64_MAX;
  try {
    if (self->format_in_use == GST_FEATURE_SINK_FORMAT_BINARY) {
      sift_cpu::write_record(self->file, pts, width, height, sift_cpu::DescriptorFormat(format), f);
      write_checked(self->file, nullptr, 0);
    } else {
      const TextDocument doc = text_document(self->format_in_use, true, [&](cv::FileStorage &fs) {
        sift_cpu::write_record_fields(fs, pts, width, height, sift_cpu::DescriptorFormat(format), f);
      });
      if (!self->text_end) {
        write_checked(self->file, doc.head.data(), doc.head.size());
        self->text_end = new std::string(doc.end);
      }
      write_checked(self->file, doc.records.data(), doc.records.size());
    }
  } catch (const std::exception &e) {
    self->write_failed = true;
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write the features of frame %" G_GUINT64_FORMAT " to %s",
                                              self->frames, self->location),
                      ("%s", e.what()));
    return GST_FLOW_ERROR;
  }
  ++self->frames;
  return GST_FLOW_OK;
}

static void feature_sink_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
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
  sink_class->set_caps = feature_sink_set_caps;
  gst_type_mark_as_plugin_api(gst_feature_sink_format_get_type(), GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_feature_sink_debug, "featuresink", 0, "SIFT features file sink");
}

static void gst_feature_sink_init(GstFeatureSink *self) {
  self->format = GST_FEATURE_SINK_FORMAT_BINARY;
  gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}
