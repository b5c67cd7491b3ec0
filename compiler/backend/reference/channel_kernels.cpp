// The channel ops of the CNN zoo and their gradients (kernels.h, grad_kernels.h): the
// squeeze-and-excitation multiply's gradient (its forward is elementwise.cpp's), ConvNeXt's layer
// scale and per-pixel layer norm, ShuffleNet's channel shuffle and channel slices. Plain loops over
// x[n, c, hw]; sums in double, rounded once, so that the oracle is never the less accurate side of
// a comparison with PyTorch's float kernels.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "compiler/backend/reference/grad_kernels.h"
#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {
namespace {

// The statistics of one pixel's c channels, spaced hw apart: mean and 1 / sqrt(var + eps).
struct PixelStats {
  double mean = 0, rstd = 0;
};

PixelStats pixel_stats(const float* x, int64_t c, int64_t hw, double eps) {
  double sum = 0;
  for (int64_t k = 0; k < c; ++k) sum += x[k * hw];
  const double mean = sum / double(c);
  double sq = 0;  // two passes: the variance does not cancel catastrophically
  for (int64_t k = 0; k < c; ++k) sq += (x[k * hw] - mean) * (x[k * hw] - mean);
  return {mean, 1.0 / std::sqrt(sq / double(c) + eps)};
}

}  // namespace

void channel_scale(const float* x, const float* gamma, float* y, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t k = 0; k < c; ++k) {
      const int64_t base = (b * c + k) * hw;
      for (int64_t i = 0; i < hw; ++i) y[base + i] = x[base + i] * gamma[k];
    }
  }
}

void layernorm(const float* x, float* y, int64_t n, int64_t c, int64_t hw, const float* weight,
               const float* bias, double eps) {
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < hw; ++p) {
      const float* xp = x + b * c * hw + p;
      float* yp = y + b * c * hw + p;
      const PixelStats s = pixel_stats(xp, c, hw, eps);
      for (int64_t k = 0; k < c; ++k) {
        yp[k * hw] = static_cast<float>((xp[k * hw] - s.mean) * s.rstd * weight[k] + bias[k]);
      }
    }
  }
}

void channel_shuffle(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int64_t groups) {
  assert(groups > 0 && c % groups == 0);
  const int64_t per_group = c / groups;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < groups; ++i) {
      for (int64_t j = 0; j < per_group; ++j) {
        std::copy_n(x + (b * c + i * per_group + j) * hw, hw, y + (b * c + j * groups + i) * hw);
      }
    }
  }
}

void copy_channels(const float* x, float* y, const ChannelCopy& s) {
  assert(s.x_start + s.count <= s.x_c && s.y_start + s.count <= s.y_c);
  for (int64_t b = 0; b < s.n; ++b) {
    std::copy_n(x + (b * s.x_c + s.x_start) * s.hw, s.count * s.hw,
                y + (b * s.y_c + s.y_start) * s.hw);
  }
}

void mul_backward(const float* a, const float* b, const float* dy, float* da, float* db, int64_t n,
                  int64_t c, int64_t hw, bool b_per_channel) {
  for (int64_t plane = 0; plane < n * c; ++plane) {
    double sum = 0;
    for (int64_t i = 0; i < hw; ++i) {
      const int64_t at = plane * hw + i;
      da[at] = dy[at] * (b_per_channel ? b[plane] : b[at]);
      if (b_per_channel) {
        sum += double(dy[at]) * a[at];
      } else {
        db[at] = dy[at] * a[at];
      }
    }
    if (b_per_channel) db[plane] = static_cast<float>(sum);
  }
}

void operand_backward(BinaryOp op, bool reverse, const float* x, const float* v, const float* dy,
                      float* dx, float* dv, int64_t n, int64_t c, int64_t hw) {
  std::vector<double> sum(static_cast<size_t>(c), 0.0);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t k = 0; k < c; ++k) {
      const int64_t base = (b * c + k) * hw;
      for (int64_t i = base; i < base + hw; ++i) {
        switch (op) {
          case BinaryOp::kAdd:
          case BinaryOp::kSub:
            dx[i] = op == BinaryOp::kSub && reverse ? -dy[i] : dy[i];
            sum[k] += dy[i];
            break;
          case BinaryOp::kMul:
            dx[i] = dy[i] * v[k];
            sum[k] += double(dy[i]) * x[i];
            break;
          case BinaryOp::kDiv:
            dx[i] = reverse ? float(-double(dy[i]) * v[k] / (double(x[i]) * x[i])) : dy[i] / v[k];
            sum[k] += reverse ? dy[i] / double(x[i]) : double(dy[i]) * x[i];
            break;
        }
      }
    }
  }
  if (!dv) return;
  for (int64_t k = 0; k < c; ++k) {
    const double s = sum[static_cast<size_t>(k)];
    const bool negate = (op == BinaryOp::kSub && !reverse);
    dv[k] = float(op == BinaryOp::kDiv && !reverse ? -s / (double(v[k]) * v[k]) : negate ? -s : s);
  }
}

// Per pixel, with xhat = (x - mean) * rstd and g = dy * weight:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dweight += dy * xhat,  dbias += dy.
void layernorm_backward(const float* x, const float* dy, const float* weight, int64_t n, int64_t c,
                        int64_t hw, double eps, float* dx, float* dweight, float* dbias) {
  std::vector<double> gw(static_cast<size_t>(c), 0.0), gb(static_cast<size_t>(c), 0.0);
  std::vector<double> xhat(static_cast<size_t>(c)), g(static_cast<size_t>(c));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < hw; ++p) {
      const int64_t base = b * c * hw + p;
      const PixelStats s = pixel_stats(x + base, c, hw, eps);
      double mean_g = 0, mean_gx = 0;
      for (int64_t k = 0; k < c; ++k) {
        const double d = dy[base + k * hw];
        xhat[k] = (x[base + k * hw] - s.mean) * s.rstd;
        g[k] = d * weight[k];
        mean_g += g[k];
        mean_gx += g[k] * xhat[k];
        gw[k] += d * xhat[k];
        gb[k] += d;
      }
      mean_g /= double(c);
      mean_gx /= double(c);
      for (int64_t k = 0; k < c; ++k) {
        dx[base + k * hw] = static_cast<float>(s.rstd * (g[k] - mean_g - xhat[k] * mean_gx));
      }
    }
  }
  if (dweight) std::transform(gw.begin(), gw.end(), dweight, [](double v) { return float(v); });
  if (dbias) std::transform(gb.begin(), gb.end(), dbias, [](double v) { return float(v); });
}

}  // namespace zoc::ref
