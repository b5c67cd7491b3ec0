// The ONNX frontend's core: walk a checked graph in its (topological) node order and map each
// node that the output depends on through the op table.
//
// Every ONNX value name stands for an activation (an IR value), a constant (an initializer, a
// bound input, a Constant node's value, or any of these through Identity) or a poisoned result
// of a node already reported. Op handlers (ops_*.cpp) see their node through NodeContext, and a
// constant that becomes a layer's weight is bound to the IR node as a parameter, so that the
// weights the model carries come out under the IR's names. Nodes whose results reach no graph
// output are not translated (an exporter's leftovers should not make a model unsupported).
// Unsupported nodes do not stop the walk: every one of them is listed in one error. At the end
// the graph's shapes are inferred once to check what the file declares against what the IR
// computes: each parameter's shape, and the graph output's.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/ir/shapes.h"

namespace zoc::onnx {
namespace detail {
namespace {

// Frees a decoded tensor's data (clear() would keep the capacity).
void release_data(pb::TensorProto& t) {
  std::string().swap(*t.mutable_raw_data());
  google::protobuf::RepeatedField<float>().Swap(t.mutable_float_data());
  google::protobuf::RepeatedField<double>().Swap(t.mutable_double_data());
  google::protobuf::RepeatedField<int32_t>().Swap(t.mutable_int32_data());
  google::protobuf::RepeatedField<int64_t>().Swap(t.mutable_int64_data());
}

constexpr size_t kMaxListedProblems = 40;

std::string shape_str(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

// "[N, 3, 224, 224]" for a value's declared shape, '?' for what it leaves open.
std::string declared_str(const pb::TypeProto& t) {
  std::vector<std::string> d;
  for (const pb::TensorShapeProto::Dimension& dim : t.tensor_type().shape().dim()) {
    d.push_back(dim.has_dim_value()   ? std::to_string(dim.dim_value())
                : dim.has_dim_param() ? shown_text(dim.dim_param())
                                      : "?");
  }
  return fmt::format("[{}]", fmt::join(d, ", "));
}

}  // namespace

Translator::Translator(ModelFile& model, const std::string& path, const Options& options,
                       Diagnostics& diags)
    : model_(model), g_(model.proto.graph()), path_(path), options_(options), diags_(diags) {}

const Val& Translator::get(const std::string& name) const {
  static const Val kPoison{};
  auto it = env_.find(name);
  return it == env_.end() ? kPoison : it->second;
}

void Translator::bind(const std::string& name, Val v) {
  if (v.is(Val::Kind::kActivation)) names_of_value_[v.id].push_back(name);
  env_[name] = std::move(v);
}

bool Translator::run(Model& out) {
  const size_t errors_before = diags_.error_count();
  graph_.name = std::filesystem::path(path_).stem().string();
  if (!bind_graph_inputs()) return false;
  names_.emplace(g_, tensor_names_);
  mark_needed();
  for (int i = 0; i < g_.node_size() && !fatal_; ++i) {
    if (needed_[static_cast<size_t>(i)]) step(i);
  }
  report_problems();
  if (fatal_ || diags_.error_count() != errors_before) return false;
  if (!finish_output()) return false;
  check_params();
  if (diags_.error_count() != errors_before) return false;
  for (const auto& [v, scale] : int8_scales_) out.int8_scales[graph_.value_name(v)] = scale;
  return collect_weights(out);
}

// Initializers and bound inputs become constants; the one remaining graph input, the image.
bool Translator::bind_graph_inputs() {
  const SourceLoc at{path_, 0, 0};
  const size_t errors_before = diags_.error_count();
  std::set<std::string> initializers;
  auto& tensors = *model_.proto.mutable_graph()->mutable_initializer();
  for (int k = 0; k < tensors.size(); ++k) {
    pb::TensorProto& t = tensors[k];
    const auto& external = model_.external_initializers[static_cast<size_t>(k)];
    auto c = external ? read_external_floats(t, *external) : decode_tensor(t);
    release_data(t);  // decoded: the values are not held twice (issue 31)
    if (!c) {
      diags_.error(at,
                   fmt::format("initializer '{}': {}", shown_text(t.name()), c.error().message));
      continue;
    }
    initializers.insert(t.name());
    tensor_names_.push_back(t.name());
    env_[t.name()] = Val::known(std::make_shared<Constant>(std::move(*c)), t.name());
  }
  std::set<std::string> inputs;
  for (const pb::ValueInfoProto& v : g_.input()) inputs.insert(v.name());
  std::set<std::string> bound;
  for (const auto& [name, bytes] : options_.bound_inputs) {
    pb::TensorProto t;
    auto c = t.ParseFromString(bytes) ? decode_tensor(t)
                                      : Expected<Constant>(Error{"not a TensorProto"});
    if (!inputs.count(name) || initializers.count(name) || !c) {
      diags_.error(at,
                   fmt::format("cannot bind graph input '{}' to a constant: {}", shown_text(name),
                               !c ? c.error().message : "the graph has no such input"));
      continue;
    }
    bound.insert(name);
    tensor_names_.push_back(name);
    env_[name] = Val::known(std::make_shared<Constant>(std::move(*c)), name);
  }
  std::vector<const pb::ValueInfoProto*> data;
  for (const pb::ValueInfoProto& v : g_.input()) {
    if (bound.count(v.name())) continue;
    if (!initializers.count(v.name())) {
      data.push_back(&v);
    } else if (model_.proto.ir_version() >= 4) {
      // Since IR version 4 an initializer that is also an input is only a default, which
      // callers may replace at run time; zoc compiles weights in and has one input.
      diags_.error(at, fmt::format("graph input '{}' is shadowed by an initializer of the same "
                                   "name, which makes it a default a caller may override at "
                                   "run time; zoc compiles initializers into the model, so "
                                   "remove '{}' from the graph's inputs (torch.onnx.export: "
                                   "keep_initializers_as_inputs=False)",
                                   shown_text(v.name()), shown_text(v.name())));
    }
  }
  if (diags_.error_count() != errors_before) return false;
  if (data.size() != 1) {
    report_inputs(data);
    return false;
  }
  return add_input_node(*data[0]);
}

// Why a graph with other than one input to feed is refused. A model exported without its
// weights (torch.onnx.export(..., export_params=False)) has them as graph inputs, which nodes
// read only as their second or later input (a Conv's W, a Gemm's B), directly or through
// Identity nodes: said so, not listed whole (issue 32 found 43 names and no reason).
void Translator::report_inputs(const std::vector<const pb::ValueInfoProto*>& data) {
  const SourceLoc at{path_, 0, 0};
  if (data.empty()) {
    diags_.error(at, "the graph has no input left to feed (every input is an initializer)");
    return;
  }
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> readers;  // (node, input)
  for (int i = 0; i < g_.node_size(); ++i) {
    for (int k = 0; k < g_.node(i).input_size(); ++k)
      readers[g_.node(i).input(k)].push_back({i, k});
  }
  // An Identity's output is judged before its input: its readers come after it (structure.cpp
  // checked the order), so a walk from the last node back needs no recursion.
  std::unordered_map<std::string, bool> through_identity;
  auto read_as_weight = [&](const std::string& name) {
    const auto& r = readers[name];
    bool weight = !r.empty();
    for (auto [node, k] : r) {
      const pb::NodeProto& n = g_.node(node);
      const bool identity = n.op_type() == "Identity" && n.output_size() == 1;
      weight = weight && (identity ? through_identity[n.output(0)] : k >= 1);
    }
    return weight;
  };
  for (int i = g_.node_size(); i-- > 0;) {
    const pb::NodeProto& n = g_.node(i);
    if (n.op_type() == "Identity" && n.output_size() == 1) {
      through_identity[n.output(0)] = read_as_weight(n.output(0));
    }
  }
  std::vector<std::string> weights, others;
  for (const pb::ValueInfoProto* v : data) {
    (read_as_weight(v->name()) ? weights : others).push_back("'" + shown_text(v->name()) + "'");
  }
  auto listed = [](const std::vector<std::string>& names) {
    const size_t shown = std::min<size_t>(names.size(), 6);
    return fmt::format(
        "{}{}", fmt::join(names.begin(), names.begin() + static_cast<long>(shown), ", "),
        names.size() > shown ? fmt::format(" and {} more", names.size() - shown) : "");
  };
  if (others.size() == 1 && !weights.empty()) {
    diags_.error(at,
                 fmt::format("the graph has {} inputs: {} and {} that nodes read as weights ({}): "
                             "the model's weights are graph inputs, not initializers, so the "
                             "file carries none (torch.onnx.export(..., export_params=False)); "
                             "export it with export_params=True, the default",
                             data.size(), others[0], weights.size(), listed(weights)));
    return;
  }
  others.insert(others.end(), weights.begin(), weights.end());
  diags_.error(at, fmt::format("the graph has {} inputs ({}); zoc compiles models with one input, "
                               "an image [N, C, H, W]",
                               data.size(), listed(others)));
}

bool Translator::add_input_node(const pb::ValueInfoProto& input) {
  const SourceLoc at{fmt::format("{}: graph input '{}'", path_, shown_text(input.name())), 0, 0};
  if (!input.type().has_tensor_type()) {
    diags_.error(at, "it is not a tensor");
    return false;
  }
  const pb::TypeProto::Tensor& tt = input.type().tensor_type();
  if (tt.elem_type() != pb::TensorProto::FLOAT) {
    diags_.error(at, fmt::format("it is of type {}; zoc's input is a float32 image [N, C, H, W]",
                                 elem_type_name(tt.elem_type())));
    return false;
  }
  const auto& dim = tt.shape().dim();
  if (tt.has_shape() && dim.size() != 4) {
    diags_.error(at, fmt::format("it has rank {} ({}); zoc compiles models whose input is an "
                                 "image [N, C, H, W]",
                                 dim.size(), declared_str(input.type())));
    return false;
  }
  if (tt.has_shape() && dim[0].has_dim_value()) {
    // Shape arithmetic folds a fixed batch as a number: -1 would read as Reshape's "infer this
    // dimension", 2^62 overflow a product (both accepted before issue 31).
    batch_ = dim[0].dim_value();
    if (*batch_ < 1 || *batch_ > ir::kMaxBatch) {
      diags_.error(at, fmt::format("its batch size is {} ({}): a fixed batch size is between 1 "
                                   "and {}; a dynamic one is named (dim_param)",
                                   *batch_, declared_str(input.type()), ir::kMaxBatch));
      return false;
    }
  }
  const char* what[] = {"channels", "height", "width"};
  std::array<int64_t, 3> d{};
  for (int k = 0; k < 3; ++k) {
    const bool known = tt.has_shape() && dim[k + 1].has_dim_value();
    const int64_t declared = known ? dim[k + 1].dim_value() : 0;
    if (options_.input_dims) {
      d[static_cast<size_t>(k)] = (*options_.input_dims)[static_cast<size_t>(k)];
      if (known && declared != d[static_cast<size_t>(k)]) {
        diags_.error(at, fmt::format("--input gives {} {}, but the model's input is {}", what[k],
                                     d[static_cast<size_t>(k)], declared_str(input.type())));
        return false;
      }
      dims_overridden_ = dims_overridden_ || !known;
    } else if (!known) {
      diags_.error(at, fmt::format("its {} is not fixed ({}): give the input size with --input "
                                   "CxHxW",
                                   what[k], declared_str(input.type())));
      return false;
    } else {
      d[static_cast<size_t>(k)] = declared;
    }
  }
  ir::Attrs attrs;
  for (int k = 0; k < 3; ++k) attrs.set(what[k], int_attr(d[static_cast<size_t>(k)]));
  const int32_t node = graph_.add_node(ir::OpKind::Input, "input", {}, attrs, at);
  Val v = Val::activation(graph_.nodes[static_cast<size_t>(node)].output);
  v.name = input.name();
  bind(input.name(), std::move(v));
  return true;
}

void Translator::mark_needed() {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g_.node_size(); ++i) {
    for (const std::string& o : g_.node(i).output()) {
      if (!o.empty()) producer.emplace(o, i);
    }
  }
  needed_.assign(static_cast<size_t>(g_.node_size()), false);
  std::vector<std::string> work;
  for (const pb::ValueInfoProto& v : g_.output()) {
    graph_outputs_.insert(v.name());
    work.push_back(v.name());
  }
  while (!work.empty()) {
    auto it = producer.find(work.back());
    work.pop_back();
    if (it == producer.end() || needed_[static_cast<size_t>(it->second)]) continue;
    needed_[static_cast<size_t>(it->second)] = true;
    for (const std::string& in : g_.node(it->second).input()) {
      if (!in.empty()) work.push_back(in);
    }
  }
  for (int i = 0; i < g_.node_size(); ++i) {
    if (!needed_[static_cast<size_t>(i)]) continue;
    for (const std::string& in : g_.node(i).input()) {
      if (!in.empty()) ++readers_[in];
    }
  }
}

void Translator::step(int index) {
  const pb::NodeProto& n = g_.node(index);
  const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
  const Handler handler = default_domain ? find_handler(n.op_type()) : nullptr;
  bool poisoned = false, partial = false;
  for (const std::string& in : n.input()) {
    poisoned = poisoned || (!in.empty() && get(in).is(Val::Kind::kPoison));
    partial = partial || (!in.empty() && get(in).is(Val::Kind::kPartial));
  }
  if (!handler) {
    // Listed even when its inputs are poisoned, so that every unsupported node is.
    problems_.push_back({index, default_domain
                                    ? std::string()
                                    : fmt::format("an op of domain '{}'", shown_text(n.domain()))});
  } else if (!poisoned) {
    NodeContext c(*this, n, index);
    // A step of a decomposed op goes to the next step's handler; arithmetic on constants (shape
    // computations) is done now. Either way the op type is one the table maps.
    const Handler h = partial                  ? decomposed_step
                      : all_inputs_constant(c) ? constant_handler(n.op_type())
                                               : nullptr;
    const size_t before = problems_.size();
    if (!(h ? h : handler)(c) && problems_.size() == before && !fatal_) {
      problems_.push_back({index, ""});
    }
  }
  // Outputs a handler did not set (a failed node, or unused extra outputs) stay poisoned.
}

void Translator::report_problems() {
  if (problems_.empty()) return;
  std::string list;
  for (size_t i = 0; i < problems_.size() && i < kMaxListedProblems; ++i) {
    const Problem& p = problems_[i];
    list += "\n  " + describe_node(g_.node(p.node), p.node) + (p.why.empty() ? "" : ": " + p.why);
  }
  if (problems_.size() > kMaxListedProblems) {
    list += fmt::format("\n  ... and {} more", problems_.size() - kMaxListedProblems);
  }
  std::vector<std::string_view> ops = mapped_op_types();
  diags_.error(SourceLoc{path_, 0, 0},
               fmt::format("{} unsupported node{} (zoc maps {}):{}", problems_.size(),
                           problems_.size() == 1 ? "" : "s", fmt::join(ops, ", "), list));
}

// Every graph output becomes a model output, in the file's order (torchvision's segmentation
// networks give 'out' and 'aux'); each must be a float32 activation computed from the input, or
// an ArgMax's int64 indices (a class map), which zoc writes as float32.
bool Translator::finish_output() {
  const SourceLoc at{path_, 0, 0};
  if (g_.output_size() == 0) {
    diags_.error(at, "the graph has no output");
    return false;
  }
  graph_.outputs.clear();
  for (const pb::ValueInfoProto& o : g_.output()) {
    const Val& v = get(o.name());
    if (!v.is(Val::Kind::kActivation) || graph_.values[static_cast<size_t>(v.id)].producer == 0) {
      diags_.error(at,
                   fmt::format("graph output '{}' is {}: the model computes nothing from its "
                               "input",
                               shown_text(o.name()),
                               v.is(Val::Kind::kConstant) ? "a constant" : "the graph's input"));
      return false;
    }
    const int32_t type = o.type().tensor_type().elem_type();
    const bool indices =
        graph_.producer(v.id).op == ir::OpKind::Argmax && type == pb::TensorProto::INT64;
    if (o.type().has_tensor_type() && type != pb::TensorProto::FLOAT && !indices) {
      diags_.error(at, fmt::format("graph output '{}' is of type {}; zoc's output is float32",
                                   shown_text(o.name()), elem_type_name(type)));
      return false;
    }
    if (std::find(graph_.outputs.begin(), graph_.outputs.end(), v.id) != graph_.outputs.end()) {
      diags_.error(at, fmt::format("graph output '{}' is another output of the graph again; zoc "
                                   "gives each output a buffer of its own",
                                   shown_text(o.name())));
      return false;
    }
    graph_.outputs.push_back(v.id);
  }
  return true;
}

// The shapes the IR computes against those the file holds: every bound parameter's, and the
// graph output's where the file declares it (the output of a model whose input size came from
// --input may legitimately differ from what it declares for another size).
void Translator::check_params() {
  if (!ir::infer_shapes(graph_, diags_)) return;
  for (const auto& [index, bindings] : params_) {
    const ir::Node& node = graph_.nodes[static_cast<size_t>(index)];
    for (const ir::ParamSpec& p : node.params) {
      const bool bound = std::any_of(bindings.begin(), bindings.end(), [&](const ParamBinding& b) {
        return node.name + "." + b.suffix == p.name;
      });
      if (!bound && !p.optional) {
        diags_.error(node.loc,
                     fmt::format("layer '{}' ({}) needs tensor '{}', which the model does "
                                 "not give it",
                                 node.name, ir::op_info(node.op).name, p.name));
      }
    }
    for (const ParamBinding& b : bindings) {
      std::vector<int64_t> have = b.value->dims;
      if (b.transpose && have.size() == 2) std::swap(have[0], have[1]);
      const std::string name = node.name + "." + b.suffix;
      auto spec = std::find_if(node.params.begin(), node.params.end(),
                               [&](const ir::ParamSpec& p) { return p.name == name; });
      if (spec == node.params.end() || spec->shape == have) continue;
      diags_.error(
          node.loc,
          fmt::format("{} '{}' has shape {}{}, but layer '{}' ({}) needs {} for "
                      "its {}",
                      b.seen_as == b.value->name ? "initializer" : "tensor", shown_text(b.seen_as),
                      shape_str(b.value->dims), b.transpose ? " (transposed for the layer)" : "",
                      node.name, ir::op_info(node.op).name, shape_str(spec->shape), b.suffix));
    }
  }
  if (dims_overridden_) return;
  for (int k = 0; k < g_.output_size(); ++k) check_declared_output(g_.output(k), graph_.outputs[k]);
}

// One graph output's declared shape against the one zoc computes, where the file declares it.
void Translator::check_declared_output(const pb::ValueInfoProto& o, ir::ValueId id) {
  if (!o.type().tensor_type().has_shape()) return;
  const auto& dim = o.type().tensor_type().shape().dim();
  const ir::TensorType& t = graph_.type(id);
  bool same = static_cast<size_t>(dim.size()) == t.dims.size() + 1;
  for (size_t k = 0; same && k < t.dims.size(); ++k) {
    const auto& d = dim[static_cast<int>(k + 1)];
    same = !d.has_dim_value() || d.dim_value() == t.dims[k];
  }
  if (!same) {
    const ir::Node& last = graph_.producer(id);
    diags_.error(last.loc, fmt::format("the model declares its output '{}' as {}, but zoc computes "
                                       "N x {}: zoc would not compute what the model does",
                                       shown_text(o.name()), declared_str(o.type()),
                                       fmt::join(t.dims, " x ")));
  }
}

// The bound tensors' values become the weights, each held once: the walk's values are dropped
// first, so a binding that holds its constant alone moves the values out (a model with 1 GB of
// external data needed 3 GB before issue 31: the file's bytes, the decoded values, this copy).
//
// A node whose parameters are, tensor for tensor, an earlier layer's (a module the exported graph
// runs twice: two Convs reading one initializer) reads that layer's (ir::Node::weights_of), as
// the TorchScript frontend's second call of a layer does, rather than a copy of its own: one
// tensor, which training refuses to differentiate twice instead of updating two copies apart.
bool Translator::collect_weights(Model& out) {
  env_.clear();
  auto same = [](const std::vector<ParamBinding>& a, const std::vector<ParamBinding>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
      return x.suffix == y.suffix && x.value == y.value && x.transpose == y.transpose;
    });
  };
  std::map<const Constant*, std::vector<int32_t>> owners;  // by their first tensor
  for (auto& [index, bindings] : params_) {
    if (bindings.empty()) continue;
    ir::Node& node = graph_.nodes[static_cast<size_t>(index)];
    std::vector<int32_t>& candidates = owners[bindings[0].value.get()];
    for (int32_t k : candidates) {
      const ir::Node& owner = graph_.nodes[static_cast<size_t>(k)];
      if (owner.op == node.op && same(params_[k], bindings)) {
        node.weights_of = owner.name;
        break;
      }
    }
    if (node.weights_of.empty()) {
      candidates.push_back(index);
    } else {
      bindings.clear();  // its owner's values serve it
    }
  }
  for (auto& [index, bindings] : params_) {
    const ir::Node& node = graph_.nodes[static_cast<size_t>(index)];
    for (ParamBinding& b : bindings) {
      std::vector<float> values;
      if (b.value.use_count() == 1 && !b.transpose) {
        values = std::move(const_cast<Constant&>(*b.value).f);  // made non-const: internal.h
      } else {
        values = b.value->f;
      }
      if (b.transpose) {  // [rows, cols] -> [cols, rows]
        const size_t rows = static_cast<size_t>(b.value->dims[0]),
                     cols = static_cast<size_t>(b.value->dims[1]);
        for (size_t r = 0; r < rows; ++r) {
          for (size_t c = 0; c < cols; ++c) values[c * rows + r] = b.value->f[r * cols + c];
        }
      }
      const size_t bad = static_cast<size_t>(
          std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); }));
      if (bad > 0) {
        diags_.warning(node.loc, fmt::format("tensor '{}' holds {} NaN or infinite value{}",
                                             shown_text(b.seen_as), bad, bad == 1 ? "" : "s"));
      }
      out.weights.tensors[node.name + "." + b.suffix] = std::move(values);
      b.value.reset();
    }
  }
  out.graph = std::move(graph_);
  return true;
}

// Shapes come from the IR's own shape rules, run on the nodes added since the last call when a
// handler needs them (a rank check, a flatten, a weight's expected size), so each node is
// inferred once. Handlers that rewrite an earlier node (a bias taken into its layer, a gate
// turned into SiLU) keep its output's shape; check_params infers the whole graph again. A shape
// error stops the walk.
const std::vector<int64_t>* Translator::dims(ir::ValueId v) {
  if (v < 0 || static_cast<size_t>(v) >= graph_.values.size()) return nullptr;
  if (!graph_.values[static_cast<size_t>(v)].type) {
    Diagnostics scratch;
    const bool ok = ir::infer_shapes_from(graph_, typed_nodes_, scratch);
    typed_nodes_ = graph_.nodes.size();
    if (!ok || !graph_.values[static_cast<size_t>(v)].type) {
      if (!fatal_) diags_.merge(scratch);
      fatal_ = true;
      return nullptr;
    }
  }
  return &graph_.values[static_cast<size_t>(v)].type->dims;
}

}  // namespace detail

std::optional<Model> load_model(const std::string& path, const Options& options,
                                Diagnostics& diags) {
  auto file = detail::read_model(path, diags);
  if (!file) return std::nullopt;
  Model out;
  detail::Translator t(*file, path, options, diags);
  if (!t.run(out)) return std::nullopt;
  return out;
}

std::vector<std::string_view> mapped_op_types() {
  std::vector<std::string_view> out;
  for (std::span<const detail::OpEntry> table :
       {detail::layer_ops(), detail::tensor_ops(), detail::zoo_ops(), detail::decomposed_ops(),
        detail::shape_ops(), detail::dense_ops(), detail::eca_ops(), detail::radix_ops(),
        detail::qdq_ops()}) {
    for (const detail::OpEntry& e : table) {
      if (std::find(out.begin(), out.end(), e.op_type) == out.end()) out.emplace_back(e.op_type);
    }
  }
  return out;
}

detail::Handler detail::find_handler(const std::string& op_type) {
  for (const OpEntry& e : radix_ops()) {
    if (op_type == e.op_type) return e.handler;
  }
  return eca_handler(op_type);
}

detail::Handler detail::eca_handler(const std::string& op_type) {
  for (const OpEntry& e : eca_ops()) {
    if (op_type == e.op_type) return e.handler;
  }
  return dense_handler(op_type);
}

detail::Handler detail::dense_handler(const std::string& op_type) {
  for (const OpEntry& e : dense_ops()) {
    if (op_type == e.op_type) return e.handler;
  }
  return base_handler(op_type);
}

detail::Handler detail::base_handler(const std::string& op_type) {
  for (std::span<const OpEntry> table :
       {layer_ops(), tensor_ops(), zoo_ops(), decomposed_ops(), shape_ops(), qdq_ops()}) {
    for (const OpEntry& e : table) {
      if (op_type == e.op_type) return e.handler;
    }
  }
  return nullptr;
}

}  // namespace zoc::onnx
