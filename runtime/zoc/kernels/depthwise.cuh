// Depthwise convolution (groups = input channels = output channels) as zoc's own kernel, with
// the conv's epilogue fused: y = act(conv(x, w) + b [+ z]).
//
// Why not cuDNN: its grouped convolutions run through the legacy fused call at ~105 GB/s on an
// H100 in fp16 NHWC, 83% of MobileNetV2's and 76% of EfficientNet-B0's time at batch 256
// (results/2026-11-24-h100-harness-zoo); the layer reads each input pixel kh*kw times from cache
// and does 2*kh*kw flops per output, so it is memory-bound and a direct kernel can stream it.
//
// NHWC: one thread per output pixel and V consecutive channels (a 16-byte vector where the
// channel count and the pointers allow), so a warp's loads of one filter tap are contiguous;
// the filter is packed tap-major ([kh, kw, C]: zoc/weights/pack.h's taps_major) for the same
// reason. NCHW (fp32): one thread per output element, filter [C, kh, kw]. Products accumulate
// in float in tap order, starting from the bias; the residual is added, then the activation
// (any of zoc/math/activations.h, or none), then one rounding to the storage type. 32-bit
// indices where the output has fewer than 2^31 elements, else 64-bit. Included by the
// generated .cu file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernels.cuh"
#include "zoc/kernels/model_kernels.h"

namespace zoc::kernels {
namespace depthwise {

// act(v) for the layer's activation; a branch uniform across the grid.
__device__ inline float activate(float v, const DepthwiseGeometry& g) {
  if (!g.activation) return v;
  switch (g.kind) {
#define ZOC_DEPTHWISE_ACTIVATION(name) \
  case act::Kind::k##name:             \
    return act::name::forward(v, g.params);
    ZOC_ACTIVATION_LIST(ZOC_DEPTHWISE_ACTIVATION)
#undef ZOC_DEPTHWISE_ACTIVATION
  }
  return v;
}

// KH, KW: the filter size when known at compile time (the loops unroll), else 0.
template <class T, int V, int KH, int KW, class I>
__global__ void nhwc_kernel(const T* __restrict__ x, const T* __restrict__ w,
                            const T* __restrict__ b, const T* __restrict__ z, T* __restrict__ y,
                            I count, DepthwiseGeometry g) {
  const int kh = KH ? KH : static_cast<int>(g.kh), kw = KW ? KW : static_cast<int>(g.kw);
  const I groups = static_cast<I>(g.c / V);
  const I out_w = static_cast<I>(g.out_w), out_h = static_cast<I>(g.out_h);
  const int h = static_cast<int>(g.h), wd = static_cast<int>(g.w);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I q = i % groups;
    I pixel = i / groups;
    const int ow = static_cast<int>(pixel % out_w);
    pixel /= out_w;
    const int oh = static_cast<int>(pixel % out_h);
    const int64_t sample = static_cast<int64_t>(pixel / out_h);
    const int64_t c0 = static_cast<int64_t>(q) * V;
    float acc[V] = {};
    if (b) {  // a trainer's convolution has none
      const Vec<T, V> bias = *reinterpret_cast<const Vec<T, V>*>(b + c0);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] = to_float(bias.v[j]);
    }
    const T* image = x + sample * h * wd * g.c + c0;
    const int h0 = oh * static_cast<int>(g.stride_h) - static_cast<int>(g.pad_h);
    const int w0 = ow * static_cast<int>(g.stride_w) - static_cast<int>(g.pad_w);
#pragma unroll
    for (int r = 0; r < kh; ++r) {
      const int ih = h0 + r * static_cast<int>(g.dil_h);
      if (ih < 0 || ih >= h) continue;
#pragma unroll
      for (int t = 0; t < kw; ++t) {
        const int iw = w0 + t * static_cast<int>(g.dil_w);
        if (iw < 0 || iw >= wd) continue;
        const Vec<T, V> in =
            *reinterpret_cast<const Vec<T, V>*>(image + (static_cast<int64_t>(ih) * wd + iw) * g.c);
        const Vec<T, V> tap =
            *reinterpret_cast<const Vec<T, V>*>(w + static_cast<int64_t>(r * kw + t) * g.c + c0);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] += to_float(in.v[j]) * to_float(tap.v[j]);
      }
    }
    const int64_t at = static_cast<int64_t>(i) * V;  // NHWC: the output's own element order
    if (z) {
      const Vec<T, V> res = *reinterpret_cast<const Vec<T, V>*>(z + at);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] += to_float(res.v[j]);
    }
    Vec<T, V> out;
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[j] = from_float<T>(activate(acc[j], g));
    *reinterpret_cast<Vec<T, V>*>(y + at) = out;
  }
}

template <class T>
__global__ void nchw_kernel(const T* __restrict__ x, const T* __restrict__ w,
                            const T* __restrict__ b, const T* __restrict__ z, T* __restrict__ y,
                            int64_t count, DepthwiseGeometry g) {
  const int64_t ohw = g.out_h * g.out_w, taps = g.kh * g.kw;
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const int64_t plane = i / ohw, p = i % ohw, ch = plane % g.c;
    const int64_t h0 = (p / g.out_w) * g.stride_h - g.pad_h,
                  w0 = (p % g.out_w) * g.stride_w - g.pad_w;
    const T* image = x + plane * g.h * g.w;
    const T* filter = w + ch * taps;
    float acc = b ? to_float(b[ch]) : 0.0f;
    for (int64_t r = 0; r < g.kh; ++r) {
      const int64_t ih = h0 + r * g.dil_h;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t t = 0; t < g.kw; ++t) {
        const int64_t iw = w0 + t * g.dil_w;
        if (iw < 0 || iw >= g.w) continue;
        acc += to_float(image[ih * g.w + iw]) * to_float(filter[r * g.kw + t]);
      }
    }
    if (z) acc += to_float(z[i]);
    y[i] = from_float<T>(activate(acc, g));
  }
}

template <class T, int V, int KH, int KW, class I>
cudaError_t launch_nhwc(const T* x, const T* w, const T* b, const T* z, T* y, int64_t count,
                        const DepthwiseGeometry& g, cudaStream_t stream) {
  nhwc_kernel<T, V, KH, KW, I><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(
      x, w, b, z, y, static_cast<I>(count), g);
  return detail::launched();
}

// The filter sizes MobileNet/EfficientNet (3, 5) and ConvNeXt (7) use unroll; others loop.
template <class T, int V, class I>
cudaError_t launch_sized(const T* x, const T* w, const T* b, const T* z, T* y, int64_t count,
                         const DepthwiseGeometry& g, cudaStream_t stream) {
  if (g.kh == g.kw && g.kh == 3) return launch_nhwc<T, V, 3, 3, I>(x, w, b, z, y, count, g, stream);
  if (g.kh == g.kw && g.kh == 5) return launch_nhwc<T, V, 5, 5, I>(x, w, b, z, y, count, g, stream);
  if (g.kh == g.kw && g.kh == 7) return launch_nhwc<T, V, 7, 7, I>(x, w, b, z, y, count, g, stream);
  return launch_nhwc<T, V, 0, 0, I>(x, w, b, z, y, count, g, stream);
}

}  // namespace depthwise

// y = act(depthwise_conv(x, w) [+ b] [+ z]) for n samples; b and z may be null.
template <class T>
cudaError_t launch_depthwise(const T* x, const T* w, const T* b, const T* z, T* y, int64_t n,
                             DepthwiseGeometry g, cudaStream_t stream) {
  if (n < 0 || g.c < 1 || g.kh < 1 || g.kw < 1 || g.stride_h < 1 || g.stride_w < 1 || g.dil_h < 1 ||
      g.dil_w < 1) {
    return cudaErrorInvalidValue;
  }
  const int64_t elements = n * g.c * g.out_h * g.out_w;
  if (elements == 0) return cudaSuccess;
  if (!g.nhwc) {
    depthwise::nchw_kernel<T>
        <<<detail::grid_for(elements), detail::kBlock, 0, stream>>>(x, w, b, z, y, elements, g);
    return detail::launched();
  }
  // The widest vector (16 bytes at most) that divides the channels and every pointer.
  constexpr int kWidest = static_cast<int>(16 / sizeof(T));
  int v = kWidest;
  const auto fits = [&](int width) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(width);
    return g.c % width == 0 && detail::aligned(x, bytes) && detail::aligned(w, bytes) &&
           detail::aligned(b, bytes) && detail::aligned(y, bytes) &&
           (z == nullptr || detail::aligned(z, bytes));
  };
  while (v > 1 && !fits(v)) v = v > 2 ? 2 : 1;
  // 32-bit indices while every element index of the input and output fits.
  const bool narrow = elements < (int64_t(1) << 31) && n * g.c * g.h * g.w < (int64_t(1) << 31);
  if (!narrow)
    return depthwise::launch_nhwc<T, 1, 0, 0, int64_t>(x, w, b, z, y, elements, g, stream);
  if (v == kWidest) {
    return depthwise::launch_sized<T, kWidest, uint32_t>(x, w, b, z, y, elements / v, g, stream);
  }
  if (v == 2)
    return depthwise::launch_sized<T, 2, uint32_t>(x, w, b, z, y, elements / 2, g, stream);
  return depthwise::launch_sized<T, 1, uint32_t>(x, w, b, z, y, elements, g, stream);
}

}  // namespace zoc::kernels
