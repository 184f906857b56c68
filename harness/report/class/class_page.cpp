// The class page: one self-contained HTML file (inline CSS and SVG, no script).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/bank_model.hpp"
#include "model/report.hpp"
#include "report/class/class_charts.hpp"
#include "report/class/class_detail.hpp"
#include "report/class/markup.hpp"
#include "report/class_outputs.hpp"
#include "report/class_page_css.hpp"
#include "text/text_safety.hpp"

namespace grader {

using namespace class_detail;

// ---------------------------------------------------------------------------------------------
// HTML class report

namespace {

std::string escape_html(const std::string& text) {
    return text::html_line(text);
}

void write_failure_reasons(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"failure-reasons-title\">\n"
         << "<h2 id=\"failure-reasons-title\">Failure reasons, by root cause</h2>\n"
         << "<table id=\"failure-reasons\">\n<thead><tr><th class=\"number\">#</th>"
         << "<th>root cause</th><th class=\"number\">submissions</th><th>folders</th></tr>"
         << "</thead>\n<tbody>\n";
    constexpr std::size_t kFoldersShown = 12;
    std::size_t rank = 0;
    for (const FailureReason& reason : summary.failure_reasons) {
        html << "<tr class=\"failure-reason\" data-key=\"" << escape_html(reason.key)
             << "\"><td class=\"number\">" << ++rank << "</td><td>" << escape_html(reason.reason)
             << "</td><td class=\"number\">" << reason.folders.size()
             << "</td><td class=\"folders\">";
        for (std::size_t i = 0; i < reason.folders.size() && i < kFoldersShown; ++i) {
            html << (i > 0 ? ", " : "") << escape_html(reason.folders[i]);
        }
        if (reason.folders.size() > kFoldersShown) {
            html << " and " << reason.folders.size() - kFoldersShown << " more";
        }
        html << "</td></tr>\n";
    }
    if (summary.failure_reasons.empty()) {
        html << "<tr><td colspan=\"4\">No graded submission lost a point.</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">Each submission counts once, under the first "
            "stage that failed: the answers file, the compile, the kernel stopping, then the "
            "checks in the exercise's order. Checks that did not run because of it are not "
            "failures of their own (see the checks below); ungradable submissions are listed "
            "apart.</p>\n</section>\n";
}

void write_checks(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"checks-title\">\n"
         << "<h2 id=\"checks-title\">Checks</h2>\n"
         << "<table id=\"checks\" class=\"compact\">\n<thead><tr><th>check</th>"
         << "<th class=\"number\">passed</th><th class=\"number\">failed</th>"
         << "<th class=\"number\">not run</th><th class=\"number\">points</th></tr></thead>\n"
         << "<tbody>\n";
    for (const CheckSummary& check : summary.checks) {
        html << "<tr class=\"check-row\" data-check=\"" << escape_html(check.id) << "\"><td>"
             << escape_html(check.title.empty() ? check.id : check.title)
             << "</td><td class=\"number\">" << check.passed << "</td><td class=\"number\">"
             << check.failed << "</td><td class=\"number\">" << check.not_run
             << "</td><td class=\"number\">" << format_number(check.max_points, 2)
             << "</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">A check that did not run had no input: the "
            "kernel did not compile, or grading stopped before it.</p>\n</section>\n";
}

void write_not_graded(std::ostringstream& html, const ClassSummary& summary,
                      const std::vector<std::string>& unfinished) {
    html << "<section class=\"card\" aria-labelledby=\"not-graded-title\">\n"
         << "<h2 id=\"not-graded-title\">Not graded</h2>\n"
         << "<table id=\"not-graded\">\n<thead><tr><th>folder</th><th>why</th></tr></thead>\n"
         << "<tbody>\n";
    for (const NotGraded& entry : summary.not_graded) {
        html << "<tr class=\"not-graded-row\"><td class=\"folder\">" << escape_html(entry.folder)
             << "</td><td class=\"reason\">" << escape_html(entry.reason) << "</td></tr>\n";
    }
    for (const std::string& folder : unfinished) {
        html << "<tr class=\"not-graded-row unfinished\"><td class=\"folder\">"
             << escape_html(folder) << "</td><td class=\"reason\">the batch was interrupted "
             << "before this submission was graded</td></tr>\n";
    }
    if (summary.not_graded.empty() && unfinished.empty()) {
        html << "<tr><td colspan=\"2\">Every submission was graded.</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">"
         << (unfinished.empty() ? "The machine or the grader stopped these grades"
                                : "The batch was interrupted before these grades finished, or "
                                  "the machine or the grader stopped them")
         << ": they are not failures, carry no score, and should be graded again"
         << (unfinished.empty() ? "" : " (the same command with --resume grades only them)")
         << ".</p>\n</section>\n";
}

// Students whose one flag is a sentence shared with classmates are one row per cluster, their
// folders folded: at 300 students, 116 rows each saying "sentence nearly the same as 98
// others'" were most of this table, and the Sentences section lists each cluster once anyway.
void write_review(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                  const std::map<std::string, SubmissionFlags>& flags,
                  const std::vector<SentenceCluster>& clusters) {
    std::map<std::size_t, std::vector<std::string>> only_shared;  // by cluster number
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "review-title"}})
        .line()
        .element("h2", "To look at twice", {{"id", "review-title"}})
        .line()
        .open("table", {{"id", "review"}, {"class", "flag-rows"}})
        .line()
        .table_head({{"folder", ""}, {"student id", ""}, {"why", ""}})
        .line()
        .open("tbody")
        .line();
    for (const ClassEntry* entry : sorted) {
        const auto mine = flags.find(entry->student_folder);
        if (mine == flags.end()) {
            continue;
        }
        const SubmissionFlags& flag = mine->second;
        if (flag.sentence_cluster > 0 && !flag.no_id && !flag.example_id &&
            flag.same_id_as.empty() && !flag.no_sentence && !flag.sentence_same_as_example) {
            only_shared[flag.sentence_cluster].push_back(entry->student_folder);
            continue;
        }
        std::string why;
        const auto lines = flag.lines();
        for (std::size_t i = 0; i < lines.size(); ++i) {
            why += (i > 0 ? "; " : "") + lines[i];
        }
        page.open("tr", {{"class", "review-row"}})
            .element("td", entry->student_folder,
                     {{"class", "folder"}, {"title", entry->student_folder}})
            .element("td", entry->report.student_id,
                     {{"class", "student"}, {"title", entry->report.student_id}})
            .element("td", why, {{"class", "flags"}})
            .close("tr")
            .line();
    }
    for (const auto& [number, folders] : only_shared) {
        const auto cluster =
            std::find_if(clusters.begin(), clusters.end(),
                         [n = number](const SentenceCluster& c) { return c.number == n; });
        const bool identical = cluster == clusters.end() || cluster->identical;
        std::string members;
        for (std::size_t i = 0; i < folders.size(); ++i) {
            members += (i > 0 ? ", " : "") + folders[i];
        }
        const std::string count = std::to_string(folders.size());
        page.open("tr", {{"class", "review-cluster-row"}})
            .open("td", {{"class", "folders"}, {"colspan", "2"}})
            .open("details")
            .element("summary", count + (folders.size() == 1 ? " student" : " students"))
            .text(members)
            .close("details")
            .close("td")
            .element("td",
                     std::string("sentence ") + (identical ? "same as" : "nearly the same as") +
                         " the others' of sentence cluster " + std::to_string(number) +
                         " (listed under Sentences), and nothing else",
                     {{"class", "flags"}})
            .close("tr")
            .line();
    }
    if (flags.empty()) {
        page.open("tr")
            .element("td",
                     "Every student id is distinct, and every sentence is given and the "
                     "student's own.",
                     {{"colspan", "3"}})
            .close("tr")
            .line();
    }
    page.close("tbody")
        .line()
        .close("table")
        .line()
        .element("p",
                 "Ids compare without case or surrounding spaces; sentences compare without "
                 "case, spacing or punctuation, against each other and the starter kit's "
                 "example.",
                 {{"class", "note"}})
        .line()
        .close("section")
        .line();
}

// The sentences, the one answer left for a person to read: each cluster once, with its members
// folded away (a class of 300 where 60 share a sentence stays one screen), then every sentence
// that is its student's own.
void write_sentences(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                     const std::vector<SentenceCluster>& clusters,
                     const std::map<std::string, SubmissionFlags>& flags) {
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "sentences-title"}})
        .line()
        .element("h2", "Sentences", {{"id", "sentences-title"}})
        .line()
        .open("table", {{"id", "sentences"}})
        .line()
        .table_head({{"sentence", ""}, {"students", "number"}, {"who", ""}})
        .line()
        .open("tbody")
        .line();
    for (const SentenceCluster& cluster : clusters) {
        const std::string size = std::to_string(cluster.folders.size());
        std::string members;
        for (std::size_t i = 0; i < cluster.folders.size(); ++i) {
            members += (i > 0 ? ", " : "") + cluster.folders[i];
        }
        page.open("tr", {{"class", "sentence-cluster"}})
            .open("td", {{"class", "sentence"}})
            .element("span",
                     "cluster " + std::to_string(cluster.number) +
                         (cluster.identical ? "" : ", near-identical"),
                     {{"class", "badge review"}})
            .text(" " + cluster.sentence)
            .close("td")
            .element("td", size, {{"class", "number"}})
            .open("td", {{"class", "folder"}})
            .open("details")
            .element("summary", size + " folders")
            .text(members)
            .close("details")
            .close("td")
            .close("tr")
            .line();
    }
    if (clusters.empty()) {
        page.open("tr")
            .element("td", "No two sentences are the same or nearly.", {{"colspan", "3"}})
            .close("tr")
            .line();
    }
    page.close("tbody").line().close("table").line();
    std::vector<const ClassEntry*> own;
    for (const ClassEntry* entry : sorted) {
        const auto mine = flags.find(entry->student_folder);
        const bool clustered = mine != flags.end() && mine->second.sentence_cluster > 0;
        if (!clustered && !text::comparison_key(entry->report.sentence).empty()) {
            own.push_back(entry);
        }
    }
    // Folded past a screenful, so 300 sentences do not bury the students' table below them.
    if (own.size() > 30) {
        html << "<details>";
    } else {
        html << "<details open>";
    }
    page.element("summary", own.size() == 1
                                ? std::string("1 sentence of its own")
                                : std::to_string(own.size()) + " sentences of their own")
        .open("table", {{"id", "own-sentences"}})
        .table_head({{"sentence", ""}, {"folder", ""}})
        .open("tbody")
        .line();
    for (const ClassEntry* entry : own) {
        page.open("tr", {{"class", "sentence-own"}})
            .element("td", entry->report.sentence, {{"class", "sentence"}})
            .element("td", entry->student_folder, {{"class", "folder"}})
            .close("tr")
            .line();
    }
    page.close("tbody")
        .close("table")
        .close("details")
        .line()
        .element("p",
                 "Sentences compare without case, spacing or punctuation; near-identical ones (a "
                 "word in twelve changed, added or dropped, at least one) share a cluster.",
                 {{"class", "note"}})
        .line()
        .close("section")
        .line();
}

void write_skipped(std::ostringstream& html, const std::vector<SkippedEntry>& skipped) {
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "skipped-title"}})
        .line()
        .element("h2", "Skipped in the class folder", {{"id", "skipped-title"}})
        .line()
        .open("table", {{"id", "skipped"}})
        .line()
        .table_head({{"name", ""}, {"why", ""}})
        .line()
        .open("tbody")
        .line();
    for (const SkippedEntry& entry : skipped) {
        page.open("tr", {{"class", "skipped-row"}})
            .element("td", entry.name, {{"class", "name"}})
            .element("td", entry.reason, {{"class", "reason"}})
            .close("tr")
            .line();
    }
    if (skipped.empty()) {
        page.open("tr")
            .element("td", "Nothing: every entry of the class folder is a submission.",
                     {{"colspan", "2"}})
            .close("tr")
            .line();
    }
    page.close("tbody").line().close("table").line().close("section").line();
}

// The first line of a reason, for a row's one line (the whole reason is in its details).
std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

// One line a student, whatever the class's size: at 300 students, rows whose reasons, flags and
// numbers wrapped (93 px each) were three quarters of the page. A row shows its folder, id,
// verdict, score, report and the first line of its reason; the whole reason and the flags are
// in the row's details, folded. Numbers shared by the whole class are said once above.
// The students' table's headings: "numbers" (the figures' source) only where the class's
// figures come from more than one.
std::vector<Markup::Heading> student_headings(bool one_source) {
    std::vector<Markup::Heading> headings = {
        {"folder", ""}, {"student id", ""}, {"verdict", ""}, {"score", "number"}};
    if (!one_source) {
        headings.push_back({"numbers", ""});
    }
    headings.push_back({"reason and flags", ""});
    headings.push_back({"report", ""});
    return headings;
}

void write_students(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                    const std::map<std::string, SubmissionFlags>& flags) {
    std::set<std::string> sources;
    for (const ClassEntry* entry : sorted) {
        sources.insert(numbers_source(entry->report));
    }
    const bool one_source = sources.size() == 1;
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "students-title"}})
        .line()
        .element("h2", "Students", {{"id", "students-title"}})
        .line();
    if (one_source) {
        page.element("p", "Every student's numbers: " + *sources.begin() + ".",
                     {{"class", "note"}, {"id", "students-numbers"}})
            .line();
    }
    page.element("p",
                 "One line a student: the first line of the reason, and how many flags; open "
                 "the line for the whole reason and the flags.",
                 {{"class", "note"}})
        .line()
        .open("table", {{"id", "students"}, {"class", "one-line"}})
        .line()
        .table_head(student_headings(one_source))
        .line()
        .open("tbody")
        .line();
    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        const char* verdict = to_string(report.verdict);
        page.open("tr", {{"class", "student-row"}})
            .element("td", entry->student_folder,
                     {{"class", "folder"}, {"title", entry->student_folder}})
            .element("td", report.student_id, {{"class", "student"}, {"title", report.student_id}})
            .open("td")
            .element("span", verdict, {{"class", std::string("badge ") + verdict}})
            .close("td")
            .element(
                "td",
                (report.verdict == Verdict::ungradable ? "–" : format_number(report.score, 2)) +
                    " / " + format_number(report.max_score, 2),
                {{"class", "number"}});
        if (!one_source) {
            page.element("td", numbers_source(report), {{"class", "numbers"}});
        }
        std::vector<std::string> lines;
        if (const auto mine = flags.find(entry->student_folder); mine != flags.end()) {
            lines = mine->second.lines();
        }
        const std::string reason = class_reason(report);
        page.open("td", {{"class", "detail"}});
        if (reason.empty() && lines.empty()) {
            page.text("–");
        } else {
            page.open("details").open("summary");
            if (!lines.empty()) {
                page.element(
                        "span",
                        std::to_string(lines.size()) + (lines.size() == 1 ? " flag" : " flags"),
                        {{"class", "badge review"}})
                    .text(" ");
            }
            // Hidden while the details are open: the whole reason follows.
            page.element("span",
                         reason.empty() ? "no reason: " + lines.front() : first_line(reason),
                         {{"class", "first-line"}})
                .close("summary");
            if (!reason.empty()) {
                // The reason as written, its lines kept (text::html, not html_line).
                page.open("div", {{"class", "reason"}});
                html << text::html(reason);
                page.close("div");
            }
            if (!lines.empty()) {
                std::string joined;
                for (std::size_t i = 0; i < lines.size(); ++i) {
                    joined += (i > 0 ? "; " : "") + lines[i];
                }
                page.element("div", joined, {{"class", "flags"}});
            }
            page.close("details");
        }
        page.close("td").open("td");
        if (entry->report_link.empty()) {
            page.text("–");
        } else {
            page.element("a", "report", {{"href", text::url_path(entry->report_link)}});
        }
        page.close("td").close("tr").line();
    }
    page.close("tbody").line().close("table").line().close("section").line();
}

}  // namespace

std::string write_class_report_html(const std::vector<ClassEntry>& entries,
                                    const ClassReportOptions& options) {
    return write_class_report_html(compute_class_data(entries, options), options);
}

std::string write_class_report_html(const ClassData& data, const ClassReportOptions& options) {
    const ClassSummary& summary = data.summary;
    const std::vector<const ClassEntry*>& sorted = data.sorted;
    const auto& flags = data.flags;
    const std::string exercise_id =
        options.exercise_id.empty() ? summary.exercise_id : options.exercise_id;
    const std::string exercise_title =
        options.exercise_title.empty() ? summary.exercise_title : options.exercise_title;
    const std::string heading = exercise_title.empty() ? exercise_id : exercise_title;

    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         // Nothing on this page may be fetched: a student string that slipped past escaping
         // still could not load anything.
         << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">\n"
         << "<title>Class report: " << escape_html(heading);
    if (!options.generated_at.empty()) {
        html << " (" << escape_html(options.generated_at) << ")";
    }
    html << "</title>\n<style>" << kClassPageCss << "</style>\n</head>\n<body>\n<main>\n"
         << "<h1>Class report: " << escape_html(heading) << "</h1>\n<p class=\"meta\">";
    if (!exercise_id.empty()) {
        html << "Exercise <code>" << escape_html(exercise_id) << "</code>";
    }
    if (!options.generated_at.empty()) {
        html << " · generated " << escape_html(options.generated_at);
    }
    html << " · " << summary.submissions << " submissions";
    html << "</p>\n<p class=\"meta\" id=\"numbers-source\">";
    if (summary.timed > 0) {
        html << "Timed on ";
        for (std::size_t i = 0; i < summary.timed_on.size(); ++i) {
            html << (i > 0 ? ", " : "") << escape_html(summary.timed_on[i]);
        }
        if (summary.timed_on.empty()) {
            html << "a GPU";
        }
        html << " (" << summary.timed << (summary.timed == 1 ? " submission" : " submissions")
             << ")";
    }
    if (summary.modeled > 0) {
        html << (summary.timed > 0 ? "; " : "") << "modeled on the PTX simulator, no GPU ("
             << summary.modeled << (summary.modeled == 1 ? " submission" : " submissions")
             << "): its costs are modeled, not times";
    }
    if (summary.timed == 0 && summary.modeled == 0) {
        html << "No kernel was timed or modeled.";
    }
    html << "</p>\n";
    if (options.interrupted || !options.unfinished.empty()) {
        html << "<p id=\"interrupted\" class=\"banner\" role=\"alert\">This run was interrupted: "
             << options.unfinished.size() << " of "
             << summary.submissions + options.unfinished.size()
             << " submissions have no report (listed under Not graded). Run the same command "
                "with <code>--resume</code> to finish.</p>\n";
    }

    write_verdict_counts(html, summary);
    write_score_histogram(html, summary);
    const bool counted_instead =
        !any_student_ratio(summary) &&
        std::any_of(sorted.begin(), sorted.end(), [](const ClassEntry* entry) {
            return std::any_of(entry->report.rows.begin(), entry->report.rows.end(),
                               [](const ReportRow& row) { return row.counted_degree.has_value(); });
        });
    if (counted_instead) {
        write_counted_chart(html, summary, sorted);
    } else {
        write_ratio_chart(html, summary, sorted);
    }
    write_failure_reasons(html, summary);
    write_checks(html, summary);
    write_not_graded(html, summary, options.unfinished);
    write_review(html, sorted, flags, data.clusters);
    write_sentences(html, sorted, data.clusters, flags);
    write_skipped(html, options.skipped);
    write_students(html, sorted, flags);
    html << "</main>\n</body>\n</html>\n";
    return html.str();
}

}  // namespace grader
