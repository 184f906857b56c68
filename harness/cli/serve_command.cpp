// `grader serve`: the HTTP service students check their work against on the course's GPU
// (docs/serve.md). Binds the options to the service, serves until SIGINT or SIGTERM.

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "batch/batch.hpp"
#include "batch/device_servers.hpp"
#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "exercise/exercise.hpp"
#include "grade/grade.hpp"
#include "isolation/child.hpp"
#include "serve/api.hpp"
#include "serve/http_messages.hpp"
#include "serve/http_server.hpp"
#include "serve/lti.hpp"
#include "serve/lti_jwt.hpp"
#include "serve/lti_store.hpp"
#include "serve/service.hpp"
#include "serve/store.hpp"
#include "serve/upload.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

// How long SIGINT or SIGTERM may take to stop the service.
constexpr std::chrono::seconds kStopBound{15};

struct ServeCommandOptions {
    std::filesystem::path state = "grader-serve";
    std::string listen = "127.0.0.1:8080";
    std::vector<std::string> exercises;
    std::string backend = "auto";
    std::vector<int> devices;
    int gpu_jobs = 4;
    int sim_jobs = 0;
    std::string rate = "20/1h";
    double timeout = 0.0;
    std::size_t max_upload_kb = 2048;
    std::size_t per_address = 256;
    int threads = 4;
    std::filesystem::path slurm;
    int slurm_tasks = 1;
    std::string slurm_backend = "cuda";
    std::string lti_url;
    std::string lti_score = "best";
};

// "20/1h", "5/10m", "100/3600s", "20/1d": attempts per window; "0" or "none": no limit.
std::optional<serve::RateLimit> parse_rate(const std::string& text) {
    if (text == "0" || text == "none") {
        return serve::RateLimit{1 << 30, 1.0};
    }
    const std::size_t slash = text.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 >= text.size()) {
        return std::nullopt;
    }
    try {
        std::size_t used = 0;
        const int count = std::stoi(text.substr(0, slash), &used);
        if (used != slash || count <= 0) {
            return std::nullopt;
        }
        const std::string window = text.substr(slash + 1);
        std::size_t number_end = 0;
        const double amount = std::stod(window, &number_end);
        const std::string unit = window.substr(number_end);
        const double scale =
            unit == "s" || unit.empty()
                ? 1.0
                : (unit == "m" ? 60.0 : (unit == "h" ? 3600.0 : (unit == "d" ? 86400.0 : -1.0)));
        if (scale < 0 || amount <= 0) {
            return std::nullopt;
        }
        return serve::RateLimit{count, amount * scale};
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// Whether --slurm's script can submit a wave on this machine: `SCRIPT --check` exits 0 where it
// can (scripts/slurm/submit.sh looks for sbatch), and says what is missing where it cannot.
bool slurm_submit_ready(const std::filesystem::path& script, std::string& said) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(script, error) || ::access(script.c_str(), X_OK) != 0) {
        said = "no executable script there (scripts/slurm/submit.sh is the one the grader ships)";
        return false;
    }
    ChildLimits limits;
    limits.seconds = 30.0;
    const ChildResult checked = run_child({std::filesystem::absolute(script).string(), "--check"},
                                          limits, [](const std::string&) { return 0.0; });
    if (checked.end == ChildResult::End::exited && checked.exit_code == 0) {
        return true;
    }
    std::string output = checked.output + checked.error;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) {
        output.pop_back();
    }
    said = "its check (" + script.filename().string() + " --check) failed" +
           (output.empty() ? std::string() : ": " + text::visible_line(output)) +
           "; the service would take attempts whose GPU grade never comes";
    return false;
}

// --listen's ADDRESS:PORT and the connections' limits; nullopt (said) where it is not one.
std::optional<serve::HttpOptions> http_options(const ServeCommandOptions& options) {
    const std::size_t colon = options.listen.rfind(':');
    if (colon == std::string::npos) {
        spdlog::error("--listen {}: give ADDRESS:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080",
                      text::visible_line(options.listen));
        return std::nullopt;
    }
    serve::HttpOptions http;
    http.address = options.listen.substr(0, colon);
    if (http.address.size() > 2 && http.address.front() == '[') {
        http.address = http.address.substr(1, http.address.size() - 2);
    }
    try {
        const int port = std::stoi(options.listen.substr(colon + 1));
        if (port < 0 || port > 65535) {
            throw std::out_of_range("port");
        }
        http.port = static_cast<unsigned short>(port);
    } catch (const std::exception&) {
        spdlog::error("--listen {}: the port is not a number from 0 to 65535",
                      text::visible_line(options.listen));
        return std::nullopt;
    }
    http.threads = options.threads;
    http.max_connections_per_address = options.per_address;
    return http;
}

// The service's options from the command's; an exit code (said) where they cannot be, else 0.
int make_service_options(const ServeCommandOptions& options, const serve::RateLimit& rate,
                         serve::ServiceOptions& service_options) {
    service_options.state_dir = options.state;
    std::vector<std::string> exercises = options.exercises;
    if (exercises.empty()) {
        exercises = bundled_exercise_ids();
    }
    for (const std::string& given : exercises) {
        const auto folder = find_exercise(given);
        if (!folder) {
            spdlog::error("--exercise {}: no such exercise folder or bundled exercise",
                          text::visible_line(given));
            return kExitUsage;
        }
        service_options.exercises.push_back(load_exercise(*folder));
        const Exercise& loaded = service_options.exercises.back();
        service_options.other_exercise_sources[loaded.id] = other_exercise_sources(loaded);
    }
    // The default exercise first, as `grader grade` has it.
    const std::string default_id = load_exercise(default_exercise_dir()).id;
    std::stable_partition(service_options.exercises.begin(), service_options.exercises.end(),
                          [&](const Exercise& e) { return e.id == default_id; });
    service_options.worker_executable = current_executable();
    service_options.rate = rate;
    service_options.run_seconds_override = options.timeout;
    service_options.upload.max_total_bytes = options.max_upload_kb * 1024;
    service_options.upload.max_file_bytes =
        std::min(service_options.upload.max_file_bytes, service_options.upload.max_total_bytes);
    service_options.log = [](const std::string& line) {
        spdlog::warn("{}", text::visible_line(line));
    };
    const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
    service_options.sim_jobs =
        options.sim_jobs > 0 ? options.sim_jobs : static_cast<int>(std::max(1u, cores / 4));
    if (!options.slurm.empty()) {
        // Refused here, not found out at the first wave: its attempts' GPU lane would never end.
        std::string said;
        if (!slurm_submit_ready(options.slurm, said)) {
            spdlog::error("--slurm {}: {}", text::visible_line(options.slurm.string()), said);
            return kExitUsage;
        }
        service_options.gpu = true;
        service_options.slurm.submit_script = std::filesystem::absolute(options.slurm);
        service_options.slurm.tasks = options.slurm_tasks;
        service_options.slurm.backend = options.slurm_backend;
    } else if (options.backend != "sim") {
        service_options.devices = options.devices.empty() ? visible_devices() : options.devices;
        service_options.gpu = !service_options.devices.empty();
        if (options.backend == "cuda" && !service_options.gpu) {
            spdlog::error(
                "--backend cuda: this machine shows no GPU (no /dev/nvidia*, or "
                "CUDA_VISIBLE_DEVICES is empty)");
            return kExitUngradable;
        }
        service_options.gpu_jobs_per_device = std::max(1, options.gpu_jobs);
    }
    return 0;
}

// The first lines on standard error: where the service listens, what it grades and how.
void tell_started(const ServeCommandOptions& options, const serve::ServiceOptions& service_options,
                  const serve::HttpOptions& http, unsigned port, std::size_t open_files) {
    std::string exercise_ids;
    for (const Exercise& exercise : service_options.exercises) {
        exercise_ids += (exercise_ids.empty() ? "" : ", ") + exercise.id;
    }
    std::string gpu_lane = "no GPU lane: the simulator's report is the grade";
    if (!options.slurm.empty()) {
        gpu_lane = "GPU grades through Slurm (" + options.slurm.string() + ")";
    } else if (service_options.gpu) {
        std::string devices;
        for (const int device : service_options.devices) {
            devices += (devices.empty() ? "" : ",") + std::to_string(device);
        }
        gpu_lane = "GPU " + devices + ", " + std::to_string(service_options.gpu_jobs_per_device) +
                   " grades at once per GPU";
    }
    const std::string shown_address =
        http.address.find(':') != std::string::npos ? "[" + http.address + "]" : http.address;
    std::fprintf(stderr,
                 "grader serve: listening on http://%s:%u (state %s; %s; %s; %d simulator "
                 "grades at once; at most %d attempts per student in %.0f s; %zu connections at "
                 "once, %zu from one address, of %zu open files)\n",
                 shown_address.c_str(), port, text::visible_line(options.state.string()).c_str(),
                 exercise_ids.c_str(), gpu_lane.c_str(), service_options.sim_jobs,
                 service_options.rate.count, service_options.rate.window_seconds,
                 http.max_connections, http.max_connections_per_address, open_files);
}

void tell_resumed(std::int64_t requeued, std::int64_t given_up, int max_starts) {
    if (requeued > 0 || given_up > 0) {
        std::fprintf(stderr,
                     "grader serve: %lld grades left running by the last run queued again, %lld "
                     "given up after %d starts\n",
                     static_cast<long long>(requeued), static_cast<long long>(given_up),
                     max_starts);
    }
}

// Stops the server, LTI and the service, within kStopBound.
void stop_within_bound(serve::HttpServer& server, serve::Lti* lti, serve::Service& service) {
    // The stop is bounded: a worker is stopped within a tenth of a second, but a write of the
    // state may wait out another process's lock. Past the bound the process ends as it is, and
    // what was running is queued again at the next start.
    std::mutex stop_mutex;
    std::condition_variable stop_done;
    bool stopped = false;
    std::thread bound([&] {
        std::unique_lock<std::mutex> lock(stop_mutex);
        if (!stop_done.wait_for(lock, kStopBound, [&] { return stopped; })) {
            std::fprintf(stderr,
                         "grader serve: not stopped within %lld s: ending now; what was running "
                         "is queued again at the next start\n",
                         static_cast<long long>(kStopBound.count()));
            std::fflush(stderr);
            std::_Exit(kExitInternal);
        }
    });
    server.stop();
    if (lti) {
        lti->stop();
    }
    service.stop();
    {
        std::lock_guard<std::mutex> lock(stop_mutex);
        stopped = true;
    }
    stop_done.notify_all();
    bound.join();
}

int run_serve(const ServeCommandOptions& options) {
    const auto rate = parse_rate(options.rate);
    if (!rate) {
        spdlog::error("--rate {}: give attempts per window, e.g. 20/1h, 5/10m (or none)",
                      text::visible_line(options.rate));
        return kExitUsage;
    }
    const auto listened = http_options(options);
    if (!listened) {
        return kExitUsage;
    }
    serve::HttpOptions http = *listened;
    // Every connection is a descriptor: as many as the system allows this user, so that idle
    // connections never take the ones a grade needs (the caps below keep those apart).
    const std::size_t open_files = serve::raise_open_file_limit();

    serve::ServiceOptions service_options;
    if (const int refused = make_service_options(options, *rate, service_options); refused != 0) {
        return refused;
    }
    http.max_body_bytes = service_options.upload.max_total_bytes + 64 * 1024;

    // SIGINT and SIGTERM are taken by this thread alone (sigwait), blocked in every other.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    std::optional<serve::Service> service_holder;
    try {
        service_holder.emplace(service_options);
    } catch (const serve::StoreError& error) {
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUsage;
    }
    serve::Service& service = *service_holder;
    // Descriptors kept for everything but connections: each grade's worker pipes and files, the
    // state file's two connections, the device servers, the log.
    constexpr std::size_t kDescriptorsPerGrade = 16;
    constexpr std::size_t kDescriptorsBeside = 64;
    serve::set_connection_caps(
        http, open_files,
        kDescriptorsBeside +
            kDescriptorsPerGrade * static_cast<std::size_t>(service.grades_at_once()));
    http.log = [](const std::string& line) { spdlog::warn("{}", text::visible_line(line)); };
    // LTI 1.3 beside the tokens: its key is made at the first start, so that the LMS can be
    // given the tool's JWKS before any platform is registered here.
    std::unique_ptr<serve::Lti> lti;
    serve::LtiOptions lti_options;
    lti_options.public_url = options.lti_url;
    while (!lti_options.public_url.empty() && lti_options.public_url.back() == '/') {
        lti_options.public_url.pop_back();
    }
    lti_options.policy = *serve::score_policy_from_string(options.lti_score);
    lti_options.log = service_options.log;
    std::string lti_line;
    try {
        lti = std::make_unique<serve::Lti>(service, lti_options);
        const auto platforms = lti->store().platforms().size();
        lti_line = "LTI 1.3: " + std::to_string(platforms) + " platform(s) registered, the " +
                   options.lti_score + " score to their gradebooks" +
                   (options.lti_url.empty() ? std::string(" (give --lti-url for HTTPS)") : "");
    } catch (const serve::lti::JwtError& error) {
        lti_line = std::string("LTI 1.3 off: ") + error.what();
    }
    serve::Api api(service, serve::RequestLimits{}, lti.get());
    serve::HttpServer server(
        http, [&api](const serve::ApiRequest& request) { return api.handle(request); });
    const auto [requeued, given_up] = service.start();
    if (lti) {
        lti->start();
    }
    server.start();

    tell_started(options, service_options, http, server.port(), open_files);
    tell_resumed(requeued, given_up, service_options.max_starts);
    std::fprintf(stderr, "grader serve: %s\n", text::visible_line(lti_line).c_str());
    if (service.store().people().empty() && (!lti || lti->store().platforms().empty())) {
        std::fprintf(stderr,
                     "grader serve: no tokens yet: grader tokens issue ROSTER.csv --state %s -o "
                     "tokens.csv\n",
                     text::visible_line(options.state.string()).c_str());
    }
    std::fflush(stderr);

    int signal_number = 0;
    while (::sigwait(&signals, &signal_number) != 0) {
    }
    std::fprintf(stderr,
                 "grader serve: stopping (signal %d); grades in flight are stopped and, with "
                 "the queued ones, graded at the next start\n",
                 signal_number);
    std::fflush(stderr);
    stop_within_bound(server, lti.get(), service);
    return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    (void)global;
    auto options = std::make_shared<ServeCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "serve", "Serve a page and an API where students check their work on this machine's GPU");
    command
        ->add_option("--state", options->state,
                     "Folder of the service's state (created: a SQLite file and the attempts)")
        ->capture_default_str();
    command
        ->add_option("--listen", options->listen,
                     "ADDRESS:PORT to listen on (behind a reverse proxy for HTTPS: "
                     "docs/serve.md)")
        ->capture_default_str();
    command
        ->add_option("--exercise", options->exercises,
                     "Exercises to grade, by folder or bundled id (default: every bundled one)")
        ->transform(exercise_locator());
    command
        ->add_option("--backend", options->backend,
                     "auto (the GPU lane where there is a GPU), cuda (a GPU lane, or refuse to "
                     "start) or sim (the simulator's report alone)")
        ->check(CLI::IsMember({"auto", "cuda", "sim"}))
        ->capture_default_str();
    command->add_option("--devices", options->devices, "GPU indices (default: every one)")
        ->delimiter(',');
    command->add_option("--gpu-jobs", options->gpu_jobs, "Grades at once per GPU")
        ->capture_default_str();
    command->add_option("--sim-jobs", options->sim_jobs,
                        "Simulator grades at once (default: a quarter of the cores)");
    command
        ->add_option("--rate", options->rate,
                     "Attempts a student may make per window: 20/1h, 5/10m, none")
        ->capture_default_str();
    command->add_option("--timeout", options->timeout,
                        "Seconds a kernel stage may run (default: the exercise's limit)");
    command
        ->add_option("--max-upload-kb", options->max_upload_kb,
                     "Largest upload taken, its files unzipped")
        ->capture_default_str();
    command
        ->add_option("--per-address", options->per_address,
                     "Connections at once from one address (0: no limit; behind a proxy "
                     "every student comes from the proxy's)")
        ->capture_default_str();
    command->add_option("--threads", options->threads, "Threads answering HTTP")
        ->capture_default_str();
    command->add_option("--slurm", options->slurm,
                        "Hand the GPU's grades to a Slurm cluster through this "
                        "scripts/slurm/submit.sh (the state folder must be on a file system the "
                        "cluster shares)");
    command->add_option("--slurm-tasks", options->slurm_tasks, "GPUs (tasks) per Slurm wave")
        ->capture_default_str();
    command
        ->add_option("--slurm-backend", options->slurm_backend,
                     "GRADER_BACKEND of the Slurm tasks (sim: a cluster without GPUs, to test)")
        ->check(CLI::IsMember({"cuda", "sim"}))
        ->capture_default_str();
    command->add_option("--lti-url", options->lti_url,
                        "Where an LMS and browsers reach this service (https://HOST[/PATH]), for "
                        "LTI 1.3 launches (docs/lti.md)");
    command
        ->add_option("--lti-score", options->lti_score,
                     "Which score an LMS's gradebook gets: a student's best attempt's, or their "
                     "latest's")
        ->check(CLI::IsMember({"best", "latest"}))
        ->capture_default_str();
    command->footer(
        "Examples:\n  grader tokens issue roster.csv -o tokens.csv\n  grader serve\n"
        "  grader serve --listen 0.0.0.0:8080 --rate 10/1h --state /srv/grader");
    command->callback([options, &run] { run = [options] { return run_serve(*options); }; });
}

}  // namespace grader::cli
