#include "model/diagnosis.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

#include "model/measurements.hpp"
#include "model/report.hpp"

namespace grader {
namespace {

struct CauseEntry {
    Cause cause;
    std::string_view key;
    std::string_view title;
    CauseArea area;
};

// One row a cause: its key (never changed once published), its title and who acts on it.
constexpr std::array<CauseEntry, 41> kCauses = {{
    {Cause::empty_folder, "empty_folder", "an empty folder", CauseArea::folder},
    {Cause::files_one_folder_down, "files_one_folder_down", "the files are one folder down",
     CauseArea::folder},
    {Cause::other_exercise, "other_exercise", "another exercise's work", CauseArea::folder},
    {Cause::misnamed_file, "misnamed_file", "a file under another name", CauseArea::folder},
    {Cause::missing_kernel_file, "missing_kernel_file", "no kernel file", CauseArea::folder},
    {Cause::missing_answers_file, "missing_answers_file", "no answers file", CauseArea::folder},
    {Cause::missing_files, "missing_files", "neither the kernel nor the answers file",
     CauseArea::folder},
    {Cause::forbidden_source, "forbidden_source",
     "a source the grader refuses (an #include, a directive, not UTF-8)", CauseArea::source},
    {Cause::compile_syntax_error, "compile_syntax_error", "compile error: syntax",
     CauseArea::source},
    {Cause::compile_undefined_name, "compile_undefined_name", "compile error: an undefined name",
     CauseArea::source},
    {Cause::compile_type_error, "compile_type_error", "compile error: types", CauseArea::source},
    {Cause::compile_error, "compile_error", "compile error", CauseArea::source},
    {Cause::wrong_signature, "wrong_signature", "wrong kernel signature", CauseArea::source},
    {Cause::missing_barrier, "missing_barrier", "missing __syncthreads() (a race)",
     CauseArea::kernel},
    {Cause::shared_write_race, "shared_write_race", "lanes store to one word (a race)",
     CauseArea::kernel},
    {Cause::off_by_one_guard, "off_by_one_guard", "off-by-one output guard", CauseArea::kernel},
    {Cause::unwritten_tile, "unwritten_tile", "reads tile words before any thread wrote them",
     CauseArea::kernel},
    {Cause::skipped_reads, "skipped_reads", "skipped reads", CauseArea::kernel},
    {Cause::wrong_output, "wrong_output", "wrong outputs", CauseArea::kernel},
    {Cause::ignores_stride, "ignores_stride", "ignores the stride", CauseArea::kernel},
    {Cause::stride_sniffing, "stride_sniffing", "right only at the named strides",
     CauseArea::kernel},
    {Cause::old_width, "old_width", "the old width after padding", CauseArea::kernel},
    {Cause::warp_spans_rows, "warp_spans_rows", "a warp that spans two rows of the tile",
     CauseArea::kernel},
    {Cause::no_shared_tile, "no_shared_tile", "no shared tile", CauseArea::kernel},
    {Cause::tile_never_read, "tile_never_read", "a tile that is never read", CauseArea::kernel},
    {Cause::wrong_conflict_degree, "wrong_conflict_degree", "wrong conflict degree",
     CauseArea::kernel},
    {Cause::timing_out_of_order, "timing_out_of_order", "times that do not follow the model",
     CauseArea::kernel},
    {Cause::kernel_fault, "kernel_fault", "the kernel faulted", CauseArea::kernel},
    {Cause::kernel_timeout, "kernel_timeout", "the kernel ran past its time limit",
     CauseArea::kernel},
    {Cause::kernel_memory, "kernel_memory", "the kernel went over its memory limit",
     CauseArea::kernel},
    {Cause::launch_refused, "launch_refused", "the launch was refused", CauseArea::kernel},
    {Cause::unsupported_instruction, "unsupported_instruction",
     "an instruction the simulator cannot run", CauseArea::kernel},
    {Cause::kernel_crash, "kernel_crash", "the kernel's run crashed", CauseArea::kernel},
    {Cause::blank_answers, "blank_answers", "answers left blank", CauseArea::answers},
    {Cause::malformed_answers, "malformed_answers", "a malformed answers file", CauseArea::answers},
    {Cause::wrong_prediction, "wrong_prediction", "a wrong predicted degree", CauseArea::answers},
    {Cause::implausible_measurement, "implausible_measurement", "an implausible measurement",
     CauseArea::answers},
    {Cause::blank_sentence, "blank_sentence", "no sentence", CauseArea::answers},
    {Cause::no_gpu, "no_gpu", "no GPU to grade on", CauseArea::machine},
    {Cause::machine_unfit, "machine_unfit", "a machine unfit to time on", CauseArea::machine},
    {Cause::machine_fault, "machine_fault", "a fault of the grader or its machine",
     CauseArea::machine},
}};

// The table is in the enum's order, every cause once: a cause added to one and not the other
// does not compile.
constexpr bool in_enum_order() {
    for (std::size_t i = 0; i < kCauses.size(); ++i) {
        if (static_cast<std::size_t>(kCauses[i].cause) != i || kCauses[i].key.empty()) {
            return false;
        }
    }
    return kCauses.size() == static_cast<std::size_t>(Cause::machine_fault) + 1;
}
static_assert(in_enum_order(), "kCauses lists every Cause once, in the enum's order");

const CauseEntry& entry(Cause cause) {
    const auto index = static_cast<std::size_t>(cause);
    return index < kCauses.size() ? kCauses[index] : kCauses.back();
}

}  // namespace

std::string_view to_string(Cause cause) {
    return entry(cause).key;
}

std::optional<Cause> cause_from_string(std::string_view key) {
    const auto found = std::find_if(kCauses.begin(), kCauses.end(),
                                    [key](const CauseEntry& e) { return e.key == key; });
    return found != kCauses.end() ? std::optional<Cause>(found->cause) : std::nullopt;
}

std::string_view cause_title(Cause cause) {
    return entry(cause).title;
}

CauseArea area_of(Cause cause) {
    return entry(cause).area;
}

std::string_view to_string(CauseArea area) {
    switch (area) {
        case CauseArea::folder:
            return "folder";
        case CauseArea::source:
            return "source";
        case CauseArea::kernel:
            return "kernel";
        case CauseArea::answers:
            return "answers";
        case CauseArea::machine:
            return "machine";
    }
    return "machine";
}

const std::vector<Cause>& all_causes() {
    static const std::vector<Cause> causes = [] {
        std::vector<Cause> all;
        for (const CauseEntry& e : kCauses) {
            all.push_back(e.cause);
        }
        return all;
    }();
    return causes;
}

Cause cause_of(FolderProblem::Kind kind) {
    switch (kind) {
        case FolderProblem::Kind::empty:
            return Cause::empty_folder;
        case FolderProblem::Kind::one_folder_down:
            return Cause::files_one_folder_down;
        case FolderProblem::Kind::other_exercise:
            return Cause::other_exercise;
        case FolderProblem::Kind::misnamed_file:
            return Cause::misnamed_file;
    }
    return Cause::missing_files;
}

Cause cause_of(StopKind kind) {
    switch (kind) {
        case StopKind::fault:
            return Cause::kernel_fault;
        case StopKind::timeout:
            return Cause::kernel_timeout;
        case StopKind::memory:
            return Cause::kernel_memory;
        case StopKind::launch:
            return Cause::launch_refused;
        case StopKind::unsupported:
            return Cause::unsupported_instruction;
        case StopKind::no_gpu:
            return Cause::no_gpu;
        case StopKind::crash:
            return Cause::kernel_crash;
    }
    return Cause::kernel_crash;
}

std::string to_sentence(const Diagnosis& diagnosis) {
    std::string what = diagnosis.what;
    // The place leads where neither part names it: "submission.yaml:17:39: stride 8: ...".
    if (!diagnosis.where.empty() && what.find(diagnosis.where) == std::string::npos &&
        diagnosis.fix.find(diagnosis.where) == std::string::npos) {
        what = what.empty() ? diagnosis.where : diagnosis.where + ": " + what;
    }
    if (diagnosis.fix.empty()) {
        return what;
    }
    if (what.empty()) {
        return diagnosis.fix;
    }
    return what + "; " + diagnosis.fix;
}

std::string to_line(const Diagnosis& diagnosis) {
    std::string title(cause_title(diagnosis.cause));
    if (!title.empty() && title[0] >= 'a' && title[0] <= 'z') {
        title[0] = static_cast<char>(title[0] - 'a' + 'A');
    }
    const std::string sentence = to_sentence(diagnosis);
    return sentence.empty() ? title : title + ": " + sentence;
}

}  // namespace grader
