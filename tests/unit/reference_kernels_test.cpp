// Tests of the reference CPU kernels, the oracle every other numerical test trusts, so they are
// checked against something simpler than themselves: naive direct loops in double written here,
// and small arrays computed once with PyTorch for the edge rules (ceil_mode, padding,
// count_include_pad) that a naive loop could get wrong in the same way. Inputs are seeded random
// (never zeros or constants) and outputs are poisoned with NaN so unwritten elements fail. The
// convolution tolerance (about one float ulp) is tight enough that float accumulation fails it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<float> random_vec(int64_t count, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& e : v) e = dist(gen);
  return v;
}

std::vector<float> poisoned(int64_t count) { return std::vector<float>(count, kNan); }

// |got - want| <= rel * |want| + abs_tol everywhere; NaN anywhere fails. Reports the count of
// bad elements and the worst one instead of one failure per element.
testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<double>& want,
                                   double rel, double abs_tol) {
  if (got.size() != want.size()) {
    return testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  }
  size_t bad = 0, worst = 0;
  double worst_excess = -1.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    const double tol = rel * std::abs(want[i]) + abs_tol;
    if (!(err <= tol)) {
      ++bad;
      const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / tol;
      if (excess > worst_excess) worst_excess = excess, worst = i;
    }
  }
  if (bad == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << bad << " of " << got.size() << " elements off; worst ["
                                     << worst << "] got " << got[worst] << " want " << want[worst];
}

// Exact comparison against values computed with PyTorch (ulp-level, via EXPECT_FLOAT_EQ).
void expect_equal_floats(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "at " << i;
}

// ---------------------------------------------------------------- shape helpers

TEST(RefKernels, PoolOutSizeMatchesPyTorch) {
  // {in, k, stride, pad, dil, ceil_mode, out}: out is the shape of torch 1.13
  // F.max_pool1d(torch.zeros(1, 1, in), k, stride, pad, dilation=dil, ceil_mode=ceil_mode),
  // for random valid arguments (pad <= k / 2) plus ResNet's stem pool.
  struct Case {
    int64_t in, k, stride, pad, dil;
    bool ceil_mode;
    int64_t out;
  };
  const Case cases[] = {
      {5, 3, 3, 1, 1, true, 2},  // last window dropped
      {56, 3, 2, 1, 1, true, 29}, {112, 3, 2, 1, 1, false, 56},
      {7, 7, 1, 0, 1, false, 1},  {4, 2, 2, 1, 1, true, 3},
      {6, 3, 2, 1, 1, true, 4},   {10, 3, 4, 1, 2, true, 3},
      {3, 3, 4, 0, 1, false, 1},  {2, 1, 1, 0, 2, true, 2},
      {18, 4, 2, 0, 1, true, 8},  {19, 5, 2, 2, 1, false, 10},
      {8, 5, 4, 0, 3, true, 0},   {18, 2, 4, 0, 2, true, 5},
      {19, 3, 2, 0, 3, true, 7},  {19, 2, 1, 0, 2, true, 17},
      {15, 2, 4, 1, 2, true, 4},  // last window dropped
      {6, 4, 3, 0, 2, false, 0},  {11, 2, 3, 1, 1, false, 4},
      {17, 3, 1, 0, 3, true, 11}, {2, 3, 4, 1, 1, false, 1},
      {12, 1, 3, 0, 3, true, 4},  // last window dropped
      {9, 5, 1, 0, 2, true, 1},   {10, 1, 3, 0, 1, false, 4},
      {6, 3, 4, 1, 1, false, 2},  {5, 4, 2, 1, 1, false, 2},
      {6, 4, 4, 0, 2, true, 1},   {18, 5, 2, 1, 2, true, 7},
      {5, 4, 4, 0, 2, true, 1},   {16, 2, 2, 0, 1, false, 8},
      {5, 2, 3, 0, 2, true, 2},   {17, 3, 3, 0, 3, false, 4},
      {13, 1, 4, 0, 2, true, 4},  {7, 4, 4, 0, 3, true, 1},
      {11, 2, 2, 0, 2, false, 5}, {12, 1, 2, 0, 1, false, 6},
      {9, 1, 4, 0, 1, false, 3},  {3, 4, 4, 1, 2, true, 1},
      {6, 3, 3, 1, 3, true, 2},   {18, 2, 3, 0, 3, false, 5},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(pool_out_size(c.in, c.k, c.stride, c.pad, c.dil, c.ceil_mode), c.out)
        << "in=" << c.in << " k=" << c.k << " stride=" << c.stride << " pad=" << c.pad
        << " dil=" << c.dil << " ceil=" << c.ceil_mode;
  }
  static_assert(pool_out_size(112, 3, 2, 1, 1, false) == 56, "usable in constant expressions");
}

TEST(RefKernels, ConvOutSizeMatchesPyTorch) {
  // {in, k, stride, pad, dil, out}: out is the shape of torch 1.13
  // F.conv1d(torch.zeros(1, 1, in), torch.zeros(1, 1, k), stride=stride, padding=pad,
  // dilation=dil), for random arguments plus ResNet's shapes.
  struct Case {
    int64_t in, k, stride, pad, dil, out;
  };
  const Case cases[] = {
      {224, 7, 2, 3, 1, 112}, {56, 3, 1, 1, 1, 56}, {56, 1, 2, 0, 1, 28}, {7, 3, 1, 2, 2, 7},
      {5, 5, 1, 0, 1, 1},     {64, 3, 2, 1, 1, 32}, {17, 3, 1, 2, 3, 15}, {12, 2, 3, 1, 3, 4},
      {18, 5, 3, 1, 3, 3},    {7, 2, 4, 1, 1, 2},   {17, 4, 3, 0, 1, 5},  {9, 4, 3, 1, 3, 1},
      {20, 3, 4, 2, 2, 5},    {3, 2, 1, 1, 2, 3},   {7, 3, 2, 3, 3, 4},   {20, 1, 4, 2, 3, 6},
      {7, 4, 2, 3, 3, 2},     {11, 1, 4, 3, 2, 5},  {20, 4, 3, 1, 3, 5},  {18, 2, 1, 0, 3, 15},
      {4, 5, 2, 3, 1, 3},     {7, 1, 3, 1, 2, 3},   {17, 2, 3, 2, 3, 6},  {14, 2, 1, 2, 2, 16},
      {19, 5, 4, 4, 1, 6},    {18, 2, 1, 3, 1, 23}, {20, 1, 2, 1, 1, 11},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(conv_out_size(c.in, c.k, c.stride, c.pad, c.dil), c.out)
        << "in=" << c.in << " k=" << c.k << " stride=" << c.stride << " pad=" << c.pad
        << " dil=" << c.dil;
  }
  // PyTorch rejects a kernel larger than the padded input; the helper must then say <= 0, and
  // must floor: (4 - 2 * 2 - 1) / 2 truncates to 0, which would wrongly give 1.
  EXPECT_LE(conv_out_size(4, 3, 2, 0, 2), 0);
  EXPECT_LE(conv_out_size(2, 5, 1, 0, 1), 0);
  EXPECT_LE(pool_out_size(2, 5, 1, 0, 1, true), 0);
}

// ---------------------------------------------------------------- convolution

std::vector<double> naive_conv(const std::vector<float>& x, const std::vector<float>& w,
                               const float* bias, const Conv2dShape& s) {
  const int64_t cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups;
  std::vector<double> y(static_cast<size_t>(s.n * s.c_out * s.out_h * s.out_w));
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t co = 0; co < s.c_out; ++co)
      for (int64_t oh = 0; oh < s.out_h; ++oh)
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          const int64_t g = co / cout_g;
          double acc = bias != nullptr ? bias[co] : 0.0;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t r = 0; r < s.kh; ++r)
              for (int64_t q = 0; q < s.kw; ++q) {
                const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
                const int64_t iw = ow * s.stride_w - s.pad_w + q * s.dil_w;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                const double xv = x[((b * s.c_in + g * cin_g + ci) * s.h + ih) * s.w + iw];
                const double wv = w[((co * cin_g + ci) * s.kh + r) * s.kw + q];
                acc += xv * wv;
              }
          y[((b * s.c_out + co) * s.out_h + oh) * s.out_w + ow] = acc;
        }
  return y;
}

Conv2dShape conv_shape(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t kh,
                       int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                       int64_t dw, int64_t groups) {
  Conv2dShape s{n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, 0, 0};
  s.out_h = conv_out_size(h, kh, sh, ph, dh);
  s.out_w = conv_out_size(w, kw, sw, pw, dw);
  return s;
}

void check_conv(const Conv2dShape& s, bool with_bias, unsigned seed) {
  const auto x = random_vec(s.n * s.c_in * s.h * s.w, seed);
  const auto w = random_vec(s.c_out * (s.c_in / s.groups) * s.kh * s.kw, seed + 1);
  const auto bias = random_vec(s.c_out, seed + 2);
  const float* b = with_bias ? bias.data() : nullptr;
  auto y = poisoned(s.n * s.c_out * s.out_h * s.out_w);
  conv2d(x.data(), w.data(), b, y.data(), s);
  // About one float ulp: the kernel rounds a double sum once, as the naive loop does.
  EXPECT_TRUE(all_close(y, naive_conv(x, w, b, s), 1.2e-7, 1e-10));
}

TEST(RefKernels, Conv2dMatchesNaive) {
  struct Named {
    const char* what;
    Conv2dShape s;
  };
  // Arguments: n, c_in, h, w, c_out, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
  // groups.
  const Named cases[] = {
      {"3x3 pad 1, batch 2", conv_shape(2, 3, 9, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1)},
      {"7x7 stride 2 pad 3 (stem)", conv_shape(1, 3, 17, 15, 8, 7, 7, 2, 2, 3, 3, 1, 1, 1)},
      {"dilation 2", conv_shape(1, 4, 11, 10, 6, 3, 3, 1, 1, 2, 2, 2, 2, 1)},
      {"non-square kernel, stride, pad, dil",
       conv_shape(2, 5, 10, 13, 7, 2, 5, 2, 1, 1, 2, 1, 2, 1)},
      {"stride 3, output not a multiple of 4",
       conv_shape(1, 3, 11, 9, 5, 3, 2, 3, 3, 0, 1, 1, 1, 1)},
      {"pad larger than the kernel", conv_shape(1, 2, 4, 5, 3, 3, 3, 1, 1, 4, 3, 1, 1, 1)},
      {"groups 2", conv_shape(2, 6, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2)},
      {"depthwise stride 2", conv_shape(2, 8, 9, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1, 8)},
      {"depthwise multiplier 2", conv_shape(1, 8, 6, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 8)},
      {"1x1 fast path", conv_shape(2, 16, 6, 5, 24, 1, 1, 1, 1, 0, 0, 1, 1, 1)},
      {"1x1 fast path, groups 3", conv_shape(1, 12, 5, 5, 9, 1, 1, 1, 1, 0, 0, 1, 1, 3)},
      {"1x1 stride 2 (downsample)", conv_shape(2, 8, 7, 7, 4, 1, 1, 2, 2, 0, 0, 1, 1, 1)},
      {"1x1 pad 1", conv_shape(1, 4, 3, 4, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1)},
      // K = 360 and 300 cross the GEMM's depth block, c_out = 140 its row block.
      {"deep and wide (crosses blocks)", conv_shape(1, 40, 6, 7, 140, 3, 3, 1, 1, 1, 1, 1, 1, 1)},
      {"1x1 deep and wide", conv_shape(2, 300, 3, 3, 133, 1, 1, 1, 1, 0, 0, 1, 1, 1)},
      {"1x1 output", conv_shape(2, 5, 3, 3, 6, 3, 3, 1, 1, 0, 0, 1, 1, 1)},
  };
  unsigned seed = 100;
  for (const Named& c : cases) {
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(std::string(c.what) + (with_bias ? ", bias" : ", no bias"));
      check_conv(c.s, with_bias, seed += 10);
    }
  }
}

TEST(RefKernels, Conv2dIsDeterministic) {
  const Conv2dShape s = conv_shape(2, 16, 9, 9, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  const auto x = random_vec(s.n * s.c_in * s.h * s.w, 1);
  const auto w = random_vec(s.c_out * s.c_in * s.kh * s.kw, 2);
  auto y1 = poisoned(s.n * s.c_out * s.out_h * s.out_w), y2 = y1;
  conv2d(x.data(), w.data(), nullptr, y1.data(), s);
  conv2d(x.data(), w.data(), nullptr, y2.data(), s);
  EXPECT_EQ(y1, y2);
}

// ---------------------------------------------------------------- pooling

// The input used for the PyTorch-checked arrays: x.flatten()[i] = ((i * 7) % 11 - 5) * 0.25,
// shape [1, 2, 5, 6]. Quarter steps keep PyTorch's float sums exact, so the expected averages
// are single divisions that both sides round identically.
std::vector<float> torch_pattern() {
  std::vector<float> x(60);
  for (int i = 0; i < 60; ++i) x[i] = static_cast<float>((i * 7) % 11 - 5) * 0.25f;
  return x;
}

Pool2dShape pool_shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw,
                       int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                       bool ceil_mode, bool count_include_pad) {
  Pool2dShape s{n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, 0, 0, count_include_pad};
  s.out_h = pool_out_size(h, kh, sh, ph, dh, ceil_mode);
  s.out_w = pool_out_size(w, kw, sw, pw, dw, ceil_mode);
  return s;
}

std::vector<float> run_pool(bool max, const std::vector<float>& x, const Pool2dShape& s) {
  auto y = poisoned(s.n * s.c * s.out_h * s.out_w);
  if (max) {
    maxpool2d(x.data(), y.data(), s);
  } else {
    avgpool2d(x.data(), y.data(), s);
  }
  return y;
}

// Expected arrays below: torch 1.13, F.max_pool2d / F.avg_pool2d on torch_pattern() with the
// arguments in each comment, printed as shortest round-trip float32 literals (numpy str()).
TEST(RefKernels, MaxPoolMatchesPyTorch) {
  const auto x = torch_pattern();
  // kernel 3, stride 2, padding 1, ceil_mode=True. Element [3] is -0.75: its window is all
  // negative, so padding that acted as 0 instead of -inf would show.
  expect_equal_floats(
      run_pool(true, x, pool_shape(1, 2, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, true, false)),
      {1.0f,  1.25f, 1.25f, -0.75f, 1.0f,  1.25f, 1.0f,  1.0f,  1.25f, 1.25f, 1.0f,  0.5f,
       1.25f, 1.0f,  1.0f,  -0.5f,  1.25f, 1.0f,  1.25f, 1.25f, 0.25f, 1.0f,  1.25f, 0.75f});
  // kernel 2, stride 1, padding 1, dilation 2.
  expect_equal_floats(
      run_pool(true, x, pool_shape(1, 2, 5, 6, 2, 2, 1, 1, 1, 1, 2, 2, false, false)),
      {0.0f,   1.0f,  0.75f,  -0.25f, 0.75f, -0.25f, 0.5f,   1.25f, 1.25f, 1.25f, 1.25f, 0.25f,
       0.0f,   1.0f,  0.75f,  0.75f,  0.75f, -0.25f, 1.25f,  1.25f, 1.25f, 1.25f, 1.0f,  1.0f,
       -1.0f,  0.75f, -0.25f, 0.75f,  0.5f,  -1.25f, 0.25f,  1.25f, 1.0f,  0.0f,  1.0f,  0.0f,
       0.75f,  0.75f, 0.75f,  0.5f,   1.25f, 0.5f,   0.25f,  1.25f, 1.0f,  1.0f,  1.0f,  0.0f,
       -0.25f, 0.75f, 0.5f,   1.25f,  1.25f, 1.25f,  -0.75f, 1.0f,  0.0f,  1.0f,  0.75f, -1.0f});
  // kernel 3, stride 3, padding 1, ceil_mode=True: the rows lose their last window (5 -> 2).
  expect_equal_floats(
      run_pool(true, x, pool_shape(1, 2, 5, 6, 3, 3, 3, 3, 1, 1, 1, 1, true, false)),
      {1.0f, 1.25f, -0.75f, 1.25f, 1.25f, 1.0f, 1.25f, 1.0f, -0.5f, 0.75f, 1.25f, 1.25f});
}

TEST(RefKernels, AvgPoolMatchesPyTorch) {
  const auto x = torch_pattern();
  // kernel 3, stride 2, padding 1, ceil_mode=True, count_include_pad=True.
  expect_equal_floats(
      run_pool(false, x, pool_shape(1, 2, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, true, true)),
      {0.027777778f, 0.11111111f,   0.0f,          -0.33333334f, 0.0f,          0.027777778f,
       -0.1388889f,  0.041666668f,  -0.027777778f, 0.027777778f, -0.083333336f, 0.083333336f,
       0.1388889f,   -0.027777778f, -0.1388889f,   -0.25f,       0.16666667f,   -0.027777778f,
       0.11111111f,  0.16666667f,   -0.22222222f,  -0.11111111f, 0.083333336f,  0.16666667f});
  // Same, count_include_pad=False.
  expect_equal_floats(
      run_pool(false, x, pool_shape(1, 2, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, true, false)),
      {0.0625f,     0.16666667f,   0.0f,         -1.0f,        0.0f,    0.027777778f,
       -0.1388889f, 0.083333336f,  -0.0625f,     0.041666668f, -0.125f, 0.25f,
       0.3125f,     -0.041666668f, -0.20833333f, -0.75f,       0.25f,   -0.027777778f,
       0.11111111f, 0.33333334f,   -0.5f,        -0.16666667f, 0.125f,  0.5f});
  // kernel 2, stride 2, no padding, ceil_mode=True: the last row window is one row high and
  // divides by 2, not 4.
  expect_equal_floats(
      run_pool(false, x, pool_shape(1, 2, 5, 6, 2, 2, 2, 2, 0, 0, 1, 1, true, true)),
      {0.0625f, 0.125f, -0.5f, -0.25f, 0.5f, -0.125f, 0.375f, -0.25f, 0.5f, 0.3125f, -0.3125f,
       -0.25f, 0.0f, 0.0625f, 0.125f, -0.75f, 0.0f, 0.75f});
  // kernel (2, 3), stride (1, 2), padding (1, 1), ceil_mode=True, count_include_pad=True.
  expect_equal_floats(
      run_pool(false, x, pool_shape(1, 2, 5, 6, 2, 3, 1, 2, 1, 1, 1, 1, true, true)),
      {-0.125f,       0.20833333f,  0.125f,        -0.1875f,      0.041666668f,  0.16666667f,
       0.0f,          -0.5f,        0.16666667f,   0.125f,        -0.041666668f, -0.0625f,
       -0.16666667f,  0.083333336f, -0.083333336f, 0.375f,        -0.041666668f, 0.041666668f,
       -0.125f,       0.125f,       0.125f,        0.125f,        0.041666668f,  0.0f,
       -0.041666668f, -0.125f,      -0.20833333f,  -0.125f,       0.20833333f,   -0.041666668f,
       -0.20833333f,  -0.375f,      0.33333334f,   -0.083333336f, 0.20833333f,   0.0625f,
       0.0f,          -0.125f,      0.16666667f,   0.5f,          -0.33333334f,  -0.16666667f,
       0.125f,        0.25f,        -0.25f,        -0.20833333f,  0.16666667f,   0.0625f});
  // Same, count_include_pad=False.
  expect_equal_floats(
      run_pool(false, x, pool_shape(1, 2, 5, 6, 2, 3, 1, 2, 1, 1, 1, 1, true, false)),
      {-0.375f,      0.41666666f,  0.25f,         -0.75f,        0.0625f,       0.16666667f,
       0.0f,         -1.0f,        0.25f,         0.125f,        -0.041666668f, -0.125f,
       -0.25f,       0.083333336f, -0.083333336f, 0.75f,         -0.0625f,      0.041666668f,
       -0.125f,      0.25f,        0.375f,        0.25f,         0.083333336f,  0.0f,
       -0.125f,      -0.25f,       -0.41666666f,  -0.5f,         0.3125f,       -0.041666668f,
       -0.20833333f, -0.75f,       0.5f,          -0.083333336f, 0.20833333f,   0.125f,
       0.0f,         -0.125f,      0.16666667f,   1.0f,          -0.5f,         -0.16666667f,
       0.125f,       0.5f,         -0.75f,        -0.41666666f,  0.33333334f,   0.25f});
  // kernel 3, stride 3, padding 1, ceil_mode=True, count_include_pad=True (last row window
  // dropped).
  expect_equal_floats(
      run_pool(false, x, pool_shape(1, 2, 5, 6, 3, 3, 3, 3, 1, 1, 1, 1, true, true)),
      {0.027777778f, 0.055555556f, -0.33333334f, -0.027777778f, 0.055555556f, 0.25f, 0.1388889f,
       -0.083333336f, -0.25f, -0.16666667f, 0.0f, 0.375f});
}

// Naive pooling over an explicitly padded plane: taps landing in the padded plane count for the
// count_include_pad divisor, taps on real pixels for the sum and the other divisor. For
// dilation 1 this is PyTorch's rule (window clipped to the padded input, then to the input).
std::vector<double> naive_pool(bool max, const std::vector<float>& x, const Pool2dShape& s) {
  const int64_t ph = s.h + 2 * s.pad_h, pw = s.w + 2 * s.pad_w;
  std::vector<double> y;
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    // NaN marks padding so a tap on it can never be mistaken for data.
    std::vector<double> padded(static_cast<size_t>(ph * pw), std::nan(""));
    for (int64_t i = 0; i < s.h; ++i)
      for (int64_t j = 0; j < s.w; ++j)
        padded[(i + s.pad_h) * pw + j + s.pad_w] = x[(p * s.h + i) * s.w + j];
    for (int64_t oh = 0; oh < s.out_h; ++oh)
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
        int64_t in_padded_rows = 0, in_padded_cols = 0, real = 0;
        for (int64_t r = 0; r < s.kh; ++r) in_padded_rows += oh * s.stride_h + r * s.dil_h < ph;
        for (int64_t q = 0; q < s.kw; ++q) in_padded_cols += ow * s.stride_w + q * s.dil_w < pw;
        for (int64_t r = 0; r < s.kh; ++r)
          for (int64_t q = 0; q < s.kw; ++q) {
            const int64_t i = oh * s.stride_h + r * s.dil_h, j = ow * s.stride_w + q * s.dil_w;
            if (i >= ph || j >= pw || std::isnan(padded[i * pw + j])) continue;
            best = std::max(best, padded[i * pw + j]);
            sum += padded[i * pw + j];
            ++real;
          }
        if (max) {
          y.push_back(best);
        } else if (real == 0) {
          y.push_back(0.0);
        } else {
          y.push_back(sum / static_cast<double>(
                                s.count_include_pad ? in_padded_rows * in_padded_cols : real));
        }
      }
  }
  return y;
}

TEST(RefKernels, PoolingMatchesNaive) {
  // kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w.
  const int64_t windows[][8] = {
      {3, 3, 2, 2, 1, 1, 1, 1}, {2, 2, 2, 2, 0, 0, 1, 1}, {3, 2, 1, 3, 1, 1, 1, 1},
      {5, 3, 2, 2, 2, 1, 1, 1}, {3, 3, 2, 1, 1, 0, 2, 3}, {1, 4, 3, 2, 0, 2, 1, 1},
  };
  unsigned seed = 500;
  for (const auto& k : windows) {
    for (bool ceil_mode : {false, true}) {
      for (bool include_pad : {false, true}) {
        const Pool2dShape s = pool_shape(2, 3, 11, 10, k[0], k[1], k[2], k[3], k[4], k[5], k[6],
                                         k[7], ceil_mode, include_pad);
        SCOPED_TRACE("window " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " stride " +
                     std::to_string(k[2]) + "," + std::to_string(k[3]) + " pad " +
                     std::to_string(k[4]) + "," + std::to_string(k[5]) + " dil " +
                     std::to_string(k[6]) + "," + std::to_string(k[7]) +
                     (ceil_mode ? " ceil" : "") + (include_pad ? " include_pad" : ""));
        const auto x = random_vec(s.n * s.c * s.h * s.w, seed++);
        EXPECT_TRUE(all_close(run_pool(true, x, s), naive_pool(true, x, s), 0.0, 0.0));
        EXPECT_TRUE(all_close(run_pool(false, x, s), naive_pool(false, x, s), 1.2e-7, 1e-12));
      }
    }
  }
}

TEST(RefKernels, MaxPoolPropagatesNan) {
  auto x = random_vec(16, 9);
  x[5] = kNan;  // row 1, column 1 of a 4x4 plane
  const auto y = run_pool(true, x, pool_shape(1, 1, 4, 4, 2, 2, 2, 2, 0, 0, 1, 1, false, false));
  ASSERT_EQ(y.size(), 4u);
  EXPECT_TRUE(std::isnan(y[0]));
  for (int i = 1; i < 4; ++i) EXPECT_FALSE(std::isnan(y[i])) << i;
}

TEST(RefKernels, GlobalAvgPoolMatchesNaive) {
  const int64_t n = 2, c = 5, hw = 49;
  const auto x = random_vec(n * c * hw, 11);
  auto y = poisoned(n * c);
  global_avgpool(x.data(), y.data(), n, c, hw);
  std::vector<double> want;
  for (int64_t p = 0; p < n * c; ++p) {
    double sum = 0.0;
    for (int64_t i = 0; i < hw; ++i) sum += x[p * hw + i];
    want.push_back(sum / hw);
  }
  EXPECT_TRUE(all_close(y, want, 1.2e-7, 1e-12));
}

// ---------------------------------------------------------------- the rest

TEST(RefKernels, LinearMatchesNaive) {
  // in = 300 crosses the GEMM's depth block and out = 130 its row block.
  const int64_t n = 3, in = 300, out = 130;
  const auto x = random_vec(n * in, 21), w = random_vec(out * in, 22), b = random_vec(out, 23);
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "bias" : "no bias");
    auto y = poisoned(n * out);
    linear(x.data(), w.data(), with_bias ? b.data() : nullptr, y.data(), n, in, out);
    std::vector<double> want;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double acc = with_bias ? b[o] : 0.0;
        for (int64_t k = 0; k < in; ++k) acc += static_cast<double>(x[i * in + k]) * w[o * in + k];
        want.push_back(acc);
      }
    EXPECT_TRUE(all_close(y, want, 1.2e-7, 1e-10));
  }
}

TEST(RefKernels, BatchNormMatchesFormula) {
  const int64_t n = 2, c = 3, hw = 10;
  const double eps = 1e-5;
  const auto x = random_vec(n * c * hw, 31, -3.0f, 3.0f);
  const auto gamma = random_vec(c, 32), beta = random_vec(c, 33), mean = random_vec(c, 34);
  const auto var = random_vec(c, 35, 0.01f, 2.0f);
  for (bool affine : {true, false}) {
    SCOPED_TRACE(affine ? "affine" : "no affine");
    auto y = poisoned(n * c * hw);
    batchnorm2d(x.data(), y.data(), n, c, hw, affine ? gamma.data() : nullptr,
                affine ? beta.data() : nullptr, mean.data(), var.data(), eps);
    std::vector<double> want;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < hw; ++i) {
          const double v = (x[(b * c + ch) * hw + i] - static_cast<double>(mean[ch])) /
                           std::sqrt(static_cast<double>(var[ch]) + eps);
          want.push_back(affine ? v * gamma[ch] + beta[ch] : v);
        }
    EXPECT_TRUE(all_close(y, want, 1.2e-7, 1e-12));
  }
}

TEST(RefKernels, SoftmaxMatchesNaive) {
  const int64_t rows = 4, cols = 37;
  const auto x = random_vec(rows * cols, 41, -5.0f, 5.0f);
  auto y = poisoned(rows * cols);
  softmax(x.data(), y.data(), rows, cols);
  std::vector<double> want;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;  // small logits: the textbook formula is safe here
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(static_cast<double>(x[r * cols + j]));
    for (int64_t j = 0; j < cols; ++j) want.push_back(std::exp(x[r * cols + j]) / sum);
  }
  EXPECT_TRUE(all_close(y, want, 1.2e-7, 1e-12));
}

TEST(RefKernels, SoftmaxLargeLogitsDoNotOverflow) {
  // Expected: torch 1.13 torch.softmax(torch.tensor([1000., 1001., 1002.]), 0) and the same for
  // [-1000, -1001, -1002]; exp(1000) overflows float and double alike without the max shift.
  const std::vector<float> x = {1000.0f, 1001.0f, 1002.0f, -1000.0f, -1001.0f, -1002.0f};
  auto y = poisoned(6);
  softmax(x.data(), y.data(), 2, 3);
  expect_equal_floats(
      y, {0.09003057f, 0.24472848f, 0.66524094f, 0.66524094f, 0.24472848f, 0.09003057f});
  // Shift invariance on random rows: softmax(x + 3e4) == softmax(x). The logits are multiples
  // of 1/64 so that adding 3e4 is exact in float and the two results must agree to rounding.
  const int64_t cols = 50;
  auto base = random_vec(cols, 42, -4.0f, 4.0f);
  for (float& v : base) v = std::round(v * 64.0f) / 64.0f;
  std::vector<float> shifted(base);
  for (float& v : shifted) v += 3.0e4f;
  auto y_base = poisoned(cols), y_shifted = poisoned(cols);
  softmax(base.data(), y_base.data(), 1, cols);
  softmax(shifted.data(), y_shifted.data(), 1, cols);
  const std::vector<double> want(y_base.begin(), y_base.end());
  EXPECT_TRUE(all_close(y_shifted, want, 1.2e-7, 0.0));
}

TEST(RefKernels, ActivationsMatchStdAndPropagateNan) {
  auto x = random_vec(64, 51, -6.0f, 6.0f);
  x[3] = kNan;
  x[7] = 100.0f;
  x[8] = -100.0f;
  x[9] = -1000.0f;  // sigmoid's exp(-x) overflows here; the result must still be 0
  auto y = poisoned(64);
  relu(x.data(), y.data(), 64);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
    } else {
      EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f) << i;
    }
  }
  tanh(x.data(), y.data(), 64);
  std::vector<double> want;
  for (float v : x) want.push_back(std::tanh(static_cast<double>(v)));
  std::vector<float> finite_y = y;
  EXPECT_TRUE(std::isnan(y[3]));
  finite_y[3] = 0.0f, want[3] = 0.0;
  EXPECT_TRUE(all_close(finite_y, want, 6e-8, 0.0));
  sigmoid(x.data(), y.data(), 64);
  want.clear();
  for (float v : x) want.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(y[9], 0.0f);
  EXPECT_EQ(y[7], 1.0f);
  finite_y = y;
  finite_y[3] = 0.0f, want[3] = 0.0;
  EXPECT_TRUE(all_close(finite_y, want, 6e-8, 1e-45));
  // SiLU: x * sigmoid(x), -0 for very negative x as PyTorch (x / (1 + exp(-x))).
  activation<act::Silu>(x.data(), y.data(), 64);
  want.clear();
  for (float v : x)
    want.push_back(static_cast<double>(v) / (1.0 + std::exp(-static_cast<double>(v))));
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(y[7], 100.0f);
  EXPECT_EQ(y[9], 0.0f);
  finite_y = y;
  finite_y[3] = 0.0f, want[3] = 0.0;
  EXPECT_TRUE(all_close(finite_y, want, 6e-8, 1e-45));
}

TEST(RefKernels, ElementwiseWorksInPlace) {
  auto x = random_vec(33, 61);
  const auto original = x;
  relu(x.data(), x.data(), 33);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], std::max(original[i], 0.0f));
  const auto b = random_vec(33, 62);
  add(x.data(), b.data(), x.data(), 33);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], std::max(original[i], 0.0f) + b[i]);
}

TEST(RefKernels, AddMatchesFloatSum) {
  const auto a = random_vec(101, 71), b = random_vec(101, 72);
  auto y = poisoned(101);
  add(a.data(), b.data(), y.data(), 101);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], a[i] + b[i]) << i;
}

TEST(RefKernels, ConcatChannelsInterleavesPerImage) {
  const int64_t n = 2, hw = 6;
  const std::vector<int64_t> channels = {2, 1, 3};
  std::vector<std::vector<float>> inputs;
  std::vector<const float*> ptrs;
  unsigned seed = 80;
  for (int64_t c : channels) inputs.push_back(random_vec(n * c * hw, seed++));
  for (const auto& v : inputs) ptrs.push_back(v.data());
  auto y = poisoned(n * 6 * hw);
  concat_channels(ptrs, channels, y.data(), n, hw);
  for (int64_t b = 0; b < n; ++b) {
    int64_t c_out = 0;
    for (size_t i = 0; i < channels.size(); ++i) {
      for (int64_t c = 0; c < channels[i]; ++c, ++c_out) {
        for (int64_t p = 0; p < hw; ++p) {
          EXPECT_EQ(y[(b * 6 + c_out) * hw + p], inputs[i][(b * channels[i] + c) * hw + p])
              << "image " << b << " channel " << c_out << " pixel " << p;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- benchmarks (disabled)

double seconds_of_best(int reps, const std::function<void()>& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

double conv_flops(const Conv2dShape& s) {
  return 2.0 * static_cast<double>(s.n * s.c_out * s.out_h * s.out_w) *
         static_cast<double>(s.c_in / s.groups * s.kh * s.kw);
}

// Run with --gtest_also_run_disabled_tests --gtest_filter='*Gflops*:*Resnet50*'.
TEST(RefKernels, DISABLED_Conv3x3Gflops) {
  const Conv2dShape shapes[] = {
      conv_shape(1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1),    // ResNet-50 layer1 3x3
      conv_shape(1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1),  // layer3 3x3
      conv_shape(2, 128, 8, 8, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1),    // layer2 at 64x64 input
  };
  for (const Conv2dShape& s : shapes) {
    const auto x = random_vec(s.n * s.c_in * s.h * s.w, 1);
    const auto w = random_vec(s.c_out * s.c_in * s.kh * s.kw, 2);
    std::vector<float> y(static_cast<size_t>(s.n * s.c_out * s.out_h * s.out_w));
    const double t = seconds_of_best(5, [&] { conv2d(x.data(), w.data(), nullptr, y.data(), s); });
    std::printf("conv3x3 n=%lld c=%lld %lldx%lld: %.2f ms, %.2f GFLOP/s\n",
                static_cast<long long>(s.n), static_cast<long long>(s.c_in),
                static_cast<long long>(s.h), static_cast<long long>(s.w), t * 1e3,
                conv_flops(s) / t * 1e-9);
  }
}

// Every convolution of torchvision's ResNet-50 at 64x64, batch 2: the CI workload.
TEST(RefKernels, DISABLED_Resnet50ConvsAt64) {
  std::vector<Conv2dShape> convs;
  int64_t size = 64, channels = 64;
  convs.push_back(conv_shape(2, 3, size, size, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1));
  size = pool_out_size(conv_out_size(size, 7, 2, 3, 1), 3, 2, 1, 1, false);
  const int64_t blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = 64 << stage, out_channels = width * 4;
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      const int64_t out_size = conv_out_size(size, 3, stride, 1, 1);
      convs.push_back(conv_shape(2, channels, size, size, width, 1, 1, 1, 1, 0, 0, 1, 1, 1));
      convs.push_back(conv_shape(2, width, size, size, width, 3, 3, stride, stride, 1, 1, 1, 1, 1));
      convs.push_back(
          conv_shape(2, width, out_size, out_size, out_channels, 1, 1, 1, 1, 0, 0, 1, 1, 1));
      if (b == 0) {
        convs.push_back(
            conv_shape(2, channels, size, size, out_channels, 1, 1, stride, stride, 0, 0, 1, 1, 1));
      }
      channels = out_channels;
      size = out_size;
    }
  }
  double flops = 0.0;
  std::vector<std::vector<float>> xs, ws, ys;
  for (const Conv2dShape& s : convs) {
    flops += conv_flops(s);
    xs.push_back(random_vec(s.n * s.c_in * s.h * s.w, 1));
    ws.push_back(random_vec(s.c_out * s.c_in * s.kh * s.kw, 2));
    ys.emplace_back(static_cast<size_t>(s.n * s.c_out * s.out_h * s.out_w));
  }
  const double t = seconds_of_best(3, [&] {
    for (size_t i = 0; i < convs.size(); ++i) {
      conv2d(xs[i].data(), ws[i].data(), nullptr, ys[i].data(), convs[i]);
    }
  });
  std::printf("ResNet-50 64x64 batch 2: %zu convs, %.3f GFLOP in %.3f s, %.2f GFLOP/s\n",
              convs.size(), flops * 1e-9, t, flops / t * 1e-9);
}

}  // namespace
}  // namespace zoc::ref
