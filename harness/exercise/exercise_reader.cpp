#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "exercise/exercise.hpp"
#include "exercise/yaml_file.hpp"
#include "model/bank_model.hpp"

// The exercise file: every fault is the instructor's, thrown at once as an ExerciseError (the CLI
// exits 2 with its file, line, column and field).

namespace grader {

namespace fs = std::filesystem;
using namespace yaml_file;

namespace {

// An exercise file is a page of text; a megabyte is already absurd.
constexpr std::size_t kMaxExerciseBytes = std::size_t{1} << 20;

// ---------------------------------------------------------------------------------------------
// The exercise file: every fault is the instructor's and is thrown at once.

class ExerciseReader {
public:
    ExerciseReader(std::string shown_path, fs::path directory)
        : shown_path_(std::move(shown_path)), directory_(std::move(directory)) {}

    [[noreturn]] void fail(const YAML::Mark& mark, const std::string& field,
                           const std::string& message) const {
        throw ExerciseError(location_of(shown_path_, mark), field, message);
    }

    SourceLocation location(const YAML::Node& node) const {
        return location_of(shown_path_, node.Mark());
    }

    // A map with only the known keys.
    void expect_map(const YAML::Node& node, const std::string& field,
                    const std::vector<std::string>& known) const {
        if (!node.IsMap()) {
            fail(node.Mark(), field, "expected a map, got " + describe(node));
        }
        const auto complaints = key_complaints(node, field, known);
        if (!complaints.empty()) {
            fail(complaints.front().mark, complaints.front().field, complaints.front().message);
        }
    }

    YAML::Node required(const YAML::Node& map, const std::string& field,
                        const std::string& key) const {
        YAML::Node value = find_value(map, key);
        if (!value.IsDefined()) {
            fail(map.Mark(), join_field(field, key), "missing; this key is required here");
        }
        return value;
    }

    std::string text(const YAML::Node& node, const std::string& field) const {
        if (!node.IsScalar()) {
            fail(node.Mark(), field, "expected text, got " + describe(node));
        }
        return node.Scalar();
    }

    std::string nonempty_text(const YAML::Node& node, const std::string& field) const {
        std::string value = text(node, field);
        if (trim(value).empty()) {
            fail(node.Mark(), field, "expected text, got an empty string");
        }
        return value;
    }

    long long integer(const YAML::Node& node, const std::string& field, long long min,
                      long long max, const std::string& expectation) const {
        const auto value = node.IsScalar() ? parse_integer(node.Scalar()) : std::nullopt;
        if (!value || *value < min || *value > max) {
            fail(node.Mark(), field, "expected " + expectation + ", got " + describe(node));
        }
        return *value;
    }

    int positive_int(const YAML::Node& node, const std::string& field) const {
        return static_cast<int>(
            integer(node, field, 1, std::numeric_limits<int>::max(), "a positive integer"));
    }

    int non_negative_int(const YAML::Node& node, const std::string& field) const {
        return static_cast<int>(
            integer(node, field, 0, std::numeric_limits<int>::max(), "an integer of 0 or more"));
    }

    double number(const YAML::Node& node, const std::string& field, bool zero_allowed) const {
        const auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
        if (!value || *value < 0.0 || (*value == 0.0 && !zero_allowed)) {
            fail(node.Mark(), field,
                 std::string("expected ") +
                     (zero_allowed ? "a number of 0 or more" : "a positive number") + ", got " +
                     describe(node));
        }
        return *value;
    }

    bool boolean(const YAML::Node& node, const std::string& field) const {
        const auto value = node.IsScalar() ? parse_bool(node.Scalar()) : std::nullopt;
        if (!value) {
            fail(node.Mark(), field, "expected true or false, got " + describe(node));
        }
        return *value;
    }

    // A list of distinct positive strides.
    std::vector<int> strides(const YAML::Node& node, const std::string& field,
                             bool empty_allowed) const {
        if (!node.IsSequence()) {
            fail(node.Mark(), field, "expected a list of strides, got " + describe(node));
        }
        if (node.size() == 0 && !empty_allowed) {
            fail(node.Mark(), field, "expected at least one stride, got an empty list");
        }
        std::vector<int> values;
        for (std::size_t i = 0; i < node.size(); ++i) {
            const int value = positive_int(node[i], index_field(field, i));
            if (std::find(values.begin(), values.end(), value) != values.end()) {
                fail(node[i].Mark(), index_field(field, i),
                     "stride " + std::to_string(value) + " is listed twice");
            }
            values.push_back(value);
        }
        return values;
    }

    // A file named relative to the exercise folder, which must exist.
    fs::path existing_file(const YAML::Node& node, const std::string& field) const {
        const std::string name = nonempty_text(node, field);
        const fs::path resolved = fs::absolute(directory_ / name).lexically_normal();
        std::error_code error;
        if (!fs::is_regular_file(resolved, error)) {
            fail(node.Mark(), field,
                 "file " + quote(name) + " not found (looked for " + resolved.string() + ")");
        }
        return resolved;
    }

private:
    std::string shown_path_;
    fs::path directory_;
};

const std::vector<std::pair<std::string, ParameterRole>>& role_names() {
    static const std::vector<std::pair<std::string, ParameterRole>> kRoles = {
        {"input", ParameterRole::input},
        {"output", ParameterRole::output},
        {"count", ParameterRole::count},
        {"stride", ParameterRole::stride},
        {"constant", ParameterRole::constant}};
    return kRoles;
}

const std::vector<std::pair<std::string, CheckKind>>& check_kind_names() {
    static const std::vector<std::pair<std::string, CheckKind>> kKinds = {
        {"answers_file", CheckKind::answers_file},
        {"compile_abi", CheckKind::compile_abi},
        {"output", CheckKind::output},
        {"predicted", CheckKind::predicted},
        {"ordering", CheckKind::ordering},
        {"consistency", CheckKind::consistency},
        {"measured", CheckKind::measured},
        {"counted_degree", CheckKind::counted_degree},
        {"sentence", CheckKind::sentence}};
    return kKinds;
}

template <typename Enum>
Enum parse_name(const ExerciseReader& reader, const YAML::Node& node, const std::string& field,
                const std::vector<std::pair<std::string, Enum>>& names, const std::string& what) {
    const std::string name = reader.text(node, field);
    std::vector<std::string> all;
    for (const auto& [candidate, value] : names) {
        if (name == candidate) {
            return value;
        }
        all.push_back(candidate);
    }
    reader.fail(
        node.Mark(), field,
        "unknown " + what + " " + quote(name) + "; the " + what + "s are: " + join_list(all, ", "));
}

void read_kernel(const ExerciseReader& reader, const YAML::Node& kernel, Exercise& exercise) {
    reader.expect_map(kernel, "kernel", {"name", "parameters", "degree"});
    exercise.kernel_name =
        reader.nonempty_text(reader.required(kernel, "kernel", "name"), "kernel.name");
    const YAML::Node parameters = reader.required(kernel, "kernel", "parameters");
    if (!parameters.IsSequence() || parameters.size() == 0) {
        reader.fail(parameters.Mark(), "kernel.parameters",
                    "expected a list of parameters, got " + describe(parameters));
    }
    std::map<ParameterRole, std::string> field_of_role;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        const std::string field = index_field("kernel.parameters", i);
        const YAML::Node entry = parameters[i];
        reader.expect_map(entry, field, {"name", "type", "size", "role", "value"});
        KernelParameter parameter;
        parameter.name =
            reader.nonempty_text(reader.required(entry, field, "name"), field + ".name");
        parameter.type =
            reader.nonempty_text(reader.required(entry, field, "type"), field + ".type");
        parameter.size_bytes = static_cast<std::size_t>(
            reader.positive_int(reader.required(entry, field, "size"), field + ".size"));
        if (parameter.size_bytes > 8) {
            reader.fail(find_value(entry, "size").Mark(), field + ".size",
                        "expected at most 8 bytes (a pointer or a scalar), got " +
                            std::to_string(parameter.size_bytes));
        }
        const YAML::Node role = reader.required(entry, field, "role");
        parameter.role = parse_name(reader, role, field + ".role", role_names(), "parameter role");
        const YAML::Node value = find_value(entry, "value");
        if (parameter.role == ParameterRole::constant) {
            parameter.value = reader.integer(reader.required(entry, field, "value"),
                                             field + ".value", std::numeric_limits<int>::min(),
                                             std::numeric_limits<int>::max(), "a whole number");
        } else if (value.IsDefined()) {
            reader.fail(value.Mark(), field + ".value",
                        "only a parameter with the role 'constant' takes a value");
        }
        // The harness passes one buffer of each kind, one count and one stride; two of a role
        // would be ambiguous. Constants are many.
        if (parameter.role != ParameterRole::constant) {
            const auto [previous, inserted] = field_of_role.emplace(parameter.role, field);
            if (!inserted) {
                reader.fail(role.Mark(), field + ".role",
                            "role " + quote(role.Scalar()) + " is already taken by " +
                                previous->second + "; each role appears once");
            }
        }
        exercise.parameters.push_back(parameter);
    }
    for (const auto role : {ParameterRole::input, ParameterRole::output}) {
        if (field_of_role.count(role) == 0) {
            const std::string name = role == ParameterRole::input ? "input" : "output";
            reader.fail(parameters.Mark(), "kernel.parameters",
                        "no parameter has the role '" + name +
                            "'; the harness passes an input and an output buffer");
        }
    }
    KernelSpec student;
    student.id = std::string(kStudentKernel);
    student.label = "your kernel";
    student.name = exercise.kernel_name;
    if (const YAML::Node degree = find_value(kernel, "degree"); degree.IsDefined()) {
        student.degree = static_cast<unsigned>(reader.positive_int(degree, "kernel.degree"));
    }
    exercise.kernels.push_back(student);
}

void read_references(const ExerciseReader& reader, const YAML::Node& list, Exercise& exercise) {
    if (!list.IsSequence() || list.size() == 0) {
        reader.fail(list.Mark(), "references",
                    "expected a list of the exercise's kernels, got " + describe(list));
    }
    int oracles = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string field = index_field("references", i);
        const YAML::Node node = list[i];
        reader.expect_map(node, field, {"id", "file", "name", "label", "oracle", "degree"});
        KernelSpec kernel;
        const YAML::Node id = reader.required(node, field, "id");
        kernel.id = reader.nonempty_text(id, field + ".id");
        for (const auto& earlier : exercise.kernels) {
            if (earlier.id == kernel.id) {
                reader.fail(
                    id.Mark(), field + ".id",
                    "kernel id " + quote(kernel.id) +
                        (kernel.is_student() ? " is the student's kernel" : " is used twice"));
            }
        }
        kernel.file = reader.existing_file(reader.required(node, field, "file"), field + ".file");
        kernel.name = exercise.kernel_name;
        if (const YAML::Node name = find_value(node, "name"); name.IsDefined()) {
            kernel.name = reader.nonempty_text(name, field + ".name");
        }
        kernel.label = kernel.id;
        if (const YAML::Node label = find_value(node, "label"); label.IsDefined()) {
            kernel.label = reader.nonempty_text(label, field + ".label");
        }
        if (const YAML::Node oracle = find_value(node, "oracle"); oracle.IsDefined()) {
            kernel.oracle = reader.boolean(oracle, field + ".oracle");
            oracles += kernel.oracle ? 1 : 0;
        }
        if (const YAML::Node degree = find_value(node, "degree"); degree.IsDefined()) {
            kernel.degree = static_cast<unsigned>(reader.positive_int(degree, field + ".degree"));
        }
        exercise.kernels.push_back(kernel);
    }
    if (oracles != 1) {
        reader.fail(list.Mark(), "references",
                    "expected exactly one kernel with 'oracle: true' (the one whose outputs the "
                    "student's must equal), got " +
                        std::to_string(oracles));
    }
}

void read_compile(const ExerciseReader& reader, const YAML::Node& compile, Exercise& exercise) {
    reader.expect_map(compile, "compile", {"options", "default_arch", "headers"});
    if (const YAML::Node options = find_value(compile, "options"); options.IsDefined()) {
        if (!options.IsSequence()) {
            reader.fail(options.Mark(), "compile.options",
                        "expected a list of NVRTC options, got " + describe(options));
        }
        for (std::size_t i = 0; i < options.size(); ++i) {
            exercise.compile_options.push_back(
                reader.nonempty_text(options[i], index_field("compile.options", i)));
        }
    }
    if (const YAML::Node arch = find_value(compile, "default_arch"); arch.IsDefined()) {
        const std::string value = reader.text(arch, "compile.default_arch");
        const bool well_formed = value.size() > 3 && value.compare(0, 3, "sm_") == 0 &&
                                 value.find_first_not_of("0123456789", 3) == std::string::npos;
        if (!well_formed) {
            reader.fail(arch.Mark(), "compile.default_arch",
                        "expected an architecture like 'sm_75', got " + describe(arch));
        }
        exercise.default_arch = value;
    }
    if (const YAML::Node headers = find_value(compile, "headers"); headers.IsDefined()) {
        if (!headers.IsSequence()) {
            reader.fail(headers.Mark(), "compile.headers",
                        "expected a list of { include, file }, got " + describe(headers));
        }
        for (std::size_t i = 0; i < headers.size(); ++i) {
            const std::string field = index_field("compile.headers", i);
            reader.expect_map(headers[i], field, {"include", "file"});
            ProvidedHeader header;
            header.include_name = reader.nonempty_text(
                reader.required(headers[i], field, "include"), field + ".include");
            header.path =
                reader.existing_file(reader.required(headers[i], field, "file"), field + ".file");
            exercise.headers.push_back(header);
        }
    }
}

// [x], [x, y] or [x, y, z], each at least 1.
Dim3Spec read_dims(const ExerciseReader& reader, const YAML::Node& node, const std::string& field) {
    if (!node.IsSequence() || node.size() == 0 || node.size() > 3) {
        reader.fail(node.Mark(), field,
                    "expected a list of one to three sizes, [x], [x, y] or [x, y, z], got " +
                        describe(node));
    }
    std::array<std::uint32_t, 3> sizes{1, 1, 1};
    for (std::size_t i = 0; i < node.size(); ++i) {
        sizes[i] = static_cast<std::uint32_t>(reader.positive_int(node[i], index_field(field, i)));
    }
    return Dim3Spec{sizes[0], sizes[1], sizes[2]};
}

void read_launch(const ExerciseReader& reader, const YAML::Node& launch, Exercise& exercise) {
    reader.expect_map(launch, "launch",
                      {"block", "grid", "simulated_grid_blocks", "simulated_blocks"});
    const YAML::Node block = reader.required(launch, "launch", "block");
    exercise.launch.block = read_dims(reader, block, "launch.block");
    const std::uint64_t threads = exercise.launch.block.count();
    if (threads % 32 != 0 || threads > 1024) {
        reader.fail(block.Mark(), "launch.block",
                    "expected a block of a multiple of 32 threads, at most 1024 (whole warps, at "
                    "most a block's limit), got " +
                        std::to_string(threads) + " threads");
    }
    const YAML::Node grid = reader.required(launch, "launch", "grid");
    if (grid.IsScalar()) {
        if (grid.Scalar() != "occupancy") {
            reader.fail(
                grid.Mark(), "launch.grid",
                "expected 'occupancy' (fill every SM) or a list of sizes, got " + describe(grid));
        }
        exercise.launch.grid_from_occupancy = true;
    } else {
        exercise.launch.grid_from_occupancy = false;
        exercise.launch.grid = read_dims(reader, grid, "launch.grid");
    }
    if (const YAML::Node node = find_value(launch, "simulated_grid_blocks"); node.IsDefined()) {
        exercise.launch.simulated_grid_blocks =
            static_cast<std::uint32_t>(reader.positive_int(node, "launch.simulated_grid_blocks"));
    }
    if (const YAML::Node node = find_value(launch, "simulated_blocks"); node.IsDefined()) {
        exercise.launch.simulated_blocks =
            static_cast<std::uint32_t>(reader.positive_int(node, "launch.simulated_blocks"));
    }
}

void read_buffers(const ExerciseReader& reader, const YAML::Node& buffers, Exercise& exercise) {
    reader.expect_map(buffers, "buffers", {"input_words", "output", "bytes_per_launch"});
    exercise.buffers.input_words = static_cast<std::uint64_t>(
        reader.integer(reader.required(buffers, "buffers", "input_words"), "buffers.input_words", 1,
                       std::int64_t{1} << 30, "a positive number of words, at most 2^30"));
    const YAML::Node output = reader.required(buffers, "buffers", "output");
    if (output.IsScalar()) {
        if (output.Scalar() != "per_thread") {
            reader.fail(output.Mark(), "buffers.output",
                        "expected 'per_thread' or { rows, columns }, got " + describe(output));
        }
        exercise.buffers.output.kind = OutputLayout::Kind::per_thread;
    } else {
        reader.expect_map(output, "buffers.output", {"rows", "columns"});
        exercise.buffers.output.kind = OutputLayout::Kind::matrix;
        exercise.buffers.output.rows = static_cast<std::uint64_t>(reader.positive_int(
            reader.required(output, "buffers.output", "rows"), "buffers.output.rows"));
        exercise.buffers.output.columns = static_cast<std::uint64_t>(reader.positive_int(
            reader.required(output, "buffers.output", "columns"), "buffers.output.columns"));
        if (exercise.buffers.output.rows * exercise.buffers.output.columns >
            (std::uint64_t{1} << 30)) {
            reader.fail(output.Mark(), "buffers.output", "more than 2^30 output words");
        }
    }
    if (const YAML::Node node = find_value(buffers, "bytes_per_launch"); node.IsDefined()) {
        exercise.buffers.bytes_per_launch = static_cast<std::uint64_t>(
            reader.integer(node, "buffers.bytes_per_launch", 1, std::int64_t{1} << 40,
                           "a positive number of bytes"));
    }
}

void read_inputs(const ExerciseReader& reader, const YAML::Node& list, Exercise& exercise) {
    if (!list.IsSequence() || list.size() == 0) {
        reader.fail(list.Mark(), "inputs", "expected a list of inputs, got " + describe(list));
    }
    static const std::vector<std::pair<std::string, InputSpec::Fill>> kFills = {
        {"constant", InputSpec::Fill::constant},
        {"random_integers", InputSpec::Fill::random_integers},
        {"random_floats", InputSpec::Fill::random_floats}};
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string field = index_field("inputs", i);
        const YAML::Node node = list[i];
        reader.expect_map(node, field,
                          {"id", "fill", "value", "poison_shared", "simulated_blocks"});
        InputSpec input;
        input.location = reader.location(node);
        const YAML::Node id = reader.required(node, field, "id");
        input.id = reader.nonempty_text(id, field + ".id");
        for (const auto& earlier : exercise.inputs) {
            if (earlier.id == input.id) {
                reader.fail(id.Mark(), field + ".id",
                            "input id " + quote(input.id) + " is used twice");
            }
        }
        input.fill = parse_name(reader, reader.required(node, field, "fill"), field + ".fill",
                                kFills, "fill");
        if (const YAML::Node value = find_value(node, "value"); value.IsDefined()) {
            input.value = reader.number(value, field + ".value", true);
        } else if (input.fill != InputSpec::Fill::random_floats) {
            reader.required(node, field, "value");
        }
        if (input.fill == InputSpec::Fill::random_integers &&
            (input.value != std::floor(input.value) || input.value > 16777216.0)) {
            reader.fail(find_value(node, "value").Mark(), field + ".value",
                        "expected the largest integer to draw, a whole number up to 2^24 (floats "
                        "hold them exactly)");
        }
        if (const YAML::Node value = find_value(node, "poison_shared"); value.IsDefined()) {
            input.poison_shared = reader.boolean(value, field + ".poison_shared");
        }
        if (const YAML::Node value = find_value(node, "simulated_blocks"); value.IsDefined()) {
            input.simulated_blocks =
                static_cast<std::uint32_t>(reader.positive_int(value, field + ".simulated_blocks"));
        }
        exercise.inputs.push_back(input);
    }
}

void read_strides(const ExerciseReader& reader, const YAML::Node& strides, Exercise& exercise) {
    reader.expect_map(strides, "strides",
                      {"reference", "student", "unnamed_pool", "unnamed_per_grade"});
    const YAML::Node reference = reader.required(strides, "strides", "reference");
    exercise.reference_strides = reader.strides(reference, "strides.reference", false);
    exercise.student_strides =
        reader.strides(reader.required(strides, "strides", "student"), "strides.student", false);
    if (const YAML::Node pool = find_value(strides, "unnamed_pool"); pool.IsDefined()) {
        exercise.unnamed_stride_pool = reader.strides(pool, "strides.unnamed_pool", true);
    }
    exercise.unnamed_strides_per_grade =
        static_cast<int>(std::min<std::size_t>(2, exercise.unnamed_stride_pool.size()));
    if (const YAML::Node count = find_value(strides, "unnamed_per_grade"); count.IsDefined()) {
        exercise.unnamed_strides_per_grade =
            reader.non_negative_int(count, "strides.unnamed_per_grade");
        if (static_cast<std::size_t>(exercise.unnamed_strides_per_grade) >
            exercise.unnamed_stride_pool.size()) {
            reader.fail(count.Mark(), "strides.unnamed_per_grade",
                        "asks for " + std::to_string(exercise.unnamed_strides_per_grade) +
                            " strides per grade but strides.unnamed_pool has " +
                            std::to_string(exercise.unnamed_stride_pool.size()));
        }
    }
}

void read_ratios(const ExerciseReader& reader, const YAML::Node& ratios, Exercise& exercise) {
    reader.expect_map(ratios, "ratios", {"to_stride", "to_kernel", "as_percent"});
    const YAML::Node stride = find_value(ratios, "to_stride");
    const YAML::Node kernel = find_value(ratios, "to_kernel");
    if (exercise.has_sweep()) {
        if (!stride.IsDefined() || kernel.IsDefined()) {
            reader.fail(ratios.Mark(), "ratios",
                        "an exercise with strides takes ratios to a stride: { to_stride: 1 }");
        }
        exercise.ratios.to_stride = reader.positive_int(stride, "ratios.to_stride");
        if (std::find(exercise.reference_strides.begin(), exercise.reference_strides.end(),
                      exercise.ratios.to_stride) == exercise.reference_strides.end()) {
            reader.fail(stride.Mark(), "ratios.to_stride",
                        "stride " + std::to_string(exercise.ratios.to_stride) +
                            " must be in strides.reference: it is the baseline every ratio is "
                            "taken against");
        }
    } else {
        if (!kernel.IsDefined() || stride.IsDefined()) {
            reader.fail(
                ratios.Mark(), "ratios",
                "an exercise without strides takes ratios to a kernel: { to_kernel: copy }");
        }
        exercise.ratios.to_stride = 0;
        exercise.ratios.to_kernel = reader.nonempty_text(kernel, "ratios.to_kernel");
        const bool known =
            std::any_of(exercise.kernels.begin(), exercise.kernels.end(), [&](const KernelSpec& k) {
                return !k.is_student() && k.id == exercise.ratios.to_kernel;
            });
        if (!known) {
            reader.fail(kernel.Mark(), "ratios.to_kernel",
                        "no reference kernel has the id " + quote(exercise.ratios.to_kernel));
        }
    }
    if (const YAML::Node percent = find_value(ratios, "as_percent"); percent.IsDefined()) {
        exercise.ratios.as_percent = reader.boolean(percent, "ratios.as_percent");
    }
}

// The cases the grade times: what rules may name.
class TimedCases {
public:
    explicit TimedCases(const Exercise& exercise) : exercise_(exercise) {}

    bool has_kernel(const std::string& id) const {
        return std::any_of(exercise_.kernels.begin(), exercise_.kernels.end(),
                           [&](const KernelSpec& k) { return k.id == id; });
    }

    // Why a case is not timed, or empty when it is.
    std::string why_not_timed(const Case& c) const {
        if (!has_kernel(c.kernel)) {
            return "there is no kernel " + quote(c.kernel) + " (the kernels are " + kernel_ids() +
                   ")";
        }
        if (!exercise_.has_sweep()) {
            return {};
        }
        const std::vector<int>& strides =
            c.kernel == kStudentKernel ? student_timed() : exercise_.reference_strides;
        if (std::find(strides.begin(), strides.end(), c.stride) == strides.end()) {
            return "stride " + std::to_string(c.stride) + " is not in " +
                   (c.kernel == kStudentKernel ? "strides.reference or strides.student"
                                               : "strides.reference") +
                   ", so it is never timed";
        }
        return {};
    }

private:
    std::vector<int> student_timed() const {
        std::vector<int> strides = exercise_.reference_strides;
        strides.insert(strides.end(), exercise_.student_strides.begin(),
                       exercise_.student_strides.end());
        return strides;
    }

    std::string kernel_ids() const {
        std::vector<std::string> ids;
        for (const auto& k : exercise_.kernels) {
            ids.push_back(k.id);
        }
        return join_list(ids, ", ");
    }

    const Exercise& exercise_;
};

// A rule's operand: a number names a stride of the rule's kernel, a word another kernel (at the
// rule's stride).
Case read_operand(const ExerciseReader& reader, const YAML::Node& node, const std::string& field,
                  const Case& subject, bool sweep) {
    if (!node.IsScalar()) {
        reader.fail(node.Mark(), field, "expected a stride or a kernel id, got " + describe(node));
    }
    if (const auto stride = parse_integer(node.Scalar())) {
        if (!sweep || *stride <= 0 || *stride > std::numeric_limits<int>::max()) {
            reader.fail(node.Mark(), field,
                        sweep ? "expected a positive stride, got " + describe(node)
                              : "this exercise has no strides; name a kernel here");
        }
        return Case{subject.kernel, static_cast<int>(*stride)};
    }
    return Case{reader.nonempty_text(node, field), subject.stride};
}

// A list of ordering rules whose operands must be timed. `kernel` is the kernel a rule is about
// where it names none.
std::vector<OrderingRule> read_rules(const ExerciseReader& reader, const YAML::Node& list,
                                     const std::string& field, const Exercise& exercise,
                                     const std::string& kernel, bool empty_allowed) {
    if (!list.IsSequence()) {
        reader.fail(list.Mark(), field, "expected a list of rules, got " + describe(list));
    }
    if (list.size() == 0 && !empty_allowed) {
        reader.fail(list.Mark(), field, "expected at least one rule, got an empty list");
    }
    const TimedCases timed(exercise);
    const bool sweep = exercise.has_sweep();
    std::vector<OrderingRule> rules;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string rule_field = index_field(field, i);
        const YAML::Node node = list[i];
        // Typos first, against every key a rule can have; then the keys this kind takes.
        reader.expect_map(node, rule_field,
                          {"id", "kind", "kernel", "stride", "description", "near", "far", "than",
                           "factor", "limit"});
        OrderingRule rule;
        rule.location = reader.location(node);
        const YAML::Node kind = reader.required(node, rule_field, "kind");
        const std::string kind_name = reader.text(kind, rule_field + ".kind");
        std::vector<std::string> known = {"id", "kind", "kernel", "stride", "description"};
        std::vector<std::string> operand_keys;
        if (kind_name == "closer_to") {
            rule.kind = OrderingRule::Kind::closer_to;
            operand_keys = {"near", "far"};
        } else if (kind_name == "slower_than") {
            rule.kind = OrderingRule::Kind::slower_than;
            operand_keys = {"than"};
            known.push_back("factor");
        } else if (kind_name == "at_most") {
            rule.kind = OrderingRule::Kind::at_most;
            known.push_back("limit");
        } else {
            reader.fail(kind.Mark(), rule_field + ".kind",
                        "unknown rule kind " + quote(kind_name) +
                            "; the kinds are: closer_to, slower_than, at_most");
        }
        known.insert(known.end(), operand_keys.begin(), operand_keys.end());
        for (const auto& entry : node) {
            const std::string& key = entry.first.Scalar();
            if (std::find(known.begin(), known.end(), key) == known.end()) {
                reader.fail(entry.first.Mark(), rule_field + "." + key,
                            quote(key) + " does not apply to a " + kind_name +
                                " rule; it takes: " + join_list(known, ", "));
            }
        }
        rule.id = reader.nonempty_text(reader.required(node, rule_field, "id"), rule_field + ".id");
        for (const auto& earlier : rules) {
            if (earlier.id == rule.id) {
                reader.fail(find_value(node, "id").Mark(), rule_field + ".id",
                            "rule id " + quote(rule.id) + " is used twice in " + field);
            }
        }
        rule.description = reader.nonempty_text(reader.required(node, rule_field, "description"),
                                                rule_field + ".description");
        rule.subject.kernel = kernel;
        if (const YAML::Node value = find_value(node, "kernel"); value.IsDefined()) {
            rule.subject.kernel = reader.nonempty_text(value, rule_field + ".kernel");
        }
        const YAML::Node stride = find_value(node, "stride");
        if (sweep) {
            rule.subject.stride = reader.positive_int(reader.required(node, rule_field, "stride"),
                                                      rule_field + ".stride");
        } else if (stride.IsDefined()) {
            reader.fail(stride.Mark(), rule_field + ".stride",
                        "this exercise has no strides; a rule names kernels");
        }
        const auto check_timed = [&](const Case& c, const YAML::Node& where,
                                     const std::string& key) {
            const std::string why = timed.why_not_timed(c);
            if (!why.empty()) {
                reader.fail(where.Mark(), rule_field + "." + key, why);
            }
        };
        check_timed(rule.subject, sweep ? find_value(node, "stride") : node,
                    sweep ? "stride" : "kernel");
        for (const auto& key : operand_keys) {
            const YAML::Node value = reader.required(node, rule_field, key);
            const Case operand =
                read_operand(reader, value, rule_field + "." + key, rule.subject, sweep);
            check_timed(operand, value, key);
            if (key == "near") {
                rule.near = operand;
            } else if (key == "far") {
                rule.far = operand;
            } else {
                rule.than = operand;
            }
        }
        if (const YAML::Node factor = find_value(node, "factor"); factor.IsDefined()) {
            rule.factor = reader.number(factor, rule_field + ".factor", false);
        }
        if (rule.kind == OrderingRule::Kind::at_most) {
            rule.limit = reader.number(reader.required(node, rule_field, "limit"),
                                       rule_field + ".limit", false);
        }
        rules.push_back(rule);
    }
    return rules;
}

void read_calibration(const ExerciseReader& reader, const YAML::Node& calibration,
                      Exercise& exercise) {
    reader.expect_map(calibration, "calibration", {"decides", "rules"});
    if (const YAML::Node decides = find_value(calibration, "decides"); decides.IsDefined()) {
        exercise.calibration_decides = reader.boolean(decides, "calibration.decides");
    }
    const KernelSpec* oracle = exercise.oracle();
    exercise.calibration = read_rules(reader, reader.required(calibration, "calibration", "rules"),
                                      "calibration.rules", exercise, oracle->id, true);
    for (std::size_t i = 0; i < exercise.calibration.size(); ++i) {
        const OrderingRule& rule = exercise.calibration[i];
        for (const Case* c : {&rule.subject, &rule.near, &rule.far, &rule.than}) {
            if (c->kernel == kStudentKernel) {
                reader.fail(calibration.Mark(), index_field("calibration.rules", i),
                            "a calibration rule is about the exercise's own kernels, not the "
                            "student's");
            }
        }
    }
}

void read_timing(const ExerciseReader& reader, const YAML::Node& timing, TimingSpec& spec) {
    reader.expect_map(timing, "timing",
                      {"warmup_launches", "warmup_ms", "min_sample_ms", "min_samples",
                       "max_samples", "target_spread", "max_seconds"});
    if (const YAML::Node node = find_value(timing, "warmup_launches"); node.IsDefined()) {
        spec.warmup_launches = reader.non_negative_int(node, "timing.warmup_launches");
    }
    if (const YAML::Node node = find_value(timing, "warmup_ms"); node.IsDefined()) {
        spec.warmup_ms = reader.number(node, "timing.warmup_ms", true);
    }
    if (const YAML::Node node = find_value(timing, "min_sample_ms"); node.IsDefined()) {
        spec.min_sample_ms = reader.number(node, "timing.min_sample_ms", false);
    }
    if (const YAML::Node node = find_value(timing, "min_samples"); node.IsDefined()) {
        spec.min_samples = reader.positive_int(node, "timing.min_samples");
    }
    if (const YAML::Node node = find_value(timing, "max_samples"); node.IsDefined()) {
        spec.max_samples = reader.positive_int(node, "timing.max_samples");
        if (spec.max_samples < spec.min_samples) {
            reader.fail(node.Mark(), "timing.max_samples",
                        "expected at least timing.min_samples (" +
                            std::to_string(spec.min_samples) + "), got " + describe(node));
        }
    }
    if (const YAML::Node node = find_value(timing, "target_spread"); node.IsDefined()) {
        spec.target_spread = reader.number(node, "timing.target_spread", false);
    }
    if (const YAML::Node node = find_value(timing, "max_seconds"); node.IsDefined()) {
        spec.max_seconds = reader.number(node, "timing.max_seconds", false);
    }
}

void read_limits(const ExerciseReader& reader, const YAML::Node& limits, LimitsSpec& spec) {
    reader.expect_map(limits, "limits",
                      {"compile_seconds", "run_seconds", "output_bytes", "memory_mb", "source_kb"});
    if (const YAML::Node node = find_value(limits, "compile_seconds"); node.IsDefined()) {
        spec.compile_seconds = reader.number(node, "limits.compile_seconds", false);
    }
    if (const YAML::Node node = find_value(limits, "run_seconds"); node.IsDefined()) {
        spec.run_seconds = reader.number(node, "limits.run_seconds", false);
    }
    if (const YAML::Node node = find_value(limits, "output_bytes"); node.IsDefined()) {
        spec.output_bytes =
            static_cast<std::size_t>(reader.positive_int(node, "limits.output_bytes"));
    }
    if (const YAML::Node node = find_value(limits, "memory_mb"); node.IsDefined()) {
        spec.memory_bytes = static_cast<std::size_t>(reader.positive_int(node, "limits.memory_mb"))
                            << 20;
    }
    if (const YAML::Node node = find_value(limits, "source_kb"); node.IsDefined()) {
        spec.source_bytes = static_cast<std::size_t>(reader.positive_int(node, "limits.source_kb"))
                            << 10;
    }
}

void read_answers(const ExerciseReader& reader, const YAML::Node& answers, Exercise& exercise) {
    reader.expect_map(answers, "answers",
                      {"key", "rows", "predicted", "measured", "measured_description"});
    const YAML::Node key = reader.required(answers, "answers", "key");
    exercise.answers.key_field = reader.nonempty_text(key, "answers.key");
    const YAML::Node rows = find_value(answers, "rows");
    if (exercise.answers.key_field == "stride") {
        if (!exercise.has_sweep()) {
            reader.fail(key.Mark(), "answers.key",
                        "this exercise has no strides; key the rows by a name and list them "
                        "under answers.rows");
        }
        if (rows.IsDefined()) {
            reader.fail(rows.Mark(), "answers.rows",
                        "rows keyed by stride are the strides of strides.student");
        }
    } else {
        if (!rows.IsDefined() || !rows.IsSequence() || rows.size() == 0) {
            reader.fail(rows.IsDefined() ? rows.Mark() : answers.Mark(), "answers.rows",
                        "expected a list of { key, kernel }: one answer row per kernel");
        }
        const TimedCases timed(exercise);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const std::string field = index_field("answers.rows", i);
            reader.expect_map(rows[i], field, {"key", "kernel"});
            AnswerRowSpec row;
            row.key = reader.nonempty_text(reader.required(rows[i], field, "key"), field + ".key");
            const YAML::Node kernel = reader.required(rows[i], field, "kernel");
            row.kernel = reader.nonempty_text(kernel, field + ".kernel");
            if (!timed.has_kernel(row.kernel)) {
                reader.fail(kernel.Mark(), field + ".kernel",
                            "there is no kernel " + quote(row.kernel));
            }
            exercise.answers.rows.push_back(row);
        }
    }
    exercise.answers.predicted_field =
        reader.nonempty_text(reader.required(answers, "answers", "predicted"), "answers.predicted");
    exercise.answers.measured_field =
        reader.nonempty_text(reader.required(answers, "answers", "measured"), "answers.measured");
    if (const YAML::Node node = find_value(answers, "measured_description"); node.IsDefined()) {
        exercise.answers.measured_description =
            reader.nonempty_text(node, "answers.measured_description");
    }
}

std::vector<Diagnosis> read_diagnoses(const ExerciseReader& reader, const YAML::Node& list,
                                      const std::string& field) {
    if (!list.IsSequence()) {
        reader.fail(list.Mark(), field,
                    "expected a list of { when, message }, got " + describe(list));
    }
    std::vector<Diagnosis> diagnoses;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string item = index_field(field, i);
        reader.expect_map(list[i], item, {"when", "message"});
        Diagnosis diagnosis;
        const YAML::Node when = reader.required(list[i], item, "when");
        reader.expect_map(when, item + ".when",
                          {"counted_degree_at_least", "static_shared_bytes_above"});
        if (const YAML::Node node = find_value(when, "counted_degree_at_least"); node.IsDefined()) {
            diagnosis.counted_degree_at_least =
                reader.number(node, item + ".when.counted_degree_at_least", false);
        }
        if (const YAML::Node node = find_value(when, "static_shared_bytes_above");
            node.IsDefined()) {
            diagnosis.static_shared_bytes_above =
                reader.non_negative_int(node, item + ".when.static_shared_bytes_above");
        }
        if (!diagnosis.counted_degree_at_least && !diagnosis.static_shared_bytes_above) {
            reader.fail(when.Mark(), item + ".when", "expected at least one condition");
        }
        diagnosis.message =
            reader.nonempty_text(reader.required(list[i], item, "message"), item + ".message");
        diagnoses.push_back(diagnosis);
    }
    return diagnoses;
}

// The keys each kind of check takes beyond the common ones.
std::vector<std::string> check_parameter_keys(CheckKind kind) {
    switch (kind) {
        case CheckKind::output:
            return {"input"};
        case CheckKind::ordering:
            return {"kernel", "rules"};
        case CheckKind::consistency:
            return {"kernel", "against", "tolerance"};
        case CheckKind::measured:
            return {"band", "rules"};
        case CheckKind::counted_degree:
            return {"kernel", "rules", "diagnoses", "tolerance"};
        case CheckKind::answers_file:
        case CheckKind::compile_abi:
        case CheckKind::predicted:
        case CheckKind::sentence:
            break;
    }
    return {};
}

void read_check_parameters(const ExerciseReader& reader, const YAML::Node& node,
                           const std::string& field, const Exercise& exercise, CheckSpec& spec) {
    const TimedCases timed(exercise);
    if (const YAML::Node kernel = find_value(node, "kernel"); kernel.IsDefined()) {
        spec.kernel = reader.nonempty_text(kernel, field + ".kernel");
        if (!timed.has_kernel(spec.kernel)) {
            reader.fail(kernel.Mark(), field + ".kernel",
                        "there is no kernel " + quote(spec.kernel));
        }
    }
    switch (spec.kind) {
        case CheckKind::output: {
            const YAML::Node input = reader.required(node, field, "input");
            spec.input = reader.nonempty_text(input, field + ".input");
            const bool known =
                std::any_of(exercise.inputs.begin(), exercise.inputs.end(),
                            [&](const InputSpec& candidate) { return candidate.id == spec.input; });
            if (!known) {
                reader.fail(input.Mark(), field + ".input",
                            "there is no input " + quote(spec.input) + " under inputs");
            }
            break;
        }
        case CheckKind::ordering:
            spec.rules = read_rules(reader, reader.required(node, field, "rules"), field + ".rules",
                                    exercise, spec.kernel, false);
            break;
        case CheckKind::consistency: {
            const YAML::Node against = reader.required(node, field, "against");
            spec.against = reader.nonempty_text(against, field + ".against");
            if (!timed.has_kernel(spec.against) || spec.against == spec.kernel) {
                reader.fail(against.Mark(), field + ".against",
                            "expected the id of another kernel, got " + quote(spec.against));
            }
            spec.tolerance = reader.number(reader.required(node, field, "tolerance"),
                                           field + ".tolerance", false);
            break;
        }
        case CheckKind::measured: {
            const YAML::Node band = find_value(node, "band");
            if (!band.IsDefined()) {
                if (!exercise.has_sweep() && !find_value(node, "rules").IsDefined()) {
                    reader.fail(node.Mark(), field, "expected a band, rules or both");
                }
                if (const YAML::Node rules = find_value(node, "rules"); rules.IsDefined()) {
                    spec.rules = read_rules(reader, rules, field + ".rules", exercise,
                                            std::string(kStudentKernel), true);
                }
                break;
            }
            reader.expect_map(band, field + ".band", {"low", "high", "slack"});
            spec.band_low = reader.number(reader.required(band, field + ".band", "low"),
                                          field + ".band.low", true);
            spec.band_high = reader.number(reader.required(band, field + ".band", "high"),
                                           field + ".band.high", false);
            if (const YAML::Node slack = find_value(band, "slack"); slack.IsDefined()) {
                spec.band_slack = reader.number(slack, field + ".band.slack", true);
            }
            if (spec.band_high < spec.band_low) {
                reader.fail(band.Mark(), field + ".band", "high is below low");
            }
            if (const YAML::Node rules = find_value(node, "rules"); rules.IsDefined()) {
                spec.rules = read_rules(reader, rules, field + ".rules", exercise,
                                        std::string(kStudentKernel), true);
            }
            break;
        }
        case CheckKind::counted_degree:
            if (const YAML::Node tolerance = find_value(node, "tolerance"); tolerance.IsDefined()) {
                spec.tolerance = reader.number(tolerance, field + ".tolerance", true);
            }
            if (const YAML::Node rules = find_value(node, "rules"); rules.IsDefined()) {
                spec.rules =
                    read_rules(reader, rules, field + ".rules", exercise, spec.kernel, true);
            }
            if (const YAML::Node diagnoses = find_value(node, "diagnoses"); diagnoses.IsDefined()) {
                spec.diagnoses = read_diagnoses(reader, diagnoses, field + ".diagnoses");
            }
            break;
        case CheckKind::answers_file:
        case CheckKind::compile_abi:
        case CheckKind::predicted:
        case CheckKind::sentence:
            break;
    }
}

void read_checks(const ExerciseReader& reader, const YAML::Node& checks, Exercise& exercise) {
    if (!checks.IsMap() || checks.size() == 0) {
        reader.fail(checks.Mark(), "checks", "expected a map of checks, got " + describe(checks));
    }
    for (const auto& complaint : key_complaints(checks, "checks", {})) {
        if (complaint.message.rfind("unknown key", 0) != 0) {
            reader.fail(complaint.mark, complaint.field, complaint.message);
        }
    }
    for (const auto& entry : checks) {
        const std::string id = entry.first.Scalar();
        const std::string field = "checks." + id;
        const YAML::Node node = entry.second;
        if (!node.IsMap()) {
            reader.fail(node.Mark(), field, "expected a map, got " + describe(node));
        }
        CheckSpec spec;
        spec.id = id;
        spec.location = reader.location(node);
        spec.kind = parse_name(reader, reader.required(node, field, "kind"), field + ".kind",
                               check_kind_names(), "check kind");
        std::vector<std::string> known = {"kind",   "title", "points", "required",
                                          "review", "pass",  "fail",   "hint"};
        const auto parameters = check_parameter_keys(spec.kind);
        known.insert(known.end(), parameters.begin(), parameters.end());
        reader.expect_map(node, field, known);
        spec.title = reader.nonempty_text(reader.required(node, field, "title"), field + ".title");
        spec.points =
            reader.number(reader.required(node, field, "points"), field + ".points", true);
        if (const YAML::Node value = find_value(node, "required"); value.IsDefined()) {
            spec.required = reader.boolean(value, field + ".required");
        }
        if (const YAML::Node value = find_value(node, "review"); value.IsDefined()) {
            spec.review = reader.boolean(value, field + ".review");
        }
        spec.pass_message =
            reader.nonempty_text(reader.required(node, field, "pass"), field + ".pass");
        spec.fail_message =
            reader.nonempty_text(reader.required(node, field, "fail"), field + ".fail");
        if (const YAML::Node value = find_value(node, "hint"); value.IsDefined()) {
            spec.hint = reader.text(value, field + ".hint");
        }
        read_check_parameters(reader, node, field, exercise, spec);
        exercise.checks.push_back(spec);
    }
    // The answers file and the compile are read on every grade; their checks must exist.
    for (const CheckKind kind : {CheckKind::answers_file, CheckKind::compile_abi}) {
        const auto count = std::count_if(exercise.checks.begin(), exercise.checks.end(),
                                         [kind](const CheckSpec& c) { return c.kind == kind; });
        if (count != 1) {
            reader.fail(checks.Mark(), "checks",
                        "expected exactly one check of kind '" + std::string(to_string(kind)) +
                            "', got " + std::to_string(count));
        }
    }
}

std::string exercise_error_text(const SourceLocation& location, const std::string& field,
                                const std::string& message) {
    std::string text = to_string(location);
    if (!field.empty()) {
        text += (text.empty() ? "" : ": ") + field;
    }
    return text + (text.empty() ? "" : ": ") + message;
}

}  // namespace

// -------------------------------------------------------------------------------------------------

std::string to_string(const SourceLocation& location) {
    std::string text = location.file;
    if (location.line > 0) {
        text += ":" + std::to_string(location.line);
        if (location.column > 0) {
            text += ":" + std::to_string(location.column);
        }
    }
    return text;
}

ExerciseError::ExerciseError(SourceLocation location, std::string field, const std::string& message)
    : std::runtime_error(exercise_error_text(location, field, message)),
      location_(std::move(location)),
      field_(std::move(field)) {}

bool operator==(const Case& a, const Case& b) {
    return a.kernel == b.kernel && a.stride == b.stride;
}

bool operator<(const Case& a, const Case& b) {
    return std::tie(a.kernel, a.stride) < std::tie(b.kernel, b.stride);
}

std::string_view to_string(CheckKind kind) {
    for (const auto& [name, value] : check_kind_names()) {
        if (value == kind) {
            return name;
        }
    }
    return "unknown";
}

const CheckSpec& Exercise::check(const std::string& check_id) const {
    for (const auto& spec : checks) {
        if (spec.id == check_id) {
            return spec;
        }
    }
    throw std::out_of_range("exercise '" + id + "' (" + file.string() + ") has no check '" +
                            check_id + "'");
}

const KernelSpec& Exercise::kernel(const std::string& kernel_id) const {
    for (const auto& spec : kernels) {
        if (spec.id == kernel_id) {
            return spec;
        }
    }
    throw std::out_of_range("exercise '" + id + "' has no kernel '" + kernel_id + "'");
}

const KernelSpec* Exercise::oracle() const {
    for (const auto& spec : kernels) {
        if (spec.oracle) {
            return &spec;
        }
    }
    return nullptr;
}

std::optional<unsigned> Exercise::model_degree(const Case& c) const {
    if (c.stride > 0) {
        return conflict_degree(c.stride, banks);
    }
    for (const auto& spec : kernels) {
        if (spec.id == c.kernel) {
            return spec.degree;
        }
    }
    return std::nullopt;
}

void read_platforms(const ExerciseReader& reader, const YAML::Node& node,
                    PrairieLearnPolicy& prairielearn) {
    reader.expect_map(node, "platforms", {"prairielearn"});
    if (const YAML::Node pl = find_value(node, "prairielearn"); pl.IsDefined()) {
        reader.expect_map(pl, "platforms.prairielearn",
                          {"compile_error_gradable", "missing_file_gradable"});
        if (const YAML::Node value = find_value(pl, "compile_error_gradable"); value.IsDefined()) {
            prairielearn.compile_error_gradable =
                reader.boolean(value, "platforms.prairielearn.compile_error_gradable");
        }
        if (const YAML::Node value = find_value(pl, "missing_file_gradable"); value.IsDefined()) {
            prairielearn.missing_file_gradable =
                reader.boolean(value, "platforms.prairielearn.missing_file_gradable");
        }
    }
}

// The starter kit's example is read as a submission is; its sentence is what a student must not
// hand in unchanged, so an example without one is the instructor's mistake.
void read_starter_example(const ExerciseReader& reader, const YAML::Node& node,
                          Exercise& exercise) {
    const std::string name = reader.nonempty_text(node, "starter_example");
    const fs::path folder = fs::absolute(exercise.directory / name).lexically_normal();
    std::error_code error;
    if (!fs::is_regular_file(folder / exercise.submission_answers, error)) {
        reader.fail(node.Mark(), "starter_example",
                    "no " + exercise.submission_answers + " in " + quote(name) + " (looked for " +
                        (folder / exercise.submission_answers).string() + ")");
    }
    const Submission example = load_submission(folder, exercise);
    if (trim(example.sentence).empty()) {
        reader.fail(node.Mark(), "starter_example",
                    "the example in " + quote(name) + " has no sentence to compare with");
    }
    exercise.example_sentence = example.sentence;
    exercise.example_student_id = example.student_id;
}

Exercise load_exercise(const fs::path& directory) {
    const fs::path file = directory / "exercise.yaml";
    const std::string shown_path = file.string();
    const ParsedFile parsed = parse_yaml_file(file, shown_path, kMaxExerciseBytes, "exercise file");
    if (!parsed.root) {
        throw ExerciseError(*parsed.failure_location, "", parsed.failure);
    }
    const YAML::Node& root = *parsed.root;

    Exercise exercise;
    exercise.directory = fs::absolute(directory).lexically_normal();
    exercise.file = fs::absolute(file).lexically_normal();
    const ExerciseReader reader(shown_path, exercise.directory);
    reader.expect_map(root, "", {"schema_version", "id",
                                 "title",          "banks",
                                 "submission",     "kernel",
                                 "references",     "shared_poison",
                                 "compile",        "launch",
                                 "buffers",        "inputs",
                                 "strides",        "ratios",
                                 "calibration",    "simulator",
                                 "timing",         "limits",
                                 "answers",        "sentence_prompt",
                                 "checks",         "starter_example",
                                 "platforms",      "scoring"});

    const YAML::Node version = reader.required(root, "", "schema_version");
    exercise.schema_version = reader.positive_int(version, "schema_version");
    if (exercise.schema_version != 2) {
        reader.fail(version.Mark(), "schema_version",
                    "this grader reads schema_version 2, got " + describe(version));
    }
    exercise.id = reader.nonempty_text(reader.required(root, "", "id"), "id");
    exercise.title = reader.nonempty_text(reader.required(root, "", "title"), "title");
    if (const YAML::Node banks = find_value(root, "banks"); banks.IsDefined()) {
        exercise.banks = static_cast<unsigned>(reader.positive_int(banks, "banks"));
    }
    if (const YAML::Node submission = find_value(root, "submission"); submission.IsDefined()) {
        reader.expect_map(submission, "submission", {"source", "answers"});
        if (const YAML::Node node = find_value(submission, "source"); node.IsDefined()) {
            exercise.submission_source = reader.nonempty_text(node, "submission.source");
        }
        if (const YAML::Node node = find_value(submission, "answers"); node.IsDefined()) {
            exercise.submission_answers = reader.nonempty_text(node, "submission.answers");
        }
    }
    read_kernel(reader, reader.required(root, "", "kernel"), exercise);
    read_references(reader, reader.required(root, "", "references"), exercise);
    if (const YAML::Node poison = find_value(root, "shared_poison"); poison.IsDefined()) {
        exercise.shared_poison_source = reader.existing_file(poison, "shared_poison");
    }
    if (const YAML::Node compile = find_value(root, "compile"); compile.IsDefined()) {
        read_compile(reader, compile, exercise);
    }
    read_launch(reader, reader.required(root, "", "launch"), exercise);
    read_buffers(reader, reader.required(root, "", "buffers"), exercise);
    read_inputs(reader, reader.required(root, "", "inputs"), exercise);

    const bool stride_parameter =
        std::any_of(exercise.parameters.begin(), exercise.parameters.end(),
                    [](const KernelParameter& p) { return p.role == ParameterRole::stride; });
    if (const YAML::Node strides = find_value(root, "strides"); strides.IsDefined()) {
        read_strides(reader, strides, exercise);
        if (!stride_parameter) {
            reader.fail(strides.Mark(), "strides",
                        "the kernel has no parameter with the role 'stride' to pass them in");
        }
    } else if (stride_parameter) {
        reader.fail(root.Mark(), "strides",
                    "missing: the kernel takes a stride, so the exercise must say which to run");
    }
    read_ratios(reader, reader.required(root, "", "ratios"), exercise);
    if (const YAML::Node calibration = find_value(root, "calibration"); calibration.IsDefined()) {
        read_calibration(reader, calibration, exercise);
    }
    if (const YAML::Node simulator = find_value(root, "simulator"); simulator.IsDefined()) {
        reader.expect_map(simulator, "simulator", {"modeled_timing"});
        if (const YAML::Node node = find_value(simulator, "modeled_timing"); node.IsDefined()) {
            exercise.simulator.modeled_timing = reader.boolean(node, "simulator.modeled_timing");
        }
    }
    if (const YAML::Node timing = find_value(root, "timing"); timing.IsDefined()) {
        read_timing(reader, timing, exercise.timing);
    }
    if (const YAML::Node limits = find_value(root, "limits"); limits.IsDefined()) {
        read_limits(reader, limits, exercise.limits);
    }
    read_answers(reader, reader.required(root, "", "answers"), exercise);
    exercise.sentence_prompt =
        reader.nonempty_text(reader.required(root, "", "sentence_prompt"), "sentence_prompt");
    const YAML::Node checks = reader.required(root, "", "checks");
    read_checks(reader, checks, exercise);

    // Without a sweep the model's degree of a kernel comes from the file: every check that
    // compares with the model needs one for the kernels it judges.
    if (!exercise.has_sweep()) {
        for (const auto& spec : exercise.checks) {
            std::vector<std::string> judged;
            if (spec.kind == CheckKind::predicted) {
                for (const auto& row : exercise.answers.rows) {
                    judged.push_back(row.kernel);
                }
            } else if (spec.kind == CheckKind::counted_degree) {
                judged.push_back(spec.kernel);
            }
            for (const auto& kernel_id : judged) {
                if (!exercise.kernel(kernel_id).degree) {
                    reader.fail(checks.Mark(), "checks." + spec.id,
                                "kernel " + quote(kernel_id) +
                                    " has no 'degree': the model's conflict degree this check "
                                    "compares with");
                }
            }
        }
    }
    if (const YAML::Node platforms = find_value(root, "platforms"); platforms.IsDefined()) {
        read_platforms(reader, platforms, exercise.prairielearn);
    }
    if (const YAML::Node scoring = find_value(root, "scoring"); scoring.IsDefined()) {
        reader.expect_map(scoring, "scoring", {"kernel_points_without_answers"});
        if (const YAML::Node share = find_value(scoring, "kernel_points_without_answers");
            share.IsDefined()) {
            const std::string field = "scoring.kernel_points_without_answers";
            exercise.kernel_points_without_answers = reader.number(share, field, true);
            if (exercise.kernel_points_without_answers > 1.0) {
                reader.fail(share.Mark(), field,
                            "expected a share from 0 to 1, got " + describe(share));
            }
        }
    }
    if (const YAML::Node example = find_value(root, "starter_example"); example.IsDefined()) {
        read_starter_example(reader, example, exercise);
    }
    return exercise;
}

}  // namespace grader
