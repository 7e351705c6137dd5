// Programmatic dependent launch (sm_90+): a kernel that directly follows
// another in a stream is launched before that one has completed, its
// blocks let in as the previous kernel's blocks exit, instead of after the
// previous grid's completion and memory flush (a gap of a few microseconds
// per kernel in a chain of dependent kernels). Correctness rests on the
// kernel: every kernel that may be launched so calls
// begin_dependent_grid() before it touches global memory. Elsewhere, and
// below sm_90, that call is a no-op.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "common/cuda_check.h"

namespace cs {

// Waits until the kernel before this one in the stream has completed and
// its writes are visible. The next kernel is let in as this one's blocks
// exit (implicitly): letting it in as soon as they all started
// (griddepcontrol.launch_dependents first) filled the GPU with waiting
// blocks that the concurrent streams' kernels could not use (SIFT at
// 1080p, H200: 0.631 against 0.625 ms a frame).
__device__ __forceinline__ void begin_dependent_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Launches `kernel`; with `overlap_previous` it may start under the tail of
// the kernel enqueued just before it on `stream` (which must be a kernel:
// in a captured graph the edge from it becomes a programmatic one).
template <typename... Params, typename... Args>
void launch_kernel(const char *what, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, bool overlap_previous, Args &&...args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (overlap_previous) {
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), what);
}

}  // namespace cs
