#pragma once

// A device that is one thing where it can be had and another where it cannot: a grade in a batch
// goes through the GPU's device server (remote_device.hpp), and where no server begins its
// session (acquire() throws DeviceUnavailable) the grade opens the GPU itself, and says so in the
// environment section (tests/test_pipeline.cpp: after a fault ends the server).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

class FallbackDevice final : public Device {
public:
    FallbackDevice(std::unique_ptr<Device> preferred,
                   std::function<std::unique_ptr<Device>()> open_fallback)
        : preferred_(std::move(preferred)), open_fallback_(std::move(open_fallback)) {}

private:
    // The preferred device's; where it cannot be had, a device from `open_fallback`, with the
    // shared-memory poison it was given, and the reason kept for describe().
    std::string do_acquire() override;
    void do_set_shared_poison(const CompiledKernel& poison) override;
    void do_describe(Environment& environment) override;

    DeviceCapabilities do_capabilities() const override { return active().capabilities(); }
    double do_open_seconds() const override { return active().open_seconds(); }
    void do_release() override { active().release(); }
    LoadResult do_load(const KernelSpec& spec, const CompiledKernel& compiled) override {
        return active().load(spec, compiled);
    }
    LaunchGeometry do_geometry(const LoadedKernel& sizing_kernel) override {
        return active().geometry(sizing_kernel);
    }
    void do_put_input(const InputSpec& input, InputWords words) override {
        active().put_input(input, std::move(words));
    }
    void do_follow(const LaunchPlan& plan) override { active().follow(plan); }
    DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                        const LaunchGeometry& geometry) override {
        return active().run(launch, input, geometry);
    }
    void do_reload(const std::vector<LoadedKernel*>& kernels) override { active().reload(kernels); }
    TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                          const LaunchGeometry& geometry) override {
        return active().time(launches, input, geometry);
    }
    HardwareCounts do_count(const std::vector<LaunchCase>& launches, const InputSpec& input,
                            const LaunchGeometry& geometry) override {
        return active().count(launches, input, geometry);
    }

    Device& active() const { return fallback_ ? *fallback_ : *preferred_; }

    std::unique_ptr<Device> preferred_;
    std::function<std::unique_ptr<Device>()> open_fallback_;
    std::unique_ptr<Device> fallback_;  // opened where the preferred could not be had
    std::string why_fallback_;
    std::optional<CompiledKernel> poison_;
};

}  // namespace grader
