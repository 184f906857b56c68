// The student's compile, in a child process the kernel confines: `grader __compile` reads one
// request on its stdin, loads NVRTC, gives up every right to open a file, compiles on a thread
// with a large stack, and answers on fd 3. The grader keeps the time and memory limits, and a
// crash of the compiler is the child's, reported as the student's failed compile.

#include <nvrtc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "compile/nvrtc_library.hpp"
#include "isolation/child.hpp"
#include "isolation/confine.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

using nlohmann::json;

// NVRTC's parser recurses per nesting level; 4000 nested parentheses overflow an 8 MiB stack.
// The stack is reserved, not used: only what the recursion touches becomes resident, and that
// counts against the memory limit.
constexpr std::size_t kCompileStackBytes = std::size_t{512} << 20;
constexpr std::size_t kMaxRequestBytes = std::size_t{64} << 20;
// PTX and cubin together; the probe's are tens of kilobytes.
constexpr std::size_t kMaxKernelBytes = std::size_t{16} << 20;
// The reply carries them in base64 (4/3) beside a bounded log.
constexpr std::size_t kMaxReplyBytes = std::size_t{32} << 20;
constexpr std::string_view kRequestMagic = "grader-compile-request 1\n";

// --- The request: length-prefixed fields, byte-exact (a source that is not UTF-8 must reach the
// vetting as it is, to be refused with its line and column).

void put_field(std::string& out, std::string_view key, std::string_view value) {
    out += key;
    out += ' ';
    out += std::to_string(value.size());
    out += '\n';
    out += value;
    out += '\n';
}

// The harness's own kernels first, then the student's, last: each request starts with its role.
struct RoleRequest {
    bool student = false;
    CompileRequest request;
};

void put_request(std::string& out, const CompileRequest& request, bool student) {
    put_field(out, "role", student ? "student" : "trusted");
    put_field(out, "source", request.source);
    put_field(out, "source_name", request.source_name);
    put_field(out, "kernel_name", request.kernel_name);
    put_field(out, "arch", request.arch);
    for (const std::string& option : request.options) {
        put_field(out, "option", option);
    }
    for (const HeaderSource& header : request.headers) {
        put_field(out, "header_name", header.include_name);
        put_field(out, "header_content", header.content);
    }
    put_field(out, "vet", request.vet ? "1" : "0");
}

std::string encode_requests(const std::vector<CompileRequest>& trusted,
                            const CompileRequest& student) {
    std::string out(kRequestMagic);
    for (const CompileRequest& request : trusted) {
        put_request(out, request, false);
    }
    put_request(out, student, true);
    return out;
}

// Fills requests, of which exactly the last is the student's.
bool decode_requests(std::string_view in, std::vector<RoleRequest>& requests, std::string& why) {
    if (in.substr(0, kRequestMagic.size()) != kRequestMagic) {
        why = "the request does not start with \"" +
              std::string(kRequestMagic.substr(0, kRequestMagic.size() - 1)) + "\"";
        return false;
    }
    in.remove_prefix(kRequestMagic.size());
    requests.clear();
    while (!in.empty()) {
        const std::size_t blank = in.find(' ');
        const std::size_t newline = in.find('\n');
        if (blank == std::string_view::npos || newline == std::string_view::npos ||
            newline < blank) {
            why = "a field of the request has no length";
            return false;
        }
        const std::string key(in.substr(0, blank));
        const std::string length_text(in.substr(blank + 1, newline - blank - 1));
        if (length_text.empty() || length_text.size() > 12 ||
            length_text.find_first_not_of("0123456789") != std::string::npos) {
            why = "the field " + key + " has no valid length";
            return false;
        }
        const std::size_t length = std::stoull(length_text);
        if (in.size() < newline + 1 + length + 1 || in[newline + 1 + length] != '\n') {
            why = "the field " + key + " is cut short";
            return false;
        }
        std::string value(in.substr(newline + 1, length));
        in.remove_prefix(newline + 1 + length + 1);
        if (key == "role") {
            requests.push_back({value == "student", CompileRequest{}});
            requests.back().request.source_name.clear();
            continue;
        }
        if (requests.empty()) {
            why = "the field " + key + " comes before any role";
            return false;
        }
        CompileRequest& request = requests.back().request;
        if (key == "source") {
            request.source = std::move(value);
        } else if (key == "source_name") {
            request.source_name = std::move(value);
        } else if (key == "kernel_name") {
            request.kernel_name = std::move(value);
        } else if (key == "arch") {
            request.arch = std::move(value);
        } else if (key == "option") {
            request.options.push_back(std::move(value));
        } else if (key == "header_name") {
            request.headers.push_back({std::move(value), {}});
        } else if (key == "header_content" && !request.headers.empty()) {
            request.headers.back().content = std::move(value);
        } else if (key == "vet") {
            request.vet = value != "0";
        } else {
            why = "the request has an unknown field " + key;
            return false;
        }
    }
    for (std::size_t i = 0; i < requests.size(); ++i) {
        if (requests[i].student != (i + 1 == requests.size())) {
            why = "the request must end with the student's kernel, and hold only one";
            return false;
        }
    }
    if (requests.empty()) {
        why = "the request holds no kernel";
        return false;
    }
    return true;
}

// --- Base64, for the PTX and the cubin inside a one-line JSON reply.

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string to_base64(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const std::uint32_t word =
            static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
            static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
            static_cast<unsigned char>(bytes[i + 2]);
        out += kBase64Alphabet[word >> 18 & 63];
        out += kBase64Alphabet[word >> 12 & 63];
        out += kBase64Alphabet[word >> 6 & 63];
        out += kBase64Alphabet[word & 63];
    }
    if (i < bytes.size()) {
        std::uint32_t word = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
        if (i + 1 < bytes.size()) {
            word |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        }
        out += kBase64Alphabet[word >> 18 & 63];
        out += kBase64Alphabet[word >> 12 & 63];
        out += i + 1 < bytes.size() ? kBase64Alphabet[word >> 6 & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> from_base64(std::string_view text) {
    std::string out;
    out.reserve(text.size() / 4 * 3);
    std::uint32_t word = 0;
    int bits = 0;
    for (const char c : text) {
        if (c == '=') {
            break;
        }
        const std::size_t value = kBase64Alphabet.find(c);
        if (value == std::string_view::npos) {
            return std::nullopt;
        }
        word = word << 6 | static_cast<std::uint32_t>(value);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>(word >> bits & 0xFF);
        }
    }
    return out;
}

// --- The child.

void write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t written = ::write(fd, text.data(), text.size());
        if (written < 0 && errno == EINTR) {
            continue;
        }
        if (written <= 0) {
            return;  // the grader is gone or stopped listening; nothing left to tell
        }
        text.remove_prefix(static_cast<std::size_t>(written));
    }
}

// One message: a JSON object on one line. Text from the student's source that is not UTF-8 (a
// vetting message echoes it) is replaced, not refused.
void send_message(int fd, const json& message) {
    write_all(fd, text::json_text(message, -1) + "\n");
}

std::optional<std::string> read_request(int fd, std::string& why) {
    std::string input;
    char buffer[64 * 1024];
    while (true) {
        const ssize_t length = ::read(fd, buffer, sizeof buffer);
        if (length < 0 && errno == EINTR) {
            continue;
        }
        if (length < 0) {
            why = std::string("reading the request failed: ") + std::strerror(errno);
            return std::nullopt;
        }
        if (length == 0) {
            return input;
        }
        input.append(buffer, static_cast<std::size_t>(length));
        if (input.size() > kMaxRequestBytes) {
            why = "the request is larger than " + std::to_string(kMaxRequestBytes) + " bytes";
            return std::nullopt;
        }
    }
}

struct CompileJob {
    const CompileRequest* request = nullptr;
    CompiledKernel kernel;
    std::optional<json> machine_fault;  // NVRTC itself failed
    std::string harness_fault;
    bool out_of_memory = false;
};

void* run_compile_job(void* argument) {
    auto* job = static_cast<CompileJob*>(argument);
    try {
        job->kernel = compile_kernel(*job->request);
    } catch (const NvrtcError& error) {
        job->machine_fault = json{{"status", static_cast<int>(error.status())},
                                  {"call", error.call()},
                                  {"message", error.what()},
                                  {"nvrtc_log", error.nvrtc_log()}};
    } catch (const std::bad_alloc&) {
        job->out_of_memory = true;
    } catch (const std::exception& error) {
        job->harness_fault = error.what();
    }
    return nullptr;
}

// Runs the job on a thread whose stack is large enough for deeply nested source; false (with
// why) where no such thread can be made.
bool compile_on_large_stack(CompileJob& job, std::string& why) {
    pthread_attr_t attributes;
    if (::pthread_attr_init(&attributes) != 0) {
        why = "pthread_attr_init failed";
        return false;
    }
    int error = ::pthread_attr_setstacksize(&attributes, kCompileStackBytes);
    pthread_t thread{};
    if (error == 0) {
        error = ::pthread_create(&thread, &attributes, run_compile_job, &job);
    }
    ::pthread_attr_destroy(&attributes);
    if (error != 0) {
        why = "starting the compile thread with a " + std::to_string(kCompileStackBytes >> 20) +
              " MiB stack failed: " + std::strerror(error);
        return false;
    }
    ::pthread_join(thread, nullptr);
    return true;
}

// A failed compile that is the student's, with one plain sentence for a log.
CompiledKernel students_failed_compile(const CompileRequest& request, const std::string& reason,
                                       double seconds) {
    CompiledKernel kernel;
    CompileOutcome& outcome = kernel.outcome;
    outcome.attempted = true;
    outcome.ok = false;
    outcome.arch = request.arch;
    outcome.options = request.options;
    outcome.options.push_back("-arch=" + request.arch);
    outcome.log = reason + "\n";
    outcome.seconds = seconds;
    return kernel;
}

// "4 GiB", "512 MiB", "3000 bytes".
std::string size_text(std::size_t bytes) {
    if (bytes >= (std::size_t{1} << 30) && bytes % (std::size_t{1} << 30) == 0) {
        return std::to_string(bytes >> 30) + " GiB";
    }
    if (bytes >= (std::size_t{1} << 20)) {
        return std::to_string(bytes >> 20) + " MiB";
    }
    return std::to_string(bytes) + " bytes";
}

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", seconds);
    return text;
}

std::string signal_text(int signal_number) {
    const char* description = ::sigdescr_np(signal_number);
    return "signal " + std::to_string(signal_number) +
           (description != nullptr ? std::string(", ") + description : std::string());
}

std::string tail_of(const std::string& output) {
    constexpr std::size_t kShown = 2000;
    return output.size() <= kShown ? output : "..." + output.substr(output.size() - kShown);
}

}  // namespace

namespace {

json result_message(const CompiledKernel& kernel) {
    return json{{"outcome", kernel.outcome},
                {"ptx_base64", to_base64(kernel.ptx)},
                {"cubin_base64", to_base64(kernel.cubin)}};
}

CompiledKernel kernel_from(const json& result) {
    CompiledKernel kernel;
    result.at("outcome").get_to(kernel.outcome);
    auto ptx = from_base64(result.value("ptx_base64", std::string()));
    auto cubin = from_base64(result.value("cubin_base64", std::string()));
    if (!ptx || !cubin) {
        throw std::runtime_error("the compiler process sent a result that cannot be read");
    }
    kernel.ptx = std::move(*ptx);
    kernel.cubin = std::move(*cubin);
    return kernel;
}

// Compiles one request and sends its result; false where the child must stop (a fault, sent).
bool compile_and_send(const CompileRequest& request, bool student, int reply_fd) {
    CompileJob job;
    job.request = &request;
    std::string why;
    if (!compile_on_large_stack(job, why)) {
        send_message(reply_fd, json{{"harness_fault", why}});
        return false;
    }
    if (job.machine_fault) {
        send_message(reply_fd, json{{"machine_fault", *job.machine_fault}});
        return false;
    }
    if (!job.harness_fault.empty()) {
        send_message(reply_fd, json{{"harness_fault", job.harness_fault}});
        return false;
    }
    CompiledKernel& kernel = job.kernel;
    if (student && job.out_of_memory) {
        kernel = students_failed_compile(
            request, "the compiler ran out of memory on " + request.source_name, 0.0);
    } else if (job.out_of_memory) {
        send_message(reply_fd, json{{"harness_fault",
                                     "the compiler ran out of memory on " + request.source_name}});
        return false;
    }
    if (student) {
        const std::string too_large = bound_student_outcome(kernel.outcome);
        if (!too_large.empty()) {
            kernel = students_failed_compile(request, too_large, kernel.outcome.seconds);
        }
    }
    if (student && kernel.ptx.size() + kernel.cubin.size() > kMaxKernelBytes) {
        const double seconds = kernel.outcome.seconds;
        kernel = students_failed_compile(
            request,
            "the compiled kernel is " + size_text(kernel.ptx.size() + kernel.cubin.size()) +
                " of PTX and cubin; the grader accepts at most " + size_text(kMaxKernelBytes),
            seconds);
    }
    send_message(reply_fd, json{{student ? "result" : "trusted", result_message(kernel)}});
    return true;
}

}  // namespace

std::string bound_student_outcome(CompileOutcome& outcome) {
    if (outcome.lowered_name.size() > kMaxLoweredNameBytes) {
        return "the kernel's mangled name is " + size_text(outcome.lowered_name.size()) +
               "; the grader accepts at most " + size_text(kMaxLoweredNameBytes) +
               ": its parameters must have the ABI's plain types, not nested templates";
    }
    if (outcome.signature.size() > kMaxSignatureBytes) {
        const std::size_t full = outcome.signature.size();
        outcome.signature = text::shorten(outcome.signature, kMaxSignatureBytes) + " [" +
                            std::to_string(full) + " bytes, cut]";
    }
    if (outcome.vetting_problems.size() > kMaxVettingProblems) {
        const std::size_t more = outcome.vetting_problems.size() - kMaxVettingProblems;
        outcome.vetting_problems.resize(kMaxVettingProblems);
        outcome.vetting_problems.push_back(
            SourceProblem{outcome.vetting_problems.back().line, 0,
                          "and " + std::to_string(more) + " more problems like these"});
    }
    for (SourceProblem& problem : outcome.vetting_problems) {
        problem.message = text::shorten(problem.message, kMaxListedTextBytes);
    }
    if (outcome.clock_reads.size() > kMaxClockReads + 1) {
        outcome.clock_reads.resize(kMaxClockReads + 1);
    }
    for (std::string& read : outcome.clock_reads) {
        read = text::shorten(read, kMaxListedTextBytes);
    }
    outcome.log = bounded_log(std::move(outcome.log), kMaxCompileLogBytes, outcome.log_cut_bytes);
    return {};
}

int serve_compile_request(int input_fd, int reply_fd, const CompileServiceOptions& options) {
    std::string why;
    const std::optional<std::string> input = read_request(input_fd, why);
    std::vector<RoleRequest> requests;
    if (!input || !decode_requests(*input, requests, why)) {
        send_message(reply_fd, json{{"harness_fault", "grader __compile: " + why}});
        return 2;
    }
    CompileRequest& student = requests.back().request;
    if (!student.vet && !options.honour_unvetted_requests) {
        student.vet = true;
    }

    // Everything NVRTC will open, opened now: after the confinement nothing can be.
    nvrtc_library_folder();  // for a message about a broken installation, made while it can be
    if (options.load_nvrtc_first) {
        load_nvrtc_builtins();
        nvrtc_version();
    }

    Confinement confinement;
    if (options.confine) {
        confinement = confine_to_no_files();
    } else {
        confinement.description = "no confinement: the compile child was asked not to confine";
    }
    send_message(reply_fd, json{{"stage", "confined"},
                                {"confinement", confinement.description},
                                {"files_closed", confinement.files_closed()}});

    // The harness's own kernels first: their results are sent before the student's source is
    // read, so nothing it does to this process can change them.
    for (std::size_t i = 0; i + 1 < requests.size(); ++i) {
        if (!compile_and_send(requests[i].request, false, reply_fd)) {
            return 2;
        }
    }
    send_message(reply_fd, json{{"stage", "compiling"}});
    return compile_and_send(student, true, reply_fd) ? 0 : 2;
}

namespace {

// Why the compile child ended without the student's result, once it had begun their source: a
// failed compile of the student's, in words that say which limit it met.
std::string stopped_compile_reason(const ChildResult& child, const CompileRequest& student,
                                   const UntrustedCompileOptions& options) {
    switch (child.end) {
        case ChildResult::End::timed_out:
            return "the compile of " + student.source_name + " did not finish within " +
                   seconds_text(child.limit_seconds);
        case ChildResult::End::memory_exceeded:
            return "the compiler used more than " + size_text(options.memory_bytes) +
                   " of memory on " + student.source_name;
        case ChildResult::End::message_overflow:
            return "the compiled kernel is larger than the " + size_text(kMaxReplyBytes) +
                   " the grader accepts";
        case ChildResult::End::signaled:
            return "the compiler crashed on " + student.source_name + " (" +
                   signal_text(child.signal) + ")";
        default:
            return "the compiler stopped on " + student.source_name +
                   " without a result (exit status " + std::to_string(child.exit_code) + ")";
    }
}

// The child's faults, which are the machine's or the harness's: it could not start, NVRTC failed,
// the child failed, or it stopped before it reached the student's source. Throws for each.
void throw_for_machine_faults(const ChildResult& child, const std::optional<json>& reply,
                              bool compiling, const CompileRequest& student) {
    if (child.end == ChildResult::End::spawn_failed) {
        throw std::runtime_error("the compiler process (grader __compile) could not be started: " +
                                 child.error);
    }
    if (reply && reply->contains("machine_fault")) {
        const json& fault = (*reply)["machine_fault"];
        throw NvrtcError(static_cast<nvrtcResult>(fault.value("status", 0)),
                         fault.value("call", std::string()),
                         fault.value("message", std::string("NVRTC failed")),
                         fault.value("nvrtc_log", std::string()));
    }
    if (reply && reply->contains("harness_fault")) {
        throw std::runtime_error("the compiler process failed: " +
                                 (*reply)["harness_fault"].get<std::string>());
    }
    // Before the child reached the student's source, nothing the student did can have stopped
    // it.
    if (!compiling) {
        throw std::runtime_error(
            "the compiler process (grader __compile) stopped before it compiled " +
            student.source_name + " (" + std::string(to_string(child.end)) +
            (child.end == ChildResult::End::exited
                 ? ", exit status " + std::to_string(child.exit_code)
                 : std::string()) +
            (child.signal != 0 ? ", " + signal_text(child.signal) : std::string()) + ")" +
            (child.output.empty() ? std::string() : "; it said: " + tail_of(child.output)));
    }
}

void require_names(const std::vector<CompileRequest>& trusted, const CompileRequest& student) {
    std::vector<const CompileRequest*> all;
    for (const CompileRequest& one : trusted) {
        all.push_back(&one);
    }
    all.push_back(&student);
    for (const CompileRequest* request : all) {
        if (request->arch.empty() || request->kernel_name.empty()) {
            throw std::invalid_argument(
                "compile_confined: no architecture or kernel name given for " +
                request->source_name);
        }
    }
}

}  // namespace

ConfinedCompiles compile_confined(const std::vector<CompileRequest>& trusted,
                                  const CompileRequest& student,
                                  const UntrustedCompileOptions& options) {
    require_names(trusted, student);
    std::vector<std::string> argv = {options.grader_executable.string()};
    argv.insert(argv.end(), options.arguments.begin(), options.arguments.end());

    ChildLimits limits;
    // Starting and the harness's own kernels; the student's compile gets its own clock.
    limits.seconds = options.seconds * static_cast<double>(1 + trusted.size());
    limits.memory_bytes = options.memory_bytes;
    limits.message_bytes = kMaxReplyBytes;
    limits.output_bytes = 16 * 1024;
    limits.file_bytes = 0;  // it writes no file

    ConfinedCompiles compiles;
    std::string confinement;
    bool compiling = false;
    std::optional<json> reply;
    const auto on_message = [&](const std::string& line) {
        json message = json::parse(line, nullptr, false);
        if (message.is_discarded() || !message.is_object()) {
            return 0.0;
        }
        if (message.value("stage", "") == "confined") {
            confinement = message.value("confinement", "");
        } else if (message.value("stage", "") == "compiling") {
            compiling = true;
            return options.seconds;
        } else if (message.contains("trusted")) {
            compiles.trusted.push_back(kernel_from(message["trusted"]));
            compiles.trusted.back().confinement = confinement;
        } else {
            reply = std::move(message);
        }
        return 0.0;
    };
    // The child's working directory is "/": NVRTC looks for include names relative to it before
    // its in-memory headers, and the submission's folder is nothing it should look at.
    const ChildResult child =
        run_child(argv, limits, on_message, "/", encode_requests(trusted, student));
    throw_for_machine_faults(child, reply, compiling, student);
    if (reply && reply->contains("result")) {
        compiles.student = kernel_from((*reply)["result"]);
    } else {
        compiles.student = students_failed_compile(
            student, stopped_compile_reason(child, student, options), child.seconds);
    }
    compiles.student.confinement = confinement;
    return compiles;
}

CompiledKernel compile_untrusted(const CompileRequest& request,
                                 const UntrustedCompileOptions& options) {
    return compile_confined({}, request, options).student;
}

}  // namespace grader
