// An application built against the installed headers, libraries and pkg-config
// files only (tests/run-install-check.sh): it runs the installed plugins and
// reads their metas through the public API, as a user's program would.
//   consumer WORK_DIR   (WORK_DIR receives a small ENVI cube)
#include <gst/app/gstappsink.h>
#include <gst/cudasensing/cudasensing.h>
#include <gst/cudasensing/hsi/gsthsiblockmeta.h>
#include <gst/cudasensing/sar/gstsarpulsemeta.h>
#include <gst/cudasensing/sift/gstsiftfeatures-opencv.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// The first buffer that reaches `appsink name=out` at the end of `description` (a new reference), or NULL.
GstBuffer *first_buffer(const std::string &description) {
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (!pipeline) {
    std::printf("cannot build '%s': %s\n", description.c_str(), error ? error->message : "?");
    g_clear_error(&error);
    return nullptr;
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 60 * GST_SECOND);
  GstBuffer *buffer = sample ? gst_buffer_ref(gst_sample_get_buffer(sample)) : nullptr;
  if (sample) gst_sample_unref(sample);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  if (!buffer) std::printf("no buffer from '%s'\n", description.c_str());
  return buffer;
}

void sift_features() {
  GstBuffer *buffer = first_buffer(
      "videotestsrc pattern=smpte num-buffers=1 ! video/x-raw,format=GRAY8,width=320,height=240 ! sift ! "
      "appsink name=out");
  const GstSiftFeaturesMeta *meta = buffer ? gst_buffer_get_sift_features_meta(buffer) : nullptr;
  check(meta != nullptr, "sift: the frame carries a GstSiftFeaturesMeta");
  if (meta) {
    const std::vector<cv::KeyPoint> keypoints = gst_sift::keypoints(*meta);
    const cv::Mat descriptors = gst_sift::descriptors(*meta);
    check(meta->image_width == 320 && meta->image_height == 240, "sift: the meta's frame size");
    check(!keypoints.empty() && keypoints.size() == meta->count, "sift: keypoints as cv::KeyPoint");
    bool inside = true;
    for (const cv::KeyPoint &k : keypoints)
      inside = inside && k.pt.x >= 0 && k.pt.x < 320 && k.pt.y >= 0 && k.pt.y < 240;
    check(inside, "sift: every keypoint inside the frame");
    check(descriptors.rows == int(meta->count) && descriptors.cols == 128 && descriptors.type() == CV_8U,
          "sift: descriptors as a count x 128 CV_8U cv::Mat");
  }
  if (buffer) gst_buffer_unref(buffer);
}

void sar_pulses() {
  GstBuffer *buffer = first_buffer("sarsim num-pulses=16 ! appsink name=out");
  const GstSarPulseMeta *meta = buffer ? gst_buffer_get_sar_pulse_meta(buffer) : nullptr;
  check(meta != nullptr && meta->n_pulses > 0 && meta->first_pulse == 0, "sar: the block carries a GstSarPulseMeta");
  if (meta) {
    const double *p = meta->pulses[0].tx_pos;
    check(std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) > 6.3e6, "sar: TxPos is an ECF position");
  }
  if (buffer) gst_buffer_unref(buffer);
}

void hsi_blocks(const std::string &dir) {
  const std::string header = dir + "/cube.hdr";
  std::ofstream(header) << "ENVI\nsamples = 3\nlines = 4\nbands = 2\nheader offset = 0\ndata type = 4\n"
                           "interleave = bil\nbyte order = 0\n";
  const std::vector<float> samples(3 * 4 * 2, 0.25f);
  std::ofstream(dir + "/cube.img", std::ios::binary)
      .write(reinterpret_cast<const char *>(samples.data()), std::streamsize(samples.size() * sizeof(float)));
  GstBuffer *buffer = first_buffer("envisrc location=" + header + " lines-per-buffer=2 ! appsink name=out");
  const GstHsiBlockMeta *meta = buffer ? gst_buffer_get_hsi_block_meta(buffer) : nullptr;
  check(meta != nullptr && meta->first_line == 0 && meta->line_count == 2 && meta->scene_lines == 4,
        "hsi: the block carries a GstHsiBlockMeta (lines 0-1 of 4)");
  if (buffer) gst_buffer_unref(buffer);
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  if (argc != 2) {
    std::printf("usage: consumer WORK_DIR\n");
    return 2;
  }
  check(std::string(GST_CAPS_FEATURE_MEMORY_CS_DEVICE) == "memory:CudaSensing", "core: the device memory caps feature");
  std::printf("CUDA devices: %d%s%s\n", gst_cs_device_count(), gst_cs_device_count() ? "" : ", ",
              gst_cs_device_count() ? "" : gst_cs_no_device_reason());
  sift_features();
  sar_pulses();
  hsi_blocks(argv[1]);
  std::printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
