// Banded images: the split into bands, the residency plan, and the paging
// schedule (see banded_image.h). Only cs:: runtime wrappers are called, so
// this file builds with and without CUDA.
#include "sar/banded_image.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

namespace cs::sar {

using Cf = std::complex<float>;

std::vector<RowBand> split_into_bands(int64_t width, int64_t height, int64_t max_pixels) {
  int64_t band_rows = std::max<int64_t>(1, max_pixels / std::max<int64_t>(1, width));
  if (band_rows >= kTileRows) band_rows -= band_rows % kTileRows;  // whole kernel tiles
  std::vector<RowBand> bands;
  for (int64_t r0 = 0; r0 < height; r0 += band_rows) bands.push_back({r0, std::min(band_rows, height - r0)});
  return bands;
}

BackprojectionConfig band_config(const BackprojectionConfig &full, const RowBand &band) {
  BackprojectionConfig c = full;
  c.grid.height = band.rows;
  c.grid.centre =
      full.grid.pixel_position(double(full.grid.width / 2), double(band.first_row + band.rows / 2));
  return c;
}

bool BandResidency::all_resident() const {
  return fits && std::all_of(resident.begin(), resident.end(), [](bool r) { return r; });
}

size_t BandResidency::resident_count() const { return size_t(std::count(resident.begin(), resident.end(), true)); }

BandResidency plan_band_residency(const std::vector<size_t> &band_bytes, size_t other_bytes, size_t budget) {
  BandResidency plan;
  plan.resident.assign(band_bytes.size(), false);
  const size_t image = std::accumulate(band_bytes.begin(), band_bytes.end(), size_t(0));
  const size_t largest = band_bytes.empty() ? 0 : *std::max_element(band_bytes.begin(), band_bytes.end());
  const size_t paging_staging = (band_bytes.size() > 1 ? 2 : 1) * largest;
  plan.minimum_bytes = other_bytes + paging_staging;
  if (other_bytes <= budget && 2 * image <= budget - other_bytes) {
    plan.fits = true;
    plan.resident.assign(band_bytes.size(), true);
    return plan;
  }
  if (plan.minimum_bytes > budget) return plan;
  plan.fits = true;
  plan.staging_bytes = paging_staging;
  size_t left = budget - plan.minimum_bytes;
  size_t taken = 0;
  for (size_t b = 0; b < band_bytes.size(); ++b) {
    // At least one band stays paged: an image wholly on the device would
    // also need its output copy there, which is what did not fit.
    if (taken + 1 < band_bytes.size() && band_bytes[b] <= left) {
      plan.resident[b] = true;
      left -= band_bytes[b];
      ++taken;
    }
  }
  return plan;
}

size_t automatic_device_budget(const MemoryInfo &device_memory) {
  const size_t margin = std::max<size_t>(size_t(256) << 20, device_memory.total_bytes / 20);
  return device_memory.free_bytes > margin ? device_memory.free_bytes - margin : 0;
}

// ------------------------------------------------------------------ storage

namespace {

// An allocation failure with what the memory was for in front of the CUDA text.
template <class Alloc>
void *allocate_for(const char *what, Alloc &&alloc) {
  try {
    return alloc();
  } catch (const CudaError &e) {
    throw CudaError(e.code(), std::string("cannot allocate ") + what + ": " + e.what());
  }
}

}  // namespace

class BandedImage::DeviceBytes {
 public:
  DeviceBytes(size_t bytes, int device, const char *what)
      : ptr_(allocate_for(what, [&] { return device_alloc(bytes, device); })), device_(device) {}
  ~DeviceBytes() { device_free(ptr_, device_); }
  Cf *get() const { return static_cast<Cf *>(ptr_); }

 private:
  void *ptr_;
  int device_;
};

class BandedImage::PinnedBytes {
 public:
  PinnedBytes(size_t bytes, const char *what) : ptr_(allocate_for(what, [&] { return pinned_alloc(bytes); })) {}
  ~PinnedBytes() { pinned_free(ptr_); }
  Cf *get() const { return static_cast<Cf *>(ptr_); }

 private:
  void *ptr_;
};

BandedImage::BandedImage(int64_t width, std::vector<RowBand> bands) : width_(width) {
  for (const RowBand &rows : bands) {
    bands_.emplace_back();
    bands_.back().rows = rows;
    height_ += rows.rows;
  }
  host_image_.assign(size_t(pixels()), Cf());
  for (Band &band : bands_) band.host = host_image_.data() + band.rows.first_row * width_;
}

BandedImage::BandedImage(int64_t width, std::vector<RowBand> bands, const std::vector<bool> &resident, int device)
    : width_(width), device_(device) {
  size_t resident_bytes = 0, paged_bytes = 0, largest_paged = 0;
  for (size_t b = 0; b < bands.size(); ++b) {
    bands_.emplace_back();
    bands_.back().rows = bands[b];
    height_ += bands[b].rows;
    const size_t bytes = band_bytes(bands_.back());
    if (resident.at(b)) {
      resident_.push_back(b);
      resident_bytes += bytes;
    } else {
      paged_.push_back(b);
      paged_bytes += bytes;
      largest_paged = std::max(largest_paged, bytes);
    }
  }
  DeviceGuard guard(device);
  if (resident_bytes > 0) {
    resident_rows_ = std::make_unique<DeviceBytes>(resident_bytes, device, "the image's device-resident bands");
    Cf *next = resident_rows_->get();
    for (size_t b : resident_) {
      bands_[b].device = next;
      next += bands_[b].rows.rows * width_;
    }
  }
  if (!paged_.empty()) {
    paged_rows_ = std::make_unique<PinnedBytes>(paged_bytes, "the image's paged bands (page-locked host memory)");
    Cf *next = paged_rows_->get();
    for (size_t b : paged_) {
      bands_[b].host = next;
      next += bands_[b].rows.rows * width_;
    }
    for (size_t slot = 0; slot < std::min<size_t>(2, paged_.size()); ++slot)
      staging_[slot] = std::make_unique<DeviceBytes>(largest_paged, device, "a staging buffer for paged image bands");
    uploads_ = Stream(device);
    downloads_ = Stream(device);
    for (int slot = 0; slot < 2; ++slot) {
      loaded_[slot] = Event(device);
      computed_[slot] = Event(device);
      drained_[slot] = Event(device);
    }
  }
}

BandedImage::~BandedImage() {
  // The paging streams may still be reading or writing staging and the page-locked rows.
  for (const Stream *paging : {&uploads_, &downloads_}) {
    if (!paging->get()) continue;
    try {
      paging->synchronize();
    } catch (const CudaError &) {
      // A failed stream has nothing left to wait for.
    }
  }
}

size_t BandedImage::band_bytes(const Band &band) const { return size_t(band.rows.rows * width_) * sizeof(Cf); }

void BandedImage::set_grid(const BackprojectionConfig &full) {
  for (Band &band : bands_) {
    const BackprojectionConfig c = band_config(full, band.rows);
    if (device_ < 0)
      band.cpu = std::make_unique<CpuBackprojector>(c);
    else
      band.cuda = std::make_unique<CudaBackprojector>(c, device_);
  }
}

// ------------------------------------------------------------------ paging

// Uploads and downloads run on streams of their own, so that PCIe carries
// both directions at once. A paged band always uses the same slot (its
// place among the paged bands, modulo 2), so the slot's last download also
// covers the band's own download from the previous block: waiting for it
// orders both the reuse of the staging buffer and the read of the host rows.

// Staging buffer `slot` gets `band`'s rows once the slot's previous download
// is done. A band about to be replaced needs no upload: the event then only
// orders the kernel after that download.
void BandedImage::page_in(const Band &band, int slot, bool replaced) {
  stream_wait(uploads_.get(), drained_[slot].get());
  if (!replaced) copy_async(staging_[slot]->get(), band.host, band_bytes(band), uploads_.get());
  loaded_[slot].record(uploads_.get());
}

// `band`'s rows go back to host memory once the kernel queued on `stream` has written them.
void BandedImage::page_out(const Band &band, int slot, StreamHandle stream) {
  computed_[slot].record(stream);
  stream_wait(downloads_.get(), computed_[slot].get());
  copy_async(band.host, staging_[slot]->get(), band_bytes(band), downloads_.get());
  drained_[slot].record(downloads_.get());
}

void BandedImage::apply(Band &band, const std::vector<BlockUpdate> &updates, Cf *rows, StreamHandle stream) {
  for (const BlockUpdate &u : updates) {
    if (band.cuda)
      band.cuda->backproject(u.block, rows, u.mode, stream);
    else
      band.cpu->backproject(u.block, rows, u.mode);
  }
}

void BandedImage::backproject(const std::vector<BlockUpdate> &updates, StreamHandle stream) {
  if (updates.empty()) return;
  if (device_ < 0) {
    for (Band &band : bands_) apply(band, updates, band.host, stream);
    return;
  }
  const bool replaced = updates.front().mode == Accumulate::Replace;
  // Paged band i uses staging slot i % 2; band i + 1's upload is queued
  // before band i's kernels, so it runs while they do.
  if (!paged_.empty()) page_in(bands_[paged_[0]], 0, replaced);  // overlaps the resident bands' kernels
  for (size_t b : resident_) apply(bands_[b], updates, bands_[b].device, stream);
  for (size_t i = 0; i < paged_.size(); ++i) {
    const int slot = int(i % 2);
    if (i + 1 < paged_.size()) page_in(bands_[paged_[i + 1]], 1 - slot, replaced);
    stream_wait(stream, loaded_[slot].get());
    Band &band = bands_[paged_[i]];
    apply(band, updates, staging_[slot]->get(), stream);
    page_out(band, slot, stream);
  }
}

// ------------------------------------------------------------------ reading the image

bool BandedImage::on_device() const { return device_ >= 0 && paged_.empty(); }

const Cf *BandedImage::device_pixels() const { return on_device() && resident_rows_ ? resident_rows_->get() : nullptr; }

void BandedImage::copy_to_host(Cf *dst, StreamHandle stream) const {
  if (device_ < 0) {
    std::memcpy(dst, host_image_.data(), host_image_.size() * sizeof(Cf));
    return;
  }
  for (size_t b : resident_)
    copy_async(dst + bands_[b].rows.first_row * width_, bands_[b].device, band_bytes(bands_[b]), stream);
  if (downloads_.get()) downloads_.synchronize();  // the last downloads of the paged bands
  stream_synchronize(stream);
  for (size_t b : paged_)
    std::memcpy(dst + bands_[b].rows.first_row * width_, bands_[b].host, band_bytes(bands_[b]));
}

}  // namespace cs::sar
