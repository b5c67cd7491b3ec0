// Tests of runtime/zoc/math/requant.h, the CPU oracle of INT8 work (tests/gpu/int8_probe.cu):
// each rounding rule on ties, negatives and saturation, the epilogue's order, and the exact
// int32 convolution against sums written out by hand (padding, stride, channels).
#include "zoc/math/requant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using zoc::requant::Rounding;
using zoc::requant::to_int8;

TEST(Requant, RoundingRulesOnTies) {
  EXPECT_EQ(to_int8(2.5f, Rounding::kNearestEven), 2);
  EXPECT_EQ(to_int8(3.5f, Rounding::kNearestEven), 4);
  EXPECT_EQ(to_int8(-2.5f, Rounding::kNearestEven), -2);
  EXPECT_EQ(to_int8(2.5f, Rounding::kNearestAway), 3);
  EXPECT_EQ(to_int8(-2.5f, Rounding::kNearestAway), -3);
  EXPECT_EQ(to_int8(2.5f, Rounding::kHalfUp), 3);
  EXPECT_EQ(to_int8(-2.5f, Rounding::kHalfUp), -2);
  EXPECT_EQ(to_int8(-2.7f, Rounding::kTruncate), -2);
  EXPECT_EQ(to_int8(2.7f, Rounding::kTruncate), 2);
  EXPECT_EQ(to_int8(-2.1f, Rounding::kFloor), -3);
}

TEST(Requant, Saturates) {
  for (int m = 0; m < zoc::requant::kRoundingCount; ++m) {
    EXPECT_EQ(to_int8(1000.0f, Rounding(m)), 127);
    EXPECT_EQ(to_int8(-1000.0f, Rounding(m)), -128);
    EXPECT_EQ(to_int8(-128.0f, Rounding(m)), -128);
    EXPECT_EQ(to_int8(127.0f, Rounding(m)), 127);
  }
  EXPECT_EQ(to_int8(127.5f, Rounding::kNearestEven), 127);  // 128 saturates
  EXPECT_EQ(to_int8(-128.5f, Rounding::kNearestEven), -128);
  EXPECT_EQ(to_int8(std::nanf(""), Rounding::kNearestEven), 0);
}

TEST(Requant, EpilogueOrder) {
  EXPECT_FLOAT_EQ(zoc::requant::epilogue(10, 0.5f, 1.0f, 2.0f, false), 8.0f);
  EXPECT_FLOAT_EQ(zoc::requant::epilogue(-10, 0.5f, 1.0f, 2.0f, true), 0.0f);
  EXPECT_FLOAT_EQ(zoc::requant::epilogue(-10, 0.5f, 1.0f, 0.0f, false), -4.0f);
}

// 1 image 3x3x2 (NHWC), 2 filters 3x3x2 (KRSC), pad 1, stride 2 -> 2x2x2.
TEST(Requant, ConvMatchesHandSums) {
  std::vector<int8_t> x(18), w(36);
  for (int i = 0; i < 18; ++i) x[size_t(i)] = int8_t(i - 9);
  for (int i = 0; i < 36; ++i) w[size_t(i)] = int8_t((i % 7) - 3);
  const zoc::requant::ConvDims d{1, 2, 3, 3, 2, 3, 3, 1, 1, 2, 2, 2, 2};
  std::vector<int32_t> acc(8);
  zoc::requant::conv_nhwc_int32(d, x.data(), w.data(), acc.data());
  for (int p = 0; p < 2; ++p) {
    for (int q = 0; q < 2; ++q) {
      for (int k = 0; k < 2; ++k) {
        int32_t want = 0;
        for (int r = 0; r < 3; ++r) {
          for (int s = 0; s < 3; ++s) {
            const int h = 2 * p - 1 + r, ww = 2 * q - 1 + s;
            if (h < 0 || h >= 3 || ww < 0 || ww >= 3) continue;
            for (int c = 0; c < 2; ++c) {
              want += x[size_t((h * 3 + ww) * 2 + c)] * w[size_t(((k * 3 + r) * 3 + s) * 2 + c)];
            }
          }
        }
        EXPECT_EQ(acc[size_t((p * 2 + q) * 2 + k)], want) << p << "," << q << "," << k;
      }
    }
  }
}

TEST(Requant, ConvExtremesStayExact) {  // 2048 channels of -128 * -128: 33554432, no overflow
  std::vector<int8_t> x(2048, -128), w(2048, -128);
  const zoc::requant::ConvDims d{1, 2048, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1};
  int32_t acc = 0;
  zoc::requant::conv_nhwc_int32(d, x.data(), w.data(), &acc);
  EXPECT_EQ(acc, 2048 * 128 * 128);
}

}  // namespace
