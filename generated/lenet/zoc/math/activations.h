// Unary pointwise activations as forward/backward pairs of scalar functions, written once for
// every consumer: the reference interpreter runs them in double over float tensors (one
// rounding, like its other kernels), and generated GPU kernels run them in float (ZOC_HD is
// __host__ __device__ under nvcc). Each activation is a struct with
//   forward(x, p)      y = f(x)
//   backward(s, dy, p) dx = f'(x) * dy, where s is the forward's output y if kFromOutput (or,
//                      where the struct has one, reads_output(p)), else x
// where p holds the op's numeric attributes (kParamA, kParamB name them; hardtanh's bounds), and
// a row in compiler/ir/ops.def (ZOC_ACTIVATION) that ties it to its two ops, so a new activation
// needs no code in the shape rules, the gradient rules, the interpreter or the GPU backends. The
// formulas are PyTorch's (ReLU's backward is threshold_backward on the output; tanh's and
// sigmoid's read the output, hardtanh's the output where that gives the same result; the
// others read the input), and NaN propagates through the forward as in PyTorch.
#pragma once

#include <cmath>

// Host and device functions where nvcc compiles them (generated kernels), host ones elsewhere.
#ifndef ZOC_HD
#ifdef __CUDACC__
#define ZOC_HD __host__ __device__
#else
#define ZOC_HD
#endif
#endif

namespace zoc::act {

// The numeric attributes of an activation op (kParamA, kParamB of its struct; 0 when unused).
struct Params {
  double a = 0, b = 0;
};

// Most activations take no attributes.
struct NoParams {
  static constexpr const char* kParamA = nullptr;
  static constexpr const char* kParamB = nullptr;
};

struct Relu : NoParams {
  static constexpr bool kFromOutput = true;
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    return (x > T(0) || x != x) ? x : T(0);
  }
  template <class T>
  ZOC_HD static T backward(T y, T dy, const Params&) {
    return y > T(0) ? dy : T(0);
  }
};

struct Tanh : NoParams {
  static constexpr bool kFromOutput = true;
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    return std::tanh(x);
  }
  template <class T>
  ZOC_HD static T backward(T y, T dy, const Params&) {
    return dy * (T(1) - y * y);
  }
};

struct Sigmoid : NoParams {
  static constexpr bool kFromOutput = true;
  // exp(-x) overflows to inf for very negative x, which correctly gives 0.
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    return T(1) / (T(1) + std::exp(-x));
  }
  template <class T>
  ZOC_HD static T backward(T y, T dy, const Params&) {
    return dy * y * (T(1) - y);
  }
};

// SiLU (swish): x * sigmoid(x); backward from the input, as PyTorch's silu_backward:
// dy * s * (1 + x * (1 - s)) with s = sigmoid(x).
struct Silu : NoParams {
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    return x / (T(1) + std::exp(-x));
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy, const Params&) {
    const T s = T(1) / (T(1) + std::exp(-x));
    return dy * s * (T(1) + x * (T(1) - s));
  }
};

// Hardtanh: x clamped to [min_val, max_val] (ReLU6 is [0, 6]); NaN passes through. Backward as
// PyTorch's hardtanh_backward: dy where min_val < s < max_val, else 0, the same test on the
// input or the output where the output stores the bounds exactly (reads_output): a trainer
// then keeps y, which the next layer keeps anyway, and not x (MobileNetV2's bf16 arena: 3.07 ->
// 2.1 MiB per sample at 64x64). A bound that a 16-bit type rounds inward (0.7 in bf16) would
// make a clamped y look unclamped, so other bounds read x.
struct Hardtanh {
  static constexpr const char* kParamA = "min_val";
  static constexpr const char* kParamB = "max_val";
  static constexpr bool kFromOutput = false;
  // Integers of magnitude up to 256: exact in fp32, bf16 and fp16 alike.
  static bool reads_output(const Params& p) {
    const auto exact = [](double v) { return v == std::floor(v) && std::fabs(v) <= 256.0; };
    return exact(p.a) && exact(p.b);
  }
  template <class T>
  ZOC_HD static T forward(T x, const Params& p) {
    const T lo = T(p.a), hi = T(p.b);
    return x < lo ? lo : (x > hi ? hi : x);
  }
  template <class T>
  ZOC_HD static T backward(T s, T dy, const Params& p) {
    return (s > T(p.a) && s < T(p.b)) ? dy : T(0);
  }
};

// Hardswish: x * relu6(x + 3) / 6. Backward as PyTorch's: 0 below -3, dy above 3, else
// dy * (2x + 3) / 6.
struct Hardswish : NoParams {
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    const T r = x + T(3);
    return x * (r < T(0) ? T(0) : (r > T(6) ? T(6) : r)) / T(6);
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy, const Params&) {
    if (x < T(-3)) return T(0);
    if (x <= T(3)) return dy * (T(2) * x + T(3)) / T(6);
    return dy;
  }
};

// Hardsigmoid: relu6(x + 3) / 6. Backward: dy / 6 inside (-3, 3), else 0.
struct Hardsigmoid : NoParams {
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    const T r = x + T(3);
    return (r < T(0) ? T(0) : (r > T(6) ? T(6) : r)) / T(6);
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy, const Params&) {
    return (x > T(-3) && x < T(3)) ? dy / T(6) : T(0);
  }
};

// GELU, exact: x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2))); backward dy * (Phi(x) + x * phi(x)).
struct Gelu : NoParams {
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy, const Params&) {
    const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
    const T pdf = std::exp(T(-0.5) * x * x) * T(0.39894228040143267794);
    return dy * (cdf + x * pdf);
  }
};

// GELU, tanh approximation (approximate='tanh'): x / 2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluTanh : NoParams {
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x, const Params&) {
    const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
    return T(0.5) * x * (T(1) + std::tanh(inner));
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy, const Params&) {
    const T k = T(0.79788456080286535588);
    const T inner = k * (x + T(0.044715) * x * x * x);
    const T t = std::tanh(inner);
    const T d_inner = k * (T(1) + T(3) * T(0.044715) * x * x);
    return dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * d_inner);
  }
};

// LeakyReLU: x above 0, else x * negative_slope, the slope rounded to float as PyTorch's kernel
// holds it; backward as leaky_relu_backward: dy above 0, else dy * negative_slope.
struct LeakyRelu {
  static constexpr const char* kParamA = "negative_slope";
  static constexpr const char* kParamB = nullptr;
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x, const Params& p) {
    return x > T(0) ? x : x * T(static_cast<float>(p.a));
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy, const Params& p) {
    return x > T(0) ? dy : dy * T(static_cast<float>(p.a));
  }
};

// ELU: x above 0, else alpha * (exp(x) - 1); backward as elu_backward on the input: dy above 0,
// else dy * alpha * exp(x).
struct Elu {
  static constexpr const char* kParamA = "alpha";
  static constexpr const char* kParamB = nullptr;
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x, const Params& p) {
    return x > T(0) ? x : T(p.a) * std::expm1(x);
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy, const Params& p) {
    return x > T(0) ? dy : dy * T(p.a) * std::exp(x);
  }
};

// Every activation above, for code that picks one from a constant (the generated kernels):
// X(Name) per struct. A new activation adds its struct and its name here.
#define ZOC_ACTIVATION_LIST(X) \
  X(Relu)                      \
  X(Tanh)                      \
  X(Sigmoid)                   \
  X(Silu)                      \
  X(Hardtanh)                  \
  X(Hardswish)                 \
  X(Hardsigmoid)               \
  X(Gelu)                      \
  X(GeluTanh)                  \
  X(LeakyRelu)                 \
  X(Elu)

enum class Kind {
#define ZOC_ACTIVATION_KIND(name) k##name,
  ZOC_ACTIVATION_LIST(ZOC_ACTIVATION_KIND)
#undef ZOC_ACTIVATION_KIND
};

// Whether cuDNN's graph API has a pointwise mode computing the activation (ReLU with clips for
// hardtanh, ReLU with a lower clip slope for leaky ReLU, ELU with its alpha, swish with beta 1
// for SiLU, GELU in both forms: zoc/cudnn/graph_ops.h maps them), so that a graph-API
// convolution applies it in its epilogue. Hardswish and hardsigmoid have none.
constexpr bool cudnn_pointwise(Kind k) { return k != Kind::kHardswish && k != Kind::kHardsigmoid; }

}  // namespace zoc::act
