#pragma once

// One place for text that comes from outside the grader (a student's id, sentence and folder
// name; a compiler's log about their code; what their kernel printed) on its way into a file, a
// terminal or a log: bytes that are not UTF-8 are repaired, control characters are made
// visible, and each format gets its own escaping. Every writer goes through here, so a student's
// text meets exactly one escaping layer whatever it lands in.
//
// "Visible" means a control character is written as a backslash escape a person can read
// ("\x1b", "\u0085", "\u202e"): it is shown, never obeyed, and never silently dropped.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace grader::text {

// The bytes as UTF-8: each byte that does not belong to a well-formed sequence (a stray
// continuation byte, a sequence cut short, an overlong form, a surrogate, past U+10FFFF) becomes
// U+FFFD.
std::string repair_utf8(std::string_view bytes);

// The offset of the first byte repair_utf8() would replace, or npos where the text is all UTF-8.
std::size_t first_invalid_utf8(std::string_view bytes);

// Whether a code point must never leave the grader raw: C0 controls, DEL, C1 controls, the
// bidirectional marks, embeddings, overrides and isolates (they reorder what a reader sees), the
// line and paragraph separators, and the noncharacters U+FFFE and U+FFFF (XML cannot carry them).
// Newline and tab are controls too; visible() keeps them, visible_line() does not.
bool is_hidden_control(char32_t code_point);

// Text of several lines, shown as it is: repaired UTF-8, CR LF read as LF, and every hidden
// control but newline and tab written as a visible escape.
std::string visible(std::string_view text);

// The same on one line: newline, CR and tab become "\n", "\r" and "\t" too, so nothing a student
// wrote can start a line of its own (a forged "PASS 13/13" line, a second log record).
std::string visible_line(std::string_view text);

// HTML character data, or a quoted attribute's value: visible() (or visible_line()), then the
// five characters HTML gives meaning to as references.
std::string html(std::string_view text);
std::string html_line(std::string_view text);

// XML 1.0 character data or an attribute's value: visible() leaves no character XML 1.0 forbids;
// & < > become references, and in an attribute also both quotes, and newline and tab become
// character references so a reader does not fold them into spaces.
enum class XmlPlace { text, attribute };
std::string xml(std::string_view text, XmlPlace place);

// One RFC 4180 field, safe in every spreadsheet: visible_line() (so no line break or tab is left
// raw), then quoted where it holds a comma, a semicolon or a quote. A text cell a spreadsheet
// would read as a formula (one that starts with =, +, -, @, or a control such as tab or CR, which
// visible_line shows as a backslash escape) gets a leading apostrophe, which makes it text.
//
// A spreadsheet that splits cells at ';' (most of Europe's) ignores the quotes of a file split at
// ',' and makes one cell of everything between two ';'. So a ';' followed (past spaces) by =, +,
// - or @ gets the apostrophe before that character too, and a field holding what a formula needs
// to call a function, reach a program or another sheet (any of ( | ! [) is quoted: inside a
// formula a quoted field is a string, which calls nothing, as its quotes are doubled.
//
// A key cell (a folder, a uid, an LMS id: what a gradebook is joined on) stays exactly the name
// it came from wherever a spreadsheet can do no harm with it, so that a folder "-dash-first"
// still joins with the class folder's "-dash-first": it is kept as it is unless it starts with =,
// or starts with +, - or @ and holds anything but letters, digits, spaces and . _ - + @. Such a
// key is made text as a text cell is.
enum class CsvCell { text, key };
std::string csv_field(std::string_view text, CsvCell cell = CsvCell::text);

// One CSV row of fields csv_field() made (numbers as they are), joined by ',' and ended by CRLF,
// as RFC 4180 writes a record.
std::string csv_row(const std::vector<std::string>& fields);

// Markdown inline text: visible(), with newlines and tabs as spaces (a line of its own could start
// a list or a heading) and the punctuation markdown gives meaning to escaped by a backslash, so a
// sentence cannot become a link, a heading or a table column.
std::string markdown_inline(std::string_view text);

// A JSON document as text (indent as nlohmann's dump() takes it: -1 for one line). Bytes that are
// not UTF-8 become U+FFFD; every hidden control, C0 to the separators, is a \uXXXX escape, so a
// terminal or a script showing the file never obeys one, and a JSON reader gets the value back
// exactly. Other characters ("José", "中文") stay as they are, readable.
std::string json_text(const nlohmann::json& document, int indent);
std::string json_text(const nlohmann::ordered_json& document, int indent);

// A relative link target: every byte but unreserved ones and '/' percent-encoded (so
// "javascript:" loses its colon), and a leading '/' preceded by '.' (so "//host" cannot name
// another machine).
std::string url_path(std::string_view path);

// The largest offset at most `at` that does not fall inside a UTF-8 sequence of text: where text
// may be cut.
std::size_t utf8_boundary(std::string_view text, std::size_t at);

// At most max_bytes bytes of text, cut on a code point's boundary, ending in "..." where cut.
std::string shorten(std::string_view text, std::size_t max_bytes);

// The code points in UTF-8 text: what a terminal shows of it, one column each.
std::size_t display_width(std::string_view text);

// The text as two sentences are compared: folded as id_key folds ids (look-alike letters of other
// scripts to the letters they imitate, case, default-ignorable code points such as U+034F,
// U+FE00 and U+180E dropped), then letters and digits only, so that case, spacing, punctuation
// (ASCII and the common Unicode quotes, dashes and spaces), a Cyrillic "а" for a Latin "a" and
// an invisible character inside a word do not tell two copies of one sentence apart.
std::string comparison_key(std::string_view text);

// A student id as ids are compared (UTS #39, Unicode's security mechanisms): normalised (NFKD),
// folded to its confusables skeleton and case-folded, with default-ignorable code points
// (zero-width spaces and joiners, soft hyphens, bidirectional marks, variation selectors) and
// controls dropped, and surrounding blanks trimmed. "Ann", "ANN", "Ａｎｎ", "A\u200Bnn" and "Аnn"
// (a Cyrillic A) all give one key; so do "I" and "l", and "0" and "o". The fold is a generated
// table (scripts/generate-id-folding.py, from Unicode's confusables.txt); Hangul syllables are
// kept composed.
std::string id_key(std::string_view id);

}  // namespace grader::text
