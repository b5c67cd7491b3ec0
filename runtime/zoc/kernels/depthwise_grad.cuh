// A depthwise convolution's gradients in NHWC, for the mixed-precision trainer: the forward is
// inference's kernel (zoc/kernels/depthwise.cuh), these are its backward.
//
// Why not cuDNN: its grouped convolutions took 48% of MobileNetV2's bf16 training step on an
// H200 (results/2026-11-30-h200-train-amp-baselines/bf16_kernel_times.txt), in forward,
// backward-data and backward-filter alike. The layer is memory-bound; these kernels stream it.
//
//   dx[n, i, j, c] = sum over the taps (r, t) whose output pixel (oh, ow) exists, with
//                    oh * stride_h = i + pad_h - r * dil_h (and the same for ow), of
//                    dy[n, oh, ow, c] * w[r, t, c]                     (one thread per input
//                    pixel and V channels; overwritten)
//   dw[c][r][t]    = sum over n, oh, ow of x[n, oh * stride_h - pad_h + r * dil_h, ..., c] *
//                    dy[n, oh, ow, c]                                  (float, PyTorch's [C, 1,
//                    kh, kw] layout; zeroed, then each block adds its partial sums atomically,
//                    so the order of the additions, and the last bits, vary between runs)
//
// The filter w is tap-major ([kh, kw, C], as the forward reads it); products accumulate in
// float; dx is rounded once to the storage type. Filter sizes 3, 5 and 7 (square) only: the
// emitter gives other shapes to cuDNN (trains_own_depthwise). 32-bit indices: at a batch where
// an element index would not fit (trainer_kernels::depthwise_fits), the trainer runs the layer
// through cuDNN (zoc/train_layers/steps.h's TrainDescribe::depthwise). Included by a trainer's
// generated _train_kernels.cu only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/depthwise.cuh"
#include "zoc/kernels/trainer_kernels.h"  // depthwise_fits

namespace zoc::kernels {
namespace depthwise_grad {

template <class T, int V, int K>
__global__ void data_kernel(const T* __restrict__ dy, const T* __restrict__ w, T* __restrict__ dx,
                            uint32_t count, DepthwiseGeometry g) {
  const uint32_t groups = static_cast<uint32_t>(g.c / V);
  const int h = static_cast<int>(g.h), wd = static_cast<int>(g.w);
  const int oh_n = static_cast<int>(g.out_h), ow_n = static_cast<int>(g.out_w);
  const int sh = static_cast<int>(g.stride_h), sw = static_cast<int>(g.stride_w);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    const uint32_t q = i % groups;
    uint32_t pixel = i / groups;
    const int iw = static_cast<int>(pixel % static_cast<uint32_t>(wd));
    pixel /= static_cast<uint32_t>(wd);
    const int ih = static_cast<int>(pixel % static_cast<uint32_t>(h));
    const uint32_t sample = pixel / static_cast<uint32_t>(h);
    const uint32_t c0 = q * V;
    const T* grad = dy + sample * static_cast<uint32_t>(oh_n * ow_n) * g.c + c0;
    float acc[V] = {};
#pragma unroll
    for (int r = 0; r < K; ++r) {
      const int th = ih + static_cast<int>(g.pad_h) - r * static_cast<int>(g.dil_h);
      if (th < 0 || th % sh != 0 || th / sh >= oh_n) continue;
#pragma unroll
      for (int t = 0; t < K; ++t) {
        const int tw = iw + static_cast<int>(g.pad_w) - t * static_cast<int>(g.dil_w);
        if (tw < 0 || tw % sw != 0 || tw / sw >= ow_n) continue;
        const Vec<T, V> d = *reinterpret_cast<const Vec<T, V>*>(
            grad + static_cast<uint32_t>((th / sh) * ow_n + tw / sw) * g.c);
        const Vec<T, V> tap = *reinterpret_cast<const Vec<T, V>*>(w + (r * K + t) * g.c + c0);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] += to_float(d.v[j]) * to_float(tap.v[j]);
      }
    }
    Vec<T, V> out;
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[j] = from_float<T>(acc[j]);
    *reinterpret_cast<Vec<T, V>*>(dx + static_cast<uint32_t>(i) * V) = out;
  }
}

// The filter gradient: block (kLanes, kRows); x of the block: kLanes channel vectors, y: a
// share of the output pixels, z: the filter row r. Each thread sums its pixels' products for
// the K taps of row r, the block's rows are summed in shared memory, then added to dw.
constexpr int kLanes = 32, kRows = 8;

template <class T, int V, int K>
__global__ void filter_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                              float* __restrict__ dw, uint32_t pixels, DepthwiseGeometry g) {
  __shared__ float part[kRows][kLanes][V];
  const uint32_t groups = static_cast<uint32_t>(g.c / V);
  const uint32_t q = blockIdx.x * kLanes + threadIdx.x;
  const int r = static_cast<int>(blockIdx.z);
  const int h = static_cast<int>(g.h), wd = static_cast<int>(g.w);
  const uint32_t ow_n = static_cast<uint32_t>(g.out_w), oh_n = static_cast<uint32_t>(g.out_h);
  float acc[K][V] = {};
  if (q < groups) {
    const uint32_t c0 = q * V;
    for (uint32_t p = blockIdx.y * kRows + threadIdx.y; p < pixels; p += gridDim.y * kRows) {
      const int ow = static_cast<int>(p % ow_n);
      const int oh = static_cast<int>((p / ow_n) % oh_n);
      const uint32_t sample = p / (ow_n * oh_n);
      const int ih = oh * static_cast<int>(g.stride_h) - static_cast<int>(g.pad_h) +
                     r * static_cast<int>(g.dil_h);
      if (ih < 0 || ih >= h) continue;
      const Vec<T, V> d = *reinterpret_cast<const Vec<T, V>*>(dy + p * g.c + c0);
      float dv[V];
#pragma unroll
      for (int j = 0; j < V; ++j) dv[j] = to_float(d.v[j]);
      const T* row = x +
                     (sample * static_cast<uint32_t>(h) + static_cast<uint32_t>(ih)) *
                         static_cast<uint32_t>(wd) * g.c +
                     c0;
      const int w0 = ow * static_cast<int>(g.stride_w) - static_cast<int>(g.pad_w);
#pragma unroll
      for (int t = 0; t < K; ++t) {
        const int iw = w0 + t * static_cast<int>(g.dil_w);
        if (iw < 0 || iw >= wd) continue;
        const Vec<T, V> in = *reinterpret_cast<const Vec<T, V>*>(row + iw * g.c);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[t][j] += to_float(in.v[j]) * dv[j];
      }
    }
  }
#pragma unroll
  for (int t = 0; t < K; ++t) {
#pragma unroll
    for (int j = 0; j < V; ++j) part[threadIdx.y][threadIdx.x][j] = acc[t][j];
    __syncthreads();
    if (threadIdx.y == 0 && q < groups) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        float sum = 0.0f;
        for (int k = 0; k < kRows; ++k) sum += part[k][threadIdx.x][j];
        atomicAdd(dw + (q * V + j) * K * K + r * K + t, sum);
      }
    }
    __syncthreads();
  }
}

template <class T, int V, int K>
cudaError_t launch(const T* x, const T* w, const T* dy, T* dx, float* dw, int64_t n,
                   const DepthwiseGeometry& g, bool deterministic, cudaStream_t stream) {
  if (dx) {
    const int64_t count = n * g.h * g.w * g.c / V;
    data_kernel<T, V, K><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(
        dy, w, dx, static_cast<uint32_t>(count), g);
    if (cudaError_t e = detail::launched(); e != cudaSuccess) return e;
  }
  if (!dw) return cudaSuccess;  // a frozen weight
  cudaError_t e = cudaMemsetAsync(dw, 0, sizeof(float) * static_cast<size_t>(g.c * K * K), stream);
  if (e != cudaSuccess) return e;
  const int64_t pixels = n * g.out_h * g.out_w, groups = g.c / V;
  const unsigned gx = static_cast<unsigned>((groups + kLanes - 1) / kLanes);
  // About 1024 blocks in all, each thread summing at least 8 pixels; deterministic: one block
  // for each channel tile and filter row, so that no two blocks add to the same element.
  int64_t gy = 1024 / (int64_t(gx) * K);
  const int64_t most = (pixels + kRows * 8 - 1) / (kRows * 8);
  gy = deterministic || gy < 1 ? 1 : gy > most ? most : gy;
  filter_kernel<T, V, K>
      <<<dim3(gx, static_cast<unsigned>(gy), K), dim3(kLanes, kRows), 0, stream>>>(
          x, dy, dw, static_cast<uint32_t>(pixels), g);
  return detail::launched();
}

template <class T, int V>
cudaError_t launch_sized(const T* x, const T* w, const T* dy, T* dx, float* dw, int64_t n,
                         const DepthwiseGeometry& g, bool det, cudaStream_t stream) {
  if (g.kh == 3) return launch<T, V, 3>(x, w, dy, dx, dw, n, g, det, stream);
  if (g.kh == 5) return launch<T, V, 5>(x, w, dy, dx, dw, n, g, det, stream);
  return launch<T, V, 7>(x, w, dy, dx, dw, n, g, det, stream);
}

}  // namespace depthwise_grad

// dx (may be null: nobody reads it) and dw (float, [C, 1, kh, kw]; null: frozen) of y =
// depthwise_conv(x, w) for n samples in NHWC; w tap-major in the storage type.
template <class T>
cudaError_t launch_depthwise_grad(const T* x, const T* w, const T* dy, T* dx, float* dw, int64_t n,
                                  const DepthwiseGeometry& g, bool deterministic,
                                  cudaStream_t stream) {
  if (n < 1 || !g.nhwc || !trainer_kernels::depthwise_fits(n, g) || g.stride_h < 1 ||
      g.stride_w < 1) {
    return cudaErrorInvalidValue;
  }
  constexpr int kWidest = static_cast<int>(16 / sizeof(T));
  const auto fits = [&](int width) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(width);
    return g.c % width == 0 && detail::aligned(x, bytes) && detail::aligned(w, bytes) &&
           detail::aligned(dy, bytes) && detail::aligned(dx, bytes);
  };
  using depthwise_grad::launch_sized;
  if (fits(kWidest)) return launch_sized<T, kWidest>(x, w, dy, dx, dw, n, g, deterministic, stream);
  if (fits(2)) return launch_sized<T, 2>(x, w, dy, dx, dw, n, g, deterministic, stream);
  return launch_sized<T, 1>(x, w, dy, dx, dw, n, g, deterministic, stream);
}

}  // namespace zoc::kernels

// The trainer's host functions (zoc/kernels/trainer_kernels.h) forward to these.
namespace zoc::train_kernels {

template <class T>
cudaError_t launch_depthwise_forward(const T* x, const T* w, T* y, int64_t n, DepthwiseGeometry g,
                                     cudaStream_t stream) {
  return kernels::launch_depthwise<T>(x, w, nullptr, nullptr, y, n, g, stream);
}
template <class T>
cudaError_t launch_depthwise_backward(const T* x, const T* w, const T* dy, T* dx, float* dw,
                                      int64_t n, DepthwiseGeometry g, bool deterministic,
                                      cudaStream_t stream) {
  return kernels::launch_depthwise_grad<T>(x, w, dy, dx, dw, n, g, deterministic, stream);
}

}  // namespace zoc::train_kernels
