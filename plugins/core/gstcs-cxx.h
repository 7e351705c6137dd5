// C++ side of the core library, for the project's own elements: direct access
// to the mirrored buffer behind a GstCsMemory, and one way of turning CUDA
// exceptions into GStreamer errors.
#pragma once

#include <gst/base/gstbasesrc.h>
#include <gst/base/gstbasetransform.h>
#include <gst/cudasensing/gstcsmemory.h>

#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "common/cuda_runtime.h"
#include "common/mirrored_buffer.h"

namespace gstcs {

// The buffer behind a GstCsMemory (shared by its sub-memories).
cs::MirroredBuffer &mirrored(GstMemory *mem);
std::shared_ptr<cs::MirroredBuffer> mirrored_shared(GstMemory *mem);

// The `transform` of elements that make their output in generate_output:
// never called. Without a transform GstBaseTransform takes an element for an
// in-place one: it forwards upstream's ALLOCATION queries downstream and
// never calls decide_allocation or asks downstream for the element's own
// output.
inline GstFlowReturn output_made_elsewhere(GstBaseTransform *, GstBuffer *, GstBuffer *) {
  return GST_FLOW_NOT_SUPPORTED;
}

// `caps` (taken) limited to `filter` when there is one: the last step of
// every transform_caps / get_caps.
inline GstCaps *filtered(GstCaps *caps, GstCaps *filter) {
  if (!filter) return caps;
  GstCaps *both = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
  gst_caps_unref(caps);
  return both;
}

// `media` (kept) in the memories an element offers: device or system memory
// when it runs on CUDA, system memory on the CPU.
inline GstCaps *in_memories(const GstCaps *media, bool cuda) {
  return cuda ? gst_cs_caps_any_memory(media) : gst_cs_caps_with_feature(media, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY);
}

// Whether a property may change now, called first in each set_property:
// those flagged GST_PARAM_MUTABLE_READY are read when the element starts, so
// while it runs (PAUSED, PLAYING) a change is refused with a warning on the
// bus, and the value read back stays the one in use.
inline bool property_change_allowed(GObject *object, GParamSpec *pspec) {
  if (!(pspec->flags & GST_PARAM_MUTABLE_READY) || !GST_IS_ELEMENT(object)) return true;
  GstElement *element = GST_ELEMENT(object);
  GST_OBJECT_LOCK(element);
  const bool running = GST_STATE(element) > GST_STATE_READY || GST_STATE_PENDING(element) > GST_STATE_READY;
  GST_OBJECT_UNLOCK(element);
  if (running)
    GST_ELEMENT_WARNING(element, CORE, STATE_CHANGE,
                        ("Property '%s' cannot change while the element runs", pspec->name),
                        ("it is read when the element starts: set it in the NULL or READY state; the value in use "
                         "is kept"));
  return !running;
}

// Posts GST_ELEMENT_ERROR for an exception escaping CUDA work: CUDA errors
// with their CUDA text, anything else as a stream error.
void post_error(GstElement *element, const char *doing, const std::exception &error);

// Runs `body` (returning GstFlowReturn); an exception becomes an element error
// and GST_FLOW_ERROR, never a crash.
template <class Body>
GstFlowReturn guard_flow(GstElement *element, const char *doing, Body &&body) {
  try {
    return body();
  } catch (const std::exception &error) {
    post_error(element, doing, error);
    return GST_FLOW_ERROR;
  }
}

// Same for code returning gboolean (start, set_caps, ...).
template <class Body>
gboolean guard_bool(GstElement *element, const char *doing, Body &&body) {
  try {
    return body();
  } catch (const std::exception &error) {
    post_error(element, doing, error);
    return FALSE;
  }
}

void set_gerror(GError **error, const std::exception &e);

// Blocks of up to `block_bytes` for a source, recycled: a pool with the
// allocator `query` settled on, made in the source's decide_allocation
// (after the parent's). A fresh block of system memory per buffer is mapped
// and zeroed by the kernel page by page (one thread's reads of a file into
// fresh 58 MB blocks ran at 1.2 GB/s); pooled blocks are not, and a pool of
// page-locked blocks skips the allocator's lookups. NULL when no pool can be
// made (the source then allocates per buffer).
GstBufferPool *new_source_pool(GstBaseSrc *src, GstQuery *query, gsize block_bytes);
// Deactivates and releases `*pool` (nothing when NULL): a source's or an
// OutputPool's.
void drop_pool(GstBufferPool **pool);
// A buffer of `bytes` from `pool`; without one (or when it cannot give one),
// newly allocated from the allocator negotiated downstream (gpuupload offers
// page-locked memory, which it copies to the device without staging). NULL
// when the allocation fails, with an element error saying how many bytes
// were asked (a block too large for memory is an error, not an abort).
GstBuffer *acquire_source_buffer(GstBaseSrc *src, GstBufferPool *pool, gsize bytes);

// Output blocks of a transform's system-memory path, recycled (a fresh block
// per buffer costs what new_source_pool says): a pool with the allocator the
// transform's decide_allocation settled on, made at the first buffer and
// made again for a larger block or another allocator. Streaming thread only.
class OutputPool {
 public:
  OutputPool() = default;
  OutputPool(const OutputPool &) = delete;
  OutputPool &operator=(const OutputPool &) = delete;
  ~OutputPool();
  // A buffer of `bytes`: from the pool, else newly allocated; NULL when the
  // allocation fails.
  GstBuffer *acquire(GstBaseTransform *trans, gsize bytes);
  // The same from `allocator` (NULL: the default), for another pad's output.
  GstBuffer *acquire(GstObject *owner, GstAllocator *allocator, const GstAllocationParams &params, gsize bytes);
  // Releases the pool (its blocks still downstream are freed as they return).
  void drop();

 private:
  GstBufferPool *pool_ = nullptr;
  GstAllocator *allocator_ = nullptr;  // the pool's (NULL: the default)
  gsize block_bytes_ = 0;
};

// The file sources' "read-threads" property (guint, 0 = automatic): threads
// that read each large buffer from the file (common/split_work.h).
GParamSpec *read_threads_param_spec(GParamFlags flags);

// A file source's own unit beside time (GST_FORMAT_DEFAULT: ENVI lines, CPHD
// vectors): `total` units, `position` the next one to push, and unit <-> time
// conversions (false where the source has no time for them).
struct SourceUnits {
  gint64 total = 0, position = 0;
  std::function<bool(gint64 unit, gint64 *time)> to_time;
  std::function<bool(gint64 time, gint64 *unit)> to_unit;
};
// Answers DURATION (units; time: where the last unit ends), POSITION (units),
// SEEKING (units always, time where units have times and times find their
// units) and CONVERT between
// the two. False for other queries and formats: the base class's then.
bool answer_unit_query(GstQuery *query, const SourceUnits &units);
// A seek event's fields (gst_event_parse_seek).
struct SeekRequest {
  gdouble rate = 1.0;
  GstFormat format = GST_FORMAT_UNDEFINED;
  GstSeekFlags flags = GST_SEEK_FLAG_NONE;
  GstSeekType start_type = GST_SEEK_TYPE_NONE, stop_type = GST_SEEK_TYPE_NONE;
  gint64 start = -1, stop = -1;
};
// `seek`'s fields; nothing (with a warning from `source`) for a rate <= 0
// (the file sources read their `units` forwards only) or a start after the
// stop.
std::optional<SeekRequest> forward_seek(GstElement *source, GstEvent *seek, const char *units);
// Installs a file source's seek check where both kinds of seek arrive:
// through its pad (GstBaseSrc::event, a pipeline's seeks) and sent to the
// element (GstElement::send_event, which GstBaseSrc answers without calling
// the pad's event function). A seek that `Refused` turns down fails there,
// before the base class flushes anything; every other event goes on to the
// parent class. Call from class_init, once the parent class is known.
template <bool (*Refused)(GstElement *source, GstEvent *seek)>
class SourceSeekCheck {
 public:
  static void install(GstBaseSrcClass *klass, gpointer parent_class) {
    parent_event_ = GST_BASE_SRC_CLASS(parent_class)->event;
    parent_send_event_ = GST_ELEMENT_CLASS(parent_class)->send_event;
    klass->event = event;
    GST_ELEMENT_CLASS(klass)->send_event = send_event;
  }

 private:
  static bool refused(GstElement *source, GstEvent *event) {
    return GST_EVENT_TYPE(event) == GST_EVENT_SEEK && Refused(source, event);
  }
  static gboolean event(GstBaseSrc *source, GstEvent *event) {
    return refused(GST_ELEMENT(source), event) ? FALSE : parent_event_(source, event);
  }
  static gboolean send_event(GstElement *source, GstEvent *event) {
    if (!refused(source, event)) return parent_send_event_(source, event);
    gst_event_unref(event);
    return FALSE;
  }
  static inline gboolean (*parent_event_)(GstBaseSrc *, GstEvent *) = nullptr;
  static inline gboolean (*parent_send_event_)(GstElement *, GstEvent *) = nullptr;
};

// A seek position in units: SET counts from the first, END from the end,
// NONE keeps `kept`, -1 is the end (a stop of -1: none); clamped to
// [0, total].
gint64 unit_seek_position(GstSeekType type, gint64 value, gint64 total, gint64 kept);

// An element's state between start and stop, for elements whose queries read
// it: the streaming thread uses the pointer start() returned (nothing streams
// after stop), while a query, which may come from another thread even while
// the element stops, takes a reference (for_queries) that outlives a stop
// meanwhile. The owner's object lock guards the reference. A member of a
// GObject struct: placement-new in init, destroyed in finalize.
template <class State>
class RunningState {
 public:
  State *start(GstObject *owner) {
    auto fresh = std::make_shared<State>();
    GST_OBJECT_LOCK(owner);
    state_ = fresh;
    GST_OBJECT_UNLOCK(owner);
    return fresh.get();
  }
  std::shared_ptr<State> for_queries(GstObject *owner) const {
    GST_OBJECT_LOCK(owner);
    std::shared_ptr<State> state = state_;
    GST_OBJECT_UNLOCK(owner);
    return state;
  }
  // The state, withdrawn from later queries (null when none was started);
  // it goes with the last reference, the caller's or a query's.
  std::shared_ptr<State> stop(GstObject *owner) {
    GST_OBJECT_LOCK(owner);
    std::shared_ptr<State> state = std::move(state_);
    GST_OBJECT_UNLOCK(owner);
    return state;
  }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace gstcs
