#include "measure/interleaved_timing.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

namespace grader {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One timed sample: `count` back-to-back launches between two events.
struct PendingSample {
    cuda::Event start;
    cuda::Event stop;
};

}  // namespace

InterleavedTiming time_interleaved(const std::vector<TimedLaunch>& launches, const TimingSpec& spec,
                                   std::uint64_t seed, const cuda::Stream& stream) {
    const auto began = std::chrono::steady_clock::now();
    InterleavedTiming result;
    result.rows.resize(launches.size());

    // Bring the clocks up: the GPU idles at a fraction of its boost clock, and the first
    // milliseconds of work would otherwise land on whichever rows come first.
    if (!launches.empty() && spec.warmup_ms > 0.0) {
        cuda::Event start;
        cuda::Event stop;
        const auto warm_began = std::chrono::steady_clock::now();
        while (seconds_since(warm_began) * 1000.0 < spec.warmup_ms) {
            start.record(stream);
            for (const auto& launch : launches) {
                launch.enqueue(stream.get());
            }
            stop.record(stream);
            stream.synchronize();
        }
    }

    // Per row: a warm-up (module load, caches), then one timed launch to size its samples.
    for (std::size_t row = 0; row < launches.size(); ++row) {
        for (int i = 0; i < spec.warmup_launches; ++i) {
            launches[row].enqueue(stream.get());
        }
        cuda::Event start;
        cuda::Event stop;
        start.record(stream);
        launches[row].enqueue(stream.get());
        stop.record(stream);
        stream.synchronize();
        result.rows[row].launches_per_sample = launches_per_sample(
            static_cast<double>(cuda::elapsed_ms(start, stop)), spec.min_sample_ms);
    }

    std::mt19937_64 shuffle_rng(seed ^ 0x5eedc0ffeeULL);
    std::vector<std::size_t> order(launches.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::vector<PendingSample> pending(launches.size());
    std::vector<std::vector<double>> samples(launches.size());
    const auto rounds_began = std::chrono::steady_clock::now();
    while (true) {
        std::shuffle(order.begin(), order.end(), shuffle_rng);
        for (const std::size_t row : order) {
            pending[row].start.record(stream);
            for (int i = 0; i < result.rows[row].launches_per_sample; ++i) {
                launches[row].enqueue(stream.get());
            }
            pending[row].stop.record(stream);
        }
        stream.synchronize();
        for (std::size_t row = 0; row < launches.size(); ++row) {
            const double ms = cuda::elapsed_ms(pending[row].start, pending[row].stop);
            samples[row].push_back(ms / result.rows[row].launches_per_sample);
        }
        ++result.rounds;
        result.stop = should_stop(samples, spec, seconds_since(rounds_began));
        if (result.stop != StopReason::keep_going) {
            break;
        }
    }
    for (std::size_t row = 0; row < launches.size(); ++row) {
        result.rows[row].per_launch_ms = std::move(samples[row]);
    }
    result.seconds = seconds_since(began);
    return result;
}

}  // namespace grader
