#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grader {

// Replaces each "{name}" in text by values.at(name); unknown names stay as they are.
std::string fill_template(std::string_view text, const std::map<std::string, std::string>& values);

// A 1-based line and column in a text file.
struct TextPosition {
    int line = 1;
    int column = 1;
};

// Reads a whole file of at most max_bytes. Returns nullopt and sets why when the file is
// missing, unreadable or larger than max_bytes.
std::optional<std::string> read_file_bounded(const std::filesystem::path& path,
                                             std::size_t max_bytes, std::string& why);

// A number with at most `digits` significant decimals, without trailing zeros ("1.05", "24.6").
std::string format_number(double value, int decimals);

// "a, b or c": names as a sentence offers them ("a" alone; empty for none).
std::string names_or(const std::vector<std::string>& names);

// Levenshtein's distance between two names: the "did you mean" of keys, subcommands and flags.
std::size_t edit_distance(std::string_view a, std::string_view b);

// "Did you mean": the candidate nearest to `typed` by edit distance, where it is near enough to be
// a typo (at most 2 edits, and fewer than half the word's letters); nullopt otherwise, and for a
// candidate equal to `typed`. The one rule for subcommands, flags, YAML keys and file names.
std::optional<std::string> nearest_name(std::string_view typed,
                                        const std::vector<std::string>& candidates);

// FNV-1a (64 bits) of bytes, continuing from `hash`: stable across runs and machines, for names
// and digests a later run must find again (not for security).
inline constexpr std::uint64_t kFnv1aOffset = 14695981039346656037ull;
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t hash = kFnv1aOffset);

// Each byte as two lowercase hex digits.
std::string hex_bytes(std::string_view bytes);

// SHA-256 of bytes (FIPS 180-4): what a page's Content-Security-Policy names an inline script by.
std::array<unsigned char, 32> sha256(std::string_view bytes);

// Base64 (RFC 4648, with padding).
std::string base64(std::string_view bytes);

}  // namespace grader
