// sarbackproject and sarimage: simulated point targets (sarsim ->
// sarpulsecompress -> sarbackproject) focus where they are with the
// theoretical impulse response, in airborne and spaceborne geometries,
// spotlight and stripmap; video SAR moved on by add/subtract equals full
// recomputation; tiled equals untiled; the LATENCY answer; long streams in
// bounded memory; sarimage's grey levels; bad input is a clear error; the
// Gotcha data focuses; on a GPU the CUDA path equals the CPU, and images
// paged through host memory (device-memory-limit) equal resident ones.
#include <gst/app/gstappsrc.h>
#include <gst/cudasensing/gstcsmemory.h>
#include <gst/cudasensing/sar/gstsarimagemeta.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/sar/backprojection_test_util.h"
#include "play_to_end.h"
#include "source_allocation.h"
#include "sar/geodesy.h"
#include "sar/gotcha.h"
#include "test_sar_support.h"
#include "test_support.h"

using namespace sar_elements;
using bp_test::Geometry;
using Cf = std::complex<float>;
using Image = std::vector<Cf>;

namespace {

double uniform(std::mt19937_64 &rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// sarsim with the collection of `c` (bp_test's airborne / spaceborne
// geometries) and `c`'s targets.
std::string sim_launch(const cs::sar::SimulatorConfig &c, int pulses_per_buffer = 64) {
  std::string targets;
  for (const cs::sar::PointTarget &t : c.targets) {
    char one[160];
    std::snprintf(one, sizeof one, "%s%.6f,%.6f,%.6f,%.6f@%.6f", targets.empty() ? "" : ";", t.position.x,
                  t.position.y, t.position.z, std::abs(t.amplitude), std::arg(t.amplitude) * 180 / M_PI);
    targets += one;
  }
  char text[1024];
  std::snprintf(text, sizeof text,
                "sarsim center-frequency=%.17g bandwidth=%.17g pulse-length=%.17g sample-rate=%.17g prf=%.17g "
                "altitude=%.17g speed=%.17g standoff=%.17g num-pulses=%lld domain=%s mode=%s pulses-per-buffer=%d "
                "targets=\"%s\"",
                c.center_frequency_hz, c.bandwidth_hz, c.pulse_length_s, c.sample_rate_hz, c.prf_hz, c.altitude_m,
                c.speed_m_s, c.standoff_m, static_cast<long long>(c.num_pulses),
                c.domain == cs::sar::Domain::TOA ? "time" : "frequency",
                c.mode == cs::sar::CollectionMode::Spotlight ? "spotlight" : "stripmap", pulses_per_buffer,
                targets.c_str());
  return text;
}

Image image_of(const PipelineRun &run, size_t i) {
  GstMapInfo map;
  EXPECT_TRUE(gst_buffer_map(run.buffer(i), &map, GST_MAP_READ));
  Image out(map.size / sizeof(Cf));
  std::memcpy(out.data(), map.data, out.size() * sizeof(Cf));
  gst_buffer_unmap(run.buffer(i), &map);
  return out;
}

const GstSarImageMeta *meta_of(const PipelineRun &run, size_t i) { return gst_buffer_get_sar_image_meta(run.buffer(i)); }

// The brightest pixel within 4 pixels of (column, row), refined by a parabola
// through the log magnitudes of its neighbours in each direction.
void find_peak(const Image &image, int64_t width, double column, double row, double *peak_column, double *peak_row) {
  auto mag = [&](int64_t c, int64_t r) { return std::abs(image[size_t(r * width + c)]); };
  int64_t bc = 0, br = 0;
  double best = -1;
  for (int64_t r = std::llround(row) - 4; r <= std::llround(row) + 4; ++r)
    for (int64_t c = std::llround(column) - 4; c <= std::llround(column) + 4; ++c)
      if (mag(c, r) > best) best = mag(c, r), bc = c, br = r;
  auto refine = [](double a, double b, double c) {
    const double la = std::log(a), lb = std::log(b), lc = std::log(c);
    return 0.5 * (la - lc) / (la - 2 * lb + lc);
  };
  *peak_column = double(bc) + refine(mag(bc - 1, br), best, mag(bc + 1, br));
  *peak_row = double(br) + refine(mag(bc, br - 1), best, mag(bc, br + 1));
}

// Each target's peak within 0.1 pixel of where the grid puts it (east = +column, north = -row).
// `centre`: the grid centre, metres east and north of the scene centre.
void expect_targets_focused(const Image &image, int64_t width, int64_t height, double spacing,
                            const std::vector<cs::sar::PointTarget> &targets, const char *what,
                            const cs::sar::Vec3 &centre = {}) {
  for (const cs::sar::PointTarget &t : targets) {
    const double column = double(width / 2) + (t.position.x - centre.x) / spacing;
    const double row = double(height / 2) - (t.position.y - centre.y) / spacing;
    double pc = 0, pr = 0;
    find_peak(image, width, column, row, &pc, &pr);
    std::printf("[ measured ] %s target (%.2f, %.2f) m: peak off by (%.3f, %.3f) pixels\n", what, t.position.x,
                t.position.y, pc - column, pr - row);
    EXPECT_NEAR(pc, column, 0.1) << what;
    EXPECT_NEAR(pr, row, 0.1) << what;
  }
}

std::string bp_chain(const std::string &compress, const std::string &backproject) {
  return " ! sarpulsecompress backend=cpu " + compress + " ! sarbackproject backend=cpu " + backproject +
         " ! appsink name=out sync=false";
}

}  // namespace

// ---------------------------------------------------------------- point targets

class SarBackprojectPointTargets : public ::testing::TestWithParam<Geometry> {};

// Spotlight: three targets, each a little off its nominal spot (fresh random),
// on a 112 x 112 grid of 0.25 m pixels: peaks within 0.1 pixel. Cuts through
// the centre target (the element's grid, one pixel high or wide, 16 samples
// per resolution cell, +-8 cells): along north (ground range: the platform
// looks north at broadside) the compression window's response, ground
// projected; along east (azimuth) the uniform aperture's sinc. 3 dB width
// within 3%, PSLR and ISLR within 0.5 dB of theory.
TEST_P(SarBackprojectPointTargets, FocusWhereTheTargetsAreWithTheTheoreticalResponse) {
  const Geometry geometry = GetParam();
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::sar::SimulatorConfig sc = bp_test::collection(geometry);
  for (cs::sar::Vec3 nominal : {cs::sar::Vec3{0, 0, 0}, cs::sar::Vec3{-9, 6, 0}, cs::sar::Vec3{8, -7, 0}})
    sc.targets.push_back({nominal + cs::sar::Vec3{uniform(rng, -0.5, 0.5), uniform(rng, -0.5, 0.5), 0},
                          std::polar(uniform(rng, 1, 2), uniform(rng, -M_PI, M_PI))});
  cs::sar::WindowSpec range_window;
  std::string compress, interpolation;
  if (geometry == Geometry::Airborne) {
    range_window.kind = cs::sar::WindowKind::Taylor;  // the element's defaults: nbar 4, -35 dB
    compress = "window=taylor upsample=16";
    interpolation = "interpolation=linear";
  } else {
    range_window.kind = cs::sar::WindowKind::Hamming;
    compress = "window=hamming upsample=4";
    interpolation = "interpolation=knab knab-taps=8";
  }
  const int64_t side = 112;
  const double spacing = 0.25;
  PipelineRun run;
  run_pipeline(sim_launch(sc) + bp_chain(compress, interpolation + " width=112 height=112 pixel-spacing=0.25"), &run);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.samples.size(), 1u) << "whole-stream mode: one image at end-of-stream";
  EXPECT_EQ(caps_int(run.caps(0), "width"), side);
  const GstSarImageMeta *meta = meta_of(run, 0);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->n_pulses, guint(sc.num_pulses));
  EXPECT_EQ(meta->first_pulse, 0u);
  EXPECT_EQ(meta->last_pulse, guint64(sc.num_pulses - 1));
  expect_targets_focused(image_of(run, 0), side, side, spacing, sc.targets, bp_test::to_string(geometry));

  // The theory's resolution cells, from the simulated pulses' positions.
  const cs::sar::PhaseHistorySimulator sim(sc);
  std::vector<cs::sar::PulseParameters> pvp(size_t(sc.num_pulses));
  std::vector<Cf> history(size_t(sc.num_pulses * sim.samples_per_pulse()));
  sim.generate(0, sc.num_pulses, pvp.data(), history.data());
  const cs::sar::PointTarget &centre = sc.targets[0];
  const cs::sar::Vec3 target = sim.frame().to_ecf(centre.position), up = sim.frame().up();
  const cs::sar::Vec3 los = cs::sar::unit(target - pvp[pvp.size() / 2].tx_pos);
  const cs::sar::Vec3 ground_range = cs::sar::unit(los - cs::sar::dot(los, up) * up);
  const cs::sar::Vec3 azimuth = cs::sar::cross(up, ground_range);
  const double range_cell_m = cs::sar::kSpeedOfLight / (2 * sc.bandwidth_hz) / cs::sar::dot(los, ground_range);
  double sin_min = 1, sin_max = -1;
  for (const cs::sar::PulseParameters &p : pvp) {
    const double s = cs::sar::dot(cs::sar::unit(target - p.tx_pos), azimuth);
    sin_min = std::min(sin_min, s);
    sin_max = std::max(sin_max, s);
  }
  const double n = double(sc.num_pulses);
  const double azimuth_cell_m = cs::sar::kSpeedOfLight / sc.center_frequency_hz / (2 * (sin_max - sin_min) * n / (n - 1));

  const double half_extent = 8, step = 1.0 / 16;
  const int samples = 2 * int(half_extent / step) + 1;
  struct Cut {
    const char *name;
    bool along_rows;
    double cell_m;
    cs::sar::WindowSpec window;
  };
  for (const Cut &cut : {Cut{"range", true, range_cell_m, range_window},
                         Cut{"azimuth", false, azimuth_cell_m, cs::sar::WindowSpec{}}}) {
    char grid[256];
    std::snprintf(grid, sizeof grid, " width=%d height=%d pixel-spacing=%.17g center-x=%.17g center-y=%.17g",
                  cut.along_rows ? 1 : samples, cut.along_rows ? samples : 1, cut.cell_m * step, centre.position.x,
                  centre.position.y);
    cs::sar::SimulatorConfig alone = sc;  // the other targets' sidelobes would cross the cut
    alone.targets.resize(1);
    PipelineRun cut_run;
    run_pipeline(sim_launch(alone) + bp_chain(compress, interpolation + grid), &cut_run);
    ASSERT_EQ(cut_run.error, "");
    ASSERT_EQ(cut_run.samples.size(), 1u);
    std::vector<double> mag;
    for (const Cf &v : image_of(cut_run, 0)) mag.push_back(std::abs(v));
    const bp_test::ResponseFigures m = bp_test::measure_response(mag, step);
    const bp_test::ResponseFigures th =
        bp_test::measure_response(bp_test::theoretical_response(cut.window, half_extent, step), step);
    std::printf("[ measured ] %s %s: 3 dB width %.4f cells (theory %.4f), PSLR %.2f dB (%.2f), ISLR %.2f dB (%.2f)\n",
                bp_test::to_string(geometry), cut.name, m.width_3db, th.width_3db, m.pslr_db, th.pslr_db, m.islr_db,
                th.islr_db);
    EXPECT_NEAR(m.width_3db, th.width_3db, 0.03 * th.width_3db) << cut.name;
    EXPECT_NEAR(m.pslr_db, th.pslr_db, 0.5) << cut.name;
    EXPECT_NEAR(m.islr_db, th.islr_db, 0.5) << cut.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, SarBackprojectPointTargets,
                         ::testing::Values(Geometry::Airborne, Geometry::Spaceborne),
                         [](const auto &info) { return std::string(bp_test::to_string(info.param)); });

// Stripmap: the scene reference point moves with the platform. With an
// aperture of every pulse, the grid is centred on the SRP of pulse 150 of 300
// (a quarter metre from the scene centre: the simulated aperture is centred
// between pulses 149 and 150); in whole-stream mode on the first pulse's SRP,
// which center-x/center-y move back to the scene centre. Targets along the
// track focus where they are in both.
TEST(SarBackproject, StripmapTargetsFocusWhereTheyAre) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.mode = cs::sar::CollectionMode::Stripmap;
  // Apart in both directions: targets in one row or column would sit in each
  // other's azimuth or range sidelobes (with random amplitudes, enough to move
  // a peak by a tenth of a pixel).
  for (const cs::sar::Vec3 nominal : {cs::sar::Vec3{-12, -4.5, 0}, cs::sar::Vec3{0, 0.5, 0}, cs::sar::Vec3{11, 4.5, 0}})
    sc.targets.push_back({nominal + cs::sar::Vec3{uniform(rng, -0.5, 0.5), uniform(rng, -0.5, 0.5), 0},
                          std::polar(uniform(rng, 1, 2), uniform(rng, -M_PI, M_PI))});
  const cs::sar::PhaseHistorySimulator sim(sc);
  cs::sar::PulseParameters first, middle;
  std::vector<Cf> samples(size_t(sim.samples_per_pulse()));
  sim.generate(0, 1, &first, samples.data());
  sim.generate(sc.num_pulses / 2, 1, &middle, samples.data());
  const cs::sar::Vec3 first_srp = sim.frame().to_enu(first.srp_pos), middle_srp = sim.frame().to_enu(middle.srp_pos);
  ASSERT_GT(std::fabs(first_srp.x), 50.0) << "the first pulse's SRP is far from the scene centre";
  char offset[128];
  std::snprintf(offset, sizeof offset, " center-x=%.17g center-y=%.17g", -first_srp.x, -first_srp.y);
  const std::string grid = "width=128 height=64 pixel-spacing=0.25";
  for (bool whole_stream : {false, true}) {
    const std::string mode = whole_stream ? std::string(offset) : " aperture=" + std::to_string(sc.num_pulses);
    SCOPED_TRACE(mode);
    PipelineRun run;
    run_pipeline(sim_launch(sc) + bp_chain("window=hamming upsample=8", grid + mode), &run);
    ASSERT_EQ(run.error, "");
    ASSERT_EQ(run.samples.size(), 1u);
    EXPECT_NEAR(double(GST_BUFFER_DURATION(run.buffer(0))) / GST_SECOND, double(sc.num_pulses) / sc.prf_hz, 1e-6)
        << "the image lasts its pulses' span";
    expect_targets_focused(image_of(run, 0), 128, 64, 0.25, sc.targets, "stripmap",
                           whole_stream ? cs::sar::Vec3{} : middle_srp);
  }
}

// custom-meta: the grid also as a GstStructure (for language bindings), equal to the struct meta.
TEST(SarBackproject, CustomMetaHoldsTheGrid) {
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 32;
  sc.targets = {{cs::sar::Vec3{0, 0, 0}, {1, 0}}};
  PipelineRun run;
  run_pipeline(sim_launch(sc) + bp_chain("", "width=24 height=16 pixel-spacing=0.5 custom-meta=true"), &run);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.samples.size(), 1u);
  const GstSarImageMeta *m = meta_of(run, 0);
  GstCustomMeta *custom = gst_buffer_get_custom_meta(run.buffer(0), GST_SAR_IMAGE_CUSTOM_META);
  ASSERT_TRUE(m && custom);
  const GstStructure *s = gst_custom_meta_get_structure(custom);
  guint width = 0, height = 0, pulses = 0;
  guint64 first = 1, last = 0;
  double spacing_x = 0, first_time = -1;
  ASSERT_TRUE(gst_structure_get(s, "width", G_TYPE_UINT, &width, "height", G_TYPE_UINT, &height, "n-pulses",
                                G_TYPE_UINT, &pulses, "first-pulse", G_TYPE_UINT64, &first, "last-pulse",
                                G_TYPE_UINT64, &last, "spacing-x", G_TYPE_DOUBLE, &spacing_x, "first-pulse-time",
                                G_TYPE_DOUBLE, &first_time, nullptr));
  EXPECT_EQ(width, 24u);
  EXPECT_EQ(height, 16u);
  EXPECT_EQ(pulses, m->n_pulses);
  EXPECT_EQ(first, m->first_pulse);
  EXPECT_EQ(last, m->last_pulse);
  EXPECT_EQ(spacing_x, m->spacing_x);
  EXPECT_EQ(first_time, m->first_pulse_time);
  const std::pair<const char *, const double *> vectors[] = {
      {"centre", m->centre}, {"origin", m->origin}, {"axis-x", m->axis_x}, {"axis-y", m->axis_y}};
  for (const auto &[field, want] : vectors) {
    const GValue *v = gst_structure_get_value(s, field);
    ASSERT_TRUE(v && gst_value_array_get_size(v) == 3) << field;
    for (guint i = 0; i < 3; ++i) EXPECT_EQ(g_value_get_double(gst_value_array_get_value(v, i)), want[i]) << field;
  }
}

// ---------------------------------------------------------------- video SAR

// An aperture of 96 pulses slides by 24 pulses per image over 264 pulses (8
// images). Moved on by add/subtract (refresh-interval larger than the run),
// every image equals the full recomputation of its pulses (refresh-interval=1)
// to at least 80 dB signal-to-error (measured: see the output; each move
// adds about one float rounding of partial sums). With refresh-interval=3,
// images 0, 3, 6 are recomputed and so bit-identical to the full run.
TEST(SarBackproject, VideoSarMovedOnEqualsRecomputation) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 264;
  for (int i = 0; i < 6; ++i)
    sc.targets.push_back({cs::sar::Vec3{uniform(rng, -12, 12), uniform(rng, -12, 12), 0},
                          std::polar(uniform(rng, 0.5, 2), uniform(rng, -M_PI, M_PI))});
  const std::string source = sim_launch(sc, 40) + " snr=0 seed=" + std::to_string(rng() % 100000);
  const std::string grid = "width=96 height=96 pixel-spacing=0.3 aperture=96 stride=24 ";
  PipelineRun moved, full, refreshed;
  run_pipeline(source + bp_chain("window=hamming upsample=4", grid + "refresh-interval=1000"), &moved);
  run_pipeline(source + bp_chain("window=hamming upsample=4", grid + "refresh-interval=1"), &full);
  run_pipeline(source + bp_chain("window=hamming upsample=4", grid + "refresh-interval=3"), &refreshed);
  ASSERT_EQ(moved.error, "");
  ASSERT_EQ(full.error, "");
  ASSERT_EQ(refreshed.error, "");
  ASSERT_EQ(moved.samples.size(), 8u) << "(264 - 96) / 24 + 1 images";
  ASSERT_EQ(full.samples.size(), 8u);
  ASSERT_EQ(refreshed.samples.size(), 8u);
  double worst = 1e9;
  for (size_t k = 0; k < 8; ++k) {
    const GstSarImageMeta *m = meta_of(moved, k);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->first_pulse, 24 * k);
    EXPECT_EQ(m->last_pulse, 24 * k + 95);
    EXPECT_EQ(m->n_pulses, 96u);
    EXPECT_NEAR(m->last_pulse_time - m->first_pulse_time, 95 / sc.prf_hz, 1e-9);
    // Stamped with its aperture's first pulse (24 k, in the middle of a block
    // of 40), whose last pulse the LATENCY query's aperture span waits for.
    EXPECT_NEAR(double(GST_BUFFER_PTS(moved.buffer(k))) / GST_SECOND, 24.0 * double(k) / sc.prf_hz, 1e-6)
        << "image " << k;
    EXPECT_NEAR(double(GST_BUFFER_DURATION(moved.buffer(k))) / GST_SECOND, 24.0 / sc.prf_hz, 1e-6)
        << "image " << k << " lasts until the next one's stride of pulses";
    const Image a = image_of(moved, k), b = image_of(full, k), c = image_of(refreshed, k);
    const double ser = k == 0 ? INFINITY : bp_test::signal_to_error_db(a, b);
    worst = std::min(worst, ser);
    EXPECT_GE(ser, 80.0) << "image " << k;
    if (k % 3 == 0)
      EXPECT_EQ(std::memcmp(c.data(), b.data(), b.size() * sizeof(Cf)), 0) << "image " << k << " was recomputed";
    else
      EXPECT_GE(bp_test::signal_to_error_db(c, b), 80.0) << "image " << k;
  }
  std::printf("[ measured ] video SAR moved on over 7 images: worst SER %.1f dB against recomputation\n", worst);
}

// stride > aperture: images of pulses [k stride, k stride + aperture), the
// pulses between them skipped. Image 1 of a sparse stream (pulses 70..109)
// equals image 7 of a dense stream recomputed every image (the ring splits
// the pulses differently, so equal within float rounding: 100 dB) and
// differs from its image 6 (pulses 60..99).
TEST(SarBackproject, SparseAperturesSkipPulses) {
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 200;
  sc.targets.push_back({cs::sar::Vec3{1.3, -2.1, 0}, {1, 0}});
  sc.targets.push_back({cs::sar::Vec3{-3.7, 4.2, 0}, {0.7, 0.3}});
  PipelineRun sparse, dense;
  run_pipeline(sim_launch(sc, 32) + bp_chain("", "width=32 height=32 aperture=40 stride=70"), &sparse);
  run_pipeline(sim_launch(sc, 10) + bp_chain("", "width=32 height=32 aperture=40 stride=10 refresh-interval=1"),
               &dense);
  ASSERT_EQ(sparse.error, "");
  ASSERT_EQ(dense.error, "");
  ASSERT_EQ(sparse.samples.size(), 3u) << "images at pulses 0, 70, 140";
  ASSERT_EQ(dense.samples.size(), 17u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(meta_of(sparse, k)->first_pulse, 70 * k);
    EXPECT_EQ(meta_of(sparse, k)->last_pulse, 70 * k + 39);
  }
  EXPECT_GE(bp_test::signal_to_error_db(image_of(sparse, 1), image_of(dense, 7)), 100.0);
  EXPECT_LT(bp_test::signal_to_error_db(image_of(sparse, 1), image_of(dense, 6)), 20.0);
}

// Pulses that no image holds when the stream ends are said, not dropped
// silently: an aperture longer than the stream forms no image, and the pulses
// after the last full aperture are counted (a stream without pulses too).
TEST(SarBackproject, EndOfStreamSaysWhatNoImageHolds) {
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.targets.push_back({cs::sar::Vec3{1.3, -2.1, 0}, {1, 0}});
  struct Case {
    int64_t pulses;
    const char *settings;
    size_t images;
    const char *warning;  // "" = none
  };
  for (const Case &c : {Case{50, "aperture=1000", 0, "ended after 50 pulses, fewer than the aperture of 1000"},
                        Case{50, "aperture=20", 2, "The last 10 of 50 pulses are in no image"},
                        Case{50, "aperture=20 stride=12", 3, "The last 6 of 50 pulses are in no image"},
                        Case{50, "aperture=10 stride=25", 2, ""}, Case{50, "aperture=25", 2, ""},
                        Case{0, "", 0, "No pulses arrived"}}) {
    SCOPED_TRACE(std::to_string(c.pulses) + " pulses, " + c.settings);
    sc.num_pulses = c.pulses;
    GstElement *pipeline = gst_parse_launch(
        (sim_launch(sc, 16) + bp_chain("", std::string("width=16 height=16 ") + c.settings)).c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
    g_object_set(sink, "wait-on-eos", FALSE, nullptr);
    GstPad *pad = gst_element_get_static_pad(sink, "sink");
    size_t images = 0;
    gst_pad_add_probe(
        pad, GST_PAD_PROBE_TYPE_BUFFER,
        [](GstPad *, GstPadProbeInfo *, gpointer count) {
          ++*static_cast<size_t *>(count);
          return GST_PAD_PROBE_OK;
        },
        &images, nullptr);
    gst_object_unref(pad);
    std::string warnings;
    EXPECT_EQ(element_test::play_to_end(pipeline, 60, &warnings), "");
    EXPECT_EQ(images, c.images);
    if (*c.warning)
      EXPECT_NE(warnings.find(c.warning), std::string::npos) << warnings;
    else
      EXPECT_EQ(warnings, "");
    gst_object_unref(sink);
    gst_object_unref(pipeline);
  }
}

// The CPU backend's images come from a pool of the allocator that
// downstream proposes (page-locked memory when gpuupload follows), as the
// other CPU outputs do, and hold the same images as with the default
// allocator.
TEST(SarBackproject, CpuImagesComeFromAPoolOfTheProposedAllocator) {
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 120;
  sc.targets.push_back({cs::sar::Vec3{1.3, -2.1, 0}, {1, 0}});
  const std::string launch = sim_launch(sc, 20) +
                             " ! sarpulsecompress backend=cpu ! sarbackproject backend=cpu width=32 height=32 "
                             "aperture=40 stride=20 ! fakesink name=probed";
  const auto proposed = source_allocation_test::count_allocations(launch, true);
  const auto plain = source_allocation_test::count_allocations(launch, false);
  ASSERT_TRUE(proposed.eos) << proposed.error;
  ASSERT_TRUE(plain.eos) << plain.error;
  EXPECT_EQ(proposed.buffers, 5) << "images at pulses 0, 20, ..., 80";
  EXPECT_EQ(proposed.from_proposed, proposed.buffers);
  EXPECT_EQ(plain.from_proposed, 0);
  EXPECT_EQ(proposed.pooled, proposed.buffers);
  EXPECT_EQ(plain.pooled, plain.buffers);
  EXPECT_EQ(plain.bytes.size(), size_t(5 * 32 * 32 * 8));
  EXPECT_TRUE(proposed.bytes == plain.bytes);
}

// ---------------------------------------------------------------- tiling

// The grid backprojected in bands (aligned to the kernels' 16-row tiles, not
// aligned, and one row at a time) gives the untiled image: each band's centre
// is a pixel of the full grid, so only double rounding of positions differs
// (at least 100 dB signal-to-error; measured values are printed).
TEST(SarBackproject, TiledEqualsUntiled) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 120;
  for (int i = 0; i < 4; ++i)
    sc.targets.push_back({cs::sar::Vec3{uniform(rng, -10, 10), uniform(rng, -8, 8), 0}, {1, 0}});
  const std::string source = sim_launch(sc, 50) + " snr=10";
  for (const char *precision : {"mixed", "double"}) {
    const std::string grid = std::string("width=80 height=70 pixel-spacing=0.3 precision=") + precision;
    PipelineRun whole;
    run_pipeline(source + bp_chain("upsample=4", grid), &whole);
    ASSERT_EQ(whole.error, "");
    ASSERT_EQ(whole.samples.size(), 1u);
    const Image reference = image_of(whole, 0);
    for (int rows : {16, 5, 1}) {
      PipelineRun tiled;
      run_pipeline(source + bp_chain("upsample=4", grid + " max-tile-pixels=" + std::to_string(80 * rows)), &tiled);
      ASSERT_EQ(tiled.error, "");
      ASSERT_EQ(tiled.samples.size(), 1u);
      const double ser = bp_test::signal_to_error_db(image_of(tiled, 0), reference);
      std::printf("[ measured ] %s, bands of %d rows: SER %.1f dB against untiled\n", precision, rows, ser);
      EXPECT_GE(ser, 100.0) << precision << ", bands of " << rows << " rows";
    }
  }
}

// device-memory-limit: a 64-bit byte count (round trip above 4 GiB, from a
// string as gst-launch sets it), 0 by default (automatic), described for
// gst-inspect with its cost; on the CPU backend it changes nothing.
TEST(SarBackproject, DeviceMemoryLimitPropertyRoundTrips) {
  GstElement *bp = gst_element_factory_make("sarbackproject", nullptr);
  ASSERT_NE(bp, nullptr);
  guint64 limit = 1;
  g_object_get(bp, "device-memory-limit", &limit, nullptr);
  EXPECT_EQ(limit, 0u) << "automatic by default";
  const guint64 six_gib = guint64(6) << 30;
  g_object_set(bp, "device-memory-limit", six_gib, nullptr);
  g_object_get(bp, "device-memory-limit", &limit, nullptr);
  EXPECT_EQ(limit, six_gib);
  gst_util_set_object_arg(G_OBJECT(bp), "device-memory-limit", "1835008");
  g_object_get(bp, "device-memory-limit", &limit, nullptr);
  EXPECT_EQ(limit, 1835008u);
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(bp), "device-memory-limit");
  ASSERT_NE(spec, nullptr);
  const std::string blurb = g_param_spec_get_blurb(spec);
  EXPECT_NE(blurb.find("0 = automatic"), std::string::npos) << blurb;
  EXPECT_NE(blurb.find("page-locked host memory"), std::string::npos) << blurb;
  EXPECT_NE(blurb.find("PCIe"), std::string::npos) << blurb;
  gst_object_unref(bp);

  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 64;
  sc.targets.push_back({cs::sar::Vec3{1.3, -2.1, 0}, {1, 0}});
  PipelineRun plain, limited;
  run_pipeline(sim_launch(sc, 32) + bp_chain("", "width=40 height=40 max-tile-pixels=400"), &plain);
  run_pipeline(sim_launch(sc, 32) + bp_chain("", "width=40 height=40 max-tile-pixels=400 device-memory-limit=1"),
               &limited);
  ASSERT_EQ(plain.error, "");
  ASSERT_EQ(limited.error, "");
  ASSERT_EQ(limited.samples.size(), 1u);
  const Image a = image_of(plain, 0), b = image_of(limited, 0);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(Cf)), 0);
}

// ---------------------------------------------------------------- sarimage

namespace {

// Pushes `buffers` through `launch` (an appsrc named "src" first, an appsink
// named "out" last, if any) and returns what came out.
void run_with_appsrc(const std::string &launch, std::vector<GstBuffer *> buffers, PipelineRun *run) {
  run_pipeline(launch, run, [&](GstElement *pipeline) {
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    for (GstBuffer *b : buffers) gst_app_src_push_buffer(GST_APP_SRC(src), b);
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    gst_object_unref(src);
  });
}

GstBuffer *image_buffer(const Image &pixels) {
  GstBuffer *b = gst_buffer_new_allocate(nullptr, pixels.size() * sizeof(Cf), nullptr);
  gst_buffer_fill(b, 0, pixels.data(), pixels.size() * sizeof(Cf));
  return b;
}

}  // namespace

// Levels: peak white, -20 dB at (50 - 20) / 50 of full scale, -60 dB, zero and
// NaN black; a fixed reference clips what is above it. Width 5 checks row padding.
// Stopping a video SAR stream while an image is being scaled is no error
// (the frames' layout is kept from set_caps: the source pad's caps may be
// gone by then). Seen in ~4 % of random stops before.
TEST(SarImage, StoppingMidStreamIsNotAnError) {
  const auto errors = element_test::errors_over_random_stops(
      "sarsim num-pulses=4096 pulses-per-buffer=16 ! sarpulsecompress backend=cpu ! sarbackproject backend=cpu "
      "width=48 height=48 aperture=64 stride=16 ! sarimage ! fakesink sync=false",
      300, cs_test::fresh_seed());
  for (const auto &[what, count] : errors) ADD_FAILURE() << count << " x " << what;
}

TEST(SarImage, GreyLevelsFollowTheDecibelScale) {
  const float nan = NAN;
  const Image pixels = {{0.6f, -0.8f}, {0.1f, 0.0f}, {0.0f, 1e-3f}, {0, 0}, {nan, 0},
                        {0.0f, -0.1f}, {0.01f, 0}, {0.3f, 0.4f}, {1e-9f, 0}, {-0.0316227766f, 0}};
  struct Case {
    const char *format, *props;
    std::vector<int> expected;
  };
  // 0.5 = -6.02 dB; 0.01 = -40 dB; 0.0316 = -30 dB (127.5 with the fixed reference: either neighbour).
  const Case cases[] = {
      {"GRAY8", "", {255, 153, 0, 0, 0, 153, 51, 224, 0, 102}},
      {"GRAY16_LE", "", {65535, 39321, 0, 0, 0, 39321, 13107, 57644, 0, 26214}},
      {"GRAY8", "fixed-reference=true reference-level=-10 dynamic-range=40", {255, 191, 0, 0, 0, 191, 64, 255, 0, 127}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.format) + " " + c.props);
    PipelineRun run;
    run_with_appsrc(std::string("appsrc name=src caps=\"" GST_SAR_IMAGE_MEDIA_TYPE
                                ",format=CF32,width=5,height=2\" ! sarimage ") +
                        c.props + " ! video/x-raw,format=" + c.format + " ! appsink name=out sync=false",
                    {image_buffer(pixels)}, &run);
    ASSERT_EQ(run.error, "");
    ASSERT_EQ(run.samples.size(), 1u);
    GstVideoInfo info;
    ASSERT_TRUE(gst_video_info_from_caps(&info, run.caps(0)));
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, run.buffer(0), GST_MAP_READ));
    const auto *data = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
    const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
    const bool wide = std::string(c.format) == "GRAY16_LE";
    for (int i = 0; i < 10; ++i) {
      const uint8_t *p = data + (i / 5) * stride + (i % 5) * (wide ? 2 : 1);
      const int got = wide ? p[0] | (p[1] << 8) : p[0];
      EXPECT_NEAR(got, c.expected[size_t(i)], 1) << "pixel " << i;
    }
    gst_video_frame_unmap(&frame);
  }
}

// The grid meta follows the image into sarimage's frames and through
// copies of whole frames (videoconvert), not through elements that change
// the frame's geometry (videoscale, videoflip): their grid would be stale.
TEST(SarImage, GridMetaFollowsTheFramesGeometry) {
  Image pixels(8 * 6, Cf{0.5f, 0.f});
  const std::pair<std::string, bool> cases[] = {
      {"", true},
      {" ! videoconvert ! video/x-raw,format=GRAY16_LE", true},
      {" ! videoscale ! video/x-raw,width=4,height=3", false},
      {" ! videoflip video-direction=90r", false}};
  for (const auto &[after, kept] : cases) {
    SCOPED_TRACE(after);
    GstBuffer *image = image_buffer(pixels);
    GstSarImageMeta *m = gst_buffer_add_sar_image_meta(image);
    m->width = 8;
    m->height = 6;
    m->spacing_x = m->spacing_y = 0.5;
    m->n_pulses = 17;
    PipelineRun run;
    run_with_appsrc(std::string("appsrc name=src caps=\"" GST_SAR_IMAGE_MEDIA_TYPE
                                ",format=CF32,width=8,height=6\" ! sarimage ! video/x-raw,format=GRAY8") +
                        after + " ! appsink name=out sync=false",
                    {image}, &run);
    ASSERT_EQ(run.error, "");
    ASSERT_EQ(run.samples.size(), 1u);
    const GstSarImageMeta *out = gst_buffer_get_sar_image_meta(run.buffer(0));
    EXPECT_EQ(out != nullptr, kept);
    if (out) {
      EXPECT_EQ(out->width, 8u);
      EXPECT_EQ(out->n_pulses, 17u);
    }
  }
}

// ---------------------------------------------------------------- bad input

namespace {

constexpr int kBins = 64;
const char *kProfileCaps = GST_SAR_RANGE_PROFILES_MEDIA_TYPE
    ",format=CF32,bins-per-pulse=64,bin-spacing=0.25,first-bin-range=-8.0,upsample=2,center-frequency=9.6e9,"
    "bandwidth=3e8,domain=frequency";

// `pulses` range profiles of random samples whose meta places the antenna 9 km from the scene.
GstBuffer *profile_buffer(int pulses, bool with_meta, std::mt19937_64 &rng) {
  std::normal_distribution<float> g;
  std::vector<Cf> samples(size_t(pulses * kBins));
  for (Cf &v : samples) v = {g(rng), g(rng)};
  GstBuffer *b = gst_buffer_new_allocate(nullptr, samples.size() * sizeof(Cf), nullptr);
  gst_buffer_fill(b, 0, samples.data(), samples.size() * sizeof(Cf));
  if (with_meta) {
    const cs::sar::EnuFrame frame(cs::sar::Llh{45.0, 0.0, 0.0});
    std::vector<GstSarPulseParameters> p(static_cast<size_t>(pulses));
    for (int k = 0; k < pulses; ++k) {
      gst_sar_pulse_parameters_init(&p[size_t(k)]);
      const cs::sar::Vec3 tx = frame.to_ecf({0.5 * k, -8000, 5000}), srp = frame.origin_ecf();
      const double tx_xyz[3] = {tx.x, tx.y, tx.z}, srp_xyz[3] = {srp.x, srp.y, srp.z};
      for (int i = 0; i < 3; ++i) {
        p[size_t(k)].tx_pos[i] = p[size_t(k)].rcv_pos[i] = tx_xyz[i];
        p[size_t(k)].srp_pos[i] = srp_xyz[i];
      }
      p[size_t(k)].sc0 = 9.45e9;
      p[size_t(k)].scss = 300e6 / 32;
      p[size_t(k)].tx_time = k * 0.005;
    }
    gst_buffer_add_sar_pulse_meta(b, 0, guint(pulses), p.data());
  }
  return b;
}

std::string bad_input_error(const std::string &caps, const std::string &props, std::vector<GstBuffer *> buffers) {
  PipelineRun run;
  run_with_appsrc("appsrc name=src caps=\"" + caps + "\" ! sarbackproject backend=cpu width=16 height=16 " + props +
                      " ! fakesink",
                  buffers, &run);
  return run.error;
}

}  // namespace

TEST(SarBackprojectBadInput, GoodInputRunsSoTheCasesBelowAreMeaningful) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  PipelineRun run;
  run_with_appsrc(std::string("appsrc name=src caps=\"") + kProfileCaps +
                      "\" ! sarbackproject backend=cpu width=16 height=16 ! appsink name=out sync=false",
                  {profile_buffer(4, true, rng), profile_buffer(3, true, rng)}, &run);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.samples.size(), 1u);
  EXPECT_EQ(meta_of(run, 0)->n_pulses, 7u);
  for (const Cf &v : image_of(run, 0)) ASSERT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag()));
}

TEST(SarBackprojectBadInput, MissingPulseMeta) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  const std::string e = bad_input_error(kProfileCaps, "", {profile_buffer(4, false, rng)});
  EXPECT_NE(e.find("no pulse meta"), std::string::npos) << e;
}

TEST(SarBackprojectBadInput, NonFiniteSample) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  GstBuffer *b = profile_buffer(4, true, rng);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_WRITE);
  reinterpret_cast<Cf *>(map.data)[2 * kBins + 17] = {1.0f, NAN};
  gst_buffer_unmap(b, &map);
  const std::string e = bad_input_error(kProfileCaps, "", {b});
  EXPECT_NE(e.find("pulse 2 has a non-finite sample"), std::string::npos) << e;
  EXPECT_NE(e.find("bin 17"), std::string::npos) << e;
}

// Positions beyond any platform's reach (a damaged file's 1e300 m) are
// refused as non-finite ones are, not turned into an image of NaN.
TEST(SarBackprojectBadInput, PositionBeyondReach) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  GstBuffer *b = profile_buffer(4, true, rng);
  GstSarPulseMeta *meta = gst_buffer_get_sar_pulse_meta(b);
  meta->pulses[1].rcv_pos[2] = 1e300;
  const std::string e = bad_input_error(kProfileCaps, "", {b});
  EXPECT_NE(e.find("pulse 1: a position lies more than 1e9 m"), std::string::npos) << e;
}

TEST(SarBackprojectBadInput, AbsurdGrid) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::string e = bad_input_error(kProfileCaps, "width=65536 height=65536", {profile_buffer(1, true, rng)});
  EXPECT_NE(e.find("cannot form this image"), std::string::npos) << e;
  EXPECT_NE(e.find("pixels"), std::string::npos) << e;
  e = bad_input_error(kProfileCaps, "width=40000 pixel-spacing=100", {profile_buffer(1, true, rng)});
  EXPECT_NE(e.find("km"), std::string::npos) << "a 4000 km wide image: " << e;
}

TEST(SarBackprojectBadInput, InconsistentCaps) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  std::string caps = kProfileCaps;
  std::string e = bad_input_error(caps.replace(caps.find("upsample=2"), 10, "upsample=3"), "",
                                  {profile_buffer(1, true, rng)});
  EXPECT_NE(e.find("not a multiple of the upsampling factor"), std::string::npos) << e;
  caps = kProfileCaps;
  e = bad_input_error(caps.replace(caps.find("bin-spacing=0.25,"), 17, ""), "", {profile_buffer(1, true, rng)});
  EXPECT_NE(e.find("bin-spacing"), std::string::npos) << e;
  // A buffer that is not whole profiles.
  GstBuffer *b = profile_buffer(2, true, rng);
  gst_buffer_resize(b, 0, gst_buffer_get_size(b) - 8);
  e = bad_input_error(kProfileCaps, "", {b});
  EXPECT_NE(e.find("not a whole number of range profiles"), std::string::npos) << e;
}

// The LATENCY query adds the aperture's span once pulses have shown their
// interval: 99 intervals of 5 ms for an aperture of 100 pulses.
TEST(SarBackproject, LatencyIsTheApertureSpan) {
  std::mt19937_64 rng(cs_test::fresh_seed());
  GError *err = nullptr;
  GstElement *pipeline = gst_parse_launch((std::string("appsrc name=src caps=\"") + kProfileCaps +
                                           "\" ! sarbackproject name=bp backend=cpu width=8 height=8 aperture=100 ! "
                                           "fakesink name=sink sync=false")
                                              .c_str(),
                                          &err);
  ASSERT_EQ(err, nullptr);
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *bp = gst_bin_get_by_name(GST_BIN(pipeline), "bp");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer(GST_APP_SRC(src), profile_buffer(4, true, rng));
  GstPad *pad = gst_element_get_static_pad(bp, "src");
  GstClockTime min = 0, max = 0;
  gboolean live = FALSE;
  for (int i = 0; i < 200 && min == 0; ++i) {  // until the block has gone through
    GstQuery *q = gst_query_new_latency();
    if (gst_pad_query(pad, q)) gst_query_parse_latency(q, &live, &min, &max);
    gst_query_unref(q);
    if (min == 0) g_usleep(10000);
  }
  EXPECT_NEAR(double(min) / GST_SECOND, 99 * 0.005, 1e-6);
  gst_object_unref(pad);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bp);
  gst_object_unref(src);
  gst_object_unref(pipeline);
}

// An endless stream does not make the element grow: 24000 range profiles of
// 2 KiB (47 MiB in all) through an aperture of 128 pulses raise the
// process's resident memory by far less than the stream's size.
TEST(SarBackproject, LongStreamsRunInBoundedMemory) {
  auto resident_mib = [] {
    long pages = 0, resident = 0;
    if (std::FILE *f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20);
  };
  const double before = resident_mib();
  double peak = before;
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      peak = std::max(peak, resident_mib());
      g_usleep(2000);
    }
  });
  PipelineRun run;
  run_pipeline("sarsim domain=frequency num-pulses=24000 samples-per-pulse=256 pulses-per-buffer=200 "
               "targets=\"1,2,0,1\" ! sarpulsecompress backend=cpu ! sarbackproject backend=cpu width=8 height=8 "
               "aperture=128 stride=96 ! fakesink",
               &run);
  done = true;
  sampler.join();
  ASSERT_EQ(run.error, "");
  std::printf("[ measured ] 47 MiB of profiles streamed: resident memory grew by %.1f MiB\n", peak - before);
  EXPECT_LT(peak - before, 20.0);
}

// ---------------------------------------------------------------- real data

namespace {

// Entropy of the normalised intensity: lower is more focused.
double image_entropy(const Image &image) {
  double total = 0, h = 0;
  for (const Cf &v : image) total += std::norm(v);
  for (const Cf &v : image) {
    const double p = std::norm(v) / total;
    if (p > 0) h -= p * std::log(p);
  }
  return h;
}

}  // namespace

// The AFRL Gotcha pass (4 degrees of circular flight, X band, 622 MHz),
// converted to CPHD, streamed by cphdsrc and backprojected onto a 320 x 320
// grid of 0.25 m: the image (also written as sar-gotcha.png in the test's
// build folder for people to look at) is more focused than the same data
// formed with an uncompensated range error, as a motion error would leave
// (every pulse's reference point moved along its line of sight by a
// quadratic error of up to 5 cm at the aperture's ends, 3.2 turns of two-way
// phase, in the meta between the two elements; moving the antenna along the
// line of sight would not do: the data are referenced to the scene centre):
// lower entropy, higher peak-to-mean.
TEST(SarBackprojectRealData, GotchaFocusesBetterThanWithAMotionError) {
  std::vector<std::string> files;
  for (int i = 1; i <= 4; ++i) {
    const std::string f =
        cs_test::shared_data_dir() + "/sar/gotcha/data_3dsar_pass1_az00" + std::to_string(i) + "_HH.mat";
    if (g_file_test(f.c_str(), G_FILE_TEST_IS_REGULAR)) files.push_back(f);
  }
  if (files.size() != 4)
    GTEST_SKIP() << "Gotcha data not found under CS_SHARED_DATA='" << cs_test::shared_data_dir() << "'";
  TempFile cphd("gotcha.cphd");
  cs::sar::convert_gotcha_to_cphd(files, cphd.path());
  gchar *cwd = g_get_current_dir();
  const std::string png = std::string(cwd) + "/sar-gotcha.png";
  g_free(cwd);
  const std::string source = "cphdsrc location=" + cphd.path() +
                             " pulses-per-buffer=100 ! sarpulsecompress name=pc backend=cpu window=taylor upsample=4";
  const std::string form = " ! sarbackproject backend=cpu width=320 height=320 pixel-spacing=0.25";
  PipelineRun focused, defocused;
  run_pipeline(source + form + " ! tee name=t t. ! queue ! appsink name=out sync=false t. ! queue ! sarimage "
                               "dynamic-range=45 ! pngenc ! filesink location=" + png,
               &focused);
  run_pipeline(source + form + " ! appsink name=out sync=false", &defocused, [](GstElement *pipeline) {
    GstElement *pc = gst_bin_get_by_name(GST_BIN(pipeline), "pc");
    GstPad *pad = gst_element_get_static_pad(pc, "src");
    gst_pad_add_probe(
        pad, GST_PAD_PROBE_TYPE_BUFFER,
        [](GstPad *, GstPadProbeInfo *info, gpointer) -> GstPadProbeReturn {
          GstBuffer *b = gst_buffer_make_writable(GST_PAD_PROBE_INFO_BUFFER(info));
          GstSarPulseMeta *m = gst_buffer_get_sar_pulse_meta(b);
          for (guint i = 0; m && i < m->n_pulses; ++i) {
            GstSarPulseParameters &p = m->pulses[i];
            const double u = 2.0 * double(m->first_pulse + i) / 468.0 - 1.0;  // -1..1 over the 469 pulses
            const cs::sar::Vec3 tx{p.tx_pos[0], p.tx_pos[1], p.tx_pos[2]}, srp{p.srp_pos[0], p.srp_pos[1], p.srp_pos[2]};
            const cs::sar::Vec3 moved = srp + (0.05 * u * u) * cs::sar::unit(srp - tx);
            const double xyz[3] = {moved.x, moved.y, moved.z};
            for (int j = 0; j < 3; ++j) p.srp_pos[j] = xyz[j];
          }
          GST_PAD_PROBE_INFO_DATA(info) = b;
          return GST_PAD_PROBE_OK;
        },
        nullptr, nullptr);
    gst_object_unref(pad);
    gst_object_unref(pc);
  });
  ASSERT_EQ(focused.error, "");
  ASSERT_EQ(defocused.error, "");
  ASSERT_EQ(focused.samples.size(), 1u);
  ASSERT_EQ(defocused.samples.size(), 1u);
  EXPECT_EQ(meta_of(focused, 0)->n_pulses, 469u);
  auto peak_to_mean_db = [](const Image &image) {
    double peak = 0, mean = 0;
    for (const Cf &v : image) {
      peak = std::max(peak, double(std::norm(v)));
      mean += std::norm(v) / double(image.size());
    }
    return 10 * std::log10(peak / mean);
  };
  const Image a = image_of(focused, 0), b = image_of(defocused, 0);
  std::printf("[ measured ] Gotcha: entropy %.3f (motion error %.3f), peak-to-mean %.1f dB (%.1f dB); "
              "picture: %s\n",
              image_entropy(a), image_entropy(b), peak_to_mean_db(a), peak_to_mean_db(b), png.c_str());
  EXPECT_LT(image_entropy(a), image_entropy(b) - 0.3);
  EXPECT_GT(peak_to_mean_db(a), peak_to_mean_db(b) + 3.0);
  EXPECT_TRUE(g_file_test(png.c_str(), G_FILE_TEST_IS_REGULAR)) << png;
}

// ---------------------------------------------------------------- CUDA

// The CUDA element equals the CPU element: whole-stream images of both
// geometries (from system memory, and from device memory after gpuupload and
// CUDA pulse compression), video SAR moved on by add/subtract, and tiled
// grids. Tolerances are the kernels' CUDA-vs-CPU ones for mixed precision
// (fma and device sin/cos round differently): 100 dB signal-to-error.
// The CUDA output is device memory when downstream accepts it.
TEST(GpuSarBackproject, CudaMatchesCpu) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  for (Geometry geometry : {Geometry::Airborne, Geometry::Spaceborne}) {
    SCOPED_TRACE(bp_test::to_string(geometry));
    cs::sar::SimulatorConfig sc = bp_test::collection(geometry);
    for (int i = 0; i < 5; ++i)
      sc.targets.push_back({cs::sar::Vec3{uniform(rng, -20, 20), uniform(rng, -20, 20), 0},
                            std::polar(uniform(rng, 0.5, 2), uniform(rng, -M_PI, M_PI))});
    const std::string source = sim_launch(sc, 48) + " snr=10";
    const std::string compress = " ! sarpulsecompress window=hamming upsample=4 backend=";
    for (const std::string &grid : {std::string("width=200 height=180 pixel-spacing=0.25"),
                                   std::string("width=200 height=180 pixel-spacing=0.25 max-tile-pixels=3000"),
                                   std::string("width=128 height=128 aperture=96 stride=24 refresh-interval=1000"),
                                   std::string("width=128 height=128 interpolation=knab precision=double")}) {
      SCOPED_TRACE(grid);
      PipelineRun cpu, cuda, device_input;
      run_pipeline(source + compress + "cpu ! sarbackproject backend=cpu " + grid + " ! appsink name=out sync=false",
                   &cpu);
      run_pipeline(source + compress + "cpu ! sarbackproject backend=cuda " + grid + " ! appsink name=out sync=false",
                   &cuda);
      run_pipeline(source + " ! gpuupload" + compress + "cuda ! sarbackproject backend=cuda " + grid +
                       " ! appsink name=out sync=false",
                   &device_input);
      ASSERT_EQ(cpu.error, "");
      ASSERT_EQ(cuda.error, "");
      ASSERT_EQ(device_input.error, "");
      ASSERT_GE(cpu.samples.size(), 1u);
      ASSERT_EQ(cuda.samples.size(), cpu.samples.size());
      ASSERT_EQ(device_input.samples.size(), cpu.samples.size());
      EXPECT_TRUE(gst_caps_features_contains(gst_caps_get_features(cuda.caps(0), 0), GST_CAPS_FEATURE_MEMORY_CS_DEVICE))
          << "CUDA output in device memory";
      for (size_t k = 0; k < cpu.samples.size(); ++k) {
        const Image ref = image_of(cpu, k);
        const double ser = bp_test::signal_to_error_db(image_of(cuda, k), ref);
        // The CUDA pulse compression adds cuFFT's rounding (1e-5 relative): 90 dB.
        const double ser_device = bp_test::signal_to_error_db(image_of(device_input, k), ref);
        std::printf("[ measured ] CUDA vs CPU %s image %zu: SER %.1f dB (device input %.1f dB)\n", grid.c_str(), k,
                    ser, ser_device);
        EXPECT_GE(ser, 100.0) << "image " << k;
        EXPECT_GE(ser_device, 90.0) << "image " << k;
        EXPECT_EQ(meta_of(cuda, k)->first_pulse, meta_of(cpu, k)->first_pulse);
      }
    }
  }
}

// On CUDA, video SAR moved on by add/subtract equals recomputation as on the CPU.
TEST(GpuSarBackproject, VideoSarMovedOnEqualsRecomputation) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 600;
  for (int i = 0; i < 8; ++i)
    sc.targets.push_back({cs::sar::Vec3{uniform(rng, -20, 20), uniform(rng, -20, 20), 0}, {1, 0}});
  const std::string source = sim_launch(sc, 64) + " snr=0 ! sarpulsecompress backend=cuda upsample=4";
  const std::string grid = " ! sarbackproject backend=cuda width=256 height=256 aperture=128 stride=16 ";
  PipelineRun moved, full;
  run_pipeline(source + grid + "refresh-interval=1000 ! appsink name=out sync=false", &moved);
  run_pipeline(source + grid + "refresh-interval=1 ! appsink name=out sync=false", &full);
  ASSERT_EQ(moved.error, "");
  ASSERT_EQ(full.error, "");
  ASSERT_EQ(moved.samples.size(), size_t((600 - 128) / 16 + 1));
  ASSERT_EQ(full.samples.size(), moved.samples.size());
  for (size_t k = 1; k < moved.samples.size(); ++k)
    EXPECT_GE(bp_test::signal_to_error_db(image_of(moved, k), image_of(full, k)), 80.0) << "image " << k;
}

namespace {

// The largest difference between two images, relative to the reference's brightest pixel.
double worst_relative_difference(const Image &image, const Image &reference) {
  double peak = 0, worst = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    peak = std::max(peak, double(std::abs(reference[i])));
    worst = std::max(worst, double(std::abs(image[i] - reference[i])));
  }
  return worst / peak;
}

bool in_device_memory(GstCaps *caps) {
  return gst_caps_features_contains(gst_caps_get_features(caps, 0), GST_CAPS_FEATURE_MEMORY_CS_DEVICE);
}

}  // namespace

// Images larger than device memory: a 512 x 512 image in 4 bands of 128 rows
// (512 KiB each) with device-memory-limit = the ring + 3.5 bands keeps one
// band resident (two more go to the paging buffers: see the BandResidency
// kernel tests) and pages the other three through page-locked host memory.
// Whole-stream and video SAR (add / subtract on paged bands, refresh every
// 4 images) give the unpaged image of the same mode: the same kernels on the
// same band grids, so bit for bit is expected; the check allows 1e-6 of the
// peak. Paged images come out in system memory, unpaged ones in device
// memory. A budget below the ring plus two bands is a clear element error.
TEST(GpuSarBackproject, PagedBandsEqualTheResidentImage) {
  CS_REQUIRE_GPU();
  std::mt19937_64 rng(cs_test::fresh_seed());
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.num_pulses = 384;
  for (int i = 0; i < 6; ++i)
    sc.targets.push_back({cs::sar::Vec3{uniform(rng, -20, 20), uniform(rng, -20, 20), 0},
                          std::polar(uniform(rng, 0.5, 2), uniform(rng, -M_PI, M_PI))});
  const std::string source = sim_launch(sc, 64) + " snr=10 ! sarpulsecompress backend=cuda upsample=4";
  // Profile length, for the ring's share of the budget.
  PipelineRun probe;
  run_pipeline(source + " ! appsink name=out sync=false", &probe);
  ASSERT_EQ(probe.error, "");
  ASSERT_GE(probe.samples.size(), 1u);
  const int bins = caps_int(probe.caps(0), "bins-per-pulse");
  ASSERT_GT(bins, 0);
  const size_t band_bytes = size_t(128) * 512 * sizeof(Cf);
  struct Mode {
    const char *name, *settings;
    int64_t ring_profiles;
    size_t images;
  };
  const Mode modes[] = {{"whole stream", "", 0, 1},
                        {"video SAR", "aperture=128 stride=32 refresh-interval=4 ", 128 + 32, (384 - 128) / 32 + 1}};
  for (const Mode &mode : modes) {
    SCOPED_TRACE(mode.name);
    const size_t limit = size_t(mode.ring_profiles) * size_t(bins) * sizeof(Cf) + 3 * band_bytes + band_bytes / 2;
    const std::string grid = std::string(" ! sarbackproject backend=cuda width=512 height=512 pixel-spacing=0.1 "
                                         "max-tile-pixels=65536 ") + mode.settings;
    PipelineRun resident, paged, too_small;
    run_pipeline(source + grid + " ! appsink name=out sync=false", &resident);
    run_pipeline(source + grid + "device-memory-limit=" + std::to_string(limit) + " ! appsink name=out sync=false",
                 &paged);
    run_pipeline(source + grid + "device-memory-limit=" + std::to_string(2 * band_bytes - 1) +
                     " ! appsink name=out sync=false",
                 &too_small);
    ASSERT_EQ(resident.error, "");
    ASSERT_EQ(paged.error, "");
    ASSERT_EQ(resident.samples.size(), mode.images);
    ASSERT_EQ(paged.samples.size(), mode.images);
    EXPECT_TRUE(in_device_memory(resident.caps(0))) << "the whole image fits: device memory";
    EXPECT_FALSE(in_device_memory(paged.caps(0))) << "paged bands: system memory";
    EXPECT_FALSE(gst_is_cs_memory(gst_buffer_peek_memory(paged.buffer(0), 0)));
    for (size_t k = 0; k < mode.images; ++k) {
      const Image a = image_of(paged, k), b = image_of(resident, k);
      const double worst = worst_relative_difference(a, b);
      std::printf("[ measured ] %s image %zu: paged vs resident, worst difference %.3g of the peak%s\n", mode.name, k,
                  worst, std::memcmp(a.data(), b.data(), a.size() * sizeof(Cf)) == 0 ? " (bit for bit)" : "");
      EXPECT_LE(worst, 1e-6) << "image " << k;
      EXPECT_EQ(meta_of(paged, k)->first_pulse, meta_of(resident, k)->first_pulse);
      EXPECT_EQ(meta_of(paged, k)->n_pulses, meta_of(resident, k)->n_pulses);
    }
    EXPECT_NE(too_small.error.find("cannot be formed"), std::string::npos) << too_small.error;
    EXPECT_NE(too_small.error.find("device-memory-limit"), std::string::npos) << too_small.error;
  }
}

// sarimage takes the CUDA element's device-memory images (mapping downloads
// them) and gives the grey levels of the CPU path (within one level: the two
// images differ by CUDA's rounding).
TEST(GpuSarImage, DeviceImagesGiveTheCpuLevels) {
  CS_REQUIRE_GPU();
  cs::sar::SimulatorConfig sc = bp_test::collection(Geometry::Airborne);
  sc.targets.push_back({cs::sar::Vec3{2.2, -3.1, 0}, {1, 0}});
  sc.targets.push_back({cs::sar::Vec3{-6.4, 4.5, 0}, {0.3, 0.2}});
  const std::string source = sim_launch(sc, 64) + " snr=20 ! sarpulsecompress backend=cpu upsample=4";
  PipelineRun cpu, cuda;
  for (const char *backend : {"cpu", "cuda"})
    run_pipeline(source + " ! sarbackproject width=64 height=48 backend=" + backend +
                     " ! sarimage ! video/x-raw,format=GRAY16_LE ! appsink name=out sync=false",
                 std::string(backend) == "cpu" ? &cpu : &cuda);
  ASSERT_EQ(cpu.error, "");
  ASSERT_EQ(cuda.error, "");
  ASSERT_EQ(cpu.samples.size(), 1u);
  ASSERT_EQ(cuda.samples.size(), 1u);
  GstMapInfo a, b;
  ASSERT_TRUE(gst_buffer_map(cpu.buffer(0), &a, GST_MAP_READ));
  ASSERT_TRUE(gst_buffer_map(cuda.buffer(0), &b, GST_MAP_READ));
  ASSERT_EQ(a.size, b.size);
  const auto *la = reinterpret_cast<const uint16_t *>(a.data), *lb = reinterpret_cast<const uint16_t *>(b.data);
  int worst = 0, nonzero = 0;
  for (size_t i = 0; i < a.size / 2; ++i) {
    worst = std::max(worst, std::abs(int(la[i]) - int(lb[i])));
    nonzero += la[i] > 0;
  }
  gst_buffer_unmap(cpu.buffer(0), &a);
  gst_buffer_unmap(cuda.buffer(0), &b);
  EXPECT_LE(worst, 1);
  EXPECT_GT(nonzero, 64 * 48 / 4) << "a picture, not black (42% of the pixels above black on an H200)";
}
