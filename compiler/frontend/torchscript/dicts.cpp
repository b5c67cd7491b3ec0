// Dicts of tensors in the TorchScript frontend's symbolic interpreter (issue 37). torchvision's
// segmentation models, scripted, pass their activations through dicts: IntermediateLayerGetter
// builds `out = OrderedDict()` and sets `out[self.return_layers[name]] = x`, the model reads
// `features["out"]` (LRASPP: "low" and "high") and returns `result = OrderedDict()` with "out"
// and "aux" set. A dict whose value type holds a tensor is followed here as a Val of kind kDict
// (internal.h): its keys, which must be strings known when zoc compiles, and its values in
// insertion order. Dicts are references in TorchScript, so a dict is an object like a list
// (aliasing.cpp): a write changes it under every name (the caller's dict a submodule filled),
// and every holder reads the new content. Dicts of constants only (return_layers, a Dict[str,
// str] attribute) stay constants, folded by LibTorch's own kernels (translate_values.cpp).
//
// Followed: d = {} / OrderedDict() / {k: v, ...} / dict(d) / d.copy(), d[k] = v, d[k], k in d,
// len(d), d.keys(), d.values(), d.items(), d.get(k[, default]). Refused, located: keys that are
// not strings, or not known when compiling; writing an activation into a dict that is a constant
// (a module attribute: that would change the module); any other op on a dict of tensors (pop,
// update, del, ...); reading a key the dict does not hold (TorchScript raises a KeyError).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript::detail {
namespace {

using Kind = Val::Kind;
namespace prim = c10::prim;
namespace aten = c10::aten;
const c10::Symbol kItems = c10::Symbol::fromQualString("aten::items");
const c10::Symbol kGet = c10::Symbol::fromQualString("aten::get");

constexpr const char* kFollowed =
    "zoc follows dicts of tensors through d[k] = v, d[k], k in d, len, keys, values, items, get "
    "and copy";

// The dict type of a dict that holds tensors, or nullptr.
c10::DictTypePtr tensor_dict_type(const c10::TypePtr& t) {
  auto d = t->cast<c10::DictType>();
  return d && holds_tensor(d->getValueType()) ? d : nullptr;
}

// A key known now, or nullptr.
const std::string* key_of(const Val& v) {
  return v.is(Kind::kConst) && v.value.isString() ? &v.value.toStringRef() : nullptr;
}

std::string keys_text(const std::vector<std::string>& keys) {
  if (keys.empty()) return "no keys";
  std::string s;
  for (const std::string& k : keys) s += (s.empty() ? "'" : ", '") + shown_text(k) + "'";
  return s;
}

// Python's d[key] = value: a new key goes last, an existing one keeps its place.
void put(Val& d, const std::string& key, Val value) {
  auto it = std::find(d.keys.begin(), d.keys.end(), key);
  if (it != d.keys.end()) {
    d.items[static_cast<size_t>(it - d.keys.begin())] = std::move(value);
  } else {
    d.keys.push_back(key);
    d.items.push_back(std::move(value));
  }
  d.depth = 1;
  for (const Val& item : d.items) {
    const uint32_t inner = item.is(Kind::kList) || item.is(Kind::kDict) ? item.depth : 0;
    d.depth = std::max(d.depth, inner + 1);
  }
}

}  // namespace

// Node n's inputs `in` (none poison). False: not a dict op; structural() and run_op go on.
bool Translator::dict_op(jit::Node* n, const std::vector<Val>& in) {
  const c10::Symbol k = n->kind();
  if ((k == prim::DictConstruct || k == aten::dict || k == aten::copy) &&
      n->outputs().size() == 1 && tensor_dict_type(n->output()->type()) &&
      (k == prim::DictConstruct || in.empty() || in[0].is(Kind::kDict))) {
    return new_dict(n, in);
  }
  if (in.empty()) return false;
  if (in[0].is(Kind::kDict)) {
    if (k == aten::_set_item) return write_dict(n, in);
    if (k == aten::__getitem__ || k == aten::__contains__ || k == aten::len || k == aten::keys ||
        k == aten::values || k == kItems || k == kGet) {
      return read_dict(n, in);
    }
    if (k.is_prim()) return false;  // tuples, casts, `d is None`: structural()
    unsupported(n, kFollowed);
    return true;
  }
  // d[k] = activation where d is a constant: a dict attribute of the module (Dict[str, Tensor]).
  if (k == aten::_set_item && in.size() == 3 && in[0].is(Kind::kConst) &&
      in[0].value.isGenericDict() && !in[2].is(Kind::kConst)) {
    unsupported(n,
                "it writes an activation into a dict that is not made by forward (a module "
                "attribute?); zoc does not change a module's values");
    return true;
  }
  return false;
}

// {k: v, ...} (prim::DictConstruct), OrderedDict() or dict() (aten::dict), dict(d) or d.copy().
bool Translator::new_dict(jit::Node* n, const std::vector<Val>& in) {
  const c10::DictTypePtr type = tensor_dict_type(n->output()->type());
  if (type->getKeyType()->kind() != c10::TypeKind::StringType) {
    unsupported(n, fmt::format("a dict of tensors with keys of type {}; zoc follows dicts whose "
                               "keys are strings known when it compiles the model",
                               shown_text(type->getKeyType()->repr_str())));
    return true;
  }
  Val d;
  d.kind = Kind::kDict;
  d.depth = 1;
  if (n->kind() == prim::DictConstruct) {
    for (size_t i = 0; i + 1 < in.size(); i += 2) {
      const std::string* key = key_of(in[i]);
      if (!key) {
        unsupported(n, "a dict key not known when zoc compiles the model");
        return true;
      }
      put(d, *key, in[i + 1]);
    }
  } else if (!in.empty()) {
    d.keys = in[0].keys;
    d.items = in[0].items;
    d.depth = in[0].depth;
  }
  if (!charge_folded_items(n, 2 * d.items.size() + 1)) return true;
  d.list = static_cast<int32_t>(lists_.size());
  lists_.push_back(ListObject{d.items, 0, d.keys});
  set(n->output(), std::move(d));
  return true;
}

// d[k] = v: the dict object changes, so every name of it reads the new content (aliasing.cpp).
bool Translator::write_dict(jit::Node* n, const std::vector<Val>& in) {
  const std::string* key = in.size() == 3 ? key_of(in[1]) : nullptr;
  if (!key) {
    unsupported(n, "a dict key not known when zoc compiles the model");
    return true;
  }
  Val d = in[0];
  const bool added = std::find(d.keys.begin(), d.keys.end(), *key) == d.keys.end();
  if (added && !charge_folded_items(n, d.items.size() + 2)) return true;
  put(d, *key, in[2]);
  if (d.depth > kMaxFoldedDepth) {
    error(n, fmt::format("dicts nested more than {} deep; zoc does not build such values while "
                         "compiling a model",
                         kMaxFoldedDepth));
    return true;
  }
  ListObject& o = lists_[static_cast<size_t>(d.list)];
  o.items = d.items;
  o.keys = d.keys;
  d.version = ++o.version;
  set(n->input(0), std::move(d));
  for (jit::Value* out : n->outputs()) set(out, Val::constant(c10::IValue()));
  return true;
}

// d[k], k in d, len(d), d.keys(), d.values(), d.items(), d.get(k[, default]).
bool Translator::read_dict(jit::Node* n, const std::vector<Val>& in) {
  const c10::Symbol k = n->kind();
  const Val& d = in[0];
  auto out = [&](Val v) {
    set(n->output(), std::move(v));
    return true;
  };
  auto list_of = [](std::vector<Val> items) {
    Val l;
    l.kind = Kind::kList;
    l.depth = 1;
    for (const Val& item : items) {
      const uint32_t inner = item.is(Kind::kList) || item.is(Kind::kDict) ? item.depth : 0;
      l.depth = std::max(l.depth, inner + 1);
    }
    l.items = std::move(items);
    return l;
  };
  if (n->outputs().size() != 1) {
    unsupported(n, kFollowed);
    return true;
  }
  if (k == aten::len && in.size() == 1) {
    return out(Val::constant(static_cast<int64_t>(d.keys.size())));
  }
  if (k == aten::keys && in.size() == 1) {
    c10::impl::GenericList keys(c10::StringType::get());
    for (const std::string& key : d.keys) keys.push_back(key);
    return out(Val::constant(c10::IValue(std::move(keys))));
  }
  if (k == aten::values && in.size() == 1) return out(list_of(d.items));
  if (k == kItems && in.size() == 1) {
    std::vector<Val> pairs;
    for (size_t i = 0; i < d.keys.size(); ++i) {
      pairs.push_back(list_of({Val::constant(d.keys[i]), d.items[i]}));
      pairs.back().list = -1;  // a tuple
    }
    if (!charge_folded_items(n, 3 * pairs.size())) return true;
    return out(list_of(std::move(pairs)));
  }
  const bool lookup = in.size() == 2 || (k == kGet && in.size() == 3);
  if (!lookup || k == aten::keys || k == aten::values || k == kItems || k == aten::len) {
    unsupported(n, kFollowed);
    return true;
  }
  const std::string* key = key_of(in[1]);
  if (!key) {
    unsupported(n, "a dict key not known when zoc compiles the model");
    return true;
  }
  auto it = std::find(d.keys.begin(), d.keys.end(), *key);
  if (k == aten::__contains__) return out(Val::constant(it != d.keys.end()));
  if (it != d.keys.end()) return out(d.items[static_cast<size_t>(it - d.keys.begin())]);
  if (k == kGet) return out(in.size() == 3 ? in[2] : Val::constant(c10::IValue()));
  error(n, fmt::format("forward reads the key '{}' of a dict that holds {} (TorchScript raises a "
                       "KeyError)",
                       shown_text(*key), keys_text(d.keys)));
  return true;
}

// A dict returned by forward ({'out': ..., 'aux': ...}): its values, activations, become the
// graph's outputs in insertion order. Where it is cheap, an output takes its key as its name
// (the name of the parameter-free node that makes it), so that the generated code says "out"
// and "aux"; a key that is already a name, or a value made by a layer with parameters (whose
// name is its state_dict name), keeps the node's name.
bool Translator::dict_outputs(const Val& dict, const SourceLoc& at) {
  if (dict.items.empty()) {
    diags_.error(at, "forward returns an empty dict; zoc compiles models that return tensors");
    return false;
  }
  for (size_t i = 0; i < dict.items.size(); ++i) {
    const Val& v = dict.items[i];
    if (!v.is(Kind::kTensor) || v.view != Val::View::kNone) {
      diags_.error(
          at, fmt::format("forward returns a dict whose value for '{}' is {}; zoc "
                          "compiles models that return a dict of tensors",
                          shown_text(dict.keys[i]),
                          v.is(Kind::kTensor) ? view_name(v.view) : std::string("not a tensor")));
      return false;
    }
    graph_.outputs.push_back(v.id);
  }
  for (size_t i = 0; i < dict.items.size(); ++i) {
    const std::string& key = dict.keys[i];
    const ir::ValueId v = dict.items[i].id;
    const int32_t p = graph_.values[static_cast<size_t>(v)].producer;
    ir::Node& node = graph_.nodes[static_cast<size_t>(p)];
    const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    const bool once = std::count(graph_.outputs.begin(), graph_.outputs.end(), v) == 1;
    if (!plain || !once || node.op == ir::OpKind::Input || node.output != v ||
        used_names_.count(key) || reserved_names_.count(key) || reserved_names_.count(node.name)) {
      continue;
    }
    used_names_.insert(key);
    node.name = key;
  }
  return true;
}

}  // namespace zoc::torchscript::detail
