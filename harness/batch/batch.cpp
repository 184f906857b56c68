#include "batch/batch.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "batch/device_servers.hpp"
#include "batch/merge.hpp"
#include "checks/checks.hpp"
#include "common/cores.hpp"
#include "common/files.hpp"
#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "device/backend.hpp"
#include "grade/grade.hpp"
#include "model/json.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

// Held (flock) by the batch writing into the output folder, for as long as it runs.
constexpr const char* kBatchLockFile = "batch.lock";

// Every format goes into the student's folder; report.json is written last, because its
// presence is what marks the submission finished for --resume.
constexpr std::array<Format, 5> kFormatsBeforeJson = {
    Format::text, Format::markdown, Format::gradescope, Format::prairielearn, Format::junit};

std::string utc_time(std::chrono::system_clock::time_point when, const char* format) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
    std::tm parts{};
    ::gmtime_r(&seconds, &parts);
    char text[64];
    std::strftime(text, sizeof text, format, &parts);
    return text;
}

// True when `inner` is `outer` or lies inside it.
bool lies_within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
    auto inner_part = inner.begin();
    for (auto outer_part = outer.begin(); outer_part != outer.end(); ++outer_part, ++inner_part) {
        if (outer_part->empty()) {
            continue;  // a trailing separator
        }
        if (inner_part == inner.end() || *inner_part != *outer_part) {
            return false;
        }
    }
    return true;
}

std::filesystem::path report_json_path(const std::filesystem::path& output_dir,
                                       const std::string& student) {
    return output_dir / student / report_file_name(Format::json, true);
}

// What the report says when the harness, not the submission, kept a grade from happening: the
// same checks as every other report, none run, and the reason.
Report harness_failure_report(const Exercise& exercise, const BatchSubmission& submission,
                              const std::string& why) {
    Measurements measurements;
    measurements.interruption = Interruption{
        StopKind::crash, "", "the grader could not grade this submission: " + why, false};
    Submission answers;
    answers.directory = submission.directory;
    answers.unread_reason = "the answers file was not read: " + measurements.interruption->message;
    return evaluate(exercise, answers, measurements, submission.student);
}

struct RenderedReport {
    std::vector<std::pair<std::string, std::string>> files;  // name, content; report.json last
};

RenderedReport render_every_format(const Report& report, const ReportOptions& options) {
    RenderedReport rendered;
    for (const Format format : kFormatsBeforeJson) {
        rendered.files.emplace_back(report_file_name(format, true),
                                    write_report(report, format, options));
    }
    rendered.files.emplace_back(report_file_name(Format::json, true), write_json(report));
    return rendered;
}

void write_submission_files(const std::filesystem::path& folder, const RenderedReport& rendered) {
    create_output_folders(folder);
    // The old marker goes first: a batch killed halfway through the new files must not leave an
    // old report.json that claims them finished.
    std::filesystem::remove(folder / report_file_name(Format::json, true));
    for (const auto& [name, content] : rendered.files) {
        write_file_atomically(folder / name, content);
    }
}

void count_verdict(BatchStatus& status, Verdict verdict) {
    switch (verdict) {
        case Verdict::pass:
            ++status.passed;
            break;
        case Verdict::fail:
            ++status.failed;
            break;
        case Verdict::ungradable:
            ++status.ungradable;
            break;
    }
}

struct Job {
    BatchSubmission submission;
};

// Everything the pool's threads share. Held by shared_ptr: after an interrupt, run_batch returns
// while abandoned threads still hold it.
struct PoolState {
    PoolState(Exercise exercise_value, BatchProgress& progress_value)
        : exercise(std::move(exercise_value)), progress(&progress_value) {}

    const Exercise exercise;
    ReportOptions report_options;  // plain text, and the exercise's PrairieLearn policy
    std::filesystem::path output_dir;
    std::filesystem::path worker_executable;
    std::map<std::string, std::string> other_exercise_sources;
    double run_seconds_override = 0.0;
    std::string backend;
    unsigned sim_threads = 1;  // each grade's share of the cores (GradeOptions::sim_threads)
    std::shared_ptr<DeviceServers> servers;  // on GPUs, unless the options said no
    const std::atomic<bool>* stop = nullptr;
    Clock::time_point began;

    std::mutex mutex;
    std::condition_variable changed;
    std::vector<Job> jobs;
    std::size_t next_job = 0;
    // Set once run_batch stops waiting: from then on no thread writes a file or calls progress.
    bool closed = false;
    BatchProgress* progress;
    BatchStatus status;
    std::vector<int> device_load;  // grades running per entry of status.devices
    std::size_t running_threads = 0;
    std::size_t harness_errors = 0;
    std::exception_ptr fatal;  // an output file could not be written

    bool stop_requested() const { return stop != nullptr && stop->load(); }

    // Under the mutex: the least busy device, the lowest index first among equals.
    std::size_t pick_device() {
        const auto least = std::min_element(device_load.begin(), device_load.end());
        return static_cast<std::size_t>(least - device_load.begin());
    }

    BatchStatus snapshot() {
        status.elapsed_seconds = std::chrono::duration<double>(Clock::now() - began).count();
        return status;
    }
};

Report grade_one(PoolState& state, const BatchSubmission& submission, int device,
                 bool& harness_error) {
    GradeOptions grade;
    grade.submission_dir = submission.directory;
    grade.submission_label = submission.student;
    grade.device = device;
    grade.run_seconds_override = state.run_seconds_override;
    grade.backend = state.backend;
    grade.sim_threads = state.sim_threads;
    grade.worker_executable = state.worker_executable;
    grade.other_exercise_sources = state.other_exercise_sources;
    try {
        if (state.servers) {
            grade.device_server = state.servers->socket_for(device);
        }
        return grade_submission(state.exercise, grade);
    } catch (const std::exception& error) {
        harness_error = true;
        return harness_failure_report(state.exercise, submission, error.what());
    }
}

void pool_thread(const std::shared_ptr<PoolState>& state) {
    std::unique_lock lock(state->mutex);
    while (!state->closed && !state->fatal && !state->stop_requested() &&
           state->next_job < state->jobs.size()) {
        const Job job = state->jobs[state->next_job++];
        const std::size_t device_slot = state->pick_device();
        const int device = state->status.devices[device_slot];
        ++state->device_load[device_slot];
        state->status.in_flight.push_back(job.submission.student);
        state->progress->submission_started(job.submission.student, state->snapshot());
        lock.unlock();

        bool harness_error = false;
        Report report = grade_one(*state, job.submission, device, harness_error);
        RenderedReport rendered;
        try {
            rendered = render_every_format(report, state->report_options);
        } catch (const std::exception& error) {
            // A writer choking on what the submission produced is still the harness's fault, and
            // still only this submission's grade.
            harness_error = true;
            report = harness_failure_report(
                state->exercise, job.submission,
                std::string("its report could not be written: ") + error.what());
            rendered = render_every_format(report, state->report_options);
        }

        lock.lock();
        if (state->closed) {
            break;  // interrupted meanwhile: this grade is abandoned
        }
        --state->device_load[device_slot];
        auto& in_flight = state->status.in_flight;
        in_flight.erase(std::find(in_flight.begin(), in_flight.end(), job.submission.student));
        try {
            // Under the lock, so that nothing is written once run_batch has closed the pool.
            write_submission_files(state->output_dir / job.submission.student, rendered);
        } catch (const std::exception&) {
            state->fatal = std::current_exception();
            break;
        }
        ++state->status.done;
        ++state->status.graded;
        state->harness_errors += harness_error ? 1 : 0;
        count_verdict(state->status, report.verdict);
        GradedSubmission graded;
        graded.student = job.submission.student;
        graded.device = device;
        graded.verdict = report.verdict;
        graded.score = report.score;
        graded.max_score = report.max_score;
        graded.wall_seconds = report.wall_seconds;
        graded.reason = class_reason(report);
        graded.harness_error = harness_error;
        state->progress->submission_finished(graded, state->snapshot());
    }
    if (!lock.owns_lock()) {
        lock.lock();
    }
    --state->running_threads;
    state->changed.notify_all();
}

// The GPUs the class is graded on, its backend (resolved once for the class), and on GPUs their
// device servers, whose notices reach the caller as progress does, one call at a time.
void choose_devices(const std::shared_ptr<PoolState>& state, const BatchOptions& options) {
    BatchStatus& status = state->status;
    status.devices = options.devices.empty() ? visible_devices() : options.devices;
    if (status.devices.empty()) {
        status.devices.push_back(0);  // no GPU seen: every grade says so, as `grader grade` would
    }
    state->device_load.assign(status.devices.size(), 0);
    status.backend =
        std::string(to_string(resolve_backend(options.backend, status.devices.front()).backend));
    state->backend = status.backend;
    if (status.backend != "cuda" || !options.device_server) {
        return;
    }
    const std::weak_ptr<PoolState> pool = state;
    state->servers = std::make_shared<DeviceServers>(
        state->worker_executable.empty() ? current_executable() : state->worker_executable,
        state->exercise.directory, [pool](const std::string& notice) {
            if (const auto alive = pool.lock()) {
                const std::lock_guard guard(alive->mutex);
                if (!alive->closed) {
                    alive->progress->notice(notice);
                }
            }
        });
}

nlohmann::json run_info(const BatchResult& result, const BatchOptions& options) {
    const double minutes = result.wall_seconds / 60.0;
    nlohmann::json info = {
        {"grader_version", kGraderVersion},
        {"started_at", result.started_at},
        {"finished_at", result.finished_at},
        {"wall_seconds", result.wall_seconds},
        {"jobs", result.status.jobs},
        {"devices", result.status.devices},
        {"backend", result.status.backend},
        {"resume", options.resume},
        {"interrupted", result.interrupted},
        {"counts",
         {{"submissions", result.submissions},
          {"in_scope", result.status.total},
          {"graded", result.status.graded},
          {"kept", result.status.kept},
          {"reports", result.entries.size()},
          {"abandoned", result.abandoned.size()},
          {"not_started", result.not_started.size()},
          {"harness_errors", result.harness_errors},
          {"skipped", result.skipped.size()},
          {"flagged", result.flagged},
          {"reports_rewritten", result.reports_rewritten}}},
        {"submissions_per_minute",
         minutes > 0 ? static_cast<double>(result.status.graded) / minutes : 0.0},
    };
    if (!options.only.empty()) {
        info["only"] = options.only;
    }
    return info;
}

std::vector<std::filesystem::path> write_class_outputs(const std::vector<ClassEntry>& entries,
                                                       const std::filesystem::path& output_dir,
                                                       const nlohmann::json& run,
                                                       const std::string& finished_at,
                                                       ClassReportOptions page_options) {
    const auto gradebook = output_dir / kGradebookFile;
    const auto summary = output_dir / kSummaryFile;
    const auto page = output_dir / kClassReportFile;
    page_options.generated_at =
        finished_at.empty() ? std::string()
                            : finished_at.substr(0, 10) + " " + finished_at.substr(11, 5) + " UTC";
    // The class summary is computed once for the three outputs.
    const ClassOutputTexts texts = write_class_outputs_text(entries, run, page_options);
    write_file_atomically(gradebook, texts.gradebook_csv);
    write_file_atomically(summary, texts.summary_json);
    write_file_atomically(page, texts.page_html);
    const auto prairielearn = output_dir / kPrairieLearnScoresFile;
    write_file_atomically(prairielearn, texts.prairielearn_scores_csv);
    return {gradebook, summary, page, prairielearn};
}

// Compares sentences and ids across the class now that every grade is in, and writes again
// the reports whose sentence flag changed: only the writers run, from the report as it was read.
void flag_and_rewrite(std::vector<ClassEntry>& entries, ClassStageResult& stage,
                      const ClassReportOptions& class_options, const ReportOptions& report_options,
                      const std::filesystem::path& output_dir) {
    const auto flags = flag_submissions(entries, class_options);
    stage.flagged = flags.size();
    for (ClassEntry& entry : entries) {
        const auto found = flags.find(entry.student_folder);
        const SentenceReview review =
            found == flags.end() ? SentenceReview{} : sentence_review_of(found->second);
        SentenceReview& stored = entry.report.sentence_review;
        if (review.same_as_example == stored.same_as_example &&
            review.same_as_others == stored.same_as_others) {
            continue;
        }
        stored = review;
        write_submission_files(output_dir / entry.student_folder,
                               render_every_format(entry.report, report_options));
        ++stage.reports_rewritten;
    }
}

}  // namespace

// The output folder must not be, or lie inside, the class folder or a folder a submission's
// link points to: the batch would grade its own reports, keep a report.json a student put there,
// or drop the submission that holds it.
void check_output_folder(const std::filesystem::path& submissions_dir,
                         const std::filesystem::path& output_dir,
                         const std::vector<BatchSubmission>& submissions) {
    std::error_code error;
    const auto class_dir = std::filesystem::canonical(submissions_dir, error);
    if (error) {
        throw BatchError("cannot read the class folder " + submissions_dir.string() + ": " +
                         error.message());
    }
    // A folder this user cannot write (or name) is the caller's to fix (a usage error), said
    // before any grade and in words, not as an internal error on the first report.
    const auto unwritable = [&](const std::string& why) {
        return BatchError("--output " + output_dir.string() +
                          " cannot be written by this user (uid " + std::to_string(::getuid()) +
                          "): " + why +
                          ": choose a folder it may write to, or give it the folder (in Docker: "
                          "--user with the folder owner's uid:gid)");
    };
    const auto output =
        std::filesystem::weakly_canonical(std::filesystem::absolute(output_dir), error);
    if (error) {
        throw unwritable(error.message());
    }
    if (output == class_dir) {
        throw BatchError("--output " + output_dir.string() +
                         " is the class folder itself: choose a folder outside " +
                         submissions_dir.string());
    }
    if (lies_within(output, class_dir)) {
        throw BatchError("--output " + output_dir.string() + " lies inside the class folder " +
                         submissions_dir.string() +
                         ": choose a folder outside it, so that no student's folder holds the "
                         "reports");
    }
    try {
        create_output_folders(output);
    } catch (const std::system_error& made) {
        throw unwritable(made.code().message());
    }
    if (::access(output.c_str(), W_OK | X_OK) != 0) {
        throw unwritable(std::strerror(errno));
    }
    for (const auto& submission : submissions) {
        const auto target = std::filesystem::canonical(submission.directory, error);
        if (!error && lies_within(output, target)) {
            throw BatchError("--output " + output_dir.string() +
                             " lies inside the submission folder '" +
                             text::visible_line(submission.folder_name) +
                             "': choose a folder outside the class");
        }
    }
}

void check_output_folder(const std::filesystem::path& submissions_dir,
                         const std::filesystem::path& output_dir) {
    check_output_folder(submissions_dir, output_dir, find_submissions(submissions_dir).submissions);
}

namespace {

// Held for a batch's run: a second batch into the same output folder is refused while the first
// lives. flock is released by the kernel when the process ends, however it ends, so a killed
// batch never leaves a stale lock for --resume to trip on.
class OutputLock {
public:
    OutputLock(const std::filesystem::path& file, const std::filesystem::path& output_dir) {
        fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd_ < 0) {
            throw std::system_error(errno, std::generic_category(),
                                    "cannot open the batch lock " + file.string());
        }
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            char holder[32] = {};
            const ssize_t got = ::pread(fd_, holder, sizeof holder - 1, 0);
            std::string pid = got > 0 ? std::string(holder, static_cast<std::size_t>(got)) : "";
            while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) {
                pid.pop_back();
            }
            ::close(fd_);
            fd_ = -1;
            throw BatchError("another batch" +
                             (pid.empty() ? std::string() : " (process " + pid + ")") +
                             " is writing into " + output_dir.string() +
                             ": wait for it to end, or choose another --output folder");
        }
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd_, 0) == 0) {
            (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
        }
    }
    ~OutputLock() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    OutputLock(const OutputLock&) = delete;
    OutputLock& operator=(const OutputLock&) = delete;

private:
    int fd_ = -1;
};

// The submissions `only` names, by folder name or output name; throws for a name that is
// neither.
std::set<std::string> selected_students(const std::vector<BatchSubmission>& submissions,
                                        const std::vector<std::string>& only,
                                        const std::filesystem::path& submissions_dir) {
    std::set<std::string> selected;
    for (const auto& name : only) {
        const auto match = std::find_if(
            submissions.begin(), submissions.end(), [&name](const BatchSubmission& submission) {
                return submission.folder_name == name || submission.student == name;
            });
        if (match == submissions.end()) {
            throw BatchError("no submission folder named '" + text::visible_line(name) + "' in " +
                             text::visible_line(submissions_dir.string()));
        }
        selected.insert(match->student);
    }
    return selected;
}

}  // namespace

// Where the kernel confined nothing: Landlock alone, or an empty mount namespace alone, still
// keeps every host file from the compile (harness/isolation/confine.cpp words each case).
bool compile_unconfined(const Environment& environment) {
    return environment.confinement.rfind("no confinement", 0) == 0;
}

std::vector<std::string> submission_file_names() {
    std::vector<std::string> names;
    for (const Format format : kFormatsBeforeJson) {
        names.push_back(report_file_name(format, true));
    }
    names.push_back(report_file_name(Format::json, true));
    return names;
}

ReportOptions batch_report_options(const Exercise& exercise) {
    ReportOptions options;
    options.text.color = false;
    options.prairielearn.compile_error_gradable = exercise.prairielearn.compile_error_gradable;
    options.prairielearn.missing_file_gradable = exercise.prairielearn.missing_file_gradable;
    return options;
}

ClassReportOptions batch_class_options(const Exercise& exercise,
                                       const std::vector<SkippedEntry>& skipped) {
    ClassReportOptions options;
    options.exercise_id = exercise.id;
    options.exercise_title = exercise.title;
    options.example_sentence = exercise.example_sentence;
    options.example_student_id = exercise.example_student_id;
    for (const auto& [subject, ratio] : exercise.example_ratios) {
        options.example_ratios.push_back({subject.kernel, subject.stride, ratio});
    }
    for (const auto& [stride, ratio] : exercise.simulator.modeled_ratios) {
        options.modeled_ratios.push_back({std::string(kStudentKernel), stride, ratio});
    }
    options.lesson_solution = exercise.lesson_solution;
    options.skipped = skipped;
    return options;
}

std::vector<ClassEntry> collect_class_entries(const std::vector<BatchSubmission>& submissions,
                                              const std::filesystem::path& output_dir) {
    std::vector<ClassEntry> entries;
    for (const auto& submission : submissions) {
        const std::string& student = submission.student;
        auto report = read_report_json(report_json_path(output_dir, student));
        if (!report) {
            continue;
        }
        ClassEntry entry;
        entry.student_folder = student;
        entry.submission_folder = submission_key(submission.folder_name);
        entry.report_link = student + "/" + report_file_name(Format::text, true);
        entry.report = std::move(*report);
        entries.push_back(std::move(entry));
    }
    return entries;
}

ClassStageResult write_class_stage(const Exercise& exercise, std::vector<ClassEntry>& entries,
                                   const std::vector<SkippedEntry>& skipped,
                                   const std::filesystem::path& output_dir, const RunInfo& run,
                                   const std::string& finished_at, bool interrupted,
                                   const std::vector<std::string>& unfinished,
                                   const std::string& prairielearn_qid) {
    ClassStageResult stage;
    ClassReportOptions class_options = batch_class_options(exercise, skipped);
    class_options.prairielearn_qid = prairielearn_qid;
    class_options.interrupted = interrupted;
    class_options.unfinished = unfinished;
    flag_and_rewrite(entries, stage, class_options, batch_report_options(exercise), output_dir);
    stage.files = write_class_outputs(entries, output_dir, run(stage), finished_at, class_options);
    return stage;
}

namespace {

// The jobs of this run, in class order: every submission of the scope, or those of --only; with
// --resume (and in a shard's task) not those whose report is already there, which count as done.
void queue_jobs(PoolState& state, const std::vector<BatchSubmission>& scope,
                const std::set<std::string>& selected, const BatchOptions& options) {
    BatchStatus& status = state.status;
    for (const auto& submission : scope) {
        if (!selected.empty()) {
            if (selected.count(submission.student) != 0) {
                state.jobs.push_back({submission});
            }
            continue;
        }
        if (options.resume || options.shard) {
            auto kept = read_report_json(report_json_path(options.output_dir, submission.student));
            // A shard's task may start again on another node: what the machine could not grade
            // is graded again there.
            if (kept && options.shard && kept->verdict == Verdict::ungradable) {
                kept.reset();
            }
            if (kept) {
                ++status.kept;
                ++status.done;
                count_verdict(status, kept->verdict);
                continue;
            }
        }
        state.jobs.push_back({submission});
    }
    status.total = status.kept + state.jobs.size();
}

// A shard's manifest as this task starts: the class, its share, and the runs before this one of
// the same task.
ShardManifest start_manifest(const Exercise& exercise, const BatchOptions& options,
                             const ClassFolder& folder, const BatchResult& result,
                             const BatchStatus& status) {
    const std::vector<BatchSubmission>& submissions = folder.submissions;
    ShardManifest manifest;
    std::optional<ShardManifest> earlier;
    try {
        earlier = read_manifest(options.output_dir);
    } catch (const std::exception&) {
        earlier.reset();  // rewritten below
    }
    if (earlier && earlier->shard.index == options.shard->index &&
        earlier->shard.count == options.shard->count) {
        manifest.runs = earlier->runs;
    }
    manifest.shard = *options.shard;
    manifest.class_digest = class_digest(submissions);
    for (const auto& submission : submissions) {
        manifest.class_students.push_back(submission.student);
        manifest.class_folders.push_back(submission.folder_name);
    }
    manifest.skipped = folder.skipped;
    manifest.assigned = result.assigned;
    manifest.exercise_id = exercise.id;
    manifest.exercise_digest = exercise_digest(exercise);
    manifest.grader_version = kGraderVersion;
    manifest.backend = status.backend;
    manifest.host = host_name();
    manifest.scheduler = scheduler_environment();
    manifest.runs.push_back({result.started_at, "", 0, status.kept, false});
    write_manifest(options.output_dir, manifest);
    return manifest;
}

// Runs the pool's threads until every job is done, or the stop flag or an output failure stops
// it: then the grades in flight are abandoned.
void run_pool(const std::shared_ptr<PoolState>& state, std::size_t thread_count,
              BatchResult& result) {
    BatchStatus& status = state->status;
    std::vector<std::thread> threads;
    {
        std::unique_lock lock(state->mutex);
        state->progress->batch_started(state->snapshot());
        state->running_threads = thread_count;
    }
    for (std::size_t i = 0; i < thread_count; ++i) {
        threads.emplace_back(pool_thread, state);
    }

    {
        std::unique_lock lock(state->mutex);
        while (state->running_threads > 0) {
            // Waking now and then is how the stop flag is seen: it is set from a signal watcher
            // that cannot take this mutex.
            state->changed.wait_for(lock, std::chrono::milliseconds(100));
            if ((state->stop_requested() || state->fatal) && state->running_threads > 0) {
                break;
            }
        }
        state->closed = true;
        result.interrupted = state->stop_requested();
        result.abandoned = status.in_flight;
        for (std::size_t i = state->next_job; i < state->jobs.size(); ++i) {
            result.not_started.push_back(state->jobs[i].submission.student);
        }
        result.status = state->snapshot();
        result.harness_errors = state->harness_errors;
    }
    if (result.abandoned.empty()) {
        for (auto& thread : threads) {
            thread.join();
        }
        if (state->servers) {  // every grade is done: the device servers stop
            state->servers->stop();
            result.device_servers = state->servers->accounts();
            state->servers.reset();
        }
    } else {
        // Their grades are still running, and only the process's end stops them: they write
        // nothing more once the pool is closed.
        for (auto& thread : threads) {
            thread.detach();
        }
    }
}

// Where the class folder lies inside the output folder, the output folder's entry that holds it
// is no student's to take.
std::set<std::string> reserved_entries(const BatchOptions& options) {
    std::set<std::string> reserved;
    std::error_code error;
    const auto class_dir = std::filesystem::canonical(options.submissions_dir, error);
    const auto output =
        std::filesystem::weakly_canonical(std::filesystem::absolute(options.output_dir));
    if (!error && class_dir != output && lies_within(class_dir, output)) {
        reserved.insert(class_dir.lexically_relative(output).begin()->string());
    }
    return reserved;
}

// The submissions this run is about: the whole class, or this shard's share of it.
std::vector<BatchSubmission> run_scope(const std::vector<BatchSubmission>& submissions,
                                       const BatchOptions& options) {
    std::vector<BatchSubmission> scope;
    for (std::size_t i = 0; i < submissions.size(); ++i) {
        if (!options.shard || in_shard(i, *options.shard)) {
            scope.push_back(submissions[i]);
        }
    }
    return scope;
}

// A shard's task ends with its manifest: what it did, and on which GPUs. The class outputs need
// the whole class: `grader merge` writes them.
void finish_shard(ShardManifest& manifest, BatchResult& result, const BatchOptions& options,
                  std::size_t scope, bool fatal) {
    std::set<std::string> bus_ids;
    for (const ClassEntry& entry : result.entries) {
        if (!entry.report.environment.gpu_bus_id.empty() &&
            bus_ids.insert(entry.report.environment.gpu_bus_id).second) {
            manifest.gpus.push_back(gpu_identity(entry.report.environment.gpu_bus_id));
        }
    }
    ShardRun& run = manifest.runs.back();
    run.finished_at = result.interrupted ? "" : result.finished_at;
    run.graded = result.status.graded;
    run.interrupted = result.interrupted;
    manifest.complete = !result.interrupted && !fatal && result.entries.size() == scope;
    write_manifest(options.output_dir, manifest);
    result.class_outputs = {options.output_dir / kShardManifestFile};
}

// The class's outputs, listing the folders with no report (in flight when stopped, or never
// started), so that a partial class never reads as complete.
void finish_class(const Exercise& exercise, BatchResult& result, const BatchOptions& options) {
    std::vector<std::string> unfinished = result.abandoned;
    unfinished.insert(unfinished.end(), result.not_started.begin(), result.not_started.end());
    const ClassStageResult stage = write_class_stage(
        exercise, result.entries, result.skipped, options.output_dir,
        [&result, &options](const ClassStageResult& so_far) {
            result.flagged = so_far.flagged;
            result.reports_rewritten = so_far.reports_rewritten;
            return run_info(result, options);
        },
        result.finished_at, result.interrupted, unfinished, options.prairielearn_qid);
    result.flagged = stage.flagged;
    result.reports_rewritten = stage.reports_rewritten;
    result.class_outputs = stage.files;
}

}  // namespace

BatchResult run_batch(const Exercise& exercise, const BatchOptions& options,
                      BatchProgress& progress) {
    const auto began_wall = std::chrono::system_clock::now();
    auto state = std::make_shared<PoolState>(exercise, progress);
    state->began = Clock::now();
    state->output_dir = options.output_dir;
    state->worker_executable = options.worker_executable;
    state->other_exercise_sources = options.other_exercise_sources;
    state->run_seconds_override = options.run_seconds_override;
    state->stop = options.stop;
    state->report_options = batch_report_options(exercise);

    BatchResult result;
    result.started_at = utc_time(began_wall, "%Y-%m-%dT%H:%M:%SZ");
    ClassFolder folder = find_submissions(options.submissions_dir, reserved_entries(options));
    const std::vector<BatchSubmission>& submissions = folder.submissions;
    result.skipped = folder.skipped;
    result.submissions = submissions.size();
    check_output_folder(options.submissions_dir, options.output_dir, submissions);
    const auto selected = selected_students(submissions, options.only, options.submissions_dir);
    const std::vector<BatchSubmission> scope = run_scope(submissions, options);
    for (const auto& submission : scope) {
        result.assigned.push_back(submission.student);
    }

    create_output_folders(options.output_dir / kLocksFolder, Sharing::owner_only);
    const OutputLock output_lock(options.output_dir / kLocksFolder / kBatchLockFile,
                                 options.output_dir);
    // A batch or a shard's task killed midway leaves its writer's temporaries behind; with the
    // lock held, no other batch is writing here.
    remove_interrupted_writes(options.output_dir);
    for (const auto& submission : scope) {
        remove_interrupted_writes(options.output_dir / submission.student);
    }

    BatchStatus& status = state->status;
    choose_devices(state, options);

    queue_jobs(*state, scope, selected, options);
    ShardManifest manifest;
    if (options.shard) {
        manifest = start_manifest(exercise, options, folder, result, status);
    }
    const int wanted_jobs = options.jobs > 0 ? options.jobs
                                             : default_jobs(status.backend, status.devices.size(),
                                                            static_cast<bool>(state->servers));
    const std::size_t thread_count =
        std::min(static_cast<std::size_t>(wanted_jobs), state->jobs.size());
    status.jobs = wanted_jobs;
    // Each grade runs the simulator's blocks on its share of the cores.
    state->sim_threads =
        std::max(1u, usable_cores() / static_cast<unsigned>(std::max(wanted_jobs, 1)));

    run_pool(state, thread_count, result);

    const auto finished_wall = std::chrono::system_clock::now();
    result.finished_at = utc_time(finished_wall, "%Y-%m-%dT%H:%M:%SZ");
    result.wall_seconds = std::chrono::duration<double>(finished_wall - began_wall).count();
    result.entries = collect_class_entries(options.shard ? scope : submissions, options.output_dir);
    for (const ClassEntry& entry : result.entries) {
        if (compile_unconfined(entry.report.environment)) {
            result.unconfined_compile = entry.report.environment.confinement;
            break;
        }
    }

    std::exception_ptr fatal;
    {
        std::lock_guard lock(state->mutex);
        fatal = state->fatal;
    }
    try {
        if (options.shard) {
            finish_shard(manifest, result, options, scope.size(), static_cast<bool>(fatal));
        } else {
            finish_class(exercise, result, options);
        }
    } catch (const std::exception&) {
        if (!fatal) {
            throw;
        }
    }
    if (fatal) {
        std::rethrow_exception(fatal);
    }
    return result;
}

}  // namespace grader
