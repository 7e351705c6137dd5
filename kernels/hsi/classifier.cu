// The CUDA classifier: one thread per pixel, the math of classify_math.h.
//
// A block of kPixelsPerBlock threads walks its pixels' selected bands in
// chunks of kBandChunk: the chunk is loaded cooperatively along whichever
// axis is contiguous in memory (bands in BIP, pixels in BIL and BSQ), decoded
// from the native format on the way, and kept in shared memory; each thread
// then reads its own pixel's values from there. References are read from
// constant memory when the prepared table fits (every thread of a warp reads
// the same value at the same time: a broadcast), otherwise each chunk of the
// current reference group is staged in shared memory next to the pixels.
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "hsi/classifier.h"
#include "common/cuda_check.h"

namespace cs::hsi {

namespace {

constexpr int kPixelsPerBlock = 128;
// 62 KiB of the 64 KiB constant bank; the rest is left to the compiler.
constexpr size_t kConstantTableFloats = 15872;

__constant__ float c_reference_table[kConstantTableFloats];

struct ConstantTable {
  ReferenceTableShape shape;
  __device__ float ref(int plane, int k, int u) const { return c_reference_table[shape.index(plane, k, u)]; }
  __device__ float constant(int k) const { return c_reference_table[shape.constant_index(k)]; }
  __device__ float position(int u) const { return c_reference_table[shape.position_index(u)]; }
};

// References k0.. and bands c0.. staged in shared memory (planes x group x chunk).
struct SharedTileTable {
  const float *tile;
  const float *table;  // global copy: per-reference constants and band positions
  ReferenceTableShape shape;
  int k0, c0;
  __device__ float ref(int plane, int k, int u) const {
    return tile[(plane * kReferenceGroup + (k - k0)) * kBandChunk + (u - c0)];
  }
  __device__ float constant(int k) const { return __ldg(table + shape.constant_index(k)); }
  __device__ float position(int u) const { return __ldg(table + shape.position_index(u)); }
};

struct KernelArgs {
  const void *data;
  SampleFormat format;
  BlockLayout layout;
  const int *bands;    // selected band indices (device)
  const float *table;  // prepared references (device)
  ReferenceTableShape shape;
  float threshold;
  void *class_map;
  size_t class_map_stride;
  bool class_map_16bit;
  float *rule_images;
};

template <Method M, DataType T, bool kTableInConstant, class Acc>
__global__ void __launch_bounds__(kPixelsPerBlock) classify_kernel(const KernelArgs a) {
  __shared__ float tile[kBandChunk][kPixelsPerBlock + 1];  // +1: BIP stores hit distinct banks
  __shared__ size_t pixel_base[kPixelsPerBlock];
  __shared__ float reference_tile[kTableInConstant ? 1 : table_planes(M) * kReferenceGroup * kBandChunk];

  const int tid = threadIdx.x;
  const size_t pixels = a.layout.pixels();
  const size_t first_pixel = size_t(blockIdx.x) * kPixelsPerBlock;
  const size_t pixel = first_pixel + tid;
  const bool active = pixel < pixels;
  const int nb = a.shape.bands, K = a.shape.references;
  const bool bands_contiguous = a.layout.band_stride == 1;
  pixel_base[tid] = active ? a.layout.pixel_offset(pixel) : 0;
  __syncthreads();

  auto stage_pixels = [&](int c0) {
    const int n = min(kBandChunk, nb - c0);
    for (int i = tid; i < kBandChunk * kPixelsPerBlock; i += kPixelsPerBlock) {
      const int p = bands_contiguous ? i / kBandChunk : i % kPixelsPerBlock;
      const int uu = bands_contiguous ? i % kBandChunk : i / kPixelsPerBlock;
      float x = 0.0f;
      if (uu < n && first_pixel + p < pixels)
        x = decode_sample<T>(a.data, pixel_base[p] + size_t(__ldg(a.bands + c0 + uu)) * a.layout.band_stride,
                             a.format);
      tile[uu][p] = x;
    }
  };
  auto stage_references = [&](int k0, int c0) {
    constexpr int kTile = kReferenceGroup * kBandChunk;
    for (int i = tid; i < table_planes(M) * kTile; i += kPixelsPerBlock) {
      const int plane = i / kTile, k = k0 + (i % kTile) / kBandChunk, u = c0 + i % kBandChunk;
      reference_tile[i] = (k < K && u < nb) ? __ldg(a.table + a.shape.index(plane, k, u)) : 0.0f;
    }
  };
  auto table_for = [&](int k0, int c0) {
    if constexpr (kTableInConstant)
      return ConstantTable{a.shape};
    else
      return SharedTileTable{reference_tile, a.table, a.shape, k0, c0};
  };

  // SID needs the pixel's total before its terms can be summed.
  Sum<Acc> floored;
  if constexpr (M == Method::sid) {
    for (int c0 = 0; c0 < nb; c0 += kBandChunk) {
      __syncthreads();
      stage_pixels(c0);
      __syncthreads();
      const int n = min(kBandChunk, nb - c0);
      for (int uu = 0; uu < n; ++uu) floored.add(sid_floor(tile[uu][tid]));
      floored.fold();
    }
  }
  float first = 0, last = 0;
  if constexpr (M == Method::correlation || M == Method::bandfit) {
    if (active) {
      first = decode_sample<T>(a.data, pixel_base[tid] + size_t(__ldg(a.bands)) * a.layout.band_stride, a.format);
      last = decode_sample<T>(a.data, pixel_base[tid] + size_t(__ldg(a.bands + nb - 1)) * a.layout.band_stride,
                              a.format);
    }
  }
  const PixelContext px = pixel_context<M>(first, last, floored.total);

  BestMatch best;
  for (int k0 = 0; k0 < K; k0 += kReferenceGroup) {
    const int count = min(kReferenceGroup, K - k0);
    ReferenceSums<M, kReferenceGroup, Acc> sums;
    sums.clear();
    for (int c0 = 0; c0 < nb; c0 += kBandChunk) {
      __syncthreads();  // the previous chunk is consumed
      stage_pixels(c0);
      if constexpr (!kTableInConstant) stage_references(k0, c0);
      __syncthreads();
      const int n = min(kBandChunk, nb - c0);
      const auto table = table_for(k0, c0);
      for (int uu = 0; uu < n; ++uu) sums.add_band(tile[uu][tid], c0 + uu, k0, count, px, table);
      sums.fold();
    }
    if (active) {
      const auto table = table_for(k0, 0);
      for (int j = 0; j < count; ++j) {
        const float s = sums.score(j, k0 + j, nb, px, table);
        if (a.rule_images) a.rule_images[size_t(k0 + j) * pixels + pixel] = s;
        best.offer(s, k0 + j, higher_is_better(M));
      }
    }
  }
  if (!active) return;
  const int label = best.label(a.threshold, higher_is_better(M));
  auto *row = static_cast<unsigned char *>(a.class_map) + (pixel / a.layout.samples) * a.class_map_stride;
  if (a.class_map_16bit)
    reinterpret_cast<uint16_t *>(row)[pixel % a.layout.samples] = uint16_t(label);
  else
    row[pixel % a.layout.samples] = uint8_t(label);
}

// The constant bank is one per device and process, shared by every
// classifier: the owner's table stays resident while it keeps classifying;
// a new owner first waits for the kernels still reading the old table.
struct ConstantBank {
  std::mutex mutex;
  uint64_t owner = 0;
  cudaEvent_t uploaded = nullptr;                       // after the resident table's upload
  std::vector<std::pair<StreamHandle, cudaEvent_t>> readers;  // per stream: after its last launch
};

ConstantBank &constant_bank(int device) {
  static std::mutex mutex;
  // Never destroyed: its events may outlive the CUDA context at exit.
  static auto *banks = new std::map<int, ConstantBank>();
  std::lock_guard<std::mutex> lock(mutex);
  return (*banks)[device];
}

uint64_t next_classifier_id() {
  static std::mutex mutex;
  static uint64_t id = 0;
  std::lock_guard<std::mutex> lock(mutex);
  return ++id;
}

}  // namespace

struct CudaSpectralClassifier::Impl {
  SpectralClassifier host;
  int device;
  uint64_t id;
  bool in_constant;
  float *table = nullptr;
  int *bands = nullptr;

  Impl(const SpectralClassifier &c, int dev)
      : host(c), device(dev), id(next_classifier_id()), in_constant(c.table().size() <= kConstantTableFloats) {}
};

CudaSpectralClassifier::CudaSpectralClassifier(const SpectralClassifier &classifier, int device)
    : impl_(std::make_unique<Impl>(classifier, device)) {
  DeviceGuard guard(device);
  const std::vector<float> &table = classifier.table();
  const std::vector<int> &bands = classifier.bands();
  impl_->table = static_cast<float *>(device_alloc(table.size() * sizeof(float), device));
  try {
    impl_->bands = static_cast<int *>(device_alloc(bands.size() * sizeof(int), device));
    cs::check_cuda(cudaMemcpy(impl_->table, table.data(), table.size() * sizeof(float), cudaMemcpyHostToDevice),
               "upload reference table");
    cs::check_cuda(cudaMemcpy(impl_->bands, bands.data(), bands.size() * sizeof(int), cudaMemcpyHostToDevice),
               "upload band list");
  } catch (...) {
    device_free(impl_->table, device);
    if (impl_->bands) device_free(impl_->bands, device);
    throw;
  }
}

CudaSpectralClassifier::~CudaSpectralClassifier() {
  if (!impl_) return;
  device_free(impl_->table, impl_->device);
  device_free(impl_->bands, impl_->device);
}

bool CudaSpectralClassifier::table_in_constant_memory() const { return impl_->in_constant; }
int CudaSpectralClassifier::device() const { return impl_->device; }

void CudaSpectralClassifier::classify(const CubeBlock &block, const ClassificationOutput &output,
                                      StreamHandle stream) {
  const SpectralClassifier &host = impl_->host;
  host.check_block(block, output);
  const size_t pixels = block.layout.pixels();
  if (pixels == 0) return;
  if (reinterpret_cast<uintptr_t>(block.data) % sample_size(block.format.type) != 0)
    throw std::invalid_argument("device block is not aligned to its sample size");
  if (output.class_map_format == ClassMapFormat::gray16 && reinterpret_cast<uintptr_t>(output.class_map) % 2 != 0)
    throw std::invalid_argument("16-bit class map is not 2-byte aligned");
  DeviceGuard guard(impl_->device);

  KernelArgs args;
  args.data = block.data;
  args.format = block.format;
  args.layout = block.layout;
  args.bands = impl_->bands;
  args.table = impl_->table;
  args.shape = host.table_shape();
  args.threshold = float(host.threshold());
  args.class_map = output.class_map;
  args.class_map_16bit = output.class_map_format == ClassMapFormat::gray16;
  args.class_map_stride = output.class_map_stride
                              ? output.class_map_stride
                              : block.layout.samples * class_map_bytes_per_pixel(output.class_map_format);
  args.rule_images = output.rule_images;
  const unsigned grid = unsigned((pixels + kPixelsPerBlock - 1) / kPixelsPerBlock);

  auto launch = [&](auto in_constant) {
    with_method(host.method(), [&](auto method) {
      with_data_type(block.format.type, [&](auto type) {
        with_precision(host.precision(), [&](auto precision) {
          classify_kernel<decltype(method)::value, decltype(type)::value, decltype(in_constant)::value,
                          AccumulatorOf<decltype(precision)::value>><<<grid, kPixelsPerBlock, 0, stream>>>(args);
        });
      });
    });
    cs::check_cuda(cudaGetLastError(), "classify kernel launch");
  };

  if (!impl_->in_constant) {
    launch(std::false_type{});
    return;
  }
  ConstantBank &bank = constant_bank(impl_->device);
  std::lock_guard<std::mutex> lock(bank.mutex);
  if (bank.owner != impl_->id) {
    for (auto &[reader_stream, done] : bank.readers) {
      cs::check_cuda(cudaStreamWaitEvent(stream, done, 0), "wait for the previous constant-table readers");
      cudaEventDestroy(done);
    }
    bank.readers.clear();
    if (!bank.uploaded) cs::check_cuda(cudaEventCreateWithFlags(&bank.uploaded, cudaEventDisableTiming), "create event");
    cs::check_cuda(cudaMemcpyToSymbolAsync(c_reference_table, impl_->table, host.table().size() * sizeof(float), 0,
                                       cudaMemcpyDeviceToDevice, stream),
               "upload references to constant memory");
    cs::check_cuda(cudaEventRecord(bank.uploaded, stream), "record constant upload");
    bank.owner = impl_->id;
  }
  cs::check_cuda(cudaStreamWaitEvent(stream, bank.uploaded, 0), "wait for the constant upload");
  launch(std::true_type{});
  cudaEvent_t *done = nullptr;
  for (auto &[reader_stream, event] : bank.readers)
    if (reader_stream == stream) done = &event;
  if (!done) {
    bank.readers.emplace_back(stream, nullptr);
    done = &bank.readers.back().second;
    cs::check_cuda(cudaEventCreateWithFlags(done, cudaEventDisableTiming), "create event");
  }
  cs::check_cuda(cudaEventRecord(*done, stream), "record constant-table use");
}

}  // namespace cs::hsi
