#pragma once

// The GPU lane's two runners (service.hpp's Service::GpuRunner), chosen once when the service is
// made: this machine's GPUs, each grade a confined worker reaching its GPU through that GPU's
// device server (LocalGpus), or a Slurm cluster, one job array of `grader batch --shard` tasks per
// wave of queued grades (SlurmCluster). Private to serve/.

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "serve/service.hpp"
#include "serve/store.hpp"

namespace grader {
class DeviceServers;
}

namespace grader::serve {

// The places kept for long grades beside `ordinary` ones (ServiceOptions::long_grades).
int long_grade_places(const ServiceOptions& options, int ordinary);

class Service::LocalGpus final : public Service::GpuRunner {
public:
    explicit LocalGpus(Service& service);
    ~LocalGpus() override;

    // Each GPU's places, ordinary and long, for every device the options name.
    int grades_at_once() const override;
    // A device server per exercise (each started now, so the first grade finds it listening),
    // and each GPU's lane threads.
    void start() override;
    // The device servers stop; the lane threads end with the service's stop.
    void stop() override;

    // The socket of GPU `device`'s device server for this exercise; empty where it would not
    // start (the grade opens the GPU itself).
    std::filesystem::path device_server(const std::string& exercise_id, int device) const;

private:
    Service& service_;
    std::map<std::string, std::unique_ptr<DeviceServers>> servers_;  // by exercise id
};

class Service::SlurmCluster final : public Service::GpuRunner {
public:
    explicit SlurmCluster(Service& service) : service_(service) {}

    int grades_at_once() const override { return 1; }  // the thread that hands waves over
    void start() override;
    // Nothing of its own to stop: its thread waits on the service's wake-up.
    void stop() override {}

private:
    void loop();
    // One wave of the GPU's grades through Slurm: claimed, submitted, collected, settled.
    void wave(std::size_t& wave_number);
    // The next queued GPU grades, fairly ordered, of one exercise (the first of another goes
    // back for the next wave), at most the wave's size.
    std::vector<Job> claim_wave(std::string& exercise_id);
    // The wave's files copied into RUN/submissions and handed to the submit script. False where
    // that failed: it is logged, and the wave's attempts end at once as the service's fault.
    bool submit_wave(const std::vector<Job>& wave, const std::string& exercise_id,
                     const std::filesystem::path& run);
    // Each report filed as a task writes it, until every task is done, the deadline or a stop;
    // the grades left without one.
    std::vector<Job> collect_wave(std::vector<Job> pending, const std::filesystem::path& run);
    // Grades left: queued again (their starts not counted where the service stops), or
    // ungradable past max_starts.
    void settle_wave(const std::vector<Job>& pending);

    Service& service_;
};

}  // namespace grader::serve
