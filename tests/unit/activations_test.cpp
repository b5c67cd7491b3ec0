// The activations of zoc/math/activations.h, which the interpreter, the trainers and the
// inference kernels all run: each backward is the derivative of its forward (central differences
// in double away from the kinks), forwards match PyTorch's formulas at known points, and NaN
// passes through every forward.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "zoc/math/activations.h"

namespace zoc {
namespace {

template <class Math>
void expect_backward_is_derivative(const act::Params& p) {
  for (double x = -5.0; x <= 5.0; x += 0.0731) {
    bool near_kink = false;
    for (double k : {-3.0, 0.0, 3.0, p.a, p.b}) near_kink = near_kink || std::abs(x - k) < 1e-3;
    if (near_kink) continue;
    const double h = 1e-6;
    const double fd = (Math::forward(x + h, p) - Math::forward(x - h, p)) / (2 * h);
    const double s = Math::kFromOutput ? Math::forward(x, p) : x;
    EXPECT_NEAR(Math::backward(s, 1.0, p), fd, 1e-6) << x;
    EXPECT_NEAR(Math::backward(s, 2.5, p), 2.5 * fd, 3e-6) << x;
  }
  EXPECT_TRUE(std::isnan(Math::forward(std::numeric_limits<double>::quiet_NaN(), p)));
}

TEST(Activations, BackwardIsTheDerivativeOfForward) {
  expect_backward_is_derivative<act::Relu>({});
  expect_backward_is_derivative<act::Tanh>({});
  expect_backward_is_derivative<act::Sigmoid>({});
  expect_backward_is_derivative<act::Silu>({});
  expect_backward_is_derivative<act::Hardtanh>({0.0, 6.0});
  expect_backward_is_derivative<act::Hardtanh>({-1.0, 1.0});
  expect_backward_is_derivative<act::Hardswish>({});
  expect_backward_is_derivative<act::Hardsigmoid>({});
  expect_backward_is_derivative<act::Gelu>({});
  expect_backward_is_derivative<act::GeluTanh>({});
  expect_backward_is_derivative<act::LeakyRelu>({0.01, 0});
  expect_backward_is_derivative<act::LeakyRelu>({-0.3, 0});
  expect_backward_is_derivative<act::Elu>({1.0, 0});
  expect_backward_is_derivative<act::Elu>({0.4, 0});
}

// Hardtanh's gradient reads its output where the bounds are exact in every storage type (the
// same test as on the input, so a trainer keeps y and not x), and its input elsewhere: bf16
// rounds 0.7 to 0.69921875, so a clamped and an unclamped value would look alike.
TEST(Activations, HardtanhReadsItsOutputOnlyWhereTheBoundsAreExact) {
  EXPECT_TRUE(act::Hardtanh::reads_output({0.0, 6.0}));
  EXPECT_TRUE(act::Hardtanh::reads_output({-1.0, 1.0}));
  EXPECT_FALSE(act::Hardtanh::reads_output({-0.7, 0.7}));
  EXPECT_FALSE(act::Hardtanh::reads_output({0.0, 1e30}));
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const act::Params& p : {act::Params{0.0, 6.0}, act::Params{-1.0, 1.0}}) {
    for (double x : {-inf, -2.0, -1.0, -1e-30, 0.0, 1e-30, 0.5, 1.0, 5.999, 6.0, 6.5, inf, nan}) {
      const float xf = static_cast<float>(x);
      EXPECT_EQ(act::Hardtanh::backward(act::Hardtanh::forward(x, p), 1.0, p),
                act::Hardtanh::backward(x, 1.0, p))
          << x;
      EXPECT_EQ(act::Hardtanh::backward(act::Hardtanh::forward(xf, p), 1.0f, p),
                act::Hardtanh::backward(xf, 1.0f, p))
          << x;
    }
  }
}

// Leaky ReLU's slope is PyTorch's float: 0.1 * 3 is float(0.1) * 3 rounded, not 0.3.
TEST(Activations, LeakyReluAndElu) {
  EXPECT_EQ(act::LeakyRelu::forward(-3.0f, {0.1, 0}), -3.0f * 0.1f);
  EXPECT_EQ(act::LeakyRelu::forward(2.5, {0.1, 0}), 2.5);
  EXPECT_EQ(act::LeakyRelu::forward(0.0, {0.1, 0}), 0.0);
  EXPECT_NEAR(act::Elu::forward(-1.0, {0.5, 0}), 0.5 * (std::exp(-1.0) - 1), 1e-16);
  EXPECT_NEAR(act::Elu::forward(-1e-9, {1.0, 0}), -1e-9 + 5e-19, 1e-24);  // expm1: exact here
  EXPECT_EQ(act::Elu::forward(4.0, {0.5, 0}), 4.0);
}

// Values from PyTorch 1.13 (torch.nn.functional, float64).
TEST(Activations, ForwardsAtKnownPoints) {
  const act::Params relu6{0.0, 6.0};
  EXPECT_EQ(act::Hardtanh::forward(7.5, relu6), 6.0);
  EXPECT_EQ(act::Hardtanh::forward(-2.0, relu6), 0.0);
  EXPECT_EQ(act::Hardtanh::forward(2.25, relu6), 2.25);
  EXPECT_DOUBLE_EQ(act::Hardswish::forward(1.0, {}), 1.0 * 4.0 / 6.0);
  EXPECT_EQ(act::Hardswish::forward(-4.0, {}), 0.0);
  EXPECT_EQ(act::Hardswish::forward(4.0, {}), 4.0);
  EXPECT_DOUBLE_EQ(act::Hardsigmoid::forward(1.5, {}), 4.5 / 6.0);
  EXPECT_NEAR(act::Gelu::forward(1.0, {}), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(act::Gelu::forward(-0.5, {}), -0.15426876936299347, 1e-15);
  EXPECT_NEAR(act::GeluTanh::forward(1.0, {}), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(act::Silu::forward(2.0, {}), 1.7615941559557649, 1e-15);
}

}  // namespace
}  // namespace zoc
