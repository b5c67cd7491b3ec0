// The layers of the CNN zoo that cuDNN has no call for (issue 20), as plain CUDA kernels over
// the model's storage type (float, __half, __nv_bfloat16), computing in float and rounding
// once, in either activation layout (NCHW, or NHWC where the precision stores it):
//   channel_mul      y = x * s[c], s per sample ([N, C]: squeeze-and-excitation) or one vector
//                    for every sample ([C]: ConvNeXt's layer scale), or y = a * b elementwise;
//   layernorm        over the channels at every pixel (ConvNeXt's LayerNorm2d), gamma and beta
//                    fp32, PyTorch's arithmetic (biased variance, eps inside the square root);
//   channel_shuffle  ShuffleNetV2's: output channel j*g + i is input channel i*(C/g) + j;
//   pool             max or average pooling with every PyTorch edge rule cuDNN lacks (ceil_mode
//                    windows hanging over the padded input, dilation, both avg divisors);
//   adaptive_avgpool PyTorch's bins: [floor(i*H/oh), ceil((i+1)*H/oh)), for sizes that do not
//                    divide the input.
// Each output element is one thread of a grid-stride loop with 64-bit indices (layernorm: one
// thread per pixel). The formulas are the reference interpreter's (compiler/backend/reference),
// the oracle these are checked against on the GPU. Included by the generated .cu file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernels.cuh"
#include "zoc/kernels/model_kernels.h"

namespace zoc::kernels {

// Where element i of an [n, c, hw] tensor (NCHW) or [n, hw, c] tensor (NHWC) lies: its sample,
// channel and pixel.
struct Index {
  int64_t s, c, p;
};
__device__ inline Index index_of(int64_t i, int64_t c, int64_t hw, bool nhwc) {
  if (nhwc) return {i / (hw * c), i % c, (i / c) % hw};
  return {i / (hw * c), (i / hw) % c, i % hw};
}
__device__ inline int64_t offset_of(int64_t s, int64_t ch, int64_t p, int64_t c, int64_t hw,
                                    bool nhwc) {
  return nhwc ? (s * hw + p) * c + ch : (s * c + ch) * hw + p;
}

template <class T, class S>
__global__ void channel_mul_kernel(const T* x, const S* s, T* y, int64_t count, ChannelMulShape m) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    float f;
    if (m.elementwise) {
      f = to_float(s[i]);
    } else {
      const Index at = index_of(i, m.c, m.hw, m.nhwc);
      f = to_float(s[m.per_sample ? at.s * m.c + at.c : at.c]);
    }
    y[i] = from_float<T>(to_float(x[i]) * f);
  }
}

// The per-channel scale (squeeze-and-excitation's gate, layer scale) V elements at a time:
// blockIdx.y is the sample, and within it vector j covers channels k..k+V-1 of one pixel (NHWC,
// c % V == 0) or V pixels of channel k (NCHW, hw % V == 0), found with 32-bit arithmetic. The
// general kernel above spends two 64-bit divisions per element and ran EfficientNet-B0's gates
// at ~1.15 TB/s (24% of its time at batch 256 fp16).
template <class T, class S, int V>
__global__ void channel_mul_vec_kernel(const T* x, const S* s, T* y, int n, ChannelMulShape m) {
  const int per_sample = static_cast<int>(m.c * m.hw / V);
  const int c = static_cast<int>(m.c), row = static_cast<int>(m.nhwc ? m.c : m.hw) / V;
  for (int b = static_cast<int>(blockIdx.y); b < n; b += static_cast<int>(gridDim.y)) {
    const int64_t base = static_cast<int64_t>(b) * m.c * m.hw;
    const S* gate = s + (m.per_sample ? static_cast<int64_t>(b) * c : 0);
    for (int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); j < per_sample;
         j += static_cast<int>(gridDim.x * blockDim.x)) {
      const Vec<T, V> in = reinterpret_cast<const Vec<T, V>*>(x + base)[j];
      Vec<T, V> out;
      if (m.nhwc) {
        const int k = (j % row) * V;
#pragma unroll
        for (int e = 0; e < V; ++e)
          out.v[e] = from_float<T>(to_float(in.v[e]) * to_float(gate[k + e]));
      } else {
        const float f = to_float(gate[j / row]);
#pragma unroll
        for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(to_float(in.v[e]) * f);
      }
      reinterpret_cast<Vec<T, V>*>(y + base)[j] = out;
    }
  }
}

namespace detail {

template <class T, class S, int V>
cudaError_t launch_channel_mul_vec(const T* x, const S* s, T* y, int64_t n, ChannelMulShape m,
                                   cudaStream_t stream) {
  const int64_t per_sample = m.c * m.hw / V;
  const int64_t blocks = (per_sample + kBlock - 1) / kBlock;
  const dim3 grid(static_cast<unsigned>(blocks < 4096 ? blocks : 4096),
                  static_cast<unsigned>(n < 65535 ? n : 65535));
  channel_mul_vec_kernel<T, S, V><<<grid, kBlock, 0, stream>>>(x, s, y, static_cast<int>(n), m);
  return launched();
}

}  // namespace detail

template <class T, class S>
cudaError_t launch_channel_mul(const T* x, const S* s, T* y, int64_t count, ChannelMulShape m,
                               cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  // 16-byte vectors where each stays inside one row of equal scales (or one pixel's channels)
  // and both tensors are aligned to it; the general kernel otherwise.
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const int64_t per_sample = m.c * m.hw, row = m.nhwc ? m.c : m.hw;
  if (!m.elementwise && per_sample > 0 && count % per_sample == 0 && row % V == 0 &&
      per_sample / V <= INT32_MAX && m.c <= INT32_MAX && count / per_sample <= INT32_MAX &&
      detail::aligned(x, 16) && detail::aligned(y, 16)) {
    return detail::launch_channel_mul_vec<T, S, V>(x, s, y, count / per_sample, m, stream);
  }
  channel_mul_kernel<T, S>
      <<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, s, y, count, m);
  return detail::launched();
}

// One thread per pixel: mean and variance over its c channels (two passes in float), then
// y = (x - mean) / sqrt(var + eps) * gamma + beta.
template <class T>
__global__ void layernorm_kernel(const T* x, T* y, const float* gamma, const float* beta,
                                 int64_t pixels, int64_t c, int64_t hw, bool nhwc, float eps) {
  for (int64_t q = detail::thread_index(); q < pixels; q += detail::thread_stride()) {
    const int64_t s = q / hw, p = q % hw;
    float mean = 0.0f;
    for (int64_t k = 0; k < c; ++k) mean += to_float(x[offset_of(s, k, p, c, hw, nhwc)]);
    mean /= float(c);
    float var = 0.0f;
    for (int64_t k = 0; k < c; ++k) {
      const float d = to_float(x[offset_of(s, k, p, c, hw, nhwc)]) - mean;
      var += d * d;
    }
    const float inv = rsqrtf(var / float(c) + eps);
    for (int64_t k = 0; k < c; ++k) {
      const int64_t at = offset_of(s, k, p, c, hw, nhwc);
      y[at] = from_float<T>((to_float(x[at]) - mean) * inv * gamma[k] + beta[k]);
    }
  }
}

template <class T>
cudaError_t launch_layernorm(const T* x, T* y, const float* gamma, const float* beta, int64_t n,
                             int64_t c, int64_t hw, bool nhwc, float eps, cudaStream_t stream) {
  if (n < 0 || c < 1 || hw < 1) return cudaErrorInvalidValue;
  const int64_t pixels = n * hw;
  if (pixels == 0) return cudaSuccess;
  layernorm_kernel<T><<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(
      x, y, gamma, beta, pixels, c, hw, nhwc, eps);
  return detail::launched();
}

template <class T>
__global__ void channel_shuffle_kernel(const T* x, T* y, int64_t count, int64_t c, int64_t hw,
                                       int64_t groups, bool nhwc) {
  const int64_t per = c / groups;
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const Index at = index_of(i, c, hw, nhwc);
    const int64_t j = at.c / groups, g = at.c % groups;  // output channel j * groups + g
    y[i] = x[offset_of(at.s, g * per + j, at.p, c, hw, nhwc)];
  }
}

template <class T>
cudaError_t launch_channel_shuffle(const T* x, T* y, int64_t n, int64_t c, int64_t hw,
                                   int64_t groups, bool nhwc, cudaStream_t stream) {
  if (n < 0 || groups < 1 || c % groups != 0) return cudaErrorInvalidValue;
  const int64_t count = n * c * hw;
  if (count == 0) return cudaSuccess;
  channel_shuffle_kernel<T>
      <<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, y, count, c, hw, groups, nhwc);
  return detail::launched();
}

// The window rules of pooling, shared with the trainer's backward (layer_grad_kernels.cuh):
// average pooling's divisor for the window whose first tap is (h0, w0) in input coordinates,
// counting taps inside the padded input (count_include_pad) or inside the input; and adaptive
// pooling's bin of output o along an axis of `in` elements, PyTorch's
// [floor(o * in / out), ceil((o + 1) * in / out)).
__device__ inline int64_t pool_divisor(int64_t h0, int64_t w0, const PoolGeometry& g) {
  int64_t padded_h = 0, padded_w = 0, valid_h = 0, valid_w = 0;
  for (int64_t r = 0; r < g.kh; ++r) {
    const int64_t ih = h0 + r * g.dil_h;
    padded_h += ih >= -g.pad_h && ih < g.h + g.pad_h;
    valid_h += ih >= 0 && ih < g.h;
  }
  for (int64_t q = 0; q < g.kw; ++q) {
    const int64_t iw = w0 + q * g.dil_w;
    padded_w += iw >= -g.pad_w && iw < g.w + g.pad_w;
    valid_w += iw >= 0 && iw < g.w;
  }
  return g.count_include_pad ? padded_h * padded_w : valid_h * valid_w;
}
struct Bin {
  int64_t start, end;
};
__device__ inline Bin adaptive_bin(int64_t o, int64_t in, int64_t out) {
  return {o * in / out, ((o + 1) * in + out - 1) / out};
}

template <class T>
__global__ void pool_kernel(const T* x, T* y, int64_t count, PoolGeometry g) {
  const int64_t ohw = g.out_h * g.out_w, ihw = g.h * g.w;
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const Index at = index_of(i, g.c, ohw, g.nhwc);
    const int64_t h0 = (at.p / g.out_w) * g.stride_h - g.pad_h;
    const int64_t w0 = (at.p % g.out_w) * g.stride_w - g.pad_w;
    float acc = g.max ? -__int_as_float(0x7f800000) : 0.0f;
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = h0 + r * g.dil_h;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t q = 0; q < g.kw; ++q) {
        const int64_t iw = w0 + q * g.dil_w;
        if (iw < 0 || iw >= g.w) continue;
        const float v = to_float(x[offset_of(at.s, at.c, ih * g.w + iw, g.c, ihw, g.nhwc)]);
        if (g.max) {
          if (v > acc || v != v) acc = v;  // a NaN in the window wins, as PyTorch's
        } else {
          acc += v;
        }
      }
    }
    if (!g.max) {
      const int64_t divisor = pool_divisor(h0, w0, g);
      acc = divisor > 0 ? acc / float(divisor) : 0.0f;
    }
    y[i] = from_float<T>(acc);
  }
}

template <class T>
cudaError_t launch_pool(const T* x, T* y, int64_t n, const PoolGeometry& g, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  const int64_t count = n * g.c * g.out_h * g.out_w;
  if (count == 0) return cudaSuccess;
  pool_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, y, count, g);
  return detail::launched();
}

template <class T>
__global__ void adaptive_avgpool_kernel(const T* x, T* y, int64_t count, AdaptiveGeometry g) {
  const int64_t ohw = g.out_h * g.out_w, ihw = g.h * g.w;
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const Index at = index_of(i, g.c, ohw, g.nhwc);
    const Bin bh = adaptive_bin(at.p / g.out_w, g.h, g.out_h);
    const Bin bw = adaptive_bin(at.p % g.out_w, g.w, g.out_w);
    float acc = 0.0f;
    for (int64_t ih = bh.start; ih < bh.end; ++ih) {
      for (int64_t iw = bw.start; iw < bw.end; ++iw) {
        acc += to_float(x[offset_of(at.s, at.c, ih * g.w + iw, g.c, ihw, g.nhwc)]);
      }
    }
    y[i] = from_float<T>(acc / float((bh.end - bh.start) * (bw.end - bw.start)));
  }
}

template <class T>
cudaError_t launch_adaptive_avgpool(const T* x, T* y, int64_t n, const AdaptiveGeometry& g,
                                    cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  const int64_t count = n * g.c * g.out_h * g.out_w;
  if (count == 0) return cudaSuccess;
  // To 1x1 in NHWC: the global pool's kernel (zoc/kernels/kernels.cuh), whose blocks split the
  // map's pixels; this one gives each output element one thread that walks its whole bin.
  if (g.nhwc && g.out_h == 1 && g.out_w == 1 && n <= INT32_MAX && g.h * g.w <= INT32_MAX &&
      g.c <= INT32_MAX) {
    return launch_global_avgpool_nhwc<T>(x, y, static_cast<int>(n), static_cast<int>(g.h * g.w),
                                         static_cast<int>(g.c), stream);
  }
  adaptive_avgpool_kernel<T>
      <<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, y, count, g);
  return detail::launched();
}

}  // namespace zoc::kernels
