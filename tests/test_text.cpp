#include <doctest/doctest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "test_paths.hpp"
#include "text/text_safety.hpp"

using namespace grader;

namespace {

// Whether any byte of text is a C0 control other than newline and tab, DEL, or starts a C1
// control (U+0080..U+009F are 0xC2 0x80..0x9F).
bool has_raw_control(const std::string& text, bool lines_allowed) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (lines_allowed && (byte == '\n' || byte == '\t')) {
            continue;
        }
        if (byte < 0x20 || byte == 0x7F) {
            return true;
        }
        if (byte == 0xC2 && i + 1 < text.size() &&
            static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
            return true;
        }
    }
    return false;
}

// Every control a student might send: terminal escapes, a bell, a backspace, a lone CR, NUL, a
// C1 CSI, the bidirectional override that flips what follows, a line separator.
const std::string kHostile = std::string("a\x1b[31mred\x07\x08\rX\0Y", 16) +
                             "\xc2\x9b"
                             "2J"
                             "\xe2\x80\xae"
                             "evil"
                             "\xe2\x80\xa8"
                             "z";

}  // namespace

TEST_CASE("bytes that are not UTF-8 become U+FFFD and good text is left alone") {
    CHECK(text::repair_utf8("plain é ü 中文 🙂") == "plain é ü 中文 🙂");
    CHECK(text::repair_utf8("a\xff"
                            "b") ==
          "a\xEF\xBF\xBD"
          "b");
    CHECK(text::repair_utf8("\xc0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong NUL
    CHECK(text::repair_utf8("\xed\xa0\x80") ==
          "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");                                   // a surrogate
    CHECK(text::repair_utf8("\xf4\x90\x80\x80").find("\xf4") == std::string::npos);  // > U+10FFFF
    CHECK(text::repair_utf8("cut \xe2\x82") == "cut \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("the first byte that is not UTF-8 is found where repair would replace it") {
    CHECK(text::first_invalid_utf8("plain ascii\nand é ü 中文 🙂") == std::string_view::npos);
    CHECK(text::first_invalid_utf8("line one\nab\xff") == 11);
    CHECK(text::first_invalid_utf8("é\xc0\x80") == 2);         // overlong
    CHECK(text::first_invalid_utf8("\xed\xa0\x80") == 0);      // a surrogate
    CHECK(text::first_invalid_utf8("ok \xe2\x82") == 3);       // cut short
    CHECK(text::first_invalid_utf8("\xf4\x90\x80\x80") == 0);  // past U+10FFFF
}

TEST_CASE("control characters are shown as escapes a person can read, never obeyed") {
    const std::string shown = text::visible(kHostile);
    CHECK_FALSE(has_raw_control(shown, true));
    CHECK(shown.find("\\x1b[31mred\\x07\\x08\\x0dX\\x00Y") != std::string::npos);
    CHECK(shown.find("\\u009b2J") != std::string::npos);
    CHECK(shown.find("\\u202eevil") != std::string::npos);  // the override is named, not applied
    CHECK(shown.find("\\u2028z") != std::string::npos);
    SUBCASE("several lines keep their newlines and tabs; CR LF is a line end") {
        CHECK(text::visible("one\r\ntwo\tcolumn\n") == "one\ntwo\tcolumn\n");
    }
    SUBCASE("one line keeps nothing that starts another") {
        const std::string forged = text::visible_line("alice\nPASS  13/13  bob\r\n\tx");
        CHECK(forged == "alice\\nPASS  13/13  bob\\r\\n\\tx");
        CHECK(forged.find('\n') == std::string::npos);
        CHECK_FALSE(has_raw_control(text::visible_line(kHostile), false));
    }
}

TEST_CASE("HTML and XML escaping leave no markup and no character the format forbids") {
    CHECK(text::html("<script>alert('x') & \"y\"</script>") ==
          "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
    CHECK_FALSE(has_raw_control(text::html(kHostile), true));
    CHECK(text::html_line("a\nb") == "a\\nb");

    const std::string attribute =
        text::xml("a<b & \"c\" 'd'\n\te\x01\xef\xbf\xbf", text::XmlPlace::attribute);
    CHECK(attribute == "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&#10;&#9;e\\x01\\uffff");
    CHECK(text::xml("]]> \"q\"\nline", text::XmlPlace::text) == "]]&gt; \"q\"\nline");
    CHECK_FALSE(has_raw_control(text::xml(kHostile, text::XmlPlace::text), true));
}

TEST_CASE("a CSV field is one line, quoted where it must be, and never a formula") {
    CHECK(text::csv_field("alice") == "alice");
    CHECK(text::csv_field("Smith, \"Bobby\"") == "\"Smith, \"\"Bobby\"\"\"");
    CHECK(text::csv_field("=cmd|' /C calc'!A0") == "\"'=cmd|' /C calc'!A0\"");
    CHECK(text::csv_field("+SUM(A1:A9)") == "\"'+SUM(A1:A9)\"");
    CHECK(text::csv_field("-1+1") == "'-1+1");
    CHECK(text::csv_field("@trent") == "'@trent");
    CHECK(text::csv_field("\t=1") == "'\\t=1");
    CHECK(text::csv_field("\r=1") == "'\\r=1");
    CHECK(text::csv_field("two\nlines") == "two\\nlines");
    CHECK_FALSE(has_raw_control(text::csv_field(kHostile), false));
    SUBCASE("a semicolon starts no formula, for the spreadsheets that split cells at it") {
        CHECK(text::csv_field(";=cmd|' /C calc'!A0") == "\";'=cmd|' /C calc'!A0\"");
        CHECK(text::csv_field("a; b") == "\"a; b\"");
        CHECK(text::csv_field("a;  @SUM(1)") == "\"a;  '@SUM(1)\"");
        CHECK(text::csv_field("=1;-2") == "\"'=1;'-2\"");
        // What could call a function is inside quotes, a formula's string.
        CHECK(text::csv_field("gcd(3 32) is 1") == "\"gcd(3 32) is 1\"");
        CHECK(text::csv_field("cmd|calc") == "\"cmd|calc\"");
    }
}

TEST_CASE("a CSV key cell stays the name it joins on wherever a spreadsheet can do no harm") {
    using text::CsvCell;
    CHECK(text::csv_field("-dash-first", CsvCell::key) == "-dash-first");
    CHECK(text::csv_field("+alice", CsvCell::key) == "+alice");
    CHECK(text::csv_field("@jo.smith_2", CsvCell::key) == "@jo.smith_2");
    const std::string accented =
        "-Jos\xc3\xa9 Garc\xc3\xad"
        "a";  // -José García
    CHECK(text::csv_field(accented, CsvCell::key) == accented);
    CHECK(text::csv_field("smith, anna", CsvCell::key) == "\"smith, anna\"");
    // What could call a function, reach a program or another sheet is made text, key or not.
    CHECK(text::csv_field("=A1", CsvCell::key) == "'=A1");
    CHECK(text::csv_field("-2+cmd|' /C calc'!A0", CsvCell::key) == "\"'-2+cmd|' /C calc'!A0\"");
    CHECK(text::csv_field("+SUM(A1:A9)", CsvCell::key) == "\"'+SUM(A1:A9)\"");
    CHECK(text::csv_field("@HYPERLINK(\"x\")", CsvCell::key) == "\"'@HYPERLINK(\"\"x\"\")\"");
    CHECK(text::csv_field("\t-a", CsvCell::key) == "'\\t-a");
    CHECK(text::csv_field("-a;b", CsvCell::key) == "\"'-a;b\"");
    CHECK(text::csv_field("a;=b", CsvCell::key) == "\"a;'=b\"");
    // A text cell is made text whatever follows its first character.
    CHECK(text::csv_field("-dash-first") == "'-dash-first");
}

TEST_CASE("markdown punctuation is escaped and links stay on this disk") {
    CHECK(text::markdown_inline("eve|<img src=x>") == "eve\\|\\<img src=x\\>");
    CHECK(text::markdown_inline("# [link](x)\n- next\x1b") == "\\# \\[link\\](x) - next\\\\x1b");
    CHECK(text::url_path("Doe, Jane (late)/report.txt") == "Doe%2C%20Jane%20%28late%29/report.txt");
    CHECK(text::url_path("javascript:alert(1)") == "javascript%3Aalert%281%29");
    CHECK(text::url_path("//host/x") == ".//host/x");
}

TEST_CASE(
    "JSON text escapes every hidden control, keeps other letters readable and the value exact") {
    // The finding's id: a forged coloured verdict, an override, an isolate, NEL and LS.
    const std::string id =
        "\x1b[31mPASS 15/15\x1b[0m\xe2\x80\xae\xe2\x81\xa6x\nFORGED\r\xc2\x85"
        "\xe2\x80\xa8";
    const std::string others =
        "Jos\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x99\x82";  // José 中文 🙂
    const std::string all_hidden = std::string(
        "\0\x7f\xc2\x80\xc2\x9f\xd8\x9c\xe2\x80\x8e\xe2\x80\x8f"
        "\xe2\x80\xa9\xe2\x81\xa9\xef\xbf\xbe\xef\xbf\xbf",
        26);
    const nlohmann::json document = {{"student_id", id},
                                     {"others", others},
                                     {"all", all_hidden},
                                     {"after \\ a backslash", "\\\xe2\x80\xae\\u202e"},
                                     {"key \xe2\x80\xae", {1, "\xe2\x80\xa9"}}};
    for (const int indent : {-1, 2}) {
        CAPTURE(indent);
        const std::string written = text::json_text(document, indent);
        CHECK(nlohmann::json::parse(written) == document);
        for (const char* raw :
             {"\xe2\x80\xae", "\xe2\x81\xa6", "\xc2\x85", "\xe2\x80\xa8", "\x7f"}) {
            CHECK(written.find(raw) == std::string::npos);
        }
        CHECK(text::visible(written) == written);  // no hidden control, newlines aside
        CHECK(written.find("\\u202e\\u2066x\\nFORGED\\r\\u0085\\u2028") != std::string::npos);
        CHECK(written.find(others) != std::string::npos);
    }
    CHECK(text::json_text(document, -1).find('\n') == std::string::npos);

    const nlohmann::ordered_json ordered = {{"z", "\xe2\x80\xae"}, {"a", 1}};
    CHECK(text::json_text(ordered, -1) == "{\"z\":\"\\u202e\",\"a\":1}");
}

TEST_CASE("JSON text replaces bytes that are not UTF-8 instead of failing") {
    const nlohmann::json document = {{"log", "ok \xff\xfe \xed\xa0\x80 \xc2\x85 end"}};
    const std::string written = text::json_text(document, -1);
    const auto parsed = nlohmann::json::parse(written);
    const std::string log = parsed["log"];
    CHECK(log.rfind("ok \xef\xbf\xbd\xef\xbf\xbd ", 0) == 0);
    CHECK(log.find("\xc2\x85 end") != std::string::npos);
    CHECK(text::repair_utf8(log) == log);
    CHECK(written.find("\\u0085") != std::string::npos);
}

TEST_CASE("shortened text is cut between code points, and widths count code points") {
    CHECK(text::shorten("short", 10) == "short");
    CHECK(text::shorten("ééééé", 8) == "éé...");  // 10 bytes; never half an é
    CHECK(text::utf8_boundary("aé", 2) == 1);     // inside the é: back to its start
    CHECK(text::utf8_boundary("aé", 3) == 3);     // the end
    CHECK(text::utf8_boundary("aé", 9) == 3);     // past the end: the end
    CHECK(text::display_width("é中🙂a") == 4);
}

TEST_CASE("sentences compare equal whatever their case, spacing and punctuation") {
    const std::string example =
        "The conflict degree is gcd(stride, 32): 3 shares no factor with 32.";
    CHECK(text::comparison_key(example) ==
          text::comparison_key("the conflict  degree is GCD stride 32 -- 3 "
                               "shares no factor with 32"));
    CHECK(text::comparison_key("It’s “conflict free” — like stride 1") ==
          text::comparison_key("its conflict free like stride 1"));
    CHECK(text::comparison_key("ÉCOLE") == text::comparison_key("école"));
    SUBCASE("look-alike letters and invisible characters do not make a copy look new") {
        const std::string starter = "Stride 3 shares no factor with 32, so it is conflict free.";
        // Cyrillic a, e, o, c and i (U+0430, U+0435, U+043E, U+0441, U+0456) for Latin ones.
        const std::string cyrillic =
            "Strid\xd0\xb5 3 sh\xd0\xb0r\xd0\xb5s n\xd0\xbe f\xd0\xb0\xd1\x81tor w\xd1\x96th 32, "
            "so it is \xd1\x81onflict free.";
        // U+034F in "Stride", U+FE00 in "factor", U+180E in "conflict", U+200D in "free".
        const std::string invisible =
            "Str\xcd\x8fide 3 shares no fac\xef\xb8\x80tor with 32, so it is con\xe1\xa0\x8e"
            "flict fr\xe2\x80\x8d"
            "ee.";
        CHECK(text::comparison_key(cyrillic) == text::comparison_key(starter));
        CHECK(text::comparison_key(invisible) == text::comparison_key(starter));
        CHECK(text::comparison_key("Stride 5 shares no factor with 32.") !=
              text::comparison_key(starter));
    }
    CHECK(text::comparison_key(example) != text::comparison_key("Stride 3 is odd."));
    CHECK(text::comparison_key(" .,;\n") == "");
}

TEST_CASE("student ids that differ only by invisible or look-alike characters share one key") {
    const std::string key = grader::text::id_key("ann.lee");
    CHECK(key == "ann.lee");
    CHECK(grader::text::id_key("  ANN.LEE ") == key);           // case, spaces
    CHECK(grader::text::id_key("ann\xE2\x80\x8B.lee") == key);  // U+200B zero width
    CHECK(grader::text::id_key("a\xC2\xADnn.l\xE2\x80\x8D"
                               "ee") == key);                                   // soft hyphen, ZWJ
    CHECK(grader::text::id_key("\xD0\xB0nn.lee") == key);                       // Cyrillic a
    CHECK(grader::text::id_key("\xEF\xBD\x81nn.lee") == key);                   // fullwidth a
    CHECK(grader::text::id_key("ann.1ee") == grader::text::id_key("ann.lee"));  // 1 and l
    CHECK(grader::text::id_key("Ian") == grader::text::id_key("lan"));          // capital I and l
    CHECK(grader::text::id_key("s0") == grader::text::id_key("so"));            // 0 and o
    CHECK(grader::text::id_key("\xE2\x80\xAE"
                               "eel.nna") == "eel.nna");  // a bidi override
    // A Hangul syllable (U+D55C), its conjoining jamo (U+1112 U+1161 U+11AB) and the
    // compatibility jamo a keyboard may type (U+314E U+314F U+3134).
    const std::string han = grader::text::id_key("kim.\xED\x95\x9C");
    CHECK(grader::text::id_key("kim.\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB") == han);
    CHECK(grader::text::id_key("kim.\xE3\x85\x8E\xE3\x85\x8F\xE3\x84\xB4") == han);
    CHECK(grader::text::id_key("kim.\xED\x95\x98") != han);  // U+D558, another syllable
    SUBCASE("ids that differ by a letter a reader sees stay apart") {
        CHECK(grader::text::id_key("ann.lee") != grader::text::id_key("ann.lea"));
        CHECK(grader::text::id_key("jose") != grader::text::id_key("jos\xC3\xA9"));
        CHECK(grader::text::id_key("\xE4\xB8\xAD\xE6\x96\x87") == "\xE4\xB8\xAD\xE6\x96\x87");
    }
}
