// zoc's own checks of an ONNX file newer than libonnx's checker knows.
//
// ONNX's checker is the authority on what a valid model is, but libonnx 1.12 knows IR versions
// up to 8 and opsets of the default domain up to 17, and refuses anything newer outright. The
// default exporter of PyTorch 2.9 and later (torch.onnx.export's dynamo path) writes IR version
// 10 and opset 18 to 20 (issue 32). For such a file zoc runs what it reads of the checker itself,
// with libonnx's own pieces wherever they still apply: graph inputs and outputs are checked by
// checker::check_value_info, initializers for names (present, unique) and by check_tensor (their
// data was checked by model_file.cpp), and every node of an op zoc maps by OpSchema::Verify
// (input and output counts, attribute names and types, required attributes) against that op's
// schema at the file's opset, then each attribute by check_attribute. The schema is libonnx's
// where the op's signature has not changed since opset 17; for the versions 18 to 21 that
// changed the inputs or attributes of an op zoc maps (ONNX's docs/Changelog.md), zoc writes the
// schema itself below with libonnx's OpSchema builder. Nodes of ops zoc does not map are
// refused by the graph walk if the output needs them, so nothing of theirs is read. The graph's
// wiring (structure.cpp) and every tensor (model_file.cpp) are checked for every file.
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "compiler/frontend/onnx/internal.h"

namespace zoc::onnx {
namespace detail {
namespace {

using pb::AttributeProto;
using pb::OpSchema;

// The element types an op's inputs may have, for the schemas below: OpSchema::Verify checks
// counts and attributes, not types, so the constraint only has to be well-formed.
const std::vector<std::string>& any_type() {
  static const std::vector<std::string> types = {
      "tensor(float)", "tensor(double)", "tensor(float16)", "tensor(bfloat16)", "tensor(int8)",
      "tensor(int16)", "tensor(int32)",  "tensor(int64)",   "tensor(uint8)",    "tensor(bool)"};
  return types;
}

OpSchema unary_schema(const char* op, int since) {
  OpSchema s(op, __FILE__, __LINE__);
  s.SinceVersion(since)
      .Input(0, "X", "", "T")
      .Output(0, "Y", "", "T")
      .TypeConstraint("T", any_type(), "");
  return s;
}

// The versions 18 to 21 of ops zoc maps whose inputs, outputs or attributes differ from the
// version before (docs/Changelog.md of ONNX 1.17). The other versions of these opsets that
// touch ops zoc maps changed only the types they take, and keep libonnx's signature: Flatten-21,
// Reshape-19 and -21, Identity-19 and -21, Constant-19 and -21, Transpose-21, Shape-19 and -21,
// Squeeze-21, Unsqueeze-21, Pad-19 (mode "wrap") and -21, Cast-21.
std::vector<OpSchema> newer_schemas() {
  std::vector<OpSchema> out;
  {  // ReduceMean-18: axes moved from an attribute to an optional input.
    OpSchema s("ReduceMean", __FILE__, __LINE__);
    s.SinceVersion(18)
        .Input(0, "data", "", "T")
        .Input(1, "axes", "", "tensor(int64)", OpSchema::Optional)
        .Output(0, "reduced", "", "T")
        .TypeConstraint("T", any_type(), "")
        .Attr("keepdims", "", AttributeProto::INT, int64_t{1})
        .Attr("noop_with_empty_axes", "", AttributeProto::INT, int64_t{0});
    out.push_back(std::move(s));
  }
  {  // Split-18: num_outputs, an attribute beside the optional split input.
    OpSchema s("Split", __FILE__, __LINE__);
    s.SinceVersion(18)
        .Input(0, "input", "", "T")
        .Input(1, "split", "", "tensor(int64)", OpSchema::Optional)
        .Output(0, "outputs", "", "T", OpSchema::Variadic)
        .TypeConstraint("T", any_type(), "")
        .Attr("axis", "", AttributeProto::INT, int64_t{0})
        .Attr("num_outputs", "", AttributeProto::INT, false);
    out.push_back(std::move(s));
  }
  {  // Pad-18: an optional axes input (Pad-19 and -21 keep this signature).
    OpSchema s("Pad", __FILE__, __LINE__);
    s.SinceVersion(18)
        .Input(0, "data", "", "T")
        .Input(1, "pads", "", "tensor(int64)")
        .Input(2, "constant_value", "", "T", OpSchema::Optional)
        .Input(3, "axes", "", "Tind", OpSchema::Optional)
        .Output(0, "output", "", "T")
        .TypeConstraint("T", any_type(), "")
        .TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "")
        .Attr("mode", "", AttributeProto::STRING, std::string("constant"));
    out.push_back(std::move(s));
  }
  {  // AveragePool-19: dilations.
    OpSchema s("AveragePool", __FILE__, __LINE__);
    s.SinceVersion(19)
        .Input(0, "X", "", "T")
        .Output(0, "Y", "", "T")
        .TypeConstraint("T", any_type(), "")
        .Attr("auto_pad", "", AttributeProto::STRING, std::string("NOTSET"))
        .Attr("ceil_mode", "", AttributeProto::INT, int64_t{0})
        .Attr("count_include_pad", "", AttributeProto::INT, int64_t{0})
        .Attr("dilations", "", AttributeProto::INTS, false)
        .Attr("kernel_shape", "", AttributeProto::INTS, true)
        .Attr("pads", "", AttributeProto::INTS, false)
        .Attr("strides", "", AttributeProto::INTS, false);
    out.push_back(std::move(s));
  }
  {  // Cast-19: saturate (Cast-21 keeps this signature).
    OpSchema s("Cast", __FILE__, __LINE__);
    s.SinceVersion(19)
        .Input(0, "input", "", "T1")
        .Output(0, "output", "", "T2")
        .TypeConstraint("T1", any_type(), "")
        .TypeConstraint("T2", any_type(), "")
        .Attr("saturate", "", AttributeProto::INT, int64_t{1})
        .Attr("to", "", AttributeProto::INT, true);
    out.push_back(std::move(s));
  }
  {  // Resize-18: antialias, axes, keep_aspect_ratio_policy (Resize-19 keeps this signature and
     // adds the mode half_pixel_symmetric, which resize_kind refuses by name).
    OpSchema s("Resize", __FILE__, __LINE__);
    s.SinceVersion(18)
        .Input(0, "X", "", "T1")
        .Input(1, "roi", "", "T2", OpSchema::Optional)
        .Input(2, "scales", "", "tensor(float)", OpSchema::Optional)
        .Input(3, "sizes", "", "tensor(int64)", OpSchema::Optional)
        .Output(0, "Y", "", "T1")
        .TypeConstraint("T1", any_type(), "")
        .TypeConstraint("T2", {"tensor(float16)", "tensor(float)", "tensor(double)"}, "")
        .Attr("antialias", "", AttributeProto::INT, int64_t{0})
        .Attr("axes", "", AttributeProto::INTS, false)
        .Attr("coordinate_transformation_mode", "", AttributeProto::STRING,
              std::string("half_pixel"))
        .Attr("cubic_coeff_a", "", AttributeProto::FLOAT, -0.75f)
        .Attr("exclude_outside", "", AttributeProto::INT, int64_t{0})
        .Attr("extrapolation_value", "", AttributeProto::FLOAT, 0.0f)
        .Attr("keep_aspect_ratio_policy", "", AttributeProto::STRING, std::string("stretch"))
        .Attr("mode", "", AttributeProto::STRING, std::string("nearest"))
        .Attr("nearest_mode", "", AttributeProto::STRING, std::string("round_prefer_floor"));
    out.push_back(std::move(s));
  }
  {  // Gelu-20: new.
    OpSchema s = unary_schema("Gelu", 20);
    s.Attr("approximate", "", AttributeProto::STRING, std::string("none"));
    out.push_back(std::move(s));
  }
  for (OpSchema& s : out) s.Finalize();
  return out;
}

// The schema of `op` at `opset` and where it comes from ("libonnx 1.12.0's Conv-11"); nullptr
// if the op does not exist at that opset.
const OpSchema* schema_at(const std::string& op, int64_t opset, std::string& source) {
  static const std::vector<OpSchema> newer = newer_schemas();
  const OpSchema* best = nullptr;
  for (const OpSchema& s : newer) {
    if (s.Name() == op && s.SinceVersion() <= opset &&
        (!best || s.SinceVersion() > best->SinceVersion())) {
      best = &s;
    }
  }
  if (best) {
    source = fmt::format("{}-{}, as zoc records it", op, best->SinceVersion());
    return best;
  }
  const OpSchema* s = pb::OpSchemaRegistry::Schema(
      op, static_cast<int>(std::min(opset, checker_max_opset())), pb::ONNX_DOMAIN);
  if (s) source = fmt::format("libonnx {}'s {}-{}", libonnx_version(), op, s->SinceVersion());
  return s;
}

// One node of an op zoc maps against its schema, then each of its attributes.
void check_node(const pb::NodeProto& n, int index, int64_t opset,
                const pb::checker::CheckerContext& ctx, const std::string& path,
                Diagnostics& diags) {
  std::string source;
  const OpSchema* schema = schema_at(n.op_type(), opset, source);
  if (!schema) {
    diags.error(node_loc(path, n, index), fmt::format("opset {} of the ONNX domain has no op {}",
                                                      opset, shown_text(n.op_type())));
    return;
  }
  try {
    schema->Verify(n);
    const pb::checker::LexicalScopeContext scope;
    for (const pb::AttributeProto& a : n.attribute()) pb::checker::check_attribute(a, ctx, scope);
  } catch (const std::exception& e) {
    diags.error(node_loc(path, n, index),
                fmt::format("the schema of {} at opset {} ({}) rejects it: {}",
                            shown_text(n.op_type()), opset, source, checker_message(e)));
  }
}

// The graph's inputs, outputs and initializers as ONNX's check_graph checks them.
void check_values(const pb::GraphProto& g, const pb::checker::CheckerContext& ctx,
                  const std::string& path, Diagnostics& diags) {
  const SourceLoc at{path, 0, 0};
  if (g.name().empty()) diags.error(at, "the graph has no name (ONNX requires one)");
  std::unordered_set<std::string> inputs, initializers;
  for (const auto* list : {&g.input(), &g.output()}) {
    const char* what = list == &g.input() ? "graph input" : "graph output";
    for (const pb::ValueInfoProto& v : *list) {
      if (list == &g.input() && !inputs.insert(v.name()).second) {
        diags.error(at, fmt::format("{} '{}' is declared twice", what, shown_text(v.name())));
      }
      try {
        pb::checker::check_value_info(v, ctx);
      } catch (const std::exception& e) {
        diags.error(at, fmt::format("{} '{}': {}", what, shown_text(v.name()), checker_message(e)));
      }
    }
  }
  for (const pb::TensorProto& t : g.initializer()) {
    if (t.name().empty()) {
      diags.error(at, "an initializer has no name");
    } else if (!initializers.insert(t.name()).second) {
      diags.error(at, fmt::format("initializer '{}' is given twice", shown_text(t.name())));
    } else if (t.data_location() != pb::TensorProto::EXTERNAL) {  // external: model_file.cpp
      try {
        pb::checker::check_tensor(t, ctx);
      } catch (const std::exception& e) {
        diags.error(at,
                    fmt::format("initializer '{}': {}", shown_text(t.name()), checker_message(e)));
      }
    }
  }
}

}  // namespace

bool checker_knows(const ModelFile& m) {
  return m.proto.ir_version() <= checker_max_ir_version() && m.opset <= checker_max_opset();
}

bool check_newer_model(const ModelFile& m, const std::string& path, Diagnostics& diags) {
  const size_t before = diags.error_count();
  const pb::GraphProto& g = m.proto.graph();
  pb::checker::CheckerContext ctx;
  // The checker's own context as far as it knows: attributes and subgraphs are judged as in
  // the newest IR version and opset it has.
  ctx.set_ir_version(static_cast<int>(std::min(m.proto.ir_version(), checker_max_ir_version())));
  ctx.set_opset_imports(
      {{pb::ONNX_DOMAIN, static_cast<int>(std::min(m.opset, checker_max_opset()))}});
  std::unordered_set<std::string> keys;
  for (const pb::StringStringEntryProto& e : m.proto.metadata_props()) {
    if (!keys.insert(e.key()).second) {
      diags.error(
          SourceLoc{path, 0, 0},
          fmt::format("the model's metadata_props holds the key '{}' twice", shown_text(e.key())));
    }
  }
  check_values(g, ctx, path, diags);
  for (int i = 0; i < g.node_size(); ++i) {
    const pb::NodeProto& n = g.node(i);
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (default_domain && find_handler(n.op_type())) check_node(n, i, m.opset, ctx, path, diags);
  }
  if (diags.error_count() != before) return false;
  diags.note(
      SourceLoc{path, 0, 0},
      fmt::format("the model is ONNX IR version {} with opset {}, newer than the checker of "
                  "this zoc's libonnx {} reads (IR {}, opset {}): zoc checked it itself (the "
                  "graph's wiring, its tensors and external data, and each node of an op zoc "
                  "maps against that op's schema at opset {})",
                  m.proto.ir_version(), m.opset, libonnx_version(), checker_max_ir_version(),
                  checker_max_opset(), m.opset));
  return true;
}

}  // namespace detail

int64_t checker_max_opset() {
  const auto& map = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find("");
  return it == map.end() ? 0 : it->second.second;
}

int64_t checker_max_ir_version() { return ::onnx::IR_VERSION; }

std::string versions_read() {
  return fmt::format(
      "opsets {} to {}, IR versions up to {}; libonnx {} (its checker judges up to "
      "opset {} and IR {}, zoc's own checks newer files)",
      kMinOpset, kMaxOpset, kMaxIrVersion, libonnx_version(), checker_max_opset(),
      checker_max_ir_version());
}

}  // namespace zoc::onnx
