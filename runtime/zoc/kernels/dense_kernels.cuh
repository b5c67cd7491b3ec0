// The kernels of dense-prediction models (issue 37). Upsampling for their decoders: PyTorch's
// upsample_nearest2d and upsample_bilinear2d over the model's storage type (float, __half,
// __nv_bfloat16), NCHW or NHWC. A source index one off is a wrong pixel, not a rounding
// difference, so the index arithmetic is the reference interpreter's
// (compiler/backend/reference/resample.cpp, ATen/native/UpSample.h): the ratio is a float,
// 1 / scale_factor when the layer gave one and in / out otherwise; nearest floors i * ratio in
// float; bilinear computes its source coordinate in double from the float ratio and rounds its
// weights to float, then interpolates in float and rounds once to the storage type. The source
// taps are found once per output pixel, not per element (the per-element form spent its time in
// 64-bit divisions: FCN-ResNet50's last upsampling ran at 161 GB/s on an H200, 2026-11-29), and a
// model output is written straight to the caller's fp32 NCHW rows instead of through the arena
// and the output kernel. Softmax and log-softmax over the channels of an image (class
// probabilities per pixel), one thread per pixel in float, as the reference interpreter's
// passes; argmax over them as a model output (the class map). The outputs of such models:
// several outputs, or an image stored NHWC, written to the caller's fp32 NCHW rows. Included by
// the generated .cu file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

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
__device__ inline Tap linear(int64_t i, int64_t in, int64_t out, bool align_corners, double scale) {
  if (out == in) return {i, i, 1.0f, 0.0f};
  float r = 0.0f;
  if (align_corners) {
    r = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  } else {
    r = ratio(scale, in, out);
  }
  const double rd = r;
  double real =
      align_corners ? rd * static_cast<double>(i) : rd * (static_cast<double>(i) + 0.5) - 0.5;
  if (!align_corners && real < 0) real = 0;
  const auto i0 = static_cast<int64_t>(real);
  const float l1 = static_cast<float>(real - static_cast<double>(i0));
  return {i0, i0 + (i0 < in - 1 ? 1 : 0), 1.0f - l1, l1};
}

}  // namespace resample

// Sample s's source element (k, r, q) is xs[tap(r, q) + k * step].
struct SourceAt {
  int64_t w, c, hw;
  bool nhwc;
  __device__ int64_t tap(int64_t r, int64_t q) const { return nhwc ? (r * w + q) * c : r * w + q; }
  __device__ int64_t step() const { return nhwc ? 1 : hw; }
};

// A value of the layer's type T, stored as O: T itself, or the caller's fp32 after rounding to
// T (the same number the layer would have stored and the output copy converted).
template <class T, class O>
__device__ inline O store_as(float v) {
  if constexpr (std::is_same_v<O, float>) {
    return to_float(from_float<T>(v));
  } else {
    return from_float<T>(v);
  }
}

// One thread per output pixel: its source rows and columns are found once, then every channel
// is interpolated, each channel's plane written by consecutive threads. y: the layer's NCHW
// tensor (pitch c * out_h * out_w, offset 0) or, O = float, the caller's fp32 rows (a model
// output written in place: pitch and offset of its columns).
template <class T, class O>
__global__ void upsample_planar_kernel(const T* x, O* y, int64_t pixels, UpsampleGeometry g,
                                       int64_t pitch, int64_t offset) {
  const int64_t ohw = g.out_h * g.out_w;
  const SourceAt src{g.w, g.c, g.h * g.w, g.nhwc};
  for (int64_t i = detail::thread_index(); i < pixels; i += detail::thread_stride()) {
    const int64_t s = i / ohw, p = i - s * ohw;
    const int64_t oy = p / g.out_w, ox = p - oy * g.out_w;
    const T* xs = x + s * g.c * src.hw;
    O* ys = y + s * pitch + offset + p;
    const int64_t step = src.step();
    if (!g.bilinear) {
      const int64_t at = src.tap(resample::nearest(oy, g.h, g.out_h, g.scale_h, g.direct),
                                 resample::nearest(ox, g.w, g.out_w, g.scale_w, g.direct));
      for (int64_t k = 0; k < g.c; ++k) {
        if constexpr (std::is_same_v<O, T>) {
          ys[k * ohw] = xs[at + k * step];
        } else {
          ys[k * ohw] = to_float(xs[at + k * step]);
        }
      }
      continue;
    }
    const resample::Tap r = resample::linear(oy, g.h, g.out_h, g.align_corners, g.scale_h);
    const resample::Tap q = resample::linear(ox, g.w, g.out_w, g.align_corners, g.scale_w);
    const int64_t a = src.tap(r.i0, q.i0), b = src.tap(r.i0, q.i1);
    const int64_t c = src.tap(r.i1, q.i0), d = src.tap(r.i1, q.i1);
    for (int64_t k = 0; k < g.c; ++k) {
      const int64_t o = k * step;
      const float top = q.l0 * to_float(xs[a + o]) + q.l1 * to_float(xs[b + o]);
      const float bottom = q.l0 * to_float(xs[c + o]) + q.l1 * to_float(xs[d + o]);
      ys[k * ohw] = store_as<T, O>(r.l0 * top + r.l1 * bottom);
    }
  }
}

// NHWC in and out: a block finds the source taps of kTile output pixels once (shared memory),
// then its threads write the tile's pixels x channels, consecutive threads consecutive channels.
constexpr int kUpsampleTile = 64;

template <class T>
__global__ void upsample_nhwc_kernel(const T* x, T* y, int64_t pixels, UpsampleGeometry g) {
  __shared__ int64_t at[kUpsampleTile][4];    // the four source pixels' first elements
  __shared__ float weight[kUpsampleTile][4];  // rows l0, l1, columns l0, l1
  const int64_t ohw = g.out_h * g.out_w;
  const SourceAt src{g.w, g.c, g.h * g.w, true};
  for (int64_t tile = int64_t(blockIdx.x) * kUpsampleTile; tile < pixels;
       tile += int64_t(gridDim.x) * kUpsampleTile) {
    const int count =
        static_cast<int>(pixels - tile < kUpsampleTile ? pixels - tile : kUpsampleTile);
    if (threadIdx.x < count) {
      const int64_t i = tile + threadIdx.x, s = i / ohw, p = i - s * ohw;
      const int64_t oy = p / g.out_w, ox = p - oy * g.out_w, base = s * g.c * src.hw;
      int64_t* a = at[threadIdx.x];
      float* l = weight[threadIdx.x];
      if (!g.bilinear) {
        a[0] = base + src.tap(resample::nearest(oy, g.h, g.out_h, g.scale_h, g.direct),
                              resample::nearest(ox, g.w, g.out_w, g.scale_w, g.direct));
      } else {
        const resample::Tap r = resample::linear(oy, g.h, g.out_h, g.align_corners, g.scale_h);
        const resample::Tap q = resample::linear(ox, g.w, g.out_w, g.align_corners, g.scale_w);
        a[0] = base + src.tap(r.i0, q.i0), a[1] = base + src.tap(r.i0, q.i1);
        a[2] = base + src.tap(r.i1, q.i0), a[3] = base + src.tap(r.i1, q.i1);
        l[0] = r.l0, l[1] = r.l1, l[2] = q.l0, l[3] = q.l1;
      }
    }
    __syncthreads();
    const int c = static_cast<int>(g.c), elements = count * c;
    T* yt = y + tile * g.c;
    for (int e = threadIdx.x; e < elements; e += blockDim.x) {
      const int j = e / c, k = e - j * c;
      const int64_t* a = at[j];
      if (!g.bilinear) {
        yt[e] = x[a[0] + k];
        continue;
      }
      const float* l = weight[j];
      const float top = l[2] * to_float(x[a[0] + k]) + l[3] * to_float(x[a[1] + k]);
      const float bottom = l[2] * to_float(x[a[2] + k]) + l[3] * to_float(x[a[3] + k]);
      yt[e] = from_float<T>(l[0] * top + l[1] * bottom);
    }
    __syncthreads();
  }
}

inline bool upsample_geometry_ok(int64_t n, const UpsampleGeometry& g) {
  return n >= 0 && g.c >= 1 && g.h >= 1 && g.w >= 1 && g.out_h >= 1 && g.out_w >= 1 &&
         g.c * kUpsampleTile <= (int64_t(1) << 30);
}

template <class T>
cudaError_t launch_upsample(const T* x, T* y, int64_t n, UpsampleGeometry g, cudaStream_t stream) {
  if (!upsample_geometry_ok(n, g)) return cudaErrorInvalidValue;
  const int64_t ohw = g.out_h * g.out_w, pixels = n * ohw;
  if (pixels == 0) return cudaSuccess;
  if (g.nhwc) {
    const int64_t tiles = (pixels + kUpsampleTile - 1) / kUpsampleTile;
    const auto grid =
        static_cast<unsigned>(tiles < detail::kMaxBlocks ? tiles : detail::kMaxBlocks);
    upsample_nhwc_kernel<T><<<grid, detail::kBlock, 0, stream>>>(x, y, pixels, g);
  } else {
    upsample_planar_kernel<T, T>
        <<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(x, y, pixels, g, g.c * ohw, 0);
  }
  return detail::launched();
}

// An upsampling layer whose result is a model output, written straight into the caller's fp32
// NCHW rows where o says (o.c, o.hw: the layer's output channels and pixels).
template <class T>
cudaError_t launch_upsample_to_caller(const T* x, float* out, int64_t n, UpsampleGeometry g,
                                      OutputGeometry o, cudaStream_t stream) {
  if (!upsample_geometry_ok(n, g) || o.c != g.c || o.hw != g.out_h * g.out_w ||
      o.per_sample != o.c * o.hw || o.pitch < o.offset + o.per_sample || o.offset < 0) {
    return cudaErrorInvalidValue;
  }
  const int64_t pixels = n * o.hw;
  if (pixels == 0) return cudaSuccess;
  upsample_planar_kernel<T, float><<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(
      x, out, pixels, g, o.pitch, o.offset);
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
  channel_softmax_kernel<T>
      <<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(x, y, pixels, c, hw, nhwc, log);
  return detail::launched();
}

// The class map of a model output: per pixel the index of its largest channel, the first of equal
// maxima, a NaN counting as the largest (PyTorch's argmax(dim=1), the reference interpreter's
// argmax_dim1), written as fp32 to the caller's rows where o says (o.hw pixels per sample).
template <class T>
__global__ void channel_argmax_kernel(const T* x, float* out, int64_t pixels, int64_t c, bool nhwc,
                                      OutputGeometry o) {
  for (int64_t q = detail::thread_index(); q < pixels; q += detail::thread_stride()) {
    const int64_t s = q / o.hw, p = q - s * o.hw;
    int64_t best = 0;
    float top = to_float(x[offset_of(s, 0, p, c, o.hw, nhwc)]);
    for (int64_t k = 1; k < c && !isnan(top); ++k) {
      const float v = to_float(x[offset_of(s, k, p, c, o.hw, nhwc)]);
      if (v > top || isnan(v)) best = k, top = v;
    }
    out[s * o.pitch + o.offset + p] = static_cast<float>(best);
  }
}

template <class T>
cudaError_t launch_channel_argmax(const T* x, float* out, int64_t n, int64_t c, bool nhwc,
                                  OutputGeometry o, cudaStream_t stream) {
  if (n < 0 || c < 1 || o.hw < 1 || o.per_sample != o.hw || o.offset < 0 ||
      o.pitch < o.offset + o.per_sample) {
    return cudaErrorInvalidValue;
  }
  const int64_t pixels = n * o.hw;
  if (pixels == 0) return cudaSuccess;
  channel_argmax_kernel<T>
      <<<detail::grid_for(pixels), detail::kBlock, 0, stream>>>(x, out, pixels, c, nhwc, o);
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
  output_to_caller_kernel<T>
      <<<detail::grid_for(count), detail::kBlock, 0, stream>>>(y, out, count, g);
  return detail::launched();
}

}  // namespace zoc::kernels
