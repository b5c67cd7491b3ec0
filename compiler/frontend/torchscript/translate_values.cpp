// The values of the TorchScript frontend's symbolic interpreter (translate.cpp walks the graphs
// and says why it is symbolic): what a TorchScript value stands for now, the structural ops on
// lists, sizes and None that have non-constant parts, constant folding through LibTorch's own
// kernels, the hand-over of tensor ops to their handlers (aten_ops.cpp), and the per-sample shape
// of an activation. Apart from the walk so that each reads on its own: the walk decides which
// nodes run, this file what a node that runs produces.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/ir/shapes.h"

namespace zoc::torchscript::detail {
namespace {

using Kind = Val::Kind;
namespace prim = c10::prim;
namespace aten = c10::aten;

// ATen ops that only move values around; structural() handles them unless an input is poison.
// Lists and dicts that an unsupported op left unknown are not listed again where they are filled.
bool is_plumbing(c10::Symbol k) {
  return k == aten::__getitem__ || k == aten::len || k == aten::size || k == aten::dim ||
         k == aten::Int || k == aten::ScalarImplicit || k == aten::__is__ || k == aten::__isnot__ ||
         k == aten::append || k == aten::_set_item;
}

std::string exception_text(const std::exception& e) {
  const auto* c10e = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10e ? c10e->what_without_backtrace() : e.what();
  return readable_libtorch_text(text.substr(0, text.find('\n')));
}

const Val kPoison{};

// What the user wrote where that is not the op's name: TorchScript compiles `1.0 - x` (torch.rsub
// with a constant) to aten::neg then aten::add, so a bare "aten::neg" named nothing they wrote.
const char* unmapped_hint(c10::Symbol k) {
  if (k == aten::neg || k == aten::rsub) {
    return "-x, or `c - x` with a constant c, which TorchScript writes as aten::neg then "
           "aten::add: zoc has no op that negates or subtracts from a constant";
  }
  return "";
}

}  // namespace

const Val& Translator::get(jit::Value* v) {
  auto it = env_.find(v);
  return it == env_.end() ? kPoison : it->second;
}

// The outputs of a node that did not run, and the inputs it would have written (a list that
// aten::append did not extend is no longer the list it was: TorchScript lists are references).
void Translator::poison_outputs(jit::Node* n) {
  for (jit::Value* v : n->outputs()) set(v, Val{});
  if (!n->maybeSchema()) return;
  const std::vector<c10::Argument>& args = n->schema().arguments();
  for (size_t i = 0; i < args.size() && i < n->inputs().size(); ++i) {
    if (args[i].alias_info() && args[i].alias_info()->isWrite()) set(n->input(i), Val{});
  }
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
  if (dict_op(n, in)) return true;  // dicts of tensors (dicts.cpp)
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
    if (!charge_folded_items(n, in.size())) return true;
    Val l;
    l.kind = Kind::kList;
    l.items = std::move(in);
    l.depth = 1;
    for (const Val& item : l.items) l.depth = std::max(l.depth, item.depth + 1);
    if (l.depth > kMaxFoldedDepth) {
      error(n, fmt::format("lists and tuples nested more than {} deep; zoc does not build such "
                           "values while compiling a model",
                           kMaxFoldedDepth));
      return true;
    }
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
  // list.append(x) on a list holding activations (DenseNet's `features.append(new_features)`):
  // TorchScript lists are references, so the list now holds x under every name (aliasing.cpp).
  if (k == aten::append &&
      (in[0].is(Kind::kList) || (in[0].is(Kind::kConst) && in[0].value.isList()))) {
    if (!charge_folded_items(n, in[0].is(Kind::kList) ? in[0].items.size() + 1 : 1)) return true;
    append_to_list(n, in[0], in[1]);
    return true;
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
      for (int64_t x : viewed_dims(in[0], *d)) sizes.push_back(Val::constant(x));
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
    c10::IValue value(std::move(list));
    if (charge_folded(n, value, "gives", false)) set(n->output(), Val::constant(std::move(value)));
    return true;
  }
  if (k == prim::TupleConstruct) {
    std::vector<c10::IValue> items;
    for (const Val& v : in) items.push_back(v.value);
    c10::IValue value(c10::ivalue::Tuple::create(std::move(items)));
    if (charge_folded(n, value, "gives", false)) set(n->output(), Val::constant(std::move(value)));
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

// Runs a node whose inputs are all constants with LibTorch's own implementation of it, if it is
// an op known to be pure, on values and with results of bounded size (fold_policy.cpp).
bool Translator::fold(jit::Node* n) {
  for (jit::Value* v : n->inputs()) {
    if (!get(v).is(Kind::kConst)) return false;
  }
  if (!n->maybeOperator()) return false;
  std::vector<c10::IValue> args;
  for (jit::Value* v : n->inputs()) args.push_back(get(v).value);
  const FoldVerdict verdict = check_fold(n, args);
  if (verdict.kind == FoldVerdict::kNotPure) {
    not_folded(n, verdict.why);
    return true;
  }
  if (verdict.kind == FoldVerdict::kTooLarge) {
    error(n, fmt::format("{}; zoc computes at most {} MiB per value while compiling a model",
                         verdict.why, kMaxFoldedValueBytes >> 20));
    return true;
  }
  for (const c10::IValue& a : args) {
    if (!charge_folded(n, a, "takes", verdict.tensor_data)) return true;
  }
  jit::Stack stack(std::move(args));
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
  for (const c10::IValue& v : stack) {
    if (!charge_folded(n, v, "gives", verdict.tensor_data)) return true;
  }
  for (size_t i = 0; i < stack.size(); ++i) set(n->output(i), Val::constant(std::move(stack[i])));
  return true;
}

bool Translator::charge_folded(jit::Node* n, const c10::IValue& v, const char* role,
                               bool tensor_data) {
  const FoldSize size = measure_value(v, tensor_data);
  const std::string op = n->kind().toQualString();
  if (size.too_deep) {
    error(n, fmt::format("{} on constants {} a value nested more than {} levels deep; zoc does "
                         "not compute such values while compiling a model",
                         op, role, kMaxFoldedDepth));
    return false;
  }
  if (size.bytes > kMaxFoldedValueBytes) {
    error(n, fmt::format("{} on constants {} a value of more than {} MiB; zoc computes at most "
                         "{} MiB per value while compiling a model",
                         op, role, kMaxFoldedValueBytes >> 20, kMaxFoldedValueBytes >> 20));
    return false;
  }
  folded_bytes_ += size.bytes;
  if (folded_bytes_ > kMaxFoldedTotalBytes) {
    error(n, fmt::format("evaluating constants ({} here) has computed more than {} MiB in all "
                         "(a loop that builds ever more values?); zoc computes at most that much "
                         "while compiling a model",
                         op, kMaxFoldedTotalBytes >> 20));
    return false;
  }
  return true;
}

// A list of non-constant values is copied whole when one is appended, so its items count too.
bool Translator::charge_folded_items(jit::Node* n, size_t items) {
  folded_bytes_ += 8 * static_cast<uint64_t>(items);
  if (folded_bytes_ <= kMaxFoldedTotalBytes) return true;
  error(n, fmt::format("building lists ({} here) has taken more than {} MiB in all (a loop that "
                       "builds ever longer lists?); zoc computes at most that much while "
                       "compiling a model",
                       n->kind().toQualString(), kMaxFoldedTotalBytes >> 20));
  return false;
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
  for (jit::Value* v : n->inputs()) {
    if (get(v).is(Kind::kUnavailable)) {
      return unsupported(n, fmt::format("it reads {}, which zoc does not compute", get(v).name));
    }
  }
  const Handler handler = find_handler(n->kind());
  if (!handler) {
    // An unknown tensor op is listed even when its inputs are already poisoned, so that every
    // unsupported op is; plumbing (prim::TupleUnpack of its result, aten::size) is not.
    if (poisoned && (!tensors || n->kind().is_prim() || is_plumbing(n->kind()))) {
      return poison_outputs(n);
    }
    return unsupported(n, !tensors && batch ? "it computes with the batch size, which zoc keeps "
                                              "dynamic"
                                            : unmapped_hint(n->kind()));
  }
  if (poisoned) return poison_outputs(n);
  OpContext c(*this, n);
  const size_t problems_before = problems_.size();
  if (!handler(c) || fatal_) {
    if (problems_.size() == problems_before && !fatal_) unsupported(n, "");
    return poison_outputs(n);
  }
  // In-place ops (relu_, add_, out=) write their argument under every name, and results that may
  // be views of an input share its storage (aliasing.cpp).
  track_mutation(n);
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
