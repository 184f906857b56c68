#include "grade/plan.hpp"

#include <algorithm>
#include <memory>
#include <string_view>

#include "checks/checks.hpp"
#include "common/kernel_ids.hpp"

namespace grader {
namespace {

// The strides a kernel runs at; {0} without a sweep.
std::vector<int> strides_of(const Exercise& exercise, const std::string& kernel,
                            const std::vector<int>& unnamed) {
    if (!exercise.has_sweep()) {
        return {0};
    }
    return kernel == kStudentKernel ? student_strides_to_run(exercise, unnamed)
                                    : reference_strides_to_run(exercise, unnamed);
}

bool contains(const std::vector<int>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

// Whether anything reads an exercise kernel's run with input `i` at `stride`, in a grade of the
// student's kernel: where the student's kernel runs at that stride, its outputs (the oracle's are
// compared), its time (the student's limits) and the simulator's instruction count (the
// student's budget); at any stride, the simulator's count and modeled cost of the timing input.
// An exercise kernel's run at a stride of its own is otherwise left out (on a GPU its outputs
// are never read; it is still timed, and checked there by the timed launches' own outputs).
bool run_is_read(const std::vector<int>* student_strides, bool counts_as_it_runs, int stride,
                 std::size_t i) {
    return student_strides == nullptr || contains(*student_strides, stride) ||
           (i == 0 && counts_as_it_runs);
}

std::optional<std::size_t> case_of(const std::vector<PlannedCase>& cases, const Case& wanted) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (cases[i].kernel == wanted.kernel && cases[i].stride == wanted.stride) {
            return i;
        }
    }
    return std::nullopt;
}

std::optional<std::size_t> base_of(const Exercise& exercise, const std::vector<PlannedCase>& cases,
                                   const PlannedCase& of) {
    return case_of(cases, exercise.has_sweep() ? Case{of.kernel, exercise.ratios.to_stride}
                                               : Case{exercise.ratios.to_kernel, 0});
}

// Whether a case's samples may be the class's (LaunchCase::reusable): an exercise kernel's case
// whose ratio base is one too, and that is no student case's base, so that every ratio pairs
// rounds of one measurement.
bool reusable(const std::vector<PlannedCase>& cases, std::size_t index) {
    const auto a_student_base = [&cases](std::size_t candidate) {
        return std::any_of(cases.begin(), cases.end(), [&](const PlannedCase& other) {
            return other.kernel == kStudentKernel && other.base == candidate;
        });
    };
    const PlannedCase& c = cases[index];
    return c.kernel != kStudentKernel && !a_student_base(index) &&
           !(c.base && a_student_base(*c.base));
}

}  // namespace

GradePlan plan_grade(const Exercise& exercise, const std::map<std::string, LoadedKernel*>& loaded,
                     const std::vector<int>& unnamed_strides, const DeviceCapabilities& device,
                     const LaunchGeometry& geometry) {
    GradePlan plan;
    LaunchPlan& launches = plan.launches;
    launches.geometry = geometry;
    const auto student = loaded.find(std::string(kStudentKernel));
    const bool with_student = student != loaded.end();
    const std::vector<int> student_strides =
        strides_of(exercise, std::string(kStudentKernel), unnamed_strides);
    const std::string oracle = exercise.oracle()->id;

    std::vector<const KernelSpec*> order;
    for (const KernelSpec& spec : exercise.kernels) {
        if (!spec.is_student() && loaded.count(spec.id) != 0) {
            order.push_back(&spec);
        }
    }
    if (with_student) {
        order.push_back(&exercise.kernel(std::string(kStudentKernel)));
    }
    for (const KernelSpec* spec : order) {
        LoadedKernel* kernel = loaded.at(spec->id);
        // The student's outputs are compared with the oracle's; no other exercise kernel's are
        // read, nor the oracle's in a sweep.
        const bool outputs_read = spec->is_student() || (spec->id == oracle && with_student);
        for (const int stride : strides_of(exercise, spec->id, unnamed_strides)) {
            PlannedCase c{spec->id, stride, launches.runs.size(), 0, std::nullopt, std::nullopt};
            for (std::size_t i = 0; i < exercise.inputs.size(); ++i) {
                if (spec->is_student() || run_is_read(with_student ? &student_strides : nullptr,
                                                      device.counts_as_it_runs, stride, i)) {
                    launches.runs.push_back(
                        {LaunchCase{kernel, stride, outputs_read, false}, &exercise.inputs[i]});
                    ++c.run_count;
                }
            }
            plan.cases.push_back(c);
        }
    }
    for (PlannedCase& c : plan.cases) {
        c.base = base_of(exercise, plan.cases, c);
        c.oracle = case_of(plan.cases, Case{oracle, c.stride});
    }

    for (const auto& [id, kernel] : loaded) {
        launches.reloaded.push_back(kernel);
    }
    launches.timing_input = &exercise.inputs.front();
    if (device.times) {
        for (std::size_t i = 0; i < plan.cases.size(); ++i) {
            const PlannedCase& c = plan.cases[i];
            const bool students = c.kernel == kStudentKernel;
            // The timed launches' outputs are checked for the student's kernel only.
            launches.timed.push_back(
                LaunchCase{loaded.at(c.kernel), c.stride, students, reusable(plan.cases, i)});
        }
    }
    // The hardware counts the student's launches after timing, where the device does not count
    // as it runs.
    if (!device.counts_as_it_runs) {
        for (const PlannedCase& c : plan.cases) {
            if (c.kernel == kStudentKernel) {
                launches.counted.push_back(LaunchCase{loaded.at(c.kernel), c.stride, false, false});
            }
        }
    }
    return plan;
}

std::optional<std::size_t> GradePlan::run_of(std::size_t index, const InputSpec& input) const {
    const PlannedCase& c = cases.at(index);
    for (std::size_t run = c.first_run; run < c.first_run + c.run_count; ++run) {
        if (launches.runs[run].input == &input) {
            return run;
        }
    }
    return std::nullopt;
}

std::vector<std::size_t> GradePlan::student_cases() const {
    std::vector<std::size_t> students;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (cases[i].kernel == kStudentKernel) {
            students.push_back(i);
        }
    }
    return students;
}

}  // namespace grader
