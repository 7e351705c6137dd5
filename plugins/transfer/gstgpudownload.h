#pragma once
#include <gst/cudasensing/gstcsbasetransform.h>

G_BEGIN_DECLS
#define GST_TYPE_GPU_DOWNLOAD (gst_gpu_download_get_type())
G_DECLARE_FINAL_TYPE(GstGpuDownload, gst_gpu_download, GST, GPU_DOWNLOAD, GstCsBaseTransform)
GST_ELEMENT_REGISTER_DECLARE(gpudownload);
G_END_DECLS
