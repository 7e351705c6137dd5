#include "sar-enums.h"

#define DEFINE_ENUM(func, name, ...)                                                              \
  GType func(void) {                                                                             \
    static GType type = 0;                                                                       \
    static const GEnumValue values[] = {__VA_ARGS__, {0, nullptr, nullptr}};                     \
    if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static(name, values)); \
    return type;                                                                                 \
  }

DEFINE_ENUM(gst_sar_domain_get_type, "GstSarDomain",
            {GST_SAR_DOMAIN_TIME, "Time domain: raw fast-time samples of the linear-FM chirp (CPHD TOA)", "time"},
            {GST_SAR_DOMAIN_FREQUENCY, "Frequency domain: deramped frequency samples (CPHD FX)", "frequency"})
DEFINE_ENUM(gst_sar_sample_format_get_type, "GstSarSampleFormat",
            {GST_SAR_SAMPLE_FORMAT_CF32, "Complex float32 pairs", "cf32"},
            {GST_SAR_SAMPLE_FORMAT_CI16, "Complex int16 pairs, scaled by each pulse's AmpSF", "ci16"})
DEFINE_ENUM(gst_sar_collection_get_type, "GstSarCollection",
            {GST_SAR_COLLECTION_SPOTLIGHT, "Spotlight: the beam stays on the scene centre", "spotlight"},
            {GST_SAR_COLLECTION_STRIPMAP, "Stripmap: the beam points broadside and sweeps the scene", "stripmap"})
DEFINE_ENUM(gst_sar_window_get_type, "GstSarWindow",
            {GST_SAR_WINDOW_NONE, "None (rectangular): -13.26 dB sidelobes, 0.886 c/2B", "none"},
            {GST_SAR_WINDOW_HAMMING, "Hamming: -42.6 dB sidelobes, 1.30 c/2B", "hamming"},
            {GST_SAR_WINDOW_HANN, "Hann: -31.5 dB sidelobes, 1.44 c/2B", "hann"},
            {GST_SAR_WINDOW_TAYLOR, "Taylor (taylor-nbar, taylor-sll)", "taylor"},
            {GST_SAR_WINDOW_KAISER, "Kaiser (kaiser-beta)", "kaiser"})
