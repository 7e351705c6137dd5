#include "gstgpudownload.h"
#include "gstgpuupload.h"

static gboolean plugin_init(GstPlugin *plugin) {
  gboolean ok = FALSE;
  ok |= GST_ELEMENT_REGISTER(gpuupload, plugin);
  ok |= GST_ELEMENT_REGISTER(gpudownload, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, cudasensingtransfer,
                  "Transfers between system memory and CUDA device memory (gst-cuda-sensing)", plugin_init,
                  "0.1.0", "LGPL", "gst-cuda-sensing", "https://github.com/gst-cuda-sensing/gst-cuda-sensing")
