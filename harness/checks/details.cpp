// Details collapsed: the same detail at several strides is one line naming them, a race is one
// line per fix, and each check keeps a bounded number of bounded lines.

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "common/text.hpp"
#include "model/report.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

// "stride 8: " at the start of a detail: its length and the stride; 0 where there is none.
std::size_t stride_prefix(const std::string& detail, std::string& stride) {
    constexpr std::string_view kStride = "stride ";
    if (detail.compare(0, kStride.size(), kStride) != 0) {
        return 0;
    }
    std::size_t end = kStride.size();
    while (end < detail.size() && std::isdigit(static_cast<unsigned char>(detail[end])) != 0) {
        ++end;
    }
    if (end == kStride.size() || detail.compare(end, 2, ": ") != 0) {
        return 0;
    }
    stride = detail.substr(kStride.size(), end - kStride.size());
    return end + 2;
}

// "3, 5, 8 and 9", the first few of many.
std::string strides_text(const std::vector<std::string>& strides) {
    constexpr std::size_t kNamed = 8;
    std::string text;
    for (std::size_t i = 0; i < strides.size() && i < kNamed; ++i) {
        text += (i == 0 ? "" : i + 1 == strides.size() ? " and " : ", ") + strides[i];
    }
    if (strides.size() > kNamed) {
        text += " and " + std::to_string(strides.size() - kNamed) + " more";
    }
    return text;
}

}  // namespace

std::string race_fix(std::string_view race) {
    if (race.find("no __syncthreads() between them") == std::string_view::npos) {
        return {};
    }
    std::vector<std::string_view> places;
    for (std::size_t at = race.find(" at "); at != std::string_view::npos;
         at = race.find(" at ", at + 4)) {
        // A place ends at the comma or " with" after it; it may hold a space ("line 25",
        // "PTX line 67": sim::location_text).
        const std::size_t start = at + 4;
        const std::size_t end = std::min(race.find(',', start), race.find(" with ", start));
        places.push_back(
            race.substr(start, end == std::string_view::npos ? race.npos : end - start));
    }
    if (places.size() >= 2) {
        // In source order, so that a read racing a write and the write racing the read (the
        // same missing barrier, seen from both sides) are one fix.
        // "probe.cu:25:9" (sim::location_text) as (file, line, column); (place, 0, 0) where it
        // is not FILE:LINE[:COLUMN].
        const auto position_of = [](std::string_view place) {
            const auto number = [](std::string_view digits) {
                return digits.size() < 9 && !digits.empty() &&
                               digits.find_first_not_of("0123456789") == std::string_view::npos
                           ? std::stol(std::string(digits))
                           : -1L;
            };
            std::string_view file = place;
            long numbers[2] = {-1, -1};
            int count = 0;
            for (; count < 2; ++count) {
                const std::size_t colon = file.rfind(':');
                if (colon == std::string_view::npos || number(file.substr(colon + 1)) < 0) {
                    break;
                }
                numbers[count] = number(file.substr(colon + 1));
                file = file.substr(0, colon);
            }
            if (count == 0) {
                return std::make_tuple(place, 0L, 0L);
            }
            // One number is the line; two are the line and then the column.
            return count == 1 ? std::make_tuple(file, numbers[0], 0L)
                              : std::make_tuple(file, numbers[1], numbers[0]);
        };
        std::string_view first = places[1];
        std::string_view second = places[0];
        if (position_of(second) < position_of(first)) {
            std::swap(first, second);
        }
        return "put __syncthreads() between " + std::string(first) + " and " + std::string(second);
    }
    if (places.size() == 1) {
        return "put __syncthreads() before " + std::string(places[0]);
    }
    return {};
}

void collapse_details(CheckResult& check, std::size_t max_details, std::size_t max_bytes) {
    constexpr std::string_view kRace = "a shared-memory race: ";
    constexpr std::string_view kRacedInAll = " warp-wide shared-memory accesses raced in all";
    constexpr std::string_view kUnwritten = " before any thread of its block wrote it";
    struct Group {
        std::string first;  // the first line, as it was
        std::string fix;    // a race's fix
        std::vector<std::string> strides;
        std::size_t times = 0;
        unsigned long long raced = 0;  // "N ... raced in all", summed
    };
    std::vector<Group> groups;
    std::map<std::string, std::size_t> group_of;
    for (std::string& detail : check.details) {
        std::string stride;
        const std::size_t prefix = stride_prefix(detail, stride);
        std::string rest = detail.substr(prefix);
        std::string key = rest;
        std::string fix;
        unsigned long long raced = 0;
        if (rest.compare(0, kRace.size(), kRace) == 0) {
            const std::string_view race = std::string_view(rest).substr(kRace.size());
            fix = race_fix(race);
            const std::size_t digits = race.find_first_not_of("0123456789");
            if (digits > 0 && digits < 19 && digits != std::string_view::npos &&
                race.substr(digits) == kRacedInAll) {
                raced = std::stoull(std::string(race.substr(0, digits)));
                key = "raced in all";
            } else if (!fix.empty()) {
                key = "race: " + fix;  // one fix, one line, whichever lanes and words raced
            }
        }
        // A read of a word nothing wrote is one line per place in the source, whichever thread,
        // block and word read it (the simulator names two per launch).
        const std::size_t unwritten = rest.find(kUnwritten);
        if (fix.empty() && unwritten != std::string::npos) {
            const std::size_t at = rest.rfind(" at ", unwritten);
            if (at != std::string::npos) {
                key = "unwritten read at " + rest.substr(at + 4, unwritten - at - 4);
            }
        }
        const auto [found, added] = group_of.emplace(key, groups.size());
        if (added) {
            groups.push_back({std::move(detail), fix, {}, 0, 0});
        }
        Group& group = groups[found->second];
        ++group.times;
        group.raced += raced;
        if (!stride.empty() &&
            std::find(group.strides.begin(), group.strides.end(), stride) == group.strides.end()) {
            group.strides.push_back(stride);
        }
    }
    std::vector<std::string> details;
    for (const Group& group : groups) {
        std::string line = group.first;
        if (group.raced > 0 && group.times > 1) {
            line = std::string(kRace) + std::to_string(group.raced) + std::string(kRacedInAll) +
                   ", at strides " + strides_text(group.strides);
        } else if (group.times > 1) {
            line += " (the same " + std::to_string(group.times) + " times" +
                    (group.strides.size() > 1 ? ", at strides " + strides_text(group.strides)
                                              : std::string()) +
                    ")";
        }
        if (!group.fix.empty()) {
            line += "; " + group.fix;
        }
        details.push_back(text::shorten(line, max_bytes));
    }
    if (details.size() > max_details) {
        const std::size_t cut = details.size() - max_details;
        details.resize(max_details);
        details.push_back("and " + std::to_string(cut) + " more " +
                          (cut == 1 ? "detail" : "details") + " (cut: a check lists at most " +
                          std::to_string(max_details) + ")");
    }
    check.details = std::move(details);
    check.message = text::shorten(check.message, 2 * max_bytes);
}

}  // namespace grader
