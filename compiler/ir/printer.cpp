// Text form of the IR (see printer.h).
#include "compiler/ir/printer.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "compiler/ir/activation_params.h"
#include "compiler/support/sanitize.h"

namespace zoc::ir {
namespace {

// Names come from model files: escaped as messages escape them (sanitize.h), never cut.
std::string shown(const std::string& name) { return shown_text(name, std::string::npos); }

std::string value_name(const Graph& g, ValueId v) { return "%" + shown(g.value_name(v)); }

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

// Six significant digits where they are the value, else the shortest text that reads back as
// it: the printed graph is what the model hash covers, so two graphs whose attributes differ
// (an int8 scale, an epsilon) never print alike.
std::string exact_float(double f) {
  std::string six = fmt::format("{:g}", f);
  return std::strtod(six.c_str(), nullptr) == f ? six : fmt::format("{}", f);
}

std::string format_value(const AttrValue& v) {
  switch (v.kind) {
    case AttrKind::Int:
      return fmt::format("{}", v.i);
    case AttrKind::Bool:
      return v.i ? "true" : "false";
    case AttrKind::Pair:
      return fmt::format("{}x{}", v.pair.h, v.pair.w);
    case AttrKind::Float:
      return exact_float(v.f);
    case AttrKind::Init:
      return std::string(init_scheme_name(static_cast<InitScheme>(v.i)));
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

// The lowering's lines under a node (lowering.h): its layer, then its result's storage.
std::string lowered_lines(const Graph& g, const Node& n) {
  const Lowered& l = *n.lowered;
  std::string layer = fmt::format("      layer {}", layer_kind_info(l.kind).name);
  const FusedActivation* a = n.attrs.has("activation")
                                 ? fused_activation(static_cast<int>(n.attrs.i("activation")))
                                 : nullptr;
  if (a && l.epilogue != Epilogue::kNone) {
    layer +=
        fmt::format(", {} {}", op_info(a->op).name,
                    l.epilogue == Epilogue::kFused ? "in its epilogue" : "as a kernel after it");
  }
  if (l.weights != WeightLayout::kNone) {
    layer += fmt::format(", weights {} at {}", weight_layout_name(l.weights), l.weight_offset);
  }
  if (l.bias_offset >= 0) layer += fmt::format(", bias at {}", l.bias_offset);
  for (int k : l.joins) layer += fmt::format(", after side branch {} joins", k);
  if (l.side_branch >= 0) layer += fmt::format(", side branch {}", l.side_branch);
  std::string out = layer + "\n";
  const Value& v = g.values[n.output];
  if (!v.storage) return out;
  const Storage& s = *v.storage;
  const TensorType& t = *v.type;
  std::string where;
  if (s.alias_of >= 0) {
    where = fmt::format("a view of %{}", g.value_name(s.alias_of));
  } else if (s.offset < 0) {
    where = "the caller's buffer";
  } else {
    where = fmt::format("arena {} + {} per sample", s.offset, s.bytes);
  }
  const bool padded = !t.dims.empty() && s.stored_channels != t.dims[0];
  return out +
         fmt::format(
             "      stored {} {}{}, {}, {} stream\n", dtype_name(t.dtype), layout_name(t.layout),
             padded ? fmt::format(" (channels {} padded to {})", t.dims[0], s.stored_channels) : "",
             where, s.stream == Stream::kSide ? "side" : "main");
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
  std::string out = fmt::format("graph {} {{\n", shown(g.name));
  if (const auto& t = g.target) {
    out += fmt::format(
        "  # lowered for {}: arena {} bytes per sample (unshared {}), weights {} "
        "bytes, {} side branches, output {}\n",
        t->precision, t->arena_bytes_per_sample, t->unshared_bytes_per_sample, t->weight_bytes,
        t->side_branches, t->output_convert ? "converted to f32" : "copied");
  }
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
      for (const std::string& f : n.fused_from) from += (from.empty() ? "" : " + ") + shown(f);
      line += "  [" + from + "]";
    }
    if (!n.origin.empty()) line += "  [of " + shown(n.origin) + "]";
    if (!n.weights_of.empty()) line += "  [weights of " + shown(n.weights_of) + "]";
    if (options.locations && n.loc.known()) {
      if (line.size() < 100) line.append(100 - line.size(), ' ');
      line += "  # " + shown(n.loc.str());
    }
    out += line + "\n";
    if (n.lowered) out += lowered_lines(g, n);
    if (options.params) {
      for (const ParamSpec& p : n.params) {
        std::string shape;
        for (int64_t d : p.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
        // A declared init shows; PyTorch's default (the usual case) does not. A frozen
        // parameter (requires_grad=False) shows as such: training keeps it fixed.
        out += fmt::format("      {} {} [{}]{}{}\n",
                           p.frozen      ? "frozen"
                           : p.trainable ? "param "
                                         : "buffer",
                           shown(p.name), shape.empty() ? "scalar" : shape,
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
  const int64_t frozen = g.frozen_param_count();
  out += fmt::format("# {} nodes, {} trainable parameters, {} buffer elements{}\n", g.nodes.size(),
                     thousands(g.trainable_param_count()), thousands(g.buffer_count()),
                     frozen ? fmt::format(", {} frozen parameters", thousands(frozen)) : "");
  return out;
}

}  // namespace zoc::ir
