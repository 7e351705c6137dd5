// What of the host this process may use: its memory and cores as its
// control group (a container, a systemd slice) and its CPU affinity limit
// them, not the whole machine's. Defaults that scale with the host (copy
// threads, frames in flight, the largest block a source makes) read these.
#pragma once

#include <cstddef>
#include <string>

namespace cs {

// The host's physical memory, or the control group's limit where lower; 0
// when it cannot be told.
size_t host_memory_bytes();

// The cores this process may run on: the CPUs of its affinity mask, fewer
// where its control group's CPU quota is lower (rounded up); at least 1.
// Counted once (the first call), as streaming paths size their teams by it.
unsigned usable_cores();
// The same counted now (its files read again).
unsigned usable_cores_now();

// Half the usable cores, from 1 to `most`: the default team for host copies
// and reads that share the host with the rest of a pipeline.
int half_the_cores(int most = 8);

// The lowest memory limit on the control group that `proc_self_cgroup`
// (the text of /proc/self/cgroup) names and on its ancestors, read below
// `cgroup_root` (/sys/fs/cgroup): memory.max (cgroup v2) or
// memory/memory.limit_in_bytes (v1); 0 = none.
size_t cgroup_memory_limit(const std::string &proc_self_cgroup, const std::string &cgroup_root);

// The lowest CPU quota, in cores (quota / period), on that group and its
// ancestors: cpu.max (v2) or cpu/cpu.cfs_quota_us over cpu.cfs_period_us
// (v1); 0 = none.
double cgroup_cpu_limit(const std::string &proc_self_cgroup, const std::string &cgroup_root);

}  // namespace cs
