// Packing weights into the layout and precision the generated code's library calls expect.
//
// The generated constructor calls one of these per layer: it fetches the layer's tensors by
// PyTorch name from a WeightSource, folds BatchNorm (zoc/weights/fold.h, in double), reorders conv
// filters to KRSC for NHWC models (zero-padding input channels where the model pads them),
// permutes the classifier's columns when the flattened features are in (h, w, c) order, and
// converts to fp32, fp16 or bf16 into a host staging buffer that is copied to the GPU once.
// Dependency-free C++17.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/core/fields.h"
#include "zoc/io/safetensors_util.h"
#include "zoc/weights/fold.h"
#include "zoc/weights/weight_source.h"

namespace zoc {

enum class DeviceDType { kF32, kF16, kBF16 };

inline size_t device_dtype_size(DeviceDType t) { return t == DeviceDType::kF32 ? 4 : 2; }

// dst[i] = convert(src[i]); dst need not be aligned.
inline void store_as(DeviceDType t, const float* src, int64_t count, uint8_t* dst) {
  for (int64_t i = 0; i < count; ++i) {
    if (t == DeviceDType::kF32) {
      std::memcpy(dst + 4 * i, &src[i], 4);
    } else {
      const uint16_t v =
          t == DeviceDType::kF16 ? st::float_to_half(src[i]) : st::float_to_bf16(src[i]);
      std::memcpy(dst + 2 * i, &v, 2);
    }
  }
}

// What pack_conv packs (its fields, in the convention of zoc/core/fields.h): the filter
// "<conv>.weight" [k, c, r, s] (c: input channels per group), its bias or nullptr, the folded
// BatchNorm layer ("<bn>") or nullptr and its eps; nhwc: store KRSC instead of KCRS, with the
// input channels padded to c_padded (extra ones get zero weights); weight_2d: the file holds
// [k, c] (a linear over channels as a 1x1 conv); taps_major: a depthwise filter (c = 1) for
// zoc's NHWC kernel (zoc/kernels/depthwise.cuh), [r, s, k], so that neighbouring channels' taps are
// adjacent.
#define ZOC_FIELDS_ConvPackSpec(X)              \
  X(const char*, weight, nullptr)               \
  X(const char*, bias, nullptr)                 \
  X(const char*, bn, nullptr)                   \
  X(double, eps, 0)                             \
  X(int64_t, k, 0)                              \
  X(int64_t, c, 0)                              \
  X(int64_t, r, 1)                              \
  X(int64_t, s, 1)                              \
  X(bool, nhwc, false)                          \
  X(int64_t, c_padded, 0)                       \
  X(DeviceDType, dtype, zoc::DeviceDType::kF32) \
  X(bool, weight_2d, false)                     \
  X(bool, taps_major, false)

struct ConvPackSpec {
  ZOC_FIELDS_ConvPackSpec(ZOC_DECLARE_FIELD)
};

// Writes the folded filter ([k, c_padded, r, s] or KRSC) to w_dst and the bias [k] to b_dst.
inline Status pack_conv(WeightSource& src, const ConvPackSpec& p, uint8_t* w_dst, uint8_t* b_dst) {
  const int64_t fan_in = p.c * p.r * p.s;
  if (p.weight_2d && (p.r != 1 || p.s != 1)) {
    return Error{std::string("pack_conv: ") + p.weight + ": a 2-D weight needs a 1x1 filter"};
  }
  const std::vector<int64_t> shape =
      p.weight_2d ? std::vector<int64_t>{p.k, p.c} : std::vector<int64_t>{p.k, p.c, p.r, p.s};
  auto w = src.get(p.weight, shape, InitRule::kUniformFanIn, fan_in);
  if (!w) return w.error();
  std::vector<float> bias;
  if (p.bias) {
    auto b = src.get(p.bias, {p.k}, InitRule::kUniformFanIn, fan_in);
    if (!b) return b.error();
    bias = std::move(*b);
  }
  std::vector<float> gamma, beta, mean, var;
  if (p.bn) {
    const std::string bn = p.bn;
    struct Part {
      const char* suffix;
      InitRule rule;
      std::vector<float>* out;
    } parts[] = {{".weight", InitRule::kOnes, &gamma},
                 {".bias", InitRule::kZeros, &beta},
                 {".running_mean", InitRule::kZeros, &mean},
                 {".running_var", InitRule::kOnes, &var}};
    for (const Part& part : parts) {
      auto v = src.get(bn + part.suffix, {p.k}, part.rule, 0);
      if (!v) return v.error();
      *part.out = std::move(*v);
    }
    src.ignore(bn + ".num_batches_tracked");
  }
  const int64_t per_k = p.c * p.r * p.s;
  std::vector<float> folded(w->size()), b(static_cast<size_t>(p.k));
  fold_conv_bias_bn(w->data(), p.bias ? bias.data() : nullptr, p.bn ? gamma.data() : nullptr,
                    p.bn ? beta.data() : nullptr, p.bn ? mean.data() : nullptr,
                    p.bn ? var.data() : nullptr, p.eps, p.k, per_k, folded.data(), b.data());
  std::vector<float> out;
  if (p.taps_major) {
    if (p.c != 1 || p.c_padded != 1) {
      return Error{std::string("pack_conv: ") + p.weight + ": a tap-major filter is depthwise"};
    }
    out.assign(folded.size(), 0.0f);
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t t = 0; t < p.r * p.s; ++t) out[t * p.k + k] = folded[k * p.r * p.s + t];
  } else if (p.nhwc) {
    // KCRS -> KRSC with c padded to c_padded.
    out.assign(static_cast<size_t>(p.k * p.r * p.s * p.c_padded), 0.0f);
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t c = 0; c < p.c; ++c)
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s)
            out[((k * p.r + r) * p.s + s) * p.c_padded + c] =
                folded[((k * p.c + c) * p.r + r) * p.s + s];
  } else {
    out = std::move(folded);
  }
  store_as(p.dtype, out.data(), static_cast<int64_t>(out.size()), w_dst);
  store_as(p.dtype, b.data(), p.k, b_dst);
  return Status::success();
}

// A transposed convolution (zoc/cudnn/transpose_layer.h): its filter [c_in, c_out / groups, r, s]
// through pack_conv as [k, c, r, s] (k = c_in, c = c_out / groups, no bias there: pack_conv's
// bias would have k entries), and its bias [c_out] to b_dst where p.bias names one. PyTorch's
// fan_in for both is c * r * s.
inline Status pack_conv_transpose(WeightSource& src, const ConvPackSpec& p, int64_t c_out,
                                  uint8_t* w_dst, uint8_t* b_dst) {
  ConvPackSpec filter = p;
  filter.bias = nullptr;
  std::vector<uint8_t> unused(static_cast<size_t>(p.k) * sizeof(float));
  ZOC_TRY(pack_conv(src, filter, w_dst, unused.data()));
  if (!p.bias) return Status::success();
  auto b = src.get(p.bias, {c_out}, InitRule::kUniformFanIn, p.c * p.r * p.s);
  if (!b) return b.error();
  store_as(p.dtype, b->data(), c_out, b_dst);
  return Status::success();
}

// What pack_linear packs: the weight [out, in] and its bias [out] or nullptr. When the input
// features come from flattening an NHWC tensor of (c, h, w) with h*w > 1 (hwc_c > 0), the
// device holds them in (h, w, c) order and the weight's columns are permuted to match.
#define ZOC_FIELDS_LinearPackSpec(X) \
  X(const char*, weight, nullptr)    \
  X(const char*, bias, nullptr)      \
  X(int64_t, out, 0)                 \
  X(int64_t, in, 0)                  \
  X(int64_t, hwc_c, 0)               \
  X(int64_t, hwc_h, 0)               \
  X(int64_t, hwc_w, 0)               \
  X(DeviceDType, dtype, zoc::DeviceDType::kF32)

struct LinearPackSpec {
  ZOC_FIELDS_LinearPackSpec(ZOC_DECLARE_FIELD)
};

// Writes W [out, in] (row-major, columns possibly permuted) and the bias [out]: the layer's,
// or zeros when it has none and b_dst is given (the linear runs as a convolution).
inline Status pack_linear(WeightSource& src, const LinearPackSpec& p, uint8_t* w_dst,
                          uint8_t* b_dst) {
  auto w = src.get(p.weight, {p.out, p.in}, InitRule::kUniformFanIn, p.in);
  if (!w) return w.error();
  if (p.hwc_c > 0) {
    if (p.hwc_c * p.hwc_h * p.hwc_w != p.in) {
      return Error{std::string("pack_linear: ") + p.weight + ": permutation does not match"};
    }
    std::vector<float> perm(w->size());
    for (int64_t o = 0; o < p.out; ++o)
      for (int64_t c = 0; c < p.hwc_c; ++c)
        for (int64_t h = 0; h < p.hwc_h; ++h)
          for (int64_t x = 0; x < p.hwc_w; ++x)
            perm[o * p.in + (h * p.hwc_w + x) * p.hwc_c + c] =
                (*w)[o * p.in + (c * p.hwc_h + h) * p.hwc_w + x];
    *w = std::move(perm);
  }
  store_as(p.dtype, w->data(), static_cast<int64_t>(w->size()), w_dst);
  if (p.bias) {
    auto b = src.get(p.bias, {p.out}, InitRule::kUniformFanIn, p.in);
    if (!b) return b.error();
    store_as(p.dtype, b->data(), p.out, b_dst);
  } else if (b_dst) {  // run as a convolution, which always adds a bias
    const std::vector<float> zeros(static_cast<size_t>(p.out), 0.0f);
    store_as(p.dtype, zeros.data(), p.out, b_dst);
  }
  return Status::success();
}

// A BatchNorm that could not be folded: scale, bias, mean, var as float32 (what cuDNN's
// batch-norm inference takes for every data type), in that order, each [c].
inline Status pack_batchnorm(WeightSource& src, const char* bn, int64_t c, uint8_t* dst) {
  const std::string name = bn;
  const std::pair<const char*, InitRule> parts[] = {{".weight", InitRule::kOnes},
                                                    {".bias", InitRule::kZeros},
                                                    {".running_mean", InitRule::kZeros},
                                                    {".running_var", InitRule::kOnes}};
  for (int i = 0; i < 4; ++i) {
    auto v = src.get(name + parts[i].first, {c}, parts[i].second, 0);
    if (!v) return v.error();
    store_as(DeviceDType::kF32, v->data(), c, dst + i * c * 4);
  }
  src.ignore(name + ".num_batches_tracked");
  return Status::success();
}

// A parameter as it is, converted to the model's element type (layer scale's gamma [C, 1, 1]).
inline Status pack_tensor(WeightSource& src, const char* name, const std::vector<int64_t>& shape,
                          InitRule rule, DeviceDType dtype, uint8_t* dst) {
  auto v = src.get(name, shape, rule, 0);
  if (!v) return v.error();
  store_as(dtype, v->data(), static_cast<int64_t>(v->size()), dst);
  return Status::success();
}

// Layer norm's weight then bias, each [c], as float32 (the kernel normalizes in float).
inline Status pack_layernorm(WeightSource& src, const char* weight, const char* bias, int64_t c,
                             uint8_t* dst) {
  auto w = src.get(weight, {c}, InitRule::kOnes, 0);
  if (!w) return w.error();
  auto b = src.get(bias, {c}, InitRule::kZeros, 0);
  if (!b) return b.error();
  store_as(DeviceDType::kF32, w->data(), c, dst);
  store_as(DeviceDType::kF32, b->data(), c, dst + c * 4);
  return Status::success();
}

}  // namespace zoc
