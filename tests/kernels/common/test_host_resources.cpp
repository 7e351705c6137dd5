// The memory and cores the process may use: the host's, or its control
// group's limits (cgroup v2 memory.max and cpu.max, v1 memory.limit_in_bytes
// and cpu.cfs_quota_us, on the group and the groups above it), read from a
// folder laid out as /sys/fs/cgroup, and its CPU affinity.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/host_resources.h"

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
  double cpus(const std::string &proc_self_cgroup) const {
    return cs::cgroup_cpu_limit(proc_self_cgroup, root.string());
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

TEST(HostCores, CgroupQuotasInCores) {
  CgroupTree t;
  t.write("cpu.max", "max 100000\n");
  t.write("pod/cpu.max", "400000 100000\n");
  t.write("pod/app/cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(t.cpus("0::/pod/app\n"), 4.0);
  t.write("pod/app/cpu.max", "150000 100000\n");
  EXPECT_DOUBLE_EQ(t.cpus("0::/pod/app\n"), 1.5);
  EXPECT_EQ(t.cpus("0::/\n"), 0.0) << "no quota";
  t.write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n");
  t.write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  t.write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  t.write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(t.cpus("3:cpu,cpuacct:/docker/abc\n"), 2.0) << "v1, mounted under the hierarchy's name";
  t.write("cpu/docker/abc/cpu.cfs_quota_us", "300000\n");
  t.write("cpu/docker/abc/cpu.cfs_period_us", "100000\n");
  t.write("cpu/cpu.cfs_quota_us", "-1\n");
  t.write("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(t.cpus("3:cpu,cpuacct:/docker/abc\n"), 3.0) << "v1, mounted as root/cpu";
  EXPECT_EQ(t.cpus("3:cpu,cpuacct:/\n"), 0.0) << "a quota of -1 is none";
}

// The usable cores follow the affinity mask (taskset, a CPU set).
TEST(HostCores, AffinityBoundsTheUsableCores) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  EXPECT_LE(cs::usable_cores_now(), unsigned(CPU_COUNT(&before)));
  EXPECT_GE(cs::usable_cores_now(), 1u);
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(cs::usable_cores_now(), 1u);
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
  EXPECT_EQ(cs::usable_cores(), cs::usable_cores_now()) << "counted once, with the whole mask";
}

}  // namespace
