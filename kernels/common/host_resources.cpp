#include "common/host_resources.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cs {

namespace {

// The words of a control file ("max 100000", "4294967296"); none when it cannot be read.
std::vector<std::string> words_of(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A whole decimal number, or nothing.
bool parse_count(const std::string &text, double *value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *value = std::strtod(text.c_str(), nullptr);
  return true;
}

// The lowest positive limit that `limit_in(folder)` reads in the folder of
// `path` below `root` and in each folder above it up to `root`; 0 = none.
double lowest_limit_up_from(const std::string &root, std::string path,
                            const std::function<double(const std::string &)> &limit_in) {
  double lowest = 0;
  while (true) {
    if (const double limit = limit_in(root + path); limit > 0 && (lowest == 0 || limit < lowest)) lowest = limit;
    if (path.empty() || path == "/") return lowest;
    path.erase(path.find_last_of('/'));
  }
}

// The lowest limit over the groups /proc/self/cgroup lists: the v2 group
// (hierarchy 0) read by `v2`, and the v1 group of `controller` read by `v1`
// below root/`controller` (or root/`its hierarchy's controllers`).
double lowest_group_limit(const std::string &proc_self_cgroup, const std::string &root, const std::string &controller,
                          const std::function<double(const std::string &)> &v2,
                          const std::function<double(const std::string &)> &v1) {
  double lowest = 0;
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // hierarchy-id:controllers:path
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    double limit = 0;
    if (line.compare(0, first, "0") == 0 && controllers.empty())
      limit = lowest_limit_up_from(root, path, v2);
    else if (("," + controllers + ",").find("," + controller + ",") != std::string::npos)
      // mounted as root/cpu, or only under the hierarchy's own name (root/cpu,cpuacct)
      limit = lowest_limit_up_from(
          root + "/" + (std::filesystem::exists(root + "/" + controller) ? controller : controllers), path, v1);
    if (limit > 0 && (lowest == 0 || limit < lowest)) lowest = limit;
  }
  return lowest;
}

// A memory limit file's bytes; 0 for "max", v1's unlimited (near 2^63) or anything unreadable.
double memory_limit_in(const std::string &file) {
  const std::vector<std::string> w = words_of(file);
  double bytes = 0;
  return w.size() == 1 && parse_count(w[0], &bytes) && bytes < 0x1p62 ? bytes : 0;
}

std::string read_all(const char *path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

size_t cgroup_memory_limit(const std::string &proc_self_cgroup, const std::string &cgroup_root) {
  return size_t(lowest_group_limit(
      proc_self_cgroup, cgroup_root, "memory",
      [](const std::string &folder) { return memory_limit_in(folder + "/memory.max"); },
      [](const std::string &folder) { return memory_limit_in(folder + "/memory.limit_in_bytes"); }));
}

double cgroup_cpu_limit(const std::string &proc_self_cgroup, const std::string &cgroup_root) {
  return lowest_group_limit(
      proc_self_cgroup, cgroup_root, "cpu",
      [](const std::string &folder) {  // "max 100000" or "200000 100000"
        const std::vector<std::string> w = words_of(folder + "/cpu.max");
        double quota = 0, period = 0;
        return w.size() == 2 && parse_count(w[0], &quota) && parse_count(w[1], &period) && period > 0
                   ? quota / period
                   : 0.0;
      },
      [](const std::string &folder) {  // a quota of -1 is none
        const std::vector<std::string> q = words_of(folder + "/cpu.cfs_quota_us"),
                                       p = words_of(folder + "/cpu.cfs_period_us");
        double quota = 0, period = 0;
        return q.size() == 1 && p.size() == 1 && parse_count(q[0], &quota) && parse_count(p[0], &period) &&
                       period > 0
                   ? quota / period
                   : 0.0;
      });
}

size_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t physical = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : 0;
  const size_t limit = cgroup_memory_limit(read_all("/proc/self/cgroup"), "/sys/fs/cgroup");
  return limit && (!physical || limit < physical) ? limit : physical;
}

unsigned usable_cores() {
  static const unsigned cores = usable_cores_now();
  return cores;
}

unsigned usable_cores_now() {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = std::min(cores, unsigned(std::max(1, CPU_COUNT(&set))));
  if (const double quota = cgroup_cpu_limit(read_all("/proc/self/cgroup"), "/sys/fs/cgroup"); quota > 0)
    cores = std::min(cores, unsigned(std::max(1.0, std::ceil(quota))));
  return cores;
}

int half_the_cores(int most) { return std::clamp(int(usable_cores()) / 2, 1, std::max(most, 1)); }

}  // namespace cs
