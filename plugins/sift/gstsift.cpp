/* sift: SIFT keypoints and descriptors of each video frame, attached as a
 * GstSiftFeaturesMeta; the frame passes through unchanged (in place).
 *
 * Backends: CUDA runs cs::sift::CudaSift (pyramid, detection, description)
 * on the element's stream, reading the frame where it is (system memory is
 * uploaded, the project's device memory read in place, nvcodec's
 * memory:CUDAMemory copied on the device: sift-nvcodec.h) and downloading the
 * results once per frame; the CPU backend runs OpenCV's cv::SIFT. Both take
 * the luma: the Y plane of NV12/I420, GRAY8 as is, OpenCV's BT.601
 * RGB-to-gray for RGBA/BGRA/BGRx (on the device for CUDA, sift-luma.h). The
 * grid filter is features_cpu's for both. */
#include "gstsift.h"

#include <gst/video/video.h>
#include <opencv2/imgproc.hpp>

#include <new>

#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "gstcs-cxx.h"
#include "sift-cuda.h"
#include "sift-nvcodec.h"
#include "sift-properties.h"
#include "sift/features_cpu.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_debug);
#define GST_CAT_DEFAULT gst_sift_debug

#define SIFT_FORMATS "{ GRAY8, NV12, I420, RGBA, BGRA, BGRx }"

struct _GstSift {
  GstCsBaseTransform parent;
  // properties (object lock)
  gstsift::EngineSettings engine;
  gstsift::OutputSettings output;
  // while running
  sift_cpu::Params params;        // both backends: the descriptor format and grid filter are read from here
  gstsift::CudaEngine *cuda;      // the CUDA backend's engine, NULL on the CPU backend
  GstVideoInfo info;
  gboolean have_info;
};

G_DEFINE_TYPE(GstSift, gst_sift, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(sift, "sift", GST_RANK_NONE, GST_TYPE_SIFT)

enum { PROP_0, PROP_ENGINE_FIRST, PROP_OUTPUT_FIRST = PROP_ENGINE_FIRST + gstsift::kEnginePropertyCount };

// Device memory, ours or nvcodec's (CUDA backend), or system memory (both backends).
#define SIFT_CAPS                                                                            \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_CS_DEVICE, SIFT_FORMATS) "; " \
  SIFT_NVCODEC_CAPS(SIFT_FORMATS)                                                          \
  GST_VIDEO_CAPS_MAKE(SIFT_FORMATS)
static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(SIFT_CAPS));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(SIFT_CAPS));

static gboolean sift_start(GstCsBaseTransform *base) {
  auto *self = GST_SIFT(base);
  GST_OBJECT_LOCK(self);
  const gstsift::EngineSettings engine = self->engine;
  const gstsift::OutputSettings output = self->output;
  GST_OBJECT_UNLOCK(self);
  sift_cpu::Params &p = self->params;
  p.n_features = engine.n_features;
  p.n_octave_layers = engine.n_octave_layers;
  p.contrast_threshold = engine.contrast_threshold;
  p.edge_threshold = engine.edge_threshold;
  p.sigma = engine.sigma;
  p.format = sift_cpu::DescriptorFormat(output.descriptor_format);
  p.grid_cols = output.grid_cols;
  p.grid_rows = output.grid_rows;
  p.max_per_cell = output.max_per_cell;
  self->have_info = FALSE;
  if (gst_cs_base_transform_use_cuda(base)) {
    return gstcs::guard_bool(GST_ELEMENT(self), "Starting CUDA SIFT", [&] {
      self->cuda = new gstsift::CudaEngine(gstsift::engine_params(engine), gst_cs_base_transform_get_device_id(base));
      GST_INFO_OBJECT(self, "CUDA backend on device %d", self->cuda->device());
      return TRUE;
    });
  }
  if (!engine.upsample) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("upsample=false is not available on the CPU backend"),
                      ("OpenCV's SIFT always doubles the image for its first octave; set upsample=true or use "
                       "backend=cuda."));
    return FALSE;
  }
  GST_INFO_OBJECT(self, "CPU backend (OpenCV)");
  return TRUE;
}

static gboolean sift_stop(GstCsBaseTransform *base) {
  auto *self = GST_SIFT(base);
  self->have_info = FALSE;
  delete self->cuda;  // waits for its stream
  self->cuda = nullptr;
  return TRUE;
}

static GstCaps *sift_transform_caps(GstBaseTransform *trans, GstPadDirection, GstCaps *caps, GstCaps *filter) {
  // In place: the same caps on both sides. Device memory (ours or nvcodec's)
  // only where the CUDA backend runs (the CPU backend would download every frame).
  GstCaps *same = gst_caps_ref(caps);
  if (!gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(trans))) {
    same = gst_caps_make_writable(same);
    for (guint i = gst_caps_get_size(same); i-- > 0;)
      if (gstsift::is_device_memory_feature(gst_caps_get_features(same, i))) gst_caps_remove_structure(same, i);
  }
  GstCaps *result = filter ? gst_caps_intersect_full(filter, same, GST_CAPS_INTERSECT_FIRST) : gst_caps_ref(same);
  gst_caps_unref(same);
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

static GstFlowReturn sift_transform_cpu(GstSift *self, GstBuffer *buf) {
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
}

static GstFlowReturn sift_transform_cuda(GstSift *self, GstBuffer *buf) {
  const sift_cpu::Params &p = self->params;
  self->cuda->run(buf, self->info, gstsift::engine_format(GstSiftDescriptorFormat(p.format)));
  gstsift::attach_features(GST_ELEMENT(self), buf, guint(GST_VIDEO_INFO_WIDTH(&self->info)),
                           guint(GST_VIDEO_INFO_HEIGHT(&self->info)), self->cuda->download(),
                           gstsift::GridFilter{p.grid_cols, p.grid_rows, p.max_per_cell});
  return GST_FLOW_OK;
}

static GstFlowReturn sift_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  auto *self = GST_SIFT(trans);
  if (!self->have_info) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps were negotiated before the first frame"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  return gstcs::guard_flow(GST_ELEMENT(self), "Extracting SIFT features", [&] {
    return self->cuda ? sift_transform_cuda(self, buf) : sift_transform_cpu(self, buf);
  });
}

static void sift_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT(object);
  GST_OBJECT_LOCK(self);
  if (!gstsift::set_engine_property(self->engine, prop_id - PROP_ENGINE_FIRST, value) &&
      !gstsift::set_output_property(self->output, prop_id - PROP_OUTPUT_FIRST, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void sift_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT(object);
  GST_OBJECT_LOCK(self);
  if (!gstsift::get_engine_property(self->engine, prop_id - PROP_ENGINE_FIRST, value) &&
      !gstsift::get_output_property(self->output, prop_id - PROP_OUTPUT_FIRST, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void gst_sift_class_init(GstSiftClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = sift_set_property;
  gobject_class->get_property = sift_get_property;
  gstsift::install_engine_properties(gobject_class, PROP_ENGINE_FIRST);
  gstsift::install_output_properties(gobject_class, PROP_OUTPUT_FIRST);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT features", "Filter/Analyzer/Video",
      "Finds SIFT keypoints and descriptors in each frame's luma (GRAY8, NV12, I420, RGBA, BGRA, BGRx; system or "
      "device memory, also nvcodec's memory:CUDAMemory) with OpenCV's parameters and attaches them as a "
      "GstSiftFeaturesMeta, strongest first; frames pass through unchanged. CUDA backend (the siftpyramid, "
      "siftdetect and siftdescribe stages in one element) or CPU backend (OpenCV's cv::SIFT)",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_caps = sift_transform_caps;
  trans_class->set_caps = sift_set_caps;
  trans_class->transform_ip = sift_transform_ip;
  trans_class->passthrough_on_same_caps = FALSE;
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  cs_class->start_backend = sift_start;
  cs_class->stop_backend = sift_stop;
  GST_DEBUG_CATEGORY_INIT(gst_sift_debug, "sift", 0, "SIFT features");
}

static void gst_sift_init(GstSift *self) {
  new (&self->engine) gstsift::EngineSettings();
  new (&self->output) gstsift::OutputSettings();
  new (&self->params) sift_cpu::Params();
  self->have_info = FALSE;
  self->cuda = nullptr;
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
