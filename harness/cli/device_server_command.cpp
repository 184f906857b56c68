// `grader __device-server`: one GPU's device server (device/gpu_server.hpp), which `grader batch`
// starts for a class. Not for people.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.hpp"
#include "device/device_server.hpp"
#include "device/gpu_server.hpp"
#include "device/session_account.hpp"
#include "exercise/exercise.hpp"

namespace grader::cli {

void add_device_server_command(CLI::App& app, Runner& run) {
    auto exercise_dir = std::make_shared<std::filesystem::path>();
    auto device = std::make_shared<int>(0);
    auto socket = std::make_shared<std::filesystem::path>();
    CLI::App* command = app.add_subcommand(DeviceServerFlags::command, "");
    command->group("");  // hidden from --help
    command->add_option(DeviceServerFlags::exercise, *exercise_dir)->required();
    command->add_option(DeviceServerFlags::device, *device);
    command->add_option(DeviceServerFlags::socket, *socket)->required();
    command->callback([exercise_dir, device, socket, &run] {
        run = [exercise_dir, device, socket]() -> int {
            const Exercise exercise = load_exercise(*exercise_dir);
            // The batch reads its messages on file descriptor 3 (isolation/child.hpp), a JSON
            // object a line: ready, then one per session with where its time went.
            const auto tell_batch = [](const nlohmann::json& message) {
                const std::string line = message.dump() + "\n";
                if (::write(3, line.data(), line.size()) < 0) {
                    std::cerr << "grader __device-server: cannot write to the batch\n";
                }
            };
            const std::string stopped = serve_gpu(
                exercise, *device, *socket,
                [&] {
                    tell_batch({{"type", "ready"}});
                },
                [&](const SessionAccount& account) { tell_batch(session_account_json(account)); });
            std::cerr << "grader __device-server: stopped: " << stopped << std::endl;
            // Without the exit-time teardown of the context and the profiler: a kernel's fault
            // may have lost the context.
            ::_exit(0);
        };
    });
}

}  // namespace grader::cli
