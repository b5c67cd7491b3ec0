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
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/support/checked_math.h"

namespace zoc::onnx::detail {

namespace {

using Kind = Val::Kind;

// At most this many elements in a constant computed here (shape arithmetic is tiny; this bounds
// what a hostile file can make zoc allocate through, say, a Concat of large initializers).
constexpr size_t kMaxFoldedElements = size_t{1} << 20;

const Constant& constant_of(const NodeContext& c, size_t i) { return *c.in(i).constant; }

bool batch_at(const Constant& k, size_t e) { return e < k.batch.size() && k.batch[e]; }

bool shape_result(NodeContext& c, const std::vector<int64_t>& dims, int64_t start, int64_t end,
                  bool batch);

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
  return shape_result(c, dims, start, end, !c.declared_batch());
}

// Shape of a constant (timm's TF-"same" padding asks the shape of the pads it computed).
bool shape_of_constant(NodeContext& c) {
  int64_t start = 0, end = INT64_MAX;
  if (!c.attr("start", start) || !c.attr("end", end)) return false;
  return shape_result(c, constant_of(c, 0).dims, start, end, false);
}

// Dims [start, end) of a tensor of `dims` as a 1-D constant; `batch`: dim 0 is the batch size.
bool shape_result(NodeContext& c, const std::vector<int64_t>& dims, int64_t start, int64_t end,
                  bool batch) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [&](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
  Constant out;
  out.floating = false;
  for (int64_t k = clamp(start); k < clamp(end); ++k) {
    out.i.push_back(dims[static_cast<size_t>(k)]);
    out.batch.push_back(k == 0 && batch);
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
      return c.fail(
          fmt::format("a cast of {:g} to {}", v, elem_type_name(static_cast<int32_t>(to))));
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

// Ceil, Floor and Clip(x, min, max) of a floating constant, or Clip of an integer one: the
// padding arithmetic of timm's TF-"same" convolutions (ceil(in / stride), max(pad, 0)) as the
// TorchScript-based exporter writes it.
bool rounding(NodeContext& c) {
  const std::string& type = c.node().op_type();
  Constant out = constant_of(c, 0);
  if (out.has_batch()) return c.fail(fmt::format("{} of the batch size", type));
  if (type != "Clip") {
    if (!out.floating) return c.fail(fmt::format("{} of an integer constant", type));
    for (float& v : out.f) v = type == "Ceil" ? std::ceil(v) : std::floor(v);
    return c.result_constant(std::move(out));
  }
  if (c.opset() < 11) return c.fail("Clip of a constant below opset 11 (bounds as attributes)");
  for (size_t k : {size_t{1}, size_t{2}}) {
    if (!c.has_input(k)) continue;
    const Constant& b = constant_of(c, k);
    if (b.numel() != 1 || b.floating != out.floating || b.has_batch()) {
      return c.fail("Clip of a constant by bounds that are not one number of its type");
    }
    for (float& v : out.f) v = k == 1 ? std::max(v, b.f[0]) : std::min(v, b.f[0]);
    for (int64_t& v : out.i) v = k == 1 ? std::max(v, b.i[0]) : std::min(v, b.i[0]);
  }
  return c.result_constant(std::move(out));
}

// Whether a constant of `dims` is small enough to compute here; else a failure.
bool folds(NodeContext& c, const std::vector<int64_t>& dims) {
  const auto n = checked_numel(dims);
  if (n && static_cast<size_t>(*n) <= kMaxFoldedElements) return true;
  return c.fail(
      fmt::format("{} of a constant into [{}], more than the 2^20 elements zoc computes "
                  "while compiling",
                  shown_text(c.node().op_type()), fmt::join(dims, ", ")));
}

// Elements `from` of `k`, in that order, as a constant of dims `dims` (their batch marks kept).
Constant pick(const Constant& k, const std::vector<size_t>& from, std::vector<int64_t> dims) {
  Constant out;
  out.floating = k.floating;
  out.dims = std::move(dims);
  for (size_t e : from) {
    if (k.floating) {
      out.f.push_back(k.f[e]);
    } else {
      out.i.push_back(k.i[e]);
    }
    if (!k.batch.empty()) out.batch.push_back(k.batch[e]);
  }
  return out;
}

// The element offsets of every index of `dims` in row-major order, where moving one step along
// axis a moves `step[a]` elements from `first`.
std::vector<size_t> strided(const std::vector<int64_t>& dims, const std::vector<int64_t>& step,
                            int64_t first) {
  std::vector<size_t> out;
  std::vector<int64_t> at(dims.size(), 0);
  const auto n = checked_numel(dims);
  for (int64_t e = 0; e < n.value_or(0); ++e) {
    int64_t offset = first;
    for (size_t a = 0; a < dims.size(); ++a) offset += at[a] * step[a];
    out.push_back(static_cast<size_t>(offset));
    for (size_t a = dims.size(); a-- > 0;) {
      if (++at[a] < dims[a]) break;
      at[a] = 0;
    }
  }
  return out;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t a = dims.size(); a-- > 1;) s[a - 1] = s[a] * dims[a];
  return s;
}

// ConstantOfShape(shape): its `value` (one element; float 0 by default) in every element. The
// TorchScript-based exporter computes a Pad's pads so (reflection padding, issue 32).
bool constant_of_shape(NodeContext& c) {
  const Constant& s = constant_of(c, 0);
  const auto n = s.floating || s.dims.size() != 1 ? std::nullopt : checked_numel(s.i);
  if (!n || s.has_batch() || static_cast<size_t>(*n) > kMaxFoldedElements) {
    return c.fail(
        "a ConstantOfShape of other than a 1-D integer shape known when compiling, of at "
        "most 2^20 elements");
  }
  Constant value;
  value.f = {0.f};
  for (const pb::AttributeProto& a : c.node().attribute()) {
    if (a.name() != "value") continue;
    auto v = decode_tensor(a.t());
    if (!v || v->numel() != 1) return c.fail("its value is not a tensor of one element");
    value = std::move(*v);
  }
  return c.result_constant(pick(value, std::vector<size_t>(static_cast<size_t>(*n), 0), s.i));
}

// Reshape(data, shape) of a constant, with ONNX's 0 (the dim as it was, unless allowzero) and
// one -1 (what the others leave).
bool reshape_of_constant(NodeContext& c) {
  const Constant& k = constant_of(c, 0);
  const Val* shape = c.constant(1, "shape");
  int64_t allowzero = 0;
  if (!shape || !c.attr("allowzero", allowzero)) return false;
  std::vector<int64_t> to = shape->constant->i;
  int64_t known = 1, infer = -1;
  for (size_t a = 0; a < to.size(); ++a) {
    if (to[a] == 0 && !allowzero) to[a] = a < k.dims.size() ? k.dims[a] : -2;
    if (to[a] == -1 && infer < 0) {
      infer = static_cast<int64_t>(a);
    } else if (to[a] < 0 || !checked_mul(known, to[a])) {
      known = -1;
      break;
    } else {
      known *= to[a];
    }
  }
  const auto n = static_cast<int64_t>(k.numel());
  if (infer >= 0 && known > 0 && n % known == 0) to[static_cast<size_t>(infer)] = n / known;
  if (shape->constant->floating || known < 0 || checked_numel(to) != n) {
    return c.fail(fmt::format("a reshape of a constant of shape [{}] to [{}]",
                              fmt::join(k.dims, ", "), fmt::join(shape->constant->i, ", ")));
  }
  Constant out = k;
  out.dims = to;
  return c.result_constant(std::move(out));
}

// Transpose(data, perm) of a constant; perm reverses the axes by default.
bool transpose_of_constant(NodeContext& c) {
  const Constant& k = constant_of(c, 0);
  const size_t rank = k.dims.size();
  std::vector<int64_t> perm(rank);
  for (size_t a = 0; a < rank; ++a) perm[a] = static_cast<int64_t>(rank - 1 - a);
  if (!c.attr("perm", perm)) return false;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t a = 0; a < sorted.size(); ++a) {
    if (sorted.size() != rank || sorted[a] != static_cast<int64_t>(a)) {
      return c.fail(fmt::format("perm [{}] of a rank-{} constant", fmt::join(perm, ", "), rank));
    }
  }
  const std::vector<int64_t> from = row_major_strides(k.dims);
  std::vector<int64_t> dims, step;
  for (int64_t a : perm) {
    dims.push_back(k.dims[static_cast<size_t>(a)]);
    step.push_back(from[static_cast<size_t>(a)]);
  }
  if (!folds(c, dims)) return false;
  return c.result_constant(pick(k, strided(dims, step, 0), dims));
}

// Slice(data, starts, ends, axes, steps) of a constant, with ONNX's clamping for either sign of
// step (opset 10 on; before, starts, ends and axes were attributes and steps 1).
bool slice_of_constant(NodeContext& c) {
  const Constant& k = constant_of(c, 0);
  const int64_t rank = static_cast<int64_t>(k.dims.size());
  std::vector<std::vector<int64_t>> args(4);  // starts, ends, axes, steps
  const char* names[] = {"starts", "ends", "axes", "steps"};
  for (size_t a = 0; a < 4; ++a) {
    if (c.opset() < 10) {
      if (a < 3 && !c.attr(names[a], args[a])) return false;
    } else if (c.has_input(a + 1)) {
      const Val* v = c.constant(a + 1, names[a]);
      if (!v || v->constant->floating)
        return v && c.fail(fmt::format("its {} are floating-point", names[a]));
      args[a] = v->constant->i;
    }
  }
  std::vector<int64_t>&starts = args[0], &ends = args[1], &axes = args[2], &steps = args[3];
  for (size_t a = 0; axes.empty() && a < starts.size(); ++a)
    axes.push_back(static_cast<int64_t>(a));
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::vector<int64_t> dims = k.dims, step = row_major_strides(k.dims), first(k.dims.size(), 0);
  const std::vector<int64_t> unit = step;
  std::vector<bool> seen(k.dims.size(), false);
  for (size_t e = 0; e < axes.size(); ++e) {
    const int64_t axis = axes[e] < 0 ? axes[e] + rank : axes[e];
    if (starts.size() != axes.size() || ends.size() != axes.size() || steps.size() != axes.size() ||
        axis < 0 || axis >= rank || seen[static_cast<size_t>(axis)] || steps[e] == 0) {
      return c.fail(
          fmt::format("a slice of a rank-{} constant by starts [{}], ends [{}], axes [{}] "
                      "and steps [{}]",
                      rank, fmt::join(starts, ", "), fmt::join(ends, ", "), fmt::join(axes, ", "),
                      fmt::join(steps, ", ")));
    }
    const auto a = static_cast<size_t>(axis);
    seen[a] = true;
    const int64_t dim = k.dims[a], s = steps[e];
    if (dim == 0) continue;
    int64_t b = starts[e] < 0 ? starts[e] + dim : starts[e];
    int64_t end = ends[e] < 0 ? ends[e] + dim : ends[e];
    b = s > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
    end = s > 0 ? std::clamp<int64_t>(end, 0, dim) : std::clamp<int64_t>(end, -1, dim - 1);
    const int64_t span = s > 0 ? end - b : b - end, size = s > 0 ? s : -s;
    dims[a] = span <= 0 ? 0 : (span + size - 1) / size;
    first[a] = b;
    step[a] = unit[a] * s;
  }
  int64_t offset = 0;
  for (size_t a = 0; a < first.size(); ++a) offset += first[a] * unit[a];
  if (!folds(c, dims)) return false;
  return c.result_constant(pick(k, strided(dims, step, offset), dims));
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
    {"ConstantOfShape", only_on_constants},
    {"Ceil", only_on_constants},
    {"Floor", only_on_constants},
};

const OpEntry kConstantHandlers[] = {
    {"Gather", gather},
    {"Unsqueeze", reshape_constant},
    {"Squeeze", reshape_constant},
    {"Cast", cast},
    {"ConstantOfShape", constant_of_shape},
    {"Reshape", reshape_of_constant},
    {"Transpose", transpose_of_constant},
    {"Slice", slice_of_constant},
    {"Concat", concat_constants},
    {"Add", arithmetic},
    {"Sub", arithmetic},
    {"Mul", arithmetic},
    {"Div", arithmetic},
    {"Shape", shape_of_constant},
    {"Ceil", rounding},
    {"Floor", rounding},
    {"Clip", rounding},
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
