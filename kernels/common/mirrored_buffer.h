// A linear device allocation with an on-demand page-locked host mirror, and
// the stream-ordering state that lets independent CUDA streams share it:
//   - a "ready" event recorded by the last device writer (consumers make their
//     stream wait on it instead of synchronising);
//   - "reader" events recorded by device readers (the next writer waits on
//     them before overwriting, so a recycled buffer is never clobbered while a
//     consumer's kernel still reads it).
// The host mirror is filled lazily: a CPU read of device-newer data downloads
// it (synchronously, through the mirror stream); a CPU write marks the host
// copy newer and the next device use uploads it.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "common/block_cache.h"
#include "common/cuda_runtime.h"

namespace cs {

class MirroredBuffer {
 public:
  MirroredBuffer(int device, size_t bytes);
  ~MirroredBuffer();
  MirroredBuffer(const MirroredBuffer &) = delete;
  MirroredBuffer &operator=(const MirroredBuffer &) = delete;

  int device() const { return device_; }
  size_t size() const { return size_; }

  // --- CPU access (synchronous) ---
  // Returns the host mirror, up to date when `read` is set. After a write
  // mapping, call unmap_host(true).
  void *map_host(bool read, bool write);
  void unmap_host(bool wrote);

  // --- device access (stream ordered, never blocks the host) ---
  // Makes `stream` wait until the contents are ready (uploading a newer host
  // copy first) and returns the device pointer. Pair with end_device_read.
  const void *begin_device_read(StreamHandle stream);
  void end_device_read(StreamHandle stream);
  // Makes `stream` wait for earlier readers and writers. With `discard` the
  // old contents are not needed (a full overwrite), so a newer host copy is
  // not uploaded first. Pair with end_device_write.
  void *begin_device_write(StreamHandle stream, bool discard);
  void end_device_write(StreamHandle stream);

  // Device pointer, synchronous form for callers without a stream: waits on
  // the host until the contents are ready (and, for write, until readers
  // are done). After writing, the caller must have synchronised its own work
  // before calling mark_device_written().
  void *map_device_blocking(bool write);
  void mark_device_written();

  // The stream of the last device writer (nullptr before the first write)
  // and the event marking its completion.
  StreamHandle last_stream() const { return last_stream_; }
  EventHandle ready_event() const { return ready_.get(); }

  // Blocks until all device work touching this buffer has finished.
  void synchronize();

 private:
  void upload_host_locked();
  void download_locked();
  void wait_readers_locked(StreamHandle stream);

  int device_;
  size_t size_;
  BlockCache::Block device_block_;
  BlockCache::Block host_block_;  // acquired on first CPU map
  std::mutex mutex_;
  bool device_valid_ = true;     // device holds the newest contents
  bool host_valid_ = false;      // host mirror holds the newest contents
  bool ever_written_ = false;    // false: contents undefined, nothing to copy
  Event ready_;
  // One event per reading stream: a later read on the same stream re-records
  // it (stream order makes the earlier read complete first), so the list stays
  // as short as the number of consumers however often the buffer is read.
  struct Reader {
    StreamHandle stream;
    Event done;
  };
  std::vector<Reader> readers_;
  size_t active_readers_ = 0;
  StreamHandle last_stream_ = nullptr;
};

}  // namespace cs
