// A cache-blocked GEMM with double accumulators, because the oracle must be more accurate than
// PyTorch's float accumulation yet fast enough to run ResNet-50 in CI under sanitizers. The
// structure is the classic one (GotoBLAS): A is packed in blocks of kMc x kKc that stay in L2,
// each packed B panel slice (kKc x kGemmNr) stays in L1, and a kMr x kGemmNr register tile is
// accumulated by a micro-kernel written as plain fixed-size loops that GCC and Clang vectorize at
// -O2 without intrinsics, so the code stays portable and sanitizer-friendly.
#include "compiler/backend/reference/gemm.h"

#include <algorithm>
#include <cassert>

namespace zoc::ref::detail {
namespace {

constexpr int64_t kMr = 4;  // rows of the register tile; 4x4 doubles measured best with SSE2
constexpr int64_t kNr = kGemmNr;
constexpr int64_t kKc = 256;  // depth of a block: a B panel slice is 8 KiB, fits L1
constexpr int64_t kMc = 128;  // rows of an A block: 256 KiB of doubles, fits L2

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// c[kMr x kNr, row stride ldc] += ap (kc x kMr, k-major) * bp (kc x kNr, k-major). The unroll
// pragmas make GCC keep the tile in registers at -O2; without them it lives on the stack and the
// sanitizer build is 4x slower.
void micro_kernel(int64_t kc, const double* ap, const double* bp, double* c, int64_t ldc) {
  double acc[kMr][kNr] = {};
  for (int64_t kk = 0; kk < kc; ++kk) {
    const double* a = ap + kk * kMr;
    const double* b = bp + kk * kNr;
#pragma GCC unroll 8
    for (int64_t i = 0; i < kMr; ++i) {
#pragma GCC unroll 8
      for (int64_t j = 0; j < kNr; ++j) acc[i][j] += a[i] * b[j];
    }
  }
  for (int64_t i = 0; i < kMr; ++i) {
    for (int64_t j = 0; j < kNr; ++j) c[i * ldc + j] += acc[i][j];
  }
}

// Packs rows [m0, m0 + mc) and depths [k0, k0 + kc) of a (row-major, m x k) into kMr-row panels,
// k-major inside each panel, zero-filling rows past m so edge tiles need no special case.
void pack_a(const float* a, int64_t m, int64_t k, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
            double* ap) {
  for (int64_t p = 0; p < mc; p += kMr) {
    double* panel = ap + p * kc;
    for (int64_t i = 0; i < kMr; ++i) {
      const int64_t row = m0 + p + i;
      if (row < m) {
        const float* src = a + row * k + k0;
        for (int64_t kk = 0; kk < kc; ++kk) panel[kk * kMr + i] = src[kk];
      } else {
        for (int64_t kk = 0; kk < kc; ++kk) panel[kk * kMr + i] = 0.0;
      }
    }
  }
}

}  // namespace

void zero_b_padding(int64_t k, int64_t n, double* bp) {
  const int64_t tail = n % kNr;
  if (tail == 0) return;
  double* panel = bp + (n / kNr) * k * kNr;
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = tail; j < kNr; ++j) panel[kk * kNr + j] = 0.0;
  }
}

void pack_b(const float* src, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride,
            double* bp) {
  for (int64_t j0 = 0; j0 < n; j0 += kNr) {
    const int64_t nr = std::min(kNr, n - j0);
    double* panel = bp + j0 * k;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float* row = src + kk * row_stride + j0 * col_stride;
      for (int64_t j = 0; j < nr; ++j) panel[kk * kNr + j] = row[j * col_stride];
    }
  }
  zero_b_padding(k, n, bp);
}

void gemm(int64_t m, int64_t n, int64_t k, const float* a, const double* bp, const float* bias,
          float* c, int64_t c_row_stride, int64_t c_col_stride, GemmScratch& scratch) {
  assert(m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0) return;
  const int64_t n_pad = round_up(n, kNr);
  const int64_t mc_max = std::min(kMc, round_up(m, kMr));
  const size_t a_size = static_cast<size_t>(mc_max * std::min(kKc, k));
  const size_t c_size = static_cast<size_t>(mc_max * n_pad);
  if (scratch.a_packed.size() < a_size) scratch.a_packed.resize(a_size);
  if (scratch.c_acc.size() < c_size) scratch.c_acc.resize(c_size);
  double* ap = scratch.a_packed.data();
  double* acc = scratch.c_acc.data();

  for (int64_t m0 = 0; m0 < m; m0 += kMc) {
    const int64_t mc = std::min(kMc, m - m0);
    const int64_t mc_pad = round_up(mc, kMr);
    std::fill(acc, acc + mc_pad * n_pad, 0.0);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      const int64_t kc = std::min(kKc, k - k0);
      pack_a(a, m, k, m0, mc_pad, k0, kc, ap);
      for (int64_t j0 = 0; j0 < n_pad; j0 += kNr) {
        const double* b_slice = bp + j0 * k + k0 * kNr;
        for (int64_t i0 = 0; i0 < mc_pad; i0 += kMr) {
          micro_kernel(kc, ap + i0 * kc, b_slice, acc + i0 * n_pad + j0, n_pad);
        }
      }
    }
    for (int64_t i = 0; i < mc; ++i) {
      const double b = bias != nullptr ? static_cast<double>(bias[m0 + i]) : 0.0;
      float* c_row = c + (m0 + i) * c_row_stride;
      const double* acc_row = acc + i * n_pad;
      for (int64_t j = 0; j < n; ++j) {
        c_row[j * c_col_stride] = static_cast<float>(acc_row[j] + b);
      }
    }
  }
}

}  // namespace zoc::ref::detail
