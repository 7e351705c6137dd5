#include "sift-nvcodec.h"

#include <gst/cudasensing/gstcsmemory.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#if CS_SIFT_NVCODEC
#include <cuda.h>  // driver API types only: the functions come through the runtime's entry points
#include <cuda_runtime_api.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "common/cuda_check.h"
#endif

namespace gstsift {

bool is_device_memory_feature(const GstCapsFeatures *features) {
  return features && (gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_CS_DEVICE) ||
                      gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_NVCODEC_CUDA));
}

#if CS_SIFT_NVCODEC

bool is_nvcodec_memory(GstMemory *mem) { return mem && gst_is_cuda_memory(mem); }

NvcodecFrame::NvcodecFrame(GstMemory *mem, int device, GstMapFlags access) : mem_(mem), device_(device) {
  auto *cuda_mem = GST_CUDA_MEMORY_CAST(mem);
  guint nvcodec_device = 0;
  g_object_get(cuda_mem->context, "cuda-device-id", &nvcodec_device, nullptr);
  if (int(nvcodec_device) != device)
    throw std::runtime_error("the frame is in nvcodec's CUDA memory on device " + std::to_string(nvcodec_device) +
                             ", but this element runs on device " + std::to_string(device) + "; set device-id=" +
                             std::to_string(nvcodec_device) + " (or the decoder's cuda-device-id) so both use one GPU");
  if (!gst_memory_map(mem, &map_, GstMapFlags(access | GST_MAP_CUDA)))
    throw std::runtime_error(std::string("cannot map nvcodec's CUDA memory for ") +
                             (access & GST_MAP_WRITE ? "writing" : "reading") + " on the device");
  context_ = gst_cuda_context_get_handle(cuda_mem->context);
  data_ = static_cast<uint8_t *>(map_.data);
  info_ = cuda_mem->info;
}

NvcodecFrame::~NvcodecFrame() { gst_memory_unmap(mem_, &map_); }

namespace {

// A driver API function, found through the runtime (which loads the driver):
// the plugin does not link libcuda, so it still loads on machines without one.
template <class Function>
Function driver_function(const char *symbol) {
  void *function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cs::check_cuda(cudaGetDriverEntryPointByVersion(symbol, &function, 12000, cudaEnableDefault, &found), symbol);
  if (found != cudaDriverEntryPointSuccess || !function)
    throw cs::CudaError(0, std::string("the CUDA driver does not offer ") + symbol);
  return reinterpret_cast<Function>(function);
}

struct DriverCalls {
  CUresult (*get_current_context)(CUcontext *);
  CUresult (*copy_between_contexts_async)(const CUDA_MEMCPY3D_PEER *, CUstream);
  CUresult (*get_device)(CUdevice *, int);
};

const DriverCalls &driver() {
  static const DriverCalls calls{
      driver_function<CUresult (*)(CUcontext *)>("cuCtxGetCurrent"),
      driver_function<CUresult (*)(const CUDA_MEMCPY3D_PEER *, CUstream)>("cuMemcpy3DPeerAsync"),
      driver_function<CUresult (*)(CUdevice *, int)>("cuDeviceGet")};
  return calls;
}

void check_driver(CUresult result, const char *what) {
  if (result != CUDA_SUCCESS)
    throw cs::CudaError(int(result), std::string(what) + " failed (CUresult " + std::to_string(int(result)) + ")");
}

CUdeviceptr device_address(const void *p) { return CUdeviceptr(reinterpret_cast<uintptr_t>(p)); }

// Our primary context of `device` as a GstCudaContext, made once per device
// and kept for the process (the primary context outlives every element).
GstCudaContext *primary_context(int device) {
  static std::mutex made_lock;
  static std::map<int, GstCudaContext *> made;
  std::lock_guard<std::mutex> lock(made_lock);
  if (GstCudaContext *known = made[device]) return known;
  if (!gst_cuda_load_library()) throw std::runtime_error("gstreamer-cuda cannot load the CUDA driver library");
  cs::DeviceGuard guard(device);
  cs::check_cuda(cudaFree(nullptr), "cudaFree (making the primary context current)");
  CUcontext context = nullptr;
  check_driver(driver().get_current_context(&context), "cuCtxGetCurrent");
  CUdevice handle = 0;
  check_driver(driver().get_device(&handle, device), "cuDeviceGet");
  GstCudaContext *wrapped = gst_cuda_context_new_wrapped(context, handle);
  if (!wrapped)
    throw std::runtime_error("gstreamer-cuda cannot wrap the CUDA context of device " + std::to_string(device));
  // Kept for the process on purpose (nvcodec's elements and ours share it): not a leak for the leak tracer.
  GST_OBJECT_FLAG_SET(wrapped, GST_OBJECT_FLAG_MAY_BE_LEAKED);
  made[device] = wrapped;
  return wrapped;
}

// Ours: the runtime's primary context of `device`. (cuCtxGetCurrent is not
// it on a streaming thread where no runtime call has made it current yet.)
CUcontext our_context(int device) {
  return static_cast<CUcontext>(gst_cuda_context_get_handle(primary_context(device)));
}

}  // namespace

bool NvcodecFrame::in_our_context() const { return static_cast<CUcontext>(context_) == our_context(device_); }

bool answer_cuda_context_query(GstCsBaseTransform *element, GstQuery *query) {
  if (GST_QUERY_TYPE(query) != GST_QUERY_CONTEXT) return false;
  const gchar *type = nullptr;
  if (!gst_query_parse_context_type(query, &type) || g_strcmp0(type, GST_CUDA_CONTEXT_TYPE) != 0) return false;
  if (!gst_cs_base_transform_use_cuda(element)) return false;
  // The device it runs on once started; before that, as start will choose it.
  const int device = std::max(0, gst_cs_base_transform_get_device_id(element));
  try {
    return gst_cuda_handle_context_query(GST_ELEMENT(element), query, primary_context(device));
  } catch (const std::exception &e) {
    GST_WARNING_OBJECT(element, "not offering a CUDA context to nvcodec: %s", e.what());
    return false;
  }
}

void copy_rows_between_contexts_async(void *dst, size_t dst_pitch, void *dst_context, const void *src,
                                      size_t src_pitch, void *src_context, size_t row_bytes, int rows,
                                      cs::StreamHandle stream) {
  // The copy between two contexts the driver documents (nvcodec's and the
  // runtime's primary context of our device).
  int device = 0;
  cs::check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  const CUcontext ours = our_context(device);
  CUDA_MEMCPY3D_PEER copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = device_address(src);
  copy.srcContext = src_context ? static_cast<CUcontext>(src_context) : ours;
  copy.srcPitch = src_pitch;
  copy.srcHeight = size_t(rows);
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = device_address(dst);
  copy.dstContext = dst_context ? static_cast<CUcontext>(dst_context) : ours;
  copy.dstPitch = dst_pitch;
  copy.dstHeight = size_t(rows);
  copy.WidthInBytes = row_bytes;
  copy.Height = size_t(rows);
  copy.Depth = 1;
  check_driver(driver().copy_between_contexts_async(&copy, stream),
               "cuMemcpy3DPeerAsync (between nvcodec's CUDA memory and ours)");
}

#else  // no gstcuda: nothing is nvcodec's memory

bool is_nvcodec_memory(GstMemory *) { return false; }

NvcodecFrame::NvcodecFrame(GstMemory *mem, int, GstMapFlags) : mem_(mem) {
  throw std::logic_error("this build of the SIFT elements does not take nvcodec's memory:CUDAMemory");
}

NvcodecFrame::~NvcodecFrame() = default;

bool NvcodecFrame::in_our_context() const { return false; }

bool answer_cuda_context_query(GstCsBaseTransform *, GstQuery *) { return false; }

void copy_rows_between_contexts_async(void *, size_t, void *, const void *, size_t, void *, size_t, int,
                                      cs::StreamHandle) {
  throw std::logic_error("this build of the SIFT elements does not take nvcodec's memory:CUDAMemory");
}

#endif

}  // namespace gstsift
