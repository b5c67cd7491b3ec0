// Layer names for ONNX models (see LayerNames in internal.h for the rules).
//
// zoc's weights are state_dict names and the IR derives every parameter's name from its layer
// ("<layer>.weight"), so a layer whose initializers are named like a state_dict must be named by
// their prefix: then `zoc extract-weights` writes the same file PyTorch's state_dict would, and
// the IR equals the YAML route's. ONNX files from other writers name initializers anything
// ("onnx::Conv_193" after torch folded a BatchNorm into a convolution, "W" in ONNX's tests);
// such a layer is named after its node instead. torch.onnx.export (1.13 and later) names nodes by
// the module scopes they ran in, "/layer1/layer1.0/relu_1/Relu"; decoded into a module path
// ("layer1.0.relu_1") that gives the names the TorchScript frontend gives: a module's path where
// the module has no submodules, else the path plus the op ("layer1.0.add", "flatten"). The dynamo
// exporter (PyTorch 2.9 and later, IR 10) names nodes "node_relu_1" instead and writes the scopes
// into the node's metadata_props (pkg.torch.onnx.name_scopes: "['', 'layer1', 'layer1.0',
// 'layer1.0.relu', 'relu_1']"), a field libonnx 1.12's NodeProto keeps as an unknown field; its
// optimizer folds a BatchNorm into the convolution before it and names the new bias
// "<weight>_bias", which counts as the layer's "<prefix>.bias".
#include <algorithm>
#include <unordered_map>

#include <google/protobuf/unknown_field_set.h>

#include <fmt/format.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::onnx::detail {
namespace {

constexpr size_t kMaxNameChars = 160;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// A state_dict prefix zoc takes as a layer name as it is: PyTorch's module-path characters.
bool plain_name(const std::string& s) {
  if (s.empty() || s.size() > kMaxNameChars || s.front() == '.' || s.back() == '.') return false;
  for (char c : s) {
    if (!name_char(c)) return false;
  }
  return true;
}

// Any other user string as a layer name: module-path characters kept, the rest '_', bounded.
std::string clean_name(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, kMaxNameChars)) out += name_char(c) ? c : '_';
  while (!out.empty() && out.front() == '.') out.erase(0, 1);
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

// "/layer2/layer2.0/downsample/downsample.0/Conv" -> "layer2.0.downsample.0": the scopes of a
// torch.onnx.export node name, where a child of a container is named "<container>.<index>".
std::string scope_path(const std::string& node_name) {
  if (node_name.size() < 2 || node_name[0] != '/') return "";
  std::vector<std::string> parts;
  size_t start = 1;
  for (size_t slash; (slash = node_name.find('/', start)) != std::string::npos; start = slash + 1) {
    parts.push_back(node_name.substr(start, slash - start));
  }  // the last component, the op ("Conv", "Relu_3"), is not a scope
  std::vector<std::string> path;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    std::string joined;
    for (const std::string& q : path) joined += (joined.empty() ? "" : ".") + q;
    if (!joined.empty() && p.rfind(joined + ".", 0) == 0) {
      path = {p};  // a full path from the root
    } else if (!path.empty() && p.rfind(path.back() + ".", 0) == 0) {
      path.back() = p;  // "layer1.0" inside "layer1"
    } else {
      path.push_back(p);
    }
  }
  std::string out;
  for (const std::string& q : path) out += (out.empty() ? "" : ".") + q;
  return plain_name(out) ? out : clean_name(out);
}

// NodeProto's metadata_props (IR version 10): field 9, unknown to libonnx 1.12's classes.
constexpr int kNodeMetadataProps = 9;

// The module path in the dynamo exporter's name_scopes of node `n`: the last scope before the FX
// node's own name ("layer1.0.relu" of "['', 'layer1', 'layer1.0', 'layer1.0.relu', 'relu_1']", ""
// for a node of the top module); nullopt where the node has none or it reads otherwise.
std::optional<std::string> metadata_scope(const pb::NodeProto& n) {
  const google::protobuf::UnknownFieldSet& fields = n.GetReflection()->GetUnknownFields(n);
  for (int k = 0; k < fields.field_count(); ++k) {
    const google::protobuf::UnknownField& f = fields.field(k);
    if (f.number() != kNodeMetadataProps ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    pb::StringStringEntryProto e;
    if (!e.ParseFromString(f.length_delimited()) || e.key() != "pkg.torch.onnx.name_scopes") {
      continue;
    }
    const std::string& v = e.value();
    if (v.size() < 4 || v.compare(0, 2, "['") != 0 || v.compare(v.size() - 2, 2, "']") != 0) {
      return std::nullopt;
    }
    std::vector<std::string> items;
    const std::string body = v.substr(2, v.size() - 4);
    for (size_t start = 0;;) {
      const size_t sep = body.find("', '", start);
      items.push_back(body.substr(start, sep == std::string::npos ? sep : sep - start));
      if (sep == std::string::npos) break;
      start = sep + 4;
    }
    if (items.size() < 2 || !items[0].empty()) return std::nullopt;
    if (items.size() == 2) return std::string();
    const std::string& path = items[items.size() - 2];
    return plain_name(path) ? path : clean_name(path);
  }
  return std::nullopt;
}

// The module path that `a` and `b` share, in whole components ("stage2.1" of "stage2.1" and
// "stage2.1.branch2.0"; "" of "stage2" and "stage3").
std::string common_scope(const std::string& a, const std::string& b) {
  size_t end = 0;
  for (size_t k = 0;; ++k) {
    if ((k == a.size() || a[k] == '.') && (k == b.size() || b[k] == '.')) end = k;
    if (k == a.size() || k == b.size() || a[k] != b[k]) break;
  }
  return a.substr(0, end);
}

// Whether `bias` is the name the dynamo exporter's optimizer gives the bias it makes for a
// convolution whose weight is `weight` (FuseBatchNormIntoConv, RemoveOptionalBiasFromConv).
bool made_bias_of(const std::string& bias, const std::string& weight) {
  return bias.size() == weight.size() + 5 && bias.compare(0, weight.size(), weight) == 0 &&
         bias.compare(weight.size(), 5, "_bias") == 0;
}

}  // namespace

LayerNames::LayerNames(const pb::GraphProto& graph, const std::vector<std::string>& tensors) {
  for (const std::string& t : tensors) {
    tensors_.insert(t);
    const size_t dot = t.rfind('.');
    if (dot != std::string::npos && dot > 0) reserved_.insert(t.substr(0, dot));
  }
  reserved_.insert("input");
  std::set<std::string> prefixes;  // every path and each of its '.'-prefixes
  bool any_metadata = false;       // the dynamo exporter's file
  for (const pb::NodeProto& n : graph.node()) {
    node_names_.push_back(n.name());
    const std::optional<std::string> from_metadata = metadata_scope(n);
    any_metadata = any_metadata || from_metadata.has_value();
    scoped_.push_back(from_metadata || (!n.name().empty() && n.name()[0] == '/'));
    scope_paths_.push_back(from_metadata ? *from_metadata : scope_path(n.name()));
    const std::string& p = scope_paths_.back();
    for (size_t dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1)) {
      prefixes.insert(p.substr(0, dot));
    }
  }
  for (const std::string& p : scope_paths_) scope_is_leaf_.push_back(!prefixes.count(p));
  if (any_metadata) scope_from_readers(graph);
}

// A node the dynamo exporter's optimizer made (a Split from a chunk's Slices) carries no
// name_scopes: it takes the scope its readers share ("stage2.1" of a Split read in
// "stage2.1.branch2.0" and "stage2.1"), as the module that called it, never as a leaf.
void LayerNames::scope_from_readers(const pb::GraphProto& graph) {
  std::unordered_map<std::string, std::vector<int>> readers;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& in : graph.node(i).input()) readers[in].push_back(i);
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    if (scoped_[static_cast<size_t>(i)]) continue;
    std::optional<std::string> common;
    bool all_scoped = true;
    for (const std::string& out : graph.node(i).output()) {
      for (int r : readers[out]) {
        all_scoped = all_scoped && scoped_[static_cast<size_t>(r)];
        const std::string& p = scope_paths_[static_cast<size_t>(r)];
        if (!common) {
          common = p;
          continue;
        }
        common = common_scope(*common, p);
      }
    }
    if (!common || !all_scoped) continue;
    scoped_[static_cast<size_t>(i)] = true;
    scope_paths_[static_cast<size_t>(i)] = *common;
    scope_is_leaf_[static_cast<size_t>(i)] = false;
  }
}

std::string LayerNames::from_node(int index, ir::OpKind op) const {
  const std::string op_name(ir::op_info(op).name);
  const std::string& scope = scope_paths_[static_cast<size_t>(index)];
  if (!scope.empty())
    return scope_is_leaf_[static_cast<size_t>(index)] ? scope : scope + "." + op_name;
  return op_name;
}

std::string LayerNames::fresh(const std::string& base) {
  auto taken = [&](const std::string& s) { return used_.count(s) > 0 || reserved_.count(s) > 0; };
  std::string name = base;
  for (int k = 1; taken(name); ++k) name = fmt::format("{}_{}", base, k);
  used_.insert(name);
  return name;
}

std::string LayerNames::name_for(int index, ir::OpKind op,
                                 const std::vector<ParamBinding>& params) {
  const std::string& node_name = node_names_[static_cast<size_t>(index)];
  if (!params.empty()) {
    // The prefix every parameter shares as "<prefix>.<suffix>".
    std::optional<std::string> prefix;
    const std::string* weight = nullptr;
    for (const ParamBinding& p : params) {
      if (p.suffix == "weight") weight = &p.seen_as;
    }
    for (const ParamBinding& p : params) {
      if (weight && p.suffix == "bias" && made_bias_of(p.seen_as, *weight)) continue;
      const std::string tail = "." + p.suffix;
      const std::string& s = p.seen_as;
      const bool ends =
          s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
      const std::string head = ends ? s.substr(0, s.size() - tail.size()) : "";
      if (!ends || (prefix && *prefix != head)) {
        prefix = "";
        break;
      }
      prefix = head;
    }
    if (prefix && plain_name(*prefix) && !used_.count(*prefix)) {
      used_.insert(*prefix);
      return *prefix;
    }
  }
  // A layer whose weight the exporter renamed takes its module path even though its bias keeps
  // the state_dict's name under that path: torch.onnx.export stores the transposed weight of a
  // Linear applied to more than two dims (ConvNeXt's) as "onnx::MatMul_565", and its bias as
  // "<path>.bias". No other tensor may claim the name as the layer's (no "<path>.weight").
  const std::string& scope = scope_paths_[static_cast<size_t>(index)];
  const bool claimed = std::any_of(params.begin(), params.end(), [&](const ParamBinding& p) {
    const std::string own = scope + "." + p.suffix;
    return tensors_.count(own) > 0 && p.seen_as != own;
  });
  if (!params.empty() && !scope.empty() && scope_is_leaf_[static_cast<size_t>(index)] &&
      reserved_.count(scope) && !used_.count(scope) && !claimed) {
    used_.insert(scope);
    return scope;
  }
  if (node_name.empty() || scoped_[static_cast<size_t>(index)]) return fresh(from_node(index, op));
  const std::string cleaned = clean_name(node_name);
  return fresh(cleaned.empty() ? std::string(ir::op_info(op).name) : cleaned);
}

}  // namespace zoc::onnx::detail
