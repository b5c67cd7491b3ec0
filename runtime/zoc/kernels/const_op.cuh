// A tensor and a constant: y = x op k, or k op x (`reverse`), for add, sub, mul and div, with k a
// scalar compiled into the call or an fp32 vector of the weights: one value, or one per channel.
// This is how users write input normalization, (x - mean) / std, and what timm's
// LearnableAffineBlock (scale * x + bias) and mobileone's stem add become once the frontends
// compile one-element parameters in. And x - y, x / y of two tensors of one shape.
//
// Each result is computed in float and rounded once to the storage type (float, __half,
// __nv_bfloat16), with __fadd_rn and friends, so neither FMA contraction nor fast-math can change
// an fp32 result: it equals the reference interpreter's (compiler/backend/reference/
// elementwise.cpp), which divides truly (x / k, never x * (1 / k)). Out of place: the memory
// planner has no in-place values. Included by the generated .cu file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernels.cuh"
#include "zoc/kernels/model_kernels.h"

namespace zoc::kernels {

__device__ inline float const_op_apply(float x, float k, const ConstOpShape& m) {
  const float a = m.reverse ? k : x, b = m.reverse ? x : k;
  switch (m.op) {
    case ConstOpKind::kSub:
      return __fsub_rn(a, b);
    case ConstOpKind::kMul:
      return __fmul_rn(a, b);
    case ConstOpKind::kDiv:
      return __fdiv_rn(a, b);
    default:
      return __fadd_rn(a, b);
  }
}

// One element per thread of a grid-stride loop; the channel of element i found with 64-bit
// divisions (any shape, any alignment).
template <class T>
__global__ void const_op_kernel(const T* x, const float* v, T* y, int64_t count, ConstOpShape m) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    float k = m.scalar;
    if (v) {
      const int64_t ch = !m.per_channel ? 0 : m.nhwc ? i % m.c : (i / m.hw) % m.c;
      k = v[ch];
    }
    y[i] = from_float<T>(const_op_apply(to_float(x[i]), k, m));
  }
}

// V elements (16 bytes) per step where each vector lies in one row: V consecutive channels of
// one pixel (NHWC, c % V == 0), V pixels of one channel (NCHW, hw % V == 0), or anything when
// the constant is one value. One division per vector instead of one per element.
template <class T, int V>
__global__ void const_op_vec_kernel(const T* x, const float* v, T* y, int64_t vectors,
                                    ConstOpShape m) {
  const bool per_channel = v != nullptr && m.per_channel;
  const float uniform = v != nullptr && !m.per_channel ? v[0] : m.scalar;
  for (int64_t j = detail::thread_index(); j < vectors; j += detail::thread_stride()) {
    const Vec<T, V> in = reinterpret_cast<const Vec<T, V>*>(x)[j];
    Vec<T, V> out;
    if (per_channel && m.nhwc) {
      const float* k = v + (j * V) % m.c;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        out.v[e] = from_float<T>(const_op_apply(to_float(in.v[e]), k[e], m));
      }
    } else {
      const float k = per_channel ? v[(j * V / m.hw) % m.c] : uniform;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        out.v[e] = from_float<T>(const_op_apply(to_float(in.v[e]), k, m));
      }
    }
    reinterpret_cast<Vec<T, V>*>(y)[j] = out;
  }
}

// x and y hold `count` elements (N samples of c * hw); v is null for a scalar.
template <class T>
cudaError_t launch_const_op(const T* x, const float* v, T* y, int64_t count, ConstOpShape m,
                            cudaStream_t stream) {
  if (count < 0 || m.c <= 0 || m.hw <= 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const int64_t row = v == nullptr || !m.per_channel ? count : m.nhwc ? m.c : m.hw;
  if (count % V == 0 && row % V == 0 && detail::aligned(x, 16) && detail::aligned(y, 16)) {
    const int64_t vectors = count / V;
    const_op_vec_kernel<T, V>
        <<<detail::grid_for(vectors), detail::kBlock, 0, stream>>>(x, v, y, vectors, m);
    return detail::launched();
  }
  const_op_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, v, y, count, m);
  return detail::launched();
}

// y = a op b of two tensors of one shape, in either layout (both store it the same way): a sub or
// a div of two tensors, a - b and a / b as the reference computes them.
template <class T>
__global__ void binary_kernel(const T* a, const T* b, T* y, int64_t count, ConstOpShape m) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    y[i] = from_float<T>(const_op_apply(to_float(a[i]), to_float(b[i]), m));
  }
}

template <class T>
cudaError_t launch_binary(const T* a, const T* b, T* y, int64_t count, ConstOpKind op,
                          cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  ConstOpShape m;
  m.op = op;
  binary_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(a, b, y, count, m);
  return detail::launched();
}

}  // namespace zoc::kernels
