// The reference semantics of INT8 inference (issue 35): what an int8 tensor holds and what an
// int8 convolution computes, in the float operations, and their order, of cuDNN's requantizing
// epilogue (runtime/zoc/math/requant.h; results/2026-11-29-h200-int8-probe found the H200's
// bytes equal to them). The interpreter holds an int8 tensor as its float value q * scale, so
// every other layer reads it unchanged; a reader that quantizes it again at the same scale gets
// q back exactly (|q| <= 128, two correctly rounded operations).
//
// An int8 convolution (passes/quantize_int8.cpp sets its scales):
//   x_q = sat(rint(x / s_x));  w_q[k] = sat(rint(w[k] / s_w[k])), s_w[k] = max|w[k]| / 127,
//   w the convolution's weight with any BatchNorm folded in;
//   acc = the exact integer sum of x_q * w_q, converted to float;
//   pre = s_res with a residual, else s_out with an int8 output, else 1;
//   v = acc * m[k] + c[k] (+ z_q) [relu] (* post), each step rounded to float, where
//   m[k] = s_x * s_w[k] / pre, c[k] = bias[k] / pre and post = pre / s_out (1 with a float
//   output), each computed in double and rounded to float once;
//   y = sat(rint(v)) * s_out, or v with a float output.
// Dividing by `pre` first is what makes the residual z_q an operand as the int8 tensor stores
// it: cuDNN's epilogue takes the convolution's result as each op's first operand, so a scale of
// its own on z cannot be expressed.
#include <algorithm>
#include <cmath>

#include "compiler/backend/reference/runner.h"
#include "compiler/ir/activation_params.h"
#include "zoc/math/requant.h"

namespace zoc::ref {

float int8_value(float x, float scale) {
  return static_cast<float>(requant::to_int8(x / scale, requant::Rounding::kNearestEven)) * scale;
}

namespace {

int8_t to_q(float v) { return requant::to_int8(v, requant::Rounding::kNearestEven); }

// Per output channel: the symmetric scale max|w[k]| / 127 (1 for an all-zero channel) and the
// int8 weights, held as floats.
std::vector<float> quantize_weights(const std::vector<float>& w, int64_t c_out,
                                    std::vector<float>& scales) {
  const auto per_k = static_cast<int64_t>(w.size()) / c_out;
  std::vector<float> q(w.size());
  scales.assign(static_cast<size_t>(c_out), 1.0f);
  for (int64_t k = 0; k < c_out; ++k) {
    const float* row = w.data() + k * per_k;
    float amax = 0.0f;
    for (int64_t j = 0; j < per_k; ++j) amax = std::max(amax, std::fabs(row[j]));
    if (amax > 0.0f && std::isfinite(amax)) scales[k] = static_cast<float>(amax / 127.0);
    for (int64_t j = 0; j < per_k; ++j) q[k * per_k + j] = to_q(row[j] / scales[k]);
  }
  return q;
}

}  // namespace

namespace detail {

void Runner::int8_conv(const ir::Node& node, const Conv2dShape& cs, const std::vector<float>& w,
                       const std::vector<float>& bias) {
  const ir::Attrs& a = node.attrs;
  const auto s_x = static_cast<float>(a.f("int8_in"));
  const bool residual = node.inputs.size() == 2;
  const bool int8_out = a.has("int8_out");
  const double s_out = int8_out ? static_cast<float>(a.f("int8_out")) : 1.0;
  const double pre = residual ? static_cast<float>(a.f("int8_res")) : s_out;
  const auto post = static_cast<float>(pre / s_out);

  const int64_t nx = count(node.inputs[0]);
  std::vector<float> xq(static_cast<size_t>(nx));
  const float* x = in(node, 0);
  for (int64_t i = 0; i < nx; ++i) xq[i] = to_q(x[i] / s_x);
  std::vector<float> s_w;
  const std::vector<float> wq = quantize_weights(w, cs.c_out, s_w);
  float* y = out(node.output);
  ref::conv2d(xq.data(), wq.data(), nullptr, y, cs);  // exact sums, each rounded to float once

  std::vector<float> m(s_w.size()), c(s_w.size());
  for (size_t k = 0; k < s_w.size(); ++k) {
    m[k] = static_cast<float>(double{s_x} * s_w[k] / pre);
    c[k] = static_cast<float>(double{bias[k]} / pre);
  }
  // The pass quantizes a convolution only without an activation or with ReLU.
  const bool relu = ir::fused_activation(static_cast<int>(a.i("activation"))) != nullptr;
  const auto s_z = static_cast<float>(pre);
  const float* z = residual ? in(node, 1) : nullptr;
  const int64_t plane = cs.out_h * cs.out_w, n = count(node.output);
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>((i / plane) % cs.c_out);
    float v = y[i] * m[k];
    v = v + c[k];
    if (z) v = v + static_cast<float>(to_q(z[i] / s_z));
    if (relu && v < 0.0f) v = 0.0f;
    if (post != 1.0f) v = v * post;
    y[i] = int8_out ? static_cast<float>(to_q(v)) * static_cast<float>(s_out) : v;
  }
}

template <>
void Runner::run_op<OpKind::Quantize>(const ir::Node& node) {
  const auto scale = static_cast<float>(node.attrs.f("scale"));
  const float* x = in(node, 0);
  float* y = out(node.output);
  for (int64_t i = 0, n = count(node.output); i < n; ++i) y[i] = int8_value(x[i], scale);
}

}  // namespace detail

}  // namespace zoc::ref
