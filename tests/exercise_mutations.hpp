#pragma once

// Broken exercise files, each one mutation of a good one (tests/fixtures/exercises/valid_copy,
// Part 1 with its comments stripped), with where the reader must point and what it must say.
// A mutation replaces text that occurs exactly once in the good file; a few hostile files are
// not mutations of anything and are given whole.

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_paths.hpp"

namespace grader::testing {

struct ExerciseMutation {
    std::string name;
    std::string from;  // empty: `to` is the whole file
    std::string to;
    int line;
    int column;
    std::string field;
    std::string message_part;
};

inline const std::vector<ExerciseMutation>& exercise_mutations() {
    static const std::vector<ExerciseMutation> mutations = {
        {"block_not_a_number", "  block: [256]", "  block: [abc]", 31, 11, "launch.block[0]",
         "expected a positive integer, got 'abc'"},
        {"input_words_negative", "  input_words: 2048", "  input_words: -2048", 37, 16,
         "buffers.input_words", "got '-2048'"},
        {"block_not_whole_warps", "  block: [256]", "  block: [100]", 31, 10, "launch.block",
         "multiple of 32"},
        {"block_above_1024", "  block: [256]", "  block: [32, 64]", 31, 10, "launch.block",
         "at most 1024"},
        {"output_layout_unknown", "  output: per_thread", "  output: per_block", 38, 11,
         "buffers.output", "got 'per_block'"},
        {"typo_input_word", "  input_words: 2048", "  input_word: 2048", 37, 3,
         "buffers.input_word", "unknown key 'input_word' (did you mean 'input_words'?)"},
        {"unknown_rule_kind", "id: stride16_slower_than_stride8, kind: slower_than,",
         "id: stride16_slower_than_stride8, kind: faster_than,", 150, 51,
         "checks.ordering.rules[1].kind", "unknown rule kind 'faster_than'"},
        {"unknown_parameter_role", "size: 8, role: count }", "size: 8, role: scratch }", 16, 60,
         "kernel.parameters[2].role", "unknown parameter role 'scratch'"},
        {"ordering_stride_not_timed",
         "stride16_slower_than_stride8, kind: slower_than, stride: 16, than: 8",
         "stride16_slower_than_stride8, kind: slower_than, stride: 16, than: 7", 150, 82,
         "checks.ordering.rules[1].than", "stride 7 is not in"},
        {"calibration_stride_not_in_reference", "stride: 8, than: 4, factor: 1.3,",
         "stride: 8, than: 5, factor: 1.3,", 57, 81, "calibration.rules[2].than",
         "stride 5 is not in strides.reference"},
        {"key_not_for_rule_kind", "near: 1, far: 4, description",
         "near: 1, far: 4, than: 2, description", 149, 82, "checks.ordering.rules[0].than",
         "does not apply to a closer_to rule"},
        // A missing key is reported at the map that should hold it.
        {"missing_student_strides", "  student: [3, 8, 16]\n", "", 45, 3, "strides.student",
         "missing"},
        {"output_check_unknown_input", "    input: hidden", "    input: hiddn", 120, 12,
         "checks.hidden_input.input", "there is no input 'hiddn'"},
        {"check_kind_unknown", "    kind: output\n    input: hidden",
         "    kind: outputs\n    input: hidden", 119, 11, "checks.hidden_input.kind",
         "unknown check kind 'outputs'"},
        {"reference_file_missing", "file: ../../../../reference/probe_shared_stride.cu",
         "file: no_such_kernel.cu", 20, 28, "references[0].file", "no_such_kernel.cu' not found"},
        {"header_file_missing", "file: ../../../../exercises/day15-bank-conflicts/day15_probe.h",
         "file: no_such_header.h", 28, 39, "compile.headers[0].file", "not found"},
        // NVRTC 12 refuses an option given twice where NVRTC 13 takes it.
        {"option_given_twice", "  options: [\"-std=c++17\", \"-lineinfo\"]",
         "  options: [\"-std=c++17\", \"-lineinfo\", \"-lineinfo\"]", 25, 40, "compile.options[2]",
         "'-lineinfo' is given twice"},
        // The same option under its other spelling is given twice too.
        {"option_alias_given_twice", "  options: [\"-std=c++17\", \"-lineinfo\"]",
         "  options: [\"-std=c++17\", \"-lineinfo\", \"--generate-line-info\"]", 25, 40,
         "compile.options[2]", "'--generate-line-info' is given twice (as '-lineinfo')"},
        {"option_std_given_twice", "  options: [\"-std=c++17\", \"-lineinfo\"]",
         "  options: [\"-std=c++17\", \"-lineinfo\", \"--std=c++14\"]", 25, 40,
         "compile.options[2]", "'--std=c++14' is given twice (as '-std=c++17')"},
        // The harness gives -arch itself: one in the options would be the second.
        {"option_names_the_arch", "  options: [\"-std=c++17\", \"-lineinfo\"]",
         "  options: [\"-std=c++17\", \"-lineinfo\", \"-arch=sm_80\"]", 25, 40,
         "compile.options[2]", "names the architecture"},
        {"duplicate_key", "banks: 32\n", "banks: 32\nbanks: 16\n", 6, 1, "banks",
         "appears twice (first on line 5)"},
        {"points_not_a_number", "    points: 2\n    rules:", "    points: many\n    rules:", 147,
         13, "checks.ordering.points", "got 'many'"},
        {"required_not_a_bool", "    required: false", "    required: maybe", 174, 15,
         "checks.sentence.required", "true or false"},
        {"schema_version_1", "schema_version: 2", "schema_version: 1", 2, 17, "schema_version",
         "reads schema_version 2"},
        {"no_oracle", "label: \"reference probe\", oracle: true }", "label: \"reference probe\" }",
         20, 3, "references", "exactly one kernel with 'oracle: true'"},
        {"stride_parameter_without_strides",
         "strides:\n  reference: [1, 2, 3, 4, 8, 16, 32, 33]\n  student: [3, 8, 16]\n"
         "  unnamed_pool: [5, 6, 7, 12, 24, 31, 32, 48, 65]\n  unnamed_per_grade: 2\n",
         "", 2, 1, "strides", "the kernel takes a stride"},
        {"not_utf8", "title: \"Day 15: shared memory bank conflicts\"",
         "title: \"Day 15: shared memory bank conflicts, r\xe9sum\xe9\"", 4, 48, "", "not UTF-8"},
        // The list opened on line 25 is never closed; the parser notices on the next key. (A
        // column of 0: where on the line yaml-cpp stops is its own business.)
        {"yaml_syntax_error", "  options: [\"-std=c++17\", \"-lineinfo\"]",
         "  options: [\"-std=c++17\", \"-lineinfo\"", 26, 0, "", "YAML syntax error"},
        {"top_level_list", "", "# the file is a list, not a map\n- id: day15\n- title: x\n", 2, 1,
         "", "expected a map"},
        {"deeply_nested", "",
         "# brackets nested far deeper than any exercise needs\nschema_version: 2\nid: deep\n"
         "nested: " +
             std::string(100, '[') + std::string(100, ']') + "\n",
         4, 72, "", "nests more than 64 levels"},
    };
    return mutations;
}

inline std::string read_whole(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes FOLDER/<name>/exercise.yaml: the good file with the mutation applied, its paths made
// absolute (it no longer sits beside the good one). Returns the exercise folder.
inline std::filesystem::path write_mutated_exercise(const ExerciseMutation& mutation,
                                                    const std::filesystem::path& folder) {
    const std::filesystem::path fixtures(GRADER_FIXTURES_DIR);
    std::string text = mutation.to;
    if (!mutation.from.empty()) {
        text = read_whole(fixtures / "exercises" / "valid_copy" / "exercise.yaml");
        const std::size_t at = text.find(mutation.from);
        if (at == std::string::npos || text.find(mutation.from, at + 1) != std::string::npos) {
            throw std::logic_error("mutation " + mutation.name +
                                   ": its text is not in the good file exactly once");
        }
        text.replace(at, mutation.from.size(), mutation.to);
        const std::string relative = "../../../../";
        const std::string source = std::string(GRADER_SOURCE_DIR) + "/";
        for (std::size_t path = text.find(relative); path != std::string::npos;
             path = text.find(relative, path + source.size())) {
            text.replace(path, relative.size(), source);
        }
    }
    const std::filesystem::path exercise = folder / mutation.name;
    std::filesystem::create_directories(exercise);
    std::ofstream(exercise / "exercise.yaml", std::ios::binary) << text;
    return exercise;
}

}  // namespace grader::testing
