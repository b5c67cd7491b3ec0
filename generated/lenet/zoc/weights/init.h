// Seeded parameter initialization, reproducible across platforms and shared by the compiler
// (`zoc init-weights`, `zoc run` without weights) and the generated constructors, so that "no
// weights file, seed S" means the same numbers everywhere.
//
// Rules. PyTorch's defaults (torch.nn reset_parameters()):
//   kUniformFanIn: U(-1/sqrt(fan), 1/sqrt(fan)), fan = fan_in  [conv / linear weight and bias,
//                  kaiming_uniform_(a=sqrt 5)]
//   kOnes, kZeros: the constants  [batchnorm weight and running_var 1; bias, running_mean 0]
// and the option torchvision's ResNets use:
//   kNormalFanOut: N(0, 2/fan), fan = fan_out = out_channels * kh * kw (or out_features)
//                  [kaiming_normal_(mode='fan_out', nonlinearity='relu')]
// Each tensor draws from its own 64-bit Mersenne Twister seeded with seed ^ FNV-1a(name), so a
// tensor's values do not depend on the order in which tensors are initialized (the compiler
// and a fused, reordered generated model agree). Uniforms use an explicit 53-bit mantissa, not
// std::uniform_real_distribution or std::normal_distribution, whose outputs differ between
// standard libraries; normals come from the Box-Muller transform written out below (exact up
// to the last bit of the C library's log, cos and sin, which the rounding to float absorbs in
// all but rare cases). The distributions are PyTorch's; the random stream is not PyTorch's.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string_view>

namespace zoc {

enum class InitRule { kUniformFanIn, kOnes, kZeros, kNormalFanOut };

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Fills out[0..count) for tensor `name`. `fan` is fan_in for kUniformFanIn, fan_out for
// kNormalFanOut, unused by the constants; a fan below 1 counts as 1.
inline void init_tensor(uint64_t seed, std::string_view name, InitRule rule, int64_t fan,
                        float* out, int64_t count) {
  if (rule == InitRule::kOnes || rule == InitRule::kZeros) {
    const float v = rule == InitRule::kOnes ? 1.0f : 0.0f;
    for (int64_t i = 0; i < count; ++i) out[i] = v;
    return;
  }
  std::mt19937_64 gen(seed ^ fnv1a64(name));
  const double n = static_cast<double>(fan > 0 ? fan : 1);
  if (rule == InitRule::kUniformFanIn) {
    const double bound = 1.0 / std::sqrt(n);
    for (int64_t i = 0; i < count; ++i) {
      const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;  // [0, 1)
      out[i] = static_cast<float>((2.0 * u - 1.0) * bound);
    }
    return;
  }
  // kNormalFanOut. Box-Muller: from u1 in (0, 1] and u2 in [0, 1), both 53-bit,
  //   r = sqrt(-2 ln u1),  z0 = r cos(2 pi u2),  z1 = r sin(2 pi u2)
  // are two independent standard normals; element 2k is std * z0, element 2k+1 is std * z1.
  const double stddev = std::sqrt(2.0 / n);
  const double two_pi = 6.283185307179586476925286766559;
  for (int64_t i = 0; i < count; i += 2) {
    const double u1 = static_cast<double>((gen() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(gen() >> 11) * 0x1.0p-53;        // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(stddev * r * std::cos(two_pi * u2));
    if (i + 1 < count) out[i + 1] = static_cast<float>(stddev * r * std::sin(two_pi * u2));
  }
}

}  // namespace zoc
