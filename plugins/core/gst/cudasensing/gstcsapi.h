#pragma once
#include <gst/gst.h>

#ifndef GST_CS_API
#define GST_CS_API __attribute__((visibility("default"))) extern
#endif

G_BEGIN_DECLS

/* cudaStream_t and cudaEvent_t, without needing the CUDA headers. */
typedef struct CUstream_st *GstCsStreamHandle;
typedef struct CUevent_st *GstCsEventHandle;

G_END_DECLS
