// The shapes zoc's own kernels take (zoc/kernels/layer_kernels.cuh, depthwise.cuh), each declared
// from its field list, which zoc's emitter prints generated constants from (zoc/core/fields.h).
// Plain C++17, no CUDA: the compiler includes it too.
#pragma once

#include <cstdint>

#include "zoc/core/fields.h"
#include "zoc/math/activations.h"

// y = x * s: s per channel (per sample: [N, C]; else [C], shared by every sample), or with
// `elementwise` of x's shape.
#define ZOC_FIELDS_ChannelMulShape(X) \
  X(int64_t, c, 0)                    \
  X(int64_t, hw, 1)                   \
  X(bool, nhwc, false)                \
  X(bool, per_sample, false)          \
  X(bool, elementwise, false)

// y = x op k with a constant k (add, sub, mul, div; `reverse`: k op x): k is `scalar` unless the
// call gives an fp32 vector, which holds one value (per_channel false) or one per channel of x
// ([N, c, hw], or features [N, c] with hw 1).
#define ZOC_FIELDS_ConstOpShape(X)           \
  X(int64_t, c, 0)                           \
  X(int64_t, hw, 1)                          \
  X(bool, nhwc, false)                       \
  X(ConstOpKind, op, zoc::ConstOpKind::kAdd) \
  X(bool, reverse, false)                    \
  X(bool, per_channel, false)                \
  X(float, scalar, 0)

// A 1-D convolution over each sample's f features (one input and one output channel): out
// outputs, k taps, stride, padding (zeros on each side), dilation; fp32 weights [k] and an
// optional bias [1].
#define ZOC_FIELDS_ChannelConvGeometry(X) \
  X(int64_t, f, 0)                        \
  X(int64_t, out, 0)                      \
  X(int64_t, k, 1)                        \
  X(int64_t, stride, 1)                   \
  X(int64_t, padding, 0)                  \
  X(int64_t, dilation, 1)

// Constant padding: a c-channel image h x w at rows top.., columns left.. of out_h x out_w, the
// other elements `value`.
#define ZOC_FIELDS_PadGeometry(X) \
  X(int64_t, c, 0)                \
  X(int64_t, h, 0)                \
  X(int64_t, w, 0)                \
  X(int64_t, out_h, 1)            \
  X(int64_t, out_w, 1)            \
  X(int64_t, top, 0)              \
  X(int64_t, left, 0)             \
  X(float, value, 0)              \
  X(bool, nhwc, false)

// A reshape between stored orders: c_in channels of hw_in pixels to c_out of hw_out (the same
// count), each NHWC or NCHW (features: hw 1).
#define ZOC_FIELDS_RelayoutGeometry(X) \
  X(int64_t, c_in, 1)                  \
  X(int64_t, hw_in, 1)                 \
  X(bool, nhwc_in, false)              \
  X(int64_t, c_out, 1)                 \
  X(int64_t, hw_out, 1)                \
  X(bool, nhwc_out, false)

// A window over an image: input channels, height and width; output size; window size,
// stride, padding and dilation (pooling's and the depthwise convolution's).
#define ZOC_FIELDS_KernelWindow(X) \
  X(int64_t, c, 0)                 \
  X(int64_t, h, 0)                 \
  X(int64_t, w, 0)                 \
  X(int64_t, out_h, 1)             \
  X(int64_t, out_w, 1)             \
  X(int64_t, kh, 1)                \
  X(int64_t, kw, 1)                \
  X(int64_t, stride_h, 1)          \
  X(int64_t, stride_w, 1)          \
  X(int64_t, pad_h, 0)             \
  X(int64_t, pad_w, 0)             \
  X(int64_t, dil_h, 1)             \
  X(int64_t, dil_w, 1)

// A pooling window's geometry (the IR's attributes after shape inference), max or average
// (count_include_pad: the divisor counts the taps in the padded input, else in the input).
#define ZOC_FIELDS_PoolGeometry(X)                                                 \
  ZOC_FIELDS_KernelWindow(X) X(bool, max, false) X(bool, count_include_pad, false) \
      X(bool, nhwc, false)

#define ZOC_FIELDS_AdaptiveGeometry(X) \
  X(int64_t, c, 0)                     \
  X(int64_t, h, 0)                     \
  X(int64_t, w, 0)                     \
  X(int64_t, out_h, 1)                 \
  X(int64_t, out_w, 1)                 \
  X(bool, nhwc, false)

// Nearest or bilinear upsampling of a c-channel image h x w to out_h x out_w (PyTorch's
// upsample_nearest2d and upsample_bilinear2d). scale_h, scale_w: the layer's scale factors, or 0
// where it gave a size (the ratio is then in / out). direct: nearest's out = in and out = 2 * in
// indexed directly, as PyTorch's channels-last kernel does (it runs it for one-channel images).
#define ZOC_FIELDS_UpsampleGeometry(X) \
  X(int64_t, c, 0)                     \
  X(int64_t, h, 0)                     \
  X(int64_t, w, 0)                     \
  X(int64_t, out_h, 1)                 \
  X(int64_t, out_w, 1)                 \
  X(double, scale_h, 0)                \
  X(double, scale_w, 0)                \
  X(bool, bilinear, false)             \
  X(bool, align_corners, false)        \
  X(bool, direct, false)               \
  X(bool, nhwc, false)

// One model output into the caller's fp32 buffer [N, pitch]: per_sample values of the model's
// tensor (c channels of hw pixels, stored NHWC where nhwc: transposed back to NCHW) to columns
// offset..offset+per_sample-1 of each row (several outputs share a row, in the model's order).
#define ZOC_FIELDS_OutputGeometry(X) \
  X(int64_t, per_sample, 0)          \
  X(int64_t, c, 1)                   \
  X(int64_t, hw, 1)                  \
  X(bool, nhwc, false)               \
  X(int64_t, pitch, 0)               \
  X(int64_t, offset, 0)

// A depthwise convolution (groups = c = output channels) and its fused epilogue:
// y = act(conv(x, w) + b [+ z]), act none unless `activation`. nhwc: the filter then tap-major
// [kh, kw, c], else [c, kh, kw].
#define ZOC_FIELDS_DepthwiseGeometry(X)                                      \
  ZOC_FIELDS_KernelWindow(X) X(bool, nhwc, false) X(bool, activation, false) \
      X(act::Kind, kind, zoc::act::Kind::kRelu) X(act::Params, params, {})

namespace zoc {

enum class ConstOpKind : uint8_t { kAdd, kSub, kMul, kDiv };

struct ChannelMulShape {
  ZOC_FIELDS_ChannelMulShape(ZOC_DECLARE_FIELD)
};
struct ConstOpShape {
  ZOC_FIELDS_ConstOpShape(ZOC_DECLARE_FIELD)
};
struct ChannelConvGeometry {
  ZOC_FIELDS_ChannelConvGeometry(ZOC_DECLARE_FIELD)
};
struct PadGeometry {
  ZOC_FIELDS_PadGeometry(ZOC_DECLARE_FIELD)
};
struct RelayoutGeometry {
  ZOC_FIELDS_RelayoutGeometry(ZOC_DECLARE_FIELD)
};
struct PoolGeometry {
  ZOC_FIELDS_PoolGeometry(ZOC_DECLARE_FIELD)
};
struct AdaptiveGeometry {
  ZOC_FIELDS_AdaptiveGeometry(ZOC_DECLARE_FIELD)
};
struct UpsampleGeometry {
  ZOC_FIELDS_UpsampleGeometry(ZOC_DECLARE_FIELD)
};
struct OutputGeometry {
  ZOC_FIELDS_OutputGeometry(ZOC_DECLARE_FIELD)
};
struct DepthwiseGeometry {
  ZOC_FIELDS_DepthwiseGeometry(ZOC_DECLARE_FIELD)
};

}  // namespace zoc
