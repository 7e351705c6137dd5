/* siftpyramid, siftdetect, siftdescribe: the CUDA SIFT engine's three stages
 * as elements, for pipelines that time, reorder or tap them; `sift` runs the
 * same three stages in one element (and also has a CPU backend).
 *
 * Hand-over: siftpyramid borrows an engine (cs::sift::CudaSift with its
 * stream) from its pool, enqueues the frame's pyramid and attaches a
 * GstSiftStageMeta holding a shared reference to that engine. siftdetect
 * and siftdescribe enqueue their stage on the same engine and stream, so the
 * stream orders the stages and nothing waits on the host until siftdescribe
 * downloads the results, gives the engine back to siftpyramid's pool,
 * attaches the GstSiftFeaturesMeta and drops the stage meta. While
 * `max-in-flight` engines are lent, siftpyramid waits, so queues between the
 * stages work and hold at most that many frames' device state. (Without a
 * siftdescribe, an engine returns when the last buffer carrying its stage
 * meta is freed.) The frame itself passes through every stage unchanged. */
#include "gstsiftstages.h"

#include <gst/video/video.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "gstcs-cxx.h"
#include "sift-cuda.h"
#include "sift-nvcodec.h"
#include "sift-properties.h"

GST_DEBUG_CATEGORY_STATIC(gst_sift_stages_debug);
#define GST_CAT_DEFAULT gst_sift_stages_debug

static GstStaticPadTemplate stage_sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(SIFT_CAPS));
static GstStaticPadTemplate stage_src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS(SIFT_CAPS));

namespace gstsift {

// Engines of one siftpyramid, lent one per frame in flight.
class EnginePool : public std::enable_shared_from_this<EnginePool> {
 public:
  EnginePool(const cs::sift::Params &params, int device, int max_in_flight)
      : params_(params), device_(device), max_(max_in_flight) {}

  // An engine for one frame: waits while max_in_flight are lent; nullptr
  // when flushing. The engine returns to the pool when the last reference
  // goes.
  std::shared_ptr<CudaEngine> acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    returned_.wait(lock, [&] { return flushing_ || !idle_.empty() || created_ < max_; });
    if (flushing_) return nullptr;
    std::unique_ptr<CudaEngine> engine;
    if (!idle_.empty()) {
      engine = std::move(idle_.back());
      idle_.pop_back();
    } else {
      engine = std::make_unique<CudaEngine>(params_, device_);
      ++created_;
    }
    std::weak_ptr<EnginePool> pool = weak_from_this();
    return std::shared_ptr<CudaEngine>(engine.release(), [pool](CudaEngine *e) {
      if (auto p = pool.lock())
        p->give_back(e);
      else
        delete e;
    });
  }

  void set_flushing(bool flushing) {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = flushing;
    returned_.notify_all();
  }

 private:
  void give_back(CudaEngine *e) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.emplace_back(e);
    returned_.notify_all();
  }

  const cs::sift::Params params_;
  const int device_, max_;
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<CudaEngine>> idle_;
  int created_ = 0;
  bool flushing_ = false;
};

// One frame's device state, shared by the buffers that carry it (copies of
// the frame share it, so a stage done on one copy is done for all).
struct FrameState {
  enum class Stage { pyramid, detected, described };
  std::mutex mutex;  // stages of copies of the frame may run on different threads
  Stage stage = Stage::pyramid;
  std::shared_ptr<CudaEngine> engine;  // lent until the frame is described
  guint width = 0, height = 0;
  // Once described: the downloaded results, for copies of the frame that reach a siftdescribe too.
  std::shared_ptr<const cs::sift::Result> result;
};

}  // namespace gstsift

// ---------------------------------------------------------------- stage meta

// Plugin-internal: a frame's device SIFT state between the stages.
struct GstSiftStageMeta {
  GstMeta meta;
  std::shared_ptr<gstsift::FrameState> *state;
};

static GType gst_sift_stage_meta_api_get_type() {
  static GType type = 0;
  static const gchar *tags[] = {nullptr};
  if (g_once_init_enter(&type)) g_once_init_leave(&type, gst_meta_api_type_register("GstSiftStageMetaAPI", tags));
  return type;
}

static gboolean stage_meta_init(GstMeta *meta, gpointer, GstBuffer *) {
  reinterpret_cast<GstSiftStageMeta *>(meta)->state = nullptr;
  return TRUE;
}

static void stage_meta_free(GstMeta *meta, GstBuffer *) {
  auto *m = reinterpret_cast<GstSiftStageMeta *>(meta);
  delete m->state;
  m->state = nullptr;
}

static const GstMetaInfo *gst_sift_stage_meta_get_info();

static GstSiftStageMeta *add_stage_meta(GstBuffer *buffer, std::shared_ptr<gstsift::FrameState> state) {
  auto *m = reinterpret_cast<GstSiftStageMeta *>(gst_buffer_add_meta(buffer, gst_sift_stage_meta_get_info(), nullptr));
  if (m) m->state = new std::shared_ptr<gstsift::FrameState>(std::move(state));
  return m;
}

// Copies of the frame share its state; other transformations (scaling, a
// region) drop it, as they drop the features meta.
static gboolean stage_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *, GQuark type, gpointer) {
  if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;
  auto *m = reinterpret_cast<GstSiftStageMeta *>(meta);
  return m->state && add_stage_meta(dest, *m->state) ? TRUE : FALSE;
}

static const GstMetaInfo *gst_sift_stage_meta_get_info() {
  static const GstMetaInfo *info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *i = gst_meta_register(gst_sift_stage_meta_api_get_type(), "GstSiftStageMeta",
                                             sizeof(GstSiftStageMeta), stage_meta_init, stage_meta_free,
                                             stage_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

static std::shared_ptr<gstsift::FrameState> frame_state(GstBuffer *buffer) {
  auto *m = reinterpret_cast<GstSiftStageMeta *>(gst_buffer_get_meta(buffer, gst_sift_stage_meta_api_get_type()));
  return m && m->state ? *m->state : nullptr;
}

static void remove_stage_meta(GstBuffer *buffer) {
  while (GstMeta *m = gst_buffer_get_meta(buffer, gst_sift_stage_meta_api_get_type()))
    gst_buffer_remove_meta(buffer, m);
}

// ---------------------------------------------------------------- siftpyramid

struct _GstSiftPyramid {
  GstCsBaseTransform parent;
  // properties (object lock)
  gstsift::EngineSettings engine;
  int max_in_flight;
  // while running
  std::shared_ptr<gstsift::EnginePool> *pool;
  GstVideoInfo info;
  gboolean have_info;
};

G_DEFINE_TYPE(GstSiftPyramid, gst_sift_pyramid, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(siftpyramid, "siftpyramid", GST_RANK_NONE, GST_TYPE_SIFT_PYRAMID)

enum { PYRAMID_PROP_0, PYRAMID_PROP_MAX_IN_FLIGHT, PYRAMID_PROP_ENGINE_FIRST };

static void pyramid_set_flushing(GstSiftPyramid *self, bool flushing) {
  GST_OBJECT_LOCK(self);
  std::shared_ptr<gstsift::EnginePool> pool = self->pool ? *self->pool : nullptr;
  GST_OBJECT_UNLOCK(self);
  if (pool) pool->set_flushing(flushing);
}

static gboolean pyramid_start(GstCsBaseTransform *base) {
  auto *self = GST_SIFT_PYRAMID(base);
  if (!gst_cs_base_transform_use_cuda(base)) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("siftpyramid runs on CUDA only"),
                      ("siftpyramid, siftdetect and siftdescribe are the CUDA engine's stages and need a CUDA "
                       "device; sift runs the whole of SIFT on either backend (OpenCV on the CPU)."));
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  const cs::sift::Params params = gstsift::engine_params(self->engine);
  const int max_in_flight = self->max_in_flight;
  GST_OBJECT_UNLOCK(self);
  self->have_info = FALSE;
  return gstcs::guard_bool(GST_ELEMENT(self), "Starting the CUDA SIFT pyramid", [&] {
    cs::sift::validate(params);  // a bad parameter fails here, not at the first frame
    auto pool = std::make_shared<gstsift::EnginePool>(params, gst_cs_base_transform_get_device_id(base),
                                                      max_in_flight);
    GST_OBJECT_LOCK(self);
    self->pool = new std::shared_ptr<gstsift::EnginePool>(std::move(pool));
    GST_OBJECT_UNLOCK(self);
    return TRUE;
  });
}

static gboolean pyramid_stop(GstCsBaseTransform *base) {
  auto *self = GST_SIFT_PYRAMID(base);
  GST_OBJECT_LOCK(self);
  auto *pool = self->pool;
  self->pool = nullptr;
  GST_OBJECT_UNLOCK(self);
  delete pool;  // engines still referred to by frames downstream live on until those drop them
  self->have_info = FALSE;
  return TRUE;
}

// nvcodec's elements before it (decoders, cudaupload) are offered our CUDA
// context (sift-nvcodec.h).
static gboolean pyramid_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  if (gstsift::answer_cuda_context_query(GST_CS_BASE_TRANSFORM(trans), query)) return TRUE;
  return GST_BASE_TRANSFORM_CLASS(gst_sift_pyramid_parent_class)->query(trans, direction, query);
}

static gboolean pyramid_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *) {
  auto *self = GST_SIFT_PYRAMID(trans);
  if (!gst_video_info_from_caps(&self->info, incaps) || GST_VIDEO_INFO_WIDTH(&self->info) <= 0 ||
      GST_VIDEO_INFO_HEIGHT(&self->info) <= 0) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot use the caps %" GST_PTR_FORMAT, incaps),
                      ("siftpyramid needs video/x-raw frames of at least 1x1 pixels in " SIFT_FORMATS));
    return FALSE;
  }
  self->have_info = TRUE;
  return TRUE;
}

static GstFlowReturn pyramid_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  auto *self = GST_SIFT_PYRAMID(trans);
  if (!self->have_info) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("No caps were negotiated before the first frame"), (nullptr));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK(self);
  std::shared_ptr<gstsift::EnginePool> pool = self->pool ? *self->pool : nullptr;
  GST_OBJECT_UNLOCK(self);
  if (!pool) return GST_FLOW_FLUSHING;
  return gstcs::guard_flow(GST_ELEMENT(self), "Building the SIFT pyramid", [&] {
    auto state = std::make_shared<gstsift::FrameState>();
    state->engine = pool->acquire();  // waits while max-in-flight frames hold engines
    if (!state->engine) return GST_FLOW_FLUSHING;
    state->width = guint(GST_VIDEO_INFO_WIDTH(&self->info));
    state->height = guint(GST_VIDEO_INFO_HEIGHT(&self->info));
    state->engine->build_pyramid(buf, self->info);
    remove_stage_meta(buf);  // a frame passed through siftpyramid twice keeps the newer state
    add_stage_meta(buf, std::move(state));
    return GST_FLOW_OK;
  });
}

static gboolean pyramid_sink_event(GstBaseTransform *trans, GstEvent *event) {
  // A flush must not wait for engines held by frames that it discards.
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_START) pyramid_set_flushing(GST_SIFT_PYRAMID(trans), true);
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) pyramid_set_flushing(GST_SIFT_PYRAMID(trans), false);
  return GST_BASE_TRANSFORM_CLASS(gst_sift_pyramid_parent_class)->sink_event(trans, event);
}

static GstStateChangeReturn pyramid_change_state(GstElement *element, GstStateChange transition) {
  // Release a streaming thread waiting for an engine before the pads are deactivated.
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) pyramid_set_flushing(GST_SIFT_PYRAMID(element), true);
  return GST_ELEMENT_CLASS(gst_sift_pyramid_parent_class)->change_state(element, transition);
}

static void pyramid_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_SIFT_PYRAMID(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PYRAMID_PROP_MAX_IN_FLIGHT)
    self->max_in_flight = g_value_get_int(value);
  else if (!gstsift::set_engine_property(self->engine, prop_id - PYRAMID_PROP_ENGINE_FIRST, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void pyramid_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT_PYRAMID(object);
  GST_OBJECT_LOCK(self);
  if (prop_id == PYRAMID_PROP_MAX_IN_FLIGHT)
    g_value_set_int(value, self->max_in_flight);
  else if (!gstsift::get_engine_property(self->engine, prop_id - PYRAMID_PROP_ENGINE_FIRST, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void gst_sift_pyramid_class_init(GstSiftPyramidClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = pyramid_set_property;
  gobject_class->get_property = pyramid_get_property;
  g_object_class_install_property(
      gobject_class, PYRAMID_PROP_MAX_IN_FLIGHT,
      g_param_spec_int("max-in-flight", "Frames in flight",
                       "Frames whose device state (pyramid, keypoints) may exist at once between siftpyramid and "
                       "siftdescribe; each holds its own engine buffers. siftpyramid waits while this many are "
                       "out (2: one frame in the later stages while the next is built)",
                       1, 16, 2, GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  // The detection parameters live here too: the engine is configured once, for all three stages.
  gstsift::install_engine_properties(gobject_class, PYRAMID_PROP_ENGINE_FIRST);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  element_class->change_state = pyramid_change_state;
  gst_element_class_add_static_pad_template(element_class, &stage_sink_template);
  gst_element_class_add_static_pad_template(element_class, &stage_src_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT pyramid (CUDA)", "Filter/Analyzer/Video",
      "First stage of CUDA SIFT: the Gaussian pyramid of each frame's luma (gray, YUV of 8 to 16 bits, "
      "packed RGB; system or device memory), kept on the device for siftdetect; also holds the parameters of "
      "the later stages (as cv::SIFT). Frames pass through unchanged",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->set_caps = pyramid_set_caps;
  trans_class->transform_ip = pyramid_transform_ip;
  trans_class->sink_event = pyramid_sink_event;
  trans_class->query = pyramid_query;
  trans_class->passthrough_on_same_caps = FALSE;
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  cs_class->start_backend = pyramid_start;
  cs_class->stop_backend = pyramid_stop;
  GST_DEBUG_CATEGORY_INIT(gst_sift_stages_debug, "siftstages", 0, "SIFT stages (siftpyramid, siftdetect, siftdescribe)");
}

static void gst_sift_pyramid_init(GstSiftPyramid *self) {
  new (&self->engine) gstsift::EngineSettings();
  self->max_in_flight = 2;
  self->pool = nullptr;
  self->have_info = FALSE;
  gstsift::init_video_filter(GST_BASE_TRANSFORM(self));
}

// ---------------------------------------------------------------- siftdetect

struct _GstSiftDetect {
  GstBaseTransform parent;
};

G_DEFINE_TYPE(GstSiftDetect, gst_sift_detect, GST_TYPE_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(siftdetect, "siftdetect", GST_RANK_NONE, GST_TYPE_SIFT_DETECT)

// The frame's device state, or an element error naming the missing stage.
static std::shared_ptr<gstsift::FrameState> require_state(GstElement *element, GstBuffer *buf) {
  std::shared_ptr<gstsift::FrameState> state = frame_state(buf);
  if (!state)
    GST_ELEMENT_ERROR(element, STREAM, FAILED, ("The frame has no SIFT pyramid on the device"),
                      ("%s works on what siftpyramid leaves on a frame: put siftpyramid (and siftdetect before "
                       "siftdescribe) upstream",
                       GST_ELEMENT_NAME(element)));
  return state;
}

static GstFlowReturn detect_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  std::shared_ptr<gstsift::FrameState> state = require_state(GST_ELEMENT(trans), buf);
  if (!state) return GST_FLOW_ERROR;
  return gstcs::guard_flow(GST_ELEMENT(trans), "Detecting SIFT keypoints", [&] {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->stage == gstsift::FrameState::Stage::pyramid) {
      cs::DeviceGuard guard(state->engine->device());
      state->engine->sift().detect(state->engine->stream());
      state->stage = gstsift::FrameState::Stage::detected;
    }
    return GST_FLOW_OK;
  });
}

static void gst_sift_detect_class_init(GstSiftDetectClass *klass) {
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &stage_sink_template);
  gst_element_class_add_static_pad_template(element_class, &stage_src_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT detection (CUDA)", "Filter/Analyzer/Video",
      "Second stage of CUDA SIFT: extrema, sub-pixel refinement, contrast and edge tests and orientations on the "
      "pyramid siftpyramid left on the device, strongest first, n-features kept; the keypoints stay on the device "
      "for siftdescribe. Frames pass through unchanged",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_ip = detect_transform_ip;
  trans_class->passthrough_on_same_caps = FALSE;
}

static void gst_sift_detect_init(GstSiftDetect *self) {
  gstsift::init_video_filter(GST_BASE_TRANSFORM(self));
}

// ---------------------------------------------------------------- siftdescribe

struct _GstSiftDescribe {
  GstBaseTransform parent;
  gstsift::OutputSettings output;  // object lock
};

G_DEFINE_TYPE(GstSiftDescribe, gst_sift_describe, GST_TYPE_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(siftdescribe, "siftdescribe", GST_RANK_NONE, GST_TYPE_SIFT_DESCRIBE)

enum { DESCRIBE_PROP_0, DESCRIBE_PROP_OUTPUT_FIRST };

static GstFlowReturn describe_transform_ip(GstBaseTransform *trans, GstBuffer *buf) {
  auto *self = GST_SIFT_DESCRIBE(trans);
  std::shared_ptr<gstsift::FrameState> state = require_state(GST_ELEMENT(trans), buf);
  if (!state) return GST_FLOW_ERROR;
  GST_OBJECT_LOCK(self);
  const gstsift::OutputSettings output = self->output;
  GST_OBJECT_UNLOCK(self);
  if (const std::string problem = gstsift::grid_filter_problem(output); !problem.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Incomplete grid filter"), ("%s", problem.c_str()));
    return GST_FLOW_ERROR;
  }
  return gstcs::guard_flow(GST_ELEMENT(trans), "Describing SIFT keypoints", [&] {
    const cs::sift::DescriptorFormat format = gstsift::engine_format(output.descriptor_format);
    std::shared_ptr<const cs::sift::Result> result;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (state->stage == gstsift::FrameState::Stage::pyramid) {
        GST_ELEMENT_ERROR(self, STREAM, FAILED, ("The frame's keypoints were not detected"),
                          ("siftdescribe describes the keypoints siftdetect found: put siftdetect between "
                           "siftpyramid and siftdescribe"));
        return GST_FLOW_ERROR;
      }
      if (state->stage == gstsift::FrameState::Stage::detected) {
        cs::DeviceGuard guard(state->engine->device());
        state->engine->sift().describe(format, state->engine->stream());
        state->result = std::make_shared<const cs::sift::Result>(state->engine->download());
        state->stage = gstsift::FrameState::Stage::described;
        state->engine.reset();  // back to the pool: the next frame's pyramid may use it
      }
      result = state->result;
    }
    if (result->format != format) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("The frame was already described in another descriptor format"),
                        ("copies of one frame (after a tee) reached siftdescribe elements with different "
                         "descriptor-format values; describe before the tee"));
      return GST_FLOW_ERROR;
    }
    remove_stage_meta(buf);  // the device state is no longer needed by this frame
    gstsift::attach_features(GST_ELEMENT(self), buf, state->width, state->height, *result,
                             gstsift::GridFilter{output.grid_cols, output.grid_rows, output.max_per_cell});
    gstsift::export_features(buf, output);
    return GST_FLOW_OK;
  });
}

static void describe_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *self = GST_SIFT_DESCRIBE(object);
  GST_OBJECT_LOCK(self);
  if (!gstsift::set_output_property(self->output, prop_id - DESCRIBE_PROP_OUTPUT_FIRST, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void describe_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_SIFT_DESCRIBE(object);
  GST_OBJECT_LOCK(self);
  if (!gstsift::get_output_property(self->output, prop_id - DESCRIBE_PROP_OUTPUT_FIRST, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  GST_OBJECT_UNLOCK(self);
}

static void gst_sift_describe_class_init(GstSiftDescribeClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = describe_set_property;
  gobject_class->get_property = describe_get_property;
  gstsift::install_output_properties(gobject_class, DESCRIBE_PROP_OUTPUT_FIRST);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &stage_sink_template);
  gst_element_class_add_static_pad_template(element_class, &stage_src_template);
  gst_element_class_set_static_metadata(
      element_class, "SIFT descriptors (CUDA)", "Filter/Analyzer/Video",
      "Last stage of CUDA SIFT: descriptors of the keypoints siftdetect left on the device, one download per "
      "frame, attached with the keypoints as a GstSiftFeaturesMeta (grid filter applied); frames pass through "
      "unchanged",
      "gst-cuda-sensing developers");
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  trans_class->transform_ip = describe_transform_ip;
  trans_class->passthrough_on_same_caps = FALSE;
}

static void gst_sift_describe_init(GstSiftDescribe *self) {
  new (&self->output) gstsift::OutputSettings();
  gstsift::init_video_filter(GST_BASE_TRANSFORM(self));
}
