// The properties that sift shares with its stages, defined once: the
// engine's (n-features .. upsample: sift and siftpyramid) and the output's
// (descriptor-format and the grid filter: sift and siftdescribe). Each
// element stores them in a settings struct under its object lock.
#pragma once

#include <glib-object.h>
#include <gst/base/gstbasetransform.h>

#include <string>

#include "gst/cudasensing/sift/gstsiftfeaturesmeta.h"
#include "sift/sift_cuda.h"

namespace gstsift {

struct EngineSettings {
  int n_features = 0, n_octave_layers = 3;
  double contrast_threshold = 0.04, edge_threshold = 10.0, sigma = 1.6;
  gboolean upsample = TRUE;
};

struct OutputSettings {
  GstSiftDescriptorFormat descriptor_format = GST_SIFT_DESCRIPTOR_OPENCV;
  int grid_cols = 0, grid_rows = 0, max_per_cell = 0;
  gboolean custom_meta = FALSE;  // also attach the features as a GstCustomMeta
};

constexpr guint kEnginePropertyCount = 6;  // n-features, n-octave-layers, contrast-threshold, edge-threshold, sigma, upsample
constexpr guint kOutputPropertyCount = 5;  // descriptor-format, grid-cols, grid-rows, max-per-cell, custom-meta

// Installs the properties with ids first_id, first_id + 1, ...
void install_engine_properties(GObjectClass *klass, guint first_id);
void install_output_properties(GObjectClass *klass, guint first_id);

// Property `index` (prop_id - first_id); false when the index is not theirs.
bool set_engine_property(EngineSettings &s, guint index, const GValue *value);
bool get_engine_property(const EngineSettings &s, guint index, GValue *value);
bool set_output_property(OutputSettings &s, guint index, const GValue *value);
bool get_output_property(const OutputSettings &s, guint index, GValue *value);

cs::sift::Params engine_params(const EngineSettings &s);

// Why the grid filter settings cannot be used ("" when they can): the filter
// needs grid-cols, grid-rows and max-per-cell all set, or none (off).
std::string grid_filter_problem(const OutputSettings &s);

// With `custom-meta` set, adds the frame's features once more as the
// GstCustomMeta that language bindings read (gstsiftfeaturesmeta.h).
void export_features(GstBuffer *frame, const OutputSettings &s);

// Every SIFT element works on video frames in place and, like GStreamer's
// video filters, handles QoS by default (`qos`): a frame that a synchronised
// sink reports late is dropped before any work is spent on it, so a display
// pipeline keeps up with its source when the backend cannot.
void init_video_filter(GstBaseTransform *trans);

}  // namespace gstsift
