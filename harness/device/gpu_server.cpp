#include "device/gpu_server.hpp"

#include <unistd.h>

#include <cstdint>
#include <memory>

#include "cuda/resources.hpp"
#include "device/class_cache.hpp"
#include "device/counter_source.hpp"
#include "device/cuda_device.hpp"
#include "device/wire.hpp"

namespace grader {

std::string serve_gpu(const Exercise& exercise, int ordinal, const std::filesystem::path& socket,
                      const std::function<void()>& ready, const SessionEnded& ended) {
    // A server that starts again after a fault keeps the other grades waiting: it listens as soon
    // as its context is made, while CUPTI's libraries load and its counter opens on a thread
    // beside it and beside its first grade's requests, as a grade's own counter opens beside its
    // timing. The first count learns whether this user may count.
    // The context and the counter are never torn down, not even when this returns: a kernel's
    // fault may have lost the context, and the process's end frees both.
    keep_large_buffers_in_heap();
    const auto* context = new cuda::PrimaryContext(ordinal);  // every session retains this one
    const auto* counters =
        new std::shared_ptr<CounterSource>(server_counter(context->get(), ordinal));
    GpuClocks clocks;
    ClassStore store;
    const int listening = wire::listen_on(socket);
    ready();
    std::string stopped = serve_device_sessions(
        listening, exercise,
        [&](std::uint64_t seed) {
            return std::make_unique<CudaDevice>(exercise, ordinal, seed, *counters, &clocks);
        },
        store, ended);
    ::close(listening);
    std::filesystem::remove(socket);
    return stopped;
}

}  // namespace grader
