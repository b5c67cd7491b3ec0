// The one matrix multiply behind conv2d and linear, shared so that both get double accumulation
// and the same tested blocking. It is internal to the reference kernels: callers pack the right
// operand B themselves (conv's im2col writes the packed layout directly, which is why the layout
// is exposed here) and gemm packs A, the weights, block by block.
#pragma once

#include <cstdint>
#include <vector>

namespace zoc::ref::detail {

// B is stored in panels of kGemmNr columns, each panel k-major ([k][kGemmNr]), so that the
// micro-kernel reads one contiguous row of kGemmNr values per k. Four columns keep the padding
// waste low for the tiny spatial sizes (2x2, 4x4) of late ResNet stages.
inline constexpr int64_t kGemmNr = 4;

// Doubles needed for a packed k x n right operand (n rounded up to whole panels).
constexpr int64_t packed_b_size(int64_t k, int64_t n) {
  return (n + kGemmNr - 1) / kGemmNr * kGemmNr * k;
}

// Where element (kk, j) of a packed B with k rows lives.
constexpr int64_t packed_b_index(int64_t k, int64_t kk, int64_t j) {
  return ((j / kGemmNr) * k + kk) * kGemmNr + j % kGemmNr;
}

// Packs B[kk][j] = src[kk * row_stride + j * col_stride] (k x n) and zero-fills the padding
// columns of the last panel.
void pack_b(const float* src, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride,
            double* bp);

// Zero-fills the padding columns of the last panel; for producers (im2col) that write the
// valid columns themselves.
void zero_b_padding(int64_t k, int64_t n, double* bp);

// Buffers reused across the gemm calls of one kernel invocation (one per image and group).
struct GemmScratch {
  std::vector<double> a_packed;
  std::vector<double> c_acc;
};

// C[i * c_row_stride + j * c_col_stride] = float(sum_kk a[i * k + kk] * B[kk][j] + bias[i]) for
// i < m, j < n; a is row-major m x k, bias is [m] or null. The sum is in double, in an order
// fixed by k alone (ascending kk, in blocks), and rounded once, so results are reproducible.
void gemm(int64_t m, int64_t n, int64_t k, const float* a, const double* bp, const float* bias,
          float* c, int64_t c_row_stride, int64_t c_col_stride, GemmScratch& scratch);

}  // namespace zoc::ref::detail
