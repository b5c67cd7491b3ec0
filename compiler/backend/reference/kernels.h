// The numerical kernels of the reference interpreter. The interpreter is the oracle that proves
// frontends and passes preserve meaning, so these functions must reproduce PyTorch fp32 eval-mode
// semantics (padding, ceil_mode, count_include_pad, NaN propagation) and be at least as accurate:
// convolution and linear accumulate in double and round once. They know nothing of the IR: the
// interpreter computes shapes (with the two helpers below, which shape inference shares) and
// passes contiguous float32 NCHW or [rows, features] buffers. Preconditions (positive sizes,
// groups dividing channels, output buffers of the right size) are the caller's, checked by shape
// inference; kernels only assert them. Elementwise kernels accept y == x (in place); conv, pool,
// linear and concat need distinct output buffers.
#pragma once

#include <cstdint>
#include <vector>

#include "zoc/math/activations.h"

namespace zoc::ref {

namespace detail {
// PyTorch's div_rtn: shape formulas must floor, not truncate, so that a kernel that does not fit
// yields a size <= 0 (which the caller rejects) rather than a plausible 1.
constexpr int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
}  // namespace detail

// Output extent of a convolution along one axis (PyTorch's conv formula). Returns <= 0 when the
// dilated kernel does not fit in the padded input. Arguments must be validated dims (k, stride,
// dil >= 1, pad >= 0, all below 2^31) so that no intermediate overflows.
constexpr int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  return detail::floor_div(in + 2 * pad - dil * (k - 1) - 1, stride) + 1;
}

// Output extent of max/avg pooling along one axis (PyTorch's pooling_output_shape). With
// ceil_mode a partial last window is kept only if it starts inside the input or the left padding;
// PyTorch additionally requires pad <= k / 2, which the caller checks. Same preconditions and
// <= 0 convention as conv_out_size.
constexpr int64_t pool_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil,
                                bool ceil_mode) {
  int64_t out =
      detail::floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) +
      1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

struct Conv2dShape {
  int64_t n, c_in, h, w, c_out, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups,
      out_h, out_w;
};

// y[n, c_out, out_h, out_w] = conv(x[n, c_in, h, w], w) + bias, zero padding, cross-correlation
// as in PyTorch. w is [c_out, c_in / groups, kh, kw]; bias is [c_out] or null.
void conv2d(const float* x, const float* w, const float* bias, float* y, const Conv2dShape& s);

// The value an int8 tensor of `scale` holds for x: clamp(rint(x / scale), -128, 127) * scale,
// rounding to nearest, ties to even, in float (int8.cpp: the int8 semantics).
float int8_value(float x, float scale);

// PyTorch eval-mode batch_norm: y = (x - mean) / sqrt(var + eps) * gamma + beta per channel of
// x[n, c, hw]. gamma or beta may be null (affine=False: 1 and 0).
void batchnorm2d(const float* x, float* y, int64_t n, int64_t c, int64_t hw, const float* gamma,
                 const float* beta, const float* mean, const float* var, double eps);

struct Pool2dShape {
  int64_t n, c, h, w, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, out_h, out_w;
  bool count_include_pad;  // avgpool only
};

// Padding acts as -inf and NaN propagates (PyTorch). out_h/out_w come from pool_out_size, so the
// caller decides ceil_mode.
void maxpool2d(const float* x, float* y, const Pool2dShape& s);

// PyTorch avg_pool2d: windows are clipped to the padded input for the count_include_pad divisor
// and to the real input for the sum and the other divisor; a window with no input element gives
// 0. PyTorch has no dilated avg pool; dil != 1 generalizes by counting the window's taps.
void avgpool2d(const float* x, float* y, const Pool2dShape& s);

// x[n, c, hw] -> y[n, c], the mean over hw.
void global_avgpool(const float* x, float* y, int64_t n, int64_t c, int64_t hw);

// y[n, out] = x[n, in] * w[out, in]^T + bias[out]; bias may be null.
void linear(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
            int64_t out);

// Row-wise softmax over the last dim of x[rows, cols], stable for any finite logits.
void softmax(const float* x, float* y, int64_t rows, int64_t cols);

// y = Math::forward(x) elementwise, for an activation of zoc/math/activations.h, in double.
template <class Math>
void activation(const float* x, float* y, int64_t count, const act::Params& p = {}) {
  for (int64_t i = 0; i < count; ++i) {
    y[i] = static_cast<float>(Math::forward(static_cast<double>(x[i]), p));
  }
}

// dx = Math::backward(s, dy) elementwise, s being the forward's output or input (Math says).
template <class Math>
void activation_backward(const float* s, const float* dy, float* dx, int64_t count,
                         const act::Params& p = {}) {
  for (int64_t i = 0; i < count; ++i) {
    dx[i] = static_cast<float>(
        Math::backward(static_cast<double>(s[i]), static_cast<double>(dy[i]), p));
  }
}

// Elementwise; NaN propagates as in PyTorch.
inline void relu(const float* x, float* y, int64_t count) { activation<act::Relu>(x, y, count); }
inline void tanh(const float* x, float* y, int64_t count) { activation<act::Tanh>(x, y, count); }
inline void sigmoid(const float* x, float* y, int64_t count) {
  activation<act::Sigmoid>(x, y, count);
}
void add(const float* a, const float* b, float* y, int64_t count);

// y[n, sum(channels), hw] from inputs[i] of shape [n, channels[i], hw].
void concat_channels(const std::vector<const float*>& inputs, const std::vector<int64_t>& channels,
                     float* y, int64_t n, int64_t hw);

// The channel ops of the CNN zoo (channel_kernels.cpp). Images are x[n, c, hw].

// y[n, c, hw] = x[n, c, hw] * gamma[c] (layer_scale).
void channel_scale(const float* x, const float* gamma, float* y, int64_t n, int64_t c, int64_t hw);

// PyTorch's layer_norm over the c channels of each of the hw pixels (hw = 1: over the features
// of x[n, c]): y = (x - mean) / sqrt(var + eps) * weight + bias, var biased.
void layernorm(const float* x, float* y, int64_t n, int64_t c, int64_t hw, const float* weight,
               const float* bias, double eps);

// Output channel j * groups + i = input channel i * (c / groups) + j.
void channel_shuffle(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int64_t groups);

// Copies `count` channels from x[n, x_c, hw] at x_start to y[n, y_c, hw] at y_start; the other
// channels of y are left as they are (slice_channels, and pad_channels into zeros).
struct ChannelCopy {
  int64_t n, hw, x_c, x_start, y_c, y_start, count;
};
void copy_channels(const float* x, float* y, const ChannelCopy& s);

// PyTorch's adaptive_avg_pool2d of x[n*c, h, w] to [n*c, oh, ow]: output cell (i, j) averages
// rows [floor(i h / oh), ceil((i + 1) h / oh)) and the columns likewise (pool.cpp).
struct AdaptivePoolShape {
  int64_t planes, h, w, oh, ow;
};
void adaptive_avgpool2d(const float* x, float* y, const AdaptivePoolShape& s);

// The binary ops (elementwise.cpp). An operand: its per-sample dims, of the output's rank, 1
// where it broadcasts; `batched`: one such tensor per sample, else one for the whole batch (a
// parameter, a scalar).
struct Operand {
  const float* data;
  std::vector<int64_t> dims;
  bool batched;
};
enum class BinaryOp { kAdd, kSub, kMul, kDiv };
// y[n, dims] = a op b, each element one float operation (NumPy's broadcasting).
void binary(BinaryOp op, const Operand& a, const Operand& b, float* y, int64_t n,
            const std::vector<int64_t>& dims);

// Dense prediction (issue 37): resample.cpp and channel_kernels.cpp.

// x[planes, h, w] -> y[planes, oh, ow]. scale_h, scale_w: the layer's scale factors, or 0 where
// it gave a size (PyTorch then scales by in / out).
struct UpsampleShape {
  int64_t planes, h, w, oh, ow;
  double scale_h, scale_w;
  bool align_corners;  // bilinear only
  // Nearest only: PyTorch's channels-last kernel, which it runs for a one-channel NCHW tensor
  // too (whose strides are also channels-last ones): it maps out = in and out = 2 * in
  // directly, where the NCHW kernel floors i * s even when a scale factor gave those sizes.
  bool direct;
};
// PyTorch's upsample_nearest2d: source index min(floor(i * s), in - 1), s a float.
void upsample_nearest(const float* x, float* y, const UpsampleShape& s);
// PyTorch's upsample_bilinear2d (align_corners true or false).
void upsample_bilinear(const float* x, float* y, const UpsampleShape& s);

// Constant padding of x[planes, h, w] to y[planes, top + h + bottom, left + w + right], the
// added elements `value` (F.pad's constant mode).
struct PadShape {
  int64_t planes, h, w, top, left, bottom, right;
};
void pad_constant(const float* x, float* y, const PadShape& s, float value);

// PyTorch's conv1d with one input and one output channel along the f features of each of the
// n rows of x[n, f] (ECA attention): y[n, out] from the kernel w[k] and an optional bias.
struct ChannelConvShape {
  int64_t n, f, out, k, stride, padding, dilation;
};
void channel_conv1d(const float* x, const float* w, const float* bias, float* y,
                    const ChannelConvShape& s);

// PyTorch's conv_transpose2d: y[n, c_out, out_h, out_w] from x[n, c_in, h, w] and
// w[c_in, c_out / groups, kh, kw] (Conv2dShape's h, w are the input's, out_h, out_w the
// output's), plus bias[c_out] (may be null).
void conv_transpose2d(const float* x, const float* w, const float* bias, float* y,
                      const Conv2dShape& s);

// Softmax (or log-softmax) over the c channels of each of the hw pixels of x[n, c, hw] (hw = 1:
// the features of [n, c]); a NaN makes its pixel's results NaN, as in PyTorch.
void softmax_dim1(const float* x, float* y, int64_t n, int64_t c, int64_t hw, bool log);

// y[n, hw] = the index of the largest of the c channels at each pixel of x[n, c, hw], as a float:
// the first of equal maxima, and the first NaN, as PyTorch's argmax.
void argmax_dim1(const float* x, float* y, int64_t n, int64_t c, int64_t hw);

}  // namespace zoc::ref
