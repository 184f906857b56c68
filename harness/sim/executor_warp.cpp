// The executor's operations of the warp's lanes together (shfl, vote, redux, activemask) and
// of the warp's time (printf, nanosleep, nop). One function per family of opcodes.def; see
// executor.hpp.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

void execute_shfl(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* d = self.dst(w, in);
    const std::uint64_t* a = self.src(w, in, 0);
    const std::uint64_t* b = self.src(w, in, 1);
    const std::uint64_t* c = self.src(w, in, 2);
    std::array<std::uint64_t, 32> source;
    for (unsigned l = 0; l < 32; ++l)
        source[l] = a[l];
    // The membermask (src[3]) is not checked: the executing lanes take part.
    std::uint64_t* p = in.dst2 >= 0 ? self.reg(w, in.dst2) : nullptr;
    for_lanes(exec, [&](unsigned lane) {
        const auto bval = static_cast<std::uint32_t>(b[lane]) & 31;
        const auto cword = static_cast<std::uint32_t>(c[lane]);
        const std::uint32_t cval = cword & 31;
        const std::uint32_t segmask = (cword >> 8) & 31;
        const std::uint32_t max_lane = (lane & segmask) | (cval & ~segmask);
        const std::uint32_t min_lane = lane & segmask;
        int j = static_cast<int>(lane);
        bool pval = false;
        switch (in.shuffle) {
            case ShuffleMode::up:
                j = static_cast<int>(lane) - static_cast<int>(bval);
                pval = j >= static_cast<int>(max_lane);
                break;
            case ShuffleMode::down:
                j = static_cast<int>(lane + bval);
                pval = j <= static_cast<int>(max_lane);
                break;
            case ShuffleMode::bfly:
                j = static_cast<int>(lane ^ bval);
                pval = j <= static_cast<int>(max_lane);
                break;
            case ShuffleMode::idx:
                j = static_cast<int>(min_lane | (bval & ~segmask));
                pval = j <= static_cast<int>(max_lane);
                break;
        }
        if (!pval)
            j = static_cast<int>(lane);
        d[lane] = static_cast<std::uint32_t>(source[static_cast<unsigned>(j) & 31]);
        if (p != nullptr)
            p[lane] = pval ? 1 : 0;
    });
}

void execute_vote(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* d = self.dst(w, in);
    const std::uint64_t* a = self.src(w, in, 0);
    std::uint32_t ballot = 0;
    for_lanes(exec, [&](unsigned l) {
        if ((a[l] != 0) != in.negate_c)
            ballot |= 1u << l;
    });
    std::uint64_t value = ballot;
    if (in.op == Op::vote_all)
        value = ballot == exec;
    if (in.op == Op::vote_any)
        value = ballot != 0;
    if (in.op == Op::vote_uni)
        value = ballot == 0 || ballot == exec;
    for_lanes(exec, [&](unsigned l) { d[l] = value; });
}

void execute_activemask(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* d = self.dst(w, in);
    for_lanes(exec, [&](unsigned l) { d[l] = w.mask; });
}

void execute_redux(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* d = self.dst(w, in);
    const std::uint64_t* a = self.src(w, in, 0);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        using U = Unsigned<T>;
        bool first = true;
        T r{};
        for_lanes(exec, [&](unsigned l) {
            const T x = as<T>(a[l]);
            if (first) {
                r = x;
                first = false;
                return;
            }
            switch (in.atom_op) {
                case AtomOp::add:
                    r = static_cast<T>(static_cast<U>(static_cast<U>(r) + static_cast<U>(x)));
                    break;
                case AtomOp::min:
                    r = std::min(r, x);
                    break;
                case AtomOp::max:
                    r = std::max(r, x);
                    break;
                case AtomOp::and_:
                    r = static_cast<T>(r & x);
                    break;
                case AtomOp::or_:
                    r = static_cast<T>(r | x);
                    break;
                default:
                    r = static_cast<T>(r ^ x);
                    break;
            }
        });
        for_lanes(exec, [&](unsigned l) { d[l] = bits_of<T>(r); });
    });
}

namespace {

// The arguments a printf format asks for, as CUDA's printf counts what it returns ("the number
// of arguments parsed", the CUDA C++ Programming Guide): one a conversion, one more for each `*`
// width or precision; `%%` none. `next` gives the format's bytes, 0 at its end.
template <typename NextByte>
int printf_arguments(NextByte next) {
    int arguments = 0;
    for (char c = next(); c != 0; c = next()) {
        if (c != '%')
            continue;
        c = next();
        if (c == '%')
            continue;
        while (c == '-' || c == '+' || c == ' ' || c == '#' || c == '0')
            c = next();
        for (bool precision = false;; precision = true) {
            if (c == '*') {
                ++arguments;
                c = next();
            }
            while (c >= '0' && c <= '9')
                c = next();
            if (precision || c != '.')
                break;
            c = next();
        }
        while (c == 'h' || c == 'l' || c == 'L' || c == 'z' || c == 'j' || c == 't')
            c = next();
        if (c == 0)
            break;
        ++arguments;
    }
    return arguments;
}

}  // namespace

// vprintf: its output dropped, its result given where the kernel reads it: -1 for a null format
// (the Programming Guide), else the arguments its format asks for. The format is read as a load
// of its bytes would read them (a bad pointer faults), at most 64 KiB of it.
void execute_printf(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    ++self.outside_reads_;  // its format and arguments lie in memory
    if (self.checked_)
        self.counts_->printf_calls += popcount(exec);
    if (in.src[1] == kNoSlot || !self.printf_result_read_)
        return;
    const std::uint64_t* format_at = self.src(w, in, 0);
    const std::uint64_t* result_at = self.src(w, in, 1);
    std::uint64_t last_format = 0;  // the lanes' formats are mostly one: read once
    int last_result = -1;
    for_lanes(exec, [&](unsigned lane) {
        const Executor::Resolved pointer =
            self.resolve(w, lane, w.pc, Space::local, format_at[lane], 8, false);
        const std::uint64_t format = Executor::load_bytes(pointer.bytes, 8);
        int result = format == last_format ? last_result : -1;
        if (format != 0 && format != last_format) {
            constexpr std::uint64_t kMostBytes = 64 << 10;
            std::uint64_t at = format;
            result = printf_arguments([&]() -> char {
                if (at - format >= kMostBytes)
                    return 0;
                const Executor::Resolved byte =
                    self.resolve(w, lane, w.pc, Space::generic, at++, 1, false);
                return static_cast<char>(*byte.bytes);
            });
            if (format - self.local_window_ >= kWindowSize) {  // not the lane's own memory
                last_format = format;
                last_result = result;
            }
        }
        const Executor::Resolved out =
            self.resolve(w, lane, w.pc, Space::local, result_at[lane], 4, true);
        const auto bits = static_cast<std::uint32_t>(result);
        std::memcpy(out.bytes, &bits, 4);
    });
}

void execute_nanosleep(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const std::uint64_t* a = self.src(w, in, 0);
    // The warp sleeps as long as its longest-sleeping lane asks (nanoseconds).
    std::uint64_t longest = 0;
    for_lanes(exec, [&](unsigned l) {
        longest = std::max<std::uint64_t>(longest, static_cast<std::uint32_t>(a[l]));
    });
    w.cycles += ModeledClock::sleep_cycles(self.options_.clock_seed, longest,
                                           w.cycles ^ (std::uint64_t{w.index} << 48));
}

void execute_nop(Executor&, Warp&, const Instruction&, std::uint32_t) {}

// Branches, exits and barriers change which lanes run where: Executor::run_warp runs them.
void scheduled(Executor&, Warp&, const Instruction&, std::uint32_t) {
    throw std::logic_error("instruction without an executor");
}

}  // namespace grader::sim::detail
