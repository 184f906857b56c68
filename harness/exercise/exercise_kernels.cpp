// The exercise file's sections on what runs: the kernel and its parameters, the references, the
// compile flags, the launch, the buffers and the inputs.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "exercise/exercise.hpp"
#include "exercise/exercise_reading.hpp"
#include "exercise/yaml_file.hpp"

namespace grader::exercise_reading {

const std::vector<std::pair<std::string, ParameterRole>>& role_names() {
    static const std::vector<std::pair<std::string, ParameterRole>> kRoles = {
        {"input", ParameterRole::input},
        {"output", ParameterRole::output},
        {"count", ParameterRole::count},
        {"stride", ParameterRole::stride},
        {"constant", ParameterRole::constant}};
    return kRoles;
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

namespace {

// An NVRTC option's name, its short and long spellings one (NVRTC's "Supported Compile Options":
// -lineinfo is --generate-line-info), without its value.
std::string nvrtc_option_name(const std::string& option) {
    static const std::map<std::string, std::string> long_names = {
        {"-arch", "--gpu-architecture"},
        {"-rdc", "--relocatable-device-code"},
        {"-ewp", "--extensible-whole-program"},
        {"-G", "--device-debug"},
        {"-lineinfo", "--generate-line-info"},
        {"-dopt", "--dopt"},
        {"-Xptxas", "--ptxas-options"},
        {"-maxrregcount", "--maxrregcount"},
        {"-ftz", "--ftz"},
        {"-prec-sqrt", "--prec-sqrt"},
        {"-prec-div", "--prec-div"},
        {"-fmad", "--fmad"},
        {"-use_fast_math", "--use_fast_math"},
        {"-extra-device-vectorization", "--extra-device-vectorization"},
        {"-modify-stack-limit", "--modify-stack-limit"},
        {"-dlto", "--dlink-time-opt"},
        {"-D", "--define-macro"},
        {"-U", "--undefine-macro"},
        {"-I", "--include-path"},
        {"-include", "--pre-include"},
        {"-std", "--std"},
        {"-w", "--disable-warnings"},
        {"-restrict", "--restrict"},
        {"-default-device", "--device-as-default-execution-space"},
        {"-opt-info", "--optimization-info"},
        {"-err-no", "--display-error-number"},
        {"-no-err-no", "--no-display-error-number"},
        {"-brief-diag", "--brief-diagnostics"},
    };
    std::string name = option.substr(0, option.find('='));
    // -DNAME, -INAME: the value joined to a one-letter option.
    if (name.size() > 2 && name[0] == '-' && name[1] != '-' &&
        (name[1] == 'D' || name[1] == 'U' || name[1] == 'I')) {
        name = name.substr(0, 2);
    }
    const auto found = long_names.find(name);
    return found == long_names.end() ? name : found->second;
}

// Options NVRTC takes more than once, each with a value of its own.
bool nvrtc_option_repeats(const std::string& name) {
    return name == "--define-macro" || name == "--undefine-macro" || name == "--include-path" ||
           name == "--pre-include" || name == "--ptxas-options" || name == "--diag-error" ||
           name == "--diag-suppress" || name == "--diag-warn";
}

}  // namespace

void read_compile(const ExerciseReader& reader, const YAML::Node& compile, Exercise& exercise) {
    reader.expect_map(compile, "compile", {"options", "default_arch", "headers"});
    if (const YAML::Node options = find_value(compile, "options"); options.IsDefined()) {
        if (!options.IsSequence()) {
            reader.fail(options.Mark(), "compile.options",
                        "expected a list of NVRTC options, got " + describe(options));
        }
        for (std::size_t i = 0; i < options.size(); ++i) {
            const std::string field = index_field("compile.options", i);
            std::string option = reader.nonempty_text(options[i], field);
            // NVRTC 13 takes an option given twice; NVRTC 12 (a student's Colab) refuses the
            // compile, which would make every submission ungradable there and nowhere else. The
            // same option under its other spelling (-lineinfo, --generate-line-info) is the same.
            const std::string name = nvrtc_option_name(option);
            if (name == "--gpu-architecture") {
                reader.fail(options[i].Mark(), field,
                            "'" + option +
                                "' names the architecture, which the harness gives NVRTC itself "
                                "(the GPU's, or compile.default_arch where there is none)");
            }
            for (const std::string& earlier : exercise.compile_options) {
                if (earlier == option ||
                    (nvrtc_option_name(earlier) == name && !nvrtc_option_repeats(name))) {
                    reader.fail(options[i].Mark(), field,
                                "'" + option + "' is given twice" +
                                    (earlier == option ? "" : " (as '" + earlier + "')") +
                                    "; NVRTC 12 refuses an option given more than once");
                }
            }
            exercise.compile_options.push_back(std::move(option));
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

namespace {

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

}  // namespace

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

}  // namespace grader::exercise_reading
