// The gradients of the zoo's kernel layers in generated trainers (issue 34), fp32 NCHW, whose
// forwards are inference's own kernels (zoc/kernels/layer_kernels.cuh, instantiated for float):
//   mul_grad          same shape: da = dy * b, db = dy * a; an image by its per-sample channel
//                     vector (squeeze-and-excitation): da = dy * s[n, c], ds[n, c] = the sum over
//                     the pixels of dy * a;
//   operand_grad      y = x op v[c] (or v[c] op x), v a parameter (layer scale's gamma; one value:
//                     c = 1): dx, and dv[c] summed over samples and pixels, PyTorch's formulas
//                     (add: dy, sum dy; mul: dy * v, sum dy * x; div: dy / v, -sum(dy * x) / v^2),
//                     each sum cut into pieces (zoc::operand_grad_pieces) added in order;
//   layernorm_grad    over the channels at each pixel (or over features: one pixel), the
//                     statistics recomputed from x into a scratch buffer [2, pixels] (mean,
//                     inverse deviation), then dgamma and dbeta per channel and dx per pixel;
//   adaptive_avgpool_grad  each dy spread evenly over its bin, summed where bins overlap;
//   softmax_grad      softmax's and log_softmax's, over features or each pixel's channels, from
//                     the output: the sum over the channels in double, per pixel;
//   channel_conv_grad ECA's 1-D convolution over the features: dx gathers each tap's share of dy,
//                     dw[t] and db sum over samples and outputs;
//   upsample_grad     nearest's and bilinear's: each dx pixel gathers the dy of the outputs that
//                     read it, with the forward's weights (dense_kernels.cuh's index arithmetic,
//                     found by bisection: an output's source index grows with it);
//   pool_grad         the pooling cuDNN cannot express (ceil_mode, dilation; forward:
//                     layer_kernels.cuh's pool_kernel): max gives each dy to its window's first
//                     maximum, average spreads it by the forward's divisor; each input element
//                     gathers from the windows that hold it.
// The window rules (average pooling's divisor, adaptive pooling's bins) are the forwards' own
// (layer_kernels.cuh). The formulas are the reference interpreter's (compiler/backend/reference:
// grad_kernels.cpp, channel_kernels.cpp, pool.cpp), the oracle tests/train/gpu_zoo_train_check.sh
// compares against. Every sum over samples or pixels is one block per result (operand_grad's: per
// piece of a result, the pieces then added in order), in a fixed order in double, so a step is
// reproducible. Included by generated <model>_train_kernels.cu only (nvcc, C++17).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/dense_kernels.cuh"
#include "zoc/kernels/kernel_shapes.h"
#include "zoc/kernels/layer_kernels.cuh"
#include "zoc/kernels/train_kernels.cuh"
#include "zoc/kernels/trainer_kernels.h"

namespace zoc::train_kernels {

namespace grad_detail {
constexpr int kBlock = 256;

// The sum of each thread's v over a block of kBlock threads, in a fixed order.
__device__ inline double block_sum(double v) {
  __shared__ double part[kBlock];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  const double sum = part[0];
  __syncthreads();  // part is reused by the caller's next sum
  return sum;
}

__global__ void mul_same_grad_kernel(const float* a, const float* b, const float* dy, float* da,
                                     float* db, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (da) da[i] = dy[i] * b[i];
    if (db) db[i] = dy[i] * a[i];
  }
}

// dx[i] = dy[i] * v[row(i)] with row = i / hw, or (modulo c) its channel.
__global__ void scale_rows_kernel(const float* dy, const float* v, float* dx, int64_t count,
                                  int64_t hw, int64_t c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    dx[i] = dy[i] * v[(i / hw) % c];
  }
}

// dx of y = x op v[c] (v op x: reverse), as the reference interpreter computes it.
__global__ void operand_dx_kernel(const float* x, const float* v, const float* dy, float* dx,
                                  int64_t count, int64_t hw, int64_t c, ConstOpKind op,
                                  bool reverse) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float k = v[(i / hw) % c], d = dy[i];
    switch (op) {
      case ConstOpKind::kMul:
        dx[i] = __fmul_rn(d, k);
        break;
      case ConstOpKind::kDiv:
        dx[i] = reverse ? float(-double(d) * k / (double(x[i]) * x[i])) : __fdiv_rn(d, k);
        break;
      default:  // add, sub
        dx[i] = op == ConstOpKind::kSub && reverse ? -d : d;
    }
  }
}

// dv of y = x op v[k] (v op x: reverse), first part: block b sums piece b % pieces of channel
// k = b / pieces (its n * hw terms cut in `pieces` consecutive runs) of dy (add, sub), dy * x
// (mul, div) or dy / x (v / x), in a fixed order, into partial[b].
__global__ void operand_dv_partial_kernel(const float* x, const float* dy, double* partial,
                                          int64_t n, int64_t c, int64_t hw, int64_t pieces,
                                          ConstOpKind op, bool reverse) {
  const int64_t terms = n * hw, per = (terms + pieces - 1) / pieces;
  for (int64_t b = blockIdx.x; b < c * pieces; b += gridDim.x) {
    const int64_t k = b / pieces, first = (b % pieces) * per;
    const int64_t last = first + per < terms ? first + per : terms;
    double acc = 0.0;
    for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) {
      const int64_t at = ((j / hw) * c + k) * hw + j % hw;
      const double d = dy[at];
      acc += op == ConstOpKind::kAdd || op == ConstOpKind::kSub ? d
             : op == ConstOpKind::kDiv && reverse               ? d / double(x[at])
                                                                : d * double(x[at]);
    }
    const double sum = block_sum(acc);
    if (threadIdx.x == 0) partial[b] = sum;
  }
}

// Then dv[k]: channel k's pieces added in order, with sub's -sum and div's -sum / v^2.
__global__ void operand_dv_finish_kernel(const float* v, const double* partial, float* dv,
                                         int64_t c, int64_t pieces, ConstOpKind op, bool reverse) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < c;
       k += int64_t(gridDim.x) * blockDim.x) {
    double sum = 0.0;
    for (int64_t p = 0; p < pieces; ++p) sum += partial[k * pieces + p];
    const double vk = v[k];
    dv[k] = float(op == ConstOpKind::kDiv && !reverse   ? -sum / (vk * vk)
                  : op == ConstOpKind::kSub && !reverse ? -sum
                                                        : sum);
  }
}

// out[k] = the sum of dy * x over the rows whose channel is k: rows [n * c + k] of hw elements
// (samples n), one block per channel.
__global__ void channel_dot_kernel(const float* dy, const float* x, float* out, int64_t n,
                                   int64_t c, int64_t hw) {
  for (int64_t k = blockIdx.x; k < c; k += gridDim.x) {
    double acc = 0.0;
    for (int64_t j = threadIdx.x; j < n * hw; j += blockDim.x) {
      const int64_t at = ((j / hw) * c + k) * hw + j % hw;
      acc += double(dy[at]) * double(x[at]);
    }
    const double sum = block_sum(acc);
    if (threadIdx.x == 0) out[k] = float(sum);
  }
}

// Per pixel q of n * hw: its mean and inverse deviation over the c channels, as the forward.
__global__ void layernorm_stats_kernel(const float* x, float* stats, int64_t pixels, int64_t c,
                                       int64_t hw, float eps) {
  for (int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; q < pixels;
       q += int64_t(gridDim.x) * blockDim.x) {
    const float* xp = x + (q / hw) * c * hw + q % hw;
    double mean = 0.0, var = 0.0;
    for (int64_t k = 0; k < c; ++k) mean += xp[k * hw];
    mean /= double(c);
    for (int64_t k = 0; k < c; ++k) var += (xp[k * hw] - mean) * (xp[k * hw] - mean);
    stats[q] = float(mean);
    stats[pixels + q] = float(1.0 / sqrt(var / double(c) + double(eps)));
  }
}

// dgamma[k] = sum of dy * xhat, dbeta[k] = sum of dy over channel k's pixels; one block each.
__global__ void layernorm_param_grad_kernel(const float* x, const float* dy, const float* stats,
                                            float* dgamma, float* dbeta, int64_t pixels, int64_t c,
                                            int64_t hw) {
  for (int64_t k = blockIdx.x; k < c; k += gridDim.x) {
    double gw = 0.0, gb = 0.0;
    for (int64_t q = threadIdx.x; q < pixels; q += blockDim.x) {
      const int64_t at = ((q / hw) * c + k) * hw + q % hw;
      gw += double(dy[at]) * (double(x[at]) - stats[q]) * stats[pixels + q];
      gb += dy[at];
    }
    gw = block_sum(gw);
    gb = block_sum(gb);
    if (threadIdx.x == 0) {
      if (dgamma) dgamma[k] = float(gw);
      if (dbeta) dbeta[k] = float(gb);
    }
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, per pixel.
__global__ void layernorm_dx_kernel(const float* x, const float* dy, const float* gamma,
                                    const float* stats, float* dx, int64_t pixels, int64_t c,
                                    int64_t hw) {
  for (int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; q < pixels;
       q += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (q / hw) * c * hw + q % hw;
    const double mean = stats[q], rstd = stats[pixels + q];
    double mean_g = 0.0, mean_gx = 0.0;
    for (int64_t k = 0; k < c; ++k) {
      const double g = double(dy[base + k * hw]) * gamma[k];
      mean_g += g;
      mean_gx += g * (x[base + k * hw] - mean) * rstd;
    }
    mean_g /= double(c);
    mean_gx /= double(c);
    for (int64_t k = 0; k < c; ++k) {
      const double g = double(dy[base + k * hw]) * gamma[k];
      const double xhat = (x[base + k * hw] - mean) * rstd;
      dx[base + k * hw] = float(rstd * (g - mean_g - xhat * mean_gx));
    }
  }
}

__global__ void adaptive_avgpool_grad_kernel(const float* dy, float* dx, int64_t count,
                                             AdaptiveGeometry g) {
  const int64_t ihw = g.h * g.w, ohw = g.out_h * g.out_w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = i / ihw, ih = (i % ihw) / g.w, iw = i % g.w;
    const float* d = dy + plane * ohw;
    double acc = 0.0;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const kernels::Bin bh = kernels::adaptive_bin(oh, g.h, g.out_h);
      if (ih < bh.start || ih >= bh.end) continue;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const kernels::Bin bw = kernels::adaptive_bin(ow, g.w, g.out_w);
        if (iw < bw.start || iw >= bw.end) continue;
        acc += double(d[oh * g.out_w + ow]) / double((bh.end - bh.start) * (bw.end - bw.start));
      }
    }
    dx[i] = float(acc);
  }
}

// The windows along one axis that hold input position i: outputs o in [lo, hi] with
// o * stride - pad + r * dil == i for some tap r in [0, k).
struct Span {
  int64_t lo, hi;
};
__device__ inline Span windows_of(int64_t i, int64_t out, int64_t k, int64_t stride, int64_t pad,
                                  int64_t dil) {
  const int64_t top = i + pad, reach = (k - 1) * dil;
  int64_t lo = top - reach <= 0 ? 0 : (top - reach + stride - 1) / stride;
  int64_t hi = top / stride;
  return {lo, hi < out - 1 ? hi : out - 1};
}

// The flat input offset (ih * w + iw) of output (oh, ow)'s first maximum, visiting taps in the
// forward's order (a NaN wins, as there); -1 if the window holds no input element.
__device__ inline int64_t first_max(const float* x, int64_t oh, int64_t ow, const PoolGeometry& g) {
  const int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  float best = 0.0f;
  int64_t at = -1;
  for (int64_t r = 0; r < g.kh; ++r) {
    const int64_t ih = h0 + r * g.dil_h;
    if (ih < 0 || ih >= g.h) continue;
    for (int64_t q = 0; q < g.kw; ++q) {
      const int64_t iw = w0 + q * g.dil_w;
      if (iw < 0 || iw >= g.w) continue;
      const float v = x[ih * g.w + iw];
      if (at < 0 || v > best || v != v) best = v, at = ih * g.w + iw;
    }
  }
  return at;
}

__global__ void pool_grad_kernel(const float* x, const float* dy, float* dx, int64_t count,
                                 PoolGeometry g) {
  const int64_t ihw = g.h * g.w, ohw = g.out_h * g.out_w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = i / ihw, ih = (i % ihw) / g.w, iw = i % g.w;
    const float* xp = x + plane * ihw;
    const float* d = dy + plane * ohw;
    const Span sh = windows_of(ih, g.out_h, g.kh, g.stride_h, g.pad_h, g.dil_h);
    const Span sw = windows_of(iw, g.out_w, g.kw, g.stride_w, g.pad_w, g.dil_w);
    double acc = 0.0;
    for (int64_t oh = sh.lo; oh <= sh.hi; ++oh) {
      if ((ih + g.pad_h - oh * g.stride_h) % g.dil_h != 0) continue;
      for (int64_t ow = sw.lo; ow <= sw.hi; ++ow) {
        if ((iw + g.pad_w - ow * g.stride_w) % g.dil_w != 0) continue;
        if (g.max) {
          if (first_max(xp, oh, ow, g) == ih * g.w + iw) acc += d[oh * g.out_w + ow];
        } else {
          const int64_t div =
              kernels::pool_divisor(oh * g.stride_h - g.pad_h, ow * g.stride_w - g.pad_w, g);
          if (div > 0) acc += double(d[oh * g.out_w + ow]) / double(div);
        }
      }
    }
    dx[i] = float(acc);
  }
}

// softmax's (log: log_softmax's) backward over the c channels of each of the hw pixels of each
// sample, one thread per pixel: the sum over its channels in double, then dx.
__global__ void softmax_grad_kernel(const float* y, const float* dy, float* dx, int64_t pixels,
                                    int64_t c, int64_t hw, bool log) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < pixels;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (i / hw) * c * hw + i % hw;
    double sum = 0;
    for (int64_t k = 0; k < c; ++k) {
      const double g = dy[base + k * hw];
      sum += log ? g : g * y[base + k * hw];
    }
    for (int64_t k = 0; k < c; ++k) {
      const int64_t j = base + k * hw;
      dx[j] = log ? float(dy[j] - exp(double(y[j])) * sum) : float(double(y[j]) * (dy[j] - sum));
    }
  }
}

// dx of a 1-D convolution over each sample's g.f features: each input gathers the taps that
// read it (the forward's rule read backwards), in tap order.
__global__ void channel_conv_dx_kernel(const float* w, const float* dy, float* dx, int64_t count,
                                       ChannelConvGeometry g) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = i / g.f, at = i % g.f;
    float acc = 0.0f;
    for (int64_t t = 0; t < g.k; ++t) {
      const int64_t num = at + g.padding - t * g.dilation;
      if (num < 0 || num % g.stride != 0 || num / g.stride >= g.out) continue;
      acc = __fmaf_rn(w[t], dy[s * g.out + num / g.stride], acc);
    }
    dx[i] = acc;
  }
}

// Block t < g.k: the sum over every sample and output of dy * x at tap t (dw[t]); block g.k: the
// sum of dy (the bias's gradient). One block per result, a fixed order.
__global__ void channel_conv_param_grad_kernel(const float* x, const float* dy, float* dw,
                                               float* db, int64_t n, ChannelConvGeometry g) {
  const int64_t t = blockIdx.x;
  double acc = 0;
  for (int64_t j = threadIdx.x; j < n * g.out; j += kBlock) {
    const int64_t at = (j % g.out) * g.stride - g.padding + t * g.dilation;
    if (t == g.k) {
      acc += dy[j];
    } else if (at >= 0 && at < g.f) {
      acc += double(dy[j]) * x[(j / g.out) * g.f + at];
    }
  }
  const double sum = block_sum(acc);
  if (threadIdx.x != 0) return;
  if (t < g.k && dw) dw[t] = float(sum);
  if (t == g.k && db) db[0] = float(sum);
}

// One axis of an upsampling, in -> out: output o reads source indices tap(o).i0 and .i1 (one
// index, weight 1, for nearest), both non-decreasing in o.
struct UpsampleAxis {
  int64_t in, out;
  double scale;
  bool bilinear, align_corners, direct;
  __device__ kernels::resample::Tap tap(int64_t o) const {
    if (bilinear) return kernels::resample::linear(o, in, out, align_corners, scale);
    const int64_t k = kernels::resample::nearest(o, in, out, scale, direct);
    return {k, k, 1.0f, 0.0f};
  }
  // The outputs [*first, *last] that read source index `at` (none: first > last): from the first
  // whose i1 reaches it to the last whose i0 does not pass it.
  __device__ void span(int64_t at, int64_t* first, int64_t* last) const {
    int64_t lo = 0, hi = out;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (tap(mid).i1 >= at)
        hi = mid;
      else
        lo = mid + 1;
    }
    *first = lo;
    hi = out;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (tap(mid).i0 > at)
        hi = mid;
      else
        lo = mid + 1;
    }
    *last = lo - 1;
  }
  __device__ static double weight(const kernels::resample::Tap& t, int64_t at) {
    return (t.i0 == at ? double(t.l0) : 0.0) + (t.i1 == at ? double(t.l1) : 0.0);
  }
};

// One thread per dx element: the sum over the outputs that read it of weight * dy, rows then
// columns in order, in double.
__global__ void upsample_grad_kernel(const float* dy, float* dx, int64_t count,
                                     UpsampleGeometry g) {
  const UpsampleAxis rows{g.h, g.out_h, g.scale_h, g.bilinear, g.align_corners, g.direct};
  const UpsampleAxis cols{g.w, g.out_w, g.scale_w, g.bilinear, g.align_corners, g.direct};
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = i / (g.h * g.w), p = i - plane * g.h * g.w;
    const int64_t iy = p / g.w, ix = p - iy * g.w;
    int64_t r0 = 0, r1 = -1, q0 = 0, q1 = -1;
    rows.span(iy, &r0, &r1);
    cols.span(ix, &q0, &q1);
    const float* d = dy + plane * g.out_h * g.out_w;
    double acc = 0;
    for (int64_t oy = r0; oy <= r1; ++oy) {
      const double wy = UpsampleAxis::weight(rows.tap(oy), iy);
      double row = 0;
      for (int64_t ox = q0; ox <= q1; ++ox) {
        row += UpsampleAxis::weight(cols.tap(ox), ix) * d[oy * g.out_w + ox];
      }
      acc += wy * row;
    }
    dx[i] = float(acc);
  }
}

inline unsigned reduction_blocks(int64_t rows) {  // one block per result, as many as allowed
  return static_cast<unsigned>(rows < kernels::detail::kMaxBlocks ? (rows > 0 ? rows : 1)
                                                                  : kernels::detail::kMaxBlocks);
}
}  // namespace grad_detail

// da and db (either null: not needed) of y = a * b; b of a's shape (m.elementwise) or a's
// per-sample channel vector [n, m.c].
inline cudaError_t launch_mul_grad(const float* a, const float* b, const float* dy, float* da,
                                   float* db, int64_t n, ChannelMulShape m, cudaStream_t stream) {
  if (n < 0 || m.c < 1 || m.hw < 1 || m.nhwc) return cudaErrorInvalidValue;
  const int64_t count = n * m.c * m.hw;
  if (count == 0) return cudaSuccess;
  if (m.elementwise) {
    grad_detail::mul_same_grad_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(a, b, dy, da,
                                                                                     db, count);
    return cudaGetLastError();
  }
  if (da) {
    grad_detail::scale_rows_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(dy, b, da, count,
                                                                                  m.hw, n * m.c);
  }
  if (db) {  // one "channel" per row: c = n * m.c rows of hw, one sample
    grad_detail::channel_dot_kernel<<<grad_detail::reduction_blocks(n * m.c), grad_detail::kBlock,
                                      0, stream>>>(dy, a, db, 1, n * m.c, m.hw);
  }
  return cudaGetLastError();
}

// dx and dv (null: not needed) of y = x op v[c] (v op x: reverse) over [n, c, hw]; scratch holds
// c * operand_grad_pieces(n, c, hw) doubles.
inline cudaError_t launch_operand_grad(const float* x, const float* v, const float* dy, float* dx,
                                       float* dv, int64_t n, int64_t c, int64_t hw, ConstOpKind op,
                                       bool reverse, double* scratch, cudaStream_t stream) {
  if (n < 0 || c < 1 || hw < 1) return cudaErrorInvalidValue;
  const int64_t count = n * c * hw;
  if (count == 0) return cudaSuccess;
  grad_detail::operand_dx_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(x, v, dy, dx, count,
                                                                                hw, c, op, reverse);
  if (dv) {
    if (!scratch) return cudaErrorInvalidValue;
    const int64_t pieces = operand_grad_pieces(n, c, hw);
    grad_detail::operand_dv_partial_kernel<<<grad_detail::reduction_blocks(c * pieces),
                                             grad_detail::kBlock, 0, stream>>>(
        x, dy, scratch, n, c, hw, pieces, op, reverse);
    grad_detail::operand_dv_finish_kernel<<<detail::blocks_for(c), 256, 0, stream>>>(
        v, scratch, dv, c, pieces, op, reverse);
  }
  return cudaGetLastError();
}

// Layer norm's backward over [n, c, hw]; scratch holds 2 * n * hw floats.
inline cudaError_t launch_layernorm_grad(const float* x, const float* gamma, const float* dy,
                                         float* dx, float* dgamma, float* dbeta, int64_t n,
                                         int64_t c, int64_t hw, float eps, float* scratch,
                                         cudaStream_t stream) {
  if (n < 0 || c < 1 || hw < 1) return cudaErrorInvalidValue;
  const int64_t pixels = n * hw;
  if (pixels == 0) return cudaSuccess;
  if (!scratch) return cudaErrorInvalidValue;
  const unsigned blocks = detail::blocks_for(pixels);
  grad_detail::layernorm_stats_kernel<<<blocks, 256, 0, stream>>>(x, scratch, pixels, c, hw, eps);
  if (dgamma || dbeta) {
    grad_detail::layernorm_param_grad_kernel<<<grad_detail::reduction_blocks(c),
                                               grad_detail::kBlock, 0, stream>>>(
        x, dy, scratch, dgamma, dbeta, pixels, c, hw);
  }
  grad_detail::layernorm_dx_kernel<<<blocks, 256, 0, stream>>>(x, dy, gamma, scratch, dx, pixels, c,
                                                               hw);
  return cudaGetLastError();
}

inline cudaError_t launch_adaptive_avgpool_grad(const float* dy, float* dx, int64_t n,
                                                AdaptiveGeometry g, cudaStream_t stream) {
  if (n < 0 || g.nhwc || g.out_h < 1 || g.out_w < 1) return cudaErrorInvalidValue;
  const int64_t count = n * g.c * g.h * g.w;
  if (count == 0) return cudaSuccess;
  grad_detail::adaptive_avgpool_grad_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(
      dy, dx, count, g);
  return cudaGetLastError();
}

inline cudaError_t launch_softmax_grad(const float* y, const float* dy, float* dx, int64_t n,
                                       int64_t c, int64_t hw, bool log, cudaStream_t stream) {
  if (n < 0 || c < 1 || hw < 1) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  grad_detail::softmax_grad_kernel<<<detail::blocks_for(n * hw), 256, 0, stream>>>(
      y, dy, dx, n * hw, c, hw, log);
  return cudaGetLastError();
}

// ECA's 1-D convolution's dx, dw (its k taps) and db (any null: not needed).
inline cudaError_t launch_channel_conv_grad(const float* x, const float* w, const float* dy,
                                            float* dx, float* dw, float* db, int64_t n,
                                            ChannelConvGeometry g, cudaStream_t stream) {
  if (n < 0 || g.f < 1 || g.out < 1 || g.k < 1 || g.stride < 1 || g.dilation < 1) {
    return cudaErrorInvalidValue;
  }
  if (n == 0) return cudaSuccess;
  if (dx) {
    grad_detail::channel_conv_dx_kernel<<<detail::blocks_for(n * g.f), 256, 0, stream>>>(
        w, dy, dx, n * g.f, g);
  }
  if (dw || db) {
    grad_detail::channel_conv_param_grad_kernel<<<static_cast<unsigned>(g.k + 1),
                                                  grad_detail::kBlock, 0, stream>>>(x, dy, dw, db,
                                                                                    n, g);
  }
  return cudaGetLastError();
}

// dx of an upsampling (fp32 NCHW) from dy.
inline cudaError_t launch_upsample_grad(const float* dy, float* dx, int64_t n, UpsampleGeometry g,
                                        cudaStream_t stream) {
  if (n < 0 || g.nhwc || g.c < 1 || g.h < 1 || g.w < 1 || g.out_h < 1 || g.out_w < 1) {
    return cudaErrorInvalidValue;
  }
  const int64_t count = n * g.c * g.h * g.w;
  if (count == 0) return cudaSuccess;
  grad_detail::upsample_grad_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(dy, dx, count,
                                                                                   g);
  return cudaGetLastError();
}

// dx of a pooling zoc's kernel runs forward (x: the forward's input; NCHW only).
inline cudaError_t launch_pool_grad(const float* x, const float* dy, float* dx, int64_t n,
                                    PoolGeometry g, cudaStream_t stream) {
  if (n < 0 || g.nhwc || g.kh < 1 || g.kw < 1 || g.stride_h < 1 || g.stride_w < 1 || g.dil_h < 1 ||
      g.dil_w < 1) {
    return cudaErrorInvalidValue;
  }
  const int64_t count = n * g.c * g.h * g.w;
  if (count == 0) return cudaSuccess;
  grad_detail::pool_grad_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(x, dy, dx, count, g);
  return cudaGetLastError();
}

}  // namespace zoc::train_kernels
