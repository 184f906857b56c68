#include "compile/cubin.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace grader {

namespace {

// A little-endian field of the image, or nullopt where it lies outside it.
template <class T>
std::optional<T> field(std::string_view image, std::uint64_t at) {
    if (at > image.size() || sizeof(T) > image.size() - at) {
        return std::nullopt;
    }
    T value;
    std::memcpy(&value, image.data() + at,
                sizeof(T));  // the hosts this builds on are little-endian
    return value;
}

}  // namespace

std::optional<int> cubin_registers(std::string_view cubin, std::string_view lowered_name) {
    // ELF64, little-endian: the section headers' table, its entries' size and count, and which
    // one names the others (the ELF specification's Elf64_Ehdr and Elf64_Shdr).
    if (cubin.size() < 64 ||
        cubin.substr(0, 4) !=
            "\x7f"
            "ELF" ||
        cubin[4] != 2 || cubin[5] != 1) {
        return std::nullopt;
    }
    const auto table = field<std::uint64_t>(cubin, 0x28);
    const auto entry_size = field<std::uint16_t>(cubin, 0x3a);
    const auto count = field<std::uint16_t>(cubin, 0x3c);
    const auto names_index = field<std::uint16_t>(cubin, 0x3e);
    if (!table || !entry_size || !count || !names_index || *entry_size < 64 ||
        *names_index >= *count) {
        return std::nullopt;
    }
    const auto header = [&](std::uint64_t index) { return *table + index * *entry_size; };
    const auto names_at = field<std::uint64_t>(cubin, header(*names_index) + 24);
    const auto names_size = field<std::uint64_t>(cubin, header(*names_index) + 32);
    if (!names_at || !names_size || *names_at > cubin.size() ||
        *names_size > cubin.size() - *names_at) {
        return std::nullopt;
    }
    const std::string_view names = cubin.substr(*names_at, *names_size);
    const std::string wanted = ".text." + std::string(lowered_name);
    for (std::uint64_t k = 0; k < *count; ++k) {
        const auto name = field<std::uint32_t>(cubin, header(k));
        const auto info = field<std::uint32_t>(cubin, header(k) + 44);
        if (!name || !info || *name >= names.size()) {
            return std::nullopt;
        }
        const std::string_view rest = names.substr(*name);
        if (rest.substr(0, rest.find('\0')) == wanted) {
            return static_cast<int>(*info >> 24);
        }
    }
    return std::nullopt;
}

}  // namespace grader
