#include "report/prairielearn_scores.hpp"

#include "common/text.hpp"
#include "model/report.hpp"
#include "text/text_safety.hpp"

namespace grader {

std::string write_prairielearn_scores_csv(const std::vector<ClassEntry>& entries,
                                          const std::string& qid) {
    std::string csv = text::csv_row({"uid", "qid", "score_perc", "feedback"});
    for (const ClassEntry& entry : entries) {
        const Report& report = entry.report;
        std::string score;
        std::string feedback = std::string(to_string(report.verdict));
        if (report.verdict != Verdict::ungradable && report.max_score > 0) {
            score = format_number(100.0 * report.score / report.max_score, 2);
            feedback +=
                " " + format_number(report.score, 2) + "/" + format_number(report.max_score, 2);
        }
        feedback += " (" + numbers_source(report) + ")";
        const std::string reason = class_reason(report);
        if (report.verdict != Verdict::pass && !reason.empty()) {
            feedback += ": " + reason;
        }
        const std::string& uid =
            entry.submission_folder.empty() ? entry.student_folder : entry.submission_folder;
        csv += text::csv_row({text::csv_field(uid, text::CsvCell::key), text::csv_field(qid), score,
                              text::csv_field(text::markdown_inline(feedback))});
    }
    return csv;
}

}  // namespace grader
