// What the SIFT elements take from and give to other GPU work: nvcodec's
// memory:CUDAMemory as input of sift and siftpyramid (offered only on the
// CUDA backend, in a build with gstreamer-cuda-1.0) and of siftoverlay
// (both backends), and siftmatch's CUDA
// matcher (the same matches as its CPU backend). CPU tests check the caps and
// the refusals without a device; Gpu* suites skip without one (and the
// nvcodec ones without nvcodec's cudaupload).
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#if CS_TEST_GSTCUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudautils.h>
#endif

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "test_sift_cuda_support.h"
#include "test_sift_support.h"

using namespace sift_test;

namespace {

constexpr const char *kNvcodecNv12 =
    "video/x-raw(memory:CUDAMemory), format=NV12, width=64, height=48, framerate=30/1";

// Whether this build of `factory` lists nvcodec's memory in its sink template.
bool template_offers_nvcodec_memory(const char *factory_name) {
  GstElementFactory *factory = gst_element_factory_find(factory_name);
  if (!factory) return false;
  bool offered = false;
  for (const GList *l = gst_element_factory_get_static_pad_templates(factory); l; l = l->next) {
    auto *templ = static_cast<GstStaticPadTemplate *>(l->data);
    if (templ->direction != GST_PAD_SINK) continue;
    GstCaps *caps = gst_static_caps_get(&templ->static_caps);
    for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
      GstCapsFeatures *features = gst_caps_get_features(caps, i);
      offered = offered || (features && gst_caps_features_contains(features, "memory:CUDAMemory"));
    }
    gst_caps_unref(caps);
  }
  gst_object_unref(factory);
  return offered;
}

// Why `element` cannot be tested on nvcodec's memory here ("" when it can).
std::string nvcodec_untestable(const char *element) {
  if (!template_offers_nvcodec_memory(element)) return "built without gstreamer-cuda-1.0";
  GstElementFactory *upload = gst_element_factory_find("cudaupload");
  if (!upload) return "nvcodec's cudaupload is missing (gst-plugins-bad's nvcodec plugin)";
  gst_object_unref(upload);
  return "";
}

// The test formats cudaupload gives in nvcodec's memory (a line for each it does not).
std::vector<GstVideoFormat> nvcodec_formats() {
  std::vector<GstVideoFormat> out;
  GstElementFactory *upload = gst_element_factory_find("cudaupload");
  // What NVDEC decoders give (8-bit, 10-bit and 4:4:4 streams) and cudaupload's packed RGB.
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_P010_10LE, GST_VIDEO_FORMAT_P016_LE,
                                GST_VIDEO_FORMAT_Y444, GST_VIDEO_FORMAT_Y444_16LE, GST_VIDEO_FORMAT_I420,
                                GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_BGRx}) {
    const std::string name = gst_video_format_to_string(format);
    GstCaps *wanted = gst_caps_from_string(("video/x-raw(memory:CUDAMemory), format=" + name).c_str());
    if (gst_element_factory_can_src_any_caps(upload, wanted))
      out.push_back(format);
    else
      std::printf("cudaupload does not output %s: not tested\n", name.c_str());
    gst_caps_unref(wanted);
  }
  gst_object_unref(upload);
  return out;
}

// Gives nvcodec's elements in `pipeline` a CUDA context of their own (a new
// one on device 0), as they make when no neighbour offers one: our kernels
// may not touch their memory then, so our elements copy it.
void give_nvcodec_its_own_context(GstElement *pipeline) {
#if CS_TEST_GSTCUDA
  ASSERT_TRUE(gst_cuda_load_library());
  GstCudaContext *own = gst_cuda_context_new(0);
  ASSERT_NE(own, nullptr);
  GstContext *context = gst_context_new_cuda_context(own);
  gst_element_set_context(pipeline, context);
  gst_context_unref(context);
  gst_object_unref(own);
#else
  (void)pipeline;
  ADD_FAILURE() << "this test build has no gstreamer-cuda-1.0";
#endif
}

// Makes the pipeline's streaming threads new ones (GStreamer's task pool
// reuses idle threads): as in a process's first pipeline, no CUDA call has
// made our context current on them.
void on_fresh_threads(GstElement *) { g_thread_pool_stop_unused_threads(); }

// The messages of the debug categories `categories` (INFO and above) while
// it lives: how the elements say they read nvcodec's memory.
class CapturedLog {
 public:
  explicit CapturedLog(std::vector<std::string> categories) : categories_(std::move(categories)) {
    for (const std::string &c : categories_) gst_debug_set_threshold_for_name(c.c_str(), GST_LEVEL_INFO);
    gst_debug_add_log_function(&CapturedLog::add, this, nullptr);
  }
  ~CapturedLog() {
    gst_debug_remove_log_function_by_data(this);
    for (const std::string &c : categories_) gst_debug_unset_threshold_for_name(c.c_str());
  }
  CapturedLog(const CapturedLog &) = delete;
  CapturedLog &operator=(const CapturedLog &) = delete;

  // What was logged since the last take().
  std::string take() {
    std::lock_guard<std::mutex> lock(lock_);
    return std::exchange(text_, std::string());
  }

 private:
  static void add(GstDebugCategory *category, GstDebugLevel level, const gchar *, const gchar *, gint, GObject *,
                  GstDebugMessage *message, gpointer data) {
    auto *self = static_cast<CapturedLog *>(data);
    if (level > GST_LEVEL_INFO) return;
    const std::string name = gst_debug_category_get_name(category);
    if (std::find(self->categories_.begin(), self->categories_.end(), name) == self->categories_.end()) return;
    std::lock_guard<std::mutex> lock(self->lock_);
    self->text_ += name + ": " + gst_debug_message_get(message) + "\n";
  }
  const std::vector<std::string> categories_;
  std::mutex lock_;
  std::string text_;
};

// A frame rotated by `degrees` about its centre (reflected borders).
cv::Mat rotated(const cv::Mat &image, double degrees) {
  cv::Mat out;
  const cv::Mat a = cv::getRotationMatrix2D(cv::Point2f(image.cols / 2.f, image.rows / 2.f), degrees, 1.0);
  cv::warpAffine(image, out, a, image.size(), cv::INTER_LINEAR, cv::BORDER_REFLECT);
  return out;
}

// The matches meta of each frame of "appsrc ! sift backend=cpu ! <matcher> ! appsink".
std::vector<std::vector<GstSiftMatch>> run_matches(const std::string &matcher, const std::string &sift_options,
                                                   const std::vector<cv::Mat> &frames) {
  std::vector<GstBuffer *> buffers;
  for (const cv::Mat &f : frames) buffers.push_back(make_frame(f, GST_VIDEO_FORMAT_GRAY8));
  RunResult r = run("sift backend=cpu " + sift_options + " ! " + matcher,
                    frame_caps(GST_VIDEO_FORMAT_GRAY8, frames[0].cols, frames[0].rows), buffers);
  EXPECT_EQ(r.error, "") << matcher << ": " << r.everything();
  std::vector<std::vector<GstSiftMatch>> out;
  for (GstBuffer *b : r.buffers) {
    const GstSiftMatchesMeta *m = gst_buffer_get_sift_matches_meta(b);
    EXPECT_NE(m, nullptr) << matcher << ": a frame without a matches meta";
    if (m) out.emplace_back(m->matches, m->matches + m->count);
  }
  return out;
}

// ---------------------------------------------------------- CPU tests

TEST(SiftNvcodecInput, CapsAreOfferedOnlyOnTheCudaBackend) {
  if (!template_offers_nvcodec_memory("sift")) {
    // A build without gstreamer-cuda-1.0: nothing offers nvcodec's memory.
    EXPECT_FALSE(accepts("sift", kNvcodecNv12, "backend", 1));
    EXPECT_FALSE(template_offers_nvcodec_memory("siftpyramid"));
    GTEST_SKIP() << "built without gstreamer-cuda-1.0: memory:CUDAMemory is not offered";
  }
  EXPECT_TRUE(template_offers_nvcodec_memory("siftpyramid"));
  EXPECT_FALSE(accepts("sift", kNvcodecNv12, "backend", 2));  // cpu: it would download every frame
  EXPECT_TRUE(accepts("sift", kNvcodecNv12, "backend", 1));   // cuda
  EXPECT_EQ(accepts("sift", kNvcodecNv12), cs::device_count() > 0) << "auto: CUDA only with a device";
  EXPECT_TRUE(accepts("siftpyramid", kNvcodecNv12));
  for (const char *stage : {"siftdetect", "siftdescribe"}) EXPECT_TRUE(accepts(stage, kNvcodecNv12)) << stage;
}

TEST(SiftNvcodecInput, WithoutADeviceItIsRefusedClearly) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: GpuSiftNvcodecInput runs the input";
  if (!template_offers_nvcodec_memory("sift")) GTEST_SKIP() << "built without gstreamer-cuda-1.0";
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  {
    // backend=cuda fails at the state change, naming the missing device.
    RunResult r = run("sift backend=cuda", gst_caps_from_string(kNvcodecNv12),
                      {make_frame(bgr, GST_VIDEO_FORMAT_NV12)});
    EXPECT_NE(r.error.find("no CUDA device"), std::string::npos) << r.everything();
  }
  for (const char *launch : {"sift", "sift backend=cpu"}) {
    // auto (no device: CPU) and cpu refuse the caps: negotiation fails.
    RunResult r = run(launch, gst_caps_from_string(kNvcodecNv12), {make_frame(bgr, GST_VIDEO_FORMAT_NV12)});
    EXPECT_NE(r.everything().find("not-negotiated"), std::string::npos) << launch << ": " << r.everything();
  }
}

TEST(SiftMatchBackend, HasTheBackendProperties) {
  GstElement *e = gst_element_factory_make("siftmatch", nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(g_object_class_find_property(G_OBJECT_GET_CLASS(e), "backend"), nullptr);
  EXPECT_NE(g_object_class_find_property(G_OBJECT_GET_CLASS(e), "device-id"), nullptr);
  gst_object_unref(e);
}

TEST(SiftMatchBackend, CudaWithoutADeviceFailsClearly) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: GpuSiftMatchElement runs the matcher";
  const cv::Mat bgr = textured_bgr(64, 48, 1);
  RunResult r = run("sift backend=cpu ! siftmatch backend=cuda", frame_caps(GST_VIDEO_FORMAT_GRAY8, 64, 48),
                    {make_frame(bgr, GST_VIDEO_FORMAT_GRAY8)});
  EXPECT_NE(r.error.find("no CUDA device"), std::string::npos) << r.everything();
}

// ---------------------------------------------------------- GPU tests

// nvcodec's frames in our CUDA context (cudaupload takes the one sift offers)
// are read in place by sift; in a context of nvcodec's own, and by
// siftpyramid (whose frames leave before their pyramid is built), plane 0
// is copied on the device. Every way gives the features of system memory.
TEST(GpuSiftNvcodecInput, CudaUploadedFramesGiveTheFeaturesOfSystemMemory) {
  CS_REQUIRE_GPU();
  if (const std::string why = nvcodec_untestable("sift"); !why.empty()) GTEST_SKIP() << why;
  const cv::Mat bgr = textured_bgr(318, 240, cs_test::fresh_seed());  // 318: rows pitched by nvcodec
  CapturedLog log({"siftcuda"});
  for (GstVideoFormat format : nvcodec_formats()) {
    const std::string name = gst_video_format_to_string(format);
    SCOPED_TRACE(name);
    const Features system = run_one("sift backend=cuda", format, bgr);
    ASSERT_GT(system.keypoints.size(), 100u);
    log.take();
    const std::string nvcodec = "cudaupload ! video/x-raw(memory:CUDAMemory),format=" + name;
    expect_same_keypoints(run_one(nvcodec + " ! sift backend=cuda", format, bgr, on_fresh_threads), system);
    std::string said = log.take();
    EXPECT_NE(said.find("read in place (our CUDA context)"), std::string::npos) << said;
    EXPECT_EQ(said.find("copied"), std::string::npos) << said;
    expect_same_keypoints(run_one(nvcodec + " ! sift backend=cuda", format, bgr, give_nvcodec_its_own_context),
                          system);
    said = log.take();
    EXPECT_NE(said.find("plane 0 copied on the device (another CUDA context)"), std::string::npos) << said;
    expect_same_keypoints(run_one(nvcodec + " ! siftpyramid ! siftdetect ! siftdescribe", format, bgr), system);
    said = log.take();
    EXPECT_NE(said.find("plane 0 copied on the device (the frame leaves first)"), std::string::npos) << said;
  }
}

// nvcodec's pool recycles memory: each frame's features must be its own,
// with frames read in place and held (sift, three in flight) and copied
// (the stages, through queues).
TEST(GpuSiftNvcodecInput, ManyFramesThroughAQueueKeepTheirOwnFeatures) {
  CS_REQUIRE_GPU();
  if (const std::string why = nvcodec_untestable("sift"); !why.empty()) GTEST_SKIP() << why;
  std::vector<cv::Mat> images;
  const uint32_t seed = cs_test::fresh_seed();
  for (uint32_t i = 0; i < 8; ++i) images.push_back(textured_bgr(320, 240, seed + i));
  const std::vector<Features> system = run_features("sift backend=cuda", GST_VIDEO_FORMAT_NV12, images);
  ASSERT_EQ(system.size(), images.size());
  for (const char *middle : {"queue ! sift backend=cuda frames-in-flight=3 ! queue",
                             "queue ! siftpyramid ! queue ! siftdetect ! siftdescribe ! queue"}) {
    SCOPED_TRACE(middle);
    const std::vector<Features> nvcodec = run_features(
        std::string("cudaupload ! video/x-raw(memory:CUDAMemory),format=NV12 ! ") + middle, GST_VIDEO_FORMAT_NV12,
        images);
    ASSERT_EQ(nvcodec.size(), images.size());
    for (size_t i = 0; i < images.size(); ++i) {
      SCOPED_TRACE("frame " + std::to_string(i));
      expect_same_keypoints(nvcodec[i], system[i]);
    }
  }
}

// siftoverlay on nvcodec's memory: on the CUDA backend drawn on the device
// (in place in our context, through a copy in ours from nvcodec's own) and
// left in nvcodec's memory, so that
// decode -> sift -> siftoverlay -> encode stays there; on the CPU backend
// drawn by OpenCV through a CPU mapping. Both against the same keypoints
// drawn by OpenCV into a system frame.
TEST(GpuSiftNvcodecInput, OverlayDrawsIntoNvcodecMemory) {
  CS_REQUIRE_GPU();
  if (const std::string why = nvcodec_untestable("siftoverlay"); !why.empty()) GTEST_SKIP() << why;
  const cv::Mat bgr = textured_bgr(318, 240, cs_test::fresh_seed());  // 318: rows pitched by nvcodec
  std::vector<GstVideoFormat> formats;
  const std::vector<GstVideoFormat> drawable = offered_formats("siftoverlay", "memory:CUDAMemory");
  for (GstVideoFormat format : nvcodec_formats())
    if (std::find(drawable.begin(), drawable.end(), format) != drawable.end()) formats.push_back(format);
  EXPECT_FALSE(formats.empty()) << "cudaupload gave none of the formats";
  CapturedLog log({"siftoverlay"});
  for (GstVideoFormat format : formats) {
    const std::string name = gst_video_format_to_string(format);
    SCOPED_TRACE(name);
    auto drawn = [&](const std::string &middle) { return overlay_changes(middle, format, bgr); };
    const std::string marks = "cudaupload ! video/x-raw(memory:CUDAMemory),format=" + name +
                              " ! sift backend=cuda ! siftoverlay color=0xff00ff backend=";
    const std::string to_system = " ! cudadownload ! video/x-raw";
    const std::vector<cv::Mat> reference = drawn("sift backend=cuda ! siftoverlay backend=cpu color=0xff00ff");
    log.take();
    expect_drawn_alike(reference, overlay_changes(marks + "cuda" + to_system, format, bgr, on_fresh_threads),
                       drawn(marks + "cpu" + to_system));
    std::string said = log.take();
    EXPECT_NE(said.find("drawn in place (our CUDA context)"), std::string::npos) << said;
    EXPECT_EQ(said.find("drawn in a copy"), std::string::npos) << said;
    expect_drawn_alike(reference, overlay_changes(marks + "cuda" + to_system, format, bgr, give_nvcodec_its_own_context),
                       drawn(marks + "cpu" + to_system));
    said = log.take();
    EXPECT_NE(said.find("drawn in a copy (another CUDA context)"), std::string::npos) << said;
  }
}

TEST(GpuSiftNvcodecInput, OverlayOnOneBranchOfATeeLeavesTheOtherAlone) {
  CS_REQUIRE_GPU();
  if (const std::string why = nvcodec_untestable("siftoverlay"); !why.empty()) GTEST_SKIP() << why;
  expect_other_tee_branch_undrawn("cudaupload ! video/x-raw(memory:CUDAMemory),format=BGRx",
                                  "cudadownload ! video/x-raw");
}

// sift, siftpyramid and siftoverlay on the CUDA backend answer nvcodec's
// question for a CUDA context (a decoder's or cudaupload's, before they make
// their own) with their device's, so that nvcodec allocates its frames in
// the context our kernels run in; on the CPU backend they leave it
// unanswered. Decoders ask when they open, before any element has started:
// the question is answered in every state.
TEST(GpuSiftNvcodecInput, ElementsOfferTheirCudaContext) {
  CS_REQUIRE_GPU();
  if (const std::string why = nvcodec_untestable("sift"); !why.empty()) GTEST_SKIP() << why;
  for (const char *element : {"sift backend=cuda", "siftpyramid", "siftoverlay backend=cuda", "sift",
                              "sift backend=cpu", "siftoverlay backend=cpu"}) {
    SCOPED_TRACE(element);
    const bool cuda = std::string(element).find("cpu") == std::string::npos;
    GstHarness *h = gst_harness_new_parse(element);
    for (const char *state : {"not started", "playing"}) {
      SCOPED_TRACE(state);
      if (std::string(state) == "playing") gst_harness_play(h);
      GstQuery *query = gst_query_new_context("gst.cuda.context");
      EXPECT_EQ(bool(gst_pad_peer_query(h->srcpad, query)), cuda);
      GstContext *context = nullptr;
      gst_query_parse_context(query, &context);
      if (cuda) {
        ASSERT_NE(context, nullptr);
        EXPECT_STREQ(gst_context_get_context_type(context), "gst.cuda.context");
        guint device = 99;
        EXPECT_TRUE(gst_structure_get_uint(gst_context_get_structure(context), "cuda-device-id", &device));
        EXPECT_EQ(device, 0u);
      }
      gst_query_unref(query);
    }
    gst_harness_teardown(h);
  }
}

TEST(GpuSiftMatchElement, CudaBackendGivesTheCpuBackendsMatches) {
  CS_REQUIRE_GPU();
  const cv::Mat first = textured_bgr(320, 240, cs_test::fresh_seed());
  const std::vector<cv::Mat> frames = {first, rotated(first, 8.0), rotated(first, -15.0)};
  // Every format runs on the device. Byte descriptors give OpenCV's matches
  // exactly; float ones (float, RootSIFT) may differ where a ratio lies within
  // float rounding of the threshold, their distances in the last bits.
  for (const std::string sift_options : {"", "descriptor-format=float", "descriptor-format=rootsift"})
    for (const std::string options : {"", "mutual-check=true", "ratio=0.6"}) {
      SCOPED_TRACE("sift " + sift_options + " ! siftmatch " + options);
      CapturedLog log({"siftmatch"});
      const auto cpu = run_matches("siftmatch backend=cpu " + options, sift_options, frames);
      const auto cuda = run_matches("siftmatch backend=cuda " + options, sift_options, frames);
      EXPECT_EQ(log.take().find("matched on the CPU"), std::string::npos) << "the CUDA backend fell back";
      ASSERT_EQ(cpu.size(), frames.size());
      ASSERT_EQ(cuda.size(), frames.size());
      EXPECT_GT(cpu[1].size(), 50u) << "the rotated frame should match its predecessor";
      const bool exact = sift_options.empty();
      for (size_t f = 0; f < frames.size(); ++f) {
        std::map<guint32, GstSiftMatch> on_cpu, on_cuda;
        for (const GstSiftMatch &m : cpu[f]) on_cpu[m.query_index] = m;
        for (const GstSiftMatch &m : cuda[f]) on_cuda[m.query_index] = m;
        size_t differing = 0;
        for (const auto &[q, m] : on_cpu) {
          const auto other = on_cuda.find(q);
          if (other == on_cuda.end() || other->second.train_index != m.train_index) {
            ++differing;
          } else if (exact) {
            EXPECT_EQ(other->second.distance, m.distance) << "frame " << f << ", query " << q;
          } else {
            EXPECT_NEAR(other->second.distance, m.distance, 1e-5 * m.distance) << "frame " << f << ", query " << q;
          }
        }
        for (const auto &[q, m] : on_cuda) differing += on_cpu.count(q) ? 0 : 1;
        if (exact)
          EXPECT_EQ(differing, 0u) << "frame " << f;
        else
          EXPECT_LE(differing, 2u + on_cpu.size() / 100) << "frame " << f << ": " << on_cuda.size() << " vs "
                                                           << on_cpu.size();
      }
    }
}

}  // namespace
