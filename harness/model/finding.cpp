#include "model/finding.hpp"

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <utility>

#include "model/diagnosis.hpp"

namespace grader {
namespace {

struct KindEntry {
    FindingKind kind;
    std::string_view key;
    std::string_view cause;  // a Cause's key, or "none"
    Severity severity;
    unsigned fields;
};

const std::vector<KindEntry>& kinds() {
    static const std::vector<KindEntry> table = {
#define FINDING(kind, cause, severity, fields) \
    {FindingKind::kind, #kind, #cause, Severity::severity, fields},
#include "model/findings.def"
    };
    return table;
}

const KindEntry& entry(FindingKind kind) {
    const auto index = static_cast<std::size_t>(kind);
    return index < kinds().size() ? kinds()[index] : kinds().front();
}

// The order of the two places of a race, in the source: (file, line, column), then the PTX line.
auto position(const FindingPlace& place) {
    return std::make_tuple(place.file, place.line, place.column, place.ptx_line);
}

}  // namespace

bool Finding::has_stride(int stride) const {
    return std::find(strides.begin(), strides.end(), stride) != strides.end();
}

std::string_view to_string(FindingKind kind) {
    return entry(kind).key;
}

std::optional<FindingKind> finding_kind_from_string(std::string_view key) {
    for (const KindEntry& e : kinds()) {
        if (e.key == key) {
            return e.kind;
        }
    }
    return std::nullopt;
}

std::string_view to_string(Severity severity) {
    switch (severity) {
        case Severity::info:
            return "info";
        case Severity::warning:
            return "warning";
        case Severity::error:
            return "error";
    }
    return "error";
}

std::optional<Cause> cause_of(FindingKind kind) {
    return cause_from_string(entry(kind).cause);
}

Severity severity_of(FindingKind kind) {
    return entry(kind).severity;
}

unsigned fields_of(FindingKind kind) {
    return entry(kind).fields;
}

const std::vector<FindingKind>& all_finding_kinds() {
    static const std::vector<FindingKind> all = [] {
        std::vector<FindingKind> out;
        for (const KindEntry& e : kinds()) {
            out.push_back(e.kind);
        }
        return out;
    }();
    return all;
}

bool is_race(FindingKind kind) {
    switch (kind) {
        case FindingKind::race_read_after_write:
        case FindingKind::race_write_after_read:
        case FindingKind::race_write_after_write:
        case FindingKind::race_same_value:
        case FindingKind::race_one_store_two_values:
        case FindingKind::races_counted:
            return true;
        default:
            return false;
    }
}

std::vector<FindingPlace> barrier_between(const Finding& race) {
    switch (race.kind) {
        case FindingKind::race_read_after_write:
        case FindingKind::race_write_after_read:
        case FindingKind::race_write_after_write:
        case FindingKind::unwritten_shared_read: {
            if (race.kind == FindingKind::unwritten_shared_read && race.lines.size() < 2) {
                return {};  // no fill it raced: a word never written
            }
            if (race.lines.size() < 2) {
                return race.lines;
            }
            // In source order, so that a read racing a write and the write racing the read (one
            // missing barrier, seen from both sides) are one fix.
            std::vector<FindingPlace> places{race.lines[0], race.lines[1]};
            if (position(places[1]) < position(places[0])) {
                std::swap(places[0], places[1]);
            }
            return places;
        }
        default:
            return {};
    }
}

bool same_finding(const Finding& a, const Finding& b) {
    if (a.witness != b.witness) {
        return false;
    }
    // One missing barrier, whatever showed it: a race between two places, or a read of a word
    // the fill at the other place had not written yet.
    if (fails(a) && fails(b)) {
        const auto fix_a = barrier_between(a);
        if (fix_a.size() == 2 && fix_a == barrier_between(b)) {
            return true;
        }
    }
    if (is_race(a.kind) && is_race(b.kind)) {
        if (a.kind == FindingKind::races_counted || b.kind == FindingKind::races_counted) {
            return a.kind == b.kind;
        }
        const auto fix_a = barrier_between(a);
        const auto fix_b = barrier_between(b);
        if (!fix_a.empty() && !fix_b.empty()) {
            return fix_a == fix_b;  // one missing barrier, whichever side found it
        }
        return a.kind == b.kind && a.lines == b.lines;
    }
    if (a.kind != b.kind) {
        return false;
    }
    switch (a.kind) {
        case FindingKind::unwritten_shared_read:
            return a.lines == b.lines;
        case FindingKind::wrong_output: {
            if (!a.output || !b.output || a.timed != b.timed) {
                return false;
            }
            // The same element wrong with the same values (the stride aside).
            const OutputComparison& x = *a.output;
            const OutputComparison& y = *b.output;
            const auto same_value = [](double p, double q) {
                return p == q || (p != p && q != q);  // NaN is NaN here
            };
            return x.input == y.input && x.first_bad == y.first_bad &&
                   x.bad_elements == y.bad_elements && x.elements == y.elements &&
                   same_value(x.first_bad_value, y.first_bad_value) &&
                   same_value(x.first_bad_expected, y.first_bad_expected) &&
                   x.first_bad_wrote_nan == y.first_bad_wrote_nan;
        }
        case FindingKind::right_by_warp_order:
        case FindingKind::tile_never_read:
        case FindingKind::timing_machine_unfit:
        case FindingKind::timing_needs_gpu:
            return true;
        case FindingKind::warp_spans_rows:
            return a.counts && b.counts && a.counts->file == b.counts->file &&
                   a.counts->line == b.counts->line && a.counts->store == b.counts->store;
        case FindingKind::strided_global_stores:
            return a.values == b.values;
        case FindingKind::count_difference:
        case FindingKind::kernel_stopped:
        case FindingKind::clock_read:
            return a.text == b.text;
        default:
            return false;  // each said as it is
    }
}

std::vector<Finding> merged(const std::vector<Finding>& findings) {
    std::vector<Finding> out;
    for (const Finding& finding : findings) {
        const auto same = std::find_if(out.begin(), out.end(), [&](const Finding& kept) {
            return same_finding(kept, finding);
        });
        if (same == out.end()) {
            out.push_back(finding);
            continue;
        }
        for (const int stride : finding.strides) {
            if (!same->has_stride(stride)) {
                same->strides.push_back(stride);
            }
        }
        if (finding.kind == FindingKind::races_counted) {
            same->count += finding.count;
        }
        // A race found from both sides: the error's kind stands for the pair (a read before the
        // fill, seen first, stands for the race it makes: it says what went wrong).
        if (severity_of(finding.kind) > severity_of(same->kind)) {
            const std::vector<int> strides = same->strides;
            *same = finding;
            same->strides = strides;
        }
    }
    std::stable_partition(out.begin(), out.end(), [](const Finding& f) { return fails(f); });
    return out;
}

}  // namespace grader
