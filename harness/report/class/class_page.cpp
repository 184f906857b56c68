// The class page: one self-contained HTML file (inline CSS and SVG, and one small script that
// sorts and filters the students; the page is whole without it).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/bank_model.hpp"
#include "model/diagnosis.hpp"
#include "model/report.hpp"
#include "report/class/class_charts.hpp"
#include "report/class/class_detail.hpp"
#include "report/class/markup.hpp"
#include "report/class_outputs.hpp"
#include "report/class_page_css.hpp"
#include "report/class_page_js.hpp"
#include "text/text_safety.hpp"

namespace grader {

using namespace class_detail;

// ---------------------------------------------------------------------------------------------
// HTML class report

namespace {

std::string escape_html(const std::string& text) {
    return text::html_line(text);
}

// The script's SHA-256 in base64, as a Content-Security-Policy names a script it lets run.
std::string script_hash() {
    const auto digest = sha256(kClassPageJs);
    return base64(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

// A list of folders, whole: the first few inline, the rest folded in a <details> that needs no
// script to open (a cause 60 students share was cut at "and 48 more").
void write_folder_list(Markup& page, const std::vector<std::string>& folders) {
    constexpr std::size_t kInline = 12;
    std::string shown;
    for (std::size_t i = 0; i < folders.size() && i < kInline; ++i) {
        shown += (i > 0 ? ", " : "") + folders[i];
    }
    page.text(shown);
    if (folders.size() > kInline) {
        std::string rest;
        for (std::size_t i = kInline; i < folders.size(); ++i) {
            rest += (i > kInline ? ", " : "") + folders[i];
        }
        page.text(" ")
            .open("details", {{"class", "more"}})
            .element("summary", "and " + std::to_string(folders.size() - kInline) + " more")
            .text(rest)
            .close("details");
    }
}

void write_failure_reasons(std::ostringstream& html, const ClassSummary& summary) {
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "failure-reasons-title"}})
        .line()
        .element("h2", "Root causes", {{"id", "failure-reasons-title"}})
        .line()
        .open("table", {{"id", "failure-reasons"}})
        .line()
        .table_head({{"#", "number"},
                     {"root cause", ""},
                     {"whose to fix", ""},
                     {"submissions", "number"},
                     {"folders", ""}})
        .line()
        .open("tbody")
        .line();
    std::size_t rank = 0;
    for (const FailureReason& reason : summary.failure_reasons) {
        page.open("tr", {{"class", "failure-reason"},
                         {"data-key", reason.key},
                         {"data-cause", reason.cause}})
            .element("td", std::to_string(++rank), {{"class", "number"}})
            .open("td", {{"class", "cause"}})
            .text(reason.reason)
            .text(" ")
            // Where the script runs, a link that shows these students in the table below.
            .element("a", "show",
                     {{"class", "js-only show"}, {"href", "#cause=" + text::url_path(reason.key)}})
            .close("td")
            .element("td", reason.area.empty() ? "–" : reason.area, {{"class", "area"}})
            .element("td", std::to_string(reason.folders.size()), {{"class", "number"}})
            .open("td", {{"class", "folders"}});
        write_folder_list(page, reason.folders);
        page.close("td").close("tr").line();
    }
    if (summary.failure_reasons.empty()) {
        page.open("tr")
            .element("td", "No graded submission lost a point.", {{"colspan", "5"}})
            .close("tr")
            .line();
    }
    page.close("tbody")
        .line()
        .close("table")
        .line()
        .element("p",
                 "Each submission counts once, under its grade's diagnosis: the root cause its "
                 "own report leads with (a missing barrier, an off-by-one guard, the old width, a "
                 "compile error by kind), not the check that saw the symptom. A report without "
                 "one counts under the first stage that failed. Ungradable submissions are listed "
                 "apart.",
                 {{"class", "note"}})
        .line()
        .close("section")
        .line();
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
        if (flag.sentence_cluster > 0 && !flag.beyond_shared_sentence()) {
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
                         (cluster.identical ? "" : ", near-identical") +
                         (cluster.source.empty() ? "" : ": " + cluster.source),
                     {{"class", cluster.source.empty() ? "badge review" : "badge review source"}})
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

// A flag as the students' filter names it: its kind (a row's data-flags) and what it says.
struct FlagKind {
    const char* kind;
    const char* label;
};

std::vector<FlagKind> flag_kinds(const SubmissionFlags& flag) {
    std::vector<FlagKind> kinds;
    const auto add = [&](bool set, const char* kind, const char* label) {
        if (set) {
            kinds.push_back({kind, label});
        }
    };
    add(flag.no_id, "no-id", "no student id");
    add(flag.example_id, "example-id", "the starter kit's id");
    add(!flag.same_id_as.empty(), "same-id", "a student id shared with another folder");
    add(flag.no_sentence, "no-sentence", "no sentence");
    add(flag.sentence_same_as_lesson || flag.sentence_nearly_lesson, "sentence-lesson",
        "the lesson's own sentence");
    add(flag.sentence_same_as_example || flag.sentence_nearly_example, "sentence-example",
        "the starter kit's sentence");
    add(!flag.same_sentence_as.empty(), "sentence-shared", "a sentence shared with classmates");
    add(flag.measured_same_as_example, "measured-example", "the starter kit's measured values");
    add(flag.measured_same_as_modeled, "measured-modeled",
        "the simulator's modeled ratios as measured");
    return kinds;
}

// Lower case, for the search the script makes (ASCII letters; others as they are).
std::string search_text(const std::vector<std::string>& parts) {
    std::string text;
    for (const std::string& part : parts) {
        text += (text.empty() ? "" : " ") + part;
    }
    for (char& c : text) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return text;
}

// The students' table's headings: each that sorts has a button the script wires (inert without
// it); "numbers" (the figures' source) only where the class's figures come from more than one.
void write_student_headings(Markup& page, bool one_source) {
    struct Heading {
        const char* text;
        const char* sort;  // empty: does not sort
        const char* css_class;
    };
    std::vector<Heading> headings = {{"folder", "folder", ""},   {"student id", "student", ""},
                                     {"verdict", "verdict", ""}, {"score", "score", "number"},
                                     {"cause", "cause", ""},     {"flags", "flagcount", ""}};
    if (!one_source) {
        headings.push_back({"numbers", "", ""});
    }
    headings.push_back({"reason and flags", "", ""});
    headings.push_back({"report", "", ""});
    page.open("thead").open("tr");
    for (const Heading& heading : headings) {
        if (*heading.sort == '\0') {
            page.element("th", heading.text, {{"class", heading.css_class}});
            continue;
        }
        page.open("th",
                  {{"class", heading.css_class},
                   {"data-sort", heading.sort},
                   {"scope", "col"},
                   {"aria-sort", std::string(heading.sort) == "folder" ? "ascending" : "none"}})
            .open("button", {{"type", "button"}, {"class", "sort"}})
            .text(heading.text)
            .close("button")
            .close("th");
    }
    page.close("tr").close("thead");
}

// The filters above the table: shown only where the script runs (the page is whole without).
void write_student_filters(Markup& page, const ClassSummary& summary,
                           const std::map<std::string, std::size_t>& flag_counts,
                           const std::map<std::string, std::string>& flag_labels,
                           std::size_t students) {
    page.open("form", {{"id", "student-filters"}, {"class", "filters js-only"}, {"role", "search"}})
        .open("label")
        .text("search ")
        .open("input", {{"type", "search"},
                        {"name", "q"},
                        {"placeholder", "folder, id, cause or flag"},
                        {"aria-label", "search the students"}})
        .close("label")
        .open("label")
        .text("verdict ")
        .open("select", {{"name", "verdict"}})
        .element("option", "any", {{"value", ""}});
    for (const char* verdict : {"pass", "fail", "ungradable"}) {
        page.element("option", verdict, {{"value", verdict}});
    }
    page.close("select")
        .close("label")
        .open("label")
        .text("cause ")
        .open("select", {{"name", "cause"}})
        .element("option", "any", {{"value", ""}});
    for (const FailureReason& reason : summary.failure_reasons) {
        page.element("option", reason.reason + " (" + std::to_string(reason.folders.size()) + ")",
                     {{"value", reason.key}});
    }
    page.close("select")
        .close("label")
        .open("label")
        .text("flag ")
        .open("select", {{"name", "flag"}})
        .element("option", "any or none", {{"value", ""}})
        .element("option", "any flag", {{"value", "any"}})
        .element("option", "no flag", {{"value", "none"}});
    for (const auto& [kind, count] : flag_counts) {
        page.element("option", flag_labels.at(kind) + " (" + std::to_string(count) + ")",
                     {{"value", kind}});
    }
    page.close("select")
        .close("label")
        .open("label")
        .text("score at most ")
        .open("input", {{"type", "number"}, {"name", "score"}, {"step", "any"}, {"min", "0"}})
        .close("label")
        .open("button", {{"type", "reset"}})
        .text("show all")
        .close("button")
        .element("output",
                 std::to_string(students) + " of " + std::to_string(students) + " students shown",
                 {{"id", "filter-count"}, {"aria-live", "polite"}})
        .close("form")
        .line();
}

void write_students(std::ostringstream& html, const ClassSummary& summary,
                    const std::vector<const ClassEntry*>& sorted,
                    const std::map<std::string, SubmissionFlags>& flags) {
    std::set<std::string> sources;
    std::map<std::string, std::size_t> flag_counts;
    std::map<std::string, std::string> flag_labels;
    for (const ClassEntry* entry : sorted) {
        sources.insert(numbers_source(entry->report));
        if (const auto mine = flags.find(entry->student_folder); mine != flags.end()) {
            for (const FlagKind& kind : flag_kinds(mine->second)) {
                ++flag_counts[kind.kind];
                flag_labels[kind.kind] = kind.label;
            }
        }
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
                 "One line a student, by folder: the verdict, the score, the root cause and the "
                 "flags; open a line for the whole reason and the flags. Sort by a column's "
                 "heading, filter above (with the script the page carries; without it, every "
                 "student is listed as here).",
                 {{"class", "note"}})
        .line();
    write_student_filters(page, summary, flag_counts, flag_labels, sorted.size());
    page.open("div", {{"class", "scroll"}})
        .open("table", {{"id", "students"}, {"class", "one-line"}})
        .line();
    write_student_headings(page, one_source);
    page.line().open("tbody").line();
    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        const char* verdict = to_string(report.verdict);
        std::vector<std::string> lines;
        std::string kinds;
        if (const auto mine = flags.find(entry->student_folder); mine != flags.end()) {
            lines = mine->second.lines();
            for (const FlagKind& kind : flag_kinds(mine->second)) {
                kinds += (kinds.empty() ? "" : " ") + std::string(kind.kind);
            }
        }
        const std::optional<StudentCause> cause = student_cause(report);
        const bool graded = report.verdict != Verdict::ungradable;
        const std::string reason = class_reason(report);
        page.open("tr", {{"class", "student-row"},
                         {"data-folder", entry->student_folder},
                         {"data-student", report.student_id},
                         {"data-verdict", verdict},
                         {"data-score", graded ? format_number(report.score, 6) : std::string()},
                         {"data-cause", cause ? cause->key : std::string()},
                         {"data-flags", kinds},
                         {"data-flagcount", std::to_string(lines.size())},
                         {"data-text",
                          search_text({entry->student_folder, report.student_id,
                                       cause ? cause->reason : std::string(), reason, kinds})}})
            .element("td", entry->student_folder, {{"class", "folder"}})
            .element("td", report.student_id, {{"class", "student"}})
            .open("td")
            .element("span", verdict, {{"class", std::string("badge ") + verdict}})
            .close("td")
            .element("td",
                     (graded ? format_number(report.score, 2) : "–") + " / " +
                         format_number(report.max_score, 2),
                     {{"class", "number"}})
            .element("td", cause ? cause->reason : "–",
                     {{"class", "cause"}, {"title", cause ? cause->reason : ""}})
            .open("td", {{"class", "flag-count"}});
        if (lines.empty()) {
            page.text("–");
        } else {
            page.element("span",
                         std::to_string(lines.size()) + (lines.size() == 1 ? " flag" : " flags"),
                         {{"class", "badge review"}});
        }
        page.close("td");
        if (!one_source) {
            page.element("td", numbers_source(report), {{"class", "numbers"}});
        }
        page.open("td", {{"class", "detail"}});
        if (reason.empty() && lines.empty()) {
            page.text("–");
        } else {
            page.open("details").open("summary");
            // Hidden while the details are open: the whole reason follows. The cause's title,
            // in its column already, is not said twice on the line.
            const std::string line =
                first_line(report.diagnosis && !to_sentence(*report.diagnosis).empty()
                               ? to_sentence(*report.diagnosis)
                               : reason);
            page.element("span", reason.empty() ? "no reason: " + lines.front() : line,
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
    page.close("tbody").line().close("table").close("div").line().close("section").line();
}

// Where each part of the page is: at 300 students it is long.
void write_contents(std::ostringstream& html, bool counted_instead) {
    Markup page(html);
    page.open("nav", {{"class", "contents"}, {"aria-label", "contents"}});
    const std::vector<std::pair<std::string, std::string>> parts = {
        {"#verdict-counts-title", "verdicts"},
        {"#failure-reasons-title", "root causes"},
        {"#not-graded-title", "not graded"},
        {"#students-title", "students"},
        {"#review-title", "to look at twice"},
        {"#sentences-title", "sentences"},
        {"#claims-chart-title", "predicted and measured"},
        {counted_instead ? "#counted-chart-title" : "#ratio-chart-title",
         counted_instead ? "counted degrees" : "ratios"},
        {"#checks-title", "checks"},
        {"#skipped-title", "skipped"}};
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) {
            page.text(" · ");
        }
        page.element("a", parts[i].second, {{"href", parts[i].first}});
    }
    page.close("nav").line();
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
         // The page's own script, and only it, may run: the policy names its SHA-256.
         << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'sha256-"
         << script_hash() << "'\">\n"
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

    const bool counted_instead =
        !any_student_ratio(summary) &&
        std::any_of(sorted.begin(), sorted.end(), [](const ClassEntry* entry) {
            return std::any_of(entry->report.rows.begin(), entry->report.rows.end(),
                               [](const ReportRow& row) { return row.counted_degree.has_value(); });
        });
    write_contents(html, counted_instead);
    // What an instructor of 300 reads first: the verdicts, why students lost points, what the
    // machine could not grade, and the students themselves; then copies, numbers and checks.
    write_verdict_counts(html, summary);
    write_score_histogram(html, summary);
    write_failure_reasons(html, summary);
    write_not_graded(html, summary, options.unfinished);
    write_students(html, summary, sorted, flags);
    write_review(html, sorted, flags, data.clusters);
    write_sentences(html, sorted, data.clusters, flags);
    write_claims_chart(html, summary, sorted);
    if (counted_instead) {
        write_counted_chart(html, summary, sorted);
    } else {
        write_ratio_chart(html, summary, sorted);
    }
    write_checks(html, summary);
    write_skipped(html, options.skipped);
    html << "</main>\n<script>" << kClassPageJs << "</script>\n</body>\n</html>\n";
    return html.str();
}

}  // namespace grader
