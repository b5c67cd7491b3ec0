// Tests of compiler/quant/calibration.h, the threshold math of `zoc calibrate` (issue 35): the
// two-pass histogram of |x| on edge values and over batches, and each method on distributions
// whose answer is known (uniform quantiles, a Gaussian or Laplace bulk with a few outliers).
#include "compiler/quant/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using zoc::quant::AbsHistogram;
using zoc::quant::Method;
using zoc::quant::threshold;

constexpr int kBins = AbsHistogram::kBins;

AbsHistogram two_pass(const std::vector<float>& x) {
  AbsHistogram h;
  h.add_max(x.data(), int64_t(x.size()));
  h.add(x.data(), int64_t(x.size()));
  return h;
}

std::vector<float> gaussian(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<float> laplace(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> magnitude(1.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = negative(rng) ? -magnitude(rng) : magnitude(rng);
  return x;
}

void append(std::vector<float>& x, int copies, float value) { x.insert(x.end(), copies, value); }

TEST(Calibration, MaxIsLargestMagnitude) {
  const auto h = two_pass({0.25f, -3.5f, 2.0f, 0.0f});
  EXPECT_EQ(h.amax, 3.5f);
  EXPECT_EQ(threshold(h, Method::kMax, 99.99), 3.5);
  EXPECT_EQ(h.count, 4);
  EXPECT_EQ(h.zeros, 1);
}

TEST(Calibration, NonFiniteValuesAreCountedAndIgnored) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto h = two_pass({std::nanf(""), 1.5f, inf, -inf, -0.5f});
  EXPECT_EQ(h.amax, 1.5f);
  EXPECT_EQ(h.non_finite, 3);
  EXPECT_EQ(h.count, 2);
  EXPECT_EQ(h.bins[kBins - 1], 1);  // 1.5
  EXPECT_EQ(h.bins[kBins / 3], 1);  // 0.5 = amax / 3: bin floor(2048 / 3)
}

TEST(Calibration, LastBinReceivesAmax) {
  const auto h = two_pass({1.0f, -1.0f, 0.5f, 0.0f, 0.9999f});
  EXPECT_EQ(h.bins[kBins - 1], 3);  // both signs of amax, and 0.9999 * 2048 = 2047.8
  EXPECT_EQ(h.bins[kBins / 2], 1);  // 0.5 opens bin 1024
  EXPECT_EQ(h.bins[0], 1);
  int64_t sum = 0;
  for (int64_t b : h.bins) sum += b;
  EXPECT_EQ(sum, h.count);
}

TEST(Calibration, ValuesAbovePassOneMaxGoToLastBin) {
  AbsHistogram h;
  const std::vector<float> first = {2.0f}, second = {2.0f, 7.0f};
  h.add_max(first.data(), 1);
  h.add(second.data(), 2);
  EXPECT_EQ(h.bins[kBins - 1], 2);
  EXPECT_EQ(threshold(h, Method::kPercentile, 100.0), 2.0);
}

TEST(Calibration, AllZerosGiveZeroThresholdAndUnitScale) {
  const auto h = two_pass(std::vector<float>(1000, 0.0f));
  EXPECT_EQ(h.bins[0], 1000);
  EXPECT_EQ(h.zeros, 1000);
  for (Method m : {Method::kMax, Method::kPercentile, Method::kEntropy}) {
    EXPECT_EQ(threshold(h, m, 99.99), 0.0) << zoc::quant::method_name(m);
  }
  EXPECT_EQ(zoc::quant::scale_of(0.0), 1.0f);
}

TEST(Calibration, BatchesEqualOnePassOverConcatenation) {
  auto a = gaussian(1000, 1), b = laplace(777, 2), c = gaussian(5, 3);
  c[2] = std::nanf("");
  c[3] = 0.0f;
  AbsHistogram batched;
  for (const auto* x : {&a, &b, &c}) batched.add_max(x->data(), int64_t(x->size()));
  for (const auto* x : {&a, &b, &c}) batched.add(x->data(), int64_t(x->size()));
  std::vector<float> all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  const auto whole = two_pass(all);
  EXPECT_EQ(batched.amax, whole.amax);
  EXPECT_EQ(batched.non_finite, 1);
  EXPECT_EQ(batched.count, whole.count);
  EXPECT_EQ(batched.count, 1000 + 777 + 4);
  EXPECT_EQ(batched.zeros, whole.zeros);
  EXPECT_EQ(batched.bins, whole.bins);
  EXPECT_EQ(threshold(batched, Method::kEntropy, 0), threshold(whole, Method::kEntropy, 0));
}

TEST(Calibration, PercentileHundredIsAmax) {
  const auto h = two_pass(laplace(10000, 4));
  EXPECT_EQ(threshold(h, Method::kPercentile, 100.0), double(h.amax));
  EXPECT_EQ(threshold(h, Method::kPercentile, 100.0), kBins * h.bin_width());
}

TEST(Calibration, PercentileOfUniformIsWithinOneBinOfQuantile) {
  const int n = 100001;  // 0, 1e-5, ..., 1: the q-quantile of |x| is q
  std::vector<float> x(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) x[size_t(k)] = (k % 2 ? -1.0f : 1.0f) * float(k) / float(n - 1);
  const auto h = two_pass(x);
  ASSERT_EQ(h.amax, 1.0f);
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    EXPECT_NEAR(threshold(h, Method::kPercentile, p), p / 100.0, h.bin_width()) << p;
  }
}

TEST(Calibration, PercentileClipsRareOutliers) {
  auto x = gaussian(200000, 5);
  append(x, 10, 1000.0f);
  const double t = threshold(two_pass(x), Method::kPercentile, 99.99);
  EXPECT_GT(t, 3.0);  // |N(0, 1)| exceeds 3.9 with probability 1e-4
  EXPECT_LT(t, 5.0);
}

TEST(Calibration, EntropyClipsOutliersOfGaussian) {
  auto x = gaussian(200000, 6);
  append(x, 10, 30.0f);
  const auto h = two_pass(x);
  // A bin edge that keeps the bulk (99.7% of N(0, 1) lies within 3) and clips the outliers.
  const double t = threshold(h, Method::kEntropy, 0);
  EXPECT_GT(t, 3.0);
  EXPECT_LT(t, 6.0);
  EXPECT_EQ(std::fmod(t, h.bin_width()), 0.0);
}

TEST(Calibration, EntropyClipsLaplaceTailAndOutliers) {
  auto x = laplace(200000, 7);
  append(x, 10, 100.0f);
  const double t = threshold(two_pass(x), Method::kEntropy, 0);
  EXPECT_GT(t, 6.0);  // P(|x| > 6) = 0.25%
  EXPECT_LT(t, 20.0);
}

TEST(Calibration, EntropyKeepsRangeOfUniform) {  // clipping a flat distribution only loses
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(200000);
  for (float& v : x) v = dist(rng);
  const auto h = two_pass(x);
  EXPECT_GT(threshold(h, Method::kEntropy, 0), 0.98 * h.amax);
}

// The candidates start at 128 of 2048 bins (as in TensorRT): outliers 1000 times the bulk
// leave the threshold at amax / 16, above all of the bulk.
TEST(Calibration, EntropyNeverGoesBelowOneSixteenthOfAmax) {
  auto x = gaussian(200000, 9);
  append(x, 10, 1000.0f);
  EXPECT_EQ(threshold(two_pass(x), Method::kEntropy, 0), 1000.0 / 16);
}

// A ReLU's output is half exact zeros. They quantize exactly at any threshold and must not
// drag it to the smallest candidate (which, here, would be 30 / 16 = 1.875).
TEST(Calibration, EntropyIgnoresExactZeros) {
  const auto g = gaussian(200000, 10);
  std::vector<float> relu, positive;
  for (float v : g) {
    relu.push_back(std::max(v, 0.0f));
    if (v > 0.0f) positive.push_back(v);
  }
  append(relu, 10, 30.0f);
  append(positive, 10, 30.0f);
  const double t = threshold(two_pass(relu), Method::kEntropy, 0);
  EXPECT_GT(t, 3.0);
  EXPECT_LT(t, 6.0);
  EXPECT_EQ(t, threshold(two_pass(positive), Method::kEntropy, 0));
}

// Histograms written directly, with bin width 1: 100 values in each of the first 128 bins.
AbsHistogram flat_head() {
  AbsHistogram h;
  h.amax = float(kBins);
  for (int k = 0; k < 128; ++k) h.bins[size_t(k)] = 100;
  h.count = 128 * 100;
  return h;
}

// Every candidate quantizes the flat head exactly (KL 0): the largest threshold wins the tie.
TEST(Calibration, EntropyTiesGoToTheLargerThreshold) {
  EXPECT_EQ(threshold(flat_head(), Method::kEntropy, 0), double(kBins));
}

// With one value at amax, only the last candidate (amax itself) reproduces the histogram.
TEST(Calibration, EntropyCandidatesIncludeAmax) {
  AbsHistogram h = flat_head();
  h.bins[kBins - 1] = 1;
  h.count += 1;
  EXPECT_EQ(threshold(h, Method::kEntropy, 0), double(kBins));
  h.bins[kBins - 1] = 0;
  h.bins[1000] = 1;  // now any candidate above bin 1000 is exact, 2048 the largest
  EXPECT_EQ(threshold(h, Method::kEntropy, 0), double(kBins));
}

TEST(Calibration, NoSecondPassFallsBackToAmax) {
  AbsHistogram h;
  const std::vector<float> x = {0.5f, -4.0f};
  h.add_max(x.data(), 2);
  EXPECT_EQ(threshold(h, Method::kPercentile, 99.0), 4.0);
  EXPECT_EQ(threshold(h, Method::kEntropy, 0), 4.0);
}

TEST(Calibration, ParseMethodRoundTrips) {
  for (Method m : {Method::kMax, Method::kPercentile, Method::kEntropy}) {
    EXPECT_EQ(zoc::quant::parse_method(zoc::quant::method_name(m)), m);
  }
  EXPECT_EQ(zoc::quant::parse_method("entropy"), Method::kEntropy);
  EXPECT_FALSE(zoc::quant::parse_method("kl").has_value());
  EXPECT_FALSE(zoc::quant::parse_method("MAX").has_value());
  EXPECT_FALSE(zoc::quant::parse_method("").has_value());
}

TEST(Calibration, ScaleOf) {
  using zoc::quant::scale_of;
  EXPECT_EQ(scale_of(127.0), 1.0f);
  EXPECT_EQ(scale_of(2.54), float(2.54 / 127.0));
  EXPECT_EQ(scale_of(0.0), 1.0f);
  EXPECT_EQ(scale_of(-1.0), 1.0f);
  EXPECT_EQ(scale_of(std::nan("")), 1.0f);
  EXPECT_EQ(scale_of(std::numeric_limits<double>::infinity()), 1.0f);
  EXPECT_EQ(scale_of(1e-300), 1.0f);  // 0 as a float
  EXPECT_EQ(scale_of(1e300), 1.0f);   // Inf as a float
}

}  // namespace
