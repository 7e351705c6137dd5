// Qualifiers for per-sample math shared by CUDA kernels and the CPU paths.
// nvcc sees __host__ __device__; g++ sees a plain inline function, so the
// CPU reference loop and the GPU kernel call the very same code.
#pragma once

#if defined(__CUDACC__)
#define CS_HD __host__ __device__ __forceinline__
#else
#define CS_HD inline
#endif
