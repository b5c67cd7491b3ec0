// The elementwise kernels of issue 36 (kernels.h): the four binary ops with NumPy broadcasting,
// the forms hand-written models use (x - mean, x / c, x * gamma, a spatial attention map times
// an image). Each result is one float operation on two floats, already correctly rounded, so the
// interpreter matches PyTorch's CPU kernels exactly rather than within a tolerance.
#include <cassert>

#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {
namespace {

float apply(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
  }
  return 0;
}

// Element strides of an operand for each output dim: 0 where it broadcasts (its dim is 1).
std::vector<int64_t> strides_of(const Operand& x, const std::vector<int64_t>& dims) {
  assert(x.dims.size() == dims.size());
  std::vector<int64_t> strides(dims.size());
  int64_t step = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    strides[k] = x.dims[k] == 1 ? 0 : step;
    step *= x.dims[k];
  }
  return strides;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

void binary(BinaryOp op, const Operand& a, const Operand& b, float* y, int64_t n,
            const std::vector<int64_t>& dims) {
  const std::vector<int64_t> sa = strides_of(a, dims), sb = strides_of(b, dims);
  const int64_t per_sample = numel(dims);
  const int64_t batch_a = a.batched ? numel(a.dims) : 0, batch_b = b.batched ? numel(b.dims) : 0;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t s = 0; s < n; ++s) {
    const float* pa = a.data + s * batch_a;
    const float* pb = b.data + s * batch_b;
    float* py = y + s * per_sample;
    int64_t ia = 0, ib = 0;
    for (int64_t i = 0; i < per_sample; ++i) {
      py[i] = apply(op, pa[ia], pb[ib]);
      // The next index, last dim fastest; the operands' offsets follow it.
      for (size_t k = dims.size(); k-- > 0;) {
        ia += sa[k];
        ib += sb[k];
        if (++index[k] < dims[k]) break;
        ia -= sa[k] * dims[k];
        ib -= sb[k] * dims[k];
        index[k] = 0;
      }
    }
  }
}

}  // namespace zoc::ref
