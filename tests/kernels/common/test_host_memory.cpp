// The memory the process may use: the host's, or its control group's limit
// (cgroup v2 memory.max, v1 memory.limit_in_bytes, on the group and the
// groups above it), read from a folder laid out as /sys/fs/cgroup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/cuda_runtime.h"

namespace {

namespace fs = std::filesystem;

struct CgroupTree {
  fs::path root;
  CgroupTree() {
    char name[] = "/tmp/cs-cgroup-XXXXXX";
    root = mkdtemp(name);
  }
  ~CgroupTree() { fs::remove_all(root); }
  void write(const std::string &file, const std::string &text) const {
    const fs::path path = root / file;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  size_t limit(const std::string &proc_self_cgroup) const {
    return cs::cgroup_memory_limit(proc_self_cgroup, root.string());
  }
};

TEST(HostMemory, CgroupV2TakesTheLowestLimitOnTheWayUp) {
  CgroupTree t;
  t.write("memory.max", "max\n");
  t.write("slice/memory.max", "8589934592\n");
  t.write("slice/app/memory.max", "max\n");
  EXPECT_EQ(t.limit("0::/slice/app\n"), 8589934592u);
  t.write("slice/app/memory.max", "1073741824\n");
  EXPECT_EQ(t.limit("0::/slice/app\n"), 1073741824u);
  EXPECT_EQ(t.limit("0::/\n"), 0u) << "the root has no limit";
}

TEST(HostMemory, CgroupV1ReadsTheMemoryHierarchy) {
  CgroupTree t;
  t.write("memory/memory.limit_in_bytes", "9223372036854771712\n");  // unlimited
  t.write("memory/docker/abc/memory.limit_in_bytes", "4294967296\n");
  EXPECT_EQ(t.limit("12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n"), 4294967296u);
  EXPECT_EQ(t.limit("4:memory:/\n"), 0u);
  EXPECT_EQ(t.limit("4:cpu:/docker/abc\n"), 0u) << "only the memory controller's group counts";
}

TEST(HostMemory, NoLimitOrNoFilesMeansNoLimit) {
  CgroupTree t;
  EXPECT_EQ(t.limit(""), 0u);
  EXPECT_EQ(t.limit("0::/missing\n"), 0u);
  t.write("memory.max", "not a number\n");
  EXPECT_EQ(t.limit("0::/\n"), 0u);
}

TEST(HostMemory, AtMostThePhysicalMemory) {
  const size_t physical = size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
  const size_t usable = cs::host_memory_bytes();
  EXPECT_GT(usable, 0u);
  EXPECT_LE(usable, physical);
}

}  // namespace
