#pragma once
// Large buffers on transparent huge pages. A buffer of tens of megabytes (a Part 2 grade's
// 64 MiB input and outputs, the simulator's global memory) costs more in its first touch than in
// its use when the kernel maps it 4 KiB at a time: a fault, a clear and a cgroup charge a page,
// 16,384 of them for 64 MiB, and as many to free. Backed by 2 MiB pages it costs the clearing
// alone: a fresh 64 MiB vector filled on this project's development machine took 28 ms of CPU
// on small pages and 8 ms on huge ones.

#include <cstddef>
#include <vector>

namespace grader {

// The smallest buffer worth the advice: eight huge pages. Below it a huge page cleared whole at
// its first touch can cost more than the faults it saves (Part 1's buffers are 170 KiB).
inline constexpr std::size_t kHugePagesFrom = std::size_t{16} << 20;

// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes) with huge pages at
// their first touch. Advice only: where transparent huge pages are off, or the range holds no
// whole huge page, nothing changes.
void advise_huge_pages(void* data, std::size_t bytes);

// Makes room for `count` elements in an empty `values`, on huge pages where it is large enough,
// before anything is written there.
template <class T>
void reserve_on_huge_pages(std::vector<T>& values, std::size_t count) {
    values.reserve(count);
    if (count * sizeof(T) >= kHugePagesFrom)
        advise_huge_pages(values.data(), count * sizeof(T));
}

}  // namespace grader
