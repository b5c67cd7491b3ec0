// The small helpers every op's snippet uses (inference's emit_*_layers.cpp,
// the trainer's emit_train_layers.cpp): a value's [C, H, W], a node's parameter by role, a call
// constant, and the sequence's comment and call lines. Kept here so that each snippet file holds
// only what its ops contribute.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/backend/cudnn/emit_internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn::snippet {

// An image's channels, height and width; features [F] read as F x 1 x 1.
struct Dims {
  int64_t c = 1, h = 1, w = 1;
};

inline Dims dims_of(const ir::TensorType& t) {
  if (t.dims.size() == 3) return {t.dims[0], t.dims[1], t.dims[2]};
  return {t.dims.empty() ? 1 : t.dims[0], 1, 1};
}

// The printer's mapping of a value's lowered layout to the runtime shapes' `nhwc` flag; a value
// that is not an image (features) takes the model's image layout, its input's.
inline const char* nhwc_flag(const EmitContext& ctx, ir::ValueId v) {
  const ir::TensorType& t =
      ctx.g.type(v).dims.size() == 3 ? ctx.g.type(v) : ctx.g.type(ctx.g.nodes.front().output);
  return t.layout == ir::Layout::NHWC ? "true" : "false";
}

// A float constant as a C++ literal that reads back bit-exactly: fmt's shortest round-trip
// text, with ".0" where it would read as an integer ("1" -> "1.0f"), then "f". The value is
// the attribute cast to float, as the interpreter casts it.
inline std::string float_literal(double attr) {
  std::string text = fmt::format("{}", static_cast<float>(attr));
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text + "f";
}

// The rows of a strided copy of value v's channels (concat, slices): NHWC, every pixel's
// channels are a row; NCHW, a sample's channel planes are one. `unit`: one channel's bytes in a
// row (its element size, or a plane's); `rows`: rows per sample.
struct CopyRows {
  int64_t unit = 0, rows = 0;
};
inline CopyRows copy_rows(const EmitContext& ctx, ir::ValueId v) {
  const ir::TensorType& t = ctx.g.type(v);
  const Dims d = dims_of(t);
  const int64_t e = ir::dtype_size(t.dtype);
  if (t.layout == ir::Layout::NHWC) return {e, d.h * d.w};
  return {d.h * d.w * e, 1};
}

inline const ir::ParamSpec* param(const ir::Node& n, ir::ParamRole role) {
  for (const ir::ParamSpec& p : n.params) {
    if (p.role == role) return &p;
  }
  return nullptr;
}

// The parameter's name as a C string literal, or nullptr.
inline std::string cstr(const ir::ParamSpec* p) {
  return p ? fmt::format("\"{}\"", sanitize_comment(p->name)) : "nullptr";
}

// `constexpr zoc::<type> <name> = {items...};`, wrapped to the column limit.
inline void constant(EmitContext& ctx, const std::string& type, const std::string& name,
                     const std::vector<std::string>& items) {
  ctx.s.constants.wrapped(fmt::format("constexpr zoc::{} {} = {{", type, name), items, "};");
}

// The items of a call's arguments after its first: a braced struct (its designated
// initializer's items) and then `more`, for CodeWriter::wrapped.
inline std::vector<std::string> call_args(std::vector<std::string> fields,
                                          const std::vector<std::string>& more) {
  if (fields.empty()) fields.push_back("");
  fields.front() = " {" + fields.front();
  fields.back() += "}";
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

// A descriptor bundle of the class, `zoc::<type> <id>_;`, with the layers it stands for as a
// comment: beside it, or above it where the line would pass the column limit (the members are
// indented once inside the class).
inline void member(EmitContext& ctx, const std::string& type, const std::string& id,
                   const std::string& title) {
  const std::string decl = fmt::format("zoc::{} {}_;", type, id);
  const std::string text = sanitize_comment(title);
  if (2 + decl.size() + 4 + text.size() <= CodeWriter::kMaxColumns) {
    ctx.s.members.line("{}  // {}", decl, text);
  } else {
    ctx.s.members.line("// {}", text);
    ctx.s.members.line("{}", decl);
  }
}

// The layer's comment in the sequence: what it stands for, what it does, where it came from.
inline void comment(EmitContext& ctx, const ir::Node& n, const std::string& what) {
  std::string loc = n.loc.known() ? fmt::format("  ({})", sanitize_comment(n.loc.str())) : "";
  ctx.s.layers.comment(fmt::format("{}: {}{}", sanitize_comment(ctx.title(n)), what, loc));
}

// `ZOC_TRY(<call>);` in the layer sequence, its arguments wrapped at the column limit: `call` is
// `v.method(arg, arg, ...)`, split at the commas outside string literals.
inline void try_line(CodeWriter& out, const std::string& call) {
  const size_t open = call.find('(');
  if (open == std::string::npos || call.back() != ')') {
    out.line("ZOC_TRY({});", call);
    return;
  }
  std::vector<std::string> args(1);
  bool quoted = false;
  for (size_t k = open + 1; k + 1 < call.size(); ++k) {
    const char c = call[k];
    if (c == '"' && call[k - 1] != '\\') quoted = !quoted;
    if (c == ',' && !quoted) {
      args.emplace_back();
      ++k;  // the space after the comma
    } else {
      args.back() += c;
    }
  }
  out.wrapped("ZOC_TRY(" + call.substr(0, open + 1), args, "));");
}

// A call of the layer sequence that issues GPU work (a timed layer: it gets a profile mark).
template <class... Args>
void timed_call(EmitContext& ctx, const ir::Node& n, fmt::format_string<Args...> f,
                Args&&... args) {
  try_line(ctx.s.layers, fmt::format(f, std::forward<Args>(args)...));
  ctx.s.titles.push_back(ctx.title(n));
}

}  // namespace zoc::cudnn::snippet
