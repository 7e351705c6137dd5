#include "gstcphdsink.h"
#include "gstcphdsrc.h"
#include "gstsarbackproject.h"
#include "gstsarimage.h"
#include "gstsarpulsecompress.h"
#include "gstsarsim.h"

static gboolean plugin_init(GstPlugin *plugin) {
  gboolean ok = FALSE;
  ok |= GST_ELEMENT_REGISTER(sarsim, plugin);
  ok |= GST_ELEMENT_REGISTER(cphdsrc, plugin);
  ok |= GST_ELEMENT_REGISTER(cphdsink, plugin);
  ok |= GST_ELEMENT_REGISTER(sarpulsecompress, plugin);
  ok |= GST_ELEMENT_REGISTER(sarbackproject, plugin);
  ok |= GST_ELEMENT_REGISTER(sarimage, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, cudasensingsar,
                  "SAR: simulation, CPHD reading and writing, pulse compression, backprojection, image display (gst-cuda-sensing)",
                  plugin_init, "0.1.0", "LGPL", "gst-cuda-sensing", "https://github.com/gst-cuda-sensing/gst-cuda-sensing")
