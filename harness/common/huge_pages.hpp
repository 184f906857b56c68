#pragma once
// Transparent huge pages for the grade's large buffers. A first touch of anonymous memory costs a
// page fault and a clear per page: filling 64 MiB took 35 to 50 ms of the development machine's
// CPU on 4 KiB pages, 6 to 9 on 2 MiB pages (docs/simulator.md, item 14).

#include <cstddef>
#include <vector>

namespace grader {

// Buffers of at least this many bytes ask for huge pages; smaller ones would clear 2 MiB at a
// first touch that uses less.
inline constexpr std::size_t kHugePagesFrom = std::size_t{16} << 20;

// Advises the kernel (MADV_HUGEPAGE) that the whole 2 MiB pages inside [data, data + bytes) be
// huge pages, where the range spans kHugePagesFrom or more. Advice only: where transparent huge
// pages are off, or the advice fails, small pages serve as before. Must come before the range's
// first touch to change it.
void advise_huge_pages(void* data, std::size_t bytes);

// `values` made empty with room for `count` elements, its storage advised as above before any
// element is written: assign or insert up to `count` then fills it without moving it.
template <class T>
void reserve_huge(std::vector<T>& values, std::size_t count) {
    if (values.capacity() < count) {
        std::vector<T>().swap(values);
        values.reserve(count);
        advise_huge_pages(values.data(), count * sizeof(T));
    }
    values.clear();
}

}  // namespace grader
