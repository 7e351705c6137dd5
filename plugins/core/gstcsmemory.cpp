#include <gst/cudasensing/gstcsmemory.h>

#include <map>
#include <mutex>
#include <new>

#include "common/device_resources.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_cs_memory_debug);
// Made at first use: the helpers here log for every element, on paths that
// never create one of this file's allocators.
static GstDebugCategory *memory_category() {
  static gsize made = 0;
  if (g_once_init_enter(&made)) {
    GST_DEBUG_CATEGORY_INIT(gst_cs_memory_debug, "csmemory", 0, "gst-cuda-sensing memory and element helpers");
    g_once_init_leave(&made, 1);
  }
  return gst_cs_memory_debug;
}
#define GST_CAT_DEFAULT memory_category()

/* ---------------- checked system memory ---------------- */

/* GStreamer's system-memory allocator ends the process when malloc fails
 * (g_malloc), as a block sized from a file or a property can make it do. This
 * one stands in for it in the pools and blocks below: the same memory (it
 * belongs to the system allocator, so it maps and frees as that one's), from
 * g_try_malloc, and NULL when there is not that much. */
typedef struct {
  GstAllocator parent;
} GstCsCheckedAllocator;

typedef struct {
  GstAllocatorClass parent_class;
} GstCsCheckedAllocatorClass;

G_DEFINE_TYPE(GstCsCheckedAllocator, gst_cs_checked_allocator, GST_TYPE_ALLOCATOR)

static GstMemory *checked_alloc_vfunc(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
  const gsize align = params->align | gst_memory_alignment;
  const gsize maxsize = size + params->prefix + params->padding;
  if (maxsize < size || maxsize + align < maxsize) return nullptr;  // wrapped around: more than memory holds
  auto *block = static_cast<guint8 *>(g_try_malloc(maxsize + align));
  if (!block) {
    GST_WARNING_OBJECT(allocator, "cannot allocate %" G_GSIZE_FORMAT " bytes of system memory", maxsize);
    return nullptr;
  }
  guint8 *data = block + ((align + 1 - (guintptr(block) & align)) & align);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) memset(data, 0, params->prefix);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PADDED) memset(data + params->prefix + size, 0, params->padding);
  return gst_memory_new_wrapped(params->flags, data, maxsize, params->prefix, size, block, g_free);
}

static void gst_cs_checked_allocator_class_init(GstCsCheckedAllocatorClass *klass) {
  GST_ALLOCATOR_CLASS(klass)->alloc = checked_alloc_vfunc;
}

static void gst_cs_checked_allocator_init(GstCsCheckedAllocator *) {}

namespace {
using BufferRef = std::shared_ptr<cs::MirroredBuffer>;

BufferRef &buffer_ref(GstMemory *mem) { return *static_cast<BufferRef *>(reinterpret_cast<GstCsMemory *>(mem)->priv); }

guint8 *offset_ptr(void *base, GstMemory *mem) { return static_cast<guint8 *>(base) + mem->offset; }
}  // namespace

namespace gstcs {

cs::MirroredBuffer &mirrored(GstMemory *mem) { return *buffer_ref(mem); }
BufferRef mirrored_shared(GstMemory *mem) { return buffer_ref(mem); }

void set_gerror(GError **error, const std::exception &e) {
  g_set_error_literal(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED, e.what());
}

namespace {
// `allocator`, or the checked allocator where it is the system one (or NULL,
// which stands for that).
GstAllocator *checked(GstAllocator *allocator) {
  if (allocator && g_strcmp0(allocator->mem_type, GST_ALLOCATOR_SYSMEM) != 0) return allocator;
  static GstAllocator *system = [] {
    auto *a = GST_ALLOCATOR_CAST(gst_object_ref_sink(g_object_new(gst_cs_checked_allocator_get_type(), nullptr)));
    GST_OBJECT_FLAG_SET(a, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    return a;
  }();
  return system;
}

// A buffer of `bytes` from `allocator` (NULL: system memory), or NULL.
GstBuffer *new_buffer(GstAllocator *allocator, gsize bytes, const GstAllocationParams &params) {
  GstAllocationParams copy = params;
  return gst_buffer_new_allocate(checked(allocator), bytes, &copy);
}

// A buffer of `bytes` from the allocator the base class took from the query.
GstBuffer *new_source_buffer(GstBaseSrc *src, gsize bytes) {
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  gst_base_src_get_allocator(src, &allocator, &params);
  GstBuffer *buf = new_buffer(allocator, bytes, params);
  if (allocator) gst_object_unref(allocator);
  return buf;
}

// An active pool of `block_bytes`-byte blocks from `allocator` (NULL: the
// default), or NULL (with a warning naming `owner`) when none can be made.
GstBufferPool *make_block_pool(GstObject *owner, GstCaps *caps, gsize block_bytes, GstAllocator *allocator,
                               const GstAllocationParams &params) {
  if (block_bytes == 0 || block_bytes > G_MAXUINT) return nullptr;  // a pool's size is a guint
  GstBufferPool *pool = gst_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  // Two blocks made when the pool starts; more as they are asked for.
  gst_buffer_pool_config_set_params(config, caps, guint(block_bytes), 2, 0);
  gst_buffer_pool_config_set_allocator(config, checked(allocator), &params);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    GST_WARNING_OBJECT(owner, "cannot set up a pool of %" G_GSIZE_FORMAT "-byte blocks: allocating per buffer",
                       block_bytes);
    gst_object_unref(pool);
    return nullptr;
  }
  return pool;
}
}  // namespace

GstBufferPool *new_source_pool(GstBaseSrc *src, GstQuery *query, gsize block_bytes) {
  // The allocator the query settled on (the base class takes it from the query after decide_allocation).
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  if (gst_query_get_n_allocation_params(query) > 0) gst_query_parse_nth_allocation_param(query, 0, &allocator, &params);
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  // Made before the stream starts (in decide_allocation), so that its first blocks do not fault in during it.
  GstBufferPool *pool = make_block_pool(GST_OBJECT(src), caps, block_bytes, allocator, params);
  if (allocator) gst_object_unref(allocator);
  return pool;
}

OutputPool::~OutputPool() { drop(); }

void OutputPool::drop() {
  drop_pool(&pool_);
  if (allocator_) gst_object_unref(allocator_);
  allocator_ = nullptr;
  block_bytes_ = 0;
}

GstBuffer *OutputPool::acquire(GstBaseTransform *trans, gsize bytes) {
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  gst_base_transform_get_allocator(trans, &allocator, &params);
  GstBuffer *buf = acquire(GST_OBJECT(trans), allocator, params, bytes);
  if (allocator) gst_object_unref(allocator);
  return buf;
}

GstBuffer *OutputPool::acquire(GstObject *owner, GstAllocator *allocator, const GstAllocationParams &params,
                               gsize bytes) {
  // Made again for a larger block, or once the negotiation settles on another allocator.
  if (pool_ && (block_bytes_ < bytes || allocator_ != allocator)) drop();
  if (!pool_) {
    pool_ = make_block_pool(owner, nullptr, bytes, allocator, params);
    if (pool_) {
      block_bytes_ = bytes;
      allocator_ = allocator ? GST_ALLOCATOR(gst_object_ref(allocator)) : nullptr;
    }
  }
  GstBuffer *buf = nullptr;
  if (pool_ && gst_buffer_pool_acquire_buffer(pool_, &buf, nullptr) == GST_FLOW_OK) {
    gst_buffer_set_size(buf, gssize(bytes));
    return buf;
  }
  return new_buffer(allocator, bytes, params);
}

void drop_pool(GstBufferPool **pool) {
  if (!*pool) return;
  gst_buffer_pool_set_active(*pool, FALSE);
  gst_clear_object(pool);
}

// NULL after posting the error on `src`: every source says the same.
GstBuffer *acquire_source_buffer(GstBaseSrc *src, GstBufferPool *pool, gsize bytes) {
  GstBuffer *buf = nullptr;
  if (pool && gst_buffer_pool_acquire_buffer(pool, &buf, nullptr) == GST_FLOW_OK) {
    if (gst_buffer_get_size(buf) >= bytes) {
      gst_buffer_set_size(buf, gssize(bytes));
      return buf;
    }
    gst_buffer_unref(buf);  // the pool's blocks are smaller than this one
  }
  buf = new_source_buffer(src, bytes);
  if (!buf)
    GST_ELEMENT_ERROR(src, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate a buffer of %" G_GSIZE_FORMAT " bytes", bytes),
                      (nullptr));
  return buf;
}

GParamSpec *read_threads_param_spec(GParamFlags flags) {
  return g_param_spec_uint("read-threads", "Read threads",
                           "Threads that read each buffer from the file, in pieces of at least 4 MiB (one thread "
                           "copies from the page cache at a fraction of what the GPU link carries); 0 = half the "
                           "usable cores, at most 8",
                           0, 256, 0, flags);
}

void post_error(GstElement *element, const char *doing, const std::exception &error) {
  if (dynamic_cast<const cs::CudaError *>(&error)) {
    const auto &cuda = static_cast<const cs::CudaError &>(error);
    if (cuda.out_of_memory())
      GST_ELEMENT_ERROR(element, RESOURCE, NO_SPACE_LEFT, ("%s: %s", doing, error.what()), (nullptr));
    else
      GST_ELEMENT_ERROR(element, RESOURCE, FAILED, ("%s: CUDA error: %s", doing, error.what()), (nullptr));
  } else if (dynamic_cast<const std::bad_alloc *>(&error)) {
    // Where the size is known the code says so; this is what remains.
    GST_ELEMENT_ERROR(element, RESOURCE, NO_SPACE_LEFT, ("%s: not enough host memory", doing),
                      ("%s: the settings ask for more memory than the host can give", error.what()));
  } else {
    GST_ELEMENT_ERROR(element, STREAM, FAILED, ("%s: %s", doing, error.what()), (nullptr));
  }
}

}  // namespace gstcs

/* ---------------- device allocator ---------------- */

typedef struct {
  GstAllocator parent;
  gint device_id;
} GstCsAllocator;

typedef struct {
  GstAllocatorClass parent_class;
} GstCsAllocatorClass;

G_DEFINE_TYPE(GstCsAllocator, gst_cs_allocator, GST_TYPE_ALLOCATOR)

static GstMemory *cs_memory_wrap(GstAllocator *allocator, GstMemory *parent, BufferRef buffer, gsize maxsize,
                                 gsize offset, gsize size) {
  auto *mem = g_new0(GstCsMemory, 1);
  gst_memory_init(GST_MEMORY_CAST(mem), GstMemoryFlags(0), allocator, parent, maxsize, 255, offset, size);
  mem->priv = new BufferRef(std::move(buffer));
  return GST_MEMORY_CAST(mem);
}

GstMemory *gst_cs_allocator_alloc(GstAllocator *allocator, gsize size, GError **error) {
  g_return_val_if_fail(G_TYPE_CHECK_INSTANCE_TYPE(allocator, GST_TYPE_CS_ALLOCATOR), nullptr);
  auto *self = reinterpret_cast<GstCsAllocator *>(allocator);
  try {
    auto buffer = std::make_shared<cs::MirroredBuffer>(self->device_id, size > 0 ? size : 1);
    return cs_memory_wrap(allocator, nullptr, std::move(buffer), size, 0, size);
  } catch (const std::exception &e) {
    GST_WARNING_OBJECT(allocator, "allocation of %" G_GSIZE_FORMAT " bytes failed: %s", size, e.what());
    gstcs::set_gerror(error, e);
    return nullptr;
  }
}

static GstMemory *cs_allocator_alloc_vfunc(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
  gsize maxsize = size + (params ? params->prefix + params->padding : 0);
  GstMemory *mem = gst_cs_allocator_alloc(allocator, maxsize, nullptr);
  if (mem && params && params->prefix) gst_memory_resize(mem, params->prefix, size);
  else if (mem) gst_memory_resize(mem, 0, size);
  return mem;
}

static void cs_allocator_free(GstAllocator *, GstMemory *memory) {
  auto *mem = reinterpret_cast<GstCsMemory *>(memory);
  delete static_cast<BufferRef *>(mem->priv);
  g_free(mem);
}

static gpointer cs_mem_map_full(GstMemory *mem, GstMapInfo *info, gsize) {
  const bool read = info->flags & GST_MAP_READ;
  const bool write = info->flags & GST_MAP_WRITE;
  try {
    cs::MirroredBuffer &buffer = gstcs::mirrored(mem);
    // GstMemory adds mem->offset to what we return.
    if (info->flags & GST_MAP_CS_DEVICE) return buffer.map_device_blocking(write);
    return buffer.map_host(read, write);
  } catch (const std::exception &e) {
    GST_ERROR("cannot map CUDA memory %p: %s", mem, e.what());
    return nullptr;
  }
}

static void cs_mem_unmap_full(GstMemory *mem, GstMapInfo *info) {
  if (!(info->flags & GST_MAP_WRITE)) return;
  cs::MirroredBuffer &buffer = gstcs::mirrored(mem);
  if (info->flags & GST_MAP_CS_DEVICE)
    buffer.mark_device_written();
  else
    buffer.unmap_host(true);
}

static GstMemory *cs_mem_copy(GstMemory *mem, gssize offset, gssize size) {
  if (size < 0) size = gssize(mem->size) - offset;
  GstMemory *copy = gst_cs_allocator_alloc(mem->allocator, gsize(size), nullptr);
  if (!copy) return nullptr;
  try {
    cs::MirroredBuffer &src = gstcs::mirrored(mem);
    cs::MirroredBuffer &dst = gstcs::mirrored(copy);
    cs::DeviceGuard guard(src.device());
    cs::StreamHandle s = cs::DeviceResources::get(src.device()).mirror_stream();
    const auto *from = static_cast<const guint8 *>(src.begin_device_read(s)) + mem->offset + offset;
    void *to = dst.begin_device_write(s, true);
    cs::copy_async(to, from, gsize(size), s);
    src.end_device_read(s);
    dst.end_device_write(s);
    return copy;
  } catch (const std::exception &e) {
    GST_ERROR("cannot copy CUDA memory %p: %s", mem, e.what());
    gst_memory_unref(copy);
    return nullptr;
  }
}

static GstMemory *cs_mem_share(GstMemory *mem, gssize offset, gssize size) {
  GstMemory *parent = mem->parent ? mem->parent : mem;
  if (size < 0) size = gssize(mem->size) - offset;
  return cs_memory_wrap(mem->allocator, parent, gstcs::mirrored_shared(mem), mem->maxsize, mem->offset + offset,
                        gsize(size));
}

static gboolean cs_mem_is_span(GstMemory *, GstMemory *, gsize *) { return FALSE; }

static void gst_cs_allocator_class_init(GstCsAllocatorClass *klass) {
  GstAllocatorClass *alloc_class = GST_ALLOCATOR_CLASS(klass);
  alloc_class->alloc = cs_allocator_alloc_vfunc;
  alloc_class->free = cs_allocator_free;
}

static void gst_cs_allocator_init(GstCsAllocator *self) {
  GstAllocator *alloc = GST_ALLOCATOR_CAST(self);
  alloc->mem_type = GST_CS_MEMORY_TYPE;
  alloc->mem_map_full = cs_mem_map_full;
  alloc->mem_unmap_full = cs_mem_unmap_full;
  alloc->mem_copy = cs_mem_copy;
  alloc->mem_share = cs_mem_share;
  alloc->mem_is_span = cs_mem_is_span;
  GST_OBJECT_FLAG_SET(self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *gst_cs_allocator_get(gint device_id, GError **error) {
  static std::mutex mutex;
  static std::map<int, GstAllocator *> allocators;  // one per device, for the process
  try {
    cs::DeviceResources::get(device_id);  // validates the device
  } catch (const std::exception &e) {
    gstcs::set_gerror(error, e);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex);
  GstAllocator *&alloc = allocators[device_id];
  if (!alloc) {
    auto *self = static_cast<GstCsAllocator *>(g_object_new(GST_TYPE_CS_ALLOCATOR, nullptr));
    self->device_id = device_id;
    alloc = GST_ALLOCATOR_CAST(gst_object_ref_sink(self));
    GST_OBJECT_FLAG_SET(alloc, GST_OBJECT_FLAG_MAY_BE_LEAKED);
  }
  return GST_ALLOCATOR_CAST(gst_object_ref(alloc));
}

gboolean gst_is_cs_memory(GstMemory *mem) {
  return mem && mem->allocator && G_TYPE_CHECK_INSTANCE_TYPE(mem->allocator, GST_TYPE_CS_ALLOCATOR);
}

gint gst_cs_memory_get_device_id(GstMemory *mem) {
  g_return_val_if_fail(gst_is_cs_memory(mem), -1);
  return gstcs::mirrored(mem).device();
}

GstCsStreamHandle gst_cs_memory_get_stream(GstMemory *mem) {
  g_return_val_if_fail(gst_is_cs_memory(mem), nullptr);
  return gstcs::mirrored(mem).last_stream();
}

GstCsEventHandle gst_cs_memory_get_ready_event(GstMemory *mem) {
  g_return_val_if_fail(gst_is_cs_memory(mem), nullptr);
  return gstcs::mirrored(mem).ready_event();
}

gconstpointer gst_cs_memory_begin_read(GstMemory *mem, GstCsStreamHandle stream, GError **error) {
  g_return_val_if_fail(gst_is_cs_memory(mem), nullptr);
  try {
    return offset_ptr(const_cast<void *>(gstcs::mirrored(mem).begin_device_read(stream)), mem);
  } catch (const std::exception &e) {
    gstcs::set_gerror(error, e);
    return nullptr;
  }
}

gboolean gst_cs_memory_end_read(GstMemory *mem, GstCsStreamHandle stream, GError **error) {
  g_return_val_if_fail(gst_is_cs_memory(mem), FALSE);
  try {
    gstcs::mirrored(mem).end_device_read(stream);
    return TRUE;
  } catch (const std::exception &e) {
    gstcs::set_gerror(error, e);
    return FALSE;
  }
}

gpointer gst_cs_memory_begin_write(GstMemory *mem, GstCsStreamHandle stream, gboolean discard, GError **error) {
  g_return_val_if_fail(gst_is_cs_memory(mem), nullptr);
  try {
    return offset_ptr(gstcs::mirrored(mem).begin_device_write(stream, discard), mem);
  } catch (const std::exception &e) {
    gstcs::set_gerror(error, e);
    return nullptr;
  }
}

gboolean gst_cs_memory_end_write(GstMemory *mem, GstCsStreamHandle stream, GError **error) {
  g_return_val_if_fail(gst_is_cs_memory(mem), FALSE);
  try {
    gstcs::mirrored(mem).end_device_write(stream);
    return TRUE;
  } catch (const std::exception &e) {
    gstcs::set_gerror(error, e);
    return FALSE;
  }
}

/* ---------------- pinned host allocator ---------------- */

typedef struct {
  GstAllocator parent;
} GstCsPinnedAllocator;

typedef struct {
  GstAllocatorClass parent_class;
} GstCsPinnedAllocatorClass;

G_DEFINE_TYPE(GstCsPinnedAllocator, gst_cs_pinned_allocator, GST_TYPE_ALLOCATOR)

/* Pinned memory is plain mappable system memory whose pages come from the
 * process's page-locked block cache; only alloc/free differ from sysmem. */
typedef struct {
  GstMemory mem;
  cs::BlockCache::Block block;
} GstCsPinnedMemory;

static GstMemory *pinned_wrap(GstAllocator *allocator, GstMemory *parent, cs::BlockCache::Block block, gsize maxsize,
                              gsize offset, gsize size) {
  auto *mem = g_new0(GstCsPinnedMemory, 1);
  gst_memory_init(GST_MEMORY_CAST(mem), GstMemoryFlags(0), allocator, parent, maxsize, 63, offset, size);
  mem->block = block;
  return GST_MEMORY_CAST(mem);
}

static GstMemory *pinned_alloc_vfunc(GstAllocator *allocator, gsize size, GstAllocationParams *params) {
  const gsize prefix = params ? params->prefix : 0;
  const gsize maxsize = size + prefix + (params ? params->padding : 0);
  try {
    cs::BlockCache::Block block = cs::pinned_cache().acquire(maxsize > 0 ? maxsize : 1);
    return pinned_wrap(allocator, nullptr, block, maxsize, prefix, size);
  } catch (const std::exception &e) {
    GST_ERROR_OBJECT(allocator, "page-locked allocation of %" G_GSIZE_FORMAT " bytes failed: %s", maxsize, e.what());
    return nullptr;
  }
}

static void pinned_free_vfunc(GstAllocator *, GstMemory *memory) {
  auto *mem = reinterpret_cast<GstCsPinnedMemory *>(memory);
  if (!memory->parent) cs::pinned_cache().release(mem->block);
  g_free(mem);
}

static gpointer pinned_map(GstMemory *mem, gsize, GstMapFlags) {
  return reinterpret_cast<GstCsPinnedMemory *>(mem)->block.ptr;
}

static void pinned_unmap(GstMemory *) {}

static GstMemory *pinned_share(GstMemory *mem, gssize offset, gssize size) {
  GstMemory *parent = mem->parent ? mem->parent : mem;
  if (size < 0) size = gssize(mem->size) - offset;
  return pinned_wrap(mem->allocator, parent, reinterpret_cast<GstCsPinnedMemory *>(mem)->block, mem->maxsize,
                     mem->offset + offset, gsize(size));
}

static GstMemory *pinned_copy(GstMemory *mem, gssize offset, gssize size) {
  if (size < 0) size = gssize(mem->size) - offset;
  GstMemory *copy = pinned_alloc_vfunc(mem->allocator, gsize(size), nullptr);
  if (!copy) return nullptr;
  memcpy(reinterpret_cast<GstCsPinnedMemory *>(copy)->block.ptr,
         static_cast<guint8 *>(reinterpret_cast<GstCsPinnedMemory *>(mem)->block.ptr) + mem->offset + offset,
         gsize(size));
  return copy;
}

static gboolean pinned_is_span(GstMemory *mem1, GstMemory *mem2, gsize *offset) {
  if (!mem1->parent || mem1->parent != mem2->parent) return FALSE;
  if (mem1->offset + mem1->size != mem2->offset) return FALSE;
  if (offset) *offset = mem1->offset - mem1->parent->offset;
  return TRUE;
}

static void gst_cs_pinned_allocator_class_init(GstCsPinnedAllocatorClass *klass) {
  GstAllocatorClass *alloc_class = GST_ALLOCATOR_CLASS(klass);
  alloc_class->alloc = pinned_alloc_vfunc;
  alloc_class->free = pinned_free_vfunc;
}

static void gst_cs_pinned_allocator_init(GstCsPinnedAllocator *self) {
  GstAllocator *alloc = GST_ALLOCATOR_CAST(self);
  alloc->mem_type = GST_CS_PINNED_MEMORY_TYPE;
  alloc->mem_map = pinned_map;
  alloc->mem_unmap = pinned_unmap;
  alloc->mem_share = pinned_share;
  alloc->mem_copy = pinned_copy;
  alloc->mem_is_span = pinned_is_span;
  GST_OBJECT_FLAG_SET(self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *gst_cs_pinned_allocator_get(void) {
  if (cs::device_count() == 0) return nullptr;
  static GstAllocator *alloc = [] {
    auto *a = GST_ALLOCATOR_CAST(gst_object_ref_sink(g_object_new(GST_TYPE_CS_PINNED_ALLOCATOR, nullptr)));
    GST_OBJECT_FLAG_SET(a, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    return a;
  }();
  return GST_ALLOCATOR_CAST(gst_object_ref(alloc));
}

gboolean gst_is_cs_pinned_memory(GstMemory *mem) {
  return mem && mem->allocator && G_TYPE_CHECK_INSTANCE_TYPE(mem->allocator, GST_TYPE_CS_PINNED_ALLOCATOR);
}

/* ---------------- caps helpers ---------------- */

GstCaps *gst_cs_caps_with_feature(const GstCaps *caps, const gchar *feature) {
  GstCaps *out = gst_caps_new_empty();
  const guint n = gst_caps_get_size(caps);
  for (guint i = 0; i < n; ++i) {
    GstStructure *s = gst_structure_copy(gst_caps_get_structure(caps, i));
    gst_caps_append_structure_full(out, s, gst_caps_features_new(feature, nullptr));
  }
  return gst_caps_simplify(out);
}

GstCaps *gst_cs_caps_any_memory(const GstCaps *caps) {
  if (gst_caps_is_any(caps)) return gst_caps_new_any();
  GstCaps *device = gst_cs_caps_with_feature(caps, GST_CAPS_FEATURE_MEMORY_CS_DEVICE);
  return gst_caps_merge(device, gst_cs_caps_with_feature(caps, GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY));
}

gboolean gst_cs_caps_has_device_feature(const GstCaps *caps) {
  const guint n = gst_caps_get_size(caps);
  for (guint i = 0; i < n; ++i) {
    GstCapsFeatures *f = gst_caps_get_features(caps, i);
    if (f && !gst_caps_features_is_any(f) && gst_caps_features_contains(f, GST_CAPS_FEATURE_MEMORY_CS_DEVICE))
      return TRUE;
  }
  return FALSE;
}
