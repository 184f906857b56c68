#pragma once
// The cores this process may run on: those of its CPU affinity (taskset, a container's cpuset,
// Slurm's allocation), which std::thread::hardware_concurrency() does not read; at least 1.

#include <sched.h>

#include <algorithm>
#include <thread>

namespace grader {

inline unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0)
        return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
    return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace grader
