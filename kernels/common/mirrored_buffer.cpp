#include "common/mirrored_buffer.h"

#include "common/device_resources.h"

namespace cs {

MirroredBuffer::MirroredBuffer(int device, size_t bytes) : device_(device), size_(bytes) {
  DeviceResources &resources = DeviceResources::get(device);
  device_block_ = resources.acquire_device_block(bytes);
  ready_ = resources.take_event();
}

MirroredBuffer::~MirroredBuffer() {
  // A consumer may have dropped its reference while its kernel still reads:
  // the blocks go back to their caches only once that work has finished,
  // without blocking the thread that dropped the last reference.
  std::vector<Event> pending;
  pending.push_back(std::move(ready_));
  // Every reader event, waited on or not: the finished ones are recycled.
  for (Reader &reader : readers_) pending.push_back(std::move(reader.done));
  DeviceResources::get(device_).release_after(device_block_, host_block_, std::move(pending));
}

void MirroredBuffer::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  ready_.synchronize();
  for (size_t i = 0; i < active_readers_; ++i) readers_[i].done.synchronize();
}

void MirroredBuffer::download_locked() {
  StreamHandle s = DeviceResources::get(device_).mirror_stream();
  stream_wait(s, ready_.get());
  copy_async(host_block_.ptr, device_block_.ptr, size_, s);
  stream_synchronize(s);
}

void MirroredBuffer::upload_host_locked() {
  StreamHandle s = DeviceResources::get(device_).mirror_stream();
  wait_readers_locked(s);
  stream_wait(s, ready_.get());
  copy_async(device_block_.ptr, host_block_.ptr, size_, s);
  ready_.record(s);
  last_stream_ = s;
  device_valid_ = true;
}

void MirroredBuffer::wait_readers_locked(StreamHandle stream) {
  for (size_t i = 0; i < active_readers_; ++i) stream_wait(stream, readers_[i].done.get());
  active_readers_ = 0;
}

void *MirroredBuffer::map_host(bool read, bool write) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  if (!host_block_.ptr) host_block_ = pinned_cache().acquire(size_);
  // Write-only maps download too: the caller may write part of the buffer
  // and the rest must keep the device's contents.
  if (!host_valid_ && ever_written_) download_locked();
  // An upload from the mirror may still be in flight: let it finish before
  // the host writes into the mirror again.
  if (write) ready_.synchronize();
  (void)read;
  host_valid_ = true;
  return host_block_.ptr;
}

void MirroredBuffer::unmap_host(bool wrote) {
  if (!wrote) return;
  std::lock_guard<std::mutex> lock(mutex_);
  host_valid_ = true;
  device_valid_ = false;
  ever_written_ = true;
}

const void *MirroredBuffer::begin_device_read(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  if (!device_valid_) upload_host_locked();
  stream_wait(stream, ready_.get());
  return device_block_.ptr;
}

void MirroredBuffer::end_device_read(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  for (size_t i = 0; i < active_readers_; ++i) {
    if (readers_[i].stream == stream) {
      readers_[i].done.record(stream);
      return;
    }
  }
  if (active_readers_ == readers_.size())
    readers_.push_back(Reader{stream, DeviceResources::get(device_).take_event()});
  readers_[active_readers_].stream = stream;
  readers_[active_readers_++].done.record(stream);
}

void *MirroredBuffer::begin_device_write(StreamHandle stream, bool discard) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  if (!device_valid_ && !discard) upload_host_locked();
  wait_readers_locked(stream);
  stream_wait(stream, ready_.get());
  device_valid_ = true;
  host_valid_ = false;
  return device_block_.ptr;
}

void MirroredBuffer::end_device_write(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  ready_.record(stream);
  last_stream_ = stream;
  ever_written_ = true;
}

void *MirroredBuffer::map_device_blocking(bool write) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  if (!device_valid_) upload_host_locked();
  ready_.synchronize();
  if (write) {
    for (size_t i = 0; i < active_readers_; ++i) readers_[i].done.synchronize();
    active_readers_ = 0;
    host_valid_ = false;
  }
  return device_block_.ptr;
}

void MirroredBuffer::mark_device_written() {
  std::lock_guard<std::mutex> lock(mutex_);
  device_valid_ = true;
  host_valid_ = false;
  ever_written_ = true;
}

}  // namespace cs
