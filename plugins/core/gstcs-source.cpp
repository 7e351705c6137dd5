// Queries and seeks in a file source's own unit (gstcs-cxx.h).
#include <algorithm>

#include "gstcs-cxx.h"

namespace gstcs {

static bool convert_units(const SourceUnits &units, GstFormat from, gint64 value, GstFormat to, gint64 *out) {
  if (from == to) {
    *out = value;
    return true;
  }
  if (value < 0) return false;
  if (from == GST_FORMAT_DEFAULT && to == GST_FORMAT_TIME)
    return units.to_time && units.to_time(std::min(value, units.total), out);
  if (from == GST_FORMAT_TIME && to == GST_FORMAT_DEFAULT) return units.to_unit && units.to_unit(value, out);
  return false;
}

bool answer_unit_query(GstQuery *query, const SourceUnits &units) {
  GstFormat format = GST_FORMAT_UNDEFINED;
  gint64 value = 0;
  switch (GST_QUERY_TYPE(query)) {
    case GST_QUERY_DURATION:
      gst_query_parse_duration(query, &format, nullptr);
      if (!convert_units(units, GST_FORMAT_DEFAULT, units.total, format, &value)) return false;
      gst_query_set_duration(query, format, value);
      return true;
    case GST_QUERY_POSITION:
      gst_query_parse_position(query, &format, nullptr);
      if (format != GST_FORMAT_DEFAULT) return false;
      gst_query_set_position(query, format, units.position);
      return true;
    case GST_QUERY_SEEKING: {
      gst_query_parse_seeking(query, &format, nullptr, nullptr, nullptr);
      if (format != GST_FORMAT_DEFAULT && format != GST_FORMAT_TIME) return false;
      // Seekable in time where units have times and a time finds its unit
      // (a source whose times are out of order has no such lookup).
      gint64 unit = 0;
      const bool seekable = convert_units(units, GST_FORMAT_DEFAULT, units.total, format, &value) &&
                            convert_units(units, format, 0, GST_FORMAT_DEFAULT, &unit);
      gst_query_set_seeking(query, format, seekable, 0, seekable ? value : -1);
      return true;
    }
    case GST_QUERY_CONVERT: {
      GstFormat from = GST_FORMAT_UNDEFINED;
      gint64 from_value = 0;
      gst_query_parse_convert(query, &from, &from_value, &format, nullptr);
      if (!convert_units(units, from, from_value, format, &value)) return false;
      gst_query_set_convert(query, from, from_value, format, value);
      return true;
    }
    default:
      return false;
  }
}

// Nothing either for a start after the stop (both set): the sources refuse
// that before the base class flushes (gst_segment_do_seek asserts on it).
std::optional<SeekRequest> forward_seek(GstElement *source, GstEvent *seek, const char *units) {
  SeekRequest r;
  gst_event_parse_seek(seek, &r.rate, &r.format, &r.flags, &r.start_type, &r.start, &r.stop_type, &r.stop);
  if (r.rate <= 0.0) {
    GST_WARNING_OBJECT(source, "cannot seek at rate %g: %s are read forwards only", r.rate, units);
    return std::nullopt;
  }
  if (r.start_type == GST_SEEK_TYPE_SET && r.stop_type == GST_SEEK_TYPE_SET && r.stop != -1 && r.start > r.stop) {
    GST_WARNING_OBJECT(source, "cannot seek from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                       ": the start is after the stop", r.start, r.stop);
    return std::nullopt;
  }
  return r;
}

gint64 unit_seek_position(GstSeekType type, gint64 value, gint64 total, gint64 kept) {
  if (type == GST_SEEK_TYPE_NONE) return kept;
  if (value == -1) return total;
  return std::clamp(type == GST_SEEK_TYPE_END ? total + value : value, gint64(0), total);
}

}  // namespace gstcs
