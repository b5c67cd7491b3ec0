// Data and timing helpers of tests/gpu/int8_probe.cu: deterministic pseudo-random tensors that
// the device fills and the host regenerates bit for bit (so the CPU reference needs no copy of
// a 200 MB input), and a CUDA-event timer giving the median of per-iteration times.
//
// Why apart: the probe's main file is about the graphs and the report; these are plumbing.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace probe {

// splitmix64 of (seed, index): the same value on host and device.
__host__ __device__ inline uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull * (seed + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// An integer in [lo, hi], or 0 for a padded channel (i % c_stored >= c_real).
__host__ __device__ inline int value_at(uint64_t seed, uint64_t i, int lo, int hi, int c_stored,
                                        int c_real) {
  if (int(i % uint64_t(c_stored)) >= c_real) return 0;
  return lo + int(mix(seed, i) % uint64_t(hi - lo + 1));
}

__global__ void probe_fill_int8(int8_t* p, uint64_t n, uint64_t seed, int lo, int hi, int c_stored,
                                int c_real) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    p[i] = int8_t(value_at(seed, i, lo, hi, c_stored, c_real));
  }
}

// fp16 tensors: the same integers times `unit`.
__global__ void probe_fill_half(__half* p, uint64_t n, uint64_t seed, int lo, int hi, int c_stored,
                                int c_real, float unit) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    p[i] = __float2half(unit * float(value_at(seed, i, lo, hi, c_stored, c_real)));
  }
}

inline zoc::Status fill_int8(void* p, uint64_t n, uint64_t seed, int lo, int hi, int c_stored,
                             int c_real) {
  probe_fill_int8<<<1024, 256>>>(static_cast<int8_t*>(p), n, seed, lo, hi, c_stored, c_real);
  ZOC_CUDA(cudaGetLastError(), "fill int8");
  return zoc::Status();
}

inline zoc::Status fill_half(void* p, uint64_t n, uint64_t seed, int lo, int hi, int c_stored,
                             int c_real, float unit) {
  probe_fill_half<<<1024, 256>>>(static_cast<__half*>(p), n, seed, lo, hi, c_stored, c_real, unit);
  ZOC_CUDA(cudaGetLastError(), "fill half");
  return zoc::Status();
}

inline std::vector<int8_t> host_int8(uint64_t n, uint64_t seed, int lo, int hi, int c_stored,
                                     int c_real) {
  std::vector<int8_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = int8_t(value_at(seed, i, lo, hi, c_stored, c_real));
  return v;
}

// Median and mean of per-iteration times (ms) of `run` (returns zoc::Status) on stream 0,
// after `warmup` untimed calls. One event between consecutive calls: no gaps are added.
template <class Run>
zoc::Expected<std::pair<float, float>> time_runs(Run run, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) ZOC_TRY(run());
  ZOC_CUDA(cudaDeviceSynchronize(), "warm-up");
  std::vector<cudaEvent_t> ev(size_t(iters) + 1, nullptr);
  std::string err;  // the first failure; the events are destroyed on every path
  for (cudaEvent_t& e : ev) {
    if (cudaEventCreate(&e) != cudaSuccess) err = "cudaEventCreate failed";
  }
  for (int i = 0; err.empty() && i < iters; ++i) {
    (void)cudaEventRecord(ev[size_t(i)], 0);
    const zoc::Status st = run();
    if (!st.ok()) err = st.error().message;
  }
  std::vector<float> ms;
  if (err.empty()) {
    (void)cudaEventRecord(ev.back(), 0);
    const cudaError_t st = cudaEventSynchronize(ev.back());
    if (st != cudaSuccess) err = std::string("timing: ") + cudaGetErrorString(st);
    for (int i = 0; err.empty() && i < iters; ++i) {
      float t = 0;
      (void)cudaEventElapsedTime(&t, ev[size_t(i)], ev[size_t(i) + 1]);
      ms.push_back(t);
    }
  }
  for (cudaEvent_t e : ev) {
    if (e) (void)cudaEventDestroy(e);
  }
  if (!err.empty()) return zoc::Error{err};
  float total = 0;
  for (float t : ms) total += t;
  std::sort(ms.begin(), ms.end());
  return std::make_pair(ms[ms.size() / 2], total / float(ms.size()));
}

}  // namespace probe
