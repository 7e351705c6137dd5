/* sift: SIFT keypoints and descriptors of each video frame, attached as a
 * GstSiftFeaturesMeta; the frame passes through unchanged (in place).
 *
 * Backends: the CPU backend runs OpenCV's cv::SIFT on the frame's luma (the
 * Y plane of NV12/I420, GRAY8 as is, OpenCV's BGR-to-gray weights for
 * RGBA/BGRA/BGRx). The CUDA SIFT kernels are not built yet: backend=cuda
 * fails at the state change, backend=auto runs the CPU backend (with a
 * warning when a device is present). */
#include "gstsift.h"

#include <gst/video/video.h>
#include <opencv2/imgproc.hpp>

#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "gstcs-cxx.h"
#include "sift/features_cpu.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_debug);
#define GST_CAT_DEFAULT gst_sift_debug

#define SIFT_FORMATS "{ GRAY8, NV12, I420, RGBA, BGRA, BGRx }"

struct _GstSift {
  GstCsBaseTransform parent;
  // properties (object lock)
  int n_features, n_octave_layers;
  double contrast_threshold, edge_threshold, sigma;
  gboolean upsample;
  GstSiftDescriptorFormat descriptor_format;
  int grid_cols, grid_rows, max_per_cell;
  // while running
  sift_cpu::Params params;
  GstVideoInfo info;
  gboolean have_info;
};

G_DEFINE_TYPE(GstSift, gst_sift, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(sift, "sift", GST_RANK_NONE, GST_TYPE_SIFT)

enum {
  PROP_0,
  PROP_N_FEATURES,
  PROP_N_OCTAVE_LAYERS,
  PROP_CONTRAST_THRESHOLD,
  PROP_EDGE_THRESHOLD,
  PROP_SIGMA,
  PROP_UPSAMPLE,
  PROP_DESCRIPTOR_FORMAT,
  PROP_GRID_COLS,
  PROP_GRID_ROWS,
  PROP_MAX_PER_CELL,
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(SIFT_FORMATS)));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(SIFT_FORMATS)));

static gboolean sift_start(GstCsBaseTransform *base) {
  auto *self = GST_SIFT(base);
  GstCsBackend backend = GST_CS_BACKEND_AUTO;
  g_object_get(self, "backend", &backend, nullptr);
  if (gst_cs_base_transform_use_cuda(base)) {
    if (backend == GST_CS_BACKEND_CUDA) {
      GST_ELEMENT_ERROR(self, LIBRARY, INIT, ("CUDA SIFT not built yet"),
                        ("backend=cuda was asked for, but only the CPU backend (OpenCV) exists so far; use "
                         "backend=auto or backend=cpu."));
      return FALSE;
    }
    GST_WARNING_OBJECT(self, "CUDA SIFT not built yet: backend=auto runs OpenCV's SIFT on the CPU");
  }
  GST_OBJECT_LOCK(self);
  sift_cpu::Params &p = self->params;
  p.n_features = self->n_features;
  p.n_octave_layers = self->n_octave_layers;
  p.contrast_threshold = self->contrast_threshold;
  p.edge_threshold = self->edge_threshold;
  p.sigma = self->sigma;
  p.format = sift_cpu::DescriptorFormat(self->descriptor_format);
  p.grid_cols = self->grid_cols;
  p.grid_rows = self->grid_rows;
  p.max_per_cell = self->max_per_cell;
  const bool upsample = self->upsample;
  GST_OBJECT_UNLOCK(self);
  if (!upsample) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("upsample=false is not available on the CPU backend"),
                      ("OpenCV's SIFT always doubles the image for its first octave; set upsample=true."));
    return FALSE;
  }
  self->have_info = FALSE;
  return TRUE;
}

static gboolean sift_stop(GstCsBaseTransform *base) {
  GST_SIFT(base)->have_info = FALSE;
  return TRUE;
}

static GstCaps *sift_transform_caps(GstBaseTransform *trans, GstPadDirection, GstCaps *caps, GstCaps *filter) {
  // In place: the same caps on both sides.
  GstCaps *result = filter ? gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST) : gst_caps_ref(caps);
  GST_LOG_OBJECT(trans, "%" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT, caps, result);
  return result;
}

static gboolean sift_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *) {
  auto *self = GST_SIFT(trans);
  if (!gst_video_info_from_caps(&self->info, incaps) || GST_VIDEO_INFO_WIDTH(&self->info) <= 0 ||
      GST_VIDEO_INFO_HEIGHT(&self->info) <= 0) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot use the caps %" GST_PTR_FORMAT, incaps),
                      ("sift needs video/x-raw frames of at least 1x1 pixels in " SIFT_FORMATS));
    return FALSE;
  }
  self->have_info = TRUE;
  return TRUE;
}

// The frame's luma as an 8-bit gray image (a view where the frame has a luma plane).
static cv::Mat frame_luma(const GstVideoFrame &frame) {
  const int w = GST_VIDEO_FRAME_WIDTH(&frame), h = GST_VIDEO_FRAME_HEIGHT(&frame);
  void *data = GST_VIDEO_FRAME_PLANE_DATA(&frame, 0);
  const size_t stride = size_t(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0));
  switch (GST_VIDEO_FRAME_FORMAT(&frame)) {
    case GST_VIDEO_FORMAT_GRAY8:
    case GST_VIDEO_FORMAT_NV12:
    case GST_VIDEO_FORMAT_I420:
      return cv::Mat(h, w, CV_8UC1, data, stride);
    case GST_VIDEO_FORMAT_RGBA: {
      cv::Mat gray;
      cv::cvtColor(cv::Mat(h, w, CV_8UC4, data, stride), gray, cv::COLOR_RGBA2GRAY);
      return gray;
    }
    case GST_VIDEO_FORMAT_BGRA:
    case GST_VIDEO_FORMAT_BGRx: {
      cv::Mat gray;
      cv::cvtColor(cv::Mat(h, w, CV_8UC4, data, stride), gray, cv::COLOR_BGRA2GRAY);
      return gray;
    }
    default:
      throw std::invalid_argument(std::string("unsupported video format ") +
                                  gst_video_format_to_string(GST_VIDEO_FRAME_FORMAT(&frame)));
  }
}

static GstFlowReturn sift_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  auto *self = GST_SIFT(trans);
  if (!self->have_info) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps were negotiated before the first frame"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  return gstcs::guard_flow(GST_ELEMENT(self), "Extracting SIFT features", [&] {
    GstVideoFrame frame;
    if (!gst_video_frame_map(&frame, &self->info, buf, GST_MAP_READ)) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot map the frame for reading"),
                        ("buffer of %" G_GSIZE_FORMAT " bytes for %dx%d %s", gst_buffer_get_size(buf),
                         GST_VIDEO_INFO_WIDTH(&self->info), GST_VIDEO_INFO_HEIGHT(&self->info),
                         GST_VIDEO_INFO_NAME(&self->info)));
      return GST_FLOW_ERROR;
    }
    sift_cpu::Features f;
    try {
      f = sift_cpu::detect_and_describe(frame_luma(frame), self->params);
    } catch (...) {
      gst_video_frame_unmap(&frame);
      throw;
    }
    gst_video_frame_unmap(&frame);
    gst_sift::add_features(buf, guint(GST_VIDEO_INFO_WIDTH(&self->info)), guint(GST_VIDEO_INFO_HEIGHT(&self->info)),
                           f.keypoints, f.descriptors, GstSiftDescriptorFormat(self->params.format));
    GST_LOG_OBJECT(self, "%zu keypoints", f.keypoints.size());
    return GST_FLOW_OK;
  });
}

static void sift_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_N_FEATURES: self->n_features = g_value_get_int(value); break;
    case PROP_N_OCTAVE_LAYERS: self->n_octave_layers = g_value_get_int(value); break;
    case PROP_CONTRAST_THRESHOLD: self->contrast_threshold = g_value_get_double(value); break;
    case PROP_EDGE_THRESHOLD: self->edge_threshold = g_value_get_double(value); break;
    case PROP_SIGMA: self->sigma = g_value_get_double(value); break;
    case PROP_UPSAMPLE: self->upsample = g_value_get_boolean(value); break;
    case PROP_DESCRIPTOR_FORMAT: self->descriptor_format = GstSiftDescriptorFormat(g_value_get_enum(value)); break;
    case PROP_GRID_COLS: self->grid_cols = g_value_get_int(value); break;
    case PROP_GRID_ROWS: self->grid_rows = g_value_get_int(value); break;
    case PROP_MAX_PER_CELL: self->max_per_cell = g_value_get_int(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void sift_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_N_FEATURES: g_value_set_int(value, self->n_features); break;
    case PROP_N_OCTAVE_LAYERS: g_value_set_int(value, self->n_octave_layers); break;
    case PROP_CONTRAST_THRESHOLD: g_value_set_double(value, self->contrast_threshold); break;
    case PROP_EDGE_THRESHOLD: g_value_set_double(value, self->edge_threshold); break;
    case PROP_SIGMA: g_value_set_double(value, self->sigma); break;
    case PROP_UPSAMPLE: g_value_set_boolean(value, self->upsample); break;
    case PROP_DESCRIPTOR_FORMAT: g_value_set_enum(value, self->descriptor_format); break;
    case PROP_GRID_COLS: g_value_set_int(value, self->grid_cols); break;
    case PROP_GRID_ROWS: g_value_set_int(value, self->grid_rows); break;
    case PROP_MAX_PER_CELL: g_value_set_int(value, self->max_per_cell); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_sift_class_init(GstSiftClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = sift_set_property;
  gobject_class->get_property = sift_get_property;
  const auto flags = GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_N_FEATURES,
      g_param_spec_int("n-features", "Number of features",
                       "Keep the n strongest keypoints by response (cv::SIFT nfeatures); 0 = all", 0, G_MAXINT, 0,
                       flags));
  g_object_class_install_property(
      gobject_class, PROP_N_OCTAVE_LAYERS,
      g_param_spec_int("n-octave-layers", "Octave layers",
                       "Scale layers per octave (cv::SIFT nOctaveLayers); octaves follow from the frame size", 1, 32,
                       3, flags));
  g_object_class_install_property(
      gobject_class, PROP_CONTRAST_THRESHOLD,
      g_param_spec_double("contrast-threshold", "Contrast threshold",
                          "Minimum DoG contrast of a keypoint, divided by n-octave-layers as OpenCV does (cv::SIFT "
                          "contrastThreshold; image values scaled to [0, 1])",
                          0.0, G_MAXDOUBLE, 0.04, flags));
  g_object_class_install_property(
      gobject_class, PROP_EDGE_THRESHOLD,
      g_param_spec_double("edge-threshold", "Edge threshold",
                          "Maximum ratio of principal curvatures r; keypoints with (r+1)^2/r or more in the "
                          "Hessian test are dropped as edges (cv::SIFT edgeThreshold)",
                          0.0, G_MAXDOUBLE, 10.0, flags));
  g_object_class_install_property(
      gobject_class, PROP_SIGMA,
      g_param_spec_double("sigma", "Sigma",
                          "Gaussian sigma of the first octave's base image, in pixels of that octave (cv::SIFT "
                          "sigma); the input is assumed pre-blurred by 0.5",
                          0.01, 100.0, 1.6, flags));
  g_object_class_install_property(
      gobject_class, PROP_UPSAMPLE,
      g_param_spec_boolean("upsample", "Upsample",
                           "Double the image for the first octave (as OpenCV always does). The CPU backend "
                           "(OpenCV) cannot turn this off: upsample=false fails at start there",
                           TRUE, flags));
  g_object_class_install_property(
      gobject_class, PROP_DESCRIPTOR_FORMAT,
      g_param_spec_enum("descriptor-format", "Descriptor format",
                        "How descriptors are stored in the meta: opencv (128 bytes), float (128 float32, OpenCV's "
                        "default values) or rootsift (128 float32, L1-normalised square roots, unit L2)",
                        GST_TYPE_SIFT_DESCRIPTOR_FORMAT, GST_SIFT_DESCRIPTOR_OPENCV, flags));
  g_object_class_install_property(
      gobject_class, PROP_GRID_COLS,
      g_param_spec_int("grid-cols", "Grid columns",
                       "Columns of the spatial grid filter (equal-width cells over the frame); 0 = no grid filter",
                       0, 4096, 0, flags));
  g_object_class_install_property(
      gobject_class, PROP_GRID_ROWS,
      g_param_spec_int("grid-rows", "Grid rows",
                       "Rows of the spatial grid filter (equal-height cells over the frame); 0 = no grid filter", 0,
                       4096, 0, flags));
  g_object_class_install_property(
      gobject_class, PROP_MAX_PER_CELL,
      g_param_spec_int("max-per-cell", "Maximum features per cell",
                       "Keep at most this many keypoints, the strongest by response, in each grid cell; 0 = no "
                       "grid filter. Applied after n-features",
                       0, G_MAXINT, 0, flags));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT features", "Filter/Analyzer/Video",
      "Finds SIFT keypoints and descriptors in each frame's luma (GRAY8, NV12, I420, RGBA, BGRA, BGRx) with "
      "OpenCV's parameters and attaches them as a GstSiftFeaturesMeta, strongest first; frames pass through "
      "unchanged. CPU backend (OpenCV's cv::SIFT) only so far",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_caps = sift_transform_caps;
  trans_class->set_caps = sift_set_caps;
  trans_class->transform_ip = sift_transform_ip;
  trans_class->passthrough_on_same_caps = FALSE;
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  cs_class->start_backend = sift_start;
  cs_class->stop_backend = sift_stop;
  gst_type_mark_as_plugin_api(GST_TYPE_SIFT_DESCRIPTOR_FORMAT, GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_sift_debug, "sift", 0, "SIFT features");
}

static void gst_sift_init(GstSift *self) {
  self->n_features = 0;
  self->n_octave_layers = 3;
  self->contrast_threshold = 0.04;
  self->edge_threshold = 10.0;
  self->sigma = 1.6;
  self->upsample = TRUE;
  self->descriptor_format = GST_SIFT_DESCRIPTOR_OPENCV;
  self->grid_cols = self->grid_rows = self->max_per_cell = 0;
  self->have_info = FALSE;
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
