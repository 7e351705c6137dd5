/* One CUDA device, shared by the elements of a pipeline through GstContext
 * (context type GST_CS_DEVICE_CONTEXT_TYPE). Elements find it with
 * gst_cs_ensure_device(): from their own earlier context, from a peer (context
 * query), from the application (need-context message), or by creating it and
 * announcing it (have-context message). */
#pragma once

#include <gst/cudasensing/gstcsapi.h>

G_BEGIN_DECLS

#define GST_CS_DEVICE_CONTEXT_TYPE "gst.cuda-sensing.device"

#define GST_TYPE_CS_DEVICE (gst_cs_device_get_type ())
G_DECLARE_FINAL_TYPE (GstCsDevice, gst_cs_device, GST, CS_DEVICE, GstObject)

/* The shared object for @device_id (-1 = the first device). NULL with @error
 * set when there is no such device. */
GST_CS_API GstCsDevice *gst_cs_device_get (gint device_id, GError ** error);
GST_CS_API gint gst_cs_device_get_id (GstCsDevice * device);
/* Number of CUDA devices (0 without a driver or in a CPU-only build). */
GST_CS_API gint gst_cs_device_count (void);
GST_CS_API const gchar *gst_cs_no_device_reason (void);

/* Context plumbing for elements: call from set_context, the context query
 * handler and before first use. @device_id is the element's property (-1 =
 * any); a context for another device is ignored. */
GST_CS_API gboolean gst_cs_handle_set_context (GstElement * element, GstContext * context, gint device_id,
    GstCsDevice ** device);
GST_CS_API gboolean gst_cs_handle_context_query (GstElement * element, GstQuery * query, GstCsDevice * device);
GST_CS_API gboolean gst_cs_ensure_device (GstElement * element, gint device_id, GstCsDevice ** device);

G_END_DECLS
