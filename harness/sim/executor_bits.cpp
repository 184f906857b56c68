// The executor's bit operations: logic, shifts, counts, bit fields and byte permutes. One
// function per family of opcodes.def; see executor.hpp.

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "sim/executor.hpp"
#include "sim/program.hpp"

namespace grader::sim::detail {

void execute_bitwise(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    const unsigned bits = in.type == Type::pred ? 1 : type_bits(in.type);
    const std::uint64_t keep = low_bits(bits);
    if (in.op == Op::and_) {
        for_lanes(exec, [&](unsigned l) { o.d[l] = (o.a[l] & o.b[l]) & keep; });
    } else if (in.op == Op::or_) {
        for_lanes(exec, [&](unsigned l) { o.d[l] = (o.a[l] | o.b[l]) & keep; });
    } else {
        for_lanes(exec, [&](unsigned l) { o.d[l] = (o.a[l] ^ o.b[l]) & keep; });
    }
}

void execute_not_cnot(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    const unsigned bits = in.type == Type::pred ? 1 : type_bits(in.type);
    const std::uint64_t keep = low_bits(bits);
    if (in.op == Op::not_) {
        for_lanes(exec, [&](unsigned l) { o.d[l] = ~o.a[l] & keep; });
    } else {
        for_lanes(exec, [&](unsigned l) { o.d[l] = (o.a[l] & keep) == 0 ? 1 : 0; });
    }
}

void execute_shift(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        using U = Unsigned<T>;
        constexpr unsigned width = 8 * sizeof(T);
        const bool left = in.op == Op::shl;
        for_lanes(exec, [&](unsigned l) {
            const auto amount = static_cast<std::uint32_t>(o.b[l]);
            const T x = as<T>(o.a[l]);
            T r;
            if (left) {
                r = amount >= width ? T(0)
                                    : static_cast<T>(static_cast<U>(static_cast<U>(x) << amount));
            } else if (std::is_signed_v<T>) {
                r = amount >= width ? (x < T(0) ? T(-1) : T(0)) : static_cast<T>(x >> amount);
            } else {
                r = amount >= width ? T(0) : static_cast<T>(static_cast<U>(x) >> amount);
            }
            o.d[l] = bits_of<T>(r);
        });
    });
}

void execute_bit_count(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    const bool wide = type_bits(in.type) == 64;
    for_lanes(exec, [&](unsigned l) {
        const std::uint64_t x = wide ? o.a[l] : static_cast<std::uint32_t>(o.a[l]);
        if (in.op == Op::popc) {
            o.d[l] = static_cast<std::uint64_t>(__builtin_popcountll(x));
        } else if (in.op == Op::clz) {
            o.d[l] = x == 0 ? (wide ? 64 : 32)
                            : static_cast<std::uint64_t>(__builtin_clzll(x) - (wide ? 0 : 32));
        } else {
            std::uint64_t r = 0;
            const unsigned n = wide ? 64 : 32;
            for (unsigned k = 0; k < n; ++k)
                r |= ((x >> k) & 1) << (n - 1 - k);
            o.d[l] = r;
        }
    });
}

void execute_bfe(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        using U = Unsigned<T>;
        constexpr unsigned width = 8 * sizeof(T);
        for_lanes(exec, [&](unsigned l) {
            const unsigned pos = static_cast<std::uint8_t>(o.b[l]);
            const unsigned len = static_cast<std::uint8_t>(o.c[l]);
            const U x = as<U>(o.a[l]);
            const unsigned msb_index = std::min(pos + len, width) - (len == 0 ? 0 : 1);
            const bool sign =
                std::is_signed_v<T> && len != 0 && ((x >> std::min(msb_index, width - 1)) & 1);
            U r = 0;
            for (unsigned k = 0; k < width; ++k) {
                const bool bit = (k < len && pos + k < width) ? ((x >> (pos + k)) & 1) : sign;
                if (bit)
                    r = static_cast<U>(r | (U(1) << k));
            }
            o.d[l] = bits_of<U>(r);
        });
    });
}

void execute_bfi(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using U = Unsigned<decltype(zero)>;
        constexpr unsigned width = 8 * sizeof(U);
        const std::uint64_t* e = self.reg(w, in.src[3]);
        for_lanes(exec, [&](unsigned l) {
            const unsigned pos = static_cast<std::uint8_t>(o.c[l]);
            const unsigned len = static_cast<std::uint8_t>(e[l]);
            U r = as<U>(o.b[l]);
            const U f = as<U>(o.a[l]);
            for (unsigned k = 0; k < len && pos + k < width; ++k) {
                const U bit = U(1) << (pos + k);
                r = static_cast<U>(((f >> k) & 1) ? (r | bit) : (r & ~bit));
            }
            o.d[l] = bits_of<U>(r);
        });
    });
}

void execute_prmt(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    for_lanes(exec, [&](unsigned l) {
        const std::uint64_t bytes =
            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(o.b[l])) << 32) |
            static_cast<std::uint32_t>(o.a[l]);
        const auto selector = static_cast<std::uint32_t>(o.c[l]);
        std::uint32_t r = 0;
        for (unsigned k = 0; k < 4; ++k) {
            const unsigned s = (selector >> (4 * k)) & 0xf;
            std::uint32_t byte = static_cast<std::uint32_t>((bytes >> (8 * (s & 7))) & 0xff);
            if (s & 8)
                byte = (byte & 0x80) ? 0xff : 0;  // sign replicate
            r |= byte << (8 * k);
        }
        o.d[l] = r;
    });
}

void execute_bfind(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        using U = Unsigned<T>;
        constexpr unsigned width = 8 * sizeof(T);
        for_lanes(exec, [&](unsigned l) {
            U x = as<U>(o.a[l]);
            if (std::is_signed_v<T> && (x >> (width - 1)) != 0)
                x = static_cast<U>(~x);
            std::uint32_t r = 0xffffffffu;
            for (unsigned k = width; k-- > 0;) {
                if ((x >> k) & 1) {
                    r = in.shift == ShiftMode::left_clamp ? width - 1 - k : k;
                    break;
                }
            }
            o.d[l] = r;
        });
    });
}

void execute_shf(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    for_lanes(exec, [&](unsigned l) {
        const std::uint64_t pair =
            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(o.b[l])) << 32) |
            static_cast<std::uint32_t>(o.a[l]);
        const auto amount = static_cast<std::uint32_t>(o.c[l]);
        const bool clamp = in.shift == ShiftMode::left_clamp || in.shift == ShiftMode::right_clamp;
        const std::uint32_t n = clamp ? std::min<std::uint32_t>(amount, 32) : (amount & 31);
        const bool left = in.shift == ShiftMode::left_wrap || in.shift == ShiftMode::left_clamp;
        o.d[l] = left ? static_cast<std::uint32_t>((pair << n) >> 32)
                      : static_cast<std::uint32_t>(pair >> n);
    });
}

}  // namespace grader::sim::detail
