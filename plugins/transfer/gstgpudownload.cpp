/* gpudownload: CUDA device memory -> system memory, for any caps.
 *
 * Each copy goes straight into a page-locked output buffer on the element's
 * own stream. The streaming thread only enqueues copies; a task on the source
 * pad waits for each copy to complete and pushes the buffer, in order. So the
 * download of buffer N overlaps the device work on N+1 and the downstream work
 * on N-1, and a buffer leaves as soon as its copy is done (no added latency,
 * nothing held back waiting for the next input). At most `max-in-flight`
 * copies are outstanding; beyond that the streaming thread waits.
 * Serialized events and drain queries wait until every pending buffer has been
 * pushed, so nothing overtakes data. System-memory buffers pass through. */
#include "gstgpudownload.h"

#include <gst/video/video.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "../core/gstcs-cxx.h"
#include "common/device_resources.h"
#include "transfer-caps.h"

GST_DEBUG_CATEGORY_STATIC(gst_gpu_download_debug);
#define GST_CAT_DEFAULT gst_gpu_download_debug

namespace {
struct InFlight {
  cs::Event copied;
  GstBuffer *output;
};

constexpr guint kDefaultMaxInFlight = 4;

struct DownloadState {
  cs::Stream stream;
  GstAllocator *pinned = nullptr;
  GstBufferPool *pool = nullptr;
  gsize pool_size = 0;
  int device = 0;

  // Shared between the streaming thread and the source pad task.
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<InFlight> queue;   // copies enqueued, oldest first
  bool pushing = false;         // the task is pushing a buffer taken off the queue
  bool flushing = false;
  bool task_started = false;
  GstFlowReturn last_flow = GST_FLOW_OK;
};
}  // namespace

struct _GstGpuDownload {
  GstCsBaseTransform parent;
  gboolean from_device;
  guint max_in_flight;
  DownloadState *state;
  GstPadActivateModeFunction base_src_activate_mode;
};

G_DEFINE_TYPE(GstGpuDownload, gst_gpu_download, GST_TYPE_CS_BASE_TRANSFORM)
GST_ELEMENT_REGISTER_DEFINE(gpudownload, "gpudownload", GST_RANK_NONE, GST_TYPE_GPU_DOWNLOAD)

enum { PROP_0, PROP_MAX_IN_FLIGHT };

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

/* Source pad task: wait for the oldest copy, push its buffer. */
static void push_loop(GstGpuDownload *self) {
  DownloadState *st = self->state;
  GstPad *srcpad = GST_BASE_TRANSFORM_SRC_PAD(self);
  std::unique_lock<std::mutex> lock(st->mutex);
  st->changed.wait(lock, [st] { return st->flushing || !st->queue.empty(); });
  if (st->flushing) {
    gst_pad_pause_task(srcpad);
    return;
  }
  InFlight item = std::move(st->queue.front());
  st->queue.pop_front();
  st->pushing = true;
  lock.unlock();

  GstFlowReturn ret;
  try {
    item.copied.synchronize();
    ret = gst_pad_push(srcpad, item.output);
  } catch (const std::exception &e) {
    gstcs::post_error(GST_ELEMENT(self), "Downloading a buffer", e);
    gst_buffer_unref(item.output);
    ret = GST_FLOW_ERROR;
  }

  lock.lock();
  st->pushing = false;
  cs::DeviceResources::get(st->device).return_event(std::move(item.copied));
  if (ret != GST_FLOW_OK && st->last_flow == GST_FLOW_OK) st->last_flow = ret;
  st->changed.notify_all();
  lock.unlock();
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(self, "pausing: %s", gst_flow_get_name(ret));
    if (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS) GST_ELEMENT_FLOW_ERROR(self, ret);
    gst_pad_pause_task(srcpad);
  }
}

static void ensure_task(GstGpuDownload *self) {
  DownloadState *st = self->state;
  if (st->task_started) return;
  st->task_started = true;
  gst_pad_start_task(GST_BASE_TRANSFORM_SRC_PAD(self), (GstTaskFunction)push_loop, self, nullptr);
}

/* Wakes the task and the streaming thread and stops pushing. */
static void begin_flush(GstGpuDownload *self) {
  DownloadState *st = self->state;
  std::lock_guard<std::mutex> lock(st->mutex);
  st->flushing = true;
  st->changed.notify_all();
}

/* Drops everything still queued (after the task has stopped). */
static void end_flush(GstGpuDownload *self, bool restart) {
  DownloadState *st = self->state;
  std::deque<InFlight> dropped;
  {
    std::lock_guard<std::mutex> lock(st->mutex);
    dropped.swap(st->queue);
    st->flushing = !restart;
    st->last_flow = GST_FLOW_OK;
  }
  for (InFlight &item : dropped) {
    try {
      item.copied.synchronize();  // the DMA must not write into a freed buffer
    } catch (const std::exception &e) {
      GST_WARNING_OBJECT(self, "while flushing: %s", e.what());
    }
    gst_buffer_unref(item.output);
  }
  st->task_started = false;
}

/* Blocks until every queued buffer has been pushed. */
static GstFlowReturn drain(GstGpuDownload *self) {
  DownloadState *st = self->state;
  if (!st) return GST_FLOW_OK;
  std::unique_lock<std::mutex> lock(st->mutex);
  st->changed.wait(lock, [st] { return st->flushing || st->last_flow != GST_FLOW_OK || (st->queue.empty() && !st->pushing); });
  return st->flushing ? GST_FLOW_FLUSHING : st->last_flow;
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
  begin_flush(self);
  gst_pad_stop_task(GST_BASE_TRANSFORM_SRC_PAD(self));
  end_flush(self, false);
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
  if (direction == GST_PAD_SRC || gst_caps_is_any(caps))
    return transfer_caps(caps, GST_CAPS_FEATURE_MEMORY_CS_DEVICE, direction == GST_PAD_SRC && cuda, filter);
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

/* Enqueues the copies of `inbuf` into `outbuf` on the element's stream. */
static void copy_to_host(GstGpuDownload *self, GstBuffer *inbuf, GstBuffer *outbuf) {
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
}

static GstFlowReturn acquire_output(GstGpuDownload *self, gsize size, GstBuffer **outbuf) {
  DownloadState *st = self->state;
  if (st->pool && size == st->pool_size) return gst_buffer_pool_acquire_buffer(st->pool, outbuf, nullptr);
  *outbuf = gst_buffer_new_allocate(st->pinned, size, nullptr);
  if (*outbuf) return GST_FLOW_OK;
  GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                    ("Cannot allocate %" G_GSIZE_FORMAT " bytes of page-locked host memory", size), (nullptr));
  return GST_FLOW_ERROR;
}

static GstFlowReturn download_submit_input_buffer(GstBaseTransform *trans, gboolean is_discont, GstBuffer *input) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  if (gst_base_transform_is_passthrough(trans) || !self->state)
    return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->submit_input_buffer(trans, is_discont, input);
  DownloadState *st = self->state;
  {
    // Back-pressure: wait for room; report what went wrong downstream.
    std::unique_lock<std::mutex> lock(st->mutex);
    st->changed.wait(lock, [&] {
      return st->flushing || st->last_flow != GST_FLOW_OK || st->queue.size() < self->max_in_flight;
    });
    if (st->flushing || st->last_flow != GST_FLOW_OK) {
      GstFlowReturn ret = st->flushing ? GST_FLOW_FLUSHING : st->last_flow;
      gst_buffer_unref(input);
      return ret;
    }
  }
  GstBuffer *outbuf = nullptr;
  GstFlowReturn ret = acquire_output(self, gst_buffer_get_size(input), &outbuf);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref(input);
    return ret;
  }
  GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->copy_metadata(trans, input, outbuf);
  ret = gstcs::guard_flow(GST_ELEMENT(self), "Downloading a buffer", [&] {
    copy_to_host(self, input, outbuf);
    cs::Event copied = cs::DeviceResources::get(st->device).take_event();
    copied.record(st->stream.get());
    std::lock_guard<std::mutex> lock(st->mutex);
    st->queue.push_back({std::move(copied), outbuf});
    st->changed.notify_all();
    return GST_FLOW_OK;
  });
  if (ret != GST_FLOW_OK) gst_buffer_unref(outbuf);
  else ensure_task(self);
  // The input's device memory may be recycled now: its reader event guards
  // the pending copy.
  gst_buffer_unref(input);
  return ret;
}

static GstFlowReturn download_generate_output(GstBaseTransform *trans, GstBuffer **outbuf) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  if (gst_base_transform_is_passthrough(trans) || !self->state)
    return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->generate_output(trans, outbuf);
  *outbuf = nullptr;  // the source pad task pushes
  return GST_FLOW_OK;
}

static gboolean download_sink_event(GstBaseTransform *trans, GstEvent *event) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  transfer_assume_bytes_without_caps(trans, event);
  if (self->state && self->state->task_started) {
    switch (GST_EVENT_TYPE(event)) {
      case GST_EVENT_FLUSH_START: {
        begin_flush(self);
        gboolean ok = GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->sink_event(trans, event);
        gst_pad_pause_task(GST_BASE_TRANSFORM_SRC_PAD(self));
        return ok;
      }
      case GST_EVENT_FLUSH_STOP:
        gst_pad_stop_task(GST_BASE_TRANSFORM_SRC_PAD(self));
        end_flush(self, true);
        break;
      default:
        if (GST_EVENT_IS_SERIALIZED(event)) drain(self);
        break;
    }
  }
  return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->sink_event(trans, event);
}

static gboolean download_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  auto *self = GST_GPU_DOWNLOAD(trans);
  if (direction == GST_PAD_SINK && GST_QUERY_IS_SERIALIZED(query)) drain(self);
  return GST_BASE_TRANSFORM_CLASS(gst_gpu_download_parent_class)->query(trans, direction, query);
}

static void download_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  if (prop_id == PROP_MAX_IN_FLIGHT)
    GST_GPU_DOWNLOAD(object)->max_in_flight = g_value_get_uint(value);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
}

static void download_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  if (prop_id == PROP_MAX_IN_FLIGHT)
    g_value_set_uint(value, GST_GPU_DOWNLOAD(object)->max_in_flight);
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
                        "Most device-to-host copies outstanding at once; beyond that the streaming thread waits "
                        "for the oldest (each buffer is pushed as soon as its own copy completes)",
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
  trans_class->transform = gstcs::output_made_elsewhere;  // so that decide_allocation (the page-locked pool) runs
  trans_class->sink_event = download_sink_event;
  trans_class->transform_meta = transfer_keeps_every_meta;
  trans_class->query = download_query;
  trans_class->passthrough_on_same_caps = TRUE;
  cs_class->start_backend = download_start;
  cs_class->stop_backend = download_stop;
  GST_DEBUG_CATEGORY_INIT(gst_gpu_download_debug, "gpudownload", 0, "CUDA device memory to system memory");
}

/* The push task holds the source pad's stream lock while it waits for work;
 * deactivating the pad takes that lock, so the task is woken and stopped
 * first (as queue does). */
static gboolean download_src_activate_mode(GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active) {
  auto *self = GST_GPU_DOWNLOAD(parent);
  if (!active && self->state) {
    begin_flush(self);
    gst_pad_stop_task(pad);
  }
  return self->base_src_activate_mode(pad, parent, mode, active);
}

static void gst_gpu_download_init(GstGpuDownload *self) {
  self->max_in_flight = kDefaultMaxInFlight;
  GstPad *srcpad = GST_BASE_TRANSFORM_SRC_PAD(self);
  self->base_src_activate_mode = GST_PAD_ACTIVATEMODEFUNC(srcpad);
  gst_pad_set_activatemode_function(srcpad, download_src_activate_mode);
}
