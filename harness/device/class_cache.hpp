#pragma once

// What a device server keeps between the grades of a class (device_server.hpp), as a decorator of
// each grade's device: the samples of the exercise's reusable timed launches, measured by the
// first grade that times them, and the exercise kernels' runs on an input that is the same for
// every grade (one that no seed fills). A grade's own input (Part 2's random matrix, whose runs
// write 64 MB each) is never kept, so what the server holds is bounded by the exercise, whatever
// the class's size, and by a ceiling of its own besides. tests/test_device.cpp holds both, and
// runs a Part 2 class through a server under a memory ceiling.

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

// The server's memory of the class, shared by its sessions one at a time.
class ClassStore {
public:
    // Runs whose outputs would take the kept outputs past `max_output_bytes` are not kept.
    explicit ClassStore(std::size_t max_output_bytes = std::size_t{1} << 30)
        : max_output_bytes_(max_output_bytes) {}

    std::size_t kept_runs() const { return runs_.size(); }
    std::size_t kept_timings() const { return timings_.size(); }
    std::size_t output_bytes() const { return output_bytes_; }

private:
    friend class ClassCache;
    // A reusable launch's samples, from the first grade that timed it.
    struct Timing {
        std::vector<double> per_round_ms;
        int launches_per_sample = 1;
        int rounds = 0;
        std::string measured_at;  // "14:02:31 UTC"
    };
    std::size_t max_output_bytes_;
    std::size_t output_bytes_ = 0;
    std::map<std::string, DeviceLaunch> runs_;
    std::map<std::string, Timing> timings_;
};

// A grade's device, answering from `store` what the class has measured already and adding what
// it measures for the first time. Every other call goes to the device as it is.
class ClassCache final : public Device {
public:
    ClassCache(ClassStore& store, std::unique_ptr<Device> device)
        : store_(store), device_(std::move(device)) {}

private:
    DeviceCapabilities do_capabilities() const override { return device_->capabilities(); }
    void do_describe(Environment& environment) override { device_->describe(environment); }
    double do_open_seconds() const override { return device_->open_seconds(); }
    std::string do_acquire() override { return device_->acquire(); }
    void do_release() override;
    void do_set_shared_poison(const CompiledKernel& poison) override {
        device_->set_shared_poison(poison);
    }
    LoadResult do_load(const KernelSpec& spec, const CompiledKernel& compiled) override;
    LaunchGeometry do_geometry(const LoadedKernel& sizing_kernel) override {
        return device_->geometry(sizing_kernel);
    }
    void do_put_input(const InputSpec& input, InputWords words) override;
    void do_follow(const LaunchPlan& plan) override { device_->follow(plan); }
    DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                        const LaunchGeometry& geometry) override;
    void do_reload(const std::vector<LoadedKernel*>& kernels) override { device_->reload(kernels); }
    TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                          const LaunchGeometry& geometry) override;
    HardwareCounts do_count(const std::vector<LaunchCase>& launches, const InputSpec& input,
                            const LaunchGeometry& geometry) override {
        return device_->count(launches, input, geometry);
    }

    // What names a launch across grades: the kernel's image, its stride, the input, the launch.
    std::string launch_key(const LaunchCase& launch, const InputSpec& input,
                           const LaunchGeometry& geometry) const;

    ClassStore& store_;
    std::unique_ptr<Device> device_;
    std::map<const LoadedKernel*, std::string> images_;  // a hash of each loaded kernel's image
    // The grade's inputs whose words are the same for every grade, with a hash of their words.
    std::map<std::string, std::string> shared_inputs_;
};

}  // namespace grader
