#include <gst/cudasensing/gstcsdevice.h>

#include <map>
#include <mutex>
#include <string>

#include "common/device_resources.h"
#include "gstcs-cxx.h"

GST_DEBUG_CATEGORY_STATIC(gst_cs_device_debug);
#define GST_CAT_DEFAULT gst_cs_device_debug

struct _GstCsDevice {
  GstObject parent;
  gint device_id;
};

G_DEFINE_TYPE(GstCsDevice, gst_cs_device, GST_TYPE_OBJECT)

enum { PROP_0, PROP_DEVICE_ID, PROP_NAME };

static void gst_cs_device_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
  auto *self = GST_CS_DEVICE(object);
  switch (prop_id) {
    case PROP_DEVICE_ID:
      g_value_set_int(value, self->device_id);
      break;
    case PROP_NAME:
      try {
        g_value_set_string(value, cs::device_name(self->device_id).c_str());
      } catch (const std::exception &) {
        g_value_set_string(value, "unknown");
      }
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void gst_cs_device_class_init(GstCsDeviceClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  gobject_class->get_property = gst_cs_device_get_property;
  g_object_class_install_property(
      gobject_class, PROP_DEVICE_ID,
      g_param_spec_int("device-id", "Device ID", "CUDA device ordinal", 0, G_MAXINT, 0,
                       GParamFlags(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(gobject_class, PROP_NAME,
                                  g_param_spec_string("name-of-device", "Device name", "CUDA device name",
                                                      nullptr, GParamFlags(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  GST_DEBUG_CATEGORY_INIT(gst_cs_device_debug, "csdevice", 0, "gst-cuda-sensing device context");
}

static void gst_cs_device_init(GstCsDevice *self) { self->device_id = 0; }

gint gst_cs_device_count(void) { return cs::device_count(); }

const gchar *gst_cs_no_device_reason(void) {
  static const std::string reason = cs::no_device_reason();
  return reason.c_str();
}

GstCsDevice *gst_cs_device_get(gint device_id, GError **error) {
  if (device_id < 0) device_id = 0;
  try {
    cs::DeviceResources::get(device_id);  // validates the ordinal, creates the caches
  } catch (const std::exception &e) {
    gstcs::set_gerror(error, e);
    return nullptr;
  }
  static std::mutex mutex;
  static std::map<int, GstCsDevice *> devices;
  std::lock_guard<std::mutex> lock(mutex);
  GstCsDevice *&dev = devices[device_id];
  if (!dev) {
    dev = GST_CS_DEVICE(gst_object_ref_sink(g_object_new(GST_TYPE_CS_DEVICE, nullptr)));
    dev->device_id = device_id;
    GST_OBJECT_FLAG_SET(dev, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    GST_INFO_OBJECT(dev, "CUDA device %d: %s", device_id, cs::device_name(device_id).c_str());
  }
  return GST_CS_DEVICE(gst_object_ref(dev));
}

gint gst_cs_device_get_id(GstCsDevice *device) {
  g_return_val_if_fail(GST_IS_CS_DEVICE(device), -1);
  return device->device_id;
}

static GstContext *make_context(GstCsDevice *device) {
  GstContext *context = gst_context_new(GST_CS_DEVICE_CONTEXT_TYPE, TRUE);
  GstStructure *s = gst_context_writable_structure(context);
  gst_structure_set(s, "device", GST_TYPE_CS_DEVICE, device, "device-id", G_TYPE_INT, device->device_id, nullptr);
  return context;
}

gboolean gst_cs_handle_set_context(GstElement *element, GstContext *context, gint device_id, GstCsDevice **device) {
  g_return_val_if_fail(device != nullptr, FALSE);
  if (!context || g_strcmp0(gst_context_get_context_type(context), GST_CS_DEVICE_CONTEXT_TYPE) != 0) return FALSE;
  GstCsDevice *other = nullptr;
  const GstStructure *s = gst_context_get_structure(context);
  if (!gst_structure_get(s, "device", GST_TYPE_CS_DEVICE, &other, nullptr) || !other) return FALSE;
  if (device_id >= 0 && other->device_id != device_id) {
    GST_DEBUG_OBJECT(element, "ignoring context for device %d, want %d", other->device_id, device_id);
    gst_object_unref(other);
    return FALSE;
  }
  if (*device) gst_object_unref(*device);
  *device = other;
  return TRUE;
}

gboolean gst_cs_handle_context_query(GstElement *element, GstQuery *query, GstCsDevice *device) {
  if (GST_QUERY_TYPE(query) != GST_QUERY_CONTEXT || !device) return FALSE;
  const gchar *type = nullptr;
  if (!gst_query_parse_context_type(query, &type) || g_strcmp0(type, GST_CS_DEVICE_CONTEXT_TYPE) != 0) return FALSE;
  GstContext *context = make_context(device);
  gst_query_set_context(query, context);
  gst_context_unref(context);
  GST_DEBUG_OBJECT(element, "answered context query with device %d", device->device_id);
  return TRUE;
}

static gboolean query_pads(GstElement *element, GstQuery *query, gboolean src_pads) {
  GstIterator *it = src_pads ? gst_element_iterate_src_pads(element) : gst_element_iterate_sink_pads(element);
  GValue item = G_VALUE_INIT;
  gboolean found = FALSE;
  while (!found && gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    GstPad *pad = GST_PAD(g_value_get_object(&item));
    found = gst_pad_peer_query(pad, query);
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
  return found;
}

gboolean gst_cs_ensure_device(GstElement *element, gint device_id, GstCsDevice **device) {
  g_return_val_if_fail(device != nullptr, FALSE);
  if (*device) return TRUE;

  // 1. neighbours (downstream first, then upstream)
  GstQuery *query = gst_query_new_context(GST_CS_DEVICE_CONTEXT_TYPE);
  if (query_pads(element, query, TRUE) || query_pads(element, query, FALSE)) {
    GstContext *ctx = nullptr;
    gst_query_parse_context(query, &ctx);
    if (ctx) gst_cs_handle_set_context(element, ctx, device_id, device);
  }
  gst_query_unref(query);
  if (*device) return TRUE;

  // 2. the application or a bin (answers by calling set_context on us)
  gst_element_post_message(element, gst_message_new_need_context(GST_OBJECT(element), GST_CS_DEVICE_CONTEXT_TYPE));
  if (*device) return TRUE;

  // 3. create it and tell everyone
  GError *error = nullptr;
  *device = gst_cs_device_get(device_id, &error);
  if (!*device) {
    GST_ELEMENT_ERROR(element, RESOURCE, NOT_FOUND,
                      ("Cannot open CUDA device %d: %s", device_id, error ? error->message : "unknown error"),
                      (nullptr));
    g_clear_error(&error);
    return FALSE;
  }
  GstContext *context = make_context(*device);
  gst_element_set_context(element, context);
  gst_element_post_message(element, gst_message_new_have_context(GST_OBJECT(element), context));
  return TRUE;
}
