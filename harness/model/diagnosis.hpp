#pragma once

// The diagnosis: what went wrong, as a root cause rather than the symptom a check saw. A failing
// check carries one (a missing barrier, not "thread 3 holds NaN"), and a report carries the one
// that explains it (the first line a student reads after the verdict, the reason an instructor
// groups a class by). The cause is a type; the words are this grade's.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/finding.hpp"

namespace grader {

enum class Cause {
    // The folder and its files.
    empty_folder,           // nothing was handed in
    files_one_folder_down,  // the folder that holds the files was handed in
    other_exercise,         // another exercise's work (Part 2's transpose.cu graded as Part 1)
    misnamed_file,          // a file is there under another name: Probe.cu, submission.yml
    missing_kernel_file,    // no kernel file (probe.cu)
    missing_answers_file,   // no answers file (submission.yaml)
    missing_files,          // neither
    // The kernel's source, before it runs.
    forbidden_source,        // refused before compiling: an #include, a directive, not UTF-8
    compile_syntax_error,    // NVRTC: expected a ";", unbalanced braces, ...
    compile_undefined_name,  // NVRTC: identifier "x" is undefined
    compile_type_error,      // NVRTC: a type or an argument that does not fit
    compile_error,           // NVRTC refused it for another reason
    wrong_signature,         // compiled, but not with the exercise's ABI
    // The kernel, as it ran.
    missing_barrier,          // a shared-memory race: no __syncthreads() between a write and a read
    shared_write_race,        // lanes of one store write different values to one word
    off_by_one_guard,         // the output guard skips the last element or writes one past the end
    unwritten_tile,           // reads shared words before any thread wrote them
    skipped_reads,            // fewer reads than the exercise asks for (a fast row by doing less)
    wrong_output,             // the outputs are not the oracle's, for another reason
    ignores_stride,           // every stride reads alike (a broadcast, a constant index)
    stride_sniffing,          // right at the named strides only
    old_width,                // a padded tile indexed with the unpadded width
    warp_spans_rows,          // a warp's lanes span two rows of a tile narrower than a warp
    no_shared_tile,           // the kernel makes no shared-memory access at all
    tile_never_read,          // it fills a shared tile but never reads it
    wrong_conflict_degree,    // the counted conflict degree is not the model's
    timing_out_of_order,      // the kernel's times do not follow the order the degrees predict
    kernel_fault,             // an illegal address, a trap
    kernel_timeout,           // ran past its time limit (or the simulator's budget)
    kernel_memory,            // went over the memory limit
    launch_refused,           // asks for resources no launch can give
    unsupported_instruction,  // the simulator, grading where there is no GPU, cannot run it
    kernel_crash,             // the worker running the kernel died
    // The answers file.
    blank_answers,            // blanks of the starter kit left to fill in
    malformed_answers,        // a field missing, misspelt or not a number
    wrong_prediction,         // a predicted degree is not the model's
    implausible_measurement,  // a measured value does not look like a measurement
    blank_sentence,           // no sentence
    // The machine: the grade does not count (ungradable).
    no_gpu,         // the exercise needs a GPU and there is none
    machine_unfit,  // the exercise's own kernels do not show the model here (calibration)
    machine_fault,  // the grader, the device or the exercise failed
};

// Who has to act on a cause.
enum class CauseArea { folder, source, kernel, answers, machine };

// The cause's key, as JSON and CSV write it: "missing_barrier".
std::string_view to_string(Cause cause);
// The cause of a key; nullopt for a key this grader does not know (a newer report).
std::optional<Cause> cause_from_string(std::string_view key);
// The cause in a few words, the same for every grade: "missing __syncthreads() (a race)". What
// a class page groups by and a gradebook column shows.
std::string_view cause_title(Cause cause);
CauseArea area_of(Cause cause);
std::string_view to_string(CauseArea area);  // "folder", "source", "kernel", "answers", "machine"
// Every cause, in the order above.
const std::vector<Cause>& all_causes();

struct Diagnosis {
    Cause cause = Cause::wrong_output;
    // The cause as this grade found it, one sentence the student reads: "a warp reads words of
    // the tile that another warp wrote, with no __syncthreads() between them".
    std::string what;
    // What to do about it, where the grader knows: "put __syncthreads() between probe.cu:25:9
    // and probe.cu:34:9". May be empty.
    std::string fix;
    // Where, as compilers write it ("probe.cu:34:9", "submission.yaml:7:40"); may be empty.
    std::string where;
    // The id of the check it explains (a report's diagnosis); empty for a cause no check has (a
    // folder's, a stop's, the machine's).
    std::string check;
    // What shows the cause, typed: the race, the unwritten read, the wrong element, the line
    // counted. The checks set it; report/ words what, fix and where from it (word_diagnosis).
    std::vector<Finding> evidence;
};

// The diagnosis as one sentence: "what; fix", or "what" alone, led by where unless either part
// names the place already.
std::string to_sentence(const Diagnosis& diagnosis);
// The diagnosis as a report's line: "Missing __syncthreads() (a race): what; fix".
std::string to_line(const Diagnosis& diagnosis);

}  // namespace grader
