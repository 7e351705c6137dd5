// A byte range split into pieces for several threads: large reads from the
// page cache (and the conversions after them), which one thread does at a
// fraction of what host memory and the link to the GPU carry.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "common/host_resources.h"

namespace cs {

// The default for reads that share the host with the rest of a pipeline.
inline int default_read_threads() { return half_the_cores(); }

// Calls body(begin, size) over [0, bytes) in at most `threads` pieces of at
// least `min_piece` bytes, every piece but the last a multiple of `unit`; one
// piece (the whole range when it is too small to split) on this thread.
// Every piece ends before an exception from any of them is rethrown.
template <class Body>
void for_each_piece(size_t bytes, size_t unit, int threads, size_t min_piece, Body &&body) {
  const size_t pieces = std::min(size_t(std::max(threads, 1)), bytes / std::max(min_piece, size_t(1)));
  if (pieces < 2) {
    body(size_t(0), bytes);
    return;
  }
  const size_t piece = bytes / unit / pieces * unit;
  std::vector<std::exception_ptr> failures(pieces);
  std::vector<std::thread> helpers;
  auto run = [&](size_t i) {
    const size_t begin = i * piece;
    try {
      body(begin, i + 1 == pieces ? bytes - begin : piece);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  };
  size_t started = 1;
  try {
    for (; started < pieces; ++started) helpers.emplace_back(run, started);
  } catch (const std::system_error &) {
    // No thread to be had (the process's limit): this thread reads the rest.
  }
  for (size_t i = started; i < pieces; ++i) run(i);
  run(0);
  for (std::thread &t : helpers) t.join();
  for (const std::exception_ptr &f : failures)
    if (f) std::rethrow_exception(f);
}

}  // namespace cs
