// What a count of memory traffic says: degrees against the fewest wavefronts, sectors per
// request, the worst line, and which of them a run is judged by.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "model/measurements.hpp"
#include "model/observations.hpp"

namespace grader {
namespace {

std::optional<double> per_request(std::uint64_t numerator, std::uint64_t requests) {
    if (requests == 0) {
        return std::nullopt;
    }
    return static_cast<double>(numerator) / static_cast<double>(requests);
}

// `value` counted on `blocks` blocks, times grid_blocks: exact, for comparing at a grid's scale.
bool same_at_scale(std::uint64_t whole_grid, std::uint64_t grid_blocks, std::uint64_t value,
                   std::uint64_t blocks) {
    if (blocks == 0 || blocks == grid_blocks) {
        return whole_grid == value;
    }
    std::uint64_t left = 0;
    std::uint64_t right = 0;
    if (__builtin_mul_overflow(whole_grid, blocks, &left) ||
        __builtin_mul_overflow(value, grid_blocks, &right)) {
        return false;  // no count of a grade comes near 2^64
    }
    return left == right;
}

bool near(const std::optional<double>& counted, const std::optional<double>& witnessed) {
    if (!counted || !witnessed) {
        return counted.has_value() == witnessed.has_value();
    }
    return std::abs(*counted - *witnessed) <=
           std::max(0.01, SharedAccessCounts::kWitnessTolerance * *witnessed);
}

}  // namespace

std::optional<double> SharedAccessCounts::load_degree() const {
    // Counts written before the fewest wavefronts were counted: wavefronts per request.
    return per_request(load_wavefronts, load_ideal_wavefronts > 0 || load_requests == 0
                                            ? load_ideal_wavefronts
                                            : load_requests);
}

std::optional<double> SharedAccessCounts::store_degree() const {
    return per_request(store_wavefronts, store_ideal_wavefronts > 0 || store_requests == 0
                                             ? store_ideal_wavefronts
                                             : store_requests);
}

std::optional<double> SharedAccessCounts::global_load_sectors_per_request() const {
    return per_request(global_load_sectors, global_load_requests);
}

std::optional<double> SharedAccessCounts::global_store_sectors_per_request() const {
    return per_request(global_store_sectors, global_store_requests);
}

std::optional<double> SharedAccessCounts::launch_degree() const {
    const auto load = load_degree();
    const auto store = store_degree();
    if (!load && !store) {
        return std::nullopt;
    }
    return std::max(load.value_or(0.0), store.value_or(0.0));
}

const SharedLineCounts* SharedAccessCounts::worst_line(bool loads_only) const {
    const SharedLineCounts* worst = nullptr;
    for (const SharedLineCounts& line : lines) {
        if (loads_only && line.store) {
            continue;
        }
        if (worst == nullptr || line.degree > worst->degree) {
            worst = &line;
        }
    }
    return worst;
}

bool SharedAccessCounts::confirms(const SharedAccessCounts& witness,
                                  std::uint64_t grid_blocks) const {
    return same_at_scale(load_requests, grid_blocks, witness.load_requests, witness.blocks) &&
           same_at_scale(store_requests, grid_blocks, witness.store_requests, witness.blocks) &&
           near(load_degree(), witness.load_degree()) &&
           near(store_degree(), witness.store_degree());
}

JudgedDegree judged_degree(const KernelRun& run, std::uint64_t grid_blocks, bool loads_only) {
    JudgedDegree judged;
    if (!run.counts) {
        return judged;
    }
    judged.degree = loads_only ? run.counts->load_degree() : run.counts->launch_degree();
    if (!judged.degree) {
        return judged;
    }
    const SharedAccessCounts* lines = nullptr;
    if (run.count_source == "simulator") {
        lines = &*run.counts;
    } else if (run.witness && run.counts->confirms(*run.witness, grid_blocks)) {
        lines = &*run.witness;
    }
    const SharedLineCounts* worst = lines != nullptr ? lines->worst_line(loads_only) : nullptr;
    if (worst != nullptr) {
        judged.degree = worst->degree;
        judged.line = worst;
        judged.confirmed_witness = lines != &*run.counts;
    }
    return judged;
}

}  // namespace grader
