#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_GPU_UPLOAD (gst_gpu_upload_get_type())
G_DECLARE_FINAL_TYPE(GstGpuUpload, gst_gpu_upload, GST, GPU_UPLOAD, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(gpuupload);
G_END_DECLS
