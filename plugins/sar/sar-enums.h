// GEnum types of the SAR elements' properties.
#pragma once
#include <glib-object.h>

G_BEGIN_DECLS
typedef enum { GST_SAR_DOMAIN_TIME = 0, GST_SAR_DOMAIN_FREQUENCY = 1 } GstSarDomain;
typedef enum { GST_SAR_SAMPLE_FORMAT_CF32 = 0, GST_SAR_SAMPLE_FORMAT_CI16 = 1 } GstSarSampleFormat;
typedef enum { GST_SAR_COLLECTION_SPOTLIGHT = 0, GST_SAR_COLLECTION_STRIPMAP = 1 } GstSarCollection;
typedef enum {
  GST_SAR_WINDOW_NONE = 0,
  GST_SAR_WINDOW_HAMMING = 1,
  GST_SAR_WINDOW_HANN = 2,
  GST_SAR_WINDOW_TAYLOR = 3,
  GST_SAR_WINDOW_KAISER = 4,
} GstSarWindow;

GType gst_sar_domain_get_type(void);
GType gst_sar_sample_format_get_type(void);
GType gst_sar_collection_get_type(void);
GType gst_sar_window_get_type(void);
#define GST_TYPE_SAR_DOMAIN (gst_sar_domain_get_type())
#define GST_TYPE_SAR_SAMPLE_FORMAT (gst_sar_sample_format_get_type())
#define GST_TYPE_SAR_COLLECTION (gst_sar_collection_get_type())
#define GST_TYPE_SAR_WINDOW (gst_sar_window_get_type())
G_END_DECLS
