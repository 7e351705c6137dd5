// Which of run()'s three orders of a frame's kernels to use for a frame size.
//
// The orders launch the same kernels on the same streams and give the same
// results; they differ in where the extrema are found and in when octave
// 0's upper levels are made (CudaSift's enqueue_frame). Which is faster
// depends on the frame size and the GPU, because it depends on which
// branch of the frame is the critical path (H200, 2026-11-30, ms per frame,
// order 0 / 1: 640 x 480 0.205 / 0.220, 1280 x 720 0.324 / 0.340, 1920 x 1080
// 0.508 / 0.495, 3840 x 2160 1.405 / 1.398; order 2 on 2026-12-01: 640 x
// 480 and 1280 x 720 2-5 % faster than order 0, 1080p and 4K 0.3-0.8 %
// slower). So CudaSift::run() times each on the first frames of each size,
// in turn, and keeps the one with the lowest median (CS_SIFT_ORDER=0, 1 or
// 2 fixes one instead).
#pragma once

#include <algorithm>
#include <vector>

namespace cs::sift {

class FrameOrderTuner {
 public:
  static constexpr int kOrders = 3;
  // Frames timed per order before choosing, after one untimed frame each
  // (its graph was just made: caches and the graph's upload are cold). At
  // 1080p the orders differ by 0.5-3 % on an H200, about what eight
  // frames of a fresh engine resolve: 8 fresh engines chose order 1 three
  // times with 8 frames (mean frame 0.4045 ms), once with 24 (0.4021).
  static constexpr int kTimedFrames = 24;

  // A fixed order (0 .. kOrders - 1); -1 chooses by timing.
  explicit FrameOrderTuner(int fixed = -1) : fixed_(fixed) {}

  // A new frame size: everything timed so far is dropped.
  void reset() {
    for (std::vector<float> &t : times_) t.clear();
    for (int &w : warm_ups_) w = 0;
    turn_ = 0;
    chosen_ = -1;
  }
  // The order chosen (or fixed), -1 while the orders are still being timed.
  int chosen() const { return fixed_ >= 0 ? fixed_ : chosen_; }
  // The order of the next frame: the chosen one, else each in turn.
  int next() {
    if (chosen() >= 0) return chosen();
    const int order = turn_;
    turn_ = (turn_ + 1) % kOrders;
    return order;
  }
  // The GPU time of a frame in `order`, in the order the frames were run.
  void add(int order, float ms) {
    if (chosen() >= 0 || order < 0 || order >= kOrders) return;
    if (warm_ups_[order] == 0) {
      ++warm_ups_[order];
      return;
    }
    times_[order].push_back(ms);
    for (const std::vector<float> &t : times_)
      if (static_cast<int>(t.size()) < kTimedFrames) return;
    int best = 0;  // ties keep the lower order
    for (int o = 1; o < kOrders; ++o)
      if (median(times_[o]) < median(times_[best])) best = o;
    chosen_ = best;
  }

 private:
  static float median(std::vector<float> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  }
  int fixed_;
  int chosen_ = -1;
  int turn_ = 0;
  int warm_ups_[kOrders] = {};
  std::vector<float> times_[kOrders];
};

}  // namespace cs::sift
