/* A pool of buffers of GstCsMemory (one linear device allocation each). The
 * pool's allocator must be a device allocator (gst_cs_allocator_get); the
 * last allocation error is kept so that elements can report it. */
#pragma once

#include <gst/cudasensing/gstcsmemory.h>

G_BEGIN_DECLS

#define GST_TYPE_CS_BUFFER_POOL (gst_cs_buffer_pool_get_type ())
G_DECLARE_FINAL_TYPE (GstCsBufferPool, gst_cs_buffer_pool, GST, CS_BUFFER_POOL, GstBufferPool)

/* A new pool for device @device_id. Configure it as any GstBufferPool
 * (caps, size, min and max buffers); the allocator is set already. */
GST_CS_API GstBufferPool *gst_cs_buffer_pool_new (gint device_id);
/* Message of the last failed allocation, or NULL (transfer full). */
GST_CS_API gchar *gst_cs_buffer_pool_get_last_error (GstCsBufferPool * pool);

G_END_DECLS
