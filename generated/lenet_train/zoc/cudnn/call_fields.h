// The fields of every call constant of a generated model (zoc/cudnn/model_calls.h) and of the
// cuDNN shapes inside them (zoc/cudnn/layers.h), each struct's list written once, here.
//
// Each list follows zoc/core/fields.h: `X(type, name, default)` per field in declaration order,
// the struct declared from it, the generated constants printed from it by name. Macros only:
// the compiler, which has no CUDA, includes it too.
#pragma once

#include "zoc/core/fields.h"

// How a model's tensors are stored and computed: the element type of activations and weights,
// their layout (NCHW or NHWC), the math mode (CUDNN_FMA_MATH: no tensor cores, fp32 with TF32
// off) and cuBLAS's types. No defaults: a model states each.
#define ZOC_FIELDS_Precision(X)      \
  X(cudnnDataType_t, data, {})       \
  X(cudnnTensorFormat_t, format, {}) \
  X(cudnnMathType_t, math, {})       \
  X(cudaDataType_t, blas_type, {})   \
  X(cublasComputeType_t, blas_compute, {})

// A convolution's geometry: input channels as stored (including padding), height, width;
// output channels, filter height and width; padding, stride, dilation, groups; output size.
// The trainer's ConvGeometry (zoc/train_layers/call_fields.h) is this list alone.
#define ZOC_FIELDS_ConvWindow(X) \
  X(int, c, 0)                   \
  X(int, h, 0)                   \
  X(int, w, 0)                   \
  X(int, k, 0)                   \
  X(int, r, 1)                   \
  X(int, s, 1)                   \
  X(int, pad_h, 0)               \
  X(int, pad_w, 0)               \
  X(int, stride_h, 1)            \
  X(int, stride_w, 1)            \
  X(int, dil_h, 1)               \
  X(int, dil_w, 1)               \
  X(int, groups, 1)              \
  X(int, out_h, 1)               \
  X(int, out_w, 1)

// A fused convolution y = act(conv(x, w) + b [+ z]) as cuDNN sees it: its window, then ReLU in
// the epilogue (the one activation the legacy call fuses), or instead any activation cuDNN's
// pointwise operations express (act::cudnn_pointwise) in a graph-API convolution's epilogue.
#define ZOC_FIELDS_ConvShape(X)                                                  \
  ZOC_FIELDS_ConvWindow(X) X(bool, relu, false) X(bool, other_activation, false) \
      X(act::Kind, activation, zoc::act::Kind::kRelu) X(act::Params, activation_params, {})

// cuDNN pooling: its mode, the input image, the window, padding and stride, the output size.
#define ZOC_FIELDS_PoolShape(X)   \
  X(cudnnPoolingMode_t, mode, {}) \
  X(int, c, 0)                    \
  X(int, h, 0)                    \
  X(int, w, 0)                    \
  X(int, kh, 1)                   \
  X(int, kw, 1)                   \
  X(int, pad_h, 0)                \
  X(int, pad_w, 0)                \
  X(int, stride_h, 1)             \
  X(int, stride_w, 1)             \
  X(int, out_h, 1)                \
  X(int, out_w, 1)

// Tensors (x, w, b, z, y, ...) are per-sample byte offsets into the activation arena or the
// packed weights, or zoc::kCallerInput / zoc::kNoTensor (model_calls.h).

// A fused convolution: y = act(conv(x, w) + b [+ z]); z: the residual, or none.
#define ZOC_FIELDS_ConvTensors(X) \
  X(size_t, x, 0)                 \
  X(size_t, w, 0)                 \
  X(size_t, b, 0)                 \
  X(size_t, z, zoc::kNoTensor)    \
  X(size_t, y, 0)
#define ZOC_FIELDS_ConvCall(X) \
  X(ConvShape, shape, {})      \
  ZOC_FIELDS_ConvTensors(X)

// A depthwise convolution through zoc's kernel (zoc/kernels/depthwise.cuh): the same tensors.
#define ZOC_FIELDS_DepthwiseCall(X) \
  X(DepthwiseGeometry, g, {})       \
  ZOC_FIELDS_ConvTensors(X)

#define ZOC_FIELDS_PoolCall(X) \
  X(PoolShape, shape, {})      \
  X(size_t, x, 0)              \
  X(size_t, y, 0)

// A unary pointwise activation of zoc/math/activations.h over per_sample elements, with its
// attributes (hardtanh's bounds).
#define ZOC_FIELDS_ActivationCall(X) \
  X(act::Kind, kind, {})             \
  X(act::Params, params, {})         \
  X(int64_t, per_sample, 0)          \
  X(size_t, x, 0)                    \
  X(size_t, y, 0)

#define ZOC_FIELDS_SoftmaxCall(X) \
  X(int, features, 0)             \
  X(size_t, x, 0)                 \
  X(size_t, y, 0)

// Batch norm that no convolution absorbed: gamma, beta, mean and variance as four float vectors
// of c at weight offset `params`.
#define ZOC_FIELDS_BatchNormCall(X) \
  X(int, c, 0)                      \
  X(int, h, 1)                      \
  X(int, w, 1)                      \
  X(size_t, params, 0)              \
  X(double, eps, 0)                 \
  X(size_t, x, 0)                   \
  X(size_t, y, 0)

// y = a + b over per_sample elements.
#define ZOC_FIELDS_AddCall(X) \
  X(size_t, a, 0)             \
  X(size_t, b, 0)             \
  X(size_t, y, 0)             \
  X(int64_t, per_sample, 0)

// A linear layer through cuBLAS: y[n, out] = x[n, in] W^T (+ b, or none).
#define ZOC_FIELDS_LinearCall(X) \
  X(int, in, 0)                  \
  X(int, out, 0)                 \
  X(size_t, w, 0)                \
  X(size_t, b, zoc::kNoTensor)   \
  X(size_t, x, 0)                \
  X(size_t, y, 0)

// One input of a channel concatenation (or one slice of a tensor), as a strided copy: `rows`
// rows per sample of `width` bytes, read with pitch `src_pitch` from byte `src_offset` of
// tensor `src` and written with pitch `dst_pitch` from byte `dst_offset` of tensor `y`.
#define ZOC_FIELDS_CopyCall(X) \
  X(size_t, src, 0)            \
  X(size_t, y, 0)              \
  X(size_t, dst_offset, 0)     \
  X(size_t, dst_pitch, 0)      \
  X(size_t, src_pitch, 0)      \
  X(size_t, width, 0)          \
  X(size_t, rows, 1)           \
  X(size_t, src_offset, 0)

// y = x * s through zoc/kernels/layer_kernels.cuh: s an activation (per sample, or elementwise),
// or with s_is_weight a packed weight vector [C] (layer scale); per_sample: x's elements.
#define ZOC_FIELDS_MulCall(X) \
  X(ChannelMulShape, m, {})   \
  X(int64_t, per_sample, 0)   \
  X(size_t, x, 0)             \
  X(size_t, s, 0)             \
  X(size_t, y, 0)             \
  X(bool, s_is_weight, false)

// y = x op k (zoc/kernels/const_op.cuh): k the shape's scalar, or with v set the fp32 vector at
// weight offset v; per_sample: x's elements.
#define ZOC_FIELDS_ConstOpCall(X) \
  X(ConstOpShape, m, {})          \
  X(int64_t, per_sample, 0)       \
  X(size_t, x, 0)                 \
  X(size_t, y, 0)                 \
  X(size_t, v, zoc::kNoTensor)

// y = a - b or a / b of two tensors of per_sample elements each (zoc/kernels/const_op.cuh).
#define ZOC_FIELDS_BinaryCall(X)             \
  X(ConstOpKind, op, zoc::ConstOpKind::kSub) \
  X(int64_t, per_sample, 0)                  \
  X(size_t, a, 0)                            \
  X(size_t, b, 0)                            \
  X(size_t, y, 0)

// A 1-D convolution over each sample's features (zoc/kernels/channel_conv.cuh): fp32 taps at
// weight offset w, the bias at b (or none).
#define ZOC_FIELDS_ChannelConvCall(X) \
  X(ChannelConvGeometry, g, {})       \
  X(size_t, x, 0)                     \
  X(size_t, w, 0)                     \
  X(size_t, b, zoc::kNoTensor)        \
  X(size_t, y, 0)

// Constant padding of an image (zoc/kernels/pad.cuh).
#define ZOC_FIELDS_PadCall(X) \
  X(PadGeometry, g, {})       \
  X(size_t, x, 0)             \
  X(size_t, y, 0)

// A reshape between stored element orders (zoc/kernels/relayout.cuh).
#define ZOC_FIELDS_RelayoutCall(X) \
  X(RelayoutGeometry, g, {})       \
  X(size_t, x, 0)                  \
  X(size_t, y, 0)

// Layer norm over the c channels at each of hw pixels; gamma then beta (fp32) at weight offset
// `params`.
#define ZOC_FIELDS_LayerNormCall(X) \
  X(int64_t, c, 0)                  \
  X(int64_t, hw, 1)                 \
  X(size_t, params, 0)              \
  X(float, eps, 0)                  \
  X(size_t, x, 0)                   \
  X(size_t, y, 0)

#define ZOC_FIELDS_ShuffleCall(X) \
  X(int64_t, c, 0)                \
  X(int64_t, hw, 1)               \
  X(int64_t, groups, 1)           \
  X(size_t, x, 0)                 \
  X(size_t, y, 0)

// Pooling cuDNN cannot do (ceil_mode, dilation), and adaptive average pooling.
#define ZOC_FIELDS_PoolKernelCall(X) \
  X(PoolGeometry, g, {})             \
  X(size_t, x, 0)                    \
  X(size_t, y, 0)

// Upsampling into tensor y or, where out.per_sample > 0 (a model output), straight into the
// caller's fp32 rows where out says.
#define ZOC_FIELDS_UpsampleCall(X) \
  X(UpsampleGeometry, g, {})       \
  X(size_t, x, 0)                  \
  X(size_t, y, 0)                  \
  X(OutputGeometry, out, {})

// Argmax over the c channels of tensor x (features: hw = 1), a model output: the class indices,
// fp32, into the caller's rows where out says.
#define ZOC_FIELDS_ArgmaxCall(X) \
  X(int64_t, c, 0)               \
  X(size_t, x, 0)                \
  X(OutputGeometry, out, {})

// Softmax, or with `log` log-softmax, over the c channels at each of hw pixels.
#define ZOC_FIELDS_ChannelSoftmaxCall(X) \
  X(int64_t, c, 0)                       \
  X(int64_t, hw, 1)                      \
  X(bool, log, false)                    \
  X(size_t, x, 0)                        \
  X(size_t, y, 0)

#define ZOC_FIELDS_AdaptivePoolCall(X) \
  X(AdaptiveGeometry, g, {})           \
  X(size_t, x, 0)                      \
  X(size_t, y, 0)

// The caller's fp32 NCHW input entering the model at tensor y (converted to NHWC with channels
// c..c_stored-1 zero, or copied).
#define ZOC_FIELDS_InputCall(X) \
  X(int, c, 0)                  \
  X(int, h, 0)                  \
  X(int, w, 0)                  \
  X(int, c_stored, 0)           \
  X(size_t, y, 0)

// The logits leaving the model: per_sample values of tensor y, to the caller's fp32 output; or,
// through zoc's output kernel (several outputs, an NHWC image), where g says (OutputGeometry).
#define ZOC_FIELDS_OutputCall(X) \
  X(size_t, y, 0)                \
  X(int64_t, per_sample, 0)      \
  X(OutputGeometry, g, {})
