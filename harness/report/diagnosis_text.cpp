// Each cause's fix and lead in words (report/diagnosis_text.hpp).

#include "report/diagnosis_text.hpp"

#include <cstddef>

namespace grader {
namespace {

// " at probe.cu:34:9", or nothing where the place is not known.
std::string at(const DiagnosisFacts& facts) {
    return facts.where.empty() ? std::string() : " at " + facts.where;
}

}  // namespace

std::string misnamed_files_text(const std::vector<std::pair<std::string, std::string>>& misnamed) {
    std::string holds;
    std::string renames;
    for (std::size_t i = 0; i < misnamed.size(); ++i) {
        const auto& [found, asked] = misnamed[i];
        holds += (i == 0 ? "" : ", and ") + found + ", not " + asked;
        renames += (i == 0 ? "" : " and ") + found + " to " + asked;
    }
    return "the folder holds " + holds + ": rename " + renames +
           " (file names are exact, case included)";
}

std::string diagnosis_fix(Cause cause, const DiagnosisFacts& facts) {
    switch (cause) {
        case Cause::missing_kernel_file:
            return "hand in " + facts.kernel_file + ", your kernel, beside " + facts.answers_file;
        case Cause::missing_answers_file:
            return "start from the starter kit's " + facts.answers_file +
                   ", fill in every blank and hand it in beside " + facts.kernel_file;
        case Cause::malformed_answers:
            // Said where the file could not be read at all: nothing in it can be kept.
            return "start from the starter kit's " + facts.answers_file +
                   " and fill in every blank";
        case Cause::missing_files:
            return "hand in both, starting from the starter kit's";
        case Cause::compile_syntax_error:
            return "correct the source" + at(facts) +
                   " (a ';', a bracket or a brace missing or extra just before it)";
        case Cause::compile_undefined_name:
            return "declare the name or correct its spelling" + at(facts) +
                   " (names are exact, case included)";
        case Cause::compile_type_error:
            return "make the types agree" + at(facts);
        case Cause::shared_write_race:
            return "give each lane its own word: two lanes that compute the same index race";
        case Cause::off_by_one_guard:
            return facts.matrix ? "let the bounds check pass every index below n (x < n, not "
                                  "x < n - 1 or x + 1 < n)"
                                : "let the output guard pass every thread below n (t < n, not "
                                  "t + 1 < n or t < n - 1)";
        case Cause::unwritten_tile:
            return "write every word of the tile, then __syncthreads(), then read it";
        case Cause::tile_never_read:
            return "read the tile the exercise gives you: fill it from the input, "
                   "__syncthreads(), then sum (or move) the words the index picks";
        case Cause::skipped_reads:
            return "make every read the loop asks for, in every thread: a row that is fast "
                   "because it reads less fails";
        case Cause::ignores_stride:
            return "index the tile with the stride you are given: lane L reads word L x stride "
                   "+ k";
        case Cause::stride_sniffing:
            return "use the stride you are given the same way at every stride";
        case Cause::warp_spans_rows:
            return "give each warp one row: a tile as wide as the warp (tile[32][33] with a "
                   "32-wide block), or index it so that a warp's lanes stay in one row";
        case Cause::timing_out_of_order:
            // Said where the counts show what the time pays for (a strided global write).
            return "write the output along its rows: let consecutive lanes write consecutive "
                   "words of out (read the tile transposed instead)";
        case Cause::kernel_fault:
            return facts.outside_buffer
                       ? "keep the index of the access" + at(facts) + " inside its buffer"
                       : std::string();
        case Cause::kernel_timeout:
            return "make every loop end" +
                   (facts.where.empty() ? "" : " (the kernel was at " + facts.where + ")");
        case Cause::blank_answers:
            return facts.blanks > 1 ? "fill in each, starting at " + facts.where : std::string();
        case Cause::machine_unfit:
            return "grade on another GPU, or with --backend sim";
        case Cause::no_gpu:
            return "grade on a machine with a GPU, or with --backend sim";
        case Cause::machine_fault:
            return "tell your instructor: the grade does not count, and nothing in your work "
                   "needs changing";
        default:
            return {};
    }
}

std::string diagnosis_lead(Cause cause, const DiagnosisFacts& facts) {
    switch (cause) {
        case Cause::missing_kernel_file:
            return "there is no " + facts.kernel_file + " in the folder";
        case Cause::missing_answers_file:
            return "there is no " + facts.answers_file + " in the folder";
        case Cause::missing_files:
            return "the folder holds neither " + facts.kernel_file + " nor " + facts.answers_file;
        case Cause::compile_syntax_error:
        case Cause::compile_undefined_name:
        case Cause::compile_type_error:
        case Cause::compile_error:
            return facts.kernel_file + " did not compile";
        case Cause::blank_answers:
            return facts.blanks > 1
                       ? std::to_string(facts.blanks) + " answers in " + facts.answers_file +
                             " still blank (first: " + facts.field + ")"
                       : std::string();
        case Cause::blank_sentence:
            return "no sentence was given";
        case Cause::off_by_one_guard:
            if (facts.matrix) {
                return std::string("the output's last ") + (facts.last_column ? "column" : "row") +
                       " was never written";
            }
            return "the grid's last " +
                   (facts.threads == 1
                        ? std::string("thread never wrote its output")
                        : std::to_string(facts.threads) + " threads never wrote their outputs");
        case Cause::unwritten_tile:
            return "a thread's sum is NaN: it read words of the tile before any thread wrote "
                   "them (the grader fills shared memory with NaN first)";
        case Cause::skipped_reads:
            return "each word of the tile is 1, so a thread's sum counts its reads";
        case Cause::ignores_stride:
            return facts.counted_one
                       ? "every stride counted 1 wavefront per request: your lanes read the same "
                         "words (a broadcast) or the stride never reaches the index"
                       : "your kernel runs alike at every stride, as if every lane read the same "
                         "words";
        case Cause::stride_sniffing:
            return "your kernel times like the lesson's probe at the strides you named, and not "
                   "at strides drawn for this grade";
        default:
            return {};
    }
}

}  // namespace grader
