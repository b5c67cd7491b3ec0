// The timing loops of the generated models' command-line runner (zoc/runner/main_harness.h): the
// clocks it reads, the timed forward loop, the timing of the input copy to the device and the
// per-layer profile. Each runs on a model that measure_point.h has already created and checked;
// they live apart from that flow so that what is measured, and how, reads in one place.
#pragma once

#include <cuda_runtime.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/core/timing.h"
#include "zoc/runner/harness_support.h"

namespace zoc {
namespace harness {

// Seconds since the Unix epoch: the clock an outside sampler (NVML in tools/harness) also reads.
inline double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// CPU time this thread has used, microseconds (0 if the clock is unavailable).
inline double thread_cpu_us() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

inline double micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// Device memory in use on this GPU by every process (total - free), or 0 if unknown.
inline size_t device_used_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return total_bytes - free_bytes;
}

// Per-forward measurements of the timed loop.
struct TimedRun {
  std::vector<float> ms;            // CUDA events around each forward
  std::vector<float> host_cpu_us;   // thread CPU time inside forward() (the enqueue)
  std::vector<float> host_wall_us;  // wall time inside forward()
  double t_start = 0, t_end = 0;    // epoch seconds around the loop
};

// Times up to `iters` forwards after up to `warmup`, one event pair each. With max_time_ms > 0
// the loop stops once that much GPU time is measured (after at least 5 forwards, or `iters` if
// fewer), and warm-up once it has taken half of it.
template <class Model>
Expected<TimedRun> time_forward(Model& model, const float* input, float* output, int batch,
                                int warmup, int iters, int max_time_ms, cudaStream_t stream) {
  const auto warm0 = std::chrono::steady_clock::now();
  for (int i = 0; i < warmup; ++i) {
    Status s = model.forward(input, output, batch, stream);
    if (!s.ok()) return Error{"forward (warm-up " + std::to_string(i) + "): " + s.error().message};
    if (max_time_ms > 0) {
      if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
        return cuda_error("cudaStreamSynchronize in warm-up", e);
      }
      if (micros_since(warm0) >= 500.0 * max_time_ms) break;
    }
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return cuda_error("cudaStreamSynchronize after warm-up", e);
  }
  TimedRun run;
  run.ms.reserve(static_cast<size_t>(iters));
  const int floor_iters = std::min(iters, 5);
  double measured_ms = 0;
  EventTimer timer;
  run.t_start = epoch_seconds();
  for (int i = 0; i < iters; ++i) {
    if (max_time_ms > 0 && i >= floor_iters && measured_ms >= max_time_ms) break;
    if (Status s = timer.start(stream); !s.ok()) return s.error();
    const double cpu0 = thread_cpu_us();
    const auto wall0 = std::chrono::steady_clock::now();
    Status s = model.forward(input, output, batch, stream);
    const double wall_us = micros_since(wall0);
    const double cpu_us = thread_cpu_us() - cpu0;
    if (!s.ok()) return Error{"forward (timed " + std::to_string(i) + "): " + s.error().message};
    auto t = timer.stop_ms(stream);
    if (!t.ok()) return t.error();
    run.ms.push_back(*t);
    run.host_cpu_us.push_back(static_cast<float>(cpu_us));
    run.host_wall_us.push_back(static_cast<float>(wall_us));
    measured_ms += *t;
  }
  run.t_end = epoch_seconds();
  return run;
}

// Median times of copying `bytes` of input to the device from pageable memory (`host`) and
// from a pinned copy of it, each after one untimed copy.
struct CopyTimes {
  size_t bytes = 0;
  int reps = 0;
  float pageable_ms = 0, pinned_ms = 0;
};

inline Expected<CopyTimes> time_h2d(const float* host, size_t bytes, void* device, int reps,
                                    cudaStream_t stream) {
  CopyTimes times;
  times.bytes = bytes;
  times.reps = reps;
  if (reps <= 0 || bytes == 0) return times;
  void* pinned = nullptr;
  if (cudaError_t e = cudaMallocHost(&pinned, bytes); e != cudaSuccess) {
    return cuda_error("cudaMallocHost (pinned input for the copy timing)", e);
  }
  std::memcpy(pinned, host, bytes);
  std::vector<float> pageable_ms, pinned_ms;
  EventTimer timer;
  auto copy_once = [&](const void* src, std::vector<float>* out) -> Status {
    if (Status s = timer.start(stream); !s.ok()) return s;
    if (cudaError_t e = cudaMemcpyAsync(device, src, bytes, cudaMemcpyHostToDevice, stream);
        e != cudaSuccess) {
      return cuda_error("cudaMemcpyAsync (input copy timing)", e);
    }
    auto ms = timer.stop_ms(stream);
    if (!ms.ok()) return ms.error();
    if (out) out->push_back(*ms);
    return Status();
  };
  auto all_copies = [&]() -> Status {
    for (int i = 0; i <= reps; ++i) {  // the first of each is untimed
      if (Status s = copy_once(host, i > 0 ? &pageable_ms : nullptr); !s.ok()) return s;
      if (Status s = copy_once(pinned, i > 0 ? &pinned_ms : nullptr); !s.ok()) return s;
    }
    return Status();
  };
  Status status = all_copies();
  (void)cudaFreeHost(pinned);
  if (!status.ok()) return status.error();
  times.pageable_ms = summarize(pageable_ms).median;
  times.pinned_ms = summarize(pinned_ms).median;
  return times;
}

// Per-layer GPU times from Model::profile(): the median over `runs` profiled forwards.
struct LayerProfile {
  int runs = 0;
  std::vector<float> layer_ms;  // Model::kLayers medians
  float total_ms = 0;           // median first-to-last event time
};

template <class Model>
Expected<LayerProfile> profile_layers(Model& model, const float* input, float* output, int batch,
                                      int runs, cudaStream_t stream) {
  LayerProfile prof;
  prof.runs = runs;
  std::vector<std::vector<float>> per_layer(Model::kLayers);
  std::vector<float> totals, one(Model::kLayers);
  for (int r = 0; r <= runs; ++r) {  // the first profiled forward is untimed (captures, warms)
    float total = 0;
    Status s = model.profile(input, output, batch, stream, one.data(), &total);
    if (!s.ok()) return Error{"profile (run " + std::to_string(r) + "): " + s.error().message};
    if (r == 0) continue;
    for (int k = 0; k < Model::kLayers; ++k) per_layer[static_cast<size_t>(k)].push_back(one[k]);
    totals.push_back(total);
  }
  for (const std::vector<float>& times : per_layer) {
    prof.layer_ms.push_back(static_cast<float>(summarize(times).median));
  }
  prof.total_ms = static_cast<float>(summarize(totals).median);
  return prof;
}

}  // namespace harness
}  // namespace zoc
