#pragma once

// The device servers of a batch on GPUs (device/device_server.hpp): one `grader __device-server`
// per GPU the class uses, started at the first grade that needs it and again, on the same
// socket, whenever it stops (a kernel that faults ends its server), each listening in a folder
// only the batch's user can open.

#include <filesystem>
#include <memory>
#include <string>

namespace grader {

class DeviceServers {
public:
    DeviceServers(std::filesystem::path grader_executable, std::filesystem::path exercise_dir);
    ~DeviceServers();  // asks every server to stop, and waits a little for them
    DeviceServers(const DeviceServers&) = delete;
    DeviceServers& operator=(const DeviceServers&) = delete;

    // The socket of GPU `device`'s server; the first call starts it and waits until it listens.
    // Empty where it would not start (three starts in a row ended before listening): the grade
    // then opens the GPU itself, as a grade alone does.
    std::filesystem::path socket_for(int device);

    struct State;  // defined in the .cpp; the servers' threads share it

private:
    std::shared_ptr<State> state_;
};

}  // namespace grader
