// An image backprojected in bands of whole rows, each band by its own
// backprojector into its own rows, so that the user gets one image however
// the work and the memory are cut.
//
// On the CPU the bands are rows of one host image. On CUDA each band is
// either resident (its rows stay in device memory) or paged (its rows live
// in page-locked host memory; for every call the band is uploaded into one
// of two device staging buffers, backprojected with every block of the call
// and downloaded again). Uploads and downloads run on streams of their own
// (both PCIe directions at once) that synchronise with the caller's stream
// through events: the next paged band's upload overlaps this band's
// backprojection, and a band's download overlaps the next band's. Which
// bands stay resident is plan_band_residency()'s decision from a device
// memory budget, so images larger than the device are formed as well, at
// the cost of 2 x band bytes over PCIe per paged band and call (1 x when
// the call starts by replacing the image: nothing needs uploading). A call
// takes several blocks (video SAR's add and subtract, a ring's two runs),
// so that they share one round trip.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/cuda_runtime.h"
#include "sar/backprojection.h"

namespace cs::sar {

// Rows [first_row, first_row + rows) of a grid.
struct RowBand {
  int64_t first_row = 0, rows = 0;
};

// The rows of a width x height grid in bands of at most `max_pixels` pixels
// (at least one row each; a multiple of the kernels' kTileRows rows when a
// band holds that many, so that no kernel tile straddles two bands).
std::vector<RowBand> split_into_bands(int64_t width, int64_t height, int64_t max_pixels);

// The grid of one band of `full`: its rows, centred on the full grid's pixel
// (width / 2, first_row + rows / 2), so every band pixel is a full-grid pixel.
BackprojectionConfig band_config(const BackprojectionConfig &full, const RowBand &band);

// Which bands of an image stay in device memory.
struct BandResidency {
  bool fits = false;           // the plan keeps within the budget
  std::vector<bool> resident;  // per band; all false when !fits
  size_t staging_bytes = 0;    // device buffers paged bands pass through (0 when every band is resident)
  size_t minimum_bytes = 0;    // the least budget any plan needs: other + staging for paging

  bool all_resident() const;
  size_t resident_count() const;
};

// The plan for bands of `band_bytes` each, when `other_bytes` of device
// memory go to other things (the ring of range profiles) and `budget` bytes
// may be used in all:
//   - every band resident when other + 2 x image <= budget (the image, and
//     the device copy of it handed downstream);
//   - otherwise two staging buffers of the largest band (one when there is
//     a single band) and, in band order, every band that still fits in what
//     is left; the rest are paged. The output then goes through the host.
//   - fits = false when other + staging exceeds the budget.
BandResidency plan_band_residency(const std::vector<size_t> &band_bytes, size_t other_bytes, size_t budget);

// The budget when the user gives none: free device memory less a safety
// margin for what the plan does not count (input buffers, the per-pulse
// tables of the backprojectors, cuFFT work areas of other elements):
// max(256 MiB, 5% of the device's memory).
size_t automatic_device_budget(const MemoryInfo &device_memory);

// One block of profiles and what it does to the image.
struct BlockUpdate {
  RangeProfileBlock block;
  Accumulate mode = Accumulate::Add;
};

class BandedImage {
 public:
  // CPU: every band in one host image of width x (rows of all bands).
  BandedImage(int64_t width, std::vector<RowBand> bands);
  // CUDA on `device`: bands with resident[b] in device memory, the others in
  // page-locked host memory, two staging buffers for them. Throws CudaError
  // (its text says what could not be allocated and how much was asked for).
  BandedImage(int64_t width, std::vector<RowBand> bands, const std::vector<bool> &resident, int device);
  ~BandedImage();
  BandedImage(const BandedImage &) = delete;
  BandedImage &operator=(const BandedImage &) = delete;

  // Makes each band's backprojector for `full` (whose height is the bands'
  // rows); before the first backproject. Throws std::invalid_argument.
  void set_grid(const BackprojectionConfig &full);

  // Applies `updates` in order to every band (a paged band makes one round
  // trip for all of them). CPU: samples in host memory, done on return.
  // CUDA: samples in device memory, enqueued on `stream` (the paging streams
  // synchronise with it through events); returns without waiting. One
  // stream at a time (the bands' backprojectors are reused).
  void backproject(const std::vector<BlockUpdate> &updates, StreamHandle stream);

  // CUDA with every band resident: the whole image is device_pixels(),
  // ready in `stream` order.
  bool on_device() const;
  const std::complex<float> *device_pixels() const;

  // Copies the whole image into host memory `dst` (pixels() values); on
  // CUDA waits for the work queued on `stream` and for the paged bands' downloads.
  void copy_to_host(std::complex<float> *dst, StreamHandle stream) const;

  int64_t width() const { return width_; }
  int64_t pixels() const { return width_ * height_; }
  size_t band_count() const { return bands_.size(); }
  size_t paged_count() const { return paged_.size(); }

 private:
  struct Band {
    RowBand rows;
    std::complex<float> *device = nullptr;  // resident: its rows in device memory
    std::complex<float> *host = nullptr;    // CPU or paged: its rows in host memory
    std::unique_ptr<CpuBackprojector> cpu;
    std::unique_ptr<CudaBackprojector> cuda;
  };
  class DeviceBytes;
  class PinnedBytes;
  size_t band_bytes(const Band &band) const;
  void apply(Band &band, const std::vector<BlockUpdate> &updates, std::complex<float> *rows, StreamHandle stream);
  void page_in(const Band &band, int slot, bool replaced);
  void page_out(const Band &band, int slot, StreamHandle stream);

  int64_t width_ = 0, height_ = 0;
  int device_ = -1;  // -1: CPU
  std::vector<Band> bands_;
  std::vector<size_t> resident_, paged_;  // band indices
  std::vector<std::complex<float>> host_image_;  // CPU
  std::unique_ptr<DeviceBytes> resident_rows_;    // CUDA: the resident bands, packed in band order
  std::unique_ptr<PinnedBytes> paged_rows_;       // CUDA: the paged bands, packed in band order
  std::unique_ptr<DeviceBytes> staging_[2];       // CUDA: where paged bands are backprojected
  Stream uploads_, downloads_;  // CUDA, when bands are paged: one per PCIe direction
  // Per staging buffer: filled for its kernel, written by it, emptied again.
  Event loaded_[2], computed_[2], drained_[2];
};

}  // namespace cs::sar
