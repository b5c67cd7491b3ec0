// Requantization to INT8 and an exact INT8 convolution, written once for the CPU side of INT8
// work: the oracle of tests/gpu/int8_probe.cu today, zoc's reference interpreter later.
//
// Why: an INT8 layer's output is v = acc * scale[k] + bias[k] (+ z), acc the exact INT32 sum,
// rounded to an integer and saturated to [-128, 127]. Which rounding cuDNN's epilogue applies
// when it writes INT8 is not documented, so the probe compares the GPU's bytes against every
// plausible rule (Rounding) and reports which one matches; the same functions then state the
// rule zoc follows. Dependency-free C++17, host only (no CUDA needed).
#pragma once

#include <cmath>
#include <cstdint>

namespace zoc {
namespace requant {

enum class Rounding {
  kNearestEven,  // IEEE default (rint, cvt.rni): 2.5 -> 2, -2.5 -> -2
  kNearestAway,  // std::round: 2.5 -> 3, -2.5 -> -3
  kHalfUp,       // floor(v + 0.5): 2.5 -> 3, -2.5 -> -2
  kTruncate,     // toward zero (a plain C cast): 2.7 -> 2, -2.7 -> -2
  kFloor,        // toward -inf: -2.1 -> -3
};
constexpr int kRoundingCount = 5;

inline const char* rounding_name(Rounding r) {
  switch (r) {
    case Rounding::kNearestEven:
      return "nearest-even";
    case Rounding::kNearestAway:
      return "nearest-away";
    case Rounding::kHalfUp:
      return "half-up";
    case Rounding::kTruncate:
      return "truncate";
    case Rounding::kFloor:
      return "floor";
  }
  return "?";
}

// v rounded by `r` and saturated to [-128, 127]; NaN gives 0 (as cvt.sat does).
inline int8_t to_int8(float v, Rounding r) {
  if (std::isnan(v)) return 0;
  float q = v;
  switch (r) {
    case Rounding::kNearestEven:
      q = std::nearbyint(v);
      break;  // default FE_TONEAREST mode
    case Rounding::kNearestAway:
      q = std::round(v);
      break;
    case Rounding::kHalfUp:
      q = std::floor(v + 0.5f);
      break;
    case Rounding::kTruncate:
      q = std::trunc(v);
      break;
    case Rounding::kFloor:
      q = std::floor(v);
      break;
  }
  if (q > 127.0f) return 127;
  if (q < -128.0f) return -128;
  return static_cast<int8_t>(q);
}

// The epilogue's value before rounding, in the graph's order: (acc * scale + bias) [+ z],
// [relu]; each step rounded to float (cuDNN may fuse the first two into one FMA: that differs
// only when v lies within an ulp of a rounding boundary).
inline float epilogue(int32_t acc, float scale, float bias, float z, bool relu) {
  float v = static_cast<float>(acc) * scale;
  v = v + bias;
  v = v + z;
  return relu && v < 0.0f ? 0.0f : v;
}

// Convolution dims: x [n, h, w, c] NHWC, w [k, r, s, c] KRSC, acc [n, p, q, k] NHWC.
struct ConvDims {
  int n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, p, q;
};

// acc = conv(x, w), cross-correlation, zero padding, exact in int32 (|acc| <= c*r*s*128*128 must
// stay below 2^31, true for c*r*s < 131072).
inline void conv_nhwc_int32(const ConvDims& d, const int8_t* x, const int8_t* w, int32_t* acc) {
  for (int ni = 0; ni < d.n; ++ni) {
    for (int pi = 0; pi < d.p; ++pi) {
      for (int qi = 0; qi < d.q; ++qi) {
        int32_t* out = acc + ((int64_t(ni) * d.p + pi) * d.q + qi) * d.k;
        for (int ki = 0; ki < d.k; ++ki) out[ki] = 0;
        for (int ri = 0; ri < d.r; ++ri) {
          const int hi = pi * d.stride_h - d.pad_h + ri;
          if (hi < 0 || hi >= d.h) continue;
          for (int si = 0; si < d.s; ++si) {
            const int wi = qi * d.stride_w - d.pad_w + si;
            if (wi < 0 || wi >= d.w) continue;
            const int8_t* xp = x + ((int64_t(ni) * d.h + hi) * d.w + wi) * d.c;
            for (int ki = 0; ki < d.k; ++ki) {
              const int8_t* wp = w + ((int64_t(ki) * d.r + ri) * d.s + si) * d.c;
              int32_t sum = 0;
              for (int ci = 0; ci < d.c; ++ci) sum += int32_t(xp[ci]) * int32_t(wp[ci]);
              out[ki] += sum;
            }
          }
        }
      }
    }
  }
}

}  // namespace requant
}  // namespace zoc
