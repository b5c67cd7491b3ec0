// The kernels that are not convolution, GEMM or pooling: batch norm, softmax, the residual add
// and channel concat (activations are templates over zoc/math/activations.h, in kernels.h). They
// are memory-bound and simple, so plain loops suffice; what matters is PyTorch's semantics (NaN
// propagation, softmax stability) and computing in double with one final rounding, so the oracle is
// never the less accurate side of a comparison.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {

void batchnorm2d(const float* x, float* y, int64_t n, int64_t c, int64_t hw, const float* gamma,
                 const float* beta, const float* mean, const float* var, double eps) {
  assert(n >= 0 && c >= 0 && hw >= 0);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double scale = (gamma != nullptr ? static_cast<double>(gamma[ch]) : 1.0) /
                         std::sqrt(static_cast<double>(var[ch]) + eps);
    const double shift = beta != nullptr ? static_cast<double>(beta[ch]) : 0.0;
    const double mu = mean[ch];
    for (int64_t b = 0; b < n; ++b) {
      const int64_t base = (b * c + ch) * hw;
      for (int64_t i = 0; i < hw; ++i) {
        y[base + i] = static_cast<float>((static_cast<double>(x[base + i]) - mu) * scale + shift);
      }
    }
  }
}

void softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  assert(rows >= 0 && cols >= 0);
  std::vector<double> e(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    if (cols == 0) continue;
    // Subtracting the row max keeps every exp in (0, 1], so large logits cannot overflow; a NaN
    // anywhere makes the sum NaN and so the whole row, as in PyTorch.
    const double m = *std::max_element(in, in + cols);
    double sum = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      e[j] = std::exp(static_cast<double>(in[j]) - m);
      sum += e[j];
    }
    for (int64_t j = 0; j < cols; ++j) out[j] = static_cast<float>(e[j] / sum);
  }
}

void add(const float* a, const float* b, float* y, int64_t count) {
  // A single float addition is already correctly rounded, as in PyTorch.
  for (int64_t i = 0; i < count; ++i) y[i] = a[i] + b[i];
}

void concat_channels(const std::vector<const float*>& inputs, const std::vector<int64_t>& channels,
                     float* y, int64_t n, int64_t hw) {
  assert(inputs.size() == channels.size());
  for (int64_t b = 0; b < n; ++b) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t len = channels[i] * hw;
      if (len > 0) std::memcpy(y, inputs[i] + b * len, static_cast<size_t>(len) * sizeof(float));
      y += len;
    }
  }
}

}  // namespace zoc::ref
