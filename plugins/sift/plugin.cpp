#include "gstfeaturesink.h"
#include "gstsift.h"
#include "gstsiftmatch.h"
#include "gstsiftoverlay.h"
#include "gstsiftstages.h"

static gboolean plugin_init(GstPlugin *plugin) {
  gboolean ok = FALSE;
  ok |= GST_ELEMENT_REGISTER(sift, plugin);
  ok |= GST_ELEMENT_REGISTER(siftpyramid, plugin);
  ok |= GST_ELEMENT_REGISTER(siftdetect, plugin);
  ok |= GST_ELEMENT_REGISTER(siftdescribe, plugin);
  ok |= GST_ELEMENT_REGISTER(siftoverlay, plugin);
  ok |= GST_ELEMENT_REGISTER(siftmatch, plugin);
  ok |= GST_ELEMENT_REGISTER(featuresink, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, cudasensingsift,
                  "SIFT features of video frames (OpenCV-compatible keypoints and descriptors; CUDA or OpenCV), its CUDA "
                  "stages, keypoint overlay, "
                  "matching with homography, and features files (gst-cuda-sensing)",
                  plugin_init, "0.1.0", "LGPL", "gst-cuda-sensing", "https://github.com/gst-cuda-sensing/gst-cuda-sensing")
