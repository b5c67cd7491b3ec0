// Histogram accumulation and the three threshold rules of `zoc calibrate` (see calibration.h
// for why they exist; issue 35).
#include "compiler/quant/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace zoc::quant {
namespace {

constexpr int kLevels = 128;   // magnitudes int8 keeps on one side of zero
constexpr double kEps = 1e-4;  // count given to an empty bin before taking logarithms

// Bin of a finite |x| = v >= 0 in a histogram over [0, amax] with `inv_width` = kBins / amax.
int bin_of(double v, double inv_width) {
  const double k = v * inv_width;  // v > amax (or a rounding up at amax) lands in the last bin
  return k >= AbsHistogram::kBins - 1 ? AbsHistogram::kBins - 1 : int(k);
}

double percentile_threshold(const AbsHistogram& h, double percentile) {
  if (!(percentile <= 100.0)) percentile = 100.0;  // NaN too
  if (percentile < 0.0) percentile = 0.0;
  // Integer counts against percentile% of the total, compared without dividing.
  const double target = percentile * double(h.count);
  int64_t cumulative = 0;
  for (int k = 0; k < AbsHistogram::kBins; ++k) {
    cumulative += h.bins[size_t(k)];
    if (cumulative > 0 && 100.0 * double(cumulative) >= target) {
      return (k + 1) * h.bin_width();
    }
  }
  return double(h.amax);
}

// One candidate of the entropy method: the first i bins of `b` quantized to kLevels levels.
// For every level, the sum of its bins and how many of them are non-empty.
struct Levels {
  std::array<double, kLevels> sum{};
  std::array<int, kLevels> non_empty{};
};

// Bin j < i belongs to level floor(j * kLevels / i): levels of i / kLevels bins each, the
// remainder spread evenly (the mapping of pytorch-quantization's np.digitize over linspace).
int level_of(int j, int i) { return int(int64_t(j) * kLevels / i); }

Levels merge(const std::vector<double>& b, int i) {
  Levels q;
  for (int j = 0; j < i; ++j) {
    if (b[size_t(j)] == 0.0) continue;
    const int l = level_of(j, i);
    q.sum[size_t(l)] += b[size_t(j)];
    ++q.non_empty[size_t(l)];
  }
  return q;
}

// KL(P || Q) of candidate i, where
//   P_j = b_j for j < i - 1, P_{i-1} = b_{i-1} + outliers   (all mass clipped to the threshold)
//   Q_j = sum of j's level / non-empty bins of that level if b_j > 0, else 0
// Both are smoothed as in MXNet and onnxruntime (smooth_distribution): empty entries get kEps,
// non-empty ones give up kEps * zeros / non_zeros so that the total stays. Entries are counts
// (integers >= 1 when non-zero, so the smoothing never makes one negative); with P and Q their
// totals, KL = sum p_j / P * log((p_j / P) / (q_j / Q))
//            = (sum p_j * (log p_j - log q_j)) / P + log(Q / P).
// Infinite when P or Q is empty (all mass clipped into an empty range).
double kl_divergence(const std::vector<double>& b, int i, double outliers) {
  const Levels lv = merge(b, i);
  int p_zeros = 0, q_zeros = 0;
  double p_total = 0.0, q_total = 0.0;
  for (int j = 0; j < i; ++j) {
    const double p = j == i - 1 ? b[size_t(j)] + outliers : b[size_t(j)];
    p_zeros += p == 0.0;
    q_zeros += b[size_t(j)] == 0.0;
    p_total += p;
    q_total += b[size_t(j)];
  }
  if (p_zeros == i || q_zeros == i) return std::numeric_limits<double>::infinity();
  const double p_take = kEps * p_zeros / (i - p_zeros);
  const double q_take = kEps * q_zeros / (i - q_zeros);
  double sum = 0.0;
  for (int j = 0; j < i; ++j) {
    const double bj = b[size_t(j)];
    const double p = j == i - 1 ? bj + outliers : bj;
    const size_t l = size_t(level_of(j, i));
    const double q = bj == 0.0 ? 0.0 : lv.sum[l] / lv.non_empty[l];
    const double ps = p == 0.0 ? kEps : p - p_take;
    const double qs = q == 0.0 ? kEps : q - q_take;
    sum += ps * (std::log(ps) - std::log(qs));
  }
  return sum / p_total + std::log(q_total / p_total);
}

// TensorRT's entropy calibration (Migacz, "8-bit Inference with TensorRT", GTC 2017; also
// pytorch-quantization's _compute_amax_entropy and onnxruntime's get_entropy_threshold): try
// every threshold i * bin_width for i in [kLevels, kBins], clip the histogram there, quantize
// it to kLevels levels, and keep the i whose quantized histogram loses the least information
// (the smallest KL(P || Q), the largest i on ties).
//
// Values exactly 0 are left out of bin 0: int8 represents 0 exactly at every threshold, so
// the spike of zeros after a ReLU says nothing about where to clip, yet smeared over a level
// of many bins it would push the choice toward the smallest threshold. pytorch-quantization
// answers the same problem by setting bins[0] = bins[1].
double entropy_threshold(const AbsHistogram& h) {
  std::vector<double> b(h.bins.begin(), h.bins.end());
  b[0] -= double(h.zeros);
  std::vector<double> tail(size_t(AbsHistogram::kBins) + 1, 0.0);  // tail[i] = sum of b[i..)
  for (size_t k = b.size(); k-- > 0;) tail[k] = tail[k + 1] + b[k];
  if (tail[0] == 0.0) return double(h.amax);  // nothing but zeros were binned
  int best = AbsHistogram::kBins;
  double best_kl = std::numeric_limits<double>::infinity();
  for (int i = kLevels; i <= AbsHistogram::kBins; ++i) {
    const double kl = kl_divergence(b, i, tail[size_t(i)]);
    if (kl <= best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return best * h.bin_width();
}

}  // namespace

void AbsHistogram::add_max(const float* x, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    if (!std::isfinite(x[k])) {
      ++non_finite;
      continue;
    }
    amax = std::max(amax, std::fabs(x[k]));
  }
}

void AbsHistogram::add(const float* x, int64_t n) {
  const double inv_width = amax > 0.0f ? kBins / double(amax) : 0.0;
  for (int64_t k = 0; k < n; ++k) {
    if (!std::isfinite(x[k])) continue;
    const float v = std::fabs(x[k]);
    ++bins[size_t(bin_of(v, inv_width))];
    zeros += v == 0.0f;
    ++count;
  }
}

std::optional<Method> parse_method(std::string_view name) {
  if (name == "max") return Method::kMax;
  if (name == "percentile") return Method::kPercentile;
  if (name == "entropy") return Method::kEntropy;
  return std::nullopt;
}

const char* method_name(Method m) {
  switch (m) {
    case Method::kMax:
      return "max";
    case Method::kPercentile:
      return "percentile";
    case Method::kEntropy:
      return "entropy";
  }
  return "?";
}

double threshold(const AbsHistogram& h, Method m, double percentile) {
  if (!(h.amax > 0.0f)) return 0.0;
  if (m == Method::kMax || h.count == 0) return double(h.amax);
  if (m == Method::kPercentile) return percentile_threshold(h, percentile);
  return entropy_threshold(h);
}

float scale_of(double threshold) {
  if (!(threshold > 0.0) || !std::isfinite(threshold)) return 1.0f;
  const float s = float(threshold / 127.0);
  if (!(s > 0.0f) || !std::isfinite(s)) return 1.0f;
  return std::clamp(s, 1e-30f, 1e30f);  // the IR's range (scales.h), for a near-zero tensor
}

}  // namespace zoc::quant
