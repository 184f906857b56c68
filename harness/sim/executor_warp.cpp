// The executor's operations of the warp's lanes together (shfl, vote, redux, activemask) and
// of the warp's time (printf, nanosleep, nop). One function per family of opcodes.def; see
// executor.hpp.

#include <algorithm>
#include <array>
#include <cstdint>
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

void execute_printf(Executor& self, Warp&, const Instruction&, std::uint32_t exec) {
    if (self.checked_)
        self.counts_->printf_calls += popcount(exec);
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
