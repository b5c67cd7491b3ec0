// The fields of a generated trainer's call constants (zoc/train_layers/calls.h) and of the
// convolution geometry inside them (zoc/train_layers/layers.h), each struct's list written once,
// here, in the convention of zoc/core/fields.h: the runtime declares the structs from the lists and
// zoc's trainer emitter prints the constants from them by name. Tensors are byte offsets: per
// sample into the arena, or into params(), grads() or the fixed region, as calls.h says; kNoTensor:
// none. Macros only: the compiler includes it too.
#pragma once

#include "zoc/core/fields.h"
#include "zoc/cudnn/call_fields.h"

// The convolution window of zoc/cudnn/call_fields.h, no epilogue.
#define ZOC_FIELDS_ConvGeometry(X) ZOC_FIELDS_ConvWindow(X)

// y = conv(x, w) (+ b); parameters w, b at byte offsets of params().
#define ZOC_FIELDS_ConvTrainCall(X) \
  X(ConvGeometry, g, {})            \
  X(size_t, x, 0)                   \
  X(size_t, w, 0)                   \
  X(size_t, b, zoc::kNoTensor)      \
  X(size_t, y, 0)

// A weighted layer's backward: its input x, dy and its weight w in; dx (kNoTensor: not
// needed), dw and db (grads() offsets; db kNoTensor if none) out.
#define ZOC_FIELDS_GradTensors(X) \
  X(size_t, x, 0)                 \
  X(size_t, dy, 0)                \
  X(size_t, w, 0)                 \
  X(size_t, dx, zoc::kNoTensor)   \
  X(size_t, dw, zoc::kNoTensor)   \
  X(size_t, db, zoc::kNoTensor)

// dx = conv^T(dy), dw, db.
#define ZOC_FIELDS_ConvGradCall(X) ZOC_FIELDS_GradTensors(X)

// Batch norm with its parameters in params() (gamma, beta, running mean, running variance) and
// its saved statistics in the fixed region ([2, c]: mean, then inverse deviation).
#define ZOC_FIELDS_BatchNormTrainCall(X) \
  X(int, c, 0)                           \
  X(int, h, 1)                           \
  X(int, w, 1)                           \
  X(double, eps, 0)                      \
  X(double, momentum, 0)                 \
  X(size_t, x, 0)                        \
  X(size_t, y, 0)                        \
  X(size_t, gamma, 0)                    \
  X(size_t, beta, 0)                     \
  X(size_t, mean, 0)                     \
  X(size_t, var, 0)                      \
  X(size_t, saved, 0)

// dx = BN'(dy); dgamma, dbeta into grads().
#define ZOC_FIELDS_BatchNormGradCall(X) \
  X(int, c, 0)                          \
  X(double, eps, 0)                     \
  X(size_t, x, 0)                       \
  X(size_t, dy, 0)                      \
  X(size_t, saved, 0)                   \
  X(size_t, gamma, 0)                   \
  X(size_t, dx, zoc::kNoTensor)         \
  X(size_t, dgamma, zoc::kNoTensor)     \
  X(size_t, dbeta, zoc::kNoTensor)

// A unary pointwise activation over `per_sample` elements: y = f(x); its backward reads the
// forward's output or input (`s`, as zoc::act's kFromOutput says). With x2 (dy2), the sum that an
// add right before it would have written: y = f(x + x2), dx = f'(s) (dy + dy2), the sum rounded
// to the storage type first, as the add would.
#define ZOC_FIELDS_ActivationTrainCall(X) \
  X(act::Kind, kind, {})                  \
  X(act::Params, params, {})              \
  X(int64_t, per_sample, 0)               \
  X(size_t, x, 0)                         \
  X(size_t, x2, zoc::kNoTensor)           \
  X(size_t, y, 0)

#define ZOC_FIELDS_ActivationGradCall(X) \
  X(act::Kind, kind, {})                 \
  X(act::Params, params, {})             \
  X(int64_t, per_sample, 0)              \
  X(size_t, s, 0)                        \
  X(size_t, dy, 0)                       \
  X(size_t, dy2, zoc::kNoTensor)         \
  X(size_t, dx, 0)

// dx = pool'(dy), for the PoolCall of the same layer (y: the forward's output, or for average
// pooling, which does not read it, any tensor of its shape).
#define ZOC_FIELDS_PoolGradCall(X) \
  X(size_t, x, 0)                  \
  X(size_t, y, 0)                  \
  X(size_t, dy, 0)                 \
  X(size_t, dx, 0)

// y[n, out] = x W^T (+ b), parameters in params().
#define ZOC_FIELDS_LinearTrainCall(X) ZOC_FIELDS_LinearCall(X)

// dx = dy W; dW = dy^T x; db = column sums of dy.
#define ZOC_FIELDS_LinearGradCall(X) \
  X(int, in, 0)                      \
  X(int, out, 0)                     \
  ZOC_FIELDS_GradTensors(X)

// Dropout with probability p: masks from (seed, step, layer, element), the same in backward.
#define ZOC_FIELDS_DropoutCall(X) \
  X(float, p, 0)                  \
  X(uint64_t, layer, 0)           \
  X(int64_t, per_sample, 0)       \
  X(size_t, x, 0)                 \
  X(size_t, y, 0)

// The mean softmax cross-entropy of `logits` against the labels: dlogits into the arena, the
// loss into the fixed region.
#define ZOC_FIELDS_LossCall(X) \
  X(int, classes, 0)           \
  X(size_t, logits, 0)         \
  X(size_t, dlogits, 0)        \
  X(size_t, loss, 0)

// The zoo's kernel layers. Their forwards are inference's calls (MulCall, ShuffleCall,
// AdaptivePoolCall of zoc/cudnn/call_fields.h; layer scale a MulCall whose s is its gamma in
// params()) but for layer norm, whose gamma and beta lie apart in params().
#define ZOC_FIELDS_LayerNormTrainCall(X) \
  X(int64_t, c, 0)                       \
  X(int64_t, hw, 1)                      \
  X(float, eps, 0)                       \
  X(size_t, x, 0)                        \
  X(size_t, y, 0)                        \
  X(size_t, gamma, 0)                    \
  X(size_t, beta, 0)

// y = a * b's gradients (b of a's shape, or a's per-sample channel vector, as m says): da, db
// (kNoTensor: nobody reads it).
#define ZOC_FIELDS_MulGradCall(X) \
  X(ChannelMulShape, m, {})       \
  X(size_t, a, 0)                 \
  X(size_t, b, 0)                 \
  X(size_t, dy, 0)                \
  X(size_t, da, zoc::kNoTensor)   \
  X(size_t, db, zoc::kNoTensor)

// y = x op v (v op x: reverse), v a parameter in params(), per channel or one value (c 1, hw
// the whole sample): layer scale's (mul) or an operand's; dx, and dv into grads().
#define ZOC_FIELDS_OperandGradCall(X)        \
  X(ConstOpKind, op, zoc::ConstOpKind::kMul) \
  X(bool, reverse, false)                    \
  X(int64_t, c, 0)                           \
  X(int64_t, hw, 1)                          \
  X(size_t, x, 0)                            \
  X(size_t, dy, 0)                           \
  X(size_t, v, 0)                            \
  X(size_t, dx, 0)                           \
  X(size_t, dv, zoc::kNoTensor)

// softmax's (log: log_softmax's) backward from its output y, over the c channels of each of hw
// pixels (features: hw 1).
#define ZOC_FIELDS_SoftmaxGradCall(X) \
  X(int64_t, c, 0)                    \
  X(int64_t, hw, 1)                   \
  X(bool, log, false)                 \
  X(size_t, y, 0)                     \
  X(size_t, dy, 0)                    \
  X(size_t, dx, 0)

// Upsampling's backward: dx (the forward's input, g's c x h x w) from dy (out_h x out_w), fp32
// NCHW.
#define ZOC_FIELDS_UpsampleGradCall(X) \
  X(UpsampleGeometry, g, {})           \
  X(size_t, dy, 0)                     \
  X(size_t, dx, 0)

// ECA's 1-D convolution over the features: dx, and the taps' and bias's gradients into grads().
#define ZOC_FIELDS_ChannelConvGradCall(X) \
  X(ChannelConvGeometry, g, {})           \
  X(size_t, x, 0)                         \
  X(size_t, dy, 0)                        \
  X(size_t, w, 0)                         \
  X(size_t, dx, zoc::kNoTensor)           \
  X(size_t, dw, zoc::kNoTensor)           \
  X(size_t, db, zoc::kNoTensor)

// Layer norm's: dx, and dgamma and dbeta into grads(); its statistics are recomputed from x into
// the workspace (2 floats per pixel).
#define ZOC_FIELDS_LayerNormGradCall(X) \
  X(int64_t, c, 0)                      \
  X(int64_t, hw, 1)                     \
  X(float, eps, 0)                      \
  X(size_t, x, 0)                       \
  X(size_t, dy, 0)                      \
  X(size_t, gamma, 0)                   \
  X(size_t, dx, 0)                      \
  X(size_t, dgamma, zoc::kNoTensor)     \
  X(size_t, dbeta, zoc::kNoTensor)

// The backward of a pooling zoc's kernel runs (PoolKernelCall forward: ceil_mode, dilation).
#define ZOC_FIELDS_PoolKernelGradCall(X) \
  X(PoolGeometry, g, {})                 \
  X(size_t, x, 0)                        \
  X(size_t, dy, 0)                       \
  X(size_t, dx, 0)

// Adaptive average pooling's: each dy spread over its bin.
#define ZOC_FIELDS_AdaptivePoolGradCall(X) \
  X(AdaptiveGeometry, g, {})               \
  X(size_t, dy, 0)                         \
  X(size_t, dx, 0)

// slice_channels's: dy into channels [start, start + count) of dx, whose other channels are zero
// (`channels` in all, hw pixels each).
#define ZOC_FIELDS_PadChannelsCall(X) \
  X(int64_t, channels, 0)             \
  X(int64_t, start, 0)                \
  X(int64_t, count, 0)                \
  X(int64_t, hw, 1)                   \
  X(size_t, dy, 0)                    \
  X(size_t, dx, 0)
