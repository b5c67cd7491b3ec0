// Per-step timing and peak memory for the LibTorch baseline, measured as train_pytorch.py does.
//
// The comparison of issue 8 is made on the median time of a training step, so both baselines
// must time the same thing the same way: a CUDA event recorded on the current stream before and
// after each step (read back once per epoch, so timing adds no synchronization), or the host
// clock on the CPU, where LibTorch runs synchronously; and the caching allocator's peak since the
// epoch began (torch.cuda.max_memory_allocated), or the process's peak RSS on the CPU. Only the
// CUDA runtime API and allocator calls present in LibTorch 1.13 and 2.x are used.
#pragma once

#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if TRAIN_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

namespace train {

class StepTimer {
 public:
  explicit StepTimer(bool cuda) : cuda_(cuda) {
#if !TRAIN_CUDA
    if (cuda_) throw std::runtime_error("built without TRAIN_CUDA: --device cuda is unavailable");
#endif
  }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  ~StepTimer() { release(); }

  void start() { mark(true); }
  void stop() { mark(false); }

  // Median over the steps since the last call, in ms; forgets them.
  double median_ms() {
    std::vector<double> ms;
#if TRAIN_CUDA
    if (cuda_) {
      for (size_t i = 0; i + 1 < events_.size(); i += 2) {
        check(cudaEventSynchronize(events_[i + 1]), "cudaEventSynchronize");
        float t = 0;
        check(cudaEventElapsedTime(&t, events_[i], events_[i + 1]), "cudaEventElapsedTime");
        ms.push_back(t);
      }
      release();
    }
#endif
    for (size_t i = 0; i + 1 < host_.size(); i += 2) ms.push_back(host_[i + 1] - host_[i]);
    host_.clear();
    if (ms.empty()) return 0.0;
    std::sort(ms.begin(), ms.end());
    const size_t n = ms.size();
    return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  }

 private:
  void mark(bool /*is_start*/) {
#if TRAIN_CUDA
    if (cuda_) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
      check(cudaEventRecord(e, c10::cuda::getCurrentCUDAStream().stream()), "cudaEventRecord");
      return;
    }
#endif
    host_.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
  }

  void release() {
#if TRAIN_CUDA
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
    events_.clear();
#endif
  }

#if TRAIN_CUDA
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
      throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
  std::vector<cudaEvent_t> events_;
#endif
  std::vector<double> host_;
  bool cuda_;
};

// Starts a new peak-memory window (the GPU allocator's peak; nothing to do on the CPU).
inline void reset_peak_memory(bool cuda) {
#if TRAIN_CUDA
  if (cuda) c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
#else
  (void)cuda;
#endif
}

// MiB: GPU allocator peak (all pools) since reset_peak_memory, or the process's peak RSS.
inline double peak_memory_mb(bool cuda) {
#if TRAIN_CUDA
  if (cuda) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
    return static_cast<double>(stats.allocated_bytes[0].peak) / (1024.0 * 1024.0);  // aggregate
  }
#else
  (void)cuda;
#endif
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace train
