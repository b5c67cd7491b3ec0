// The few custom CUDA kernels generated models need between their cuDNN and cuBLAS calls.
//
// cuDNN and cuBLAS do the heavy layers; what is left is glue whose library forms are either
// missing or slow: converting the caller's fp32 NCHW input to the model's NHWC layout and
// precision (zero-padding channels so the first convolution gets Tensor-Core-friendly counts),
// converting the fp16/bf16 logits back to fp32, pre-filling a GEMM output with its bias, a
// residual add with optional ReLU where no fused convolution absorbed it, and a memory-bound
// NHWC global average pool (cuDNN's NHWC pooling was measured slow, see DESIGN.md). Every kernel
// is a template over the storage type (float, __half, __nv_bfloat16) computing in float, uses a
// grid-stride loop with 64-bit indices (batch 256 activations pass 2^31 elements), and has a
// host launcher that takes a stream, launches nothing for empty work, and returns the launch
// status from cudaGetLastError(). Included by the generated .cu file only (nvcc, C++17).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/math/activations.h"

namespace zoc::kernels {

// Storage <-> compute conversions, round-to-nearest-even like PyTorch's .half()/.bfloat16().
// Host and device, so tests compute their references with the same rounding.
__host__ __device__ inline float to_float(float x) { return x; }
__host__ __device__ inline float to_float(__half x) { return __half2float(x); }
__host__ __device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__host__ __device__ inline T from_float(float x);
template <>
__host__ __device__ inline float from_float<float>(float x) {
  return x;
}
template <>
__host__ __device__ inline __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__host__ __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

namespace detail {

constexpr int kBlock = 256;
// Enough blocks to fill any current GPU many times over; the grid-stride loops do the rest.
constexpr int64_t kMaxBlocks = 65535;

inline unsigned grid_for(int64_t threads) {
  int64_t blocks = (threads + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__device__ inline int64_t thread_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t thread_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// A launch with an invalid configuration is reported by cudaGetLastError, as is an error left
// by an earlier asynchronous failure; either way the caller names the layer.
inline cudaError_t launched() { return cudaGetLastError(); }

}  // namespace detail

// --- layout and precision conversion ---------------------------------------------------------

// out[n, y, x, k] = in[n, k, y, x] for k < c, 0 for c <= k < c_padded. One thread per output
// element, so the writes are coalesced; the reads are strided by h*w, which is cheap for the
// 1-4 channels of an image input.
template <class T>
__global__ void nchw_to_nhwc_kernel(const float* in, T* out, int64_t total, int64_t hw, int c,
                                    int c_padded) {
  for (int64_t i = detail::thread_index(); i < total; i += detail::thread_stride()) {
    const int k = static_cast<int>(i % c_padded);
    const int64_t pixel = i / c_padded;  // n * hw + (y * w + x)
    const int64_t n = pixel / hw, p = pixel % hw;
    out[i] = k < c ? from_float<T>(in[(n * c + k) * hw + p]) : from_float<T>(0.0f);
  }
}

template <class T>
cudaError_t launch_nchw_to_nhwc(const float* in_nchw, T* out_nhwc, int n, int c, int h, int w,
                                int c_padded, cudaStream_t stream) {
  if (n < 0 || c < 1 || h < 0 || w < 0 || c_padded < c) return cudaErrorInvalidValue;
  const int64_t hw = static_cast<int64_t>(h) * w;
  const int64_t total = static_cast<int64_t>(n) * hw * c_padded;
  if (total == 0) return cudaSuccess;
  nchw_to_nhwc_kernel<T><<<detail::grid_for(total), detail::kBlock, 0, stream>>>(
      in_nchw, out_nhwc, total, hw, c, c_padded);
  return detail::launched();
}

template <class T>
__global__ void to_float_kernel(const T* in, float* out, int64_t count) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    out[i] = to_float(in[i]);
  }
}

template <class T>
cudaError_t launch_to_float(const T* in, float* out, int64_t count, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  to_float_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(in, out, count);
  return detail::launched();
}

template <class T>
__global__ void from_float_kernel(const float* in, T* out, int64_t count) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    out[i] = from_float<T>(in[i]);
  }
}

template <class T>
cudaError_t launch_from_float(const float* in, T* out, int64_t count, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  from_float_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(in, out, count);
  return detail::launched();
}

// --- elementwise -----------------------------------------------------------------------------

// y[r, k] = bias[k]: pre-fills a row-major [rows, cols] GEMM output so that a beta = 1 GEMM
// adds the bias for free.
template <class T>
__global__ void bias_rows_kernel(T* y, const T* bias, int64_t total, int cols) {
  for (int64_t i = detail::thread_index(); i < total; i += detail::thread_stride()) {
    y[i] = bias[i % cols];
  }
}

template <class T>
cudaError_t launch_bias_rows(T* y, const T* bias, int rows, int cols, cudaStream_t stream) {
  if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
  const int64_t total = static_cast<int64_t>(rows) * cols;
  if (total == 0) return cudaSuccess;
  bias_rows_kernel<T><<<detail::grid_for(total), detail::kBlock, 0, stream>>>(y, bias, total, cols);
  return detail::launched();
}

// y = a + b, then max(0, y) if relu; computed in float and rounded once, as PyTorch does for
// half types. y may alias a or b (an in-place residual add).
template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t count, bool relu) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    float v = to_float(a[i]) + to_float(b[i]);
    if (relu) v = v < 0.0f ? 0.0f : v;  // keeps NaN, as PyTorch does, so poisoned values show
    y[i] = from_float<T>(v);
  }
}

template <class T>
cudaError_t launch_add(const T* a, const T* b, T* y, int64_t count, bool relu,
                       cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  add_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(a, b, y, count, relu);
  return detail::launched();
}

// y = f(x) for an activation of zoc/math/activations.h (the formulas the reference interpreter
// and the trainers run), computed in float and rounded once.
template <class T, class Math>
__global__ void activation_kernel(const T* x, T* y, int64_t count, act::Params p) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    y[i] = from_float<T>(Math::forward(to_float(x[i]), p));
  }
}

template <class T>
cudaError_t launch_activation(act::Kind kind, act::Params p, const T* x, T* y, int64_t count,
                              cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  switch (kind) {
#define ZOC_LAUNCH_ACTIVATION(name)                                                         \
  case act::Kind::k##name:                                                                  \
    activation_kernel<T, act::name><<<detail::grid_for(count), detail::kBlock, 0, stream>>>( \
        x, y, count, p);                                                                    \
    break;
    ZOC_ACTIVATION_LIST(ZOC_LAUNCH_ACTIVATION)
#undef ZOC_LAUNCH_ACTIVATION
  }
  return detail::launched();
}

// --- global average pooling ------------------------------------------------------------------

// V consecutive channels loaded and stored as one aligned vector (16 bytes at most).
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// y[n, k] = mean over p of x[n, p, k] for x: [n, hw, c] (NHWC). One thread per (n, group of V
// channels): neighbouring threads read neighbouring channels, so every load is coalesced, and
// the per-thread sum over hw runs in float.
template <class T, int V>
__global__ void global_avgpool_nhwc_kernel(const T* x, T* y, int64_t groups, int hw, int c) {
  const int groups_per_image = c / V;
  const float scale = 1.0f / static_cast<float>(hw);
  for (int64_t g = detail::thread_index(); g < groups; g += detail::thread_stride()) {
    const int64_t n = g / groups_per_image;
    const int k = static_cast<int>(g % groups_per_image) * V;
    const T* src = x + n * hw * c + k;
    float sum[V];
#pragma unroll
    for (int j = 0; j < V; ++j) sum[j] = 0.0f;
#pragma unroll 8  // independent loads in flight: at batch 1 this kernel is latency-bound
    for (int p = 0; p < hw; ++p) {
      const Vec<T, V> in = *reinterpret_cast<const Vec<T, V>*>(src + static_cast<int64_t>(p) * c);
#pragma unroll
      for (int j = 0; j < V; ++j) sum[j] += to_float(in.v[j]);
    }
    Vec<T, V> out;
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[j] = from_float<T>(sum[j] * scale);
    *reinterpret_cast<Vec<T, V>*>(y + n * c + k) = out;
  }
}

namespace detail {

template <class T, int V>
cudaError_t launch_avgpool(const T* x, T* y, int n, int hw, int c, cudaStream_t stream) {
  const int64_t groups = static_cast<int64_t>(n) * (c / V);
  global_avgpool_nhwc_kernel<T, V><<<grid_for(groups), kBlock, 0, stream>>>(x, y, groups, hw, c);
  return launched();
}

inline bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace detail

template <class T>
cudaError_t launch_global_avgpool_nhwc(const T* x, T* y, int n, int hw, int c,
                                       cudaStream_t stream) {
  if (n < 0 || hw < 1 || c < 0) return cudaErrorInvalidValue;
  if (static_cast<int64_t>(n) * c == 0) return cudaSuccess;
  // The widest vector (16 bytes) that divides c and the pointers' alignment; narrower while
  // that would leave too few threads to hide memory latency (batch 1: 2048 channels).
  constexpr int kWidest = static_cast<int>(16 / sizeof(T));
  int v = kWidest;
  while (v > 1 && (c % v != 0 || !detail::aligned(x, sizeof(T) * v) ||
                   !detail::aligned(y, sizeof(T) * v) || static_cast<int64_t>(n) * c / v < 8192)) {
    v /= 2;
  }
  switch (v) {
    case 8:
      return detail::launch_avgpool<T, (kWidest >= 8 ? 8 : 1)>(x, y, n, hw, c, stream);
    case 4:
      return detail::launch_avgpool<T, 4>(x, y, n, hw, c, stream);
    case 2:
      return detail::launch_avgpool<T, 2>(x, y, n, hw, c, stream);
    default:
      return detail::launch_avgpool<T, 1>(x, y, n, hw, c, stream);
  }
}

}  // namespace zoc::kernels
