// Text form of the IR (see printer.h).
#include "compiler/ir/printer.h"

#include <utility>

#include <fmt/format.h>

namespace zoc::ir {
namespace {

std::string value_name(const Graph& g, ValueId v) { return "%" + g.value_name(v); }

// "%out : T" for one result; "%out, %extra : T, T2" for several (training graphs).
std::pair<std::string, std::string> results_and_types(const Graph& g, const Node& n) {
  std::string names, types;
  for (ValueId v : Graph::results(n)) {
    const auto& type = g.values[v].type;
    names += (names.empty() ? "" : ", ") + value_name(g, v);
    types += (types.empty() ? "" : ", ") + (type ? type->str() : std::string("<untyped>"));
  }
  return {names, types};
}

std::string format_value(const AttrValue& v) {
  switch (v.kind) {
    case AttrKind::Int: return fmt::format("{}", v.i);
    case AttrKind::Bool: return v.i ? "true" : "false";
    case AttrKind::Pair: return fmt::format("{}x{}", v.pair.h, v.pair.w);
    case AttrKind::Float: return fmt::format("{:g}", v.f);
    case AttrKind::Init: return std::string(init_scheme_name(static_cast<InitScheme>(v.i)));
  }
  return "?";
}

std::string thousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string format_attrs(const Node& node) {
  std::string out;
  // Print in op-table order so the text is stable whatever order the frontend set them in.
  for (const AttrSpec& spec : op_info(node.op).attrs) {
    const AttrValue* v = node.attrs.find(spec.name);
    if (!v) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{}={}", spec.name, format_value(*v));
  }
  return out.empty() ? "" : "{" + out + "}";
}

std::string print_graph(const Graph& g, const PrintOptions& options) {
  std::string out = fmt::format("graph {} {{\n", g.name);
  for (const Node& n : g.nodes) {
    std::string operands;
    for (ValueId v : n.inputs) {
      if (!operands.empty()) operands += ", ";
      operands += value_name(g, v);
    }
    if (!n.operand_tensor.empty()) operands += ", @" + n.operand_tensor;  // a weights tensor
    const auto [results, types] = results_and_types(g, n);
    std::string line = fmt::format("  {} = {}", results, op_info(n.op).name);
    if (!operands.empty()) line += "(" + operands + ")";
    const std::string attrs = format_attrs(n);
    if (!attrs.empty()) line += " " + attrs;
    line += " : " + types;
    if (n.fused_from.size() > 1) {
      std::string from;
      for (const std::string& f : n.fused_from) from += (from.empty() ? "" : " + ") + f;
      line += "  [" + from + "]";
    }
    if (!n.origin.empty()) line += "  [of " + n.origin + "]";
    if (options.locations && n.loc.known()) {
      if (line.size() < 100) line.append(100 - line.size(), ' ');
      line += "  # " + n.loc.str();
    }
    out += line + "\n";
    if (options.params) {
      for (const ParamSpec& p : n.params) {
        std::string shape;
        for (int64_t d : p.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
        // A declared init shows; PyTorch's default (the usual case) does not.
        out += fmt::format("      {} {} [{}]{}{}\n", p.trainable ? "param " : "buffer", p.name,
                           shape.empty() ? "scalar" : shape,
                           p.dtype == DType::F32 ? "" : fmt::format(" {}", dtype_name(p.dtype)),
                           p.init == InitScheme::kPytorchDefault
                               ? ""
                               : fmt::format(" init={}", init_scheme_name(p.init)));
      }
    }
  }
  std::string results;
  for (ValueId v : g.outputs) results += (results.empty() ? "" : ", ") + value_name(g, v);
  out += fmt::format("  return {}\n}}\n", results);
  out += fmt::format("# {} nodes, {} trainable parameters, {} buffer elements\n", g.nodes.size(),
                     thousands(g.trainable_param_count()), thousands(g.buffer_count()));
  return out;
}

}  // namespace zoc::ir
