// Max, average, adaptive and global average pooling with PyTorch's exact edge rules, which is what
// the oracle exists for: ceil_mode windows that hang over the padded input, padding that acts as
// -inf for max, and avg_pool2d's two divisors (window clipped to the padded input when
// count_include_pad, to the real input otherwise). Sums are in double and rounded once; pooling
// is memory-bound, so plain loops are fast enough. The backward passes (grad_kernels.h) are
// here too, so that they walk the windows exactly as the forward passes do.
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "compiler/backend/reference/grad_kernels.h"
#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {
namespace {

// The taps of one window along one axis: how many fall in the padded input [-pad, in + pad)
// (avg_pool's count_include_pad divisor) and how many in the input itself.
struct TapCount {
  int64_t padded = 0;
  int64_t valid = 0;
};

TapCount count_taps(int64_t start, int64_t k, int64_t dil, int64_t in, int64_t pad) {
  TapCount t;
  for (int64_t r = 0; r < k; ++r) {
    const int64_t i = start + r * dil;
    if (i >= -pad && i < in + pad) ++t.padded;
    if (i >= 0 && i < in) ++t.valid;
  }
  return t;
}

// Calls f(offset) for every tap of the window whose top-left corner is (h0, w0) that falls
// inside the h x w input, rows then columns: the order every kernel here walks a window in.
template <class F>
void for_each_tap(const Pool2dShape& s, int64_t h0, int64_t w0, F&& f) {
  for (int64_t r = 0; r < s.kh; ++r) {
    const int64_t ih = h0 + r * s.dil_h;
    if (ih < 0 || ih >= s.h) continue;
    for (int64_t q = 0; q < s.kw; ++q) {
      const int64_t iw = w0 + q * s.dil_w;
      if (iw < 0 || iw >= s.w) continue;
      f(ih * s.w + iw);
    }
  }
}

void check_shape(const Pool2dShape& s) {
  assert(s.kh > 0 && s.kw > 0 && s.stride_h > 0 && s.stride_w > 0 && s.dil_h > 0 && s.dil_w > 0);
  assert(s.pad_h >= 0 && s.pad_w >= 0 && s.out_h >= 0 && s.out_w >= 0);
  (void)s;
}

// Adaptive pooling's bin i of `out` along an axis of `in`: [floor(i in / out),
// ceil((i + 1) in / out)), PyTorch's start_index and end_index.
struct Bin {
  int64_t start, end;
};

Bin adaptive_bin(int64_t i, int64_t in, int64_t out) {
  return {i * in / out, ((i + 1) * in + out - 1) / out};
}

}  // namespace

void maxpool2d(const float* x, float* y, const Pool2dShape& s) {
  check_shape(s);
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float* plane = x + p * s.h * s.w;
    float* out = y + p * s.out_h * s.out_w;
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const int64_t h0 = oh * s.stride_h - s.pad_h;
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const int64_t w0 = ow * s.stride_w - s.pad_w;
        float m = -std::numeric_limits<float>::infinity();
        for_each_tap(s, h0, w0, [&](int64_t at) {
          const float v = plane[at];
          // Written as PyTorch's CPU kernel so that a NaN anywhere in the window wins.
          if (v > m || std::isnan(v)) m = v;
        });
        out[oh * s.out_w + ow] = m;
      }
    }
  }
}

void avgpool2d(const float* x, float* y, const Pool2dShape& s) {
  check_shape(s);
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float* plane = x + p * s.h * s.w;
    float* out = y + p * s.out_h * s.out_w;
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const int64_t h0 = oh * s.stride_h - s.pad_h;
      const TapCount rows = count_taps(h0, s.kh, s.dil_h, s.h, s.pad_h);
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const int64_t w0 = ow * s.stride_w - s.pad_w;
        const TapCount cols = count_taps(w0, s.kw, s.dil_w, s.w, s.pad_w);
        const int64_t valid = rows.valid * cols.valid;
        if (valid == 0) {  // PyTorch writes 0 for a window entirely outside the input
          out[oh * s.out_w + ow] = 0.0f;
          continue;
        }
        double sum = 0.0;
        for_each_tap(s, h0, w0, [&](int64_t at) { sum += plane[at]; });
        const int64_t divisor = s.count_include_pad ? rows.padded * cols.padded : valid;
        out[oh * s.out_w + ow] = static_cast<float>(sum / static_cast<double>(divisor));
      }
    }
  }
}

void global_avgpool(const float* x, float* y, int64_t n, int64_t c, int64_t hw) {
  assert(n >= 0 && c >= 0 && hw > 0);
  for (int64_t p = 0; p < n * c; ++p) {
    const float* plane = x + p * hw;
    double sum = 0.0;
    for (int64_t i = 0; i < hw; ++i) sum += plane[i];
    y[p] = static_cast<float>(sum / static_cast<double>(hw));
  }
}

void adaptive_avgpool2d(const float* x, float* y, const AdaptivePoolShape& s) {
  assert(s.h > 0 && s.w > 0 && s.oh > 0 && s.ow > 0);
  for (int64_t p = 0; p < s.planes; ++p) {
    const float* plane = x + p * s.h * s.w;
    for (int64_t i = 0; i < s.oh; ++i) {
      const Bin rows = adaptive_bin(i, s.h, s.oh);
      for (int64_t j = 0; j < s.ow; ++j) {
        const Bin cols = adaptive_bin(j, s.w, s.ow);
        double sum = 0.0;
        for (int64_t r = rows.start; r < rows.end; ++r) {
          for (int64_t q = cols.start; q < cols.end; ++q) sum += plane[r * s.w + q];
        }
        const auto taps = static_cast<double>((rows.end - rows.start) * (cols.end - cols.start));
        y[(p * s.oh + i) * s.ow + j] = static_cast<float>(sum / taps);
      }
    }
  }
}

void maxpool2d_backward(const float* x, const float* dy, float* dx, const Pool2dShape& s) {
  check_shape(s);
  std::vector<double> acc(static_cast<size_t>(s.n * s.c * s.h * s.w), 0.0);
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float* plane = x + p * s.h * s.w;
    const float* grad = dy + p * s.out_h * s.out_w;
    double* out = acc.data() + p * s.h * s.w;
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const int64_t h0 = oh * s.stride_h - s.pad_h;
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const int64_t w0 = ow * s.stride_w - s.pad_w;
        float m = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for_each_tap(s, h0, w0, [&](int64_t i) {
          const float v = plane[i];
          if (at < 0) at = i;            // PyTorch starts from the window's first tap
          if (v > m || std::isnan(v)) {  // the forward's test: the first max, the last NaN
            m = v;
            at = i;
          }
        });
        if (at >= 0) out[at] += grad[oh * s.out_w + ow];
      }
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<float>(acc[i]);
}

void avgpool2d_backward(const float* dy, float* dx, const Pool2dShape& s) {
  check_shape(s);
  std::vector<double> acc(static_cast<size_t>(s.n * s.c * s.h * s.w), 0.0);
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float* grad = dy + p * s.out_h * s.out_w;
    double* out = acc.data() + p * s.h * s.w;
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const int64_t h0 = oh * s.stride_h - s.pad_h;
      const TapCount rows = count_taps(h0, s.kh, s.dil_h, s.h, s.pad_h);
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const int64_t w0 = ow * s.stride_w - s.pad_w;
        const TapCount cols = count_taps(w0, s.kw, s.dil_w, s.w, s.pad_w);
        const int64_t valid = rows.valid * cols.valid;
        if (valid == 0) continue;  // its output was a constant 0
        const int64_t divisor = s.count_include_pad ? rows.padded * cols.padded : valid;
        const double share = grad[oh * s.out_w + ow] / static_cast<double>(divisor);
        for_each_tap(s, h0, w0, [&](int64_t at) { out[at] += share; });
      }
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<float>(acc[i]);
}

void adaptive_avgpool2d_backward(const float* dy, float* dx, const AdaptivePoolShape& s) {
  std::vector<double> acc(static_cast<size_t>(s.planes * s.h * s.w), 0.0);
  for (int64_t p = 0; p < s.planes; ++p) {
    double* plane = acc.data() + p * s.h * s.w;
    for (int64_t i = 0; i < s.oh; ++i) {
      const Bin rows = adaptive_bin(i, s.h, s.oh);
      for (int64_t j = 0; j < s.ow; ++j) {
        const Bin cols = adaptive_bin(j, s.w, s.ow);
        const auto taps = static_cast<double>((rows.end - rows.start) * (cols.end - cols.start));
        const double share = dy[(p * s.oh + i) * s.ow + j] / taps;
        for (int64_t r = rows.start; r < rows.end; ++r) {
          for (int64_t q = cols.start; q < cols.end; ++q) plane[r * s.w + q] += share;
        }
      }
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<float>(acc[i]);
}

}  // namespace zoc::ref
