// Shape arithmetic, computed while compiling. torch.onnx.export records every x.size() a model
// calls as Shape, Gather, Unsqueeze, Concat and integer arithmetic on the result (ShuffleNetV2's
// channel shuffle and chunk compute their reshape targets and slice bounds so), and keeps them
// as nodes when the batch axis is dynamic. zoc knows every size but the batch's when it
// compiles, so these nodes become constants here; an element that is the batch size is marked
// (Constant::batch) and may be moved around (Gather, Unsqueeze, Squeeze, Concat, Cast) and end
// up as a Reshape's target, but not be computed with, since zoc keeps the batch dynamic.
//
// Any node whose inputs are all constants comes here if its op type has a handler below
// (constant_handler, called by translate.cpp), whichever file's table maps the op otherwise:
// Add of two constants is arithmetic, Add of an activation and a constant a bias.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"

namespace zoc::onnx::detail {

namespace {

using Kind = Val::Kind;

// At most this many elements in a constant computed here (shape arithmetic is tiny; this bounds
// what a hostile file can make zoc allocate through, say, a Concat of large initializers).
constexpr size_t kMaxFoldedElements = size_t{1} << 20;

const Constant& constant_of(const NodeContext& c, size_t i) { return *c.in(i).constant; }

bool batch_at(const Constant& k, size_t e) { return e < k.batch.size() && k.batch[e]; }

// Shape(x, start, end): the dims of x as the ONNX model sees it (views included), its batch
// marked unless the model fixes it.
bool shape(NodeContext& c) {
  const Val* x = c.viewed(0);
  int64_t start = 0, end = INT64_MAX;
  if (!x || !c.attr("start", start) || !c.attr("end", end)) return false;
  const Val v = *x;
  const std::vector<int64_t>* d = c.dims(v.id);
  if (!d) return false;
  std::vector<int64_t> dims = viewed_dims(v, *d);
  dims.insert(dims.begin(), c.declared_batch().value_or(0));
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [&](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
  Constant out;
  out.floating = false;
  for (int64_t k = clamp(start); k < clamp(end); ++k) {
    out.i.push_back(dims[static_cast<size_t>(k)]);
    out.batch.push_back(k == 0 && !c.declared_batch());
  }
  out.dims = {static_cast<int64_t>(out.i.size())};
  return c.result_constant(std::move(out));
}

// Gather(data, indices) of a 1-D constant along axis 0.
bool gather(NodeContext& c) {
  const Constant &data = constant_of(c, 0), &idx = constant_of(c, 1);
  int64_t axis = 0;
  if (!c.attr("axis", axis)) return false;
  if (data.dims.size() != 1 || (axis != 0 && axis != -1) || idx.floating) {
    return c.fail("a Gather of constants other than integer indices into a 1-D tensor");
  }
  const int64_t n = data.dims[0];
  Constant out;
  out.floating = data.floating;
  out.dims = idx.dims;
  for (int64_t k : idx.i) {
    if (k < -n || k >= n) return c.fail(fmt::format("index {} of a tensor of {} elements", k, n));
    const size_t e = static_cast<size_t>(k < 0 ? k + n : k);
    if (data.floating) {
      out.f.push_back(data.f[e]);
    } else {
      out.i.push_back(data.i[e]);
    }
    out.batch.push_back(batch_at(data, e));
  }
  return c.result_constant(std::move(out));
}

// Unsqueeze and Squeeze of a constant: the same elements under new dims. Opset 13 moved axes
// from an attribute to an input.
bool reshape_constant(NodeContext& c) {
  Constant out = constant_of(c, 0);
  const bool unsqueeze = c.node().op_type() == "Unsqueeze";
  std::vector<int64_t> axes;
  if (c.opset() < 13) {
    if (!c.attr("axes", axes)) return false;
  } else if (c.has_input(1)) {
    const Val* a = c.constant(1, "axes");
    if (!a) return false;
    axes = a->constant->i;
  }
  const int64_t rank = static_cast<int64_t>(out.dims.size() + (unsqueeze ? axes.size() : 0));
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return c.fail(fmt::format("axis {} of a rank-{} tensor", a, rank));
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (unsqueeze) {
    for (int64_t a : axes)
      out.dims.insert(out.dims.begin() + std::min<int64_t>(a, out.dims.size()), 1);
  } else {
    std::vector<int64_t> kept;
    for (size_t k = 0; k < out.dims.size(); ++k) {
      const bool listed = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(k));
      if ((listed || axes.empty()) && out.dims[k] == 1) continue;
      if (listed) return c.fail(fmt::format("squeezing axis {} of size {}", k, out.dims[k]));
      kept.push_back(out.dims[k]);
    }
    out.dims = kept;
  }
  return c.result_constant(std::move(out));
}

// Cast(x, to) of a constant between integer and floating types.
bool cast(NodeContext& c) {
  Constant out = constant_of(c, 0);
  int64_t to = 0;
  if (!c.attr("to", to)) return false;
  const bool to_float = is_floating(static_cast<int32_t>(to));
  if (!to_float && to != pb::TensorProto::INT64 && to != pb::TensorProto::INT32) {
    return c.fail(fmt::format("a cast of a constant to {}; zoc casts shapes to INT64 or INT32",
                              elem_type_name(static_cast<int32_t>(to))));
  }
  for (float v : out.f) {  // within the integer type where one is the target (NaN is not)
    const double lo = to == pb::TensorProto::INT32 ? INT32_MIN : -9.2e18;
    const double hi = to == pb::TensorProto::INT32 ? INT32_MAX : 9.2e18;
    if (!to_float && !(v >= lo && v <= hi)) {
      return c.fail(fmt::format("a cast of {:g} to {}", v, elem_type_name(static_cast<int32_t>(to))));
    }
  }
  for (int64_t v : out.i) {
    if (to == pb::TensorProto::INT32 && (v < INT32_MIN || v > INT32_MAX)) {
      return c.fail(fmt::format("a cast of {} to INT32", v));
    }
  }
  if (to_float && !out.floating) {
    if (out.has_batch()) return c.fail("a cast of the batch size to a floating type");
    out.f.assign(out.i.begin(), out.i.end());
    out.i.clear();
  } else if (!to_float && out.floating) {
    for (float v : out.f) out.i.push_back(static_cast<int64_t>(v));  // truncation, as ONNX's
    out.f.clear();
  }
  out.floating = to_float;
  return c.result_constant(std::move(out));
}

// Concat of 1-D constants (the pieces of a shape).
bool concat_constants(NodeContext& c) {
  int64_t axis = 0;
  if (!c.attr("axis", axis)) return false;
  Constant out;
  out.floating = constant_of(c, 0).floating;
  for (size_t k = 0; k < static_cast<size_t>(c.node().input_size()); ++k) {
    const Constant& p = constant_of(c, k);
    if (p.dims.size() != 1 || (axis != 0 && axis != -1) || p.floating != out.floating ||
        out.numel() + p.numel() > kMaxFoldedElements) {
      return c.fail("a concatenation of constants other than 1-D ones of one type");
    }
    for (size_t e = 0; e < p.numel(); ++e) out.batch.push_back(batch_at(p, e));
    out.f.insert(out.f.end(), p.f.begin(), p.f.end());
    out.i.insert(out.i.end(), p.i.begin(), p.i.end());
  }
  out.dims = {static_cast<int64_t>(out.numel())};
  return c.result_constant(std::move(out));
}

// One element of Add, Sub, Mul or Div on int64 (Div truncates, as ONNX's integer Div does);
// nullopt on overflow or division by zero.
std::optional<int64_t> integer_op(char op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case '+':
      return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional(r);
    case '-':
      return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional(r);
    case '*':
      return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional(r);
    default:
      return b == 0 || (a == INT64_MIN && b == -1) ? std::nullopt : std::optional(a / b);
  }
}

float float_op(char op, float a, float b) {
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    default:
      return a / b;
  }
}

// Add, Sub, Mul and Div of two constants of one type: of one shape, or one of them a single
// element.
bool arithmetic(NodeContext& c) {
  const std::string& type = c.node().op_type();
  const char op = type == "Add" ? '+' : type == "Sub" ? '-' : type == "Mul" ? '*' : '/';
  const Constant &a = constant_of(c, 0), &b = constant_of(c, 1);
  const size_t n = std::max(a.numel(), b.numel());
  if (a.floating != b.floating || (a.dims != b.dims && a.numel() != 1 && b.numel() != 1) ||
      n > kMaxFoldedElements) {
    return c.fail(
        fmt::format("{} of constants of shapes [{}] and [{}]: zoc computes shape "
                    "arithmetic on tensors of one shape and type, or with a scalar",
                    type, fmt::join(a.dims, ", "), fmt::join(b.dims, ", ")));
  }
  Constant out;
  out.floating = a.floating;
  out.dims = a.numel() == n && a.dims.size() >= b.dims.size() ? a.dims : b.dims;
  for (size_t e = 0; e < n; ++e) {
    const size_t ea = a.numel() == 1 ? 0 : e, eb = b.numel() == 1 ? 0 : e;
    if (batch_at(a, ea) || batch_at(b, eb)) {
      return c.fail(fmt::format("{} on the batch size, which zoc keeps dynamic", type));
    }
    if (out.floating) {
      out.f.push_back(float_op(op, a.f[ea], b.f[eb]));
      continue;
    }
    const auto r = integer_op(op, a.i[ea], b.i[eb]);
    if (!r)
      return c.fail(
          fmt::format("{} of {} and {} overflows or divides by zero", type, a.i[ea], b.i[eb]));
    out.i.push_back(*r);
  }
  return c.result_constant(std::move(out));
}

// Gather, Unsqueeze, Squeeze and Cast of a tensor computed at run time.
bool only_on_constants(NodeContext& c) {
  return c.fail(
      fmt::format("{} of a tensor computed from the input; zoc computes it only on "
                  "constants (shape arithmetic)",
                  shown_text(c.node().op_type())));
}

const OpEntry kShapeOps[] = {
    {"Shape", shape},
    {"Gather", only_on_constants},
    {"Unsqueeze", only_on_constants},
    {"Squeeze", only_on_constants},
    {"Cast", only_on_constants},
};

const OpEntry kConstantHandlers[] = {
    {"Gather", gather},
    {"Unsqueeze", reshape_constant},
    {"Squeeze", reshape_constant},
    {"Cast", cast},
    {"Concat", concat_constants},
    {"Add", arithmetic},
    {"Sub", arithmetic},
    {"Mul", arithmetic},
    {"Div", arithmetic},
};

}  // namespace

std::span<const OpEntry> shape_ops() { return kShapeOps; }

bool all_inputs_constant(const NodeContext& c) {
  bool any = false;
  for (size_t i = 0; i < static_cast<size_t>(c.node().input_size()); ++i) {
    if (!c.has_input(i)) continue;
    if (!c.in(i).is(Kind::kConstant)) return false;
    any = true;
  }
  return any;
}

Handler constant_handler(const std::string& op_type) {
  for (const OpEntry& e : kConstantHandlers) {
    if (op_type == e.op_type) return e.handler;
  }
  return nullptr;
}

}  // namespace zoc::onnx::detail
