// PyTorch's default parameter initialization, reproducible across platforms and shared by the
// compiler (`zoc init-weights`, `zoc run` without weights) and the generated constructors, so
// that "no weights file, seed S" means the same numbers everywhere.
//
// Rules (torch.nn reset_parameters()):
//   conv / linear weight and bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in))  [kaiming_uniform_(a=sqrt 5)]
//   batchnorm weight and running_var: 1; bias and running_mean: 0.
// Each tensor draws from its own 64-bit Mersenne Twister seeded with seed ^ FNV-1a(name), so a
// tensor's values do not depend on the order in which tensors are initialized (the compiler
// and a fused, reordered generated model agree), and the uniform draw uses an explicit 53-bit
// mantissa, not std::uniform_real_distribution, whose output differs between standard
// libraries. The distributions are PyTorch's; the random stream is not PyTorch's.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string_view>

namespace zoc {

enum class InitRule { kUniformFanIn, kOnes, kZeros };

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// Fills out[0..count) for tensor `name`. fan_in is used by kUniformFanIn only.
inline void init_tensor(uint64_t seed, std::string_view name, InitRule rule, int64_t fan_in,
                        float* out, int64_t count) {
  if (rule != InitRule::kUniformFanIn) {
    const float v = rule == InitRule::kOnes ? 1.0f : 0.0f;
    for (int64_t i = 0; i < count; ++i) out[i] = v;
    return;
  }
  std::mt19937_64 gen(seed ^ fnv1a64(name));
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in > 0 ? fan_in : 1));
  for (int64_t i = 0; i < count; ++i) {
    const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;  // [0, 1)
    out[i] = static_cast<float>((2.0 * u - 1.0) * bound);
  }
}

}  // namespace zoc
