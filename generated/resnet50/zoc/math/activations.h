// Unary pointwise activations as forward/backward pairs of scalar functions, written once for
// every consumer: the reference interpreter runs them in double over float tensors (one
// rounding, like its other kernels), and generated GPU kernels run them in float (ZOC_HD is
// __host__ __device__ under nvcc). Each activation is a struct with
//   forward(x)      y = f(x)
//   backward(s, dy) dx = f'(x) * dy, where s is the forward's output y if kFromOutput, else x
// and a row in compiler/ir/ops.def (ZOC_ACTIVATION) that ties it to its two ops, so a new
// activation needs no code in the shape rules, the gradient rules or the interpreter. The
// formulas are PyTorch's (ReLU's backward is threshold_backward on the output; tanh's and
// sigmoid's read the output), and NaN propagates through the forward as in PyTorch.
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

struct Relu {
  static constexpr bool kFromOutput = true;
  template <class T>
  ZOC_HD static T forward(T x) {
    return (x > T(0) || x != x) ? x : T(0);
  }
  template <class T>
  ZOC_HD static T backward(T y, T dy) {
    return y > T(0) ? dy : T(0);
  }
};

struct Tanh {
  static constexpr bool kFromOutput = true;
  template <class T>
  ZOC_HD static T forward(T x) {
    return std::tanh(x);
  }
  template <class T>
  ZOC_HD static T backward(T y, T dy) {
    return dy * (T(1) - y * y);
  }
};

struct Sigmoid {
  static constexpr bool kFromOutput = true;
  // exp(-x) overflows to inf for very negative x, which correctly gives 0.
  template <class T>
  ZOC_HD static T forward(T x) {
    return T(1) / (T(1) + std::exp(-x));
  }
  template <class T>
  ZOC_HD static T backward(T y, T dy) {
    return dy * y * (T(1) - y);
  }
};

// SiLU (swish): x * sigmoid(x); backward from the input, as PyTorch's silu_backward:
// dy * s * (1 + x * (1 - s)) with s = sigmoid(x).
struct Silu {
  static constexpr bool kFromOutput = false;
  template <class T>
  ZOC_HD static T forward(T x) {
    return x / (T(1) + std::exp(-x));
  }
  template <class T>
  ZOC_HD static T backward(T x, T dy) {
    const T s = T(1) / (T(1) + std::exp(-x));
    return dy * s * (T(1) + x * (T(1) - s));
  }
};

// Every activation above, for code that picks one from a constant (generated trainers' kernels,
// zoc/train/kernels.cuh): X(Name) per struct. A new activation adds its struct and its name here.
#define ZOC_ACTIVATION_LIST(X) X(Relu) X(Tanh) X(Sigmoid) X(Silu)

enum class Kind {
#define ZOC_ACTIVATION_KIND(name) k##name,
  ZOC_ACTIVATION_LIST(ZOC_ACTIVATION_KIND)
#undef ZOC_ACTIVATION_KIND
};

}  // namespace zoc::act
