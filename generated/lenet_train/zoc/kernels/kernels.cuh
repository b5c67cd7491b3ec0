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
#define ZOC_LAUNCH_ACTIVATION(name)                                               \
  case act::Kind::k##name:                                                        \
    activation_kernel<T, act::name>                                               \
        <<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, y, count, p); \
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

// y[n, k] = mean over p of x[n, p, k] for x: [n, hw, c] (NHWC). A block per (sample, tile of
// up to kPoolTile groups of V channels): its threads are tx channel groups by ty pixel lanes
// (ty a power of two), every thread sums the pixels p = lane, lane + ty, ... of its channels in
// float, and the block adds the lanes up in shared memory. Splitting the pixels across a block
// is what keeps the memory busy: one thread per channel group summing all hw pixels (the kernel
// before this one) ran EfficientNet-B0's poolings at ~0.8 TB/s at batch 256 (12.6% of its time)
// and 31 us for one 112x112x32 map at batch 1, a single warp's worth of threads. Groups of at
// most 8 vectors (128 bytes per pixel) still read whole cache lines, and give narrow maps more
// blocks. Samples beyond the grid's y limit loop.
constexpr int kPoolTile = 8;
constexpr int kPoolThreads = 1024;

template <class T, int V>
__global__ void global_avgpool_nhwc_kernel(const T* x, T* y, int n, int hw, int c, int tx) {
  extern __shared__ float pool_partial[];  // [ty][tx * V]
  const int ty = static_cast<int>(blockDim.x) / tx;
  const int lane_c = static_cast<int>(threadIdx.x) % tx,
            lane_p = static_cast<int>(threadIdx.x) / tx;
  const int group = static_cast<int>(blockIdx.x) * tx + lane_c;
  const bool active = group * V < c;
  const float scale = 1.0f / static_cast<float>(hw);
  float* mine = pool_partial + (static_cast<int64_t>(lane_p) * tx + lane_c) * V;
  for (int s = static_cast<int>(blockIdx.y); s < n; s += static_cast<int>(gridDim.y)) {
    float sum[V];
#pragma unroll
    for (int j = 0; j < V; ++j) sum[j] = 0.0f;
    if (active) {
      const T* src = x + static_cast<int64_t>(s) * hw * c + static_cast<int64_t>(group) * V;
#pragma unroll 4  // independent loads in flight
      for (int p = lane_p; p < hw; p += ty) {
        const Vec<T, V> in = *reinterpret_cast<const Vec<T, V>*>(src + static_cast<int64_t>(p) * c);
#pragma unroll
        for (int j = 0; j < V; ++j) sum[j] += to_float(in.v[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < V; ++j) mine[j] = sum[j];
    __syncthreads();
    for (int half = ty / 2; half > 0; half /= 2) {
      if (lane_p < half) {
        const float* other = mine + static_cast<int64_t>(half) * tx * V;
#pragma unroll
        for (int j = 0; j < V; ++j) mine[j] += other[j];
      }
      __syncthreads();
    }
    if (lane_p == 0 && active) {
      Vec<T, V> out;
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[j] = from_float<T>(mine[j] * scale);
      *reinterpret_cast<Vec<T, V>*>(y + static_cast<int64_t>(s) * c + group * V) = out;
    }
    __syncthreads();  // the next sample reuses the shared sums
  }
}

namespace detail {

template <class T, int V>
cudaError_t launch_avgpool(const T* x, T* y, int n, int hw, int c, cudaStream_t stream) {
  const int groups = c / V;
  const int tx = groups < kPoolTile ? groups : kPoolTile;
  int ty = 1;  // a power of two; about four pixels or more per thread
  while (ty * 2 * tx <= kPoolThreads && ty * 4 < hw) ty *= 2;
  const dim3 grid(static_cast<unsigned>((groups + tx - 1) / tx),
                  static_cast<unsigned>(n < 65535 ? n : 65535));
  const size_t shared = sizeof(float) * static_cast<size_t>(tx) * ty * V;
  global_avgpool_nhwc_kernel<T, V><<<grid, tx * ty, shared, stream>>>(x, y, n, hw, c, tx);
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
  // The widest vector (16 bytes) that divides c and the pointers' alignment.
  constexpr int kWidest = static_cast<int>(16 / sizeof(T));
  int v = kWidest;
  while (v > 1 &&
         (c % v != 0 || !detail::aligned(x, sizeof(T) * v) || !detail::aligned(y, sizeof(T) * v))) {
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
