// The snippets of a const_op layer (and of a binary one: sub or div of two tensors of one shape,
// the same arithmetic): add, sub, mul or div of a tensor and a constant, the forms
// users write for input normalization ((x - mean) / std) and that timm's one-element
// parameters compile to (scale * x + bias). The constant is a named float literal of the call
// constant, or an fp32 weight (never rounded to the model's fp16: a mean or a std keeps its
// digits; in a trainer, the tensor in its params()); a scalar compiled in from a parameter is
// checked against the weights file at load.
#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/cudnn/named_init.h"
#include "compiler/backend/cudnn/train_emitter.h"
#include "compiler/support/sanitize.h"
#include "compiler/weights/weights.h"

namespace zoc::cudnn {

const char* const_op_kind(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::Sub:
      return "zoc::ConstOpKind::kSub";
    case ir::OpKind::Mul:
      return "zoc::ConstOpKind::kMul";
    case ir::OpKind::Div:
      return "zoc::ConstOpKind::kDiv";
    default:
      return "zoc::ConstOpKind::kAdd";
  }
}

namespace {

const char* op_symbol(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::Sub:
      return "-";
    case ir::OpKind::Mul:
      return "*";
    case ir::OpKind::Div:
      return "/";
    default:
      return "+";
  }
}

std::string shape_list(const std::vector<int64_t>& shape) {
  std::string out = "{";
  for (size_t k = 0; k < shape.size(); ++k) out += (k ? ", " : "") + std::to_string(shape[k]);
  return out + "}";
}

}  // namespace

void pack_fp32_param(EmitContext& ctx, const ir::Node& n, const ir::ParamSpec& p,
                     const std::string& slot) {
  ctx.s.pack.wrapped(
      "ZOC_TRY(zoc::pack_tensor(source,",
      {fmt::format(" \"{}\"", sanitize_comment(p.name)), shape_list(p.shape),
       init_rule_cpp(init_choice(n, p).rule), "zoc::DeviceDType::kF32", "staging + " + slot},
      "));");
}

bool emit_const_op(EmitContext& ctx, const ir::Node& n, size_t i) {
  const std::string& id = ctx.ids[i];
  const snippet::Dims d = snippet::dims_of(ctx.g.type(n.output));
  const bool reverse = n.attrs.flag("reverse");
  named::ConstOpShape m;
  m.c = d.c, m.hw = d.h * d.w, m.nhwc = snippet::nhwc_flag(ctx, n.output);
  m.op = const_op_kind(n.op), m.reverse = reverse;
  named::ConstOpCall call;
  call.per_sample = ctx.g.type(n.output).sample_numel();
  call.x = ctx.tensor(n.inputs[0]), call.y = ctx.tensor(n.output);
  std::string k;
  if (n.attrs.has("scalar")) {
    const std::string literal = snippet::float_literal(n.attrs.f("scalar"));
    m.scalar = literal;
    k = fmt::format("{}", static_cast<float>(n.attrs.f("scalar")));
    if (!n.scalar_from.empty()) {
      ctx.s.pack.line("ZOC_TRY(source.check_constant(\"{}\", {}));",
                      sanitize_comment(n.scalar_from), literal);
      k += fmt::format(" (tensor '{}')", sanitize_comment(n.scalar_from));
    }
  } else {
    const ir::ParamSpec* p = snippet::param(n, ir::ParamRole::kOperand);
    const bool per_channel = !ir::one_value_operand(n);
    m.per_channel = per_channel;
    k = fmt::format("'{}'{}", sanitize_comment(p->name), per_channel ? " per channel" : "");
    if (ctx.train) {  // the trainer's params(), as PyTorch's layout holds it
      call.v = train_snippet::param_offset(ctx, n, ir::ParamRole::kOperand);
    } else {
      ctx.s.pack.line("// {}", sanitize_comment(ctx.title(n)));
      pack_fp32_param(ctx, n, *p, "kW_" + id);
      call.v = "kW_" + id;
    }
  }
  call.m = m;
  snippet::constant(ctx, "ConstOpCall", "kCop_" + id, named::items(call));
  const std::string sym = op_symbol(n.op);
  snippet::comment(
      ctx, n, reverse ? fmt::format("y = {} {} x", k, sym) : fmt::format("y = x {} {}", sym, k));
  snippet::timed_call(ctx, n, "v.const_op(kCop_{}, {})", id, ctx.name_literal(n));
  return true;
}

bool emit_binary(EmitContext& ctx, const ir::Node& n, size_t i) {
  named::BinaryCall call;
  call.op = const_op_kind(n.op), call.per_sample = ctx.g.type(n.output).sample_numel();
  call.a = ctx.tensor(n.inputs[0]), call.b = ctx.tensor(n.inputs[1]), call.y = ctx.tensor(n.output);
  snippet::constant(ctx, "BinaryCall", "kBin_" + ctx.ids[i], named::items(call));
  snippet::comment(ctx, n, fmt::format("y = a {} b, elementwise", op_symbol(n.op)));
  snippet::timed_call(ctx, n, "v.binary(kBin_{}, {})", ctx.ids[i], ctx.name_literal(n));
  return true;
}

}  // namespace zoc::cudnn
