// ECA attention (timm's EcaModule, issue 36) through TorchScript:
//     y = x.mean((2, 3)).view(n, 1, -1)      # pooled features [N, C] seen as [N, 1, C]
//     y = sigmoid(conv1d(y))                  # Conv1d(1, 1, k) along the channels
//     return x * y.view(n, -1, 1, 1).expand_as(x)
// The [N, 1, C] tensor is a view of the features (Val::View::kSequence) with no IR node;
// conv1d on it (aten::conv1d scripted, aten::_convolution with one-element lists traced) is a
// channel_conv1d, whose result is viewed the same way; the view back to [N, C, 1, 1] is a
// reshape. expand_as is the broadcast the mul it feeds already does, so it maps only where
// every use of its result is such a mul by the tensor it expands to. Every other use of these
// ops goes to dense_handler (aten_dense_ops.cpp, then aten_ops.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/torchscript/internal.h"

namespace zoc::torchscript::detail {
namespace {

using Kind = Val::Kind;
using View = Val::View;

bool next(OpContext& c) {
  Handler h = dense_handler(c.node()->kind());
  return h ? h(c) : c.fail("no handler");
}

// aten::view / aten::reshape: features [N, F] to [N, 1, F] (or -1 for F), and that view back
// to [N, F, 1, 1] (a reshape) or [N, F] (the features).
bool view(OpContext& c) {
  const Val& in = c.in(0);
  if (!in.is(Kind::kTensor) || (in.view != View::kNone && in.view != View::kSequence)) {
    return next(c);
  }
  const std::vector<int64_t>* d = c.dims(in.id);
  if (!d || d->size() != 1) return d ? next(c) : false;
  const Val& s = c.in(1);
  const size_t rank = s.is(Kind::kList)                           ? s.items.size()
                      : s.is(Kind::kConst) && s.value.isIntList() ? s.value.toIntList().size()
                                                                  : 0;
  const int64_t f = (*d)[0];
  if (in.view == View::kNone && rank != 3) return next(c);
  auto shape = c.ints(1, /*allow_batch=*/true);
  if (!shape) return false;
  const auto is = [&](size_t k, int64_t v) { return (*shape)[k] == v; };
  const bool batch = is(0, OpContext::kBatchDim);
  const Val v = in;
  if (v.view == View::kNone) {
    if (!batch || !is(1, 1) || !(is(2, -1) || is(2, f))) return next(c);
    c.result(v.viewed(View::kSequence));
    return true;
  }
  if (batch && rank == 2 && (is(1, -1) || is(1, f))) return c.result_tensor(v.id);
  if (batch && rank == 4 && (is(1, -1) || is(1, f)) && is(2, 1) && is(3, 1)) {
    ir::Attrs a;
    a.set("height", int_attr(1));
    a.set("width", int_attr(1));
    auto y = c.emit(ir::OpKind::Reshape, {v.id}, a);
    return y && c.result_tensor(*y);
  }
  return c.fail(
      fmt::format("a view of {} [N, 1, {}] as [{}]; zoc views it back as [N, {}, 1, 1] "
                  "or [N, {}]",
                  view_name(v.view), f, fmt::join(*shape, ", "), f, f));
}

// Conv1d(1, 1, k) on the [N, 1, F] view: x at input 0, the weight at 1, the bias at 2 and the
// one-element stride, padding, dilation lists and groups where the caller says.
bool sequence_conv(OpContext& c, size_t stride_at, size_t padding_at, size_t dilation_at,
                   size_t groups_at) {
  const Val x = c.in(0);
  const Val* w = c.param(1);
  if (!w) return false;
  auto stride = c.ints(stride_at);
  auto padding = stride ? c.ints(padding_at) : std::nullopt;
  auto dilation = padding ? c.ints(dilation_at) : std::nullopt;
  auto groups = dilation ? c.i(groups_at) : std::nullopt;
  if (!groups) return false;
  if (w->tensor.dim() != 3 || w->tensor.size(0) != 1 || w->tensor.size(1) != 1 || *groups != 1) {
    return c.fail(
        fmt::format("a conv1d with weight '{}' [{}] and groups {} on {}; zoc maps "
                    "Conv1d(1, 1, k) there (ECA attention)",
                    w->name, fmt::join(w->tensor.sizes(), ", "), *groups, view_name(x.view)));
  }
  if (stride->size() != 1 || padding->size() != 1 || dilation->size() != 1) {
    return c.fail("a conv1d whose stride, padding or dilation is not one number");
  }
  auto layer = c.layer_of(*w, "weight");
  auto bias = layer ? c.optional_param(2, *layer, "bias") : std::nullopt;
  if (!bias) return false;
  ir::Attrs a;
  a.set("kernel", int_attr(w->tensor.size(2)));
  a.set("stride", int_attr((*stride)[0]));
  a.set("padding", int_attr((*padding)[0]));
  a.set("dilation", int_attr((*dilation)[0]));
  a.set("bias", bool_attr(*bias));
  auto y = c.emit(ir::OpKind::ChannelConv1d, {x.id}, a, &*layer);
  return y && c.result_like(*y, x);
}

// aten::conv1d(input, weight, bias, stride, padding, dilation, groups)
bool conv1d(OpContext& c) {
  const Val* x = c.activation(0);
  if (!x) return false;
  if (x->view != View::kSequence) {
    return c.fail(
        fmt::format("conv1d of {}; zoc maps Conv1d(1, 1, k) on a [N, 1, C] view of "
                    "pooled features (ECA attention: x.mean((2, 3)).view(n, 1, -1))",
                    view_name(x->view)));
  }
  return sequence_conv(c, 3, 4, 5, 6);
}

// aten::_convolution / aten::convolution(input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups, ...): traced conv1d on the [N, 1, F] view.
bool convolution(OpContext& c) {
  const Val& x = c.in(0);
  if (!x.is(Kind::kTensor) || x.view != View::kSequence) return next(c);
  auto transposed = c.b(6);
  if (!transposed) return false;
  if (*transposed) return c.fail("a transposed conv1d");
  return sequence_conv(c, 3, 4, 5, 8);
}

// aten::expand_as(self, other): self as it is, where each use of the result is a mul by `other`
// (which broadcasts self to other's shape itself) and self broadcasts to other's shape.
bool expand_as(OpContext& c) {
  auto self = c.tensor(0);
  auto other = self ? c.tensor(1) : std::nullopt;
  const std::vector<int64_t>* a = other ? c.dims(*self) : nullptr;
  const std::vector<int64_t>* b = a ? c.dims(*other) : nullptr;
  if (!b) return false;
  bool broadcasts = a->size() == b->size();
  for (size_t k = 0; broadcasts && k < a->size(); ++k) {
    broadcasts = (*a)[k] == (*b)[k] || (*a)[k] == 1;
  }
  jit::Value* target = c.node()->input(1);
  bool into_mul = !c.node()->output()->uses().empty();
  for (const jit::Use& u : c.node()->output()->uses()) {
    const c10::Symbol k = u.user->kind();
    const bool mul = k == c10::aten::mul || k == c10::Symbol::fromQualString("aten::mul_");
    into_mul =
        into_mul && mul && u.user->inputs().size() == 2 && u.user->input(1 - u.offset) == target;
  }
  if (!broadcasts || !into_mul) {
    return c.fail(
        fmt::format("an expand_as of [N, {}] to [N, {}] {}; zoc maps expand_as only "
                    "into a mul by the tensor it expands to (the mul broadcasts)",
                    fmt::join(*a, ", "), fmt::join(*b, ", "),
                    broadcasts ? "read by something other than a mul by that tensor"
                               : "that is not a broadcast"));
  }
  Val v = c.in(0);  // its storage too: the expansion is a view of it
  c.result(std::move(v));
  return true;
}

}  // namespace

const std::map<std::string, Handler>& eca_handlers() {
  static const std::map<std::string, Handler> table = {
      {"aten::view", view},
      {"aten::reshape", view},
      {"aten::conv1d", conv1d},
      {"aten::_convolution", convolution},
      {"aten::convolution", convolution},
      {"aten::expand_as", expand_as},
  };
  return table;
}

}  // namespace zoc::torchscript::detail
