// Module queries and what is derived from a launch's counts: per-line sums, the lane-table
// summary, the cost model.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

namespace {

double ratio(std::uint64_t numerator, std::uint64_t denominator) {
    return denominator == 0 ? 0.0
                            : static_cast<double>(numerator) / static_cast<double>(denominator);
}

}  // namespace

double WarpAccessTable::conflict_degree() const {
    return ratio(wavefronts, ideal_wavefronts);
}

std::uint32_t lanes_per_wavefront(std::uint32_t bytes_per_lane) {
    return bytes_per_lane <= 4 ? 32 : 128 / bytes_per_lane;
}

std::string width_rule(std::uint32_t bytes_per_lane) {
    const std::string bits = std::to_string(bytes_per_lane * 8) + "-bit";
    if (bytes_per_lane <= 4) {
        return bits + " accesses" +
               (bytes_per_lane < 4 ? " (lanes asking for bytes of one word share it)" : "") +
               ": a wavefront serves all 32 lanes, so 1 wavefront is the fewest; a bank asked "
               "for n distinct words takes n";
    }
    const std::uint32_t lanes = lanes_per_wavefront(bytes_per_lane);
    const std::uint32_t words = bytes_per_lane / 4;
    return bits + " accesses: each lane's " + std::to_string(words) + " words lie in " +
           std::to_string(words) + " banks and a wavefront carries 128 bytes, " +
           std::to_string(lanes) + " lanes' worth, so 32 lanes take " + std::to_string(32 / lanes) +
           " wavefronts at the fewest (" + std::to_string(32 / lanes / 2) +
           " where neighbouring lanes share an address); lanes served together in one bank "
           "conflict";
}

double SharedAccessStats::wavefronts_per_request() const {
    return ratio(wavefronts, requests);
}

double SharedAccessStats::conflict_degree() const {
    return ratio(wavefronts, ideal_wavefronts);
}

double SharedLineStats::wavefronts_per_request() const {
    return ratio(wavefronts, requests);
}

std::vector<SharedLineStats> shared_accesses_by_line(const LaunchCounts& counts) {
    std::map<std::tuple<std::string, int, bool>, SharedLineStats> lines;
    for (const auto& access : counts.shared_accesses) {
        const auto key = std::make_tuple(access.where.file, access.where.line, access.store);
        SharedLineStats& line = lines[key];
        line.file = access.where.file;
        line.line = access.where.line;
        line.store = access.store;
        line.bytes_per_lane = std::max(line.bytes_per_lane, access.bytes_per_lane);
        line.requests += access.requests;
        line.wavefronts += access.wavefronts;
        line.ideal_wavefronts += access.ideal_wavefronts;
        line.degree = std::max(line.degree, access.conflict_degree());
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

namespace {

// "4", or "1.5" for a degree between whole numbers.
std::string degree_text(double degree) {
    const double whole = std::round(degree);
    if (std::abs(degree - whole) < 0.005) {
        return std::to_string(static_cast<long long>(whole));
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", degree);
    return text;
}

}  // namespace

std::string describe_banks(const WarpAccessTable& table) {
    unsigned active = 0;
    const std::uint32_t words_per_lane = std::max<std::uint32_t>(1, table.bytes_per_lane / 4);
    std::set<std::uint64_t> words;       // each lane's first word
    std::set<std::uint64_t> every_word;  // every word of every lane
    std::map<std::uint32_t, std::set<std::uint64_t>> words_by_bank;
    for (const auto& lane : table.lanes) {
        if (!lane.active)
            continue;
        ++active;
        words.insert(lane.word);
        for (std::uint32_t k = 0; k < words_per_lane; ++k) {
            every_word.insert(lane.word + k);
            words_by_bank[static_cast<std::uint32_t>((lane.word + k) % 32)].insert(lane.word + k);
        }
    }
    const std::string lanes_text = std::to_string(active) + (active == 1 ? " lane" : " lanes");
    if (active == 0)
        return "no active lanes";
    const double degree = table.ideal_wavefronts > 0 ? table.conflict_degree() : table.degree;
    if (words_per_lane > 1) {
        // 64- and 128-bit: judged against the fewest wavefronts the width allows.
        const std::string head = lanes_text + " of " + std::to_string(table.bytes_per_lane * 8) +
                                 " bits (" + std::to_string(every_word.size()) + " words in " +
                                 std::to_string(words_by_bank.size()) + " banks) in " +
                                 std::to_string(table.wavefronts) + " wavefronts, where " +
                                 std::to_string(table.ideal_wavefronts) + " is the fewest";
        if (degree <= 1.0)
            return head + (words.size() < active ? " (lanes share addresses)" : "") +
                   ": conflict free";
        return head + ": " + degree_text(degree) + "-way conflict";
    }
    if (words.size() == 1)
        return lanes_text + " read one word: a broadcast, conflict free";
    if (degree <= 1.0) {
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
    const std::string degree_name = degree_text(degree) + "-way conflict";
    if (per_bank.size() == 1 && words.size() == active) {
        if (words_by_bank.size() == 1) {
            return "all " + lanes_text + " in bank " +
                   std::to_string(words_by_bank.begin()->first) + ": " + degree_name;
        }
        return std::to_string(*per_bank.begin()) + " lanes in each of " +
               std::to_string(words_by_bank.size()) + " banks: " + degree_name;
    }
    return lanes_text + " over " + std::to_string(words_by_bank.size()) + " banks, at most " +
           std::to_string(table.degree) + " distinct words in one bank: " + degree_name;
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

// The GPUs the simulator can stand in for, by the architecture they run (CUDA's programming
// guide, compute capabilities: SMs, resident warps, blocks and shared memory per SM; the PTX
// ISA's shared memory allocation unit).
constexpr std::pair<int, GpuModel> kGpus[] = {
    {70, {"Tesla V100", 80, 64, 32, 96 * 1024, 256}},
    {75, {"Tesla T4", 40, 32, 16, 64 * 1024, 256}},
    {80, {"A100", 108, 64, 32, 164 * 1024, 128}},
    {86, {"GeForce RTX 3080", 68, 48, 16, 100 * 1024, 128}},
    {89, {"L4", 58, 48, 24, 100 * 1024, 128}},
    {90, {"H100 / H200", 132, 64, 32, 228 * 1024, 128}},
};

}  // namespace

GpuModel GpuModel::for_arch(std::string_view arch) {
    int number = 0;
    for (const char c : arch) {
        if (c >= '0' && c <= '9')
            number = number * 10 + (c - '0');
    }
    GpuModel model = kGpus[0].second;
    for (const auto& [at, gpu] : kGpus) {
        if (at <= number)
            model = gpu;
    }
    return model;
}

std::size_t GpuModel::shared_allocation(std::size_t shared_bytes) const {
    return (shared_bytes + shared_unit - 1) / shared_unit * shared_unit;
}

std::uint32_t GpuModel::resident_per_sm(std::uint32_t threads, std::size_t shared_bytes,
                                        std::uint32_t registers) const {
    const std::uint32_t warps = std::max<std::uint32_t>(1, (threads + 31) / 32);
    std::uint32_t blocks = std::min(blocks_per_sm, warps_per_sm / warps);
    const std::size_t shared = shared_allocation(shared_bytes);
    if (shared > 0) {
        blocks =
            std::min<std::uint32_t>(blocks, static_cast<std::uint32_t>(shared_per_sm / shared));
    }
    if (registers > 0) {
        // cuda_occupancy.h's cudaOccMaxBlocksPerSMRegsLimit: a warp's registers in whole units;
        // the launch checked as if every partition held a share of the block's warps; the warps
        // an SM holds are those each partition's quarter of the file holds.
        const std::uint32_t per_warp =
            (registers * 32 + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
        const std::uint32_t partition_warps =
            (warps + kRegisterPartitions - 1) / kRegisterPartitions * kRegisterPartitions;
        if (registers > 255 || std::uint64_t{per_warp} * partition_warps > kRegistersPerSm)
            return 0;
        const std::uint32_t sm_warps =
            kRegistersPerSm / kRegisterPartitions / per_warp * kRegisterPartitions;
        blocks = std::min(blocks, sm_warps / warps);
    }
    return std::max<std::uint32_t>(1, blocks);
}

std::uint32_t ModeledDevice::leftover_shared_word(std::uint64_t seed, std::uint64_t linear_block,
                                                  std::uint64_t word) {
    return static_cast<std::uint32_t>(
        mix(seed ^ 0x736d656dull ^ mix(linear_block * 0x10001ull + 3) ^ (word << 20)));
}

void ModeledDevice::leftover_shared_words(std::uint64_t seed, std::uint64_t linear_block,
                                          std::uint32_t* words, std::size_t count) {
    const std::uint64_t block = seed ^ 0x736d656dull ^ mix(linear_block * 0x10001ull + 3);
    for (std::size_t word = 0; word < count; ++word)
        words[word] = static_cast<std::uint32_t>(mix(block ^ (std::uint64_t{word} << 20)));
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

std::uint64_t ModeledDevice::shared_window(std::uint64_t seed) {
    // 0x7e00'0000'0000 to 0x7efe'0000'0000: below the global buffers (0x7f..., see
    // first_global_address), with room for the local window after it.
    constexpr std::uint64_t kFourGiB = 1ull << 32;
    return 0x7e00'0000'0000ull + (mix(seed ^ 0x736d656d77ull) % 0xfe) * kFourGiB;
}

double modeled_cost(const LaunchCounts& counts, const CostModel& model) {
    const double wavefronts =
        static_cast<double>(counts.shared_load_wavefronts + counts.shared_store_wavefronts);
    const double core = model.instruction_cost * static_cast<double>(counts.warp_instructions) +
                        model.shared_wavefront_cost * wavefronts;
    const double sectors =
        static_cast<double>(counts.global_load_sectors + counts.global_store_sectors);
    return std::max(core, model.global_sector_cost * sectors);
}

}  // namespace grader::sim
