// The TorchScript frontend's core: run a module's `forward` symbolically and record the tensor
// ops it performs as IR nodes.
//
// Why symbolic execution, and how layers get their names. zoc's weights are PyTorch state_dict
// names, so the IR node of a layer with parameters must be named exactly like the module that
// owns them ("layer1.0.conv1", "layer1.0.downsample.0", "fc"), whether the file came from
// torch.jit.script or torch.jit.trace. Freezing the module would fold those parameters into
// anonymous constants, and inlining keeps module paths only in call-stack side tables that
// name a submodule by its last attribute alone. Instead this file walks the *non-inlined*
// graphs itself, starting from the root module's `forward`:
//   - every value is known symbolically (internal.h, Val): a constant, a module object with its
//     path, a parameter with its state_dict name, an activation (an IR value), the batch size,
//     a list or a dict (dicts.cpp) holding such values;
//   - prim::GetAttr on a module yields a submodule or a parameter, so every name is the real
//     attribute path from the root, exactly what state_dict prints;
//   - prim::CallMethod / prim::CallFunction are entered like an interpreter would (with the
//     callee's module path for methods), so the module whose code runs is always known;
//   - prim::If and prim::Loop take the branch / iteration their now-constant conditions select
//     (training flags, `downsample is not None`, rank checks on the known input shape);
//   - scalar ops whose inputs are all constants run through LibTorch's own kernels (constant
//     folding: the strides, paddings and flags TorchScript leaves as values);
//   - each tensor op is mapped by its handler in aten_ops.cpp.
// A node with parameters is named after the layer its weight belongs to ("<layer>.weight"). A
// parameter-free node is named after the module whose code runs it if that module has no
// submodules (`layer1.0.relu`, `maxpool`), else that module's path plus the op (`layer1.0.add`,
// `flatten` at the top level); a second use of the same name gets `_1`, `_2`, ... (FX's rule:
// Bottleneck's one ReLU module gives layer1.0.relu, layer1.0.relu_1, layer1.0.relu_2).
// Locations: the innermost source position outside PyTorch's own Python files (for a scripted
// ResNet, `out = self.conv1(x)` in torchvision's resnet.py; for a traced one, where the tracer
// recorded it). Unsupported operations do not stop the walk: all of them are reported together.
//
// This file walks the graphs (calls, branches, loops, attributes); translate_values.cpp gives
// every other node its value (lists and sizes, constant folding, tensor ops through aten_ops.cpp)
// and translate_report.cpp says where a node comes from, names layers and reports problems.
#include <filesystem>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript::detail {
namespace {

using Kind = Val::Kind;
namespace prim = c10::prim;
namespace aten = c10::aten;

constexpr size_t kMaxCallDepth = 64;
constexpr int64_t kMaxSteps = 2'000'000;  // interpreted nodes: bounds loops that do not end

}  // namespace

Translator::Translator(const jit::Module& root, const std::string& path, const Options& options,
                       Diagnostics& diags)
    : root_(root), path_(path), options_(options), diags_(diags) {
  for (const auto& p : root_.named_parameters(/*recurse=*/true)) {
    state_[p.name] = p.value;
    if (!p.value.requires_grad()) frozen_.insert(p.name);
  }
  for (const auto& b : root_.named_buffers(/*recurse=*/true)) state_[b.name] = b.value;
  for (const auto& entry : state_) {
    const size_t dot = entry.first.rfind('.');
    if (dot != std::string::npos) reserved_names_.insert(entry.first.substr(0, dot));
  }
  reserved_names_.insert("input");
}

namespace {

// A tuple of two or more activations, none a view (`return out, aux`): one output each. (A
// tuple holding None, GoogLeNet's, is take_main_output's.)
bool several_outputs(const Val& result) {
  if (!result.is(Kind::kList) || result.items.size() < 2) return false;
  for (const Val& item : result.items) {
    if (!item.is(Kind::kTensor) || item.view != Val::View::kNone) return false;
  }
  return true;
}

// A value among forward's results (or in their tuples and dicts) that zoc does not compute.
const Val* unavailable_in(const std::vector<Val>& results) {
  for (const Val& r : results) {
    if (r.is(Kind::kUnavailable)) return &r;
    const bool holds = r.is(Kind::kList) || r.is(Kind::kDict);
    if (const Val* u = holds ? unavailable_in(r.items) : nullptr) return u;
  }
  return nullptr;
}

}  // namespace

bool Translator::run(ir::Graph& out) {
  const size_t errors_before = diags_.error_count();
  const SourceLoc at{path_, 0, 0};
  graph_.name = std::filesystem::path(path_).stem().string();
  jit::Function* forward = root_.type()->findMethod("forward");
  if (!forward || !forward->isGraphFunction()) {
    diags_.error(at, "the module has no TorchScript `forward` method");
    return false;
  }
  jit::Graph& g = *jit::toGraphFunction(*forward).graph();
  if (g.inputs().size() != 2 || g.inputs()[1]->type()->kind() != c10::TypeKind::TensorType) {
    diags_.error(at, fmt::format("forward takes {} argument(s); zoc compiles models whose forward "
                                 "takes one image tensor",
                                 g.inputs().empty() ? 0 : g.inputs().size() - 1));
    return false;
  }
  if (!options_.input_dims) {
    diags_.error(at, "a TorchScript model has no static input shape: give it with --input CxHxW");
    return false;
  }
  const std::array<int64_t, 3>& d = *options_.input_dims;
  ir::Attrs input_attrs;
  input_attrs.set("channels", int_attr(d[0]));
  input_attrs.set("height", int_attr(d[1]));
  input_attrs.set("width", int_attr(d[2]));
  const int32_t input = graph_.add_node(ir::OpKind::Input, "input", {}, input_attrs, at);
  used_names_.insert("input");

  Val self;
  self.kind = Kind::kModule;
  self.value = root_._ivalue();
  Val image = Val::activation(graph_.nodes[input].output);
  new_storage(image);
  std::vector<Val> results;
  run_graph(g, {self, std::move(image)}, Frame{"", is_leaf(self.value), {}}, results);

  if (!problems_.empty()) report_problems(at);
  if (fatal_ || diags_.error_count() != errors_before) return false;
  if (const Val* u = unavailable_in(results)) {
    diags_.error(at, fmt::format("forward returns {}, which zoc does not compute", u->name));
    return false;
  }
  if (results.size() == 1 && several_outputs(results[0])) {  // issue 37: `return out, aux`
    for (const Val& item : results[0].items) graph_.outputs.push_back(item.id);
  } else if (results.size() == 1 && results[0].is(Kind::kDict)) {  // {'out': ..., 'aux': ...}
    if (!dict_outputs(results[0], at)) return false;
  } else {
    if (results.size() == 1) take_main_output(results[0], at);
    if (results.size() != 1 || !results[0].is(Kind::kTensor) ||
        results[0].view != Val::View::kNone) {
      diags_.error(
          at, fmt::format("forward returns {}; zoc compiles models that return one tensor or a "
                          "tuple of tensors",
                          results.size() == 1 && results[0].is(Kind::kList)
                              ? fmt::format("a tuple or list of {} values", results[0].items.size())
                              : std::string("something other than a tensor")));
      return false;
    }
    graph_.outputs = {results[0].id};
  }
  check_parameters();
  if (diags_.error_count() != errors_before) return false;
  out = std::move(graph_);
  return true;
}

// A scripted GoogLeNet or Inception v3 returns a namedtuple (GoogLeNetOutputs(logits, aux2,
// aux1), InceptionOutputs(logits, aux)) whatever its mode, with the auxiliary heads None in
// eval mode; zoc compiles the logits and says so. A tuple whose first item is not an activation,
// or whose others are neither None nor activations (auxiliary heads), stays an error.
void Translator::take_main_output(Val& result, const SourceLoc& at) {
  if (!result.is(Kind::kList) || result.items.size() < 2 || !result.items[0].is(Kind::kTensor)) {
    return;
  }
  size_t none = 0;
  for (size_t i = 1; i < result.items.size(); ++i) {
    const Val& item = result.items[i];
    const bool is_none = item.is(Kind::kConst) && item.value.isNone();
    if (!is_none && !item.is(Kind::kTensor)) return;
    none += is_none ? 1 : 0;
  }
  const size_t rest = result.items.size() - 1;
  diags_.note(at, fmt::format("forward returns a tuple of {} values (as scripted GoogLeNet and "
                              "Inception v3 do); zoc compiles the first, the model's output, and "
                              "leaves out the other {}, {}",
                              rest + 1, rest,
                              none == rest ? "which are None (auxiliary heads in eval mode)"
                                           : "auxiliary heads or None"));
  Val first = result.items[0];
  result = std::move(first);
}

void Translator::run_graph(jit::Graph& graph, std::vector<Val> args, const Frame& frame,
                           std::vector<Val>& results) {
  results.clear();
  if (frames_.size() >= kMaxCallDepth) {
    diags_.error(SourceLoc{path_, 0, 0},
                 fmt::format("calls nested more than {} deep", kMaxCallDepth));
    fatal_ = true;
    return;
  }
  frames_.push_back(frame);
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    set(graph.inputs()[i], i < args.size() ? std::move(args[i]) : Val{});
  }
  run_block(graph.block());
  for (jit::Value* v : graph.outputs()) {
    refresh_value(v, graph.return_node());
    results.push_back(get(v));
  }
  frames_.pop_back();
}

void Translator::run_block(jit::Block* block) {
  for (jit::Node* n : block->nodes()) {
    if (fatal_) return;
    step(n);
  }
}

void Translator::step(jit::Node* n) {
  if (++steps_ > kMaxSteps) {
    error(n, fmt::format("forward runs more than {} operations (a loop that does not end?)",
                         kMaxSteps));
    return;
  }
  if (!refresh_inputs(n)) return;  // values written in place since they were made
  const c10::Symbol k = n->kind();
  if (k == prim::Constant) {
    auto v = jit::toIValue(n->output());
    set(n->output(), Val::constant(v ? *v : c10::IValue()));
  } else if (k == prim::GetAttr) {
    get_attr(n);
  } else if (k == prim::CallMethod || k == prim::CallFunction) {
    call(n, k == prim::CallMethod);
  } else if (k == prim::If) {
    run_if(n);
  } else if (k == prim::Loop) {
    run_loop(n);
  } else if (k == prim::RaiseException) {
    const Val& m = get(n->input(0));
    error(n,
          fmt::format("forward raises an exception for this input: {}",
                      m.is(Kind::kConst) && m.value.isString() ? shown_text(m.value.toStringRef())
                                                               : "(message unknown)"));
  } else if (k == aten::warn || k == prim::Print) {
    // No effect on the result.
  } else if (k == prim::Uninitialized) {
    set(n->output(), Val::constant(c10::IValue()));
  } else if (!structural(n)) {
    run_op(n);
  }
  register_lists(n);
}

void Translator::get_attr(jit::Node* n) {
  const Val obj = get(n->input(0));
  const std::string attr = n->s(jit::attr::name);
  if (obj.is(Kind::kPoison)) return poison_outputs(n);
  if (!obj.value.isObject()) return unsupported(n, "attribute of a value that is not an object");
  if (shown_text(attr) != attr) {  // control bytes, bidirectional overrides, '\\'
    return error(n, fmt::format("attribute '{}' has a name that zoc cannot print as it is, so "
                                "it is no layer or tensor name zoc accepts",
                                shown_text(attr)));
  }
  const c10::intrusive_ptr<c10::ivalue::Object> object = obj.value.toObject();
  const c10::ClassTypePtr type = object->type();
  const c10::optional<size_t> slot = type->findAttributeSlot(attr);
  if (!slot) {
    return error(n,
                 fmt::format("'{}' has no attribute '{}'", shown_text(obj.name), shown_text(attr)));
  }
  c10::IValue v = object->getSlot(*slot);
  if (attr == "training" && v.isBool() && v.toBool()) read_training_ = true;
  Val out;
  if (obj.is(Kind::kModule) && v.isObject() && v.toObject()->type()->is_module()) {
    out.kind = Kind::kModule;
    out.value = std::move(v);
    out.name = join_path(obj.name, attr);
  } else if (obj.is(Kind::kModule) && v.isTensor()) {
    out.kind = Kind::kParam;
    out.name = join_path(obj.name, attr);
    out.tensor = v.toTensor();
    out.parameter = type->is_parameter(*slot);
    out.in_state_dict = out.parameter || type->is_buffer(*slot);
  } else {
    out = Val::constant(std::move(v));
  }
  set(n->output(), std::move(out));
}

bool Translator::is_leaf(const c10::IValue& module) const {
  const c10::ClassTypePtr type = module.toObject()->type();
  for (size_t i = 0; i < type->numAttributes(); ++i) {
    if (type->getAttribute(i)->is_module()) return false;
  }
  return true;
}

void Translator::call(jit::Node* n, bool method) {
  std::vector<Val> args;
  for (jit::Value* v : n->inputs()) args.push_back(get(v));
  Frame frame = frames_.back();
  frame.call_site = n->sourceRange();
  jit::Function* fn = nullptr;
  if (method) {
    if (args[0].is(Kind::kPoison)) return poison_outputs(n);
    if (!args[0].is(Kind::kModule)) return unsupported(n, "method of a value that is not a module");
    fn = args[0].value.toObject()->type()->findMethod(n->s(jit::attr::name));
    frame.module_path = args[0].name;
    frame.leaf = is_leaf(args[0].value);
  } else {
    const auto fn_type = n->input(0)->type()->cast<c10::FunctionType>();
    fn = fn_type ? fn_type->function() : nullptr;
    args.erase(args.begin());
  }
  if (!fn || !fn->isGraphFunction()) {
    return unsupported(n, "a call of something that has no TorchScript code");
  }
  std::vector<Val> results;
  run_graph(*jit::toGraphFunction(*fn).graph(), std::move(args), frame, results);
  if (fatal_) return;
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    set(n->output(i), i < results.size() ? std::move(results[i]) : Val{});
  }
}

void Translator::run_if(jit::Node* n) {
  const Val c = get(n->input(0));
  if (c.is(Kind::kPoison)) return poison_outputs(n);
  if (!c.is(Kind::kConst) || !c.value.isBool()) {
    return unsupported(n, c.is(Kind::kBatch) ? "a branch on the batch size, which zoc keeps dynamic"
                                             : "a branch on tensor values");
  }
  jit::Block* block = n->blocks()[c.value.toBool() ? 0 : 1];
  run_block(block);
  if (fatal_) return;
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    refresh_value(block->outputs()[i], n);
    Val v = get(block->outputs()[i]);
    set(n->output(i), std::move(v));
  }
}

void Translator::run_loop(jit::Node* n) {
  const Val trips = get(n->input(0)), first = get(n->input(1));
  if (trips.is(Kind::kPoison) || first.is(Kind::kPoison)) return poison_outputs(n);
  if (!trips.is(Kind::kConst) || !trips.value.isInt() || !first.is(Kind::kConst) ||
      !first.value.isBool()) {
    return unsupported(n, "a loop whose trip count is not known before it runs");
  }
  jit::Block* body = n->blocks()[0];
  std::vector<Val> carried;
  for (size_t i = 2; i < n->inputs().size(); ++i) carried.push_back(get(n->input(i)));
  bool go = first.value.toBool();
  for (int64_t it = 0; go && it < trips.value.toInt(); ++it) {
    set(body->inputs()[0], Val::constant(it));
    for (size_t k = 0; k < carried.size(); ++k) set(body->inputs()[k + 1], carried[k]);
    run_block(body);
    if (fatal_) return;
    const Val cond = get(body->outputs()[0]);
    if (cond.is(Kind::kPoison)) return poison_outputs(n);
    if (!cond.is(Kind::kConst) || !cond.value.isBool()) {
      return unsupported(n, "a loop whose condition depends on tensor values");
    }
    go = cond.value.toBool();
    for (size_t k = 0; k < carried.size(); ++k) {
      refresh_value(body->outputs()[k + 1], n);
      carried[k] = get(body->outputs()[k + 1]);
    }
  }
  for (size_t k = 0; k < carried.size(); ++k) set(n->output(k), carried[k]);
}

}  // namespace zoc::torchscript::detail
