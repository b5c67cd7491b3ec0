// The kernels of dense-prediction models (issue 37). Upsampling for their decoders: PyTorch's
// upsample_nearest2d and upsample_bilinear2d over the model's storage type (float, __half,
// __nv_bfloat16), NCHW or NHWC. A source index one off is a wrong pixel, not a rounding
// difference, so the index arithmetic is the reference interpreter's
// (compiler/backend/reference/resample.cpp, ATen/native/UpSample.h): the ratio is a float,
// 1 / scale_factor when the layer gave one and in / out otherwise; nearest floors i * ratio in
// float; bilinear computes its source coordinate in double from the float ratio and rounds its
// weights to float, then interpolates in float and rounds once to the storage type. One thread
// per output element (grid-stride, 64-bit indices). Softmax and log-softmax over the channels of
// an image (class probabilities per pixel), one thread per pixel in float, as the reference
// interpreter's passes. The outputs of such models: several outputs, or an image stored NHWC,
// written to the caller's fp32 NCHW rows. Included by the generated .cu file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/layer_kernels.cuh"

namespace zoc::kernels {
namespace resample {

// compute_scales_value<float>: 1 / scale if the layer gave one, else in / out.
__device__ inline float ratio(double scale, int64_t in, int64_t out) {
  return scale > 0 ? static_cast<float>(1.0 / scale)
                   : static_cast<float>(in) / static_cast<float>(out);
}

// nearest_neighbor_compute_source_index; `direct`: the channels-last kernel's out = in and
// out = 2 * in shortcuts.
__device__ inline int64_t nearest(int64_t i, int64_t in, int64_t out, double scale, bool direct) {
  if (direct && out == in) return i;
  if (direct && out == 2 * in) return i >> 1;
  const int64_t k = static_cast<int64_t>(floorf(static_cast<float>(i) * ratio(scale, in, out)));
  return k < in - 1 ? k : in - 1;
}

// One axis of bilinear interpolation: two source indices and their weights.
struct Tap {
  int64_t i0, i1;
  float l0, l1;
};

// area_pixel_compute_scale<float> and compute_source_index_and_lambda<float>.
__device__ inline Tap linear(int64_t i, int64_t in, int64_t out, bool align_corners,
                             double scale) {
  if (out == in) return {i, i, 1.0f, 0.0f};
  float r = 0.0f;
  if (align_corners) {
    r = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  } else {
    r = ratio(scale, in, out);
  }
  const double rd = r;
  double real = align_corners ? rd * static_cast<double>(i)
                              : rd * (static_cast<double>(i) + 0.5) - 0.5;
  if (!align_corners && real < 0) real = 0;
  const auto i0 = static_cast<int64_t>(real);
  const float l1 = static_cast<float>(real - static_cast<double>(i0));
  return {i0, i0 + (i0 < in - 1 ? 1 : 0), 1.0f - l1, l1};
}

}  // namespace resample

template <class T>
__global__ void upsample_kernel(const T* x, T* y, int64_t count, UpsampleGeometry g) {
  const int64_t ohw = g.out_h * g.out_w, ihw = g.h * g.w;
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const Index at = index_of(i, g.c, ohw, g.nhwc);
    const int64_t oy = at.p / g.out_w, ox = at.p % g.out_w;
    auto in = [&](int64_t r, int64_t q) {
      return to_float(x[offset_of(at.s, at.c, r * g.w + q, g.c, ihw, g.nhwc)]);
    };
    if (!g.bilinear) {
      const int64_t r = resample::nearest(oy, g.h, g.out_h, g.scale_h, g.direct);
      const int64_t q = resample::nearest(ox, g.w, g.out_w, g.scale_w, g.direct);
      y[i] = x[offset_of(at.s, at.c, r * g.w + q, g.c, ihw, g.nhwc)];
      continue;
    }
    const resample::Tap r = resample::linear(oy, g.h, g.out_h, g.align_corners, g.scale_h);
    const resample::Tap q = resample::linear(ox, g.w, g.out_w, g.align_corners, g.scale_w);
    const float top = q.l0 * in(r.i0, q.i0) + q.l1 * in(r.i0, q.i1);
    const float bottom = q.l0 * in(r.i1, q.i0) + q.l1 * in(r.i1, q.i1);
    y[i] = from_float<T>(r.l0 * top + r.l1 * bottom);
  }
}

template <class T>
cudaError_t launch_upsample(const T* x, T* y, int64_t n, UpsampleGeometry g,
                            cudaStream_t stream) {
  if (n < 0 || g.c < 1 || g.h < 1 || g.w < 1 || g.out_h < 1 || g.out_w < 1) {
    return cudaErrorInvalidValue;
  }
  const int64_t count = n * g.c * g.out_h * g.out_w;
  if (count == 0) return cudaSuccess;
  upsample_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, y, count, g);
  return detail::launched();
}

// One thread per pixel: the largest logit, the sum of exp(x - max), then each channel.
template <class T>
__global__ void channel_softmax_kernel(const T* x, T* y, int64_t pixels, int64_t c, int64_t hw,
                                       bool nhwc, bool log) {
  for (int64_t q = detail::thread_index(); q < pixels; q += detail::thread_stride()) {
    const int64_t s = q / hw, p = q % hw;
    float m = to_float(x[offset_of(s, 0, p, c, hw, nhwc)]);
    for (int64_t k = 1; k < c; ++k) m = fmaxf(m, to_float(x[offset_of(s, k, p, c, hw, nhwc)]));
    float sum = 0.0f;
    for (int64_t k = 0; k < c; ++k) sum += expf(to_float(x[offset_of(s, k, p, c, hw, nhwc)]) - m);
    const float log_sum = logf(sum);
    for (int64_t k = 0; k < c; ++k) {
      const int64_t at = offset_of(s, k, p, c, hw, nhwc);
      const float z = to_float(x[at]) - m;
      y[at] = from_float<T>(log ? z - log_sum : expf(z) / sum);
    }
  }
}

template <class T>
cudaError_t launch_channel_softmax(const T* x, T* y, int64_t n, int64_t c, int64_t hw, bool nhwc,
                                   bool log, cudaStream_t stream) {
  if (n < 0 || c < 1 || hw < 1) return cudaErrorInvalidValue;
  const int64_t pixels = n * hw;
  if (pixels == 0) return cudaSuccess;
  channel_softmax_kernel<T><<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(
      x, y, pixels, c, hw, nhwc, log);
  return detail::launched();
}

// out[s * pitch + offset + j] = y's value j of sample s in NCHW order (read NHWC where nhwc).
template <class T>
__global__ void output_to_caller_kernel(const T* y, float* out, int64_t count, OutputGeometry g) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const int64_t s = i / g.per_sample, j = i % g.per_sample;
    const int64_t from = g.nhwc ? s * g.per_sample + (j % g.hw) * g.c + j / g.hw : i;
    out[s * g.pitch + g.offset + j] = to_float(y[from]);
  }
}

template <class T>
cudaError_t launch_output_to_caller(const T* y, float* out, int64_t n, OutputGeometry g,
                                    cudaStream_t stream) {
  if (n < 0 || g.per_sample < 1 || g.c * g.hw != g.per_sample || g.pitch < g.per_sample) {
    return cudaErrorInvalidValue;
  }
  const int64_t count = n * g.per_sample;
  if (count == 0) return cudaSuccess;
  output_to_caller_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(y, out,
                                                                                    count, g);
  return detail::launched();
}

}  // namespace zoc::kernels
