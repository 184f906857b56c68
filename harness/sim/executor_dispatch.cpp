// The decoded engine's slice of a warp: each instruction's operation resolved once per launch
// (decode_steps), the slice's loop free of lookups, and the bookkeeping of the work blocks share
// (executor_replay.cpp) done only where it can change a decision. What runs each operation is
// opcodes.def's family, as in the reference engine: the two differ in scheduling and bookkeeping
// alone. See docs/simulator.md.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/wide_vectors.hpp"
#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

namespace {

constexpr StepHandler kFamilies[] = {
#define SIM_OP(op, executor) &executor,
#include "sim/opcodes.def"
};

}  // namespace

void Executor::ftz_step(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    self.execute_ftz(w, in, exec);
}

void Executor::decode_steps() {
    const std::vector<Instruction>& code = entry_.code;
    steps_.assign(code.size(), Step{});
    for (std::size_t pc = 0; pc < code.size(); ++pc) {
        const Instruction& in = code[pc];
        Step& step = steps_[pc];
        step.reads_clock = reads_clock_[pc] != 0;
        step.memory = in.op == Op::ld || in.op == Op::st || in.op == Op::atom;
        switch (in.op) {
            case Op::bra:
                step.kind = StepKind::bra;
                break;
            case Op::exit:
                step.kind = StepKind::exit;
                break;
            case Op::bar:
                step.kind = StepKind::bar;
                break;
            case Op::bar_red:
                step.kind = StepKind::bar_red;
                break;
            case Op::trap:
                step.kind = StepKind::trap;
                break;
            case Op::unsupported:
                step.kind = StepKind::unsupported;
                break;
            default:
                step.kind = StepKind::compute;
                step.run = in.ftz ? &Executor::ftz_step : full_warp_step(in);
                if (step.run == nullptr)
                    step.run = kFamilies[static_cast<std::size_t>(in.op)];
                break;
        }
    }
}

bool Executor::slots_written(const Warp& w, const Instruction& in) const {
    const std::uint32_t* written =
        &written_lanes_[static_cast<std::size_t>(w.index) * entry_.slot_count];
    const std::uint32_t lanes = lanes_of(w);
    std::uint32_t missing = 0;
    const auto add = [&](std::int32_t slot) {
        if (slot >= 0)
            missing |= lanes & ~written[slot];
    };
    for_each_slot(in, add);
    return missing == 0;
}

// save_destinations for what the instruction writes (a store's dst holds its values, which it
// does not change).
void Executor::save_written_slots(const Warp& w, const Instruction& in) {
    if (in.op != Op::st)
        save_destinations(w, in);
}

bool Executor::control(Warp& w, const Instruction& in, std::uint32_t exec) {
    switch (in.op) {
        case Op::bra:
            if (exec == w.mask) {
                w.pc = in.target;
                if (w.waiting != 0 && w.pc >= w.min_waiting_pc)
                    reschedule(w);
            } else if (exec == 0) {
                advance(w);
            } else {
                for (std::uint32_t m = exec; m != 0; m &= m - 1)
                    w.lane_pc[ctz(m)] = in.target;
                for (std::uint32_t m = w.mask & ~exec; m != 0; m &= m - 1)
                    w.lane_pc[ctz(m)] = w.pc + 1;
                w.mask = 0;
                reschedule(w);
            }
            return false;
        case Op::exit:
            w.live &= ~exec;
            w.mask &= ~exec;
            if (w.mask != 0) {
                advance(w);
            } else {
                reschedule(w);
            }
            return false;
        case Op::bar_red:
        case Op::bar: {
            if (in.op == Op::bar_red) {
                const std::uint64_t* p = reg(w, in.src[1]);
                for (std::uint32_t m = exec; m != 0; m &= m - 1) {
                    const unsigned lane = ctz(m);
                    if ((p[lane] != 0) != in.negate_c)
                        ++reduction_true_;
                    ++reduction_arrived_;
                }
                w.reduction_lanes |= exec;
                w.reduction_slot = in.dst[0];
                w.reduction_op = in.atom_op;
            }
            for (std::uint32_t m = exec; m != 0; m &= m - 1)
                w.lane_pc[ctz(m)] = w.pc + 1;
            w.blocked |= exec;
            w.mask &= ~exec;
            if (w.mask != 0) {
                advance(w);
            } else {
                reschedule(w);
            }
            return exec != 0;  // let the other warps reach the barrier
        }
        case Op::trap:
            if (exec != 0)
                fault(w, ctz(exec), w.pc, "trap", "the kernel executed trap", 0);
            advance(w);
            return false;
        default: {
            if (exec != 0) {
                UnsupportedInstruction u;
                u.opcode = entry_.opcodes[w.pc];
                u.where = entry_.locations[w.pc];
                result_->message = "the simulator does not implement " + u.opcode +
                                   ", reached at " + at_text(u.where);
                result_->unsupported = std::move(u);
                throw Stop{LaunchStatus::unsupported};
            }
            advance(w);
            return false;
        }
    }
}

void Executor::out_of_budget(const Warp& w, bool block_bound, std::uint64_t block_budget) {
    result_->last_location = entry_.locations[w.pc];
    if (block_bound)
        result_->over_block_budget = block_;
    result_->message =
        "timed out: " +
        (block_bound ? "block " + dim_text(block_) + "'s instruction budget of " +
                           std::to_string(block_budget)
                     : "the instruction budget of " + std::to_string(options_.instruction_budget)) +
        " warp instructions ran out at " + at_text(entry_.locations[w.pc]) + ", " +
        thread_text(thread_of(w, ctz(w.mask)));
    throw Stop{LaunchStatus::budget_exceeded};
}

void Executor::run_warp(Warp& w) {
    if (decoded_)
        run_warp_decoded(w);
    else
        run_warp_reference(w);
}

GRADER_WIDE_VECTORS void Executor::run_warp_decoded(Warp& w) {
    if (w.mask == 0)
        reschedule(w);
    const Instruction* code = entry_.code.data();
    const Step* steps = steps_.data();
    const auto code_size = static_cast<std::uint32_t>(entry_.code.size());
    SliceTally tally{*result_, block_instructions_, checked_};
    std::uint64_t budget_left = options_.instruction_budget -
                                std::min(options_.instruction_budget, result_->instructions_run);
    const std::uint64_t block_budget = options_.block_instruction_budget;
    const bool block_bound =
        block_budget != 0 &&
        block_budget - std::min(block_budget, block_instructions_) < budget_left;
    if (block_bound)
        budget_left = block_budget - std::min(block_budget, block_instructions_);
    const bool checked = checked_;
    const bool sharing = mode_ != Mode::normal;
    const std::uint32_t slice = options_.warp_slice;
    for (std::uint32_t n = 0; n < slice && w.mask != 0; ++n) {
        if (w.pc >= code_size) {
            fault(w, ctz(w.mask), code_size - 1, "launch",
                  "execution ran past the end of the kernel", 0);
        }
        const Instruction& in = code[w.pc];
        const Step& step = steps[w.pc];
        // Nothing before the instruction runs changes the warp's lanes or its guard.
        const std::uint32_t exec = in.guard >= 0 ? guard_mask(w, in) : w.mask;
        // A replay's shared memory is its own: an access there is the same in every block.
        const auto shared_replay = [this](const Instruction& i) {
            return mode_ == Mode::replaying && i.space == Space::shared;
        };
        bool leftover = false;
        if (sharing) {
            // As the reference engine decides, without the checks that can no longer change
            // the decision (see sharing_flags_).
            std::uint8_t& flags = sharing_flags_[w.index * code_size + w.pc];
            const std::uint32_t runs = exec;
            const bool unchecked = (flags & kChecked) == 0;
            const bool recording = mode_ == Mode::recording;
            leftover = recording && step.memory && reads_leftovers(w, in, runs);
            const bool clean = recording && !leftover && (flags & kClean) != 0;
            const Recorded recorded =
                recording && !clean ? recordable(w, in, runs, leftover) : Recorded::alike;
            if (recorded == Recorded::parks ||
                (runs != 0 && ((step.memory && !leftover && !shared_replay(in) &&
                                !same_in_every_block(w, in, runs)) ||
                               (unchecked && reads_unwritten(w, in, runs))))) {
                if (mode_ == Mode::replaying)
                    throw PartsWays{};
                w.parked = true;  // the others go on as far as they can without it
                parked_any_ = true;
                return;
            }
            if (unchecked) {
                note_destinations(w, in, runs);
                if (slots_written(w, in))
                    flags |= kChecked;
            }
            if (mode_ == Mode::replaying) {
                if ((flags & kSaved) == 0) {
                    save_written_slots(w, in);
                    flags |= kSaved;
                }
            } else if (parked_any_ && ++recorded_after_park_ > most_after_park_) {
                stuck_ = true;  // the others may be waiting for it: record no further
                w.parked = true;
                return;
            }
            if (recording && !clean && record_instruction(w, in, runs, leftover, recorded))
                flags |= kClean;
        }
        if (++tally.warp_instructions > budget_left) {
            tally.warp_instructions = budget_left;
            out_of_budget(w, block_bound, block_budget);
        }
        if (checked)
            tally.thread_instructions += popcount(exec);
        issue(w, in);
        if (step.kind == StepKind::compute) {
            if (exec != 0) {
                if (step.reads_clock)
                    update_clocks(w);
                step.run(*this, w, in, exec);
            }
            if (leftover)
                record_leftover_result(w, in);
            advance(w);
            if (note_poll(in))
                return;
        } else if (control(w, in, exec)) {
            return;
        }
    }
}

}  // namespace grader::sim::detail
