// Folding inference-mode BatchNorm into the preceding convolution's weights and bias.
//
// Shared by the reference interpreter and the generated constructors, so the oracle and the
// GPU code fold with the same arithmetic. The math (see compiler/passes/fold_batchnorm.cpp):
//   s[o] = gamma[o] / sqrt(var[o] + eps)
//   W'[o, ...] = W[o, ...] * s[o]
//   b'[o] = (b[o] - mean[o]) * s[o] + beta[o]      (b = 0 when the conv has no bias)
// computed in double and rounded once to float. Dependency-free C++17.
#pragma once

#include <cmath>
#include <cstdint>

namespace zoc {

// w: [out_channels, per_channel] floats; bias may be null. gamma/beta/mean/var may all be null
// (no BN: W' = W, b' = b or 0). Writes w_out (same size as w) and b_out [out_channels].
inline void fold_conv_bias_bn(const float* w, const float* bias, const float* gamma,
                              const float* beta, const float* mean, const float* var, double eps,
                              int64_t out_channels, int64_t per_channel, float* w_out,
                              float* b_out) {
  for (int64_t o = 0; o < out_channels; ++o) {
    const double b = bias ? static_cast<double>(bias[o]) : 0.0;
    double s = 1.0;
    double shift = b;
    if (gamma) {
      s = static_cast<double>(gamma[o]) / std::sqrt(static_cast<double>(var[o]) + eps);
      shift = (b - static_cast<double>(mean[o])) * s + static_cast<double>(beta[o]);
    }
    const float* src = w + o * per_channel;
    float* dst = w_out + o * per_channel;
    for (int64_t k = 0; k < per_channel; ++k) {
      dst[k] = static_cast<float>(static_cast<double>(src[k]) * s);
    }
    b_out[o] = static_cast<float>(shift);
  }
}

}  // namespace zoc
