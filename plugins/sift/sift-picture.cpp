#include "sift-picture.h"

#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <memory>
#include <stdexcept>

#include "sift-formats.h"
#include "sift-frames.h"

namespace gstsift {

namespace {

struct PipelineDeleter {
  void operator()(GstElement *pipeline) const {
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
  }
};
using Pipeline = std::unique_ptr<GstElement, PipelineDeleter>;

// Waits for the pipeline's first frame (ASYNC_DONE: prerolled) or for why
// there is none (an error, or the end of a stream with no frame).
void wait_for_preroll(GstElement *pipeline) {
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *message = gst_bus_timed_pop_filtered(
      bus, 30 * GST_SECOND, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_EOS | GST_MESSAGE_ASYNC_DONE));
  gst_object_unref(bus);
  if (!message) throw std::runtime_error("no frame decoded within 30 s");
  const GstMessageType type = GST_MESSAGE_TYPE(message);
  std::string why = "no frame in the stream";
  if (type == GST_MESSAGE_ERROR) {
    GError *error = nullptr;
    gst_message_parse_error(message, &error, nullptr);
    why = error ? error->message : "an error";
    g_clear_error(&error);
  }
  gst_message_unref(message);
  if (type != GST_MESSAGE_ASYNC_DONE) throw std::runtime_error(why);
}

}  // namespace

cv::Mat picture_luma(const std::string &path) {
  // videoconvert only when the decoder's format is not one sift reads; no
  // dithering, so 16-bit samples keep their 8 most significant bits.
  GError *error = nullptr;
  Pipeline pipeline(gst_parse_launch("filesrc name=file ! decodebin ! videoconvert dither=none ! "
                                     "video/x-raw,format=" SIFT_FORMATS " ! appsink name=frames",
                                     &error));
  if (!pipeline || error) {
    const std::string why = error ? error->message : "no pipeline";
    g_clear_error(&error);
    throw std::runtime_error("cannot build a decoding pipeline: " + why);
  }
  GstElement *file = gst_bin_get_by_name(GST_BIN(pipeline.get()), "file");
  g_object_set(file, "location", path.c_str(), nullptr);
  gst_object_unref(file);
  try {
    if (gst_element_set_state(pipeline.get(), GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE)
      throw std::runtime_error("the decoding pipeline does not start");
    wait_for_preroll(pipeline.get());
  } catch (const std::runtime_error &e) {
    throw std::runtime_error(std::string("not a picture that GStreamer decodes (") + e.what() + ")");
  }
  GstElement *frames = gst_bin_get_by_name(GST_BIN(pipeline.get()), "frames");
  GstSample *sample = gst_app_sink_try_pull_preroll(GST_APP_SINK(frames), 0);
  gst_object_unref(frames);
  if (!sample) throw std::runtime_error("not a picture that GStreamer decodes (no frame)");
  GstVideoInfo info;
  GstVideoFrame frame;
  const bool mapped = gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) &&
                      gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ);
  if (!mapped) {
    gst_sample_unref(sample);
    throw std::runtime_error("cannot read the decoded picture");
  }
  cv::Mat luma = frame_luma(frame).clone();  // the view, if any, ends with the mapping
  gst_video_frame_unmap(&frame);
  gst_sample_unref(sample);
  return luma;
}

}  // namespace gstsift
