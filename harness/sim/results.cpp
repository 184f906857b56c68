// Module queries and what is derived from a launch's counts: per-line sums, the lane-table
// summary, the cost model.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/sim.hpp"

namespace grader::sim {

namespace {

EntryInfo info_of(const detail::Program& program, const detail::Entry& entry) {
    EntryInfo info;
    info.name = entry.name;
    for (const auto p : entry.params)
        info.param_sizes.push_back(program.symbols[static_cast<std::size_t>(p)].size);
    info.static_shared_bytes = entry.static_shared_bytes;
    info.local_bytes_per_thread = entry.local_bytes;
    info.instructions = entry.code.size();
    return info;
}

// "_Z17probeSharedStridePKfPfmi" holds "probeSharedStride" as <length><name> after "_Z" (or
// after "_ZN...": only the simple, unqualified case is recognised).
bool mangled_name_is(std::string_view mangled, std::string_view name) {
    const std::string prefix = "_Z" + std::to_string(name.size()) + std::string(name);
    return mangled.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string shared_variable_name(const std::string& mangled) {
    const auto end = mangled.rfind('E');
    if (mangled.rfind("_ZZ", 0) != 0 || end == std::string::npos)
        return mangled;
    std::size_t at = end + 1;
    while (at < mangled.size() && mangled[at] >= '0' && mangled[at] <= '9')
        ++at;
    return at < mangled.size() ? mangled.substr(at) : mangled;
}

std::vector<EntryInfo> Module::entries() const {
    std::vector<EntryInfo> result;
    if (!program_)
        return result;
    for (const auto& e : program_->entries)
        result.push_back(info_of(*program_, e));
    return result;
}

std::optional<EntryInfo> Module::entry(std::string_view name) const {
    if (!program_)
        return std::nullopt;
    for (const auto& e : program_->entries) {
        if (e.name == name)
            return info_of(*program_, e);
    }
    const detail::Entry* found = nullptr;
    for (const auto& e : program_->entries) {
        if (mangled_name_is(e.name, name)) {
            if (found != nullptr)
                return std::nullopt;  // ambiguous: overloads
            found = &e;
        }
    }
    if (found == nullptr)
        return std::nullopt;
    return info_of(*program_, *found);
}

double SharedAccessStats::wavefronts_per_request() const {
    return requests == 0 ? 0.0 : static_cast<double>(wavefronts) / static_cast<double>(requests);
}

double SharedLineStats::wavefronts_per_request() const {
    return requests == 0 ? 0.0 : static_cast<double>(wavefronts) / static_cast<double>(requests);
}

std::vector<SharedLineStats> shared_accesses_by_line(const LaunchCounts& counts) {
    std::map<std::tuple<std::string, int, bool>, SharedLineStats> lines;
    for (const auto& access : counts.shared_accesses) {
        const auto key = std::make_tuple(access.where.file, access.where.line, access.store);
        SharedLineStats& line = lines[key];
        line.file = access.where.file;
        line.line = access.where.line;
        line.store = access.store;
        line.requests += access.requests;
        line.wavefronts += access.wavefronts;
        line.ideal_wavefronts += access.ideal_wavefronts;
        if (access.max_degree > line.max_degree || !line.representative) {
            line.max_degree = std::max(line.max_degree, access.max_degree);
            if (access.max_degree >= line.max_degree)
                line.representative = access.representative;
        }
    }
    std::vector<SharedLineStats> result;
    for (auto& [key, line] : lines)
        result.push_back(std::move(line));
    return result;
}

std::string describe_banks(const WarpAccessTable& table) {
    unsigned active = 0;
    std::set<std::uint64_t> words;
    std::map<std::uint32_t, std::set<std::uint64_t>> words_by_bank;
    for (const auto& lane : table.lanes) {
        if (!lane.active)
            continue;
        ++active;
        words.insert(lane.word);
        words_by_bank[lane.bank].insert(lane.word);
    }
    const std::string lanes_text = std::to_string(active) + (active == 1 ? " lane" : " lanes");
    if (active == 0)
        return "no active lanes";
    if (words.size() == 1)
        return lanes_text + " read one word: a broadcast, conflict free";
    if (table.degree <= 1) {
        std::string text =
            lanes_text + " in " + std::to_string(words_by_bank.size()) + " distinct banks";
        if (words.size() < active) {
            text += " (" + std::to_string(active - words.size()) + " share a word: broadcast)";
        }
        return text + ", conflict free";
    }
    // Is every occupied bank asked for the same number of distinct words?
    std::set<std::size_t> per_bank;
    for (const auto& [bank, ws] : words_by_bank)
        per_bank.insert(ws.size());
    const std::string degree = std::to_string(table.degree) + "-way conflict";
    if (per_bank.size() == 1 && words.size() == active) {
        if (words_by_bank.size() == 1) {
            return "all " + lanes_text + " in bank " +
                   std::to_string(words_by_bank.begin()->first) + ": " + degree;
        }
        return std::to_string(*per_bank.begin()) + " lanes in each of " +
               std::to_string(words_by_bank.size()) + " banks: " + degree;
    }
    return lanes_text + " over " + std::to_string(words_by_bank.size()) + " banks, at most " +
           std::to_string(table.degree) + " distinct words in one bank: " + degree;
}

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace

std::uint64_t ModeledClock::start_cycles(std::uint64_t seed) {
    // Between about 45 seconds and 3.4 hours of uptime at 1.5 GHz; %clock (the low 32 bits) is
    // nonzero at the start.
    const std::uint64_t cycles = (1ull << 36) + mix(seed) % (1ull << 44);
    return (cycles & 0xffffffffull) == 0 ? cycles + 1 : cycles;
}

std::uint64_t ModeledClock::start_nanoseconds(std::uint64_t seed, std::uint64_t epoch_ns) {
    // A Unix time in nanoseconds, as a GPU's globaltimer reads: the host's, less a little.
    constexpr std::uint64_t kMillisecond = 1'000'000;
    return epoch_ns - mix(seed ^ 0x6c6f6261'6c74696dull) % kMillisecond;
}

namespace {

// T4, RTX 2080 Ti, RTX 3080, V100, RTX 3090, A100, RTX 4090, H100 SXM / H200: their SM counts and
// the warps one SM holds at once (what %nwarpid reads).
constexpr std::uint32_t kSmCounts[] = {40, 68, 68, 80, 82, 108, 128, 132};
constexpr std::uint32_t kWarpSlots[] = {32, 32, 48, 64, 48, 64, 48, 64};

std::size_t modeled_gpu(std::uint64_t seed) {
    return mix(seed ^ 0x6e736d6964ull) % (sizeof kSmCounts / sizeof kSmCounts[0]);
}

}  // namespace

std::uint32_t ModeledDevice::sm_count(std::uint64_t seed) {
    return kSmCounts[modeled_gpu(seed)];
}

std::uint32_t ModeledDevice::warp_slots(std::uint64_t seed) {
    return kWarpSlots[modeled_gpu(seed)];
}

std::uint32_t ModeledDevice::first_warp_slot(std::uint64_t seed, std::uint64_t linear_block,
                                             std::uint32_t warps_per_block) {
    // The block's warps take consecutive slots of its SM, after those of the blocks already
    // resident there: %warpid is threadIdx.x / 32 only for a block that found its SM empty.
    const std::uint32_t places = std::max<std::uint32_t>(1, warp_slots(seed) / warps_per_block);
    return static_cast<std::uint32_t>(mix(seed ^ 0x77617270ull ^ mix(linear_block + 7)) % places) *
           warps_per_block;
}

std::uint32_t ModeledDevice::leftover_shared_word(std::uint64_t seed, std::uint64_t linear_block,
                                                  std::uint64_t word) {
    return static_cast<std::uint32_t>(
        mix(seed ^ 0x736d656dull ^ mix(linear_block * 0x10001ull + 3) ^ (word << 20)));
}

std::uint32_t ModeledDevice::sm_of_block(std::uint64_t seed, std::uint64_t linear_block) {
    return static_cast<std::uint32_t>(mix(seed ^ mix(linear_block + 1)) % sm_count(seed));
}

std::uint64_t ModeledDevice::grid_id(std::uint64_t seed) {
    return 1 + mix(seed ^ 0x67726964ull) % 100'000;
}

std::uint64_t ModeledDevice::first_global_address(std::uint64_t seed) {
    // 0x7f00'0000'0000 to 0x7ffe'ffe0'0000, 2 MiB aligned: far above the simulator's shared and
    // local windows (0x7000'... and 0x7100'...), like cuMemAlloc's addresses on Linux.
    constexpr std::uint64_t kTwoMiB = 2ull << 20;
    constexpr std::uint64_t kBase = 0x7f00'0000'0000ull;
    constexpr std::uint64_t kSpan = 0xff'0000'0000ull;  // leaves room to allocate above
    return kBase + (mix(seed ^ 0x676c6f62ull) % (kSpan / kTwoMiB)) * kTwoMiB;
}

double modeled_cost(const LaunchCounts& counts, const CostModel& model) {
    const double wavefronts =
        static_cast<double>(counts.shared_load_wavefronts + counts.shared_store_wavefronts);
    return model.instruction_cost * static_cast<double>(counts.warp_instructions) +
           model.shared_wavefront_cost * wavefronts;
}

}  // namespace grader::sim
