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
//     path, a parameter with its state_dict name, an activation (an IR value), the batch size;
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
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/ir/shapes.h"

namespace zoc::torchscript::detail {
namespace {

using Kind = Val::Kind;
namespace prim = c10::prim;
namespace aten = c10::aten;

constexpr size_t kMaxCallDepth = 64;
constexpr int64_t kMaxSteps = 2'000'000;  // interpreted nodes: bounds loops that do not end
constexpr size_t kMaxListedProblems = 40;

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

bool holds_tensor(const c10::TypePtr& t) {
  if (t->kind() == c10::TypeKind::TensorType) return true;
  for (const c10::TypePtr& c : t->containedTypes()) {
    if (holds_tensor(c)) return true;
  }
  return false;
}

// PyTorch's own Python files: a position there says less than the user's line that called in.
bool inside_pytorch(const std::string& file) {
  return file.find("-packages/torch/") != std::string::npos ||
         file.rfind("code/__torch__/torch/", 0) == 0;
}

// ATen ops that only move values around; structural() handles them unless an input is poison.
bool is_plumbing(c10::Symbol k) {
  return k == aten::__getitem__ || k == aten::len || k == aten::size || k == aten::dim ||
         k == aten::Int || k == aten::ScalarImplicit || k == aten::__is__ || k == aten::__isnot__;
}

std::string exception_text(const std::exception& e) {
  const auto* c10e = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10e ? c10e->what_without_backtrace() : e.what();
  return text.substr(0, text.find('\n'));
}

const Val kPoison{};

}  // namespace

Translator::Translator(const jit::Module& root, const std::string& path, const Options& options,
                       Diagnostics& diags)
    : root_(root), path_(path), options_(options), diags_(diags) {
  for (const auto& p : root_.named_parameters(/*recurse=*/true)) state_[p.name] = p.value;
  for (const auto& b : root_.named_buffers(/*recurse=*/true)) state_[b.name] = b.value;
  for (const auto& entry : state_) {
    const size_t dot = entry.first.rfind('.');
    if (dot != std::string::npos) reserved_names_.insert(entry.first.substr(0, dot));
  }
  reserved_names_.insert("input");
}

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
  std::vector<Val> results;
  run_graph(g, {self, Val::activation(graph_.nodes[input].output)},
            Frame{"", is_leaf(self.value), {}}, results);

  if (!problems_.empty()) {
    // One error listing every unsupported operation, each where it happens.
    std::vector<std::pair<std::string, int>> lines;
    for (const Problem& p : problems_) {
      std::string line =
          fmt::format("{}: {} at {}",
                      p.origin.module_path.empty() ? "(top-level module)" : p.origin.module_path,
                      p.what, p.origin.loc.str());
      auto it =
          std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == line; });
      if (it == lines.end()) {
        lines.emplace_back(std::move(line), 1);
      } else {
        ++it->second;
      }
    }
    std::string list;
    for (size_t i = 0; i < lines.size() && i < kMaxListedProblems; ++i) {
      list += "\n  " + lines[i].first +
              (lines[i].second > 1 ? fmt::format(" ({} times)", lines[i].second) : "");
    }
    if (lines.size() > kMaxListedProblems) {
      list += fmt::format("\n  ... and {} more", lines.size() - kMaxListedProblems);
    }
    diags_.error(at, fmt::format("{} unsupported operation{} (zoc maps {}):{}", lines.size(),
                                 lines.size() == 1 ? "" : "s", mapped_ops_summary(), list));
  }
  if (fatal_ || diags_.error_count() != errors_before) return false;
  if (results.size() != 1 || !results[0].is(Kind::kTensor)) {
    diags_.error(
        at, fmt::format("forward returns {}; zoc compiles models that return one tensor",
                        results.size() == 1 && results[0].is(Kind::kList)
                            ? fmt::format("a tuple or list of {} values", results[0].items.size())
                            : std::string("something other than a tensor")));
    return false;
  }
  graph_.outputs = {results[0].id};
  check_parameters();
  if (diags_.error_count() != errors_before) return false;
  out = std::move(graph_);
  return true;
}

// Every tensor a layer declares must be in the state_dict with the same shape, so that the
// weights `zoc extract-weights` writes always load.
void Translator::check_parameters() {
  Diagnostics scratch;
  if (!ir::infer_shapes(graph_, scratch)) return;  // the loader reports it, located
  auto shape_str = [](const std::vector<int64_t>& s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
  };
  for (const ir::Node& node : graph_.nodes) {
    for (const ir::ParamSpec& p : node.params) {
      auto it = state_.find(p.name);
      if (it == state_.end()) {
        if (!p.optional) {
          diags_.error(node.loc, fmt::format("layer '{}' needs tensor '{}', which is not in the "
                                             "module's state_dict",
                                             node.name, p.name));
        }
        continue;
      }
      const std::vector<int64_t> shape(it->second.sizes().begin(), it->second.sizes().end());
      if (shape != p.shape) {
        diags_.error(node.loc,
                     fmt::format("layer '{}': tensor '{}' has shape {} in the module, "
                                 "but the layer as called needs {}",
                                 node.name, p.name, shape_str(shape), shape_str(p.shape)));
      }
    }
  }
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
  for (jit::Value* v : graph.outputs()) results.push_back(get(v));
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
    error(n, fmt::format("forward raises an exception for this input: {}",
                         m.is(Kind::kConst) && m.value.isString() ? m.value.toStringRef()
                                                                  : "(message unknown)"));
  } else if (k == aten::warn || k == prim::Print) {
    // No effect on the result.
  } else if (k == prim::Uninitialized) {
    set(n->output(), Val::constant(c10::IValue()));
  } else if (!structural(n)) {
    run_op(n);
  }
}

const Val& Translator::get(jit::Value* v) {
  auto it = env_.find(v);
  return it == env_.end() ? kPoison : it->second;
}

void Translator::poison_outputs(jit::Node* n) {
  for (jit::Value* v : n->outputs()) set(v, Val{});
}

void Translator::get_attr(jit::Node* n) {
  const Val obj = get(n->input(0));
  const std::string attr = n->s(jit::attr::name);
  if (obj.is(Kind::kPoison)) return poison_outputs(n);
  if (!obj.value.isObject()) return unsupported(n, "attribute of a value that is not an object");
  const c10::intrusive_ptr<c10::ivalue::Object> object = obj.value.toObject();
  const c10::ClassTypePtr type = object->type();
  const c10::optional<size_t> slot = type->findAttributeSlot(attr);
  if (!slot) return error(n, fmt::format("'{}' has no attribute '{}'", obj.name, attr));
  c10::IValue v = object->getSlot(*slot);
  Val out;
  if (obj.is(Kind::kModule) && v.isObject() && v.toObject()->type()->is_module()) {
    out.kind = Kind::kModule;
    out.value = std::move(v);
    out.name = join(obj.name, attr);
  } else if (obj.is(Kind::kModule) && v.isTensor()) {
    out.kind = Kind::kParam;
    out.name = join(obj.name, attr);
    out.tensor = v.toTensor();
    out.in_state_dict = type->is_parameter(*slot) || type->is_buffer(*slot);
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
    for (size_t k = 0; k < carried.size(); ++k) carried[k] = get(body->outputs()[k + 1]);
  }
  for (size_t k = 0; k < carried.size(); ++k) set(n->output(k), carried[k]);
}

// Ops on lists, sizes and optionals whose inputs are not all constants: a list holding an
// activation, the size of an activation, `bias is not None`, casts of the batch size.
bool Translator::structural(jit::Node* n) {
  std::vector<Val> in;
  bool all_const = true;
  for (jit::Value* v : n->inputs()) {
    in.push_back(get(v));
    all_const = all_const && in.back().is(Kind::kConst);
    if (in.back().is(Kind::kPoison)) return false;
  }
  const c10::Symbol k = n->kind();
  if (all_const) return fold_container(n, in);
  auto out = [&](Val v) {
    set(n->output(), std::move(v));
    return true;
  };
  auto index = [](int64_t i, size_t size) -> std::optional<size_t> {
    const int64_t s = static_cast<int64_t>(size);
    if (i < -s || i >= s) return std::nullopt;
    return static_cast<size_t>(i < 0 ? i + s : i);
  };
  auto batch = [] {
    Val b;
    b.kind = Kind::kBatch;
    return b;
  };
  if (k == prim::ListConstruct || k == prim::TupleConstruct) {
    Val l;
    l.kind = Kind::kList;
    l.items = std::move(in);
    return out(std::move(l));
  }
  if ((k == prim::ListUnpack || k == prim::TupleUnpack) && in[0].is(Kind::kList) &&
      in[0].items.size() == n->outputs().size()) {
    for (size_t i = 0; i < n->outputs().size(); ++i) set(n->output(i), in[0].items[i]);
    return true;
  }
  if ((k == prim::TupleIndex || k == aten::__getitem__) && in[0].is(Kind::kList) &&
      in[1].is(Kind::kConst) && in[1].value.isInt()) {
    auto i = index(in[1].value.toInt(), in[0].items.size());
    if (!i) return false;
    return out(in[0].items[*i]);
  }
  if (k == aten::len && in[0].is(Kind::kList)) {
    return out(Val::constant(static_cast<int64_t>(in[0].items.size())));
  }
  if ((k == aten::size || k == aten::dim) && (in[0].is(Kind::kTensor) || in[0].is(Kind::kParam))) {
    std::vector<Val> sizes;
    if (in[0].is(Kind::kTensor)) {
      const std::vector<int64_t>* d = dims(in[0].id);
      if (!d) {
        poison_outputs(n);
        return true;
      }
      sizes.push_back(batch());
      for (int64_t x : *d) sizes.push_back(Val::constant(x));
    } else {
      for (int64_t x : in[0].tensor.sizes()) sizes.push_back(Val::constant(x));
    }
    if (k == aten::dim) return out(Val::constant(static_cast<int64_t>(sizes.size())));
    if (n->inputs().size() == 1) {
      Val l;
      l.kind = Kind::kList;
      l.items = std::move(sizes);
      return out(std::move(l));
    }
    if (!in[1].is(Kind::kConst) || !in[1].value.isInt()) return false;
    auto i = index(in[1].value.toInt(), sizes.size());
    if (!i) return false;
    return out(sizes[*i]);
  }
  if ((k == prim::NumToTensor || k == aten::Int || k == aten::ScalarImplicit) &&
      in[0].is(Kind::kBatch)) {
    return out(batch());
  }
  if (k == prim::unchecked_cast) return out(in[0]);
  if ((k == aten::__is__ || k == aten::__isnot__) && in.size() == 2) {
    const bool none0 = in[0].is(Kind::kConst) && in[0].value.isNone();
    const bool none1 = in[1].is(Kind::kConst) && in[1].value.isNone();
    if (none0 || none1) return out(Val::constant(k == aten::__isnot__));  // the other is not None
  }
  return false;
}

// Lists and tuples of constants: built here, because these prim ops have no operator that
// could run on their own; everything else is left to fold().
bool Translator::fold_container(jit::Node* n, const std::vector<Val>& in) {
  const c10::Symbol k = n->kind();
  if (k == prim::ListConstruct) {
    const auto list_type = n->output()->type()->cast<c10::ListType>();
    if (!list_type) return false;
    c10::impl::GenericList list(list_type->getElementType());
    for (const Val& v : in) list.push_back(v.value);
    set(n->output(), Val::constant(c10::IValue(std::move(list))));
    return true;
  }
  if (k == prim::TupleConstruct) {
    std::vector<c10::IValue> items;
    for (const Val& v : in) items.push_back(v.value);
    set(n->output(), Val::constant(c10::ivalue::Tuple::create(std::move(items))));
    return true;
  }
  if (k == prim::ListUnpack || k == prim::TupleUnpack) {
    std::vector<c10::IValue> items;
    if (in[0].value.isList()) {
      for (const c10::IValue& v : in[0].value.toListRef()) items.push_back(v);
    } else if (in[0].value.isTuple()) {
      items = in[0].value.toTupleRef().elements().vec();
    }
    if (items.size() != n->outputs().size()) return false;
    for (size_t i = 0; i < items.size(); ++i) set(n->output(i), Val::constant(items[i]));
    return true;
  }
  if (k == prim::TupleIndex && in[0].value.isTuple() && in[1].value.isInt()) {
    const auto& items = in[0].value.toTupleRef().elements();
    const int64_t size = static_cast<int64_t>(items.size()), i = in[1].value.toInt();
    if (i < -size || i >= size) return false;
    set(n->output(), Val::constant(items[static_cast<size_t>(i < 0 ? i + size : i)]));
    return true;
  }
  return false;
}

// Runs a node whose inputs are all constants with LibTorch's own implementation of it.
bool Translator::fold(jit::Node* n) {
  for (jit::Value* v : n->inputs()) {
    if (!get(v).is(Kind::kConst)) return false;
  }
  if (!n->maybeOperator() || n->isNondeterministic() || n->hasSideEffects()) return false;
  jit::Stack stack;
  for (jit::Value* v : n->inputs()) stack.push_back(get(v).value);
  // Vararg ops (aten::format) take their input count on top, as LibTorch's interpreter does.
  if (n->maybeSchema() && n->schema().is_vararg()) {
    stack.emplace_back(static_cast<int64_t>(n->inputs().size()));
  }
  try {
    n->getOperation()(stack);
  } catch (const std::exception& e) {
    error(n, fmt::format("evaluating {} on constants failed: {}", n->kind().toQualString(),
                         exception_text(e)));
    return true;
  }
  if (stack.size() != n->outputs().size()) {
    error(n, fmt::format("evaluating {} gave {} values, expected {}", n->kind().toQualString(),
                         stack.size(), n->outputs().size()));
    return true;
  }
  for (size_t i = 0; i < stack.size(); ++i) set(n->output(i), Val::constant(std::move(stack[i])));
  return true;
}

void Translator::run_op(jit::Node* n) {
  if (fold(n)) return;
  bool poisoned = false, batch = false, tensors = false;
  for (jit::Value* v : n->inputs()) {
    const Val& x = get(v);
    poisoned = poisoned || x.is(Kind::kPoison);
    batch = batch || x.is(Kind::kBatch);
    tensors = tensors || x.is(Kind::kTensor) || x.is(Kind::kParam) || holds_tensor(v->type());
  }
  for (jit::Value* v : n->outputs()) tensors = tensors || holds_tensor(v->type());
  const Handler handler = find_handler(n->kind());
  if (!handler) {
    // An unknown tensor op is listed even when its inputs are already poisoned, so that every
    // unsupported op is; plumbing (prim::TupleUnpack of its result, aten::size) is not.
    if (poisoned && (!tensors || n->kind().is_prim() || is_plumbing(n->kind()))) {
      return poison_outputs(n);
    }
    return unsupported(n, !tensors && batch ? "it computes with the batch size, which zoc keeps "
                                              "dynamic"
                                            : "");
  }
  if (poisoned) return poison_outputs(n);
  OpContext c(*this, n);
  const size_t problems_before = problems_.size();
  if (!handler(c) || fatal_) {
    if (problems_.size() == problems_before && !fatal_) unsupported(n, "");
    return poison_outputs(n);
  }
  // In-place ops (relu_, add_) write their first input: later reads of it see the result.
  const std::string name = n->kind().toUnqualString();
  if (name.size() > 2 && name.back() == '_' && name[name.size() - 2] != '_' &&
      n->outputs().size() == 1) {
    Val v = get(n->output());
    set(n->input(0), std::move(v));
  }
}

Origin Translator::origin(jit::Node* n) const {
  Origin o;
  o.module_path = frames_.back().module_path;
  o.leaf = frames_.back().leaf;
  std::optional<SourceLoc> user, any;
  auto consider = [&](const jit::SourceRange& r) {
    auto loc = to_loc(r);
    if (!loc) return;
    any = loc;
    if (!inside_pytorch(loc->file)) user = loc;
  };
  for (size_t i = 1; i < frames_.size(); ++i) consider(frames_[i].call_site);
  consider(n->sourceRange());
  o.loc = user ? *user : any ? *any : SourceLoc{path_, 0, 0};
  return o;
}

// The position in the original Python file where the archive has it (its .debug_pkl records),
// else in the archive's serialized code.
std::optional<SourceLoc> Translator::to_loc(const jit::SourceRange& r) const {
  try {
    if (!r.source()) return std::nullopt;
    jit::SourceRange use = r;
    if (auto original = r.findSourceRangeThatGenerated()) use = *original;
    auto flc = use.file_line_col();
    if (!flc || std::get<0>(*flc).empty() || std::get<1>(*flc) == 0) return std::nullopt;
    // Column 0 is what the tracer records for "somewhere on this line": leave it out.
    const int col = static_cast<int>(std::get<2>(*flc));
    return SourceLoc{std::get<0>(*flc), static_cast<int>(std::get<1>(*flc)), col > 0 ? col + 1 : 0};
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable debug records: report without a position
  }
}

void Translator::unsupported(jit::Node* n, const std::string& why) {
  std::string what = n->kind().toQualString();
  if (!why.empty()) what += " (" + why + ")";
  problems_.push_back({std::move(what), origin(n)});
  poison_outputs(n);
}

void Translator::error(jit::Node* n, const std::string& message) {
  const Origin o = origin(n);
  diags_.error(
      o.loc, o.module_path.empty() ? message : fmt::format("in '{}': {}", o.module_path, message));
  fatal_ = true;
  poison_outputs(n);
}

std::string Translator::fresh_name(const Origin& o, ir::OpKind op) const {
  const std::string base = o.leaf && !o.module_path.empty()
                               ? o.module_path
                               : join(o.module_path, std::string(ir::op_info(op).name));
  auto taken = [&](const std::string& s) {
    return used_names_.count(s) > 0 || reserved_names_.count(s) > 0;
  };
  if (!taken(base)) return base;
  for (int k = 1;; ++k) {
    std::string s = fmt::format("{}_{}", base, k);
    if (!taken(s)) return s;
  }
}

// Shapes come from the IR's own shape rules, run on the graph built so far when an op needs
// them (a rank check, a flatten, an adaptive pool). A shape error stops the translation.
const std::vector<int64_t>* Translator::dims(ir::ValueId v) {
  if (v < 0 || static_cast<size_t>(v) >= graph_.values.size()) return nullptr;
  if (!graph_.values[v].type) {
    Diagnostics scratch;
    if (!ir::infer_shapes(graph_, scratch) || !graph_.values[v].type) {
      if (!fatal_) diags_.merge(scratch);
      fatal_ = true;
      return nullptr;
    }
  }
  return &graph_.values[v].type->dims;
}

}  // namespace zoc::torchscript::detail
