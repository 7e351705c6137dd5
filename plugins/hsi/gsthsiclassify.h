#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS

typedef enum {
  GST_HSI_METHOD_SAM = 0,
  GST_HSI_METHOD_SID = 1,
  GST_HSI_METHOD_CORRELATION = 2,
  GST_HSI_METHOD_BANDFIT = 3,
  GST_HSI_METHOD_EUCLIDEAN = 4,
} GstHsiMethod;

typedef enum {
  GST_HSI_PRECISION_EXACT = 0,
  GST_HSI_PRECISION_FAST = 1,
  GST_HSI_PRECISION_TENSOR = 2,
} GstHsiPrecision;

typedef enum {
  GST_HSI_RESAMPLE_AUTO = 0,
  GST_HSI_RESAMPLE_LINEAR = 1,
  GST_HSI_RESAMPLE_GAUSSIAN = 2,
} GstHsiResample;

typedef enum {
  GST_HSI_OUTPUT_CLASS_MAP = 0,
  GST_HSI_OUTPUT_RULE_IMAGES = 1,
} GstHsiOutput;

#define GST_TYPE_HSI_CLASSIFY (gst_hsi_classify_get_type())
G_DECLARE_FINAL_TYPE(GstHsiClassify, gst_hsi_classify, GST, HSI_CLASSIFY, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(hsiclassify);

G_END_DECLS
