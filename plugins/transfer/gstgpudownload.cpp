/* gpudownload: CUDA device memory -> system memory, for any caps.
 *
 * Each copy goes straight into a page-locked output buffer on the element's
 * own stream. Up to `max-in-flight` buffers are in flight: a buffer is pushed
 * once its copy has completed, so the download of buffer N overlaps the
 * device work on N+1 and the downstream work on N-1. With a live source the
 * element pushes each buffer as soon as it is copied, adding no latency.
 * Serialized events and drain queries push the pending buffers first, so
 * nothing overtakes data. System-memory buffers pass through. */
#include "gstgpudownload.h"

#include <gst/video/video.h>

#include <deque>

#include "../core/gstcs-cxx.h"
#include "transfer-caps.h"

GST_DEBUG_CATEGORY_STATIC(gst_gpu_download_debug);
#define GST_CAT_DEFAULT gst_gpu_download_debug

namespace {
struct InFlight {
  cs::Event copied;
  GstBuffer *output;
};

struct DownloadState {
  cs::Stream stream;
  std::deque<InFlight> in_flight;
  std::vector<cs::Event> spare_events;
  GstAllocator *pinned = nullptr;
  GstBufferPool *pool = nullptr;
  gsize pool_size = 0;
  int device = 0;
  bool live_checked = false;
  bool live = false;

  cs::Event take_event() {
    if (spare_events.empty()) return cs::Event(device);
    cs::Event e = std::move(spare_events.back());
    spare_events.pop_back();
    return e;
  }
};

constexpr guint kDefaultMaxInFlight = 3;
}  // namespace

struct _GstGpuDownload {
  GstCsBaseTransform parent;
  gboolean from_device;
  guint max_in_flight;
  DownloadState *state;
};

G_DEFINE_TYPE(GstGpuDownload, gst_gpu_download, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(gpudownload, "gpudownload", GST_RANK_NONE, GST_TYPE_GPU_DOWNLOAD)

enum { PROP_0, PROP_MAX_IN_FLIGHT };

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

/* Pops the oldest buffer in flight, waiting for its copy when `wait`, and
 * returns it (NULL when none is ready). */
static GstBuffer *pop_completed(DownloadState *st, bool wait) {
  if (st->in_flight.empty()) return nullptr;
  InFlight &front = st->in_flight.front();
  if (wait)
    front.copied.synchronize();
  else if (!front.copied.done())
    return nullptr;
  GstBuffer *out = front.output;
  st->spare_events.push_back(std::move(front.copied));
  st->in_flight.pop_front();
  return out;
}

static void discard_in_flight(DownloadState *st) {
  while (GstBuffer *b = pop_completed(st, true)) gst_buffer_unref(b);
}

/* Pushes everything still in flight, in order. */
static GstFlowReturn drain(GstGpuDownload *self) {
  DownloadState *st = self->state;
  if (!st) return GST_FLOW_OK;
  return gstcs::guard_flow(GST_ELEMENT(self), "Downloading a buffer", [&] {
    GstFlowReturn ret = GST_FLOW_OK;
    while (GstBuffer *b = pop_completed(st, true)) {
      if (ret == GST_FLOW_OK)
        ret = gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), b);
      else
        gst_buffer_unref(b);
    }
    return ret;
  });
}

static gboolean download_start(GstCsBaseTransform *base) {
  auto *self = GST_GPU_DOWNLOAD(base);
  if (!gst_cs_base_transform_use_cuda(base)) return TRUE;
  return gstcs::guard_bool(GST_ELEMENT(self), "Starting the download", [&] {
    auto *st = new DownloadState();
    self->state = st;
    st->device = gst_cs_base_transform_get_device_id(base);
    st->stream = cs::Stream(st->device);
    st->pinned = gst_cs_pinned_allocator_get();
    return TRUE;
  });
}

static gboolean download_stop(GstCsBaseTransform *base) {
  auto *self = GST_GPU_DOWNLOAD(base);
  DownloadState *st = self->state;
  if (!st) return TRUE;
  try {
    discard_in_flight(st);
  } catch (const std::exception &e) {
    GST_WARNING_OBJECT(self, "while stopping: %s", e.what());
  }
  if (st->pool) {
    gst_buffer_pool_set_active(st->pool, FALSE);
    gst_object_unref(st->pool);
  }
  gst_clear_object(&st->pinned);
  delete st;
  self->state = nullptr;
  return TRUE;
}

static GstCaps *download_transform_caps(GstBaseTransform *trans, GstPadDirection direction, GstCaps *caps,
                                        GstCaps *filter) {
  const bool cuda = gst_cs_base_transform_use_cuda(GST_CS_BASE_TRANSFORM(trans));
  if (direction == GST_PAD_SRC) return transfer_caps(caps, GST_CAPS_FEATURE_MEMORY_CS_DEVICE, cuda, filter);
  GstCaps *sys = gst_cs_caps_with_feature(caps, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
  GstCaps *result = transfer_caps(sys, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY, false, filter);
  gst_caps_unref(sys);
  return result;
}

static gboolean download_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  self->from_device = gst_cs_caps_has_device_feature(incaps);
  if (self->from_device && !self->state) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Device memory negotiated but the element runs on the CPU backend"),
                      (nullptr));
    return FALSE;
  }
  const bool out_device = gst_cs_caps_has_device_feature(outcaps);
  gst_base_transform_set_passthrough(trans, self->from_device == out_device);
  return TRUE;
}

static gboolean download_transform_size(GstBaseTransform *, GstPadDirection, GstCaps *, gsize size, GstCaps *,
                                        gsize *othersize) {
  *othersize = size;
  return TRUE;
}

static gboolean download_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  DownloadState *st = self->state;
  if (!self->from_device || !st) return TRUE;
  if (st->pool) {
    gst_buffer_pool_set_active(st->pool, FALSE);
    gst_clear_object(&st->pool);
  }
  // Output goes into page-locked memory of our own, so the DMA writes the
  // output buffer directly.
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  GstVideoInfo info;
  if (caps && gst_video_info_from_caps(&info, caps)) {
    st->pool = gst_buffer_pool_new();
    st->pool_size = info.size;
    GstStructure *config = gst_buffer_pool_get_config(st->pool);
    gst_buffer_pool_config_set_params(config, caps, guint(info.size), self->max_in_flight + 1, 0);
    gst_buffer_pool_config_set_allocator(config, st->pinned, nullptr);
    if (!gst_buffer_pool_set_config(st->pool, config) || !gst_buffer_pool_set_active(st->pool, TRUE)) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Cannot set up the page-locked buffer pool"), (nullptr));
      return FALSE;
    }
  }
  return TRUE;
}

static bool upstream_is_live(GstGpuDownload *self) {
  GstQuery *query = gst_query_new_latency();
  gboolean live = FALSE;
  if (gst_pad_peer_query(GST_BASE_TRANSFORM_SINK_PAD(self), query)) gst_query_parse_latency(query, &live, nullptr, nullptr);
  gst_query_unref(query);
  return live;
}

static GstFlowReturn copy_to_host(GstGpuDownload *self, GstBuffer *inbuf, GstBuffer *outbuf) {
  DownloadState *st = self->state;
  GstMapInfo out_map;
  if (!gst_buffer_map(outbuf, &out_map, GST_MAP_WRITE)) throw std::runtime_error("cannot map the output buffer");
  cs::DeviceGuard guard(st->device);
  gsize offset = 0;
  const guint n = gst_buffer_n_memory(inbuf);
  for (guint i = 0; i < n; ++i) {
    GstMemory *mem = gst_buffer_peek_memory(inbuf, i);
    if (gst_is_cs_memory(mem)) {
      cs::MirroredBuffer &src = gstcs::mirrored(mem);
      const auto *s = static_cast<const guint8 *>(src.begin_device_read(st->stream.get())) + mem->offset;
      cs::copy_async(out_map.data + offset, s, mem->size, st->stream.get());
      src.end_device_read(st->stream.get());
      offset += mem->size;
    } else {  // a system-memory part of the buffer: copy it on the host
      GstMapInfo map;
      if (!gst_memory_map(mem, &map, GST_MAP_READ)) {
        gst_buffer_unmap(outbuf, &out_map);
        throw std::runtime_error("cannot map the input buffer");
      }
      memcpy(out_map.data + offset, map.data, map.size);
      offset += map.size;
      gst_memory_unmap(mem, &map);
    }
  }
  gst_buffer_unmap(outbuf, &out_map);
  return GST_FLOW_OK;
}

static GstFlowReturn download_submit_input_buffer(GstBaseTransform *trans, gboolean is_discont, GstBuffer *input) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  if (gst_base_transform_is_passthrough(trans) || !self->state)
    return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->submit_input_buffer(trans, is_discont, input);
  DownloadState *st = self->state;
  if (!st->live_checked) {
    st->live = upstream_is_live(self);
    st->live_checked = true;
    GST_INFO_OBJECT(self, "upstream is %s: up to %u buffers in flight", st->live ? "live" : "not live",
                    st->live ? 1u : self->max_in_flight);
  }
  const gsize size = gst_buffer_get_size(input);
  GstBuffer *outbuf = nullptr;
  if (st->pool && size == st->pool_size) {
    GstFlowReturn ret = gst_buffer_pool_acquire_buffer(st->pool, &outbuf, nullptr);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref(input);
      return ret;
    }
  } else {
    outbuf = gst_buffer_new_allocate(st->pinned, size, nullptr);
    if (!outbuf) {
      GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                        ("Cannot allocate %" G_GSIZE_FORMAT " bytes of page-locked host memory", size), (nullptr));
      gst_buffer_unref(input);
      return GST_FLOW_ERROR;
    }
  }
  GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->copy_metadata(trans, input, outbuf);
  GstFlowReturn ret = gstcs::guard_flow(GST_ELEMENT(self), "Downloading a buffer", [&] {
    copy_to_host(self, input, outbuf);
    cs::Event copied = st->take_event();
    copied.record(st->stream.get());
    st->in_flight.push_back({std::move(copied), outbuf});
    return GST_FLOW_OK;
  });
  if (ret != GST_FLOW_OK) gst_buffer_unref(outbuf);
  // The input's device memory may be recycled now: its reader event guards
  // the pending copy.
  gst_buffer_unref(input);
  return ret;
}

static GstFlowReturn download_generate_output(GstBaseTransform *trans, GstBuffer **outbuf) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  DownloadState *st = self->state;
  if (gst_base_transform_is_passthrough(trans) || !st)
    return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->generate_output(trans, outbuf);
  const size_t limit = st->live ? 1 : self->max_in_flight;
  return gstcs::guard_flow(GST_ELEMENT(self), "Downloading a buffer", [&] {
    // Push finished copies; wait only when the window is full.
    *outbuf = pop_completed(st, st->in_flight.size() >= limit);
    return GST_FLOW_OK;
  });
}

static gboolean download_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  if (self->state) {
    if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) {
      discard_in_flight(self->state);
    } else if (GST_EVENT_IS_SERIALIZED(event) && drain(self) != GST_FLOW_OK &&
               GST_EVENT_TYPE(event) != GST_EVENT_EOS) {
      GST_DEBUG_OBJECT(self, "push failed while draining before %" GST_PTR_FORMAT, event);
    }
  }
  return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->sink_event(trans, event);
}

static gboolean download_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  if (direction == GST_PAD_SINK && GST_QUERY_TYPE(query) == GST_QUERY_DRAIN) drain(self);
  return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->query(trans, direction, query);
}

static void download_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  auto *self = GST_GPU_DOWNLOAD(object);
  if (prop_id == PROP_MAX_IN_FLIGHT)
    self->max_in_flight = g_value_get_uint(value);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void download_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_GPU_DOWNLOAD(object);
  if (prop_id == PROP_MAX_IN_FLIGHT)
    g_value_set_uint(value, self->max_in_flight);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void gst_gpu_download_class_init(GstGpuDownloadClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstCsBaseTransformClass *cs_class = GST_CS_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = download_set_property;
  gobject_class->get_property = download_get_property;
  g_object_class_install_property(
      gobject_class, PROP_MAX_IN_FLIGHT,
      g_param_spec_uint("max-in-flight", "Buffers in flight",
                        "Most device-to-host copies outstanding at once before the element waits for the oldest "
                        "(non-live streams; a live stream pushes each buffer as soon as it is copied)",
                        1, 64, kDefaultMaxInFlight,
                        GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "GPU download", "Filter/Converter/Hardware",
      "Copies buffers of any media type from CUDA device memory (caps feature memory:CudaSensing) into "
      "page-locked system memory, several copies in flight; passes system-memory buffers through",
      "gst-cuda-sensing developers");
  trans_class->transform_caps = download_transform_caps;
  trans_class->set_caps = download_set_caps;
  trans_class->transform_size = download_transform_size;
  trans_class->decide_allocation = download_decide_allocation;
  trans_class->submit_input_buffer = download_submit_input_buffer;
  trans_class->generate_output = download_generate_output;
  trans_class->sink_event = download_sink_event;
  trans_class->query = download_query;
  trans_class->passthrough_on_same_caps = TRUE;
  cs_class->start_backend = download_start;
  cs_class->stop_backend = download_stop;
  GST_DEBUG_CATEGORY_INIT(gst_gpu_download_debug, "gpudownload", 0, "CUDA device memory to system memory");
}

static void gst_gpu_download_init(GstGpuDownload *self) { self->max_in_flight = kDefaultMaxInFlight; }
