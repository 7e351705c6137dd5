#include <gst/cudasensing/gstcsbasetransform.h>

#include "common/cuda_runtime.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_cs_base_transform_debug);
#define GST_CAT_DEFAULT gst_cs_base_transform_debug

GType gst_cs_backend_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CS_BACKEND_AUTO, "CUDA when a device is present, else CPU", "auto"},
      {GST_CS_BACKEND_CUDA, "CUDA (fails at start without a device)", "cuda"},
      {GST_CS_BACKEND_CPU, "CPU", "cpu"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("GstCsBackend", values));
  return type;
}

typedef struct {
  GstCsBackend backend;
  gint device_id;
  gboolean started;
  gboolean use_cuda;
  GstCsDevice *device;
} GstCsBaseTransformPrivate;

G_DEFINE_TYPE_WITH_PRIVATE(GstCsBaseTransform, gst_cs_base_transform, GST_TYPE_BASE_TRANSFORM)

enum { PROP_0, PROP_BACKEND, PROP_DEVICE_ID };

#define PRIV(self) \
  static_cast<GstCsBaseTransformPrivate *>(gst_cs_base_transform_get_instance_private(GST_CS_BASE_TRANSFORM(self)))

static void set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
  if (!gstcs::property_change_allowed(object, pspec)) return;
  auto *priv = PRIV(object);
  GST_OBJECT_LOCK(object);
  switch (prop_id) {
    case PROP_BACKEND:
      priv->backend = GstCsBackend(g_value_get_enum(value));
      break;
    case PROP_DEVICE_ID:
      priv->device_id = g_value_get_int(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(object);
}

static void get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *priv = PRIV(object);
  GST_OBJECT_LOCK(object);
  switch (prop_id) {
    case PROP_BACKEND:
      g_value_set_enum(value, priv->backend);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int(value, priv->device_id);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK(object);
}

gboolean gst_cs_base_transform_use_cuda(GstCsBaseTransform *self) {
  auto *priv = PRIV(self);
  if (priv->started) return priv->use_cuda;
  switch (priv->backend) {
    case GST_CS_BACKEND_CPU:
      return FALSE;
    case GST_CS_BACKEND_CUDA:
      return TRUE;
    default:
      return cs::device_count() > 0;
  }
}

GstCsDevice *gst_cs_base_transform_get_device(GstCsBaseTransform *self) { return PRIV(self)->device; }

gint gst_cs_base_transform_get_device_id(GstCsBaseTransform *self) {
  auto *priv = PRIV(self);
  return priv->device ? gst_cs_device_get_id(priv->device) : priv->device_id;
}

static gboolean base_start(GstBaseTransform *trans) {
  auto *self = GST_CS_BASE_TRANSFORM(trans);
  auto *priv = PRIV(self);
  auto *klass = GST_CS_BASE_TRANSFORM_GET_CLASS(self);
  const int devices = cs::device_count();
  if (priv->backend == GST_CS_BACKEND_CUDA && devices == 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND,
                      ("backend=cuda was asked for, but no CUDA device is available (%s)",
                       cs::no_device_reason().c_str()),
                      ("Use backend=auto or backend=cpu to run on the CPU."));
    return FALSE;
  }
  priv->use_cuda = priv->backend == GST_CS_BACKEND_CUDA || (priv->backend == GST_CS_BACKEND_AUTO && devices > 0);
  if (priv->use_cuda && priv->device_id >= devices) {
    GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND,
                      ("device-id=%d was asked for, but only %d CUDA device(s) are present", priv->device_id,
                       devices),
                      (nullptr));
    return FALSE;
  }
  if (priv->use_cuda && !gst_cs_ensure_device(GST_ELEMENT(self), priv->device_id, &priv->device)) return FALSE;
  priv->started = TRUE;
  GST_INFO_OBJECT(self, "backend: %s", priv->use_cuda ? "cuda" : "cpu");
  if (klass->start_backend && !klass->start_backend(self)) {
    // The base class calls stop only after a start that succeeded: what a
    // failed start made (a subclass's state) is released here, or the next
    // start would replace it without freeing it.
    if (klass->stop_backend) klass->stop_backend(self);
    priv->started = FALSE;
    return FALSE;
  }
  return TRUE;
}

static gboolean base_stop(GstBaseTransform *trans) {
  auto *self = GST_CS_BASE_TRANSFORM(trans);
  auto *klass = GST_CS_BASE_TRANSFORM_GET_CLASS(self);
  gboolean ok = klass->stop_backend ? klass->stop_backend(self) : TRUE;
  PRIV(self)->started = FALSE;
  return ok;
}

static void base_set_context(GstElement *element, GstContext *context) {
  auto *priv = PRIV(element);
  gst_cs_handle_set_context(element, context, priv->device_id, &priv->device);
  GST_ELEMENT_CLASS(gst_cs_base_transform_parent_class)->set_context(element, context);
}

static gboolean base_query(GstBaseTransform *trans, GstPadDirection direction, GstQuery *query) {
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT &&
      gst_cs_handle_context_query(GST_ELEMENT(trans), query, PRIV(trans)->device))
    return TRUE;
  return GST_BASE_TRANSFORM_CLASS(gst_cs_base_transform_parent_class)->query(trans, direction, query);
}

static void base_finalize(GObject *object) {
  auto *priv = PRIV(object);
  if (priv->device) gst_object_unref(priv->device);
  G_OBJECT_CLASS(gst_cs_base_transform_parent_class)->finalize(object);
}

static void gst_cs_base_transform_class_init(GstCsBaseTransformClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = set_property;
  gobject_class->get_property = get_property;
  gobject_class->finalize = base_finalize;
  element_class->set_context = base_set_context;
  trans_class->start = base_start;
  trans_class->stop = base_stop;
  trans_class->query = base_query;

  g_object_class_install_property(
      gobject_class, PROP_BACKEND,
      g_param_spec_enum("backend", "Backend",
                        "Where the work runs: auto (CUDA when a device is present, else CPU), cuda, or cpu",
                        GST_TYPE_CS_BACKEND, GST_CS_BACKEND_AUTO,
                        GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      gobject_class, PROP_DEVICE_ID,
      g_param_spec_int("device-id", "Device ID", "CUDA device ordinal to use (-1 = any)", -1, G_MAXINT, -1,
                       GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  gst_type_mark_as_plugin_api(GST_TYPE_CS_BACKEND, GstPluginAPIFlags(0));
  gst_type_mark_as_plugin_api(GST_TYPE_CS_BASE_TRANSFORM, GstPluginAPIFlags(0));
  GST_DEBUG_CATEGORY_INIT(gst_cs_base_transform_debug, "csbasetransform", 0, "gst-cuda-sensing base transform");
}

static void gst_cs_base_transform_init(GstCsBaseTransform *self) {
  auto *priv = PRIV(self);
  priv->backend = GST_CS_BACKEND_AUTO;
  priv->device_id = -1;
}
