#pragma once

// The device servers of a batch on GPUs (device/device_server.hpp): one `grader __device-server`
// per GPU the class uses, started at the first grade that needs it and again, on the same
// socket, whenever it stops (a kernel that faults ends its server), each listening in a folder
// only the batch's user can open.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace grader {

class DeviceServers {
public:
    // `notice` hears, from a server's thread, what the batch's user must know at once: a server
    // that could not start, and what the grades do instead.
    DeviceServers(std::filesystem::path grader_executable, std::filesystem::path exercise_dir,
                  std::function<void(const std::string& notice)> notice = {});
    ~DeviceServers();  // stop()

    // Asks every server to stop, and waits a little for them (a server busy with an abandoned
    // grade ends with this process). Once only.
    void stop();
    DeviceServers(const DeviceServers&) = delete;
    DeviceServers& operator=(const DeviceServers&) = delete;

    // The socket of GPU `device`'s server; the first call starts it and waits until it listens.
    // Empty where it would not start (three starts in a row ended before listening): the grade
    // then opens the GPU itself, as a grade alone does.
    std::filesystem::path socket_for(int device);

    // Where each server's GPU time went, a line per GPU, for the batch's last words: the grades
    // served, the lock held, answering each kind of request, waiting for the grades' workers, and
    // the server's starts (a kernel that faults or hangs ends its server).
    std::vector<std::string> accounts() const;

    struct State;  // defined in the .cpp; the servers' threads share it

private:
    std::shared_ptr<State> state_;
};

// Grades at once where the options do not say: with device servers a grade holds its GPU for a
// fraction of its time (the rest is compiling, the simulator's witness, checks, reports), so four
// per GPU keep each GPU busy, within half the machine's cores; otherwise one per GPU and one
// more. Never fewer than 2.
int default_jobs(const std::string& backend, std::size_t devices, bool device_server);

// The GPUs this machine shows, without initializing CUDA in this process: CUDA_VISIBLE_DEVICES
// where set (its entries, numbered from 0), else the /dev/nvidia<N> nodes. Empty if none.
std::vector<int> visible_devices();

}  // namespace grader
