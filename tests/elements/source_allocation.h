// Whether a source fills its buffers from the allocator negotiated downstream
// (the ALLOCATION query), as GStreamer sources should: gpuupload offers
// page-locked memory, which it then copies to the device without staging.
#pragma once

#include <gst/cudasensing/gstcsmemory.h>
#include <gst/gst.h>

#include "play_to_end.h"

#include <string>
#include <vector>

namespace source_allocation_test {

// An allocator of plain host memory whose memories can be told apart from
// the default allocator's.
struct TestMemory {
  GstMemory memory;
  guint8 *data;
};
struct TestAllocator {
  GstAllocator parent;
};
struct TestAllocatorClass {
  GstAllocatorClass parent_class;
};

G_DEFINE_TYPE(TestAllocator, test_allocator, GST_TYPE_ALLOCATOR)

inline GstMemory *test_allocator_alloc(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
  auto *m = g_new0(TestMemory, 1);
  const gsize maxsize = size + params->prefix + params->padding;
  m->data = static_cast<guint8 *>(g_malloc(maxsize));
  gst_memory_init(GST_MEMORY_CAST(m), params->flags, allocator, nullptr, maxsize, params->align, params->prefix, size);
  return GST_MEMORY_CAST(m);
}

inline void test_allocator_free(GstAllocator *, GstMemory *memory) {
  auto *m = reinterpret_cast<TestMemory *>(memory);
  g_free(m->data);
  g_free(m);
}

inline void test_allocator_class_init(TestAllocatorClass *klass) {
  GST_ALLOCATOR_CLASS(klass)->alloc = test_allocator_alloc;
  GST_ALLOCATOR_CLASS(klass)->free = test_allocator_free;
}

inline void test_allocator_init(TestAllocator *self) {
  GstAllocator *a = GST_ALLOCATOR(self);
  a->mem_type = "CsTestMemory";
  a->mem_map = [](GstMemory *m, gsize, GstMapFlags) -> gpointer { return reinterpret_cast<TestMemory *>(m)->data; };
  a->mem_unmap = [](GstMemory *) {};
}

struct AllocationCount {
  int buffers = 0;         // reaching the probed pad
  int from_proposed = 0;   // whose memories all come from the proposed test allocator
  int page_locked = 0;     // whose memories are all the core library's page-locked memory
  int pooled = 0;          // from a buffer pool (recycled, not allocated per buffer)
  std::vector<guint8> bytes;  // the buffers' contents, one after the other
  bool eos = false;
  std::string error;
};

inline bool all_memories(GstBuffer *buf, bool (*test)(GstMemory *)) {
  const guint n = gst_buffer_n_memory(buf);
  for (guint i = 0; i < n; ++i)
    if (!test(gst_buffer_peek_memory(buf, i))) return false;
  return n > 0;
}

// Runs `pipeline`, whose element named "probed" receives the source's
// buffers; with `propose`, that element's sink pad answers the ALLOCATION
// query with the test allocator. Counts the buffers by where their memory
// comes from, and keeps their bytes.
inline AllocationCount count_allocations(const std::string &pipeline, bool propose) {
  // Kept for the process, as GStreamer's own allocators are.
  static GstAllocator *proposed = [] {
    auto *allocator = GST_ALLOCATOR(gst_object_ref_sink(g_object_new(test_allocator_get_type(), nullptr)));
    GST_OBJECT_FLAG_SET(allocator, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    return allocator;
  }();
  static const auto from_proposed = [](GstMemory *m) { return m->allocator == proposed; };
  AllocationCount count;
  GError *error = nullptr;
  GstElement *p = gst_parse_launch(pipeline.c_str(), &error);
  GstElement *probed = p && !error ? gst_bin_get_by_name(GST_BIN(p), "probed") : nullptr;
  if (!probed) {
    count.error = error ? error->message : "cannot build the pipeline with an element named probed";
    g_clear_error(&error);
    if (p) gst_object_unref(p);
    return count;
  }
  GstPad *pad = gst_element_get_static_pad(probed, "sink");
  if (propose)
    gst_pad_add_probe(
        pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
        [](GstPad *, GstPadProbeInfo *info, gpointer) {
          GstQuery *q = GST_PAD_PROBE_INFO_QUERY(info);
          if (GST_QUERY_TYPE(q) != GST_QUERY_ALLOCATION) return GST_PAD_PROBE_OK;
          gst_query_add_allocation_param(q, proposed, nullptr);
          return GST_PAD_PROBE_HANDLED;
        },
        nullptr, nullptr);
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *info, gpointer data) {
        auto *c = static_cast<AllocationCount *>(data);
        GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
        ++c->buffers;
        c->pooled += buf->pool != nullptr;
        c->from_proposed += all_memories(buf, from_proposed);
        c->page_locked += all_memories(buf, [](GstMemory *m) { return bool(gst_is_cs_pinned_memory(m)); });
        GstMapInfo map;
        if (gst_buffer_map(buf, &map, GST_MAP_READ)) {
          c->bytes.insert(c->bytes.end(), map.data, map.data + map.size);
          gst_buffer_unmap(buf, &map);
        }
        return GST_PAD_PROBE_OK;
      },
      &count, nullptr);
  gst_object_unref(pad);
  gst_object_unref(probed);
  count.error = element_test::play_to_end(p, 60);
  count.eos = count.error.empty();
  gst_object_unref(p);
  return count;
}

}  // namespace source_allocation_test
