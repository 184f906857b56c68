#include "report/canvas_gradebook.hpp"

#include "common/text.hpp"
#include "text/text_safety.hpp"

namespace grader {

std::string write_canvas_gradebook_csv(const std::string& assignment, double points_possible,
                                       const std::vector<CanvasScore>& scores) {
    using text::CsvCell;
    std::string csv = "\xEF\xBB\xBF";  // Excel reads a CSV without one in a legacy code page
    csv += text::csv_row(
        {"Student", "ID", "SIS User ID", "SIS Login ID", "Section", text::csv_field(assignment)});
    // Canvas's own export writes this row with its leading spaces; its importer looks for the
    // words.
    csv +=
        text::csv_row({"    Points Possible", "", "", "", "", format_number(points_possible, 2)});
    for (const CanvasScore& score : scores) {
        const CanvasRosterRow& row = score.student;
        csv += text::csv_row({text::csv_field(row.student), text::csv_field(row.id, CsvCell::key),
                              text::csv_field(row.sis_user_id, CsvCell::key),
                              text::csv_field(row.sis_login_id, CsvCell::key),
                              text::csv_field(row.section), format_number(score.points, 2)});
    }
    return csv;
}

}  // namespace grader
