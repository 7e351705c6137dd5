// gstcs::ElementGpu: how processing elements see their input and output.
#include <gst/cudasensing/cudasensing.h>
#include <gtest/gtest.h>

#include <cstring>

#include "../plugins/core/gstcs-gpu.h"
#include "test_support.h"

namespace {

std::vector<uint8_t> host_copy(GstBuffer *buffer) {
  GstMapInfo map;
  EXPECT_TRUE(gst_buffer_map(buffer, &map, GST_MAP_READ));
  std::vector<uint8_t> v(map.data, map.data + map.size);
  gst_buffer_unmap(buffer, &map);
  return v;
}

// Copies what read() exposes into a fresh device output, then to the host.
std::vector<uint8_t> through_device(gstcs::ElementGpu &gpu, GstBuffer *input) {
  GstBuffer *out = gpu.new_output(gst_buffer_get_size(input));
  {
    auto view = gpu.read(input);
    void *d = gpu.begin_output(out);
    cs::memset_async(d, 0xCD, view.size(), gpu.stream());  // poison: every byte must be overwritten
    cs::copy_async(d, view.data(), view.size(), gpu.stream());
    gpu.end_output(out);
  }
  auto bytes = host_copy(out);
  gst_buffer_unref(out);
  return bytes;
}

GstMemory *filled_memory(GstAllocator *alloc, const uint8_t *data, size_t n) {
  GstMemory *mem = alloc && G_TYPE_CHECK_INSTANCE_TYPE(alloc, GST_TYPE_CS_ALLOCATOR)
                       ? gst_cs_allocator_alloc(alloc, n, nullptr)
                       : gst_allocator_alloc(alloc, n, nullptr);
  GstMapInfo map;
  EXPECT_TRUE(gst_memory_map(mem, &map, GST_MAP_WRITE));
  std::memcpy(map.data, data, n);
  gst_memory_unmap(mem, &map);
  return mem;
}

// A processing element whose start_backend makes its state and then fails
// (as hsiclassify's does on a library it cannot read), counting the starts
// and the stops that release the state.
struct BackendCounts {
  int starts = 0;
  int stops = 0;
  int live_states = 0;
};
BackendCounts backend_counts;

struct FailingStart {
  GstCsBaseTransform parent;
  int *state;
};
struct FailingStartClass {
  GstCsBaseTransformClass parent_class;
};

G_DEFINE_TYPE(FailingStart, failing_start, GST_TYPE_CS_BASE_TRANSFORM)

gboolean failing_start_start_backend(GstCsBaseTransform *base) {
  auto *self = reinterpret_cast<FailingStart *>(base);
  backend_counts.starts++;
  self->state = new int(0);
  backend_counts.live_states++;
  return FALSE;
}

gboolean failing_start_stop_backend(GstCsBaseTransform *base) {
  auto *self = reinterpret_cast<FailingStart *>(base);
  backend_counts.stops++;
  if (self->state) backend_counts.live_states--;
  delete self->state;
  self->state = nullptr;
  return TRUE;
}

void failing_start_class_init(FailingStartClass *klass) {
  static GstStaticPadTemplate sink = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
  static GstStaticPadTemplate src = GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
  gst_element_class_add_static_pad_template(GST_ELEMENT_CLASS(klass), &sink);
  gst_element_class_add_static_pad_template(GST_ELEMENT_CLASS(klass), &src);
  gst_element_class_set_static_metadata(GST_ELEMENT_CLASS(klass), "failing start", "Filter", "test", "test");
  klass->parent_class.start_backend = failing_start_start_backend;
  klass->parent_class.stop_backend = failing_start_stop_backend;
}

void failing_start_init(FailingStart *self) { self->state = nullptr; }

TEST(ElementGpu, CapsInEitherMemoryPreferDevice) {
  GstCaps *caps = gst_caps_from_string("application/x-test, a=(int)1");
  GstCaps *both = gst_cs_caps_any_memory(caps);
  ASSERT_EQ(gst_caps_get_size(both), 2u);
  EXPECT_TRUE(gst_caps_features_contains(gst_caps_get_features(both, 0), GST_CAPS_FEATURE_MEMORY_CS_DEVICE));
  EXPECT_TRUE(gst_caps_features_contains(gst_caps_get_features(both, 1), GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY));
  gst_caps_unref(both);
  gst_caps_unref(caps);
}

TEST(ElementGpu, WithoutDeviceIsAClearError) {
  if (cs::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW(gstcs::ElementGpu gpu(0), cs::CudaError);
}

TEST(GpuElementGpu, ReadsSystemMemoryInput) {
  CS_REQUIRE_GPU();
  gstcs::ElementGpu gpu(0);
  for (size_t n : {size_t(1), size_t(1000), (size_t(9) << 20) + 5}) {
    auto bytes = cs_test::random_bytes(n, cs_test::fresh_seed());
    GstBuffer *in = gst_buffer_new_memdup(bytes.data(), n);
    EXPECT_EQ(through_device(gpu, in), bytes) << n;
    gst_buffer_unref(in);
  }
}

// A pageable buffer that comes back (as from an upstream pool, rewritten
// each time) arrives with its current contents every time: the element holds
// it until its staged copy is done, so the producer cannot write it while
// the staging thread still reads it.
TEST(GpuElementGpu, SystemMemoryIsHeldUntilItsCopyIsDone) {
  CS_REQUIRE_GPU();
  const size_t n = (size_t(1) << 20) + 12345;
  GstBuffer *recycled = gst_buffer_new_allocate(nullptr, n, nullptr);
  {
    gstcs::ElementGpu gpu(0);
    for (int visit = 1; visit <= 3; ++visit) {
      auto bytes = cs_test::random_bytes(n, cs_test::fresh_seed());
      ASSERT_TRUE(gst_buffer_is_writable(recycled)) << "visit " << visit;
      gst_buffer_fill(recycled, 0, bytes.data(), n);  // the producer writes its buffer anew
      {
        auto view = gpu.read(recycled);
        EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(recycled), 2) << "held while its copy may run";
      }
      EXPECT_EQ(through_device(gpu, recycled), bytes) << "visit " << visit;
      GstBuffer *other = gst_buffer_new_memdup(bytes.data(), 4000);
      EXPECT_EQ(through_device(gpu, other), std::vector<uint8_t>(bytes.begin(), bytes.begin() + 4000));
      gst_buffer_unref(other);  // reading it let go of `recycled`, whose copy was done
    }
  }
  ASSERT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(recycled), 1);
  gst_buffer_unref(recycled);
}

TEST(GpuElementGpu, ReadsDeviceMemoryInPlace) {
  CS_REQUIRE_GPU();
  gstcs::ElementGpu gpu(0);
  auto bytes = cs_test::random_bytes(123456, cs_test::fresh_seed());
  GstAllocator *alloc = gst_cs_allocator_get(0, nullptr);
  GstBuffer *in = gst_buffer_new();
  gst_buffer_append_memory(in, filled_memory(alloc, bytes.data(), bytes.size()));
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(in, &map, GstMapFlags(GST_MAP_READ | GST_MAP_CS_DEVICE)));
  const void *device_ptr = map.data;
  gst_buffer_unmap(in, &map);
  {
    auto view = gpu.read(in);
    EXPECT_EQ(view.data(), device_ptr) << "device input must not be copied";
  }
  EXPECT_EQ(through_device(gpu, in), bytes);
  gst_buffer_unref(in);
  gst_object_unref(alloc);
}

TEST(GpuElementGpu, GathersMixedMemories) {
  CS_REQUIRE_GPU();
  gstcs::ElementGpu gpu(0);
  const size_t part = 300007;
  auto bytes = cs_test::random_bytes(3 * part, cs_test::fresh_seed());
  GstAllocator *device = gst_cs_allocator_get(0, nullptr);
  GstAllocator *pinned = gst_cs_pinned_allocator_get();
  GstBuffer *in = gst_buffer_new();
  gst_buffer_append_memory(in, filled_memory(device, bytes.data(), part));
  gst_buffer_append_memory(in, filled_memory(pinned, bytes.data() + part, part));
  gst_buffer_append_memory(in, filled_memory(nullptr, bytes.data() + 2 * part, part));
  EXPECT_EQ(through_device(gpu, in), bytes);
  gst_buffer_unref(in);
  gst_object_unref(device);
  gst_object_unref(pinned);
}

// GstBaseTransform calls stop only after a start that succeeded: a start that
// fails is undone at once, so that starting again (the application fixes a
// property and retries) does not leave the first attempt's state behind.
TEST(CsBaseTransform, StartThatFailsIsUndone) {
  backend_counts = BackendCounts();
  auto *element = GST_ELEMENT(gst_object_ref_sink(g_object_new(failing_start_get_type(), nullptr)));
  g_object_set(element, "backend", GST_CS_BACKEND_CPU, nullptr);
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_EQ(gst_element_set_state(element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    EXPECT_EQ(gst_element_set_state(element, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  gst_object_unref(element);
  EXPECT_EQ(backend_counts.starts, 2);
  EXPECT_EQ(backend_counts.stops, 2) << "each failed start is followed by its stop";
  EXPECT_EQ(backend_counts.live_states, 0) << "state made by a failed start outlives it";
}

}  // namespace
