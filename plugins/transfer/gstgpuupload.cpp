/* gpuupload: system memory -> CUDA device memory, for any caps.
 *
 * Copies run asynchronously on the element's own stream: the output buffer
 * carries a "ready" event and is pushed at once, so the upload of buffer N+1
 * overlaps downstream work on buffer N. Page-locked input (for instance from
 * the pinned allocator this element proposes upstream) is DMA'd directly;
 * pageable input goes through a staging
 * pipeline (a copy thread and its team filling page-locked chunks while
 * earlier chunks are on the wire). Either way the input is kept until its
 * copy completes. Buffers already in device memory pass through. */
#include "gstgpuupload.h"

#include <gst/cudasensing/gstcsbufferpool.h>
#include <gst/video/video.h>

#include <deque>
#include <memory>

#include "../core/gstcs-cxx.h"
#include "../core/gstcs-gpu.h"
#include "common/device_resources.h"
#include "common/staged_copy.h"
#include "transfer-caps.h"

GST_DEBUG_CATEGORY_STATIC(gst_gpu_upload_debug);
#define GST_CAT_DEFAULT gst_gpu_upload_debug

namespace {
// One upload still running, and the input it reads from.
struct InFlight {
  cs::Event copied;
  GstBuffer *input;
};

constexpr guint kDefaultMaxInFlight = 4;

struct UploadState {
  cs::Stream stream;
  std::unique_ptr<cs::StagedUploader> stager;
  std::deque<InFlight> in_flight;
  GstAllocator *allocator = nullptr;
  GstBufferPool *pool = nullptr;  // for fixed-size (video) streams
  gsize pool_size = 0;
  int device = 0;

  // Retires finished uploads; waits for the oldest while more than `limit`
  // are running (the element's back-pressure: device memory stays bounded).
  void retire(size_t limit) {
    while (!in_flight.empty()) {
      InFlight &front = in_flight.front();
      if (in_flight.size() > limit)
        front.copied.synchronize();
      else if (!front.copied.done())
        break;
      gst_buffer_unref(front.input);
      cs::DeviceResources::get(device).return_event(std::move(front.copied));
      in_flight.pop_front();
    }
  }
};
}  // namespace

struct _GstGpuUpload {
  GstCsBaseTransform parent;
  gboolean to_device;  // negotiated: output in device memory
  guint max_in_flight;
  guint copy_threads;  // 0: the uploader's default
  UploadState *state;
};

G_DEFINE_TYPE(GstGpuUpload, gst_gpu_upload, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(gpuupload, "gpuupload", GST_RANK_NONE, GST_TYPE_GPU_UPLOAD)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static gboolean upload_start(GstCsBaseTransform *base) {
  auto *self = GST_GPU_UPLOAD(base);
  if (!gst_cs_base_transform_use_cuda(base)) return TRUE;
  return gstcs::guard_bool(GST_ELEMENT(self), "Starting the upload", [&] {
    auto *st = new UploadState();
    self->state = st;
    st->device = gst_cs_base_transform_get_device_id(base);
    cs::DeviceGuard guard(st->device);
    st->stream = cs::Stream(st->device);
    st->stager = std::make_unique<cs::StagedUploader>(st->device, cs::StagedUploader::kDefaultChunkBytes,
                                                       cs::StagedUploader::kDefaultSlots, int(self->copy_threads));
    GError *error = nullptr;
    st->allocator = gst_cs_allocator_get(st->device, &error);
    if (!st->allocator) throw std::runtime_error(error ? error->message : "no allocator");
    return TRUE;
  });
}

static void free_state(GstGpuUpload *self) {
  UploadState *st = self->state;
  if (!st) return;
  try {
    if (st->stream.get()) st->stream.synchronize();
    st->retire(0);
  } catch (const std::exception &e) {
    GST_WARNING_OBJECT(self, "while stopping: %s", e.what());
  }
  if (st->pool) {
    gst_buffer_pool_set_active(st->pool, FALSE);
    gst_object_unref(st->pool);
  }
  gst_clear_object(&st->allocator);
  delete st;
  self->state = nullptr;
}

static gboolean upload_stop(GstCsBaseTransform *base) {
  free_state(GST_GPU_UPLOAD(base));
  return TRUE;
}

static GstCaps *upload_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                      GstCaps *filter) {
  const bool cuda = gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(trans));
  // Downstream (src) side may be device memory; upstream (sink) side is system
  // memory, or the same caps when the data is already on the device.
  if (direction == GST_PAD_SINK) return transfer_caps(caps, GST_CAPS_FEATURE_MEMORY_CS_DEVICE, cuda, filter);
  return transfer_caps(caps, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY, true, filter);
}

// Among the output choices, device memory wins whenever it is possible:
// GstBaseTransform would otherwise settle on pass-through whenever downstream
// also accepts system memory (gpudownload does), and nothing would reach the GPU.
static GstCaps *upload_fixate_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                   GstCaps *othercaps) {
  if (direction == GST_PAD_SINK && gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(trans))) {
    GstCaps *device = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(othercaps); ++i) {
      GstCapsFeatures *f = gst_caps_get_features(othercaps, i);
      if (f && !gst_caps_features_is_any(f) && gst_caps_features_contains(f, GST_CAPS_FEATURE_MEMORY_CS_DEVICE))
        gst_caps_append_structure_full(device, gst_structure_copy(gst_caps_get_structure(othercaps, i)),
                                       gst_caps_features_copy(f));
    }
    if (!gst_caps_is_empty(device)) {
      gst_caps_unref(othercaps);
      othercaps = device;
    } else {
      gst_caps_unref(device);
    }
  }
  return GST_BASE_TRANSFORM_CLASS(gst_gpu_upload_parent_class)->fixate_caps(trans, direction, caps, othercaps);
}

static gboolean upload_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_GPU_UPLOAD(trans);
  const bool in_device = gst_cs_caps_has_device_feature(incaps);
  self->to_device = gst_cs_caps_has_device_feature(outcaps);
  if (self->to_device && !self->state) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Device memory negotiated but the element runs on the CPU backend"),
                      (nullptr));
    return FALSE;
  }
  gst_base_transform_set_passthrough(trans, in_device == self->to_device);
  GST_DEBUG_OBJECT(self, "%s", in_device == self->to_device ? "passthrough" : "uploading");
  return TRUE;
}

static gboolean upload_transform_size(GstBaseTransform *, GstPadDirection, GstCaps *, gsize size, GstCaps *,
                                      gsize *othersize) {
  *othersize = size;
  return TRUE;
}

static gboolean upload_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query, GstQuery *query) {
  auto *self = GST_GPU_UPLOAD(trans);
  if (!decide_query || gst_base_transform_is_passthrough(trans))
    return GST_BASE_TRANSFORM_CLASS(gst_gpu_upload_parent_class)->propose_allocation(trans, decide_query, query);
  if (!self->to_device) return TRUE;
  // Offer page-locked memory upstream: sources that use it let us DMA
  // straight from their buffers.
  GstAllocator *pinned = gst_cs_pinned_allocator_get();
  if (!pinned) return TRUE;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  gst_query_add_allocation_param(query, pinned, &params);
  GstCaps *caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  GstVideoInfo info;
  if (caps && need_pool && gst_video_info_from_caps(&info, caps)) {
    GstBufferPool *pool = gst_buffer_pool_new();
    GstStructure *config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, guint(info.size), 3, 0);
    gst_buffer_pool_config_set_allocator(config, pinned, &params);
    if (gst_buffer_pool_set_config(pool, config)) gst_query_add_allocation_pool(query, pool, guint(info.size), 3, 0);
    gst_object_unref(pool);
  }
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  gst_object_unref(pinned);
  return TRUE;
}

static gboolean upload_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  auto *self = GST_GPU_UPLOAD(trans);
  UploadState *st = self->state;
  if (!self->to_device || !st) return TRUE;
  if (st->pool) {
    gst_buffer_pool_set_active(st->pool, FALSE);
    gst_clear_object(&st->pool);
  }
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  GstVideoInfo info;
  // Fixed-size streams get a pool; others allocate per buffer from the
  // allocator, whose block cache makes that cheap.
  if (caps && gst_video_info_from_caps(&info, caps)) {
    st->pool = gst_cs_buffer_pool_new(st->device);
    st->pool_size = info.size;
    GstStructure *config = gst_buffer_pool_get_config(st->pool);
    gst_buffer_pool_config_set_params(config, caps, guint(info.size), 3, 0);
    if (!gst_buffer_pool_set_config(st->pool, config) || !gst_buffer_pool_set_active(st->pool, TRUE)) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Cannot set up the device buffer pool"), (nullptr));
      return FALSE;
    }
  }
  return TRUE;
}

static bool all_device_memory(GstBuffer *buf, int device) {
  const guint n = gst_buffer_n_memory(buf);
  for (guint i = 0; i < n; ++i) {
    GstMemory *mem = gst_buffer_peek_memory(buf, i);
    if (!gst_is_cs_memory(mem) || gst_cs_memory_get_device_id(mem) != device) return false;
  }
  return n > 0;
}

static GstFlowReturn upload_prepare_output_buffer(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer **outbuf) {
  auto *self = GST_GPU_UPLOAD(trans);
  UploadState *st = self->state;
  if (gst_base_transform_is_passthrough(trans) || all_device_memory(inbuf, st->device)) {
    *outbuf = inbuf;  // already where it should be
    return GST_FLOW_OK;
  }
  const gsize size = gst_buffer_get_size(inbuf);
  if (st->pool && size == st->pool_size) {
    GstFlowReturn ret = gst_buffer_pool_acquire_buffer(st->pool, outbuf, nullptr);
    if (ret != GST_FLOW_OK) {
      gchar *why = gst_cs_buffer_pool_get_last_error(GST_CS_BUFFER_POOL(st->pool));
      if (why) GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot get a device buffer: %s", why), (nullptr));
      g_free(why);
      return ret;
    }
  } else {
    GError *error = nullptr;
    GstMemory *mem = gst_cs_allocator_alloc(st->allocator, size, &error);
    if (!mem) {
      GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate a device buffer: %s", error->message),
                        (nullptr));
      g_clear_error(&error);
      return GST_FLOW_ERROR;
    }
    *outbuf = gst_buffer_new();
    gst_buffer_append_memory(*outbuf, mem);
  }
  GST_BASE_TRANSFORM_CLASS(gst_gpu_upload_parent_class)->copy_metadata(trans, inbuf, *outbuf);
  return GST_FLOW_OK;
}

static gboolean upload_sink_event(GstBaseTransform *trans, GstEvent *event) {
  transfer_assume_bytes_without_caps(trans, event);
  return GST_BASE_TRANSFORM_CLASS(gst_gpu_upload_parent_class)->sink_event(trans, event);
}

static GstFlowReturn upload_transform(GstBaseTransform *trans, GstBuffer *inbuf, GstBuffer *outbuf) {
  auto *self = GST_GPU_UPLOAD(trans);
  if (inbuf == outbuf) return GST_FLOW_OK;
  UploadState *st = self->state;
  return gstcs::guard_flow(GST_ELEMENT(self), "Uploading a buffer", [&] {
    cs::DeviceGuard guard(st->device);
    GstMemory *out_mem = gst_buffer_peek_memory(outbuf, 0);
    cs::MirroredBuffer &dst = gstcs::mirrored(out_mem);
    auto *d = static_cast<guint8 *>(dst.begin_device_write(st->stream.get(), true)) + out_mem->offset;
    gsize offset = 0;
    const guint n = gst_buffer_n_memory(inbuf);
    for (guint i = 0; i < n; ++i) {
      GstMemory *mem = gst_buffer_peek_memory(inbuf, i);
      GstMapInfo map;
      if (!gst_memory_map(mem, &map, GST_MAP_READ)) throw std::runtime_error("cannot map the input buffer");
      if (gstcs::direct_dma_source(mem, map))
        cs::copy_async(d + offset, map.data, map.size, st->stream.get());
      else
        st->stager->upload(d + offset, map.data, map.size, st->stream.get());
      offset += map.size;
      gst_memory_unmap(mem, &map);
    }
    dst.end_device_write(st->stream.get());
    cs::Event copied = cs::DeviceResources::get(st->device).take_event();
    copied.record(st->stream.get());
    // The device (or the staging thread) reads the input's pages after this
    // returns: keep them until the copy is done.
    st->in_flight.push_back({std::move(copied), gst_buffer_ref(inbuf)});
    st->retire(self->max_in_flight);
    return GST_FLOW_OK;
  });
}

enum { PROP_0, PROP_MAX_IN_FLIGHT, PROP_COPY_THREADS };

static void upload_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  if (prop_id == PROP_MAX_IN_FLIGHT)
    GST_GPU_UPLOAD(object)->max_in_flight = g_value_get_uint(value);
  else if (prop_id == PROP_COPY_THREADS)
    GST_GPU_UPLOAD(object)->copy_threads = g_value_get_uint(value);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void upload_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  if (prop_id == PROP_MAX_IN_FLIGHT)
    g_value_set_uint(value, GST_GPU_UPLOAD(object)->max_in_flight);
  else if (prop_id == PROP_COPY_THREADS)
    g_value_set_uint(value, GST_GPU_UPLOAD(object)->copy_threads);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void gst_gpu_upload_class_init(GstGpuUploadClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->set_property = upload_set_property;
  gobject_class->get_property = upload_get_property;
  g_object_class_install_property(
      gobject_class, PROP_MAX_IN_FLIGHT,
      g_param_spec_uint("max-in-flight", "Buffers in flight",
                        "Most uploads running on the device at once; beyond that the element waits for the "
                        "oldest, which bounds the device memory a fast source can take",
                        1, 64, kDefaultMaxInFlight,
                        GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_COPY_THREADS,
      g_param_spec_uint("copy-threads", "Host copy threads",
                        "Threads that copy pageable input into page-locked staging (0: half the usable cores, at most "
                        "8); page-locked and device input is not copied on the host",
                        0, 64, 0, GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "GPU upload", "Filter/Converter/Hardware",
      "Copies buffers of any media type from system memory into CUDA device memory "
      "(caps feature memory:CudaSensing), asynchronously on its own stream; passes device buffers through",
      "gst-cuda-sensing developers");
  trans_class->transform_caps = upload_transform_caps;
  trans_class->fixate_caps = upload_fixate_caps;
  trans_class->set_caps = upload_set_caps;
  trans_class->transform_size = upload_transform_size;
  trans_class->propose_allocation = upload_propose_allocation;
  trans_class->decide_allocation = upload_decide_allocation;
  trans_class->prepare_output_buffer = upload_prepare_output_buffer;
  trans_class->transform = upload_transform;
  trans_class->sink_event = upload_sink_event;
  trans_class->transform_meta = transfer_keeps_every_meta;
  trans_class->passthrough_on_same_caps = TRUE;
  cs_class->start_backend = upload_start;
  cs_class->stop_backend = upload_stop;
  GST_DEBUG_CATEGORY_INIT(gst_gpu_upload_debug, "gpuupload", 0, "system memory to CUDA device memory");
}

static void gst_gpu_upload_init(GstGpuUpload *self) {
  self->max_in_flight = kDefaultMaxInFlight;
  self->copy_threads = 0;
}
