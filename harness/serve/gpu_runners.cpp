#include "serve/gpu_runners.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "batch/batch.hpp"
#include "batch/device_servers.hpp"
#include "batch/shard.hpp"
#include "exercise/exercise.hpp"
#include "isolation/child.hpp"
#include "model/report.hpp"

namespace grader::serve {
namespace fs = std::filesystem;

Service::LocalGpus::LocalGpus(Service& service) : service_(service) {}

Service::LocalGpus::~LocalGpus() = default;

int Service::LocalGpus::grades_at_once() const {
    const ServiceOptions& options = service_.options_;
    const int gpu = std::max(1, options.gpu_jobs_per_device);
    return (gpu + long_grade_places(options, gpu)) *
           static_cast<int>(std::max<std::size_t>(1, options.devices.size()));
}

void Service::LocalGpus::start() {
    const ServiceOptions& options = service_.options_;
    for (const Exercise& exercise : options.exercises) {
        servers_[exercise.id] =
            std::make_unique<DeviceServers>(options.worker_executable, exercise.directory);
    }
    // Each server started now, so that the first student's grade finds it listening.
    service_.threads_.emplace_back([this, &options] {
        for (const auto& [id, servers] : servers_) {
            for (const int device : options.devices) {
                if (service_.stopping_) {
                    return;
                }
                if (servers->socket_for(device).empty() && options.log) {
                    options.log("the device server of GPU " + std::to_string(device) + " for " +
                                id + " would not start: its grades open the GPU themselves");
                }
            }
        }
    });
    for (const int device : options.devices) {
        service_.start_lane(Lane::gpu, device, std::max(1, options.gpu_jobs_per_device), this);
    }
}

void Service::LocalGpus::stop() {
    for (const auto& [id, servers] : servers_) {
        servers->stop();
    }
}

fs::path Service::LocalGpus::device_server(const std::string& exercise_id, int device) const {
    const auto servers = servers_.find(exercise_id);
    return servers == servers_.end() ? fs::path() : servers->second->socket_for(device);
}

void Service::SlurmCluster::start() {
    service_.threads_.emplace_back([this] { loop(); });
}

void Service::SlurmCluster::loop() {
    // A wave: the next queued GPU grades, fairly ordered, of one exercise, as a class folder of
    // links to their files; scripts/slurm/submit.sh grades it as a job array of `grader batch
    // --shard` and merges it; each report is read back from the merged class.
    std::size_t wave_number = 0;
    while (!service_.stopping_) {
        try {
            wave(wave_number);
        } catch (const StoreError& error) {
            // The wave's grades stay running in the state file, queued again at the next start.
            service_.store_failed(error);
            service_.pause(5.0);
        } catch (const std::exception& error) {
            if (service_.options_.log) {
                service_.options_.log(std::string("a Slurm wave failed in the service: ") +
                                      error.what());
            }
            service_.pause(5.0);
        }
    }
}

std::vector<Job> Service::SlurmCluster::claim_wave(std::string& exercise_id) {
    std::vector<Job> wave;
    while (static_cast<int>(wave.size()) < std::max(1, service_.options_.slurm.wave_size)) {
        auto job = service_.store_->claim_next(Lane::gpu, now_seconds());
        if (!job) {
            break;
        }
        const auto attempt = service_.store_->attempt(job->attempt);
        if (!attempt) {
            continue;
        }
        if (!exercise_id.empty() && attempt->exercise != exercise_id) {
            service_.store_->requeue(job->attempt, Lane::gpu);  // the next wave's
            break;
        }
        exercise_id = attempt->exercise;
        wave.push_back(*job);
    }
    return wave;
}

bool Service::SlurmCluster::submit_wave(const std::vector<Job>& wave,
                                        const std::string& exercise_id, const fs::path& run) {
    const Exercise* exercise = service_.exercise(exercise_id);
    try {
        fs::create_directories(run / "submissions");
        for (const Job& job : wave) {
            const auto attempt = service_.store_->attempt(job.attempt);
            // Copies: a batch follows no link, and a student's file must have one link alone.
            fs::create_directory(run / "submissions" / attempt->folder);
            for (const std::string& name : attempt->files) {
                fs::copy_file(service_.files_dir(*attempt) / name,
                              run / "submissions" / attempt->folder / name);
            }
        }
        ChildLimits limits;
        limits.seconds = 300.0;  // sbatch twice
        const ChildResult submitted = run_child(
            {"/usr/bin/env", "GRADER=" + service_.options_.worker_executable.string(),
             "GRADER_BACKEND=" + service_.options_.slurm.backend,
             service_.options_.slurm.submit_script.string(), (run / "submissions").string(),
             run.string(), std::to_string(std::max(1, service_.options_.slurm.tasks)), "--exercise",
             exercise == nullptr ? exercise_id : exercise->directory.string()},
            limits, [](const std::string&) { return 0.0; });
        std::ofstream(run / "submit.log") << submitted.output << submitted.error;
        if (submitted.end != ChildResult::End::exited || submitted.exit_code != 0) {
            throw std::runtime_error("scripts/slurm/submit.sh failed; see " +
                                     (run / "submit.log").string());
        }
    } catch (const std::exception& error) {
        // The service's fault, said to each student at once: a wave never submitted has nothing
        // to wait for, and its lanes would say "being graded" until the deadline.
        if (service_.options_.log) {
            service_.options_.log(std::string("a Slurm wave could not be submitted: ") +
                                  error.what());
        }
        for (const Job& job : wave) {
            service_.store_->finish(
                job.attempt, Lane::gpu, "ungradable", 0, 0,
                "the service could not hand this grade to the course's GPU cluster "
                "(its Slurm submission failed): the service's fault, not your "
                "submission's; the instructor has the details in the service's log",
                now_seconds(), true);
        }
        return false;
    }
    return true;
}

std::vector<Job> Service::SlurmCluster::collect_wave(std::vector<Job> pending,
                                                     const fs::path& run) {
    const int tasks = std::max(1, service_.options_.slurm.tasks);
    const double deadline = now_seconds() + service_.options_.slurm.wait_seconds;
    const auto file_found = [&] {
        std::vector<Job> left;
        for (const Job& job : pending) {
            const auto attempt = service_.store_->attempt(job.attempt);
            std::optional<Report> report;
            for (int task = 0; task < tasks && !report; ++task) {
                report = read_report_json(run / "shards" / std::to_string(task) / attempt->folder /
                                          "report.json");
            }
            if (report) {
                service_.record(*attempt, Lane::gpu, *report);
            } else {
                left.push_back(job);
            }
        }
        pending = std::move(left);
    };
    const auto tasks_done = [&] {
        for (int task = 0; task < tasks; ++task) {
            if (!fs::exists(run / "shards" / std::to_string(task) / kShardManifestFile)) {
                return false;
            }
        }
        return true;
    };
    while (!service_.stopping_ && !pending.empty() && now_seconds() < deadline) {
        const bool over = tasks_done();
        file_found();
        if (over) {
            break;
        }
        std::unique_lock<std::mutex> lock(service_.wake_mutex_);
        service_.wake_.wait_for(lock, std::chrono::seconds(1));
    }
    return pending;
}

void Service::SlurmCluster::settle_wave(const std::vector<Job>& pending) {
    if (service_.stopping_) {
        // The wave's grades go back to their places, their starts not counted.
        for (const Job& job : pending) {
            service_.until_written([&] { service_.store_->requeue(job.attempt, Lane::gpu, true); });
        }
        return;
    }
    bool retry = false;
    for (const Job& job : pending) {
        if (job.starts >= service_.options_.max_starts) {
            service_.store_->finish(job.attempt, Lane::gpu, "ungradable", 0, 0,
                                    "the Slurm cluster returned no report for this attempt " +
                                        std::to_string(job.starts) +
                                        " times: the machine's fault, not the submission's",
                                    now_seconds(), true);
        } else {
            service_.store_->requeue(job.attempt, Lane::gpu);
            retry = true;
        }
    }
    if (retry) {
        // A wave that came back short is not resent at once: the cluster may need a moment.
        std::unique_lock<std::mutex> lock(service_.wake_mutex_);
        service_.wake_.wait_for(lock, std::chrono::seconds(5),
                                [this] { return service_.stopping_.load(); });
    }
}

void Service::SlurmCluster::wave(std::size_t& wave_number) {
    std::string exercise_id;
    const std::vector<Job> wave = claim_wave(exercise_id);
    if (wave.empty()) {
        std::unique_lock<std::mutex> lock(service_.wake_mutex_);
        service_.wake_.wait_for(lock, std::chrono::seconds(1));
        return;
    }
    const fs::path run = service_.options_.state_dir / "slurm" /
                         ("wave-" + std::to_string(static_cast<long>(now_seconds())) + "-" +
                          std::to_string(++wave_number));
    if (!submit_wave(wave, exercise_id, run)) {
        return;
    }
    // Each task of the array writes RUN/shards/I/<folder>/report.json as it grades: a report is
    // filed as soon as it is there. The wave is over when every task has written its shard.json
    // (or at the deadline); the merge's class outputs are not waited for.
    settle_wave(collect_wave(wave, run));
}

}  // namespace grader::serve
