// Each finding kind in words (model/findings.def): one function a kind, the only place a
// finding's sentence is written.

#include "report/findings_text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/text.hpp"
#include "model/observations.hpp"
#include "report/describe.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

double value_at(const Finding& f, std::size_t i) {
    return i < f.values.size() ? f.values[i] : std::nan("");
}

std::string name_at(const Finding& f, std::size_t i) {
    return i < f.names.size() ? f.names[i] : std::string();
}

int stride_at(const Finding& f, std::size_t i) {
    return i < f.strides.size() ? f.strides[i] : 0;
}

FindingPlace line_at(const Finding& f, std::size_t i) {
    return i < f.lines.size() ? f.lines[i] : FindingPlace{};
}

// How a ratio reads in this exercise: "3.16x", or "236%" where it speaks in percent.
std::string ratio_text(const Wording& w, double ratio) {
    return w.ratio_as_percent ? format_number(ratio * 100.0, 0) + "%"
                              : format_number(ratio, 2) + "x";
}

// "(x, y, z)"
std::string dim_text(const std::array<std::uint32_t, 3>& d) {
    return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
           ")";
}

bool flat(const FindingThread& t) {
    return t.thread[1] == 0 && t.thread[2] == 0 && t.block[1] == 0 && t.block[2] == 0;
}

// "thread (3, 0, 0) (warp 0, lane 3)", as the simulator names a lane.
std::string lane_text(const FindingThread& t) {
    return "thread " + dim_text(t.thread) + " (warp " + std::to_string(t.warp) + ", lane " +
           std::to_string(t.lane) + ")";
}

// "shared word 7 (word 7 of tile)".
std::string word_text(const Finding& f) {
    if (!f.word) {
        return "a shared word";
    }
    std::string text = "shared word " + std::to_string(f.word->word);
    if (!f.word->variable.empty()) {
        text +=
            " (word " + std::to_string(f.word->word_in_variable) + " of " + f.word->variable + ")";
    }
    return text;
}

// A case of a rule: "stride 3", "your kernel", or the kernel's label.
std::string case_text(const Finding& f, std::size_t i) {
    if (stride_at(f, i) > 0) {
        return "stride " + std::to_string(stride_at(f, i));
    }
    const std::string label = name_at(f, i);
    return label.empty() ? std::string("your kernel") : label;
}

// The row of the answers file a finding is about: "stride 8", "tile yours".
std::string answer_text(const Finding& f) {
    if (stride_at(f, 0) > 0) {
        return "stride " + std::to_string(stride_at(f, 0));
    }
    return name_at(f, 0) + (f.names.size() > 1 ? " " + name_at(f, 1) : std::string());
}

// Whether a kind's line leads with its place, as a compiler's message does
// ("submission.yaml:17:28: stride 8: you predicted 4; ..."): its words are said without it.
bool leads_with_place(FindingKind kind) {
    switch (kind) {
        case FindingKind::answer_blank:
        case FindingKind::answer_placeholder:
        case FindingKind::answer_malformed:
        case FindingKind::answer_read_as_meant:
        case FindingKind::source_refused:
        case FindingKind::prediction_wrong:
        case FindingKind::measurement_implausible:
            return true;
        default:
            return false;
    }
}

// "32.00 wavefronts per request where 1 is the fewest their width allows: a conflict degree of
// 32.00".
std::string degree_sentence(const SharedLineCounts& c) {
    const double requests = static_cast<double>(c.requests);
    const double per_request = c.requests > 0 ? static_cast<double>(c.wavefronts) / requests : 0.0;
    if (c.ideal_wavefronts == 0) {
        return format_number(per_request, 2) + " wavefronts per request";
    }
    const double fewest = c.requests > 0 ? static_cast<double>(c.ideal_wavefronts) / requests : 0.0;
    return format_number(per_request, 2) + " wavefronts per request where " +
           format_number(fewest, fewest == std::floor(fewest) ? 0 : 2) +
           " is the fewest their width allows: a conflict degree of " + format_number(c.degree, 2);
}

std::string width_text(std::uint32_t bytes_per_lane) {
    const std::string width = describe_access_width(bytes_per_lane);
    return width.empty() ? width : " (" + width + ")";
}

// "the shared loads at probe.cu:34 counted ..." (a line), "the shared loads counted ..." (the
// launch's totals, line 0).
std::string counted_text(const SharedLineCounts& c) {
    const std::string what = c.store ? "the shared stores" : "the shared loads";
    if (c.line <= 0 && c.file.empty()) {
        return what + " counted " + degree_sentence(c);
    }
    return what + " at " + describe_line_place(c.file, c.line) + width_text(c.bytes_per_lane) +
           " counted " + degree_sentence(c);
}

// "the model's degree is gcd(8, 32) = 8".
std::string model_text(const Finding& f, const Wording& w) {
    const int stride = stride_at(f, 0);
    const auto model = static_cast<long long>(value_at(f, 0));
    return "the model's degree is " +
           (stride > 0 ? "gcd(" + std::to_string(stride) + ", " + std::to_string(w.banks) + ") = "
                       : std::string()) +
           std::to_string(model);
}

std::string source_of_counts(const std::string& source) {
    return source == "hardware" ? "the GPU's own counters" : "the simulator (PTX-level)";
}

// --- One function a kind --------------------------------------------------------------------

std::string race_read_after_write(const Finding& f) {
    const FindingThread reader = f.threads.size() > 0 ? f.threads[0] : FindingThread{};
    const FindingThread writer = f.threads.size() > 1 ? f.threads[1] : FindingThread{};
    return "a shared-memory race: " + lane_text(reader) + " of block " + dim_text(reader.block) +
           " read " + word_text(f) + " at " + place_text(line_at(f, 0)) + ", which " +
           lane_text(writer) + " wrote at " + place_text(line_at(f, 1)) +
           " with no __syncthreads() between them";
}

std::string race_write_after_read(const Finding& f) {
    const FindingThread writer = f.threads.size() > 0 ? f.threads[0] : FindingThread{};
    const FindingThread reader = f.threads.size() > 1 ? f.threads[1] : FindingThread{};
    return "a shared-memory race: " + lane_text(writer) + " of block " + dim_text(writer.block) +
           " wrote " + word_text(f) + " at " + place_text(line_at(f, 0)) + ", which " +
           (reader.any_warp ? std::string("other warps read")
                            : lane_text(reader) + " had read at " + place_text(line_at(f, 1))) +
           " with no __syncthreads() between them";
}

std::string race_write_after_write(const Finding& f) {
    const FindingThread later = f.threads.size() > 0 ? f.threads[0] : FindingThread{};
    const FindingThread earlier = f.threads.size() > 1 ? f.threads[1] : FindingThread{};
    return "a shared-memory race: " + lane_text(later) + " of block " + dim_text(later.block) +
           " wrote " + word_text(f) + " at " + place_text(line_at(f, 0)) + ", which " +
           lane_text(earlier) + " also wrote at " + place_text(line_at(f, 1)) +
           ", a different value, with no __syncthreads() between them";
}

std::string race_same_value(const Finding& f) {
    const FindingThread later = f.threads.size() > 0 ? f.threads[0] : FindingThread{};
    const FindingThread earlier = f.threads.size() > 1 ? f.threads[1] : FindingThread{};
    const std::string earlier_place = place_text(line_at(f, 1));
    const std::string later_place = place_text(line_at(f, 0));
    return "two warps wrote one value to one word: " + lane_text(later) + " of block " +
           dim_text(later.block) + " wrote " + word_text(f) + " at " + later_place + ", which " +
           lane_text(earlier) + " had written" +
           (earlier_place == later_place ? "" : " at " + earlier_place) +
           " with the same value. Whichever write lands last, the word is the same, so this "
           "race changes no result and costs nothing (compute-sanitizer's racecheck ranks it "
           "INFO); one writer would do";
}

std::string race_one_store_two_values(const Finding& f) {
    const FindingThread a = f.threads.size() > 0 ? f.threads[0] : FindingThread{};
    const FindingThread b = f.threads.size() > 1 ? f.threads[1] : FindingThread{};
    return "a shared-memory race: lanes " + std::to_string(b.lane) + " and " +
           std::to_string(a.lane) + " of warp " + std::to_string(a.warp) + " of block " +
           dim_text(a.block) + " (threads " + dim_text(b.thread) + " and " + dim_text(a.thread) +
           ") wrote different values to " + word_text(f) + " in one store at " +
           place_text(line_at(f, 0)) + ": which one lands is undefined";
}

std::string races_counted(const Finding& f) {
    return "a shared-memory race: " + std::to_string(f.count) +
           " warp-wide shared-memory accesses raced in all";
}

std::string unwritten_shared_read(const Finding& f) {
    const FindingThread t = f.threads.empty() ? FindingThread{} : f.threads.front();
    std::string text = "thread " + (flat(t) ? std::to_string(t.thread[0]) : dim_text(t.thread)) +
                       " of block " + (flat(t) ? std::to_string(t.block[0]) : dim_text(t.block)) +
                       " read " + word_text(f) + " at " + place_text(line_at(f, 0)) +
                       " before any thread of its block wrote it";
    if (f.lines.size() > 1) {
        // The store that writes it, where no barrier stood between: a missing barrier.
        text += ", though " + place_text(f.lines[1]) +
                " writes it, with no __syncthreads() completed before the read";
    } else {
        text += " (shared memory holds whatever was left there)";
    }
    return text;
}

std::string answer_blank(const Finding& f) {
    return name_at(f, 0) + ": still blank: fill in " + f.text;
}

std::string answer_placeholder(const Finding& f) {
    return name_at(f, 0) + ": still the placeholder " + f.text +
           ": write your own student id, as your course knows you, in quotes";
}

std::string answer_with_text(const Finding& f) {
    const std::string field = name_at(f, 0);
    return (field.empty() ? std::string() : field + ": ") + f.text;
}

std::string answers_still_blank(const Finding& f) {
    return std::to_string(f.count) + (f.count == 1 ? " blank" : " blanks") +
           " of the starter kit's " + name_at(f, 0) + " still to fill in, named below";
}

std::string points_held_back(const Finding& f) {
    return "until " + name_at(f, 0) + " holds your answers, the kernel's checks earn " +
           format_number(value_at(f, 0) * 100.0, 0) +
           "% of their points: " + format_number(value_at(f, 1), 2) + " of " +
           format_number(value_at(f, 2), 2);
}

std::string kernel_file_missing(const Finding& f) {
    // The read's own account, with the file the student seems to have meant, where it has one.
    return f.text.empty() ? file_not_found_text(name_at(f, 0)) : f.text;
}

std::string compile_error(const Finding& f) {
    return "NVRTC could not compile " + name_at(f, 0) + ": " + f.text;
}

std::string wrong_output(const Finding& f) {
    if (!f.output) {
        return "wrong outputs";
    }
    return (f.timed ? "in the timed launches, " : "") + describe_wrong_output(0, *f.output);
}

std::string prediction_wrong(const Finding& f) {
    const auto predicted = static_cast<long long>(value_at(f, 0));
    const auto model = static_cast<long long>(value_at(f, 1));
    const int stride = stride_at(f, 0);
    return answer_text(f) + ": you predicted " + std::to_string(predicted) + "; " +
           (stride > 0 ? "gcd(" + std::to_string(stride) + ", " + std::to_string(f.count) +
                             ") is " + std::to_string(model)
                       : "its conflict degree is " + std::to_string(model));
}

std::string prediction_missing(const Finding& f) {
    return answer_text(f) + ": no predicted degree in " + name_at(f, f.names.size() - 1);
}

// A rule's outcome, led by its description where it judges the student's own numbers.
std::string rule_text(const Finding& f, const std::string& outcome) {
    const std::string lead = f.text.empty() ? std::string() : f.text + ": ";
    return lead + outcome;
}

std::string closer_to(const Finding& f, const Wording& w, bool holds) {
    return rule_text(f, case_text(f, 0) + " at " + ratio_text(w, value_at(f, 0)) + " is " +
                            (holds ? "" : "not ") + "closer to " + case_text(f, 1) + " (" +
                            ratio_text(w, value_at(f, 1)) + ") than to " + case_text(f, 2) + " (" +
                            ratio_text(w, value_at(f, 2)) + ")");
}

std::string slower_than(const Finding& f, const Wording& w, bool holds) {
    const double subject = value_at(f, 0);
    const double than = value_at(f, 1);
    const double factor = value_at(f, 2);
    const std::string than_text = case_text(f, 1) + " (" + ratio_text(w, than) + ")";
    const std::string required = format_number(factor, 2) + " times";
    std::string outcome = case_text(f, 0) + " at " + ratio_text(w, subject) + " is ";
    // The observed factor beside the threshold, never the threshold read as what was seen.
    if (than > 0.0 && std::isfinite(subject / than)) {
        outcome += format_number(subject / than, 2) + " times " + than_text + "; " +
                   (holds ? "more than " : "it must be more than ") + required +
                   (holds ? " is required" : "");
    } else {
        outcome += std::string(holds ? "" : "not ") + "more than " + required + " " + than_text;
    }
    return rule_text(f, outcome);
}

std::string at_most(const Finding& f, const Wording& w, bool holds) {
    return rule_text(f, case_text(f, 0) + " at " + ratio_text(w, value_at(f, 0)) + " is " +
                            (holds ? "" : "not ") + "at most " + ratio_text(w, value_at(f, 1)));
}

std::string rule_not_timed(const Finding& f, const Wording& w) {
    if (f.count == 0) {
        return f.text + ": a case it needs was not timed";
    }
    // The student's own numbers: the rows it needs are not in the answers file.
    std::string missing;
    for (std::size_t i = 0; i < f.names.size(); ++i) {
        missing += (i == 0 ? "" : " and ") + f.names[i];
    }
    return f.text + ": " +
           (f.names.empty() ? std::string("a value it needs is")
                            : missing + (f.names.size() > 1 ? " are" : " is")) +
           " not in " + w.answers_file;
}

std::string ratio_compared(const Finding& f, const Wording& w, bool matches) {
    const int stride = stride_at(f, 0);
    return std::string(matches ? "matches: " : "differs: ") +
           (stride > 0 ? "stride " + std::to_string(stride) : std::string("your kernel")) +
           (f.unnamed ? " (a stride you did not name)" : "") +
           (f.count == 1 ? " (checked by the ordering)" : "") + ": yours " +
           ratio_text(w, value_at(f, 0)) + ", the " + name_at(f, 0) + "'s " +
           ratio_text(w, value_at(f, 1)) + ", off by " + format_number(value_at(f, 2) * 100.0, 0) +
           "% (tolerance " + format_number(value_at(f, 3) * 100.0, 0) + "%)";
}

std::string measurement_implausible(const Finding& f, const Wording& w) {
    const double ratio = value_at(f, 0);
    const double low = value_at(f, 1);
    const double high = value_at(f, 2);
    const auto degree = static_cast<long long>(value_at(f, 3));
    const double meant = value_at(f, 4);
    const auto slip = static_cast<MeasurementSlip>(f.count);
    std::string text = answer_text(f);
    if (slip == MeasurementSlip::faster_than_base || !std::isfinite(high)) {
        text += ": you wrote " + ratio_text(w, ratio);
    } else {
        text += ": you measured " + ratio_text(w, ratio) + "; for a " + std::to_string(degree) +
                "-way " + (degree == 1 ? std::string("(conflict-free) access") : "conflict") +
                " a ratio between " + ratio_text(w, low) + " and " + ratio_text(w, high) +
                " is plausible";
    }
    switch (slip) {
        case MeasurementSlip::bandwidth_percent:
            return text + "; " + format_number(ratio * 100.0, 1) +
                   " looks like the lesson's bandwidth as a percentage of the copy's; the "
                   "answers file asks for time as a percentage of the copy's time, which is 100 "
                   "/ " +
                   format_number(ratio * 100.0, 1) + " x 100 = " + ratio_text(w, meant);
        case MeasurementSlip::inverted:
            return text + "; this looks inverted (stride 1's time divided by this one's): write " +
                   name_at(f, 2) + ", " + ratio_text(w, meant);
        case MeasurementSlip::percent_for_ratio:
            return text + "; this looks like a percentage: write the ratio, " +
                   ratio_text(w, meant);
        case MeasurementSlip::ratio_for_percent:
            return text + "; this looks like a ratio, not a percentage: write " +
                   ratio_text(w, meant);
        case MeasurementSlip::milliseconds:
        case MeasurementSlip::faster_than_base:
            return text + "; if this is a time in milliseconds, write instead " + name_at(f, 2);
        case MeasurementSlip::none:
            break;
    }
    return text;
}

std::string measurement_missing(const Finding& f) {
    return answer_text(f) + ": " + name_at(f, f.names.size() - 1) + " gives no measured value";
}

std::string degree_off_model(const Finding& f, const Wording& w) {
    const std::string counted = f.counts ? counted_text(*f.counts) : std::string("counted");
    return counted + "; " + model_text(f, w);
}

std::string simulator_blames_line(const Finding& f, const Wording& w) {
    if (!f.counts) {
        return "the simulator, running this source, blames a line; " + model_text(f, w);
    }
    const SharedLineCounts& c = *f.counts;
    return "the simulator, running this source, blames " + describe_line_place(c.file, c.line) +
           ", whose shared " + (c.store ? "stores" : "loads") + width_text(c.bytes_per_lane) +
           " counted " + degree_sentence(c) + "; " + model_text(f, w);
}

std::string judged_by_witness(const Finding& f) {
    return "judged line by line: the GPU's launch totals confirm the simulator's count of this "
           "source (the same shared instructions, degrees within " +
           format_number(value_at(f, 0) * 100.0, 0) + "%), so the simulator's lines are the GPU's";
}

}  // namespace

std::string file_not_found_text(const std::string& name) {
    return name + " was not found in the submission folder";
}

std::string timing_unused_reason(const Finding& f) {
    if (f.kind == FindingKind::timing_machine_unfit) {
        return "this machine does not show the model with the exercise's own kernels, so it "
               "cannot grade timings (the machine is unfit, not your kernel)";
    }
    return "timing needs a GPU for this exercise (its file sets simulator.modeled_timing: "
           "false); the counted degree stands in";
}

std::string no_shared_tile_message(const Finding& none, const std::string& kernel_name) {
    return "Your kernel has no shared tile: " + kernel_name +
           " made no shared-memory load or store in " + std::to_string(none.count) +
           (none.count == 1 ? " counted run" : " counted runs") +
           ", so it has no bank conflicts to remove.";
}

namespace {

std::string no_shared_access(const Finding& f) {
    return "your kernel has no shared tile: 0 shared load requests and 0 shared store requests "
           "in " +
           std::to_string(f.count) + (f.count == 1 ? " counted run" : " counted runs") +
           ", counted by " + source_of_counts(name_at(f, 0));
}

std::string tile_never_read(const Finding& f) {
    return f.count > 0 ? "your kernel stores to shared memory but never loads from it: 0 shared "
                         "load requests, so no word of the tile reaches any thread's result"
                       : "your kernel never reads the tile: 0 shared load requests, so its sums "
                         "are of values it made itself, not of the tile's words";
}

std::string warp_spans_rows(const Finding& f) {
    const auto lanes = static_cast<long long>(value_at(f, 0));
    const auto pitch = static_cast<long long>(value_at(f, 1));
    const double degree = value_at(f, 2);
    const std::string line =
        f.counts ? describe_line_place(f.counts->file, f.counts->line) : std::string("a line");
    const long long rows = lanes > 0 ? 32 / lanes : 0;
    return "at " + line + " a warp's 32 lanes span " + std::to_string(rows) + " rows of a tile " +
           std::to_string(lanes) + " words wide (" + std::to_string(lanes) + " lanes a row, rows " +
           std::to_string(pitch) + " words apart): " + std::to_string(pitch) +
           " is coprime with 32, yet the rows' words share banks, a " + format_number(degree, 2) +
           "-way conflict";
}

std::string strided_global_stores(const Finding& f) {
    return "your shared accesses are conflict free, but your output is written " +
           format_number(value_at(f, 0), 0) +
           " global sectors per store request (4 is a coalesced row): lanes a row apart, a "
           "strided global write, which costs the time the rule judges";
}

std::string clock_read(const Finding& f) {
    return "flagged for review: the kernel reads " + f.text +
           "; a kernel that reads a clock can pace its own timings";
}

bool is_rule(FindingKind kind) {
    switch (kind) {
        case FindingKind::rule_closer_to_holds:
        case FindingKind::rule_closer_to_fails:
        case FindingKind::rule_slower_than_holds:
        case FindingKind::rule_slower_than_fails:
        case FindingKind::rule_at_most_holds:
        case FindingKind::rule_at_most_fails:
            return true;
        default:
            return false;
    }
}

}  // namespace

std::string place_text(const FindingPlace& place) {
    if (place.line <= 0) {
        return place.ptx_line > 0 ? "PTX line " + std::to_string(place.ptx_line)
                                  : describe_line_place(place.file, place.line);
    }
    if (place.file.empty()) {
        return "line " + std::to_string(place.line);  // the PTX names no file for it
    }
    std::string text = place.file + ":" + std::to_string(place.line);
    if (place.column > 0) {
        text += ":" + std::to_string(place.column);
    }
    return text;
}

std::string barrier_fix(const Finding& race) {
    const std::vector<FindingPlace> places = barrier_between(race);
    if (places.size() >= 2) {
        return "put __syncthreads() between " + place_text(places[0]) + " and " +
               place_text(places[1]);
    }
    if (places.size() == 1) {
        return "put __syncthreads() before " + place_text(places[0]);
    }
    return {};
}

std::string strides_text(std::vector<int> strides) {
    std::sort(strides.begin(), strides.end());
    strides.erase(std::unique(strides.begin(), strides.end()), strides.end());
    if (strides.size() < 2 || strides.front() == 0) {
        return {};
    }
    constexpr std::size_t kNamed = 8;
    if (strides.size() > kNamed) {
        return "(at " + std::to_string(strides.size()) + " strides)";
    }
    std::string text = "(at strides ";
    for (std::size_t i = 0; i < strides.size(); ++i) {
        text += (i == 0                    ? ""
                 : i + 1 == strides.size() ? " and "
                                           : ", ") +
                std::to_string(strides[i]);
    }
    return text + ")";
}

std::string finding_text(const Finding& f, const Wording& w) {
    switch (f.kind) {
        case FindingKind::race_read_after_write:
            return race_read_after_write(f);
        case FindingKind::race_write_after_read:
            return race_write_after_read(f);
        case FindingKind::race_write_after_write:
            return race_write_after_write(f);
        case FindingKind::race_same_value:
            return race_same_value(f);
        case FindingKind::race_one_store_two_values:
            return race_one_store_two_values(f);
        case FindingKind::races_counted:
            return races_counted(f);
        case FindingKind::unwritten_shared_read:
            return unwritten_shared_read(f);
        case FindingKind::answer_blank:
            return answer_blank(f);
        case FindingKind::answer_placeholder:
            return answer_placeholder(f);
        case FindingKind::answer_malformed:
        case FindingKind::answer_read_as_meant:
            return answer_with_text(f);
        case FindingKind::answers_still_blank:
            return answers_still_blank(f);
        case FindingKind::points_held_back:
            return points_held_back(f);
        case FindingKind::kernel_file_missing:
            return kernel_file_missing(f);
        case FindingKind::kernel_not_compiled:
        case FindingKind::compile_log:
        case FindingKind::abi_mismatch:
        case FindingKind::count_difference:
        case FindingKind::unknown:
            return f.text;
        case FindingKind::source_refused:
            return f.text;
        case FindingKind::compile_error:
            return compile_error(f);
        case FindingKind::wrong_output:
            return wrong_output(f);
        case FindingKind::right_by_warp_order:
            return "every value came out right in the order the warps ran here, but a GPU may "
                   "run them in another order";
        case FindingKind::kernel_stopped:
            return "stopped: " + f.text;
        case FindingKind::prediction_wrong:
            return prediction_wrong(f);
        case FindingKind::prediction_missing:
            return prediction_missing(f);
        case FindingKind::rule_closer_to_holds:
            return closer_to(f, w, true);
        case FindingKind::rule_closer_to_fails:
            return closer_to(f, w, false);
        case FindingKind::rule_slower_than_holds:
            return slower_than(f, w, true);
        case FindingKind::rule_slower_than_fails:
            return slower_than(f, w, false);
        case FindingKind::rule_at_most_holds:
            return at_most(f, w, true);
        case FindingKind::rule_at_most_fails:
            return at_most(f, w, false);
        case FindingKind::rule_not_timed:
            return rule_not_timed(f, w);
        case FindingKind::ratio_matches:
            return ratio_compared(f, w, true);
        case FindingKind::ratio_differs:
            return ratio_compared(f, w, false);
        case FindingKind::measurement_implausible:
            return measurement_implausible(f, w);
        case FindingKind::measurement_missing:
            return measurement_missing(f);
        case FindingKind::degree_off_model:
            return degree_off_model(f, w);
        case FindingKind::simulator_blames_line:
            return simulator_blames_line(f, w);
        case FindingKind::judged_by_witness:
            return judged_by_witness(f);
        case FindingKind::no_shared_access:
            return no_shared_access(f);
        case FindingKind::tile_never_read:
            return tile_never_read(f);
        case FindingKind::warp_spans_rows:
            return warp_spans_rows(f);
        case FindingKind::strided_global_stores:
            return strided_global_stores(f);
        case FindingKind::counted_by:
            return "counted by " + source_of_counts(name_at(f, 0));
        case FindingKind::clock_read:
            return clock_read(f);
        case FindingKind::timing_machine_unfit:
        case FindingKind::timing_needs_gpu:
            return "timing not used: " + timing_unused_reason(f);
        case FindingKind::sentence_given:
            return "\"" + f.text + "\"";
        case FindingKind::sentence_is_example:
            return "flagged for review: this is the starter kit's example sentence, word for word";
    }
    return f.text;
}

std::string missing_barrier_text(const Finding& evidence) {
    std::string text;
    switch (evidence.kind) {
        case FindingKind::race_write_after_read:
            text =
                "a warp reads words of the shared tile before another warp writes them, with "
                "no barrier between the write and the read";
            break;
        case FindingKind::race_write_after_write:
            text =
                "two warps write different values to one word of the shared tile, with no "
                "barrier between the writes";
            break;
        case FindingKind::unwritten_shared_read:
            text = "a thread reads words of the shared tile before the fill" +
                   (evidence.lines.size() > 1 ? " at " + place_text(evidence.lines[1])
                                              : std::string()) +
                   " has written them, with no barrier between the fill and the read";
            break;
        default:
            text =
                "a warp reads words of the shared tile that another warp wrote, with no "
                "barrier between the write and the read";
            break;
    }
    // Compact in a diagnosis, which leads the report: "(at 7 strides)" past three.
    const std::string strides = evidence.strides.size() > 3
                                    ? "(at " + std::to_string(evidence.strides.size()) + " strides)"
                                    : strides_text(evidence.strides);
    return strides.empty() ? text : text + " " + strides;
}

std::string finding_sentence(const Finding& finding, const Wording& wording) {
    std::string text = finding_text(finding, wording);
    if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') {
        text[0] = static_cast<char>(text[0] - 'a' + 'A');
    }
    return text.empty() || text.back() == '.' ? text : text + ".";
}

std::string timing_only_message(const std::string& counts_clean, const Finding& failed_rule,
                                const Wording& wording) {
    return counts_clean +
           " The timing rule fails all the same: " + finding_text(failed_rule, wording) + ".";
}

std::string finding_line(const Finding& f, const Wording& w) {
    std::string line = finding_text(f, w);
    if (leads_with_place(f.kind) && !f.lines.empty()) {
        line = place_text(f.lines.front()) + ": " + line;
    }
    const std::string several = strides_text(f.strides);
    const bool one_stride = f.strides.size() == 1 && f.strides.front() > 0;
    // Rules and comparisons name their strides in their own words.
    const bool names_own = (fields_of(f.kind) & FIELD_STRIDES) == 0 ||
                           f.kind == FindingKind::ratio_matches ||
                           f.kind == FindingKind::ratio_differs;
    if (!names_own && one_stride) {
        line = "stride " + std::to_string(f.strides.front()) + ": " + line;
    } else if (!names_own && !several.empty()) {
        line += " " + several;
    }
    if (f.text.empty() && is_rule(f.kind)) {
        line = (fails(f) ? "does not hold: " : "holds: ") + line;
    }
    if (f.witness) {
        line = "the simulator, running this source: " + line;
    }
    const std::string fix = barrier_fix(f);
    if (!fix.empty()) {
        line += "; " + fix;
    }
    return line;
}

std::vector<std::string> finding_lines(const std::vector<Finding>& findings, const Wording& wording,
                                       std::size_t max_lines, std::size_t max_bytes) {
    std::vector<std::string> lines;
    for (const Finding& finding : findings) {
        lines.push_back(text::shorten(finding_line(finding, wording), max_bytes));
    }
    if (lines.size() > max_lines) {
        const std::size_t cut = lines.size() - max_lines;
        lines.resize(max_lines);
        lines.push_back("and " + std::to_string(cut) + " more " +
                        (cut == 1 ? "detail" : "details") + " (cut: a check lists at most " +
                        std::to_string(max_lines) + ")");
    }
    return lines;
}

}  // namespace grader
