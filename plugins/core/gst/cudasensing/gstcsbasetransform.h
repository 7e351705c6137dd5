/* Base class of the project's transform elements: the `backend` and
 * `device-id` properties, the choice of backend at start (auto = CUDA when a
 * device is present, else CPU; forcing cuda without a device is an error at
 * the state change), and the device context. Subclasses implement
 * start_backend/stop_backend and read use_cuda and device. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/cudasensing/gstcsdevice.h>

G_BEGIN_DECLS

typedef enum {
  GST_CS_BACKEND_AUTO = 0,
  GST_CS_BACKEND_CUDA = 1,
  GST_CS_BACKEND_CPU = 2,
} GstCsBackend;

#define GST_TYPE_CS_BACKEND (gst_cs_backend_get_type ())
GST_CS_API GType gst_cs_backend_get_type (void);

#define GST_TYPE_CS_BASE_TRANSFORM (gst_cs_base_transform_get_type ())
G_DECLARE_DERIVABLE_TYPE (GstCsBaseTransform, gst_cs_base_transform, GST, CS_BASE_TRANSFORM, GstBaseTransform)

struct _GstCsBaseTransformClass {
  GstBaseTransformClass parent_class;
  /* Called from start() once the backend is chosen (and the device found).
   * stop_backend also follows a start_backend that failed, so it must accept
   * whatever part of the start was done. */
  gboolean (*start_backend) (GstCsBaseTransform * self);
  gboolean (*stop_backend) (GstCsBaseTransform * self);
  gpointer _gst_reserved[GST_PADDING];
};

/* Whether this element runs on CUDA. Before start it tells what start would
 * choose, from the properties and the devices present. */
GST_CS_API gboolean gst_cs_base_transform_use_cuda (GstCsBaseTransform * self);
/* The device (borrowed), NULL on the CPU backend or before start. */
GST_CS_API GstCsDevice *gst_cs_base_transform_get_device (GstCsBaseTransform * self);
GST_CS_API gint gst_cs_base_transform_get_device_id (GstCsBaseTransform * self);

G_END_DECLS
