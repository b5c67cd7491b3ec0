// Choosing per-tensor int8 activation scales from fp32 activations (issue 35).
//
// `zoc calibrate` runs the reference interpreter over a folder of samples and, for every
// activation tensor, picks a symmetric clipping threshold T; the tensor's int8 scale is then
// T / 127. Like TensorRT's calibrators this takes two passes over the samples: the first finds
// max |x| of each tensor, the second fills a histogram of |x| over [0, max], from which the
// threshold follows by one of three methods (max, percentile, entropy). This file holds only
// that math, free of the IR and the interpreter, so that it can be tested on synthetic data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace zoc::quant {

// Statistics of |x| of one tensor over many batches. Call add_max on every batch first (pass 1),
// then add on the same batches (pass 2): the bins span [0, amax] and need amax fixed beforehand.
struct AbsHistogram {
  static constexpr int kBins = 2048;

  float amax = 0.0f;       // max |x| over the finite values of pass 1
  int64_t non_finite = 0;  // NaN and +-Inf seen in pass 1; they take no part in any threshold
  int64_t count = 0;       // finite values binned in pass 2 (the sum of `bins`)
  int64_t zeros = 0;       // of those, values exactly 0 (all in bins[0])
  std::array<int64_t, kBins> bins{};  // bin k holds |x| in [k, k + 1) * bin_width()

  // Pass 1: folds max |x| of x[0..n) into amax, counting (and skipping) NaN and Inf.
  void add_max(const float* x, int64_t n);
  // Pass 2: adds |x| of x[0..n) to the bins. |x| == amax goes to the last bin, and so does
  // anything above amax (a pass 2 that saw other data than pass 1); if amax is 0 every value
  // goes to bin 0. Non-finite values are skipped (pass 1 counted them).
  void add(const float* x, int64_t n);

  double bin_width() const { return double(amax) / kBins; }
};

enum class Method { kMax, kPercentile, kEntropy };

// "max", "percentile" or "entropy" (the spelling of the --method flag); nullopt otherwise.
std::optional<Method> parse_method(std::string_view name);
const char* method_name(Method m);

// The clipping threshold T >= 0 of the histogram's tensor (its int8 scale is T / 127):
//   kMax:        amax.
//   kPercentile: the smallest bin upper edge at which the cumulative count reaches `percentile`
//                percent of all binned values. `percentile` must lie in (0, 100]; it is clamped.
//   kEntropy:    TensorRT's KL-divergence method (see calibration.cpp); the result is one of
//                the bin edges i * bin_width() for i in [128, kBins], so never below amax / 16.
// Returns 0 when amax is 0, whatever the method. Percentile and entropy fall back to amax when
// pass 2 binned nothing. `percentile` is ignored by the other methods.
double threshold(const AbsHistogram& h, Method m, double percentile);

// threshold / 127 as a float; 1.0f where that is not a usable scale (threshold 0, negative or
// not finite, or a quotient that is 0 or Inf as a float).
float scale_of(double threshold);

}  // namespace zoc::quant
