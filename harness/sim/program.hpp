#pragma once

// The decoded form of a PTX module, private to the simulator: parse_ptx builds it once, launch
// executes it. Every operand is a register slot (immediates, symbol addresses and special
// registers get slots of their own), so the executor never looks at text.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/sim.hpp"

namespace grader::sim::detail {

enum class Type : std::uint8_t {
    none,
    pred,
    b8,
    b16,
    b32,
    b64,
    u8,
    u16,
    u32,
    u64,
    s8,
    s16,
    s32,
    s64,
    f32,
    f64,
};

inline unsigned type_bits(Type t) {
    switch (t) {
        case Type::pred:
            return 1;
        case Type::b8:
        case Type::u8:
        case Type::s8:
            return 8;
        case Type::b16:
        case Type::u16:
        case Type::s16:
            return 16;
        case Type::b32:
        case Type::u32:
        case Type::s32:
        case Type::f32:
            return 32;
        case Type::b64:
        case Type::u64:
        case Type::s64:
        case Type::f64:
            return 64;
        case Type::none:
            return 0;
    }
    return 0;
}
inline bool is_signed(Type t) {
    return t == Type::s8 || t == Type::s16 || t == Type::s32 || t == Type::s64;
}
inline bool is_float(Type t) {
    return t == Type::f32 || t == Type::f64;
}

// What a decoded instruction does: one value per SIM_OP row of opcodes.def.
enum class Op : std::uint8_t {
#define SIM_OP(op, executor) op,
#include "sim/opcodes.def"
};

enum class Space : std::uint8_t { generic, global, shared, local, param, constant };

enum class Compare : std::uint8_t {
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    lo,
    ls,
    hi,
    hs,
    equ,
    neu,
    ltu,
    leu,
    gtu,
    geu,
    num,
    nan,
};

enum class BoolOp : std::uint8_t { none, and_, or_, xor_ };
enum class Rounding : std::uint8_t { none, rn, rz, rm, rp, rni, rzi, rmi, rpi };
enum class ShiftMode : std::uint8_t { left_wrap, left_clamp, right_wrap, right_clamp };
enum class AtomOp : std::uint8_t { add, min, max, inc, dec, exch, cas, and_, or_, xor_ };
enum class ShuffleMode : std::uint8_t { up, down, bfly, idx };

inline constexpr std::int32_t kNoSlot = -1;

struct Instruction {
    Op op = Op::unsupported;
    Type type = Type::none;
    Type source_type = Type::none;  // cvt's source type
    Space space = Space::generic;
    Compare compare = Compare::eq;
    BoolOp bool_op = BoolOp::none;
    Rounding rounding = Rounding::none;
    AtomOp atom_op = AtomOp::add;
    ShuffleMode shuffle = ShuffleMode::idx;
    ShiftMode shift = ShiftMode::left_wrap;  // shf; bfind uses left_clamp for .shiftamt
    bool saturate = false;
    bool ftz = false;     // .ftz: f32 subnormal inputs and results are flushed to signed zero
    bool approx = false;  // .approx (and div.full): the hardware's approximation, not IEEE's
    bool negate_guard = false;
    bool negate_c = false;  // setp's !c combiner operand
    // A read of global memory another block's write may change while the warp waits for it: a
    // volatile, relaxed or acquire load, or an atomic (Executor::note_poll).
    bool polls = false;
    std::uint8_t vector = 1;  // ld/st/mov_pack element count
    std::uint8_t bytes = 0;   // ld/st/atom element size
    std::int32_t guard = kNoSlot;
    std::int32_t dst[4] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
    std::int32_t dst2 = kNoSlot;  // setp's second predicate, shfl's predicate
    std::int32_t src[4] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
    std::int64_t offset = 0;   // address operand's immediate
    std::uint32_t target = 0;  // bra
};

// f(slot) for each register slot the instruction names: its sources, its destinations (a store's
// values among them), setp's second predicate or shfl's, its guard; kNoSlot where unused.
template <class F>
void for_each_slot(const Instruction& in, F f) {
    for (const std::int32_t slot : in.src)
        f(slot);
    for (const std::int32_t slot : in.dst)
        f(slot);
    f(in.dst2);
    f(in.guard);
}

// A register slot whose 32 lanes hold the same value at warp start: an immediate, or the address
// of a symbol (resolved at launch, because global variables get their addresses then).
struct ConstantSlot {
    std::int32_t slot = 0;
    std::uint64_t value = 0;
    std::int32_t symbol = -1;  // index into Program::symbols, added to value
};

enum class Special : std::uint8_t {
    tid_x,
    tid_y,
    tid_z,
    ntid_x,
    ntid_y,
    ntid_z,
    ctaid_x,
    ctaid_y,
    ctaid_z,
    nctaid_x,
    nctaid_y,
    nctaid_z,
    laneid,
    warpid,
    nwarpid,
    smid,
    nsmid,
    gridid,
    lanemask_eq,
    lanemask_lt,
    lanemask_le,
    lanemask_gt,
    lanemask_ge,
    clock,
    clock64,
    globaltimer,
    dynamic_smem_size,
    total_smem_size,
    globaltimer_lo,
    globaltimer_hi,
    clock_hi,
    count
};

struct Symbol {
    std::string name;
    Space space = Space::global;
    std::size_t size = 0;
    std::size_t align = 1;
    bool dynamic_shared = false;     // extern .shared name[]
    std::vector<std::uint8_t> init;  // .global/.const initial bytes (zero-filled when empty)
    std::size_t offset = 0;  // shared/local: offset in the space; param: offset in the buffer
    int entry = -1;          // the entry a function-scope symbol belongs to; -1 module scope
};

struct Entry {
    std::string name;
    std::vector<std::int32_t> params;  // symbol indices, in order
    std::vector<Instruction> code;
    std::vector<SourceLocation> locations;  // one per instruction
    std::vector<std::string> opcodes;       // one per instruction, for unsupported ones
    std::int32_t slot_count = 0;            // registers + specials + constants + sink
    std::int32_t special_base = 0;          // Special::count slots from here
    std::int32_t sink_slot = 0;
    std::vector<ConstantSlot> constants;
    std::vector<std::uint8_t> slot_bits;       // declared width of each register slot
    std::vector<std::int32_t> shared_symbols;  // module + this entry's .shared variables
    std::vector<std::int32_t> local_symbols;
    std::size_t static_shared_bytes = 0;
    std::size_t dynamic_shared_offset = 0;
    std::size_t local_bytes = 0;
    std::size_t param_bytes = 0;
    // The launch bounds ptxas records (__launch_bounds__, __cluster_dims__'s kin): .maxntid's
    // threads a block at most (0: none), .reqntid's block exactly (zeros: none).
    std::uint64_t max_threads = 0;
    std::array<std::uint32_t, 3> required_block{};
};

struct Program {
    std::vector<Symbol> symbols;
    std::vector<Entry> entries;
    std::vector<std::int32_t> global_symbols;  // .global and .const variables
};

}  // namespace grader::sim::detail
