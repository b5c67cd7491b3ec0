// Shape rules of the ops that move pixels (see shapes.h): upsampling, transposed convolution,
// explicit padding, adaptive max pooling and reshape. They live apart from shapes.cpp (the
// classifier zoo's rules) because each one sizes its output from attributes a user wrote, with
// PyTorch's own formula for it, and each formula is checked here for overflow and for an empty
// result before any kernel sees it.
#include <cmath>

#include <fmt/format.h>

#include "compiler/ir/shape_rule.h"
#include "compiler/ir/shapes.h"
#include "compiler/support/checked_math.h"

namespace zoc::ir::detail {

// PyTorch's upsample_*2d: `size`, or out = (int64_t)(in * scale) with the scale kept for the
// kernel (recompute_scale_factor unset).
bool Rule::upsample() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const Attrs& a = n_.attrs;
  const bool sized = a.has("size");
  const bool scale_h = a.has("scale_h"), scale_w = a.has("scale_w");
  if (sized == (scale_h || scale_w)) {
    return fail("give the output `size` or both scale factors `scale_h` and `scale_w`, not " +
                std::string(sized ? "both" : "neither"));
  }
  if (scale_h != scale_w) {
    return fail(fmt::format("`{}` needs `{}` too (one factor per axis)",
                            scale_h ? "scale_h" : "scale_w", scale_h ? "scale_w" : "scale_h"));
  }
  const int64_t c = in(0).dims[0], h = in(0).dims[1], w = in(0).dims[2];
  if (sized) {
    const Pair s = a.pair("size");
    return set_output({c, s.h, s.w}, Layout::NCHW);
  }
  auto scaled = [&](int64_t size, double scale) {
    return std::floor(static_cast<double>(size) * scale);
  };
  const double oh = scaled(h, a.f("scale_h")), ow = scaled(w, a.f("scale_w"));
  if (oh < 1 || ow < 1) {
    return fail(fmt::format("output size {:.0f}x{:.0f} is empty: input {}x{} scaled by {:g}x{:g}",
                            oh, ow, h, w, a.f("scale_h"), a.f("scale_w")));
  }
  if (oh > static_cast<double>(kMaxDim) || ow > static_cast<double>(kMaxDim)) {
    return fail(fmt::format("output size {:.0f}x{:.0f} exceeds the limit {}", oh, ow, kMaxDim));
  }
  return set_output({c, static_cast<int64_t>(oh), static_cast<int64_t>(ow)}, Layout::NCHW);
}

namespace {

// out = (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1, or
// nullopt on overflow or an empty result.
std::optional<int64_t> transposed_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                                       int64_t op) {
  auto strided = checked_mul(in - 1, s);
  auto reach = checked_mul(d, k - 1);
  auto two_pad = checked_mul(2, p);
  if (!strided || !reach || !two_pad) return std::nullopt;
  auto sum = checked_add(*strided, *reach);
  if (!sum) return std::nullopt;
  auto grown = checked_add(*sum, op + 1);
  if (!grown) return std::nullopt;
  auto out = checked_sub(*grown, *two_pad);
  if (!out || *out < 1) return std::nullopt;
  return out;
}

}  // namespace

bool Rule::conv_transpose2d() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const Attrs& a = n_.attrs;
  const int64_t c = in(0).dims[0], h = in(0).dims[1], w = in(0).dims[2];
  const int64_t out_c = a.i("out_channels"), groups = a.i("groups");
  const Pair k = a.pair("kernel"), s = a.pair("stride"), p = a.pair("padding"),
             op = a.pair("output_padding"), dl = a.pair("dilation");
  bool ok = groups_divide(c, out_c, groups);
  // PyTorch's slow_conv_transpose2d_shape_check.
  if ((op.h >= s.h && op.h >= dl.h) || (op.w >= s.w && op.w >= dl.w)) {
    ok =
        fail(fmt::format("output_padding {}x{} must be smaller than the stride {}x{} or the "
                         "dilation {}x{}",
                         op.h, op.w, s.h, s.w, dl.h, dl.w));
  }
  if (!ok) return false;
  auto oh = transposed_size(h, k.h, s.h, p.h, dl.h, op.h);
  auto ow = transposed_size(w, k.w, s.w, p.w, dl.w, op.w);
  if (!oh || !ow) {
    return fail(fmt::format(
        "output size would be < 1 or overflow: input {}x{}, kernel {}x{}, stride {}x{}, "
        "padding {}x{}, dilation {}x{}",
        h, w, k.h, k.w, s.h, s.w, p.h, p.w, dl.h, dl.w));
  }
  if (!param("weight", {c, out_c / groups, k.h, k.w}, ParamRole::kWeight)) return false;
  declared_init("init");
  if (a.b("bias")) param("bias", {out_c}, ParamRole::kBias);
  return set_output({out_c, *oh, *ow}, Layout::NCHW);
}

// The same elements, NCHW order, as [channels, height, width]: a view in PyTorch, a copy here.
bool Rule::reshape() {
  const Attrs& a = n_.attrs;
  auto numel = checked_product_of(in(0).dims);
  auto plane = checked_mul(a.i("height"), a.i("width"));
  if (!numel || !plane) return fail("element count overflows");
  const int64_t c = a.has("channels") ? a.i("channels") : *numel / *plane;
  auto count = checked_mul(c, *plane);
  if (!count || *count != *numel || c < 1) {
    return fail(fmt::format(
        "{} elements per sample ({}) do not make {}", *numel, dims_str(in(0).dims),
        a.has("channels") ? dims_str({c, a.i("height"), a.i("width")})
                          : fmt::format("channels x {} x {}", a.i("height"), a.i("width"))));
  }
  return set_output({c, a.i("height"), a.i("width")}, Layout::NCHW);
}

// ECA's conv over the features: one input and one output channel, so the weight is [1, 1, k]
// as PyTorch's Conv1d(1, 1, k) stores it, and the result is features again.
bool Rule::channel_conv1d() {
  if (in(0).dims.size() != 1) {
    return fail(fmt::format("expects features [N, F], got {}", dims_str(in(0).dims)));
  }
  const Attrs& a = n_.attrs;
  const int64_t f = in(0).dims[0], k = a.i("kernel");
  auto out = conv_output_size(f, k, a.i("stride"), a.i("padding"), a.i("dilation"));
  if (!out) {
    return fail(
        fmt::format("output size would be < 1: {} features, kernel {}, padding {}, "
                    "dilation {}",
                    f, k, a.i("padding"), a.i("dilation")));
  }
  if (!param("weight", {1, 1, k}, ParamRole::kWeight)) return false;
  if (a.b("bias")) param("bias", {1}, ParamRole::kBias);
  return set_output({*out}, Layout::NC);
}

}  // namespace zoc::ir::detail
