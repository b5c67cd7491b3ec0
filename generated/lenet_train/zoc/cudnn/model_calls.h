// One constant per layer of a generated model: everything its calls need besides its
// descriptor bundle (shapes, the tensors it reads and writes, its packed weights), so that the
// generated layer sequence names each layer once: `v.conv(conv1_, kConv_conv1, "conv1")`.
//
// Tensors are per-sample byte offsets into the activation arena, or kCallerInput / kNoTensor
// (zoc/cudnn/model_state.h); weights are byte offsets into the packed weight buffer. The steps
// of zoc/cudnn/model_steps.h turn them into device addresses. Plain aggregates, usable as
// constexpr; needs cudnn.h only.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "zoc/core/model_kernels.h"
#include "zoc/cudnn/layers.h"
#include "zoc/math/activations.h"

namespace zoc {

// Tensor names in a layer sequence: a per-sample byte offset into the activation arena (scaled
// by max_batch at run time), or one of these.
inline constexpr size_t kCallerInput = ~size_t(0);   // the caller's fp32 NCHW input, in place
inline constexpr size_t kNoTensor = ~size_t(0) - 1;  // no residual, no bias

// A fused convolution: y = act(conv(x, w) + b [+ z]).
struct ConvCall {
  ConvShape shape;
  size_t x, w, b, z, y;  // z: the residual, or kNoTensor
};

// A depthwise convolution through zoc's kernel (zoc/core/depthwise.cuh): same tensors.
struct DepthwiseCall {
  DepthwiseGeometry g;
  size_t x, w, b, z, y;  // z: the residual, or kNoTensor
};

struct PoolCall {
  PoolShape shape;
  size_t x, y;
};

// A unary pointwise activation of zoc/math/activations.h over per_sample elements.
struct ActivationCall {
  act::Kind kind;
  act::Params params;  // its attributes (hardtanh's bounds)
  int64_t per_sample;
  size_t x, y;
};

struct SoftmaxCall {
  int features;
  size_t x, y;
};

// Batch norm that no convolution absorbed: gamma, beta, mean and variance as four float
// vectors of c at weight offset `params`.
struct BatchNormCall {
  int c, h, w;
  size_t params;
  double eps;
  size_t x, y;
};

struct AddCall {
  size_t a, b, y;
  int64_t per_sample;  // elements
};

// A linear layer through cuBLAS: y[n, out] = x[n, in] W^T (+ b, kNoTensor if none).
struct LinearCall {
  int in, out;
  size_t w, b, x, y;
};

// One input of a channel concatenation (or, in a trainer, one input's slice of its gradient), as
// a strided copy: `rows` rows per sample of `width` bytes, read with pitch `src_pitch` from byte
// `src_offset` of tensor `src` and written with pitch `dst_pitch` from byte `dst_offset` of
// tensor `y`.
struct CopyCall {
  size_t src, y;
  size_t dst_offset, dst_pitch, src_pitch, width, rows;
  size_t src_offset = 0;
};

// The zoo's layers through zoc/core/layer_kernels.cuh: y = x * s with s an activation (per
// sample: squeeze-and-excitation; or elementwise), or, with s_is_weight, a packed weight vector
// [C] (layer scale); per_sample: x's elements per sample.
struct MulCall {
  ChannelMulShape m;
  int64_t per_sample;
  size_t x, s, y;
  bool s_is_weight;
};

// Layer norm over the channels at each of hw pixels; gamma then beta (fp32) at weight offset
// `params`.
struct LayerNormCall {
  int64_t c, hw;
  size_t params;
  float eps;
  size_t x, y;
};

struct ShuffleCall {
  int64_t c, hw, groups;
  size_t x, y;
};

// Pooling cuDNN cannot do (ceil_mode, dilation), and adaptive average pooling.
struct PoolKernelCall {
  PoolGeometry g;
  size_t x, y;
};
struct AdaptivePoolCall {
  AdaptiveGeometry g;
  size_t x, y;
};

// The caller's fp32 NCHW input entering the model at tensor y (converted to NHWC with channels
// c..c_stored-1 zero, or copied).
struct InputCall {
  int c, h, w, c_stored;
  size_t y;
};

// The logits leaving the model: per_sample values of tensor y, to the caller's fp32 output.
struct OutputCall {
  size_t y;
  int64_t per_sample;
};

}  // namespace zoc
