// The kernels that resize images (issue 37's decoders): nearest and bilinear upsampling and the
// transposed convolution; constant padding (timm's TF-"same" convolutions, issue 36) and ECA's
// 1-D convolution along the features; the upsamplings' gradients.
// Upsampling reproduces PyTorch 1.13's CPU index arithmetic bit for bit
// (ATen/native/UpSample.h), because a source index one off is a wrong pixel, not a rounding
// difference (even where PyTorch's two kernels differ: UpsampleShape::direct says how): the scale
// is a float, 1 / scale_factor when the layer gave one and in / out otherwise; nearest floors i *
// scale in float; bilinear computes its source coordinate in double from the float scale and rounds
// its weights to float. The interpolation and the convolution accumulate in double and round once.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "compiler/backend/reference/grad_kernels.h"
#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {
namespace {

// compute_scales_value<float>: 1 / scale_factor if given, else in / out.
float scale_value(double scale, int64_t in, int64_t out) {
  return scale > 0 ? static_cast<float>(1.0 / scale)
                   : static_cast<float>(in) / static_cast<float>(out);
}

// nearest_neighbor_compute_source_index, as PyTorch's NCHW kernel calls it for every size; its
// channels-last kernel (`direct`) indexes out = in and out = 2 * in directly (nearest_idx).
int64_t nearest_index(int64_t i, int64_t in, int64_t out, double scale, bool direct) {
  if (direct && out == in) return i;
  if (direct && out == 2 * in) return i >> 1;
  const float s = scale_value(scale, in, out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * s)), in - 1);
}

// One axis of bilinear interpolation: the two source indices and their weights.
struct Tap {
  int64_t i0, i1;
  float l0, l1;
};

// area_pixel_compute_scale<float> and compute_source_index_and_lambda<float>.
Tap linear_tap(int64_t i, int64_t in, int64_t out, bool align_corners, double scale) {
  if (out == in) return {i, i, 1.0f, 0.0f};
  float ratio = 0.0f;
  if (align_corners) {
    ratio = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  } else {
    ratio = scale_value(scale, in, out);
  }
  const double r = ratio;
  double real =
      align_corners ? r * static_cast<double>(i) : r * (static_cast<double>(i) + 0.5) - 0.5;
  if (!align_corners && real < 0) real = 0;
  const auto i0 = static_cast<int64_t>(real);
  const float l1 = static_cast<float>(real - static_cast<double>(i0));
  return {i0, i0 + (i0 < in - 1 ? 1 : 0), 1.0f - l1, l1};
}

// Each output row's and column's source taps (nearest's: one index, weight 1).
struct AxisTaps {
  std::vector<Tap> rows, cols;
};
AxisTaps taps_of(const UpsampleShape& s, bool bilinear) {
  auto tap = [&](int64_t i, int64_t in, int64_t out, double scale) {
    if (bilinear) return linear_tap(i, in, out, s.align_corners, scale);
    const int64_t k = nearest_index(i, in, out, scale, s.direct);
    return Tap{k, k, 1.0f, 0.0f};
  };
  AxisTaps t;
  for (int64_t i = 0; i < s.oh; ++i) t.rows.push_back(tap(i, s.h, s.oh, s.scale_h));
  for (int64_t j = 0; j < s.ow; ++j) t.cols.push_back(tap(j, s.w, s.ow, s.scale_w));
  return t;
}

}  // namespace

void upsample_nearest(const float* x, float* y, const UpsampleShape& s) {
  const AxisTaps t = taps_of(s, false);
  for (int64_t p = 0; p < s.planes; ++p) {
    const float* in = x + p * s.h * s.w;
    float* out = y + p * s.oh * s.ow;
    for (int64_t i = 0; i < s.oh; ++i) {
      for (int64_t j = 0; j < s.ow; ++j) out[i * s.ow + j] = in[t.rows[i].i0 * s.w + t.cols[j].i0];
    }
  }
}

void upsample_bilinear(const float* x, float* y, const UpsampleShape& s) {
  const AxisTaps t = taps_of(s, true);
  for (int64_t p = 0; p < s.planes; ++p) {
    const float* in = x + p * s.h * s.w;
    float* out = y + p * s.oh * s.ow;
    for (int64_t i = 0; i < s.oh; ++i) {
      const Tap& r = t.rows[i];
      const float* top = in + r.i0 * s.w;
      const float* bottom = in + r.i1 * s.w;
      for (int64_t j = 0; j < s.ow; ++j) {
        const Tap& c = t.cols[j];
        const double a = double(c.l0) * top[c.i0] + double(c.l1) * top[c.i1];
        const double b = double(c.l0) * bottom[c.i0] + double(c.l1) * bottom[c.i1];
        out[i * s.ow + j] = static_cast<float>(double(r.l0) * a + double(r.l1) * b);
      }
    }
  }
}

// Scatters each dy to the source pixels the forward read, with its weights, summed in double.
void upsample_backward(const float* dy, float* dx, const UpsampleShape& s, bool bilinear) {
  const AxisTaps t = taps_of(s, bilinear);
  std::vector<double> acc(static_cast<size_t>(s.h * s.w));
  for (int64_t p = 0; p < s.planes; ++p) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const float* g = dy + p * s.oh * s.ow;
    for (int64_t i = 0; i < s.oh; ++i) {
      const Tap& r = t.rows[i];
      for (int64_t j = 0; j < s.ow; ++j) {
        const Tap& c = t.cols[j];
        const double v = g[i * s.ow + j];
        if (!bilinear) {
          acc[r.i0 * s.w + c.i0] += v;
          continue;
        }
        acc[r.i0 * s.w + c.i0] += double(r.l0) * double(c.l0) * v;
        acc[r.i0 * s.w + c.i1] += double(r.l0) * double(c.l1) * v;
        acc[r.i1 * s.w + c.i0] += double(r.l1) * double(c.l0) * v;
        acc[r.i1 * s.w + c.i1] += double(r.l1) * double(c.l1) * v;
      }
    }
    std::transform(acc.begin(), acc.end(), dx + p * s.h * s.w,
                   [](double v) { return static_cast<float>(v); });
  }
}

// Scatter form: each input pixel adds w * x to the output window it reaches, at
// oh = ih * stride - padding + r * dilation; the output starts as the bias.
void conv_transpose2d(const float* x, const float* w, const float* bias, float* y,
                      const Conv2dShape& s) {
  assert(s.groups > 0 && s.c_in % s.groups == 0 && s.c_out % s.groups == 0);
  const int64_t cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups;
  const int64_t taps = s.kh * s.kw, out_plane = s.out_h * s.out_w;
  std::vector<double> acc(static_cast<size_t>(s.c_out * out_plane));
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t co = 0; co < s.c_out; ++co) {
      std::fill_n(acc.begin() + co * out_plane, out_plane, bias ? double(bias[co]) : 0.0);
    }
    for (int64_t ci = 0; ci < s.c_in; ++ci) {
      const int64_t g = ci / cin_g;
      const float* xp = x + (b * s.c_in + ci) * s.h * s.w;
      for (int64_t col = 0; col < cout_g; ++col) {
        const float* wp = w + (ci * cout_g + col) * taps;
        double* yp = acc.data() + (g * cout_g + col) * out_plane;
        for (int64_t ih = 0; ih < s.h; ++ih) {
          for (int64_t r = 0; r < s.kh; ++r) {
            const int64_t oh = ih * s.stride_h - s.pad_h + r * s.dil_h;
            if (oh < 0 || oh >= s.out_h) continue;
            for (int64_t iw = 0; iw < s.w; ++iw) {
              const double v = xp[ih * s.w + iw];
              for (int64_t q = 0; q < s.kw; ++q) {
                const int64_t ow = iw * s.stride_w - s.pad_w + q * s.dil_w;
                if (ow >= 0 && ow < s.out_w) yp[oh * s.out_w + ow] += v * wp[r * s.kw + q];
              }
            }
          }
        }
      }
    }
    float* yb = y + b * s.c_out * out_plane;
    std::transform(acc.begin(), acc.end(), yb, [](double v) { return static_cast<float>(v); });
  }
}

void pad_constant(const float* x, float* y, const PadShape& s, float value) {
  const int64_t oh = s.top + s.h + s.bottom, ow = s.left + s.w + s.right;
  std::fill(y, y + s.planes * oh * ow, value);
  for (int64_t p = 0; p < s.planes; ++p) {
    for (int64_t i = 0; i < s.h; ++i) {
      const float* row = x + (p * s.h + i) * s.w;
      std::copy(row, row + s.w, y + (p * oh + s.top + i) * ow + s.left);
    }
  }
}

// Accumulates in double and rounds once, as the other convolutions here do.
void channel_conv1d(const float* x, const float* w, const float* bias, float* y,
                    const ChannelConvShape& s) {
  for (int64_t r = 0; r < s.n; ++r) {
    const float* row = x + r * s.f;
    for (int64_t o = 0; o < s.out; ++o) {
      double acc = bias ? bias[0] : 0.0;
      for (int64_t t = 0; t < s.k; ++t) {
        const int64_t i = o * s.stride - s.padding + t * s.dilation;
        if (i >= 0 && i < s.f) acc += static_cast<double>(w[t]) * row[i];
      }
      y[r * s.out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace zoc::ref
