// CudaMatcher (sift_match.h): brute-force nearest two of SIFT descriptors
// (128 bytes or 128 floats a row) on the GPU.
//
// One thread per query row holds its descriptor (and, for bytes, its squared
// norm) in registers; the block's 64 threads walk the train rows through a
// shared-memory tile (every thread reads the same tile word at once: a
// broadcast, no bank conflicts). Per pair of byte rows: 32 __dp4a for the dot
// product, which with the two norms gives the exact squared distance
// (sift_match.h); of float rows, 128 differences squared and summed; then
// one square root, two comparisons. The train set is split into chunks along
// grid.y so that a few thousand queries still fill the GPU; a second kernel
// merges the chunks' nearest two per query (the global nearest two are each
// among their own chunk's nearest two). Work: query_count x train_count x
// 32 __dp4a (bytes) or 384 float operations (floats); 2000 x 2000 byte
// descriptors are 128 M __dp4a, well under a millisecond on an H200.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "common/cuda_check.h"
#include "common/device_resources.h"
#include "common/staged_copy.h"
#include "sift/sift_match.h"

namespace cs::sift {

namespace {

constexpr int kQueriesPerBlock = 64;
constexpr int kTrainTileRows = 64;  // 8 KB of shared memory for bytes, 32 KB for floats

template <class Rows>
__global__ void nearest_two_in_chunks(const uint32_t *__restrict__ query, int query_count,
                                      const uint32_t *__restrict__ train, int train_count, int chunk_rows,
                                      NearestTwo *__restrict__ partial) {
  constexpr int kRowVectors = Rows::kWords / 4;  // 16-byte loads per row
  __shared__ uint4 tile[kTrainTileRows * kRowVectors];
  __shared__ uint32_t tile_terms[kTrainTileRows];
  const int q = blockIdx.x * kQueriesPerBlock + threadIdx.x;
  const bool active = q < query_count;
  uint32_t mine[Rows::kWords];
  const uint4 *my_row = reinterpret_cast<const uint4 *>(query + size_t(active ? q : 0) * Rows::kWords);
#pragma unroll
  for (int v = 0; v < kRowVectors; ++v) {
    const uint4 words = active ? my_row[v] : make_uint4(0, 0, 0, 0);
    mine[4 * v] = words.x;
    mine[4 * v + 1] = words.y;
    mine[4 * v + 2] = words.z;
    mine[4 * v + 3] = words.w;
  }
  const uint32_t my_term = Rows::row_term(mine);
  const uint32_t *tile_words = reinterpret_cast<const uint32_t *>(tile);
  NearestTwo nearest;
  const int begin = blockIdx.y * chunk_rows, end = min(train_count, begin + chunk_rows);
  for (int first = begin; first < end; first += kTrainTileRows) {
    const int rows = min(kTrainTileRows, end - first);
    __syncthreads();  // the previous tile is no longer read
    const uint4 *source = reinterpret_cast<const uint4 *>(train + size_t(first) * Rows::kWords);
    for (int i = threadIdx.x; i < rows * kRowVectors; i += blockDim.x) tile[i] = source[i];
    __syncthreads();
    for (int r = threadIdx.x; r < rows; r += blockDim.x) tile_terms[r] = Rows::row_term(tile_words + r * Rows::kWords);
    __syncthreads();
    if (!active) continue;
    for (int r = 0; r < rows; ++r)
      offer_neighbour(nearest, Rows::distance(mine, my_term, tile_words + r * Rows::kWords, tile_terms[r]), first + r);
  }
  if (active) partial[size_t(blockIdx.y) * query_count + q] = nearest;
}

__global__ void merge_chunks(const NearestTwo *__restrict__ partial, int chunks, int query_count,
                             NearestTwo *__restrict__ nearest) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= query_count) return;
  NearestTwo merged;
  for (int c = 0; c < chunks; ++c) {
    const NearestTwo p = partial[size_t(c) * query_count + q];
    if (p.best >= 0) offer_neighbour(merged, p.best_distance, p.best);
    if (p.second >= 0) offer_neighbour(merged, p.second_distance, p.second);
  }
  nearest[q] = merged;
}

// A device allocation that only grows; growing waits for `stream`, whose
// queued work may still use the old block.
class GrowingBlock {
 public:
  explicit GrowingBlock(int device) : device_(device) {}
  ~GrowingBlock() { device_free(ptr_, device_); }
  GrowingBlock(const GrowingBlock &) = delete;
  GrowingBlock &operator=(const GrowingBlock &) = delete;
  template <class T>
  T *get() const {
    return static_cast<T *>(ptr_);
  }
  void swap(GrowingBlock &other) {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
  }
  void reserve(size_t bytes, StreamHandle stream) {
    if (bytes <= bytes_) return;
    stream_synchronize(stream);
    device_free(ptr_, device_);
    ptr_ = nullptr;
    bytes_ = 0;
    ptr_ = device_alloc(bytes, device_);
    bytes_ = bytes;
  }

 private:
  int device_;
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace

struct CudaMatcher::Impl {
  explicit Impl(int device_id)
      : device(device_id), train_rows(device_id), query_rows(device_id), partial(device_id), forward(device_id),
        backward(device_id) {}
  int device;
  int multiprocessors = 1;
  int train_count = 0;
  bool train_floats = false;  // the kind of the train rows
  int query_count = -1;       // rows of the last query uploaded; -1: none since the train rows were set
  bool query_floats = false;
  GrowingBlock train_rows, query_rows, partial, forward, backward;
  std::unique_ptr<StagingBlock> staging;  // page-locked, for the query rows

  // Uploads host rows through page-locked staging: the driver stages a
  // pageable copy in small pieces at a fraction of the link's rate (a 1080p
  // frame's RootSIFT rows are 1.4 MB). Every caller waits for the stream
  // before it returns, so the staging is free again at the next call.
  void upload_staged(void *device_rows, const void *host_rows, size_t bytes, StreamHandle stream) {
    if (!staging || staging->block.size < bytes) {
      staging.reset();
      staging = std::make_unique<StagingBlock>(bytes);
    }
    copy_bytes(staging->bytes(), host_rows, bytes, CopyStores::automatic);
    copy_async(device_rows, staging->bytes(), bytes, stream);
  }

  template <class Rows>
  void set_train(const typename Rows::Element *train, int count, StreamHandle stream) {
    if (count < 0) throw std::invalid_argument("negative train count " + std::to_string(count));
    DeviceGuard guard(device);
    const size_t bytes = size_t(count) * Rows::kWords * sizeof(uint32_t);
    train_rows.reserve(bytes, stream);
    if (bytes) copy_async(train_rows.get<void>(), train, bytes, stream);
    train_count = count;
    train_floats = std::is_same_v<Rows, FloatDescriptorRows>;
    query_count = -1;
  }

  void train_on_last_query() {
    if (query_count < 0) throw std::logic_error("CudaMatcher: no query rows uploaded since the train rows were set");
    train_rows.swap(query_rows);
    train_count = query_count;
    train_floats = query_floats;
    query_count = -1;
  }

  // Uploads the query rows and enqueues their nearest two train rows into
  // forward; with `mutual` also each train row's nearest query row into
  // backward (the same kernel with the roles swapped). False when there is
  // nothing to match (the query rows are uploaded all the same, for
  // train_on_last_query).
  template <class Rows>
  bool enqueue_matching(const typename Rows::Element *query, int count, bool mutual, StreamHandle stream) {
    if (count < 0) throw std::invalid_argument("negative query count " + std::to_string(count));
    constexpr bool floats = std::is_same_v<Rows, FloatDescriptorRows>;
    if (floats != train_floats && train_count > 0)
      throw std::invalid_argument(std::string("query rows of ") + (train_floats ? "bytes" : "floats") +
                                  " against train rows of " + (train_floats ? "floats" : "bytes"));
    const size_t bytes = size_t(count) * Rows::kWords * sizeof(uint32_t);
    if (bytes) {
      query_rows.reserve(bytes, stream);
      upload_staged(query_rows.get<void>(), query, bytes, stream);
    }
    query_count = count;
    query_floats = floats;
    if (count == 0 || train_count == 0) {
      if (bytes) stream_synchronize(stream);  // the staging is free again when this returns
      return false;
    }
    forward.reserve(size_t(query_count) * sizeof(NearestTwo), stream);
    nearest_two_async<Rows>(query_rows.get<uint32_t>(), query_count, train_rows.get<uint32_t>(), train_count,
                            forward.get<NearestTwo>(), stream);
    if (!mutual) return true;
    backward.reserve(size_t(train_count) * sizeof(NearestTwo), stream);
    nearest_two_async<Rows>(train_rows.get<uint32_t>(), train_count, query_rows.get<uint32_t>(), query_count,
                            backward.get<NearestTwo>(), stream);
    return true;
  }

  // Enqueues the nearest two `b` rows of each `a` row into `out` (device).
  template <class Rows>
  void nearest_two_async(const uint32_t *a, int a_count, const uint32_t *b, int b_count, NearestTwo *out,
                         StreamHandle stream) {
    const int query_blocks = (a_count + kQueriesPerBlock - 1) / kQueriesPerBlock;
    const int tiles = (b_count + kTrainTileRows - 1) / kTrainTileRows;
    // About four blocks per multiprocessor, at least one tile per chunk.
    const int chunks = std::clamp((4 * multiprocessors + query_blocks - 1) / query_blocks, 1, tiles);
    const int chunk_rows = (tiles + chunks - 1) / chunks * kTrainTileRows;
    const int used_chunks = (b_count + chunk_rows - 1) / chunk_rows;
    partial.reserve(size_t(used_chunks) * size_t(a_count) * sizeof(NearestTwo), stream);
    nearest_two_in_chunks<Rows><<<dim3(unsigned(query_blocks), unsigned(used_chunks)), kQueriesPerBlock, 0, stream>>>(
        a, a_count, b, b_count, chunk_rows, partial.get<NearestTwo>());
    check_launch("nearest_two_in_chunks");
    merge_chunks<<<unsigned((a_count + 255) / 256), 256, 0, stream>>>(partial.get<NearestTwo>(), used_chunks, a_count,
                                                                    out);
    check_launch("merge_chunks");
  }

  template <class Rows>
  std::vector<NearestTwo> nearest_two(const typename Rows::Element *query, int count, StreamHandle stream) {
    DeviceGuard guard(device);
    std::vector<NearestTwo> out(static_cast<size_t>(std::max(count, 0)));
    if (!enqueue_matching<Rows>(query, count, false, stream)) return out;
    copy_async(out.data(), forward.get<void>(), out.size() * sizeof(NearestTwo), stream);
    stream_synchronize(stream);
    return out;
  }

  template <class Rows>
  std::vector<DescriptorMatch> match(const typename Rows::Element *query, int count, double ratio, bool mutual,
                                     StreamHandle stream) {
    DeviceGuard guard(device);
    if (!enqueue_matching<Rows>(query, count, mutual, stream)) return {};
    std::vector<NearestTwo> ahead(static_cast<size_t>(count)), back(mutual ? size_t(train_count) : 0);
    copy_async(ahead.data(), forward.get<void>(), ahead.size() * sizeof(NearestTwo), stream);
    if (mutual) copy_async(back.data(), backward.get<void>(), back.size() * sizeof(NearestTwo), stream);
    stream_synchronize(stream);  // the one wait of a frame
    std::vector<int> nearest_query_of_train;
    nearest_query_of_train.reserve(back.size());
    for (const NearestTwo &n : back) nearest_query_of_train.push_back(n.best);
    return select_matches(ahead, ratio, nearest_query_of_train);
  }
};

CudaMatcher::CudaMatcher(int device) : impl_(std::make_unique<Impl>(device)) {
  DeviceGuard guard(device);
  check_cuda(cudaDeviceGetAttribute(&impl_->multiprocessors, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(multiprocessors)");
}

CudaMatcher::~CudaMatcher() = default;

int CudaMatcher::device() const { return impl_->device; }
int CudaMatcher::train_count() const { return impl_->train_count; }

void CudaMatcher::set_train(const uint8_t *train, int train_count, StreamHandle stream) {
  impl_->set_train<ByteDescriptorRows>(train, train_count, stream);
}

void CudaMatcher::set_train(const float *train, int train_count, StreamHandle stream) {
  impl_->set_train<FloatDescriptorRows>(train, train_count, stream);
}

void CudaMatcher::train_on_last_query() { impl_->train_on_last_query(); }

std::vector<NearestTwo> CudaMatcher::nearest_two(const uint8_t *query, int query_count, StreamHandle stream) {
  return impl_->nearest_two<ByteDescriptorRows>(query, query_count, stream);
}

std::vector<NearestTwo> CudaMatcher::nearest_two(const float *query, int query_count, StreamHandle stream) {
  return impl_->nearest_two<FloatDescriptorRows>(query, query_count, stream);
}

std::vector<DescriptorMatch> CudaMatcher::match(const uint8_t *query, int query_count, double ratio, bool mutual,
                                                StreamHandle stream) {
  return impl_->match<ByteDescriptorRows>(query, query_count, ratio, mutual, stream);
}

std::vector<DescriptorMatch> CudaMatcher::match(const float *query, int query_count, double ratio, bool mutual,
                                                StreamHandle stream) {
  return impl_->match<FloatDescriptorRows>(query, query_count, ratio, mutual, stream);
}

}  // namespace cs::sift
