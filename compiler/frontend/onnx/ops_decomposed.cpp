// The op table, part four: ops that torch.onnx.export writes as several nodes, followed step by
// step (Partial in internal.h) until the node that completes them emits one IR node:
//   - GELU (torch 1.13 writes no Gelu op): x * (1 + erf(x / sqrt(2))) * 0.5, as Div, Erf, Add,
//     Mul, Mul, each with the operands in either order;
//   - LayerNormalization below opset 17, which has no such op: ReduceMean(x), Sub, Pow(2),
//     ReduceMean, Add(eps), Sqrt, Div, Mul(weight), Add(bias), over the last axis of a
//     channels-last view (ConvNeXt), each step checked to read the same x;
//   - a Pad with zeros, then an AveragePool (PyTorch's count_include_pad=True padding); any
//     other reader reads the pad node it stands for;
//   - the dynamo exporter's as_strided of a tensor onto its own shape and strides: a Reshape of
//     it with its fixed batch to [-1], then a Gather of every element in order, which is the
//     tensor itself (timm's ConvNeXt head; any other order or shape is refused).
// A step is no tensor zoc computes: any use of it other than its next step is unsupported, with
// the step and what zoc expected named, so a model that merely resembles a pattern is refused
// rather than computed wrongly. The first steps come from the Div here (GELU), ReduceMean and
// Pad (ops_zoo.cpp); every node with a Partial input comes to decomposed_step (translate.cpp).
#include <cmath>

#include <fmt/format.h>

#include "compiler/frontend/onnx/internal.h"

namespace zoc::onnx::detail {

using Kind = Val::Kind;
using Step = Partial::Step;

namespace {

// What zoc follows a step into, for messages.
const char* next_of(Step s) {
  switch (s) {
    case Step::kGeluScaled:
      return "Erf";
    case Step::kGeluErf:
      return "an Add of 1";
    case Step::kGeluErfPlus1:
      return "a Mul by x";
    case Step::kGeluUnhalved:
      return "a Mul by 0.5";
    case Step::kNormMean:
      return "a Sub from x";
    case Step::kNormCentered:
      return "a Pow by 2 and a Div";
    case Step::kNormSquared:
      return "a ReduceMean over the last axis";
    case Step::kNormVariance:
      return "an Add of epsilon";
    case Step::kNormVarEps:
      return "Sqrt";
    case Step::kNormStd:
      return "the Div of x - mean by it";
    case Step::kNormalized:
      return "a Mul by the weight";
    case Step::kNormScaled:
      return "an Add of the bias";
    case Step::kPadded:
      return "an AveragePool, as its padding";
    case Step::kFlattened:
      return "a Gather of every element in order, back to the tensor's shape (as_strided's "
             "identity)";
  }
  return "its next step";
}

const Partial* step_in(const NodeContext& c, size_t i) {
  const Val& v = c.in(i);
  return v.is(Kind::kPartial) ? v.partial.get() : nullptr;
}

// Input i as a one-element floating constant.
std::optional<float> constant_number(const NodeContext& c, size_t i) {
  const Val& v = c.in(i);
  if (!v.is(Kind::kConstant) || !v.constant->floating || v.constant->numel() != 1)
    return std::nullopt;
  return v.constant->f[0];
}

bool same_tensor(const Val& a, const Val& b) {
  return a.is(Kind::kActivation) && b.is(Kind::kActivation) && a.id == b.id && a.view == b.view;
}

bool next(NodeContext& c, const Partial& from, Step step) {
  Partial p = from;
  p.step = step;
  return c.result_partial(std::move(p));
}

// Why the node cannot take its Partial input(s).
bool refuse(NodeContext& c) {
  for (size_t i = 0; i < static_cast<size_t>(c.node().input_size()); ++i) {
    if (const Partial* p = step_in(c, i)) {
      return c.fail(fmt::format("input {} ('{}') is {}; zoc follows it only into {}", i + 1,
                                shown_text(c.in(i).name), step_name(p->step), next_of(p->step)));
    }
  }
  return c.fail("an input is a step of a decomposed op");
}

// Whether a ReduceMean reduces the last axis of (the view of) x, keeping it.
// Gather(flat, indices) of a tensor flattened by Reshape to [-1]: the tensor itself where the
// indices are 0, 1, 2, ... in the tensor's own shape [N, ...].
bool gather_in_order(NodeContext& c, const Partial& p) {
  int64_t axis = 0;
  const Val* idx = c.attr("axis", axis) ? c.constant(1, "indices") : nullptr;
  const std::vector<int64_t>* d = idx ? c.dims(p.source.id) : nullptr;
  if (!d) return false;
  std::vector<int64_t> shape = viewed_dims(p.source, *d);
  shape.insert(shape.begin(), c.declared_batch().value_or(0));
  const Constant& k = *idx->constant;
  bool in_order = !k.floating && k.dims == shape && axis == 0;
  for (size_t e = 0; in_order && e < k.i.size(); ++e) in_order = k.i[e] == static_cast<int64_t>(e);
  if (!in_order) {
    return c.fail(
        fmt::format("a Gather of {} other than every element in order into the tensor's "
                    "own shape (as_strided onto its own strides), which zoc follows",
                    step_name(p.step)));
  }
  c.result(p.source);
  return true;
}

bool over_last_axis(NodeContext& c, const Val& x) {
  int64_t keepdims = 1;
  const std::vector<int64_t>* d = c.dims(x.id);
  if (!d || !c.attr("keepdims", keepdims)) return false;
  const auto reduced = reduce_axes(c);
  if (!reduced) return false;
  const std::vector<int64_t>& axes = reduced->axes;
  const int64_t rank = static_cast<int64_t>(viewed_dims(x, *d).size()) + 1;
  return keepdims == 1 && axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// Add(a, b) with a step: GELU's 1 + erf, the variance's + eps, the scaled x's + bias.
bool add_step(NodeContext& c, size_t pi) {
  const Partial& p = *step_in(c, pi);
  const size_t other = 1 - pi;
  const auto number = constant_number(c, other);
  if (p.step == Step::kGeluErf && number == 1.0f) return next(c, p, Step::kGeluErfPlus1);
  if (p.step == Step::kNormVariance && number && *number > 0) {
    Partial q = p;
    q.eps = decimal_of_float(*number);
    return next(c, q, Step::kNormVarEps);
  }
  if (p.step == Step::kNormScaled && c.in(other).is(Kind::kConstant)) {
    const Val* bias = c.constant(other, "bias");
    return bias && emit_layer_norm(c, p.source, -1, p.eps,
                                   {"weight", p.weight, p.weight_name, false}, *bias);
  }
  return refuse(c);
}

// Mul(a, b) with a step: x * (1 + erf), then * 0.5 (GELU); the normalized x * weight.
bool mul_step(NodeContext& c, size_t pi) {
  const Partial& p = *step_in(c, pi);
  const size_t other = 1 - pi;
  if (p.step == Step::kGeluErfPlus1 && same_tensor(c.in(other), p.source)) {
    return next(c, p, Step::kGeluUnhalved);
  }
  if (p.step == Step::kGeluUnhalved && constant_number(c, other) == 0.5f) {
    auto y = c.emit(ir::OpKind::Gelu, {p.source.id}, {});
    return y && c.result_like(*y, p.source);
  }
  if (p.step == Step::kNormalized && c.in(other).is(Kind::kConstant)) {
    const Val* w = c.constant(other, "weight");
    if (!w) return false;
    Partial q = p;
    q.weight = w->constant;
    q.weight_name = w->name;
    return next(c, q, Step::kNormScaled);
  }
  return refuse(c);
}

// x / sqrt(2), the first step of GELU's erf form; any other Div of an activation is unsupported
// (Divs of constants are computed now, ops_shape.cpp).
bool div(NodeContext& c) {
  const Val* x = c.viewed(0);
  if (!x) return false;
  const Val v = *x;
  if (constant_number(c, 1) != static_cast<float>(std::sqrt(2.0))) {
    return c.fail("a division of an activation other than GELU's x / sqrt(2)");
  }
  return c.result_partial(Partial{Step::kGeluScaled, v});
}

// Erf, Sub, Pow and Sqrt of an activation: zoc maps them only as steps of the forms above.
bool only_as_step(NodeContext& c) {
  return c.fail(
      fmt::format("{} of an activation outside GELU's erf form and a decomposed "
                  "LayerNormalization, which zoc follows",
                  shown_text(c.node().op_type())));
}

const OpEntry kDecomposedOps[] = {
    {"Div", div},          {"Erf", only_as_step},  {"Sub", only_as_step},
    {"Pow", only_as_step}, {"Sqrt", only_as_step},
};

}  // namespace

std::span<const OpEntry> decomposed_ops() { return kDecomposedOps; }

bool start_layer_norm(NodeContext& c, const Val& x) {
  return c.result_partial(Partial{Step::kNormMean, x});
}

namespace {

// A Pad with zeros read by a node other than an AveragePool: the pad node it stands for, for
// this reader and the later ones, then the node's own handler if no other input is a step.
bool padded_into(NodeContext& c) {
  for (size_t i = 0; i < static_cast<size_t>(c.node().input_size()); ++i) {
    const Partial* p = step_in(c, i);
    if (!p || p->step != Step::kPadded) continue;
    const ir::Pair pad = p->pad;
    auto y = emit_pad(c, p->source.id, {pad.h, pad.w, pad.h, pad.w}, 0.0);
    if (!y) return false;
    c.rebind_input(i, Val::activation(*y));
  }
  for (size_t i = 0; i < static_cast<size_t>(c.node().input_size()); ++i) {
    if (step_in(c, i)) return decomposed_step(c);
  }
  return find_handler(c.node().op_type())(c);
}

}  // namespace

bool decomposed_step(NodeContext& c) {
  const std::string& op = c.node().op_type();
  if (op != "AveragePool" && op != "Identity") {
    for (size_t i = 0; i < static_cast<size_t>(c.node().input_size()); ++i) {
      if (step_in(c, i) && step_in(c, i)->step == Step::kPadded) return padded_into(c);
    }
  }
  const Partial* a = step_in(c, 0);
  const Partial* b = c.node().input_size() > 1 ? step_in(c, 1) : nullptr;
  if (op == "Identity") {
    c.result(c.in(0));
    return true;
  }
  if (!a && !b) return refuse(c);  // a step read as a third input or later: no form does that
  if (a && b) {  // x - mean and (x - mean) / std read two steps of one LayerNormalization
    if (op == "Div" && a->step == Step::kNormCentered && b->step == Step::kNormStd &&
        same_tensor(a->source, b->source)) {
      Partial q = *a;
      q.eps = b->eps;
      return next(c, q, Step::kNormalized);
    }
    return refuse(c);
  }
  const Partial& p = a ? *a : *b;
  const size_t pi = a ? 0 : 1;
  if (op == "Add") return add_step(c, pi);
  if (op == "Mul") return mul_step(c, pi);
  if (op == "Erf" && p.step == Step::kGeluScaled) return next(c, p, Step::kGeluErf);
  if (op == "Sub" && pi == 1 && p.step == Step::kNormMean && same_tensor(c.in(0), p.source)) {
    return next(c, p, Step::kNormCentered);
  }
  if (op == "Pow" && pi == 0 && p.step == Step::kNormCentered && constant_number(c, 1) == 2.0f) {
    return next(c, p, Step::kNormSquared);
  }
  if (op == "ReduceMean" && p.step == Step::kNormSquared && over_last_axis(c, p.source)) {
    return next(c, p, Step::kNormVariance);
  }
  if (op == "Sqrt" && p.step == Step::kNormVarEps) return next(c, p, Step::kNormStd);
  if (op == "AveragePool" && p.step == Step::kPadded)
    return average_pool_padded(c, p.source, p.pad);
  if (op == "Gather" && pi == 0 && p.step == Step::kFlattened) return gather_in_order(c, p);
  return refuse(c);
}

}  // namespace zoc::onnx::detail
