// The two GEMM users, conv2d and linear. conv2d is im2col + GEMM: the only way to get a
// double-accumulating convolution fast enough for ResNet-50 in CI. Per image and group, the
// receptive fields are written straight into the GEMM's packed-B layout (so there is no separate
// im2col matrix to copy), the weights are the GEMM's A exactly as PyTorch stores them, and the
// output rows land in place in NCHW. A 1x1, stride-1, unpadded convolution is already a GEMM
// over the input, so it only packs. linear is the same GEMM with the batch as columns.
#include <algorithm>
#include <cassert>
#include <memory>

#include "compiler/backend/reference/gemm.h"
#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {
namespace {

// Writes the receptive fields of one image-group x[c, h, w] as packed B (k = (c * kh + r) * kw +
// q rows, out_h * out_w columns). Out-of-bounds taps are the zero padding.
void im2col_packed(const float* x, int64_t channels, const Conv2dShape& s, double* bp) {
  const int64_t k = channels * s.kh * s.kw;
  const int64_t n = s.out_h * s.out_w;
  detail::zero_b_padding(k, n, bp);
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = x + c * s.h * s.w;
    for (int64_t r = 0; r < s.kh; ++r) {
      for (int64_t q = 0; q < s.kw; ++q) {
        const int64_t kk = (c * s.kh + r) * s.kw + q;
        // Columns ow in [ow_lo, ow_hi) read inside the row; computing the range once keeps the
        // bounds test out of the inner loop.
        const int64_t col0 = q * s.dil_w - s.pad_w;
        int64_t ow_lo = 0;
        while (ow_lo < s.out_w && col0 + ow_lo * s.stride_w < 0) ++ow_lo;
        int64_t ow_hi = s.out_w;
        while (ow_hi > ow_lo && col0 + (ow_hi - 1) * s.stride_w >= s.w) --ow_hi;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
          const int64_t j0 = oh * s.out_w;
          if (ih < 0 || ih >= s.h) {
            for (int64_t ow = 0; ow < s.out_w; ++ow)
              bp[detail::packed_b_index(k, kk, j0 + ow)] = 0.0;
            continue;
          }
          // An offset, not a pointer: plane + col0 may point before the array.
          const int64_t row = ih * s.w + col0;
          for (int64_t ow = 0; ow < ow_lo; ++ow) bp[detail::packed_b_index(k, kk, j0 + ow)] = 0.0;
          for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
            bp[detail::packed_b_index(k, kk, j0 + ow)] = plane[row + ow * s.stride_w];
          }
          for (int64_t ow = ow_hi; ow < s.out_w; ++ow) {
            bp[detail::packed_b_index(k, kk, j0 + ow)] = 0.0;
          }
        }
      }
    }
  }
}

}  // namespace

void conv2d(const float* x, const float* w, const float* bias, float* y, const Conv2dShape& s) {
  assert(s.groups > 0 && s.c_in % s.groups == 0 && s.c_out % s.groups == 0);
  assert(s.kh > 0 && s.kw > 0 && s.stride_h > 0 && s.stride_w > 0 && s.dil_h > 0 && s.dil_w > 0);
  assert(s.pad_h >= 0 && s.pad_w >= 0 && s.out_h >= 0 && s.out_w >= 0);
  const int64_t cin_g = s.c_in / s.groups;
  const int64_t cout_g = s.c_out / s.groups;
  const int64_t k = cin_g * s.kh * s.kw;
  const int64_t n = s.out_h * s.out_w;
  const bool pointwise = s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 &&
                         s.pad_h == 0 && s.pad_w == 0 && s.out_h == s.h && s.out_w == s.w;

  // Uninitialized on purpose: every element is written by the packer.
  const auto bp = std::make_unique_for_overwrite<double[]>(
      static_cast<size_t>(std::max<int64_t>(detail::packed_b_size(k, n), 1)));
  detail::GemmScratch scratch;
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const float* xg = x + (b * s.c_in + g * cin_g) * s.h * s.w;
      if (pointwise) {
        detail::pack_b(xg, k, n, n, 1, bp.get());
      } else {
        im2col_packed(xg, cin_g, s, bp.get());
      }
      detail::gemm(cout_g, n, k, w + g * cout_g * k, bp.get(),
                   bias != nullptr ? bias + g * cout_g : nullptr,
                   y + (b * s.c_out + g * cout_g) * n, n, 1, scratch);
    }
  }
}

void linear(const float* x, const float* w, const float* bias, float* y, int64_t n, int64_t in,
            int64_t out) {
  assert(n >= 0 && in >= 0 && out >= 0);
  // y^T[out, n] = w[out, in] * x^T[in, n]: the weights are A as stored, x is read transposed
  // into packed B, and y is written transposed through the output strides.
  const auto bp = std::make_unique_for_overwrite<double[]>(
      static_cast<size_t>(std::max<int64_t>(detail::packed_b_size(in, n), 1)));
  detail::pack_b(x, in, n, 1, in, bp.get());
  detail::GemmScratch scratch;
  detail::gemm(out, n, in, w, bp.get(), bias, y, 1, out, scratch);
}

}  // namespace zoc::ref
