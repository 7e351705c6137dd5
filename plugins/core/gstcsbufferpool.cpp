#include <gst/cudasensing/gstcsbufferpool.h>

GST_DEBUG_CATEGORY_STATIC(gst_cs_buffer_pool_debug);
#define GST_CAT_DEFAULT gst_cs_buffer_pool_debug

struct _GstCsBufferPool {
  GstBufferPool parent;
  gint device_id;
  GstAllocator *allocator;
  gsize size;
  gchar *last_error;
};

G_DEFINE_TYPE(GstCsBufferPool, gst_cs_buffer_pool, GST_TYPE_BUFFER_POOL)

static gboolean pool_set_config(GstBufferPool *pool, GstStructure *config) {
  auto *self = GST_CS_BUFFER_POOL(pool);
  GstCaps *caps = nullptr;
  guint size = 0, min = 0, max = 0;
  if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min, &max)) return FALSE;
  if (size == 0) {
    GST_WARNING_OBJECT(pool, "a buffer size is needed");
    return FALSE;
  }
  self->size = size;
  GstAllocator *allocator = nullptr;
  gst_buffer_pool_config_get_allocator(config, &allocator, nullptr);
  if (allocator && !G_TYPE_CHECK_INSTANCE_TYPE(allocator, GST_TYPE_CS_ALLOCATOR)) {
    GST_WARNING_OBJECT(pool, "allocator %" GST_PTR_FORMAT " is not a CUDA device allocator", allocator);
    return FALSE;
  }
  // Our own allocator is always used (it was set at creation).
  gst_buffer_pool_config_set_allocator(config, self->allocator, nullptr);
  return GST_BUFFER_POOL_CLASS(gst_cs_buffer_pool_parent_class)->set_config(pool, config);
}

static GstFlowReturn pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer, GstBufferPoolAcquireParams *) {
  auto *self = GST_CS_BUFFER_POOL(pool);
  GError *error = nullptr;
  GstMemory *mem = gst_cs_allocator_alloc(self->allocator, self->size, &error);
  if (!mem) {
    GST_OBJECT_LOCK(self);
    g_free(self->last_error);
    self->last_error = g_strdup(error ? error->message : "allocation failed");
    GST_OBJECT_UNLOCK(self);
    GST_ERROR_OBJECT(pool, "%s", error ? error->message : "allocation failed");
    g_clear_error(&error);
    return GST_FLOW_ERROR;
  }
  *buffer = gst_buffer_new();
  gst_buffer_append_memory(*buffer, mem);
  return GST_FLOW_OK;
}

static void pool_finalize(GObject *object) {
  auto *self = GST_CS_BUFFER_POOL(object);
  gst_clear_object(&self->allocator);
  g_free(self->last_error);
  G_OBJECT_CLASS(gst_cs_buffer_pool_parent_class)->finalize(object);
}

static void gst_cs_buffer_pool_class_init(GstCsBufferPoolClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = pool_finalize;
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = pool_set_config;
  pool_class->alloc_buffer = pool_alloc_buffer;
  GST_DEBUG_CATEGORY_INIT(gst_cs_buffer_pool_debug, "csbufferpool", 0, "gst-cuda-sensing device buffer pool");
}

static void gst_cs_buffer_pool_init(GstCsBufferPool *) {}

GstBufferPool *gst_cs_buffer_pool_new(gint device_id) {
  GstAllocator *allocator = gst_cs_allocator_get(device_id, nullptr);
  if (!allocator) return nullptr;
  auto *self = GST_CS_BUFFER_POOL(g_object_new(GST_TYPE_CS_BUFFER_POOL, nullptr));
  gst_object_ref_sink(self);
  self->device_id = device_id;
  self->allocator = allocator;
  return GST_BUFFER_POOL_CAST(self);
}

gchar *gst_cs_buffer_pool_get_last_error(GstCsBufferPool *pool) {
  GST_OBJECT_LOCK(pool);
  gchar *msg = g_strdup(pool->last_error);
  GST_OBJECT_UNLOCK(pool);
  return msg;
}
