// Split attention over a radix (issue 36) through TorchScript, as timm writes it (scripted and
// traced alike):
//   ResNeSt's SplitAttn:       x = x.reshape(B, R, C, H, W); gap = x.sum(1).mean((2, 3), True)
//                              a = fc2(...(gap)); a = a.view(B, G, R, -1).transpose(1, 2)
//                              a = softmax(a, 1).reshape(B, -1).view(B, -1, 1, 1)
//                              out = (x * a.reshape(B, R, C, 1, 1)).sum(1)
//   SKNet's SelectiveKernel:   x = torch.stack([path(x) for path in paths], 1)
//                              a = softmax(fc_select(...(x.sum(1).mean((2, 3), True)))
//                                          .view(B, R, C, 1, 1), 1)
//                              out = (x * a).sum(1)
// [N, R, C, H, W] is the grouped view of the image [N, R*C, H, W] (Val::View::kGrouped, which
// ShuffleNet's channel shuffle introduced) and stack(dim=1) of R images is their concat seen so.
// The sum and the softmax over dim 1 of that view, and a mul of two such views, are channel
// arithmetic on the images (compiler/frontend/radix_lowering.h). The [N, G, R, K] tensor of
// rSoftMax is the image [G, R, K] itself (a reshape), and its transpose(1, 2) is radix_lowering's
// swap of channels and rows. Every other use of these ops goes to eca_handler (aten_eca_ops.cpp,
// then aten_dense_ops.cpp and aten_ops.cpp); sum and stack have no other handler, so anything
// else is refused here, naming what zoc maps.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/radix_lowering.h"
#include "compiler/frontend/torchscript/internal.h"
#include "compiler/ir/shapes.h"

namespace zoc::torchscript::detail {
namespace {

using Kind = Val::Kind;
using View = Val::View;

bool next(OpContext& c) {
  Handler h = eca_handler(c.node()->kind());
  return h ? h(c) : c.fail("no handler");
}

// The emitter radix_lowering.h's helpers call.
struct Emitter {
  OpContext& c;
  std::optional<ir::ValueId> operator()(ir::OpKind op, std::vector<ir::ValueId> in, ir::Attrs a) {
    return c.emit(op, std::move(in), std::move(a));
  }
};

bool grouped(const Val& v) { return v.is(Kind::kTensor) && v.view == View::kGrouped; }

bool result_grouped(OpContext& c, ir::ValueId v, int64_t groups) {
  c.result(Val::activation(v).viewed(View::kGrouped, groups));
  return true;
}

std::string shape_str(const std::vector<int64_t>& v) {
  std::vector<std::string> items;
  for (int64_t x : v) items.push_back(x == OpContext::kBatchDim ? "N" : std::to_string(x));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

// aten::sum(self, dim, keepdim, dtype) over dim 1 of the [N, R, C, H, W] view.
bool sum(OpContext& c) {
  const Val* x = c.activation(0);
  if (!x) return false;
  const Val v = *x;
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  if (c.num_inputs() != 4) return c.fail("a sum over every element; zoc sums over the radix");
  auto dims = c.ints(1);
  auto keep = dims ? c.b(2) : std::nullopt;
  if (!keep) return false;
  if (!c.none(3)) return c.fail("a sum with a dtype argument");
  const std::vector<int64_t> seen = viewed_dims(v, *d);
  const bool radix = grouped(v) && dims->size() == 1 && ((*dims)[0] == 1 || (*dims)[0] == -4);
  if (!radix || *keep) {
    return c.fail(fmt::format(
        "a sum over dims {}{} of {} [N, {}]; zoc sums over dim 1 of a "
        "[N, R, C, H, W] view of an image (split attention's radix)",
        shape_str(*dims), *keep ? " (keepdim)" : "", view_name(v.view), fmt::join(seen, ", ")));
  }
  Emitter emit{c};
  auto y = frontend::radix_sum(emit, v.id, *d, v.groups);
  return y && c.result_tensor(*y);
}

// aten::stack(tensors, dim=1) of R images of one shape: their concat, seen as [N, R, C, H, W].
bool stack(OpContext& c) {
  const Val& list = c.in(0);
  auto dim = c.i(1);
  if (!dim) return false;
  if (!list.is(Kind::kList) || list.items.empty()) return c.fail("a stack of no activations");
  std::vector<ir::ValueId> inputs;
  const std::vector<int64_t>* first = nullptr;
  for (const Val& item : list.items) {
    if (!item.is(Kind::kTensor) || item.view != View::kNone) {
      return c.fail("a stack of a list that holds more than plain activations");
    }
    const std::vector<int64_t>* d = c.dims(item.id);
    if (!d) return false;
    if (first && *d != *first) {
      return c.fail(fmt::format("a stack of [N, {}] and [N, {}]; zoc stacks images of one shape",
                                fmt::join(*first, ", "), fmt::join(*d, ", ")));
    }
    first = first ? first : d;
    inputs.push_back(item.id);
  }
  if (first->size() != 3 || (*dim != 1 && *dim != -4)) {
    return c.fail(
        fmt::format("a stack along dim {} of [N, {}]; zoc stacks images along dim 1 "
                    "(SKNet's paths: [N, R, C, H, W])",
                    *dim, fmt::join(*first, ", ")));
  }
  const auto r = static_cast<int64_t>(inputs.size());
  if (r == 1) return result_grouped(c, inputs[0], 1);
  auto y = c.emit(ir::OpKind::Concat, std::move(inputs), {});
  return y && result_grouped(c, *y, r);
}

// aten::softmax(self, dim, dtype) over dim 1 of the [N, R, C, H, W] view.
bool softmax(OpContext& c) {
  if (!grouped(c.in(0))) return next(c);
  const Val v = c.in(0);
  auto dim = c.i(1);
  const std::vector<int64_t>* d = dim ? c.dims(v.id) : nullptr;
  if (!d) return false;
  if (c.num_inputs() > 2 && !c.none(2)) return c.fail("a dtype argument");
  if (*dim != 1 && *dim != -4) {
    return c.fail(fmt::format("a softmax over dim {} of {}; zoc takes it over dim 1 (the radix)",
                              *dim, view_name(v.view)));
  }
  Emitter emit{c};
  auto y = frontend::radix_softmax(emit, v.id, *d, v.groups);
  return y && result_grouped(c, *y, v.groups);
}

// aten::mul of two [N, R, C, H, W] views (the branches by their attention [N, R, C, 1, 1]).
bool mul(OpContext& c) {
  const Val &a = c.in(0), &b = c.in(1);
  if (!grouped(a) && !grouped(b)) return next(c);
  if (!grouped(a) || !grouped(b) || a.groups != b.groups) {
    return c.fail(
        fmt::format("a mul of {} by {}; zoc multiplies two [N, R, C, H, W] views of "
                    "one R (split attention)",
                    view_name(a.view), view_name(b.view)));
  }
  const Val x = a, y = b;
  const std::vector<int64_t>* dx = c.dims(x.id);
  const std::vector<int64_t>* dy = dx ? c.dims(y.id) : nullptr;
  if (!dy) return false;
  const Expected<bool> swap = ir::mul_swaps_operands(*dx, *dy);
  if (!swap) return c.fail(swap.error().message);
  auto z = c.emit(ir::OpKind::Mul, *swap ? std::vector{y.id, x.id} : std::vector{x.id, y.id}, {});
  return z && result_grouped(c, *z, x.groups);
}

// `shape` (batch first) with its -1 resolved for `numel` elements per sample; nullopt if it
// does not fit.
std::optional<std::vector<int64_t>> resolved(std::vector<int64_t> shape, int64_t numel) {
  if (shape.empty() || shape[0] != OpContext::kBatchDim) return std::nullopt;
  int64_t known = 1, unknown = -1;
  for (size_t k = 1; k < shape.size(); ++k) {
    if (shape[k] == -1 && unknown < 0) {
      unknown = static_cast<int64_t>(k);
    } else if (shape[k] < 1) {
      return std::nullopt;
    } else {
      known *= shape[k];
    }
  }
  if (unknown > 0) shape[static_cast<size_t>(unknown)] = numel % known ? -1 : numel / known;
  int64_t count = 1;
  for (size_t k = 1; k < shape.size(); ++k) count *= shape[k];
  if (count != numel) return std::nullopt;
  return shape;
}

// aten::view / aten::reshape of an image to another 4-D shape [N, a, b, w] (rSoftMax's
// [N, G, R, -1]: the image [a, b, w]), or to a 5-D [N, g, c, h, w] whose h, w are not the
// image's (the attention [N, R*C, 1, 1] from a softmax over the 4-D tensor): the image
// [g*c, h, w] seen grouped. Everything else goes on.
bool view(OpContext& c) {
  const Val& in = c.in(0);
  const std::vector<int64_t>* d =
      in.is(Kind::kTensor) && in.view == View::kNone ? c.dims(in.id) : nullptr;
  const Val& s = c.in(1);
  const size_t rank = s.is(Kind::kList)                           ? s.items.size()
                      : s.is(Kind::kConst) && s.value.isIntList() ? s.value.toIntList().size()
                                                                  : 0;
  if (!d || d->size() != 3 || (rank != 4 && rank != 5)) return next(c);
  auto shape = c.ints(1, /*allow_batch=*/true);
  if (!shape) return false;
  const auto to = resolved(*shape, (*d)[0] * (*d)[1] * (*d)[2]);
  if (!to) return next(c);
  const Val v = in;
  Emitter emit{c};
  if (rank == 4) {
    const std::vector<int64_t> image(to->begin() + 1, to->end());
    if (image == *d) return c.result_tensor(v.id);
    auto y = frontend::reshape_image(emit, v.id, image[0], image[1], image[2]);
    return y && c.result_tensor(*y);
  }
  if ((*to)[3] == (*d)[1] && (*to)[4] == (*d)[2]) return next(c);  // the plain grouped view
  auto y = frontend::reshape_image(emit, v.id, (*to)[1] * (*to)[2], (*to)[3], (*to)[4]);
  return y && result_grouped(c, *y, (*to)[1]);
}

// aten::transpose(self, 1, 2) of a 4-D tensor the IR holds as an image (rSoftMax's
// [N, G, R, K] to [N, R, G, K]); the views' transposes go on.
bool transpose(OpContext& c) {
  const Val& in = c.in(0);
  if (!in.is(Kind::kTensor) || in.view != View::kNone || c.num_inputs() != 3) return next(c);
  const std::vector<int64_t>* d = c.dims(in.id);
  if (!d) return false;
  auto d0 = c.i(1);
  auto d1 = d0 ? c.i(2) : std::nullopt;
  if (!d1) return false;
  const auto norm = [](int64_t k) { return k < 0 ? k + 4 : k; };
  const int64_t lo = std::min(norm(*d0), norm(*d1)), hi = std::max(norm(*d0), norm(*d1));
  if (d->size() != 3 || lo != 1 || hi != 2) return next(c);
  Emitter emit{c};
  auto y = frontend::swap_channels_rows(emit, in.id, *d);
  return y && c.result_tensor(*y);
}

}  // namespace

const std::map<std::string, Handler>& radix_handlers() {
  static const std::map<std::string, Handler> table = {
      {"aten::sum", sum},         {"aten::stack", stack},
      {"aten::softmax", softmax}, {"aten::mul", mul},
      {"aten::mul_", mul},        {"aten::view", view},
      {"aten::reshape", view},    {"aten::transpose", transpose},
  };
  return table;
}

}  // namespace zoc::torchscript::detail
