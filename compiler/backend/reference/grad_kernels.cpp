// Backward kernels of the reference interpreter (see grad_kernels.h): plain loops with double
// accumulators. They serve gradient checks of small batches, so clarity beats speed; pooling's
// backward lives in pool.cpp beside its forward, which shares its window rules.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "compiler/backend/reference/grad_kernels.h"

namespace zoc::ref {

void conv2d_backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, const Conv2dShape& s) {
  assert(s.groups > 0 && s.c_in % s.groups == 0 && s.c_out % s.groups == 0);
  const int64_t cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups;
  const int64_t taps = s.kh * s.kw, plane = s.h * s.w, out_plane = s.out_h * s.out_w;
  std::vector<double> gx(dx ? static_cast<size_t>(s.n * s.c_in * plane) : 0, 0.0);
  std::vector<double> gw(static_cast<size_t>(s.c_out * cin_g * taps), 0.0);
  std::vector<double> gb(static_cast<size_t>(s.c_out), 0.0);
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t co = 0; co < s.c_out; ++co) {
      const int64_t g = co / cout_g;
      const float* dyp = dy + (b * s.c_out + co) * out_plane;
      for (int64_t oh = 0; oh < s.out_h; ++oh) {
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          const double grad = dyp[oh * s.out_w + ow];
          gb[co] += grad;
          if (grad == 0.0) continue;  // contributes nothing below (and ReLU zeroes many)
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const int64_t c = g * cin_g + ci;
            const float* xp = x + (b * s.c_in + c) * plane;
            const float* wp = w + (co * cin_g + ci) * taps;
            double* gwp = gw.data() + (co * cin_g + ci) * taps;
            double* gxp = dx ? gx.data() + (b * s.c_in + c) * plane : nullptr;
            for (int64_t r = 0; r < s.kh; ++r) {
              const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
              if (ih < 0 || ih >= s.h) continue;
              for (int64_t q = 0; q < s.kw; ++q) {
                const int64_t iw = ow * s.stride_w - s.pad_w + q * s.dil_w;
                if (iw < 0 || iw >= s.w) continue;
                gwp[r * s.kw + q] += grad * xp[ih * s.w + iw];
                if (gxp) gxp[ih * s.w + iw] += grad * wp[r * s.kw + q];
              }
            }
          }
        }
      }
    }
  }
  if (dx) std::transform(gx.begin(), gx.end(), dx, [](double v) { return float(v); });
  if (dw) std::transform(gw.begin(), gw.end(), dw, [](double v) { return float(v); });
  if (db) std::transform(gb.begin(), gb.end(), db, [](double v) { return float(v); });
}

void batchnorm2d_train(const float* x, float* y, int64_t n, int64_t c, int64_t hw,
                       const float* gamma, const float* beta, double eps, double* mean,
                       double* var_biased, double* invstd) {
  const double m = double(n * hw);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      const float* p = x + (b * c + ch) * hw;
      for (int64_t i = 0; i < hw; ++i) sum += p[i];
    }
    const double mu = sum / m;
    double sq = 0.0;  // two passes: the variance does not cancel catastrophically
    for (int64_t b = 0; b < n; ++b) {
      const float* p = x + (b * c + ch) * hw;
      for (int64_t i = 0; i < hw; ++i) sq += (p[i] - mu) * (p[i] - mu);
    }
    mean[ch] = mu;
    var_biased[ch] = sq / m;
    invstd[ch] = 1.0 / std::sqrt(var_biased[ch] + eps);
    const double g = gamma ? gamma[ch] : 1.0, be = beta ? beta[ch] : 0.0;
    for (int64_t b = 0; b < n; ++b) {
      const float* p = x + (b * c + ch) * hw;
      float* q = y + (b * c + ch) * hw;
      for (int64_t i = 0; i < hw; ++i) q[i] = float((p[i] - mu) * invstd[ch] * g + be);
    }
  }
}

void batchnorm2d_train_backward(const float* x, const float* dy, const float* gamma,
                                const double* mean, const double* invstd, int64_t n, int64_t c,
                                int64_t hw, float* dx, float* dgamma, float* dbeta) {
  const double m = double(n * hw);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      const float* p = x + (b * c + ch) * hw;
      const float* g = dy + (b * c + ch) * hw;
      for (int64_t i = 0; i < hw; ++i) {
        sum_dy += g[i];
        sum_dy_xhat += g[i] * (p[i] - mean[ch]) * invstd[ch];
      }
    }
    if (dgamma) dgamma[ch] = float(sum_dy_xhat);
    if (dbeta) dbeta[ch] = float(sum_dy);
    // dx = gamma * invstd / m * (m * dy - sum(dy) - xhat * sum(dy * xhat))
    const double scale = (gamma ? gamma[ch] : 1.0) * invstd[ch] / m;
    for (int64_t b = 0; b < n; ++b) {
      const float* p = x + (b * c + ch) * hw;
      const float* g = dy + (b * c + ch) * hw;
      float* out = dx + (b * c + ch) * hw;
      for (int64_t i = 0; i < hw; ++i) {
        const double xhat = (p[i] - mean[ch]) * invstd[ch];
        out[i] = float(scale * (m * g[i] - sum_dy - xhat * sum_dy_xhat));
      }
    }
  }
}

void global_avgpool_backward(const float* dy, float* dx, int64_t n, int64_t c, int64_t hw) {
  for (int64_t p = 0; p < n * c; ++p) {
    const float v = float(double(dy[p]) / double(hw));
    std::fill(dx + p * hw, dx + (p + 1) * hw, v);
  }
}

void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, int64_t n, int64_t in, int64_t out) {
  if (dx) {
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t i = 0; i < in; ++i) {
        double s = 0.0;
        for (int64_t o = 0; o < out; ++o) s += double(dy[b * out + o]) * w[o * in + i];
        dx[b * in + i] = float(s);
      }
    }
  }
  for (int64_t o = 0; o < out; ++o) {
    double sb = 0.0;
    for (int64_t b = 0; b < n; ++b) sb += dy[b * out + o];
    if (db) db[o] = float(sb);
    for (int64_t i = 0; dw && i < in; ++i) {
      double s = 0.0;
      for (int64_t b = 0; b < n; ++b) s += double(dy[b * out + o]) * x[b * in + i];
      dw[o * in + i] = float(s);
    }
  }
}

double softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                             float* dlogits) {
  double loss = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * cols;
    const double top = *std::max_element(z, z + cols);
    double sum = 0.0;
    for (int64_t k = 0; k < cols; ++k) sum += std::exp(z[k] - top);
    const double log_sum = std::log(sum) + top;
    const int32_t label = labels[r];
    assert(label >= 0 && label < cols);
    loss += log_sum - z[label];
    for (int64_t k = 0; k < cols; ++k) {
      const double p = std::exp(z[k] - log_sum);
      dlogits[r * cols + k] = float((p - (k == label ? 1.0 : 0.0)) / double(rows));
    }
  }
  return loss / double(rows);
}

void softmax_dim1_backward(const float* y, const float* dy, float* dx, int64_t n, int64_t c,
                           int64_t hw, bool log) {
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t p = 0; p < hw; ++p) {
      const int64_t base = s * c * hw + p;
      double sum = 0.0;
      for (int64_t k = 0; k < c; ++k) {
        const double g = dy[base + k * hw];
        sum += log ? g : g * y[base + k * hw];
      }
      for (int64_t k = 0; k < c; ++k) {
        const int64_t i = base + k * hw;
        dx[i] =
            log ? float(dy[i] - std::exp(double(y[i])) * sum) : float(double(y[i]) * (dy[i] - sum));
      }
    }
  }
}

}  // namespace zoc::ref
