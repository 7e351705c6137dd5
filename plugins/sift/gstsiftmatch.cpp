/* siftmatch: matches each frame's SIFT descriptors (GstSiftFeaturesMeta)
 * against the previous frame's or against a reference (a features file
 * written by featuresink, or a picture: sift-picture.h), with Lowe's ratio
 * test and an optional mutual check, and attaches a GstSiftMatchesMeta;
 * optionally a RANSAC homography (cv::findHomography) from the frame's
 * points to the reference's. Frames pass through unchanged.
 *
 * Backends: CUDA matches every descriptor format (bytes, float, RootSIFT)
 * with cs::sift::CudaMatcher (sift_match.h; the reference's descriptors stay
 * on the device, the previous frame's are uploaded once per frame); the CPU
 * backend uses features_cpu's cv::BFMatcher. Byte descriptors give the same
 * matches on both; float ones the same but for ratios within float rounding
 * of the threshold (sift_match.h says why).
 *
 * Against the previous frame, a flush (a seek) or a new stream starts afresh:
 * the first frame after it has nothing to match, as the stream's first frame.
 * A discontinuity alone (a live source's dropped frame) does not: the frame
 * before it is still the nearest view of the scene. */
#include "gstsiftmatch.h"

#include <opencv2/calib3d.hpp>

#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "gstcs-cxx.h"
#include "sift-picture.h"
#include "sift-properties.h"
#include "sift/features_cpu.h"
#include "sift/sift_match.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_match_debug);
#define GST_CAT_DEFAULT gst_sift_match_debug

// The CUDA backend's matcher on the element's own stream; `train_uploaded`
// says whether the device holds the current train descriptors.
struct GpuMatching {
  explicit GpuMatching(int device) : stream(device), matcher(device) {}
  cs::Stream stream;
  cs::sift::CudaMatcher matcher;
  bool train_uploaded = false;
  bool query_uploaded = false;  // this frame's rows are on the device (the next frame's train rows)
};

struct _GstSiftMatcher {
  GstCsBaseTransform parent;
  // properties (object lock)
  gchar *reference;
  double ratio;
  gboolean mutual_check;
  gboolean homography;
  double ransac_threshold;
  gboolean post_messages;
  gboolean custom_meta;
  // while running
  std::optional<sift_cpu::Features> *train;  // reference or previous frame
  GstSiftDescriptorFormat train_format;       // its descriptors' format
  bool train_is_reference;
  cv::Mat *reference_picture;  // a reference given as a picture, until its features are found (first frame)
  GpuMatching *gpu;  // the CUDA backend's, NULL on the CPU backend
  bool logged_cpu_fallback;
};

// The type is registered by hand under the name "GstSiftMatch", so that
// instances are named like the factory (siftmatch0, siftmatch1, ...) in
// messages and pipeline dumps; in C that name is the matches meta's record.
static void gst_sift_matcher_class_init(GstSiftMatcherClass *klass);
static void gst_sift_matcher_init(GstSiftMatcher *self);
static gpointer gst_sift_matcher_parent_class = nullptr;

static void gst_sift_matcher_class_intern_init(gpointer klass, gpointer) {
  gst_sift_matcher_parent_class = g_type_class_peek_parent(klass);
  gst_sift_matcher_class_init(static_cast<GstSiftMatcherClass *>(klass));
}

static void gst_sift_matcher_instance_init(GTypeInstance *instance, gpointer) {
  gst_sift_matcher_init(reinterpret_cast<GstSiftMatcher *>(instance));
}

GType gst_sift_matcher_get_type(void) {
  static gsize type = 0;
  if (g_once_init_enter(&type)) {
    const GType registered = g_type_register_static_simple(
        GST_TYPE_CS_BASE_TRANSFORM, g_intern_static_string("GstSiftMatch"), sizeof(GstSiftMatcherClass),
        gst_sift_matcher_class_intern_init, sizeof(GstSiftMatcher),
        gst_sift_matcher_instance_init, GTypeFlags(0));
    g_once_init_leave(&type, registered);
  }
  return type;
}
GST_ELEMENT_REGISTER_DEFINE(siftmatch, "siftmatch", GST_RANK_NONE, GST_TYPE_SIFT_MATCHER)

enum {
  PROP_0,
  PROP_REFERENCE,
  PROP_RATIO,
  PROP_MUTUAL_CHECK,
  PROP_HOMOGRAPHY,
  PROP_RANSAC_THRESHOLD,
  PROP_POST_MESSAGES,
  PROP_CUSTOM_META
};

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static gboolean match_start(GstCsBaseTransform *base) {
  auto *self = GST_SIFT_MATCHER(base);
  GST_OBJECT_LOCK(self);
  const std::string reference = self->reference ? self->reference : "";
  GST_OBJECT_UNLOCK(self);
  self->train->reset();
  self->train_is_reference = !reference.empty();
  self->logged_cpu_fallback = false;
  self->reference_picture->release();
  if (!reference.empty()) {
    try {
      if (!std::ifstream(reference)) throw std::runtime_error(reference + ": cannot open");
      if (sift_cpu::is_features_file(reference)) {
        std::vector<sift_cpu::Record> records = sift_cpu::read_records(reference);
        if (records.empty()) throw std::runtime_error(reference + ": no records");
        self->train_format = GstSiftDescriptorFormat(records.front().header.format);
        self->train->emplace(std::move(records.front().features));
        GST_INFO_OBJECT(self, "reference %s: %zu keypoints", reference.c_str(), (*self->train)->keypoints.size());
      } else {
        try {
          *self->reference_picture = gstsift::picture_luma(reference);
        } catch (const std::runtime_error &e) {
          throw std::runtime_error(reference + ": not a features file of featuresink (binary, OpenCV YAML or XML), " +
                                   e.what());
        }
        GST_INFO_OBJECT(self, "reference picture %s: %dx%d, its features found at the first frame", reference.c_str(),
                        self->reference_picture->cols, self->reference_picture->rows);
      }
    } catch (const std::exception &e) {
      GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("Cannot read the reference %s", reference.c_str()),
                        ("%s", e.what()));
      return FALSE;
    }
  }
  if (!gst_cs_base_transform_use_cuda(base)) {
    GST_INFO_OBJECT(self, "CPU backend (OpenCV's brute-force matcher)");
    return TRUE;
  }
  return gstcs::guard_bool(GST_ELEMENT(self), "Starting CUDA matching", [&] {
    delete self->gpu;  // a start that failed before its stop
    self->gpu = nullptr;
    self->gpu = new GpuMatching(gst_cs_base_transform_get_device_id(base));
    GST_INFO_OBJECT(self, "CUDA backend on device %d", self->gpu->matcher.device());
    return TRUE;
  });
}

static gboolean match_stop(GstCsBaseTransform *base) {
  auto *self = GST_SIFT_MATCHER(base);
  self->train->reset();
  delete self->gpu;  // match() has waited for its stream
  self->gpu = nullptr;
  return TRUE;
}

// Forgets the previous frame (not a reference) on a flush or a new stream.
static gboolean match_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_SIFT_MATCHER(trans);
  const GstEventType type = GST_EVENT_TYPE(event);
  if ((type == GST_EVENT_FLUSH_STOP || type == GST_EVENT_STREAM_START) && !self->train_is_reference &&
      self->train->has_value()) {
    GST_DEBUG_OBJECT(self, "%s: the next frame is matched against nothing", GST_EVENT_TYPE_NAME(event));
    self->train->reset();
    if (self->gpu) self->gpu->train_uploaded = false;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_sift_matcher_parent_class)->sink_event(trans, event);
}

// Whether the CUDA matcher takes these descriptors: rows of 128 bytes, or
// of 128 floats, both sides alike.
static bool gpu_can_match(const cv::Mat &query, const cv::Mat &train) {
  const bool bytes = query.type() == CV_8U && query.cols == cs::sift::kMatchDescriptorBytes;
  const bool floats = query.type() == CV_32F && query.cols == cs::sift::kMatchDescriptorFloats;
  return (bytes || floats) && train.type() == query.type() && train.cols == query.cols && query.isContinuous() &&
         train.isContinuous();
}

// The frame's matches (ratio test, mutual check), sorted by query index: on
// the device on the CUDA backend, else cv::BFMatcher.
static std::vector<sift_cpu::Match> find_matches(GstSiftMatcher *self, const cv::Mat &query, const cv::Mat &train,
                                                 double ratio, bool mutual) {
  if (!self->gpu || query.empty() || train.empty() || !gpu_can_match(query, train)) {
    if (self->gpu && !self->logged_cpu_fallback && !query.empty() && !train.empty()) {
      GST_INFO_OBJECT(self, "descriptors of %d columns matched on the CPU (the CUDA matcher takes rows of 128)",
                      query.cols);
      self->logged_cpu_fallback = true;
    }
    return sift_cpu::match_descriptors(query, train, ratio, mutual);
  }
  GpuMatching &gpu = *self->gpu;
  const bool floats = query.type() == CV_32F;
  if (!gpu.train_uploaded) {
    if (floats)
      gpu.matcher.set_train(train.ptr<float>(), train.rows, gpu.stream.get());
    else
      gpu.matcher.set_train(train.ptr<uint8_t>(), train.rows, gpu.stream.get());
    gpu.train_uploaded = true;
  }
  const std::vector<cs::sift::DescriptorMatch> found =
      floats ? gpu.matcher.match(query.ptr<float>(), query.rows, ratio, mutual, gpu.stream.get())
             : gpu.matcher.match(query.ptr<uint8_t>(), query.rows, ratio, mutual, gpu.stream.get());
  gpu.query_uploaded = true;
  std::vector<sift_cpu::Match> out;
  for (const cs::sift::DescriptorMatch &m : found) out.push_back({m.query, m.train, m.distance, false});
  return out;
}

// The frame's matches in brief, as an element message for applications and
// gst-launch-1.0 -m: counts, inliers and the homography.
static void post_summary(GstSiftMatcher *self, GstBuffer *buf, const GstSiftMatchesMeta *m, guint keypoints) {
  guint inliers = 0;
  for (guint i = 0; i < m->count; ++i) inliers += m->matches[i].inlier ? 1 : 0;
  GstStructure *s = gst_structure_new("siftmatch", "timestamp", G_TYPE_UINT64, GST_BUFFER_PTS(buf), "keypoints",
                                      G_TYPE_UINT, keypoints, "reference-keypoints", G_TYPE_UINT, m->train_count,
                                      "matches", G_TYPE_UINT, m->count, "inliers", G_TYPE_UINT, inliers, nullptr);
  if (m->has_homography) {
    GValue array = G_VALUE_INIT, v = G_VALUE_INIT;
    gst_value_array_init(&array, 9);
    g_value_init(&v, G_TYPE_DOUBLE);
    for (int k = 0; k < 9; ++k) {
      g_value_set_double(&v, m->homography[k]);
      gst_value_array_append_value(&array, &v);
    }
    gst_structure_take_value(s, "homography", &array);
    g_value_unset(&v);
  }
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
}

static const char *descriptor_format_name(GstSiftDescriptorFormat format) {
  GEnumClass *formats = G_ENUM_CLASS(g_type_class_ref(GST_TYPE_SIFT_DESCRIPTOR_FORMAT));
  const GEnumValue *value = g_enum_get_value(formats, format);
  g_type_class_unref(formats);  // registered statically: the names stay
  return value ? value->value_nick : "of an unknown format";
}

static GstFlowReturn match_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  auto *self = GST_SIFT_MATCHER(trans);
  const GstSiftFeaturesMeta *meta = gst_buffer_get_sift_features_meta(buf);
  if (!meta) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("A frame has no SIFT features"),
                      ("Put the sift element before siftmatch (buffer pts %" GST_TIME_FORMAT ")",
                       GST_TIME_ARGS(GST_BUFFER_PTS(buf))));
    return GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK(self);
  const double ratio = self->ratio;
  const bool mutual = self->mutual_check, want_h = self->homography;
  const double threshold = self->ransac_threshold;
  const bool post = self->post_messages;
  const bool custom_meta = self->custom_meta;
  GST_OBJECT_UNLOCK(self);
  sift_cpu::Features query{gst_sift::keypoints(*meta), gst_sift::descriptors(*meta)};
  if (!self->reference_picture->empty()) {
    // OpenCV's SIFT with its default parameters (sift's), in the frames' descriptor format.
    sift_cpu::Params params;
    params.format = sift_cpu::DescriptorFormat(meta->descriptor_format);
    try {
      self->train->emplace(sift_cpu::detect_and_describe(*self->reference_picture, params));
    } catch (const std::exception &e) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot find the SIFT features of the reference picture"),
                        ("%s", e.what()));
      return GST_FLOW_ERROR;
    }
    self->train_format = meta->descriptor_format;
    GST_INFO_OBJECT(self, "reference picture: %zu keypoints, %s descriptors", (*self->train)->keypoints.size(),
                    descriptor_format_name(self->train_format));
    self->reference_picture->release();
  }
  if (self->train->has_value() && meta->descriptor_format != self->train_format) {
    // float and RootSIFT rows are both float32: only the formats tell them apart
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("Cannot match the frame's features"),
                      ("the frame's descriptors are %s, the %s's %s: give both the same descriptor-format",
                       descriptor_format_name(meta->descriptor_format),
                       self->train_is_reference ? "reference" : "previous frame",
                       descriptor_format_name(self->train_format)));
    return GST_FLOW_ERROR;
  }
  std::vector<sift_cpu::Match> matches;
  guint train_count = 0;
  cv::Mat h;
  if (self->gpu) self->gpu->query_uploaded = false;
  try {
    if (self->train->has_value()) {
      const sift_cpu::Features &train = **self->train;
      train_count = guint(train.keypoints.size());
      matches = find_matches(self, query.descriptors, train.descriptors, ratio, mutual);
      if (want_h && matches.size() >= 4) {
        std::vector<cv::Point2f> from, to;
        for (const auto &m : matches) {
          from.push_back(query.keypoints[size_t(m.query)].pt);
          to.push_back(train.keypoints[size_t(m.train)].pt);
        }
        std::vector<uchar> mask;
        h = cv::findHomography(from, to, cv::RANSAC, threshold, mask);
        if (!h.empty())
          for (size_t i = 0; i < matches.size(); ++i) matches[i].inlier = mask[i] != 0;
      }
    }
  } catch (const cs::CudaError &e) {
    gstcs::post_error(GST_ELEMENT(self), "Matching the frame's features", e);
    return GST_FLOW_ERROR;
  } catch (const std::exception &e) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot match the frame's features"), ("%s", e.what()));
    return GST_FLOW_ERROR;
  }
  GstSiftMatchesMeta *out = gst_buffer_add_sift_matches_meta(buf, guint(matches.size()));
  out->train_count = train_count;
  for (size_t i = 0; i < matches.size(); ++i)
    out->matches[i] = GstSiftMatch{guint32(matches[i].query), guint32(matches[i].train), matches[i].distance,
                                   matches[i].inlier ? TRUE : FALSE};
  if (!h.empty()) {
    out->has_homography = TRUE;
    for (int k = 0; k < 9; ++k) out->homography[k] = h.at<double>(k / 3, k % 3);
  }
  GST_LOG_OBJECT(self, "%zu matches of %zu keypoints against %u", matches.size(), query.keypoints.size(), train_count);
  if (post) post_summary(self, buf, out, guint(query.keypoints.size()));
  if (custom_meta && !gst_buffer_add_sift_matches_custom_meta(buf, out)) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot add the matches' custom meta to the frame"), (nullptr));
    return GST_FLOW_ERROR;
  }
  if (!self->train_is_reference) {
    self->train_format = meta->descriptor_format;
    self->train->emplace(std::move(query));
    // The next frame matches against this one's rows: kept on the device when they were uploaded.
    if (self->gpu) {
      if (self->gpu->query_uploaded) self->gpu->matcher.train_on_last_query();
      self->gpu->train_uploaded = self->gpu->query_uploaded;
    }
  }
  return GST_FLOW_OK;
}

static void match_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_SIFT_MATCHER(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_REFERENCE:
      g_free(self->reference);
      self->reference = g_value_dup_string(value);
      break;
    case PROP_RATIO: self->ratio = g_value_get_double(value); break;
    case PROP_MUTUAL_CHECK: self->mutual_check = g_value_get_boolean(value); break;
    case PROP_HOMOGRAPHY: self->homography = g_value_get_boolean(value); break;
    case PROP_RANSAC_THRESHOLD: self->ransac_threshold = g_value_get_double(value); break;
    case PROP_POST_MESSAGES: self->post_messages = g_value_get_boolean(value); break;
    case PROP_CUSTOM_META: self->custom_meta = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void match_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT_MATCHER(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_REFERENCE: g_value_set_string(value, self->reference); break;
    case PROP_RATIO: g_value_set_double(value, self->ratio); break;
    case PROP_MUTUAL_CHECK: g_value_set_boolean(value, self->mutual_check); break;
    case PROP_HOMOGRAPHY: g_value_set_boolean(value, self->homography); break;
    case PROP_RANSAC_THRESHOLD: g_value_set_double(value, self->ransac_threshold); break;
    case PROP_POST_MESSAGES: g_value_set_boolean(value, self->post_messages); break;
    case PROP_CUSTOM_META: g_value_set_boolean(value, self->custom_meta); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void match_finalize(GObject *object) {
  auto *self = GST_SIFT_MATCHER(object);
  g_free(self->reference);
  delete self->train;
  delete self->reference_picture;
  delete self->gpu;
  G_OBJECT_CLASS(gst_sift_matcher_parent_class)->finalize(object);
}

static void gst_sift_matcher_class_init(GstSiftMatcherClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = match_set_property;
  gobject_class->get_property = match_get_property;
  gobject_class->finalize = match_finalize;
  const auto flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  // read with each frame: they may change while the element runs
  const auto live_flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  g_object_class_install_property(
      gobject_class, PROP_REFERENCE,
      g_param_spec_string("reference", "Reference features",
                          "What to match against: a features file written by featuresink (any format; its first "
                          "record is used), or a picture GStreamer decodes (PNG, JPEG, ...; sift's luma of it), whose "
                          "features OpenCV's SIFT finds with its default parameters in the frames' descriptor format "
                          "at the first frame; unset = match each frame against the previous one",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_RATIO,
      g_param_spec_double("ratio", "Ratio test",
                          "Lowe's ratio test: keep a match when its L2 distance is below ratio times the second "
                          "nearest neighbour's",
                          0.0, 1.0, 0.8, live_flags));
  g_object_class_install_property(
      gobject_class, PROP_MUTUAL_CHECK,
      g_param_spec_boolean("mutual-check", "Mutual check",
                           "Keep only pairs that are each other's nearest neighbours", FALSE, live_flags));
  g_object_class_install_property(
      gobject_class, PROP_HOMOGRAPHY,
      g_param_spec_boolean("homography", "Homography",
                           "Estimate the homography from the frame's points to the reference's with RANSAC "
                           "(cv::findHomography; needs 4 matches) and mark the inliers",
                           FALSE, live_flags));
  g_object_class_install_property(
      gobject_class, PROP_RANSAC_THRESHOLD,
      g_param_spec_double("ransac-threshold", "RANSAC threshold",
                          "Largest reprojection error, in pixels, of a RANSAC inlier", 0.01, 1000.0, 3.0, live_flags));
  g_object_class_install_property(
      gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean("post-messages", "Post messages",
                           "Post an element message \"siftmatch\" per frame: timestamp, keypoints, "
                           "reference-keypoints, matches, inliers and, when found, homography (9 doubles, row-major)",
                           FALSE, live_flags));
  g_object_class_install_property(
      gobject_class, PROP_CUSTOM_META,
      g_param_spec_boolean("custom-meta", "Custom meta",
                           "Also attach the matches as a GstCustomMeta named GstSiftMatches (a GstStructure: counts, "
                           "the match records as GBytes, the homography), which Python and other language bindings "
                           "read from an appsink's buffers",
                           FALSE, live_flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT matcher", "Filter/Analyzer/Video",
      "Matches each frame's SIFT descriptors against the previous frame, a reference picture or a features file "
      "(Lowe's ratio test, optional mutual check, optional RANSAC homography) and attaches a GstSiftMatchesMeta; "
      "frames pass through unchanged. CUDA backend (brute force on the device, every descriptor format) or CPU "
      "backend (OpenCV's brute-force matcher)",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_ip = match_transform_ip;
  trans_class->sink_event = match_sink_event;
  trans_class->passthrough_on_same_caps = FALSE;
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  cs_class->start_backend = match_start;
  cs_class->stop_backend = match_stop;
  GST_DEBUG_CATEGORY_INIT(gst_sift_match_debug, "siftmatch", 0, "SIFT matching");
}

static void gst_sift_matcher_init(GstSiftMatcher *self) {
  self->ratio = 0.8;
  self->mutual_check = FALSE;
  self->homography = FALSE;
  self->ransac_threshold = 3.0;
  self->post_messages = FALSE;
  self->custom_meta = FALSE;
  self->train = new std::optional<sift_cpu::Features>();
  self->reference_picture = new cv::Mat();
  self->gpu = nullptr;
  self->logged_cpu_fallback = false;
  gstsift::init_video_filter(GST_BASE_TRANSFORM(self));
}
