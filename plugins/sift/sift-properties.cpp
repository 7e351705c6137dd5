#include "sift-properties.h"

#include <stdexcept>

#include <gst/gst.h>

namespace gstsift {

static GParamFlags flags() {
  return GParamFlags(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}

void install_engine_properties(GObjectClass *klass, guint id) {
  g_object_class_install_property(
      klass, id + 0,
      g_param_spec_int("n-features", "Number of features",
                       "Keep the n strongest keypoints by response (cv::SIFT nfeatures); 0 = all", 0, G_MAXINT, 0,
                       flags()));
  g_object_class_install_property(
      klass, id + 1,
      g_param_spec_int("n-octave-layers", "Octave layers",
                       "Scale layers per octave (cv::SIFT nOctaveLayers); octaves follow from the frame size", 1, 32,
                       3, flags()));
  g_object_class_install_property(
      klass, id + 2,
      g_param_spec_double("contrast-threshold", "Contrast threshold",
                          "Minimum DoG contrast of a keypoint, divided by n-octave-layers as OpenCV does (cv::SIFT "
                          "contrastThreshold; image values scaled to [0, 1])",
                          0.0, G_MAXDOUBLE, 0.04, flags()));
  g_object_class_install_property(
      klass, id + 3,
      g_param_spec_double("edge-threshold", "Edge threshold",
                          "Maximum ratio of principal curvatures r; keypoints with (r+1)^2/r or more in the "
                          "Hessian test are dropped as edges (cv::SIFT edgeThreshold)",
                          0.0, G_MAXDOUBLE, 10.0, flags()));
  g_object_class_install_property(
      klass, id + 4,
      g_param_spec_double("sigma", "Sigma",
                          "Gaussian sigma of the first octave's base image, in pixels of that octave (cv::SIFT "
                          "sigma); the input is assumed pre-blurred by 0.5",
                          0.01, 100.0, 1.6, flags()));
  g_object_class_install_property(
      klass, id + 5,
      g_param_spec_boolean("upsample", "Upsample",
                           "Double the image for the first octave (as OpenCV always does). Only the CUDA backend "
                           "can turn this off: upsample=false fails at start on the CPU backend (OpenCV)",
                           TRUE, flags()));
}

void install_output_properties(GObjectClass *klass, guint id) {
  g_object_class_install_property(
      klass, id + 0,
      g_param_spec_enum("descriptor-format", "Descriptor format",
                        "How descriptors are stored in the meta: opencv (128 bytes), float (128 float32, OpenCV's "
                        "default values) or rootsift (128 float32, L1-normalised square roots, unit L2)",
                        GST_TYPE_SIFT_DESCRIPTOR_FORMAT, GST_SIFT_DESCRIPTOR_OPENCV, flags()));
  g_object_class_install_property(
      klass, id + 1,
      g_param_spec_int("grid-cols", "Grid columns",
                       "Columns of the spatial grid filter (equal-width cells over the frame); 0 = no grid filter",
                       0, 4096, 0, flags()));
  g_object_class_install_property(
      klass, id + 2,
      g_param_spec_int("grid-rows", "Grid rows",
                       "Rows of the spatial grid filter (equal-height cells over the frame); 0 = no grid filter", 0,
                       4096, 0, flags()));
  g_object_class_install_property(
      klass, id + 3,
      g_param_spec_int("max-per-cell", "Maximum features per cell",
                       "Keep at most this many keypoints, the strongest by response, in each grid cell; 0 = no "
                       "grid filter. Applied after n-features",
                       0, G_MAXINT, 0, flags()));
  g_object_class_install_property(
      klass, id + 4,
      g_param_spec_boolean("custom-meta", "Custom meta",
                           "Also attach the features as a GstCustomMeta named GstSiftFeatures (a GstStructure whose "
                           "keypoints and descriptors are GBytes), which Python and other language bindings read "
                           "from an appsink's buffers",
                           FALSE, flags()));
  gst_type_mark_as_plugin_api(GST_TYPE_SIFT_DESCRIPTOR_FORMAT, GstPluginAPIFlags(0));
}

bool set_engine_property(EngineSettings &s, guint index, const GValue *value) {
  switch (index) {
    case 0: s.n_features = g_value_get_int(value); return true;
    case 1: s.n_octave_layers = g_value_get_int(value); return true;
    case 2: s.contrast_threshold = g_value_get_double(value); return true;
    case 3: s.edge_threshold = g_value_get_double(value); return true;
    case 4: s.sigma = g_value_get_double(value); return true;
    case 5: s.upsample = g_value_get_boolean(value); return true;
    default: return false;
  }
}

bool get_engine_property(const EngineSettings &s, guint index, GValue *value) {
  switch (index) {
    case 0: g_value_set_int(value, s.n_features); return true;
    case 1: g_value_set_int(value, s.n_octave_layers); return true;
    case 2: g_value_set_double(value, s.contrast_threshold); return true;
    case 3: g_value_set_double(value, s.edge_threshold); return true;
    case 4: g_value_set_double(value, s.sigma); return true;
    case 5: g_value_set_boolean(value, s.upsample); return true;
    default: return false;
  }
}

bool set_output_property(OutputSettings &s, guint index, const GValue *value) {
  switch (index) {
    case 0: s.descriptor_format = GstSiftDescriptorFormat(g_value_get_enum(value)); return true;
    case 1: s.grid_cols = g_value_get_int(value); return true;
    case 2: s.grid_rows = g_value_get_int(value); return true;
    case 3: s.max_per_cell = g_value_get_int(value); return true;
    case 4: s.custom_meta = g_value_get_boolean(value); return true;
    default: return false;
  }
}

bool get_output_property(const OutputSettings &s, guint index, GValue *value) {
  switch (index) {
    case 0: g_value_set_enum(value, s.descriptor_format); return true;
    case 1: g_value_set_int(value, s.grid_cols); return true;
    case 2: g_value_set_int(value, s.grid_rows); return true;
    case 3: g_value_set_int(value, s.max_per_cell); return true;
    case 4: g_value_set_boolean(value, s.custom_meta); return true;
    default: return false;
  }
}

cs::sift::Params engine_params(const EngineSettings &s) {
  cs::sift::Params p;
  p.n_features = s.n_features;
  p.n_octave_layers = s.n_octave_layers;
  p.contrast_threshold = s.contrast_threshold;
  p.edge_threshold = s.edge_threshold;
  p.sigma = s.sigma;
  p.upsample = s.upsample;
  return p;
}

std::string grid_filter_problem(const OutputSettings &s) {
  const int set = (s.grid_cols > 0) + (s.grid_rows > 0) + (s.max_per_cell > 0);
  if (set == 0 || set == 3) return "";
  return "grid-cols=" + std::to_string(s.grid_cols) + ", grid-rows=" + std::to_string(s.grid_rows) +
         ", max-per-cell=" + std::to_string(s.max_per_cell) +
         ": the grid filter needs all three set (or all 0 for no filter)";
}

void export_features(GstBuffer *frame, const OutputSettings &s) {
  if (!s.custom_meta) return;
  if (const GstSiftFeaturesMeta *meta = gst_buffer_get_sift_features_meta(frame))
    if (!gst_buffer_add_sift_features_custom_meta(frame, meta))
      throw std::runtime_error("cannot add the features' custom meta to the frame");
}

void init_video_filter(GstBaseTransform *trans) {
  gst_base_transform_set_in_place(trans, TRUE);
  gst_base_transform_set_qos_enabled(trans, TRUE);
}

}  // namespace gstsift
