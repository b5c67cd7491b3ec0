// TorchScript's mutation semantics in the symbolic interpreter (translate.cpp): an in-place op
// (aten::relu_, x += y, an out= argument) changes the tensor it writes under every name that
// holds it, in the caller of the submodule that wrote it, in a list, in a view. zoc's values are
// SSA IR values, so a write is a new IR value, and every holder must read it afterwards: issue 32
// found scripted models (nn.ReLU(inplace=True) on a tensor the caller keeps as `identity`) where
// zoc read the old value, a wrong number without a warning.
//
// The model, after PyTorch's own (a tensor is a view of a storage):
//   - every activation belongs to a storage, which holds its current content as one IR value
//     (`base`) and counts its writes (`version`); every value records the version it reflects;
//   - a view that zoc follows without an IR node and that is certainly the same elements (an
//     image's permute, ShuffleNet's 5-D view and transpose, detach, eval-mode dropout, which
//     returns its input) shares the storage as a whole: a write through it or through the tensor
//     updates `base`, and the other reads it;
//   - any other view (a flatten, a chunk: IR nodes) and any result that *may* share its input's
//     storage (reshape, contiguous, to: PyTorch copies or not depending on strides, and zoc keeps
//     the batch size dynamic) is a derived view object: read after a write to its storage it is
//     refused, and a write through it leaves the storage's other values unreadable (refused when
//     read): zoc has no IR for a write into part of a tensor, and a wrong number is worse than
//     any refusal;
//   - which outputs alias which inputs, and which inputs an op writes, come from the op's schema
//     (`Tensor(a!)`, `Tensor(a)`), plus the dropout family, which LibTorch 1.13 does not annotate;
//   - lists are objects too: aten::append changes the list under every name (a function that
//     appends to its caller's list), and a constant list that an activation is appended to
//     becomes a list object for every holder of the constant; so are dicts of tensors (dicts.cpp:
//     d[k] = v in torchvision's IntermediateLayerGetter changes its caller's dict).
// Values are brought up to date when a node reads them (refresh_inputs), so stale copies in
// callers' frames, list items and loop-carried values need no bookkeeping of their own.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript::detail {
namespace {

using Kind = Val::Kind;
namespace prim = c10::prim;
namespace aten = c10::aten;

// Views that are always the same storage as their input; with the same IR value as the input,
// they are the same elements.
bool definite_view(c10::Symbol k) {
  static const std::set<std::string> ops = {
      "aten::view",  "aten::permute", "aten::transpose",    "aten::detach", "aten::view_as",
      "aten::alias", "aten::squeeze", "aten::unsqueeze",    "aten::expand", "aten::expand_as",
      "aten::t",     "aten::chunk",   "aten::split",        "aten::unbind", "aten::select",
      "aten::slice", "aten::narrow",  "prim::ConstantChunk"};
  return ops.count(k.toQualString()) > 0;
}

// Ops whose schema says nothing of aliasing but that return their input itself at inference
// (ATen's _dropout_impl: `if (p == 0 || !train || ...) return input;`).
bool returns_input(c10::Symbol k) {
  static const std::set<std::string> ops = {"aten::dropout", "aten::feature_dropout",
                                            "aten::alpha_dropout", "aten::feature_alpha_dropout"};
  return ops.count(k.toQualString()) > 0;
}

// Unannotated ops that may return their input (type_as is self.to(other's options)).
bool may_return_input(c10::Symbol k) { return k == aten::type_as; }

void collect_sets(const c10::AliasInfo& a, std::set<c10::Symbol>& out) {
  out.insert(a.beforeSets().begin(), a.beforeSets().end());
  out.insert(a.afterSets().begin(), a.afterSets().end());
  for (const c10::AliasInfo& c : a.containedTypes()) collect_sets(c, out);
}

// Whether two schema annotations name a common alias set (a wildcard shares with anything).
bool shares_set(const c10::AliasInfo* a, const c10::AliasInfo* b) {
  if (!a || !b) return false;
  std::set<c10::Symbol> sa, sb;
  collect_sets(*a, sa);
  collect_sets(*b, sb);
  const c10::Symbol wildcard = c10::AliasInfo::wildcardSet();
  if ((sa.count(wildcard) && !sb.empty()) || (sb.count(wildcard) && !sa.empty())) return true;
  return std::any_of(sa.begin(), sa.end(), [&](c10::Symbol s) { return sb.count(s) > 0; });
}

uint32_t nest_depth(const Val& v) { return v.is(Kind::kList) || v.is(Kind::kDict) ? v.depth : 0; }

}  // namespace

std::string Translator::where(jit::Node* n) const {
  return fmt::format("{} at {}", shown_text(n->kind().toQualString()), origin(n).loc.str());
}

void Translator::new_storage(Val& v) {
  v.storage = static_cast<int32_t>(storages_.size());
  v.object = -1;
  v.derived = false;
  v.version = 0;
  storages_.push_back(Storage{v.id, 0, {}, {}});
}

// `v` as it is now, after the writes since it was made; false, with why, where it reads a view
// that zoc cannot bring up to date.
bool Translator::refresh(Val& v, std::string& why) {
  if (v.is(Kind::kTensor)) {
    if (v.storage < 0) return true;
    const Storage& s = storages_[static_cast<size_t>(v.storage)];
    if (v.version == s.version) return true;
    if (!v.derived) {
      if (!s.lost_by.empty()) {
        why = fmt::format(
            "it reads a tensor that {} wrote into in place; zoc follows in-place "
            "writes into a tensor and its permuted views, not into a part or a "
            "reshaped view of it",
            s.lost_by);
        return false;
      }
      v.id = s.base;
      v.version = s.version;
      return true;
    }
    const ViewObject& o = objects_[static_cast<size_t>(v.object)];
    if (o.version == s.version) {
      v.id = o.id;
      v.version = s.version;
      return true;
    }
    why = fmt::format(
        "it reads the view that {} made of a tensor that {} has written in place "
        "since; zoc does not follow in-place writes into such views",
        o.made_by, s.written_by);
    return false;
  }
  if (v.is(Kind::kConst)) {
    if (converted_lists_.empty() || !v.value.isList()) return true;
    auto it = converted_lists_.find(v.value.internalToPointer());
    if (it == converted_lists_.end()) return true;
    Val l;
    l.kind = Kind::kList;
    l.list = it->second.second;
    l.version = lists_[static_cast<size_t>(l.list)].version + 1;  // read its items below
    v = std::move(l);
  }
  if (!v.is(Kind::kList) && !v.is(Kind::kDict)) return true;
  if (v.list >= 0) {
    const ListObject& l = lists_[static_cast<size_t>(v.list)];
    if (v.version != l.version) {
      v.items = l.items;
      v.keys = l.keys;
      v.version = l.version;
      v.depth = 1;
      for (const Val& item : v.items) v.depth = std::max(v.depth, nest_depth(item) + 1);
    }
  }
  for (Val& item : v.items) {
    if (!refresh(item, why)) return false;
  }
  return true;
}

bool Translator::refresh_inputs(jit::Node* n) {
  for (jit::Value* v : n->inputs()) {
    auto it = env_.find(v);
    if (it == env_.end()) continue;
    std::string why;
    if (refresh(it->second, why)) continue;
    it->second = Val{};
    if (stale_reported_.insert(why).second) {
      unsupported(n, why);
    } else {
      poison_outputs(n);
    }
    return false;
  }
  return true;
}

bool Translator::refresh_value(jit::Value* v, jit::Node* at) {
  auto it = env_.find(v);
  if (it == env_.end()) return true;
  std::string why;
  if (refresh(it->second, why)) return true;
  it->second = Val{};
  if (stale_reported_.insert(why).second) {
    problems_.push_back({"returning a value (" + why + ")", origin(at)});
  }
  return false;
}

// After a handler gave node n its results: the inputs it writes take their new values, and
// every tensor result joins a storage (its own, or its input's if it may be a view of it).
void Translator::track_mutation(jit::Node* n) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  std::vector<bool> written(n->outputs().size(), false);
  if (schema) {
    const std::vector<c10::Argument>& args = schema->arguments();
    const std::vector<c10::Argument>& rets = schema->returns();
    for (size_t i = 0; i < args.size() && i < n->inputs().size(); ++i) {
      const c10::AliasInfo* a = args[i].alias_info();
      if (!a || !a->isWrite()) continue;
      std::optional<size_t> out;
      for (size_t j = 0; j < rets.size() && j < n->outputs().size() && !out; ++j) {
        if (shares_set(rets[j].alias_info(), a)) out = j;
      }
      if (!out) return unsupported(n, "it writes an argument in place that it does not return");
      if (!apply_write(n, i, *out)) return;
      written[*out] = true;
    }
  }
  const c10::Symbol k = n->kind();
  for (size_t j = 0; j < n->outputs().size(); ++j) {
    auto it = env_.find(n->output(j));
    if (written[j] || it == env_.end()) continue;
    std::optional<size_t> source;
    bool definite = false;
    if (!schema) {  // prim::ConstantChunk; any other op without a schema may alias input 0
      source = 0;
      definite = k == prim::ConstantChunk;
    } else {
      const std::vector<c10::Argument>& args = schema->arguments();
      const c10::AliasInfo* r =
          j < schema->returns().size() ? schema->returns()[j].alias_info() : nullptr;
      for (size_t i = 0; i < args.size() && i < n->inputs().size() && !source; ++i) {
        if (shares_set(r, args[i].alias_info())) source = i;
      }
      definite = source && definite_view(k);
      if (!source && (returns_input(k) || may_return_input(k))) {
        source = 0;
        definite = returns_input(k);
      }
    }
    classify_result(n, it->second, source, definite);
  }
}

bool Translator::apply_write(jit::Node* n, size_t input, size_t output) {
  Val target = get(n->input(input));
  const Val r = get(n->output(output));
  if (target.is(Kind::kParam)) {
    unsupported(n, fmt::format("it writes '{}' in place, a tensor of the module; zoc does not "
                               "change a module's tensors",
                               shown_text(target.name)));
    return false;
  }
  if (!target.is(Kind::kTensor) || target.storage < 0 || !r.is(Kind::kTensor)) {
    unsupported(n, "it writes in place into a value that is not an activation");
    return false;
  }
  if (r.view != target.view || r.groups != target.groups) {
    unsupported(
        n, fmt::format("it writes {} in place with {}", view_name(target.view), view_name(r.view)));
    return false;
  }
  if (input != 0) {  // an out= argument: PyTorch resizes it; zoc keeps shapes
    const std::vector<int64_t>* dt = dims(target.id);
    const std::vector<int64_t> before = dt ? *dt : std::vector<int64_t>{};
    const std::vector<int64_t>* dr = dt ? dims(r.id) : nullptr;
    if (!dr) return false;
    if (*dr != before) {
      unsupported(n, "its out= tensor has another shape than the result");
      return false;
    }
  }
  Storage& s = storages_[static_cast<size_t>(target.storage)];
  ++s.version;
  s.written_by = where(n);
  if (!target.derived) {
    s.base = r.id;
  } else {
    ViewObject& o = objects_[static_cast<size_t>(target.object)];
    s.lost_by = fmt::format("{} (through the view that {} made)", s.written_by, o.made_by);
    o.id = r.id;
    o.version = s.version;
  }
  target.id = r.id;
  target.version = s.version;
  set(n->input(input), target);
  set(n->output(output), std::move(target));
  return true;
}

// r, a result of node n that is a view of input `source` if that is set (certainly one of its
// elements as they are if `definite`), or a list of such results (aten::chunk).
void Translator::classify_result(jit::Node* n, Val& r, std::optional<size_t> source,
                                 bool definite) {
  if (r.is(Kind::kList)) {
    for (Val& item : r.items) classify_result(n, item, source, definite);
    return;
  }
  if (!r.is(Kind::kTensor)) return;
  const Val* src = source ? &get(n->input(*source)) : nullptr;
  if (!src || !src->is(Kind::kTensor) || src->storage < 0) return new_storage(r);
  r.storage = src->storage;
  r.version = storages_[static_cast<size_t>(src->storage)].version;
  bool same = r.id == src->id;
  if (!same && r.id >= 0 && static_cast<size_t>(r.id) < graph_.values.size()) {
    const int32_t p = graph_.values[static_cast<size_t>(r.id)].producer;  // eval-mode dropout
    same = p >= 0 && graph_.nodes[static_cast<size_t>(p)].op == ir::OpKind::Dropout &&
           graph_.nodes[static_cast<size_t>(p)].inputs.at(0) == src->id;
  }
  if (definite && same && !src->derived) {
    r.derived = false;
    r.object = -1;
    return;
  }
  r.derived = true;
  r.object = static_cast<int32_t>(objects_.size());
  objects_.push_back(ViewObject{r.id, r.version, where(n)});
}

// Lists that node n made are list objects from now on, so that appending to one changes it
// under every name.
void Translator::register_lists(jit::Node* n) {
  for (jit::Value* out : n->outputs()) {
    if (out->type()->kind() != c10::TypeKind::ListType) continue;
    auto it = env_.find(out);
    if (it == env_.end() || !it->second.is(Kind::kList) || it->second.list >= 0) continue;
    it->second.list = static_cast<int32_t>(lists_.size());
    it->second.version = 0;
    lists_.push_back(ListObject{it->second.items, 0, {}});
  }
}

// list.append(item) where the list or the item is not a constant (DenseNet's
// `features.append(new_features)`).
bool Translator::append_to_list(jit::Node* n, const Val& list, const Val& item) {
  Val l;
  if (list.is(Kind::kList)) {
    l = list;
  } else {
    l.kind = Kind::kList;
    for (const c10::IValue& v : list.value.toListRef()) l.items.push_back(Val::constant(v));
    l.depth = 1;
  }
  if (l.list < 0) {
    l.list = static_cast<int32_t>(lists_.size());
    lists_.push_back(ListObject{l.items, 0, {}});
    if (list.is(Kind::kConst)) {
      converted_lists_[list.value.internalToPointer()] = {list.value, l.list};
    }
  }
  l.depth = std::max(l.depth, nest_depth(item) + 1);
  if (l.depth > kMaxFoldedDepth) {
    error(n, fmt::format("lists nested more than {} deep; zoc does not build such values while "
                         "compiling a model",
                         kMaxFoldedDepth));
    return false;
  }
  l.items.push_back(item);
  ListObject& o = lists_[static_cast<size_t>(l.list)];
  o.items = l.items;
  l.version = ++o.version;
  set(n->input(0), l);
  set(n->output(), std::move(l));
  return true;
}

}  // namespace zoc::torchscript::detail
