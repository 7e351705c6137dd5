// Checking raw CUDA runtime calls in CUDA sources (.cu) and in the common
// layer: a failure becomes cs::CudaError carrying the call and CUDA's text.
// Only for code built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "common/cuda_runtime.h"

namespace cs {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char *what);

inline void check_cuda(cudaError_t err, const char *what) {
  if (err != cudaSuccess) throw_cuda_error(err, what);
}

// After a kernel launch: reports a bad configuration at once.
inline void check_launch(const char *what) { check_cuda(cudaGetLastError(), what); }

}  // namespace cs
