// Small per-call host arrays (per-pulse geometry, scale factors) copied to
// the device in stream order, without a synchronous copy per call.
#pragma once

#include <cstddef>

#include "common/cuda_runtime.h"

namespace cs {

// Two alternating slots, each page-locked staging plus a device copy: the
// host fills call N+1's slot while the device may still read call N's. A
// slot is refilled only after its previous upload left the staging (its
// event) and, on the same stream, after the work that read it. One uploader
// serves one stream at a time. The copy is a small kernel, not a copy
// engine's (copy_from_page_locked_async): beside gpuupload's large copies
// it would wait for them, and the work on this stream with it.
class ParameterUploader {
 public:
  explicit ParameterUploader(int device);
  ~ParameterUploader();
  ParameterUploader(const ParameterUploader &) = delete;
  ParameterUploader &operator=(const ParameterUploader &) = delete;

  // Enqueues the copy of `bytes` from host `src` on `stream` and returns the
  // device array; valid for work enqueued on `stream` until the call after
  // next. `src` may be reused on return.
  void *upload(const void *src, size_t bytes, StreamHandle stream);

 private:
  struct Slot {
    void *staging = nullptr;  // page-locked
    void *device = nullptr;
    size_t capacity = 0;
    Event uploaded;
    bool pending = false;
  };
  int device_;
  Slot slots_[2];
  int next_slot_ = 0;
};

}  // namespace cs
