/* Device memory of gst-cuda-sensing: a linear CUDA allocation that carries the
 * stream of its last writer and a CUDA event for "contents ready".
 *
 * Consumers that run on their own stream call gst_cs_memory_begin_read(), which
 * makes that stream wait on the event (no host synchronisation), and
 * gst_cs_memory_end_read() once their reads are enqueued. Producers bracket
 * their writes with gst_cs_memory_begin_write()/gst_cs_memory_end_write().
 *
 * gst_memory_map() without GST_MAP_CS_DEVICE gives a host copy: a read
 * mapping downloads the contents through page-locked staging, a write mapping
 * marks the host copy newer and the next device use uploads it. So stock
 * elements (filesink, appsink) work after a GPU element. With
 * GST_MAP_CS_DEVICE the map returns the device pointer after waiting on the
 * host for pending work; code that writes through it must have finished its
 * device work before unmapping.
 */
#pragma once

#include <gst/cudasensing/gstcsapi.h>

G_BEGIN_DECLS

/* Caps feature of buffers whose memory is GstCsMemory. */
#define GST_CAPS_FEATURE_MEMORY_CS_DEVICE "memory:CudaSensing"
#define GST_CS_MEMORY_TYPE "CudaSensingMemory"
#define GST_CS_PINNED_MEMORY_TYPE "CudaSensingPinnedMemory"
/* Map flag: map the device pointer instead of a host copy. */
#define GST_MAP_CS_DEVICE ((GstMapFlags) (GST_MAP_FLAG_LAST << 1))

typedef struct _GstCsMemory GstCsMemory;

struct _GstCsMemory {
  GstMemory mem;
  /*< private >*/
  gpointer priv;
  gpointer _gst_reserved[GST_PADDING];
};

#define GST_TYPE_CS_ALLOCATOR (gst_cs_allocator_get_type ())
GST_CS_API GType gst_cs_allocator_get_type (void);

/* The allocator of device memory on CUDA device @device_id (a new reference).
 * NULL with @error set when the device does not exist. */
GST_CS_API GstAllocator *gst_cs_allocator_get (gint device_id, GError ** error);
/* Allocates @size bytes; on failure NULL with @error saying why (out of device
 * memory says how much was asked and how much is free). */
GST_CS_API GstMemory *gst_cs_allocator_alloc (GstAllocator * allocator, gsize size, GError ** error);

GST_CS_API gboolean gst_is_cs_memory (GstMemory * mem);
GST_CS_API gint gst_cs_memory_get_device_id (GstMemory * mem);
/* Stream of the last device writer (NULL before any device write). */
GST_CS_API GstCsStreamHandle gst_cs_memory_get_stream (GstMemory * mem);
/* Event recorded when the last device write completes. */
GST_CS_API GstCsEventHandle gst_cs_memory_get_ready_event (GstMemory * mem);

/* Stream-ordered access; the pointers include the memory's offset. */
GST_CS_API gconstpointer gst_cs_memory_begin_read (GstMemory * mem, GstCsStreamHandle stream, GError ** error);
GST_CS_API gboolean gst_cs_memory_end_read (GstMemory * mem, GstCsStreamHandle stream, GError ** error);
/* @discard: the whole memory will be overwritten, old contents not needed. */
GST_CS_API gpointer gst_cs_memory_begin_write (GstMemory * mem, GstCsStreamHandle stream, gboolean discard,
    GError ** error);
GST_CS_API gboolean gst_cs_memory_end_write (GstMemory * mem, GstCsStreamHandle stream, GError ** error);

/* Page-locked host memory (system memory that DMA reads and writes directly).
 * Mapped like system memory. Offered upstream by gpuupload so that sources
 * write straight into DMA-able buffers. */
#define GST_TYPE_CS_PINNED_ALLOCATOR (gst_cs_pinned_allocator_get_type ())
GST_CS_API GType gst_cs_pinned_allocator_get_type (void);
/* A new reference to the process's pinned allocator, NULL without a device. */
GST_CS_API GstAllocator *gst_cs_pinned_allocator_get (void);
GST_CS_API gboolean gst_is_cs_pinned_memory (GstMemory * mem);

/* Caps helpers: a copy of @caps whose structures all carry only @feature. */
GST_CS_API GstCaps *gst_cs_caps_with_feature (const GstCaps * caps, const gchar * feature);
/* @caps in device memory (preferred, first) and in system memory: what a
 * processing element accepts and produces. */
GST_CS_API GstCaps *gst_cs_caps_any_memory (const GstCaps * caps);
GST_CS_API gboolean gst_cs_caps_has_device_feature (const GstCaps * caps);

G_END_DECLS
