#include "gstenvisink.h"
#include "gstenvisrc.h"
#include "gsthsicolorize.h"
#include "gsthsiclassify.h"
#include "gsthsiwaterfall.h"

static gboolean plugin_init(GstPlugin *plugin) {
  gboolean ok = FALSE;
  ok |= GST_ELEMENT_REGISTER(envisrc, plugin);
  ok |= GST_ELEMENT_REGISTER(hsiclassify, plugin);
  ok |= GST_ELEMENT_REGISTER(hsicolorize, plugin);
  ok |= GST_ELEMENT_REGISTER(envisink, plugin);
  ok |= GST_ELEMENT_REGISTER(hsiwaterfall, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, cudasensinghsi,
                  "Hyperspectral imaging: ENVI images as line streams, per-pixel classification against spectral "
                  "libraries, class maps as colours, scrolling line-stream frames and ENVI classification files (gst-cuda-sensing)",
                  plugin_init, "0.1.0", "LGPL", "gst-cuda-sensing", "https://github.com/gst-cuda-sensing/gst-cuda-sensing")
