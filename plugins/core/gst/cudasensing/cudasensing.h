/* gst-cuda-sensing core library: device memory, pools, device context and the
 * base class shared by the project's elements. */
#pragma once

#include <gst/cudasensing/gstcsapi.h>
#include <gst/cudasensing/gstcsmemory.h>
#include <gst/cudasensing/gstcsbufferpool.h>
#include <gst/cudasensing/gstcsdevice.h>
#include <gst/cudasensing/gstcsbasetransform.h>
