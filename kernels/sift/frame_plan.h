// Which of run()'s frame plans to use for a frame size.
//
// A plan is one of three frame orders and one of two starts of the small
// octaves' cluster. The orders launch the same kernels on the same streams
// and give the same results; they differ in where the extrema are found and
// in when octave 0's upper levels are made (CudaSift's enqueue_frame). The
// cluster (small_octaves_kernel) builds every octave from its start on in
// one launch; starting it one octave later builds that octave level by level
// on the chain instead, bit for bit the same levels. Which plan is fastest
// depends on the frame size and the GPU, because it depends on which branch
// of the frame is the critical path (H200, 2026-11-30, ms per frame, order 0
// / 1: 640 x 480 0.205 / 0.220, 1280 x 720 0.324 / 0.340, 1920 x 1080 0.508
// / 0.495, 3840 x 2160 1.405 / 1.398; order 2 on 2026-12-01: 640 x 480 and
// 1280 x 720 2-5 % faster than order 0, 1080p and 4K 0.3-0.8 % slower; the
// cluster one octave later: 1080p 0.9 % faster, 4K 0.4 % slower). So
// CudaSift::run() times each on the first frames of each size, in turn, and
// keeps the one with the lowest median (CS_SIFT_ORDER=0, 1 or 2 fixes the
// order, CS_SIFT_CLUSTER_START=0 or 1 the start).
#pragma once

#include <algorithm>
#include <vector>

namespace cs::sift {

struct FramePlan {
  int order = 0;          // 0, 1 or 2: enqueue_frame
  int cluster_start = 0;  // 0: the cluster from the first small octave on; 1: from one octave later
};

class FramePlanTuner {
 public:
  static constexpr int kOrders = 3;
  static constexpr int kClusterStarts = 2;
  static constexpr int kPlans = kOrders * kClusterStarts;
  // Frames timed per plan before choosing, after one untimed frame each
  // (its graph was just made: caches and the graph's upload are cold). At
  // 1080p the orders differ by 0.5-3 % on an H200, about what eight
  // frames of a fresh engine resolve: 8 fresh engines chose order 1 three
  // times with 8 frames (mean frame 0.4045 ms), once with 24 (0.4021).
  static constexpr int kTimedFrames = 24;

  // Plans are numbered 0 .. kPlans - 1, the orders of the first start,
  // then those of the second.
  static constexpr int index(FramePlan p) { return p.cluster_start * kOrders + p.order; }
  static constexpr FramePlan plan(int index) { return {index % kOrders, index / kOrders}; }

  // A fixed order and cluster start (-1: chosen by timing).
  explicit FramePlanTuner(int fixed_order = -1, int fixed_cluster_start = -1)
      : fixed_order_(fixed_order), fixed_start_(fixed_cluster_start) {
    reset(1);
  }

  // A new frame size, whose cluster can start in `cluster_starts` (1 or 2)
  // places: everything timed so far is dropped. With one plan left to
  // time, it is chosen at once.
  void reset(int cluster_starts) {
    candidates_.clear();
    for (int p = 0; p < kPlans; ++p) {
      const FramePlan f = plan(p);
      const bool order_ok = fixed_order_ < 0 || f.order == fixed_order_;
      const bool start_ok = fixed_start_ < 0 ? f.cluster_start < cluster_starts
                                             : f.cluster_start == std::min(fixed_start_, cluster_starts - 1);
      if (order_ok && start_ok) candidates_.push_back(p);
    }
    for (std::vector<float> &t : times_) t.clear();
    for (int &w : warm_ups_) w = 0;
    turn_ = 0;
    chosen_ = candidates_.size() == 1 ? candidates_[0] : -1;
  }
  // The plan chosen, -1 while the plans are still being timed.
  int chosen() const { return chosen_; }
  // The fixed order, else the chosen plan's, else -1.
  int order() const { return fixed_order_ >= 0 ? fixed_order_ : chosen_ >= 0 ? plan(chosen_).order : -1; }
  // The plan of the next frame: the chosen one, else each in turn.
  int next() {
    if (chosen_ >= 0) return chosen_;
    const int p = candidates_[static_cast<size_t>(turn_)];
    turn_ = (turn_ + 1) % static_cast<int>(candidates_.size());
    return p;
  }
  // The GPU time of a frame in plan `p`, in the order the frames were run.
  void add(int p, float ms) {
    if (chosen_ >= 0 || std::find(candidates_.begin(), candidates_.end(), p) == candidates_.end()) return;
    if (warm_ups_[p] == 0) {
      ++warm_ups_[p];
      return;
    }
    times_[p].push_back(ms);
    for (const int c : candidates_)
      if (static_cast<int>(times_[c].size()) < kTimedFrames) return;
    int best = candidates_[0];  // ties keep the earlier plan
    for (const int c : candidates_)
      if (median(times_[c]) < median(times_[best])) best = c;
    chosen_ = best;
  }

 private:
  static float median(std::vector<float> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  }
  int fixed_order_, fixed_start_;
  std::vector<int> candidates_;  // the plans timed for this size, in turn
  int chosen_ = -1;
  int turn_ = 0;
  int warm_ups_[kPlans] = {};
  std::vector<float> times_[kPlans];
};

}  // namespace cs::sift
