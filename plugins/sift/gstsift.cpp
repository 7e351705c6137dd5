/* sift: SIFT keypoints and descriptors of each video frame, attached as a
 * GstSiftFeaturesMeta; the frame passes through unchanged (in place).
 *
 * Backends: CUDA runs cs::sift::CudaSift (pyramid, detection, description)
 * on the element's stream, reading the frame where it is (system memory is
 * uploaded, the project's device memory read in place, nvcodec's
 * memory:CUDAMemory read in place when nvcodec took our CUDA context, else
 * copied on the device: sift-nvcodec.h) and downloading the
 * results once per frame; the CPU backend runs OpenCV's cv::SIFT. Both take
 * the same 8-bit luma (sift-formats.h, sift-luma.h): the Y plane of
 * NV12/I420/GRAY8 and the like as is, the Y samples of packed YUV, the high
 * byte of 10- to 16-bit Y (P010, P016, GRAY16), OpenCV's BT.601 RGB-to-gray
 * of packed RGB (on the device for CUDA). The grid filter is features_cpu's
 * for both.
 *
 * Frames in flight (sift-frames.h): on CUDA frames-in-flight engines on
 * their own streams (sift-cuda.h, CudaFramePipeline), on the CPU a thread per
 * frame (with one in flight the CPU runs in transform_ip). generate_output
 * enqueues the new frame and returns the oldest held one once every slot has
 * a frame, so the GPU works on frame N while the element downloads frame
 * N-1's results (from 1080p up frame N's kernels start once frame N-1's
 * first octave is built: CudaEngine::run's `after`). Held
 * frames leave before any serialized event or drain/allocation query (EOS,
 * caps, segment: order and content as without holding), are dropped on
 * FLUSH_STOP and at stop; LATENCY adds frames-in-flight - 1 frame periods,
 * and upstream's pool is asked for as many more buffers. A frame that QoS
 * drops (late at a synchronised sink) is dropped before it is enqueued. */
#include "gstsift.h"

#include <gst/video/video.h>
#include <opencv2/imgproc.hpp>

#include <new>

#include "common/cuda_runtime.h"
#include "common/host_resources.h"
#include "gst/cudasensing/sift/gstsiftfeatures-opencv.hpp"
#include "gstcs-cxx.h"
#include "sift-cuda.h"
#include "sift-frames.h"
#include "sift-nvcodec.h"
#include "sift-properties.h"
#include "sift/features_cpu.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_debug);
#define GST_CAT_DEFAULT gst_sift_debug

struct _GstSift {
  GstCsBaseTransform parent;
  // properties (object lock)
  gstsift::EngineSettings engine;
  gstsift::OutputSettings output;
  gint frames_in_flight;
  // while running
  sift_cpu::Params params;            // both backends: the descriptor format and grid filter are read from here
  gstsift::OutputSettings output_in_use;  // the output settings taken at start
  gstsift::FramesInFlight *frames;  // the held frames: CUDA's engines, or the CPU's threads (NULL: one at a time)
  gstsift::CpuFramesInFlight *cpu_frames_auto;  // `frames` when the CPU's count is auto: sized at each caps
  GstVideoInfo info;
  gboolean have_info;
  GstClockTime added_latency;  // what holding frames adds (object lock: read by LATENCY queries)
  gboolean gap_before_next;    // frames held: a frame was dropped for QoS, the next one starts after a gap
};

G_DEFINE_TYPE(GstSift, gst_sift, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(sift, "sift", GST_RANK_NONE, GST_TYPE_SIFT)

enum {
  PROP_0,
  PROP_ENGINE_FIRST,
  PROP_OUTPUT_FIRST = PROP_ENGINE_FIRST + gstsift::kEnginePropertyCount,
  PROP_FRAMES_IN_FLIGHT = PROP_OUTPUT_FIRST + gstsift::kOutputPropertyCount,
};

constexpr gint kAutoFramesInFlight = 0, kMaxFramesInFlight = 8;

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(SIFT_CAPS));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(SIFT_CAPS));

static gboolean sift_start(GstCsBaseTransform *base) {
  auto *self = GST_SIFT(base);
  GST_OBJECT_LOCK(self);
  const gstsift::EngineSettings engine = self->engine;
  const gstsift::OutputSettings output = self->output;
  const gint frames_in_flight_property = self->frames_in_flight;
  self->added_latency = 0;
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
  if (const std::string problem = gstsift::grid_filter_problem(output); !problem.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Incomplete grid filter"), ("%s", problem.c_str()));
    return FALSE;
  }
  self->output_in_use = output;
  self->have_info = FALSE;
  self->gap_before_next = FALSE;
  const bool cuda = gst_cs_base_transform_use_cuda(base);
  const gint frames_in_flight =
      frames_in_flight_property != kAutoFramesInFlight
          ? frames_in_flight_property
          : gstsift::auto_frames_in_flight(cuda, cs::usable_cores(), kMaxFramesInFlight);
  if (cuda) {
    return gstcs::guard_bool(GST_ELEMENT(self), "Starting CUDA SIFT", [&] {
      auto *cuda = new gstsift::CudaFramesInFlight(gstsift::engine_params(engine),
                                                   gst_cs_base_transform_get_device_id(base), frames_in_flight);
      self->frames = cuda;
      GST_INFO_OBJECT(self, "CUDA backend on device %d, %d frames in flight", cuda->device(), frames_in_flight);
      return TRUE;
    });
  }
  if (!engine.upsample) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("upsample=false is not available on the CPU backend"),
                      ("OpenCV's SIFT always doubles the image for its first octave; set upsample=true or use "
                       "backend=cuda."));
    return FALSE;
  }
  if (frames_in_flight > 1) self->frames = new gstsift::CpuFramesInFlight(frames_in_flight);
  if (frames_in_flight_property == kAutoFramesInFlight)
    self->cpu_frames_auto = static_cast<gstsift::CpuFramesInFlight *>(self->frames);
  GST_INFO_OBJECT(self, "CPU backend (OpenCV), %d frames in flight", frames_in_flight);
  return TRUE;
}

static gboolean sift_stop(GstCsBaseTransform *base) {
  auto *self = GST_SIFT(base);
  self->have_info = FALSE;
  delete self->frames;  // drops the frames it holds once nothing reads them
  self->frames = nullptr;
  self->cpu_frames_auto = nullptr;
  GST_OBJECT_LOCK(self);
  self->added_latency = 0;
  GST_OBJECT_UNLOCK(self);
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

// Holding frames-in-flight - 1 frames delays each frame by as many frame
// periods (a live source sends the frame that releases it that much later).
static void update_added_latency(GstSift *self) {
  const gint fps_n = GST_VIDEO_INFO_FPS_N(&self->info), fps_d = GST_VIDEO_INFO_FPS_D(&self->info);
  const gint held = self->frames ? self->frames->frames_in_flight() - 1 : 0;
  GstClockTime latency = 0;
  if (held > 0 && fps_n > 0 && fps_d > 0)
    latency = gst_util_uint64_scale(GstClockTime(held) * GST_SECOND, guint64(fps_d), guint64(fps_n));
  else if (held > 0)
    GST_INFO_OBJECT(self, "variable frame rate: the %d held frames add a latency that cannot be stated", held);
  GST_OBJECT_LOCK(self);
  const gboolean changed = latency != self->added_latency;
  self->added_latency = latency;
  GST_OBJECT_UNLOCK(self);
  if (changed) {
    GST_INFO_OBJECT(self, "holding %d frames adds %" GST_TIME_FORMAT " of latency", held, GST_TIME_ARGS(latency));
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_latency(GST_OBJECT(self)));
  }
}

// Auto on the CPU: as many frames as the cores want, but no more than a
// quarter of the memory the process may use (cs::host_memory_bytes: the
// host's, or its control group's limit) holds OpenCV's pyramids of at this
// frame size (4K frames take about 2 GB each). The held frames have left before
// new caps, so the count may change here.
static void limit_cpu_frames_to_memory(GstSift *self) {
  const size_t bytes = sift_cpu::pyramid_bytes(GST_VIDEO_INFO_WIDTH(&self->info), GST_VIDEO_INFO_HEIGHT(&self->info),
                                               self->params.n_octave_layers);
  const int frames = gstsift::auto_frames_in_flight(false, cs::usable_cores(), kMaxFramesInFlight,
                                                    bytes, cs::host_memory_bytes());
  if (frames == self->cpu_frames_auto->frames_in_flight()) return;
  if (self->cpu_frames_auto->set_frames_in_flight(frames))
    GST_INFO_OBJECT(self, "%d frames in flight: OpenCV's pyramids take %s a frame", frames,
                    cs::format_bytes(bytes).c_str());
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
  if (self->cpu_frames_auto) limit_cpu_frames_to_memory(self);
  update_added_latency(self);
  return TRUE;
}

static GstFlowReturn sift_transform_cpu(GstSift *self, GstBuffer *buf) {
  const sift_cpu::Features f = gstsift::extract_on_cpu(buf, self->info, self->params);
  gst_sift::add_features(buf, guint(GST_VIDEO_INFO_WIDTH(&self->info)), guint(GST_VIDEO_INFO_HEIGHT(&self->info)),
                         f.keypoints, f.descriptors, GstSiftDescriptorFormat(self->params.format));
  gstsift::export_features(buf, self->output_in_use);
  GST_LOG_OBJECT(self, "%zu keypoints", f.keypoints.size());
  return GST_FLOW_OK;
}

static gboolean sift_have_info(GstSift *self) {
  if (!self->have_info)
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps were negotiated before the first frame"), (nullptr));
  return self->have_info;
}

// One frame at a time on the CPU backend (frames held in flight go through sift_generate_output).
static GstFlowReturn sift_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  auto *self = GST_SIFT(trans);
  if (!sift_have_info(self)) return GST_FLOW_NOT_NEGOTIATED;
  return gstcs::guard_flow(GST_ELEMENT(self), "Extracting SIFT features", [&] { return sift_transform_cpu(self, buf); });
}

// The oldest held frame, its features attached, into *frame.
static GstFlowReturn sift_finish_oldest(GstSift *self, GstBuffer **frame) {
  return gstcs::guard_flow(GST_ELEMENT(self), "Extracting SIFT features", [&] {
    GstBuffer *finished = self->frames->finish_oldest(GST_ELEMENT(self));
    try {
      gstsift::export_features(finished, self->output_in_use);
    } catch (...) {
      gst_buffer_unref(finished);
      throw;
    }
    *frame = finished;
    return GST_FLOW_OK;
  });
}

// Pushes every held frame, oldest first (CUDA backend; streaming thread).
// Once downstream refuses one, the rest are dropped: it would refuse them too.
static GstFlowReturn sift_drain(GstSift *self) {
  GstFlowReturn ret = GST_FLOW_OK;
  while (self->frames && self->frames->held() > 0) {
    GstBuffer *frame = nullptr;
    ret = sift_finish_oldest(self, &frame);
    if (ret == GST_FLOW_OK) ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), frame);
    if (ret != GST_FLOW_OK) {
      GST_DEBUG_OBJECT(self, "draining stopped (%s): %zu held frames dropped", gst_flow_get_name(ret),
                       self->frames->held());
      self->frames->drop_held();
    }
  }
  return ret;
}

// CUDA backend: the input frame (made writable, as the default in-place path
// does) is enqueued and held; once every engine has a frame the oldest one is
// finished and returned for the base class to push. Returns no buffer while
// frames are still filling the engines.
static GstFlowReturn sift_generate_output(GstBaseTransform *trans, GstBuffer **outbuf) {
  auto *self = GST_SIFT(trans);
  if (!self->frames) return GST_BASE_TRANSFORM_CLASS(gst_sift_parent_class)->generate_output(trans, outbuf);
  *outbuf = nullptr;
  GstBuffer *input = trans->queued_buf;  // stashed by the default submit_input_buffer
  trans->queued_buf = nullptr;
  if (!input) return GST_FLOW_OK;
  if (!sift_have_info(self)) {
    gst_buffer_unref(input);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GstBuffer *frame = nullptr;
  GstFlowReturn ret = GST_BASE_TRANSFORM_GET_CLASS(trans)->prepare_output_buffer(trans, input, &frame);
  if (frame != input) gst_buffer_unref(input);
  if (ret != GST_FLOW_OK || !frame) {
    if (frame) gst_buffer_unref(frame);
    return ret;
  }
  if (self->gap_before_next) {
    GST_BUFFER_FLAG_SET(frame, GST_BUFFER_FLAG_DISCONT);
    self->gap_before_next = FALSE;
  }
  // The base class marks the next buffer it pushes DISCONT: let that be this
  // frame, not an older held one, by sending the older ones first.
  if (GST_BUFFER_IS_DISCONT(frame) && (ret = sift_drain(self)) != GST_FLOW_OK) {
    gst_buffer_unref(frame);
    return ret;
  }
  ret = gstcs::guard_flow(GST_ELEMENT(self), "Extracting SIFT features", [&] {
    self->frames->enqueue(frame, self->info, self->params);
    return GST_FLOW_OK;
  });
  if (ret == GST_FLOW_OK && self->frames->full()) ret = sift_finish_oldest(self, outbuf);
  return ret;
}

// A frame dropped for QoS (the default submit's check) leaves a gap: the
// next frame is marked DISCONT before it is held, so the mark stays on it
// however it leaves, and the frames held from before the gap go first.
static GstFlowReturn sift_submit_input_buffer(GstBaseTransform *trans, gboolean is_discont, GstBuffer *input) {
  auto *self = GST_SIFT(trans);
  const GstFlowReturn ret =
      GST_BASE_TRANSFORM_CLASS(gst_sift_parent_class)->submit_input_buffer(trans, is_discont, input);
  if (ret == GST_BASE_TRANSFORM_FLOW_DROPPED && self->frames) self->gap_before_next = TRUE;
  return ret;
}

static gboolean sift_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_SIFT(trans);
  // Serialized events arrive on the streaming thread, between frames: the
  // held frames go first (EOS, caps, segment, gap...), or, after a flush, go.
  if (GST_EVENT_IS_SERIALIZED(event) && self->frames) {
    if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) {
      self->frames->drop_held();
      self->gap_before_next = FALSE;
    } else {
      sift_drain(self);
    }
  }
  return GST_BASE_TRANSFORM_CLASS(gst_sift_parent_class)->sink_event(trans, event);
}

static gboolean sift_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_SIFT(trans);
  if (gstsift::answer_cuda_context_query(GST_CS_BASE_TRANSFORM(self), query)) return TRUE;
  // Upstream asks for its buffers back (drain) or is about to renegotiate
  // its pool (allocation): both come serialized, on the streaming thread.
  if (direction == GST_PAD_SINK && self->frames &&
      (GST_QUERY_TYPE(query) == GST_QUERY_DRAIN || GST_QUERY_TYPE(query) == GST_QUERY_ALLOCATION))
    sift_drain(self);
  const gboolean answered = GST_BASE_TRANSFORM_CLASS(gst_sift_parent_class)->query(trans, direction, query);
  if (answered && direction == GST_PAD_SINK && self->frames && GST_QUERY_TYPE(query) == GST_QUERY_ALLOCATION) {
    // In place, upstream's buffers are the ones held: its pool needs that many more.
    const guint held = guint(self->frames->frames_in_flight() - 1);
    for (guint i = 0; held > 0 && i < gst_query_get_n_allocation_pools(query); ++i) {
      GstBufferPool *pool = nullptr;
      guint size, min, max;
      gst_query_parse_nth_allocation_pool(query, i, &pool, &size, &min, &max);
      min += held;
      if (max != 0 && max < min) max = min;
      gst_query_set_nth_allocation_pool(query, i, pool, size, min, max);
      if (pool) gst_object_unref(pool);
    }
  }
  if (answered && direction == GST_PAD_SRC && GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    GST_OBJECT_LOCK(self);
    const GstClockTime added = self->added_latency;
    GST_OBJECT_UNLOCK(self);
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency(query, &live, &min, &max);
    gst_query_set_latency(query, live, min + added, GST_CLOCK_TIME_IS_VALID(max) ? max + added : max);
  }
  return answered;
}

static void sift_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_SIFT(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PROP_FRAMES_IN_FLIGHT)
    self->frames_in_flight = g_value_get_int(value);
  else if (!gstsift::set_engine_property(self->engine, prop_id - PROP_ENGINE_FIRST, value) &&
      !gstsift::set_output_property(self->output, prop_id - PROP_OUTPUT_FIRST, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void sift_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PROP_FRAMES_IN_FLIGHT)
    g_value_set_int(value, self->frames_in_flight);
  else if (!gstsift::get_engine_property(self->engine, prop_id - PROP_ENGINE_FIRST, value) &&
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
  g_object_class_install_property(
      gobject_class, PROP_FRAMES_IN_FLIGHT,
      g_param_spec_int("frames-in-flight", "Frames in flight",
                       "Frames processed at once: on CUDA each by its own engine on its own stream (device memory "
                       "for the pyramids of each), so the GPU works on the next frame while a frame's results are "
                       "downloaded; on the CPU each by OpenCV on a thread of its own. A frame leaves once the next "
                       "frames-in-flight - 1 frames are read; latency grows by frames-in-flight - 1 frames. 1 = "
                       "each frame finished before the next is read (appsrc/appsink in lock step need it); 0 = "
                       "auto: 2 on CUDA; on the CPU half the usable cores (2 to 8), fewer where a quarter of the "
                       "usable memory does not hold their OpenCV pyramids (about 0.5 GB a 1080p frame, 2 GB at 4K)",
                       0, kMaxFramesInFlight, kAutoFramesInFlight,
                       GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT features", "Filter/Analyzer/Video",
      "Finds SIFT keypoints and descriptors in each frame's luma (gray, YUV of 8 to 16 bits, packed RGB; system or "
      "device memory, also nvcodec's memory:CUDAMemory) with OpenCV's parameters and attaches them as a "
      "GstSiftFeaturesMeta, strongest first; frames pass through unchanged. CUDA backend (the siftpyramid, "
      "siftdetect and siftdescribe stages in one element) or CPU backend (OpenCV's cv::SIFT)",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_caps = sift_transform_caps;
  trans_class->set_caps = sift_set_caps;
  trans_class->transform_ip = sift_transform_ip;
  trans_class->submit_input_buffer = sift_submit_input_buffer;
  trans_class->generate_output = sift_generate_output;
  trans_class->sink_event = sift_sink_event;
  trans_class->query = sift_query;
  trans_class->passthrough_on_same_caps = FALSE;
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  cs_class->start_backend = sift_start;
  cs_class->stop_backend = sift_stop;
  GST_DEBUG_CATEGORY_INIT(gst_sift_debug, "sift", 0, "SIFT features");
}

static void gst_sift_init(GstSift *self) {
  new (&self->engine) gstsift::EngineSettings();
  new (&self->output) gstsift::OutputSettings();
  new (&self->output_in_use) gstsift::OutputSettings();
  new (&self->params) sift_cpu::Params();
  self->frames_in_flight = kAutoFramesInFlight;
  self->have_info = FALSE;
  self->frames = nullptr;
  self->cpu_frames_auto = nullptr;
  self->added_latency = 0;
  self->gap_before_next = FALSE;
  gstsift::init_video_filter(GST_BASE_TRANSFORM(self));
}
