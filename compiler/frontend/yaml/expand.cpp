// Expansion of `layers:` lists: op layers, groups, block instances, `repeat` and `when`.
//
// Expansion turns the parameterised model text into flat LayerInst records named like
// PyTorch's state_dict (`layer2.0.downsample.0`) whose inputs are slots, so that references
// may point forward and groups can stand for their last layer. Errors in one entry do not stop
// the others from being checked: a file with three unknown ops reports all three.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "compiler/frontend/yaml/internal.h"
#include "compiler/frontend/yaml/yaml_frontend.h"
#include "compiler/ir/verify.h"

namespace zoc::yaml {
namespace {

const std::vector<std::string> kReservedKeys = {"op",     "block", "layers", "input",
                                                "inputs", "when",  "repeat", "args"};

struct Ctx {
  Expansion& ex;
  const std::string& file;
  Diagnostics& diags;

  // Counts work against the alias-bomb budget; false once it is exceeded (reported once).
  bool spend(const YAML::Node& node) {
    if (ex.budget_exceeded) return false;
    // An alias repeats its errors with every copy: stop once there are more than anyone reads
    // (a fuzzed file gave 1.8 million errors).
    if (static_cast<int64_t>(diags.error_count()) >= kMaxErrors) {
      ex.budget_exceeded = true;
      diags.error(loc_of(file, node), fmt::format("more than {} errors; stopping", kMaxErrors));
      return false;
    }
    if (++ex.node_visits > kMaxNodeVisits || static_cast<int64_t>(ex.layers.size()) > kMaxLayers) {
      ex.budget_exceeded = true;
      diags.error(loc_of(file, node),
                  fmt::format("the model expands to more than {} layers or {} YAML nodes "
                              "(recursive aliases or runaway repetition?)",
                              kMaxLayers, kMaxNodeVisits));
      return false;
    }
    return true;
  }
};

bool valid_layer_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::optional<int64_t> attr_int(Ctx& c, const YAML::Node& node, const ExprEnv& env,
                                const ir::AttrSpec& spec, const std::string& what) {
  auto v = eval_int(c.file, node, env, what, c.diags);
  if (!v) return std::nullopt;
  if (*v < spec.min || *v > spec.max) {
    c.diags.error(loc_of(c.file, node),
                  fmt::format("{} must be {}, got {}", what, ir::attr_range_text(spec), *v));
    return std::nullopt;
  }
  return v;
}

std::optional<ir::AttrValue> parse_attr(Ctx& c, const YAML::Node& node, const ExprEnv& env,
                                        const ir::AttrSpec& spec, const std::string& what) {
  ir::AttrValue out;
  out.kind = spec.kind;
  switch (spec.kind) {
    case ir::AttrKind::Int: {
      auto v = attr_int(c, node, env, spec, what);
      if (!v) return std::nullopt;
      out.i = *v;
      return out;
    }
    case ir::AttrKind::Bool: {
      auto v = eval_bool(c.file, node, env, what, c.diags);
      if (!v) return std::nullopt;
      out.i = *v ? 1 : 0;
      return out;
    }
    case ir::AttrKind::Pair: {
      if (node.IsSequence()) {
        if (node.size() != 2) {
          c.diags.error(loc_of(c.file, node),
                        fmt::format("{} must be an integer or a pair [h, w], got a list of {}",
                                    what, node.size()));
          return std::nullopt;
        }
        auto h = attr_int(c, node[0], env, spec, what);
        auto w = attr_int(c, node[1], env, spec, what);
        if (!h || !w) return std::nullopt;
        out.pair = {*h, *w};
        return out;
      }
      auto v = attr_int(c, node, env, spec, what);
      if (!v) return std::nullopt;
      out.pair = {*v, *v};
      return out;
    }
    case ir::AttrKind::Init: {
      // A scheme by name: a literal, a string param or an expression giving one.
      auto v = eval_scalar(c.file, node, env, what, c.diags, "", /*allow_string=*/true);
      if (!v) return std::nullopt;
      std::string allowed;
      for (auto s = static_cast<int>(spec.min); s <= static_cast<int>(spec.max); ++s) {
        if (!allowed.empty()) allowed += s == static_cast<int>(spec.max) ? " or " : ", ";
        allowed += ir::init_scheme_name(static_cast<ir::InitScheme>(s));
      }
      const auto scheme = v->is_string() ? ir::init_scheme_from_name(v->as_string()) : std::nullopt;
      if (!scheme || static_cast<int>(*scheme) < spec.min || static_cast<int>(*scheme) > spec.max) {
        c.diags.error(loc_of(c.file, node),
                      fmt::format("{} must be {}, got {}", what, allowed, v->str()));
        return std::nullopt;
      }
      out.i = static_cast<int64_t>(*scheme);
      return out;
    }
    case ir::AttrKind::Float: {
      if (!node.IsScalar()) {
        c.diags.error(loc_of(c.file, node), fmt::format("{} must be a number", what));
        return std::nullopt;
      }
      const std::string& text = node.Scalar();
      double f = 0;
      if (!text.empty() && text[0] == '$') {
        auto v = eval_int(c.file, node, env, what, c.diags);
        if (!v) return std::nullopt;
        f = static_cast<double>(*v);
      } else {
        errno = 0;
        char* end = nullptr;
        f = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
            !std::isfinite(f)) {
          c.diags.error(loc_of(c.file, node),
                        fmt::format("{} must be a finite number, got '{}'", what, text));
          return std::nullopt;
        }
      }
      if (f < spec.min || f > spec.max) {
        c.diags.error(loc_of(c.file, node),
                      fmt::format("{} must be {}, got {:g}", what, ir::attr_range_text(spec), f));
        return std::nullopt;
      }
      out.f = f;
      return out;
    }
  }
  return std::nullopt;
}

struct Entry {
  std::string name;
  YAML::Node key;
  YAML::Node body;
  int slot = -1;
};

class ScopeExpander {
 public:
  ScopeExpander(Ctx& c, const std::string& prefix, int in_slot, const ExprEnv& env, int depth,
                std::vector<std::string>& block_stack)
      : c_(c),
        prefix_(prefix),
        in_slot_(in_slot),
        env_(env),
        depth_(depth),
        block_stack_(block_stack) {}

  int run(const YAML::Node& layers);
  const std::map<std::string, int>& scope() const { return scope_; }

 private:
  std::optional<int> resolve(const YAML::Node& ref, const std::string& layer);
  void expand_entry(Entry& e, int prev);
  void expand_op(Entry& e, const std::vector<MapEntry>& keys, const std::vector<int>& inputs,
                 const std::string& full);
  std::optional<int> expand_nested(Entry& e, const std::vector<MapEntry>& keys, int input,
                                   const std::string& full, const YAML::Node* block_key,
                                   const YAML::Node* repeat);

  Ctx& c_;
  const std::string& prefix_;
  int in_slot_;
  const ExprEnv& env_;
  int depth_;
  std::vector<std::string>& block_stack_;
  std::map<std::string, int> scope_;
};

int ScopeExpander::run(const YAML::Node& layers) {
  const SourceLoc loc = loc_of(c_.file, layers);
  if (depth_ > kMaxNestingDepth) {
    c_.diags.error(loc,
                   fmt::format("layers are nested more than {} levels deep", kMaxNestingDepth));
    return -1;
  }
  if (!layers.IsSequence()) {
    c_.diags.error(loc, "'layers' must be a list of entries like `- name: {op: relu}`");
    return -1;
  }
  if (layers.size() == 0) {
    c_.diags.error(loc, "'layers' is empty: a model or block needs at least one layer");
    return -1;
  }
  std::vector<Entry> entries;
  for (const YAML::Node& item : layers) {
    if (!c_.spend(item)) return -1;
    if (!item.IsMap() || item.size() != 1) {
      c_.diags.error(loc_of(c_.file, item),
                     "each layer must be a mapping with exactly one key, its name: "
                     "`- conv1: {op: conv2d, ...}`");
      continue;
    }
    const auto it = item.begin();
    const YAML::Node key = it->first;
    const std::string name = key.IsScalar() ? key.Scalar() : std::string();
    if (!valid_layer_name(name)) {
      c_.diags.error(loc_of(c_.file, key),
                     fmt::format("invalid layer name '{}': use letters, digits, '_' and '-'",
                                 name.substr(0, 64)));
      continue;
    }
    if (name == "input") {
      c_.diags.error(loc_of(c_.file, key),
                     "'input' is reserved: it names the input of the enclosing model or block");
      continue;
    }
    if (auto prev = scope_.find(name); prev != scope_.end()) {
      c_.diags.error(loc_of(c_.file, key),
                     fmt::format("duplicate layer name '{}' (first defined at {})", prefix_ + name,
                                 c_.ex.slots[prev->second].loc.str()));
      continue;
    }
    const int slot = static_cast<int>(c_.ex.slots.size());
    c_.ex.slots.push_back(Slot{prefix_ + name, loc_of(c_.file, key), -1, -1});
    scope_[name] = slot;
    entries.push_back(Entry{name, key, it->second, slot});
  }
  int prev = in_slot_;
  for (Entry& e : entries) {
    if (c_.ex.budget_exceeded) return -1;
    expand_entry(e, prev);
    prev = e.slot;
  }
  return entries.empty() ? -1 : entries.back().slot;
}

std::optional<int> ScopeExpander::resolve(const YAML::Node& ref, const std::string& layer) {
  if (!ref.IsScalar()) {
    c_.diags.error(loc_of(c_.file, ref),
                   fmt::format("layer '{}': an input must be a layer name", layer));
    return std::nullopt;
  }
  const std::string& name = ref.Scalar();
  if (name == "input") return in_slot_;
  auto it = scope_.find(name);
  if (it != scope_.end()) return it->second;
  std::vector<std::string> known = {"input"};
  for (const auto& [k, v] : scope_) known.push_back(k);
  const std::string hint = closest_match(name, known);
  c_.diags.error(loc_of(c_.file, ref),
                 fmt::format("layer '{}': input '{}' is not defined in this scope{}", layer, name,
                             hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
  return std::nullopt;
}

void ScopeExpander::expand_entry(Entry& e, int prev) {
  const std::string full = prefix_ + e.name;
  if (!e.body.IsMap()) {
    c_.diags.error(loc_of(c_.file, e.body.IsDefined() && !e.body.IsNull() ? e.body : e.key),
                   fmt::format("layer '{}' must be a mapping such as {{op: relu}}", full));
    return;
  }
  auto keys = map_entries(c_.file, e.body, fmt::format("layer '{}'", full), c_.diags);
  if (!keys) return;
  auto find = [&](std::string_view k) -> const MapEntry* {
    for (const MapEntry& m : *keys) {
      if (m.key == k) return &m;
    }
    return nullptr;
  };
  const MapEntry* op = find("op");
  const MapEntry* block = find("block");
  const MapEntry* group = find("layers");
  if ((op != nullptr) + (block != nullptr) + (group != nullptr) != 1) {
    c_.diags.error(loc_of(c_.file, e.key),
                   fmt::format("layer '{}' needs exactly one of 'op', 'block' or 'layers'", full));
    return;
  }
  // Inputs: `input: name`, `inputs: [a, b]`, or by default the previous layer.
  std::vector<int> inputs;
  const MapEntry* input = find("input");
  const MapEntry* input_list = find("inputs");
  bool inputs_ok = true;
  if (input && input_list) {
    c_.diags.error(loc_of(c_.file, input_list->key_node),
                   fmt::format("layer '{}': give 'input' or 'inputs', not both", full));
    return;
  }
  if (input) {
    auto s = resolve(input->value, full);
    inputs_ok = s.has_value();
    if (s) inputs.push_back(*s);
  } else if (input_list) {
    if (!input_list->value.IsSequence() || input_list->value.size() == 0) {
      c_.diags.error(
          loc_of(c_.file, input_list->value),
          fmt::format("layer '{}': 'inputs' must be a non-empty list of layer names", full));
      return;
    }
    for (const YAML::Node& ref : input_list->value) {
      auto s = resolve(ref, full);
      inputs_ok = inputs_ok && s.has_value();
      if (s) inputs.push_back(*s);
    }
  } else {
    inputs.push_back(prev);
  }
  if (!inputs_ok) return;
  // `when: false` removes the entry; its name then stands for its input (an identity).
  if (const MapEntry* when = find("when")) {
    auto on =
        eval_bool(c_.file, when->value, env_, fmt::format("layer '{}': 'when'", full), c_.diags);
    if (!on) return;
    if (!*on) {
      if (inputs.size() != 1) {
        c_.diags.error(
            loc_of(c_.file, when->key_node),
            fmt::format("layer '{}': a layer skipped by 'when' must have one input", full));
        return;
      }
      c_.ex.slots[e.slot].alias = inputs[0];
      return;
    }
  }
  if (op) {
    for (const char* k : {"repeat", "args"}) {
      if (const MapEntry* m = find(k)) {
        c_.diags.error(
            loc_of(c_.file, m->key_node),
            fmt::format("layer '{}': '{}' applies to blocks and groups, not ops", full, k));
        return;
      }
    }
    expand_op(e, *keys, inputs, full);
    return;
  }
  if (inputs.size() != 1) {
    c_.diags.error(loc_of(c_.file, e.key),
                   fmt::format("layer '{}': blocks and groups take exactly one input", full));
    return;
  }
  const MapEntry* repeat = find("repeat");
  auto out = expand_nested(e, *keys, inputs[0], full, block ? &block->value : nullptr,
                           repeat ? &repeat->value : nullptr);
  if (out) c_.ex.slots[e.slot].alias = *out;
}

void ScopeExpander::expand_op(Entry& e, const std::vector<MapEntry>& keys,
                              const std::vector<int>& inputs, const std::string& full) {
  const MapEntry& op_entry =
      *std::find_if(keys.begin(), keys.end(), [](const MapEntry& m) { return m.key == "op"; });
  const std::string op_name = op_entry.value.IsScalar() ? op_entry.value.Scalar() : "";
  const auto kind = ir::op_from_name(op_name);
  if (!kind || !ir::op_info(*kind).user) {
    std::vector<std::string> names;
    for (const ir::OpInfo& info : ir::all_ops()) {
      if (info.user) names.emplace_back(info.name);
    }
    const std::string hint = closest_match(op_name, names);
    c_.diags.error(loc_of(c_.file, op_entry.value),
                   fmt::format("layer '{}': unknown op '{}'{}", full, op_name,
                               hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
    return;
  }
  const ir::OpInfo& info = ir::op_info(*kind);
  ir::Attrs attrs;
  std::set<std::string, std::less<>>
      invalid;  // given but rejected: already reported, so not "missing"
  bool ok = true;
  std::optional<TensorOperand> operand;  // a weights tensor as the other operand
  for (const MapEntry& m : keys) {
    if (is_operand_key(m.key)) {
      auto o = tensor_operand(c_.file, m, operand.has_value(), prefix_, full, *kind, inputs.size(),
                              c_.diags);
      ok = ok && o.has_value();
      if (o) operand = std::move(o);
      continue;
    }
    if (std::find(kReservedKeys.begin(), kReservedKeys.end(), m.key) != kReservedKeys.end()) {
      continue;
    }
    if (!c_.spend(m.value)) return;
    const ir::AttrSpec* spec = ir::find_attr(*kind, m.key);
    if (spec && !spec->user) spec = nullptr;  // set by passes only (training mode)
    if (!spec) {
      std::vector<std::string> names;
      for (const ir::AttrSpec& s : info.attrs) {
        if (s.user) names.emplace_back(s.name);
      }
      const std::string hint = closest_match(m.key, names);
      // No near miss: say which ops do take it (`init` on a relu).
      std::string owners;
      for (const ir::OpInfo& other : ir::all_ops()) {
        const ir::AttrSpec* theirs = ir::find_attr(other.kind, m.key);
        if (other.user && theirs && theirs->user) {
          owners += fmt::format("{}{}", owners.empty() ? "" : ", ", other.name);
        }
      }
      c_.diags.error(
          loc_of(c_.file, m.key_node),
          fmt::format("layer '{}': unknown attribute '{}' for {}{}", full, m.key, info.name,
                      !hint.empty()    ? fmt::format(" (did you mean '{}'?)", hint)
                      : owners.empty() ? ""
                                       : fmt::format(" (it is an attribute of {})", owners)));
      ok = false;
      continue;
    }
    auto v = parse_attr(c_, m.value, env_, *spec,
                        fmt::format("layer '{}': attribute '{}'", full, m.key));
    if (!v) {
      invalid.insert(m.key);
      ok = false;
      continue;
    }
    // An Init attribute naming the op's PyTorch default is left out: absence means it (ops.def).
    if (spec->kind == ir::AttrKind::Init && v->i == static_cast<int64_t>(spec->min)) continue;
    attrs.set(spec->name, *v);
  }
  for (const ir::AttrSpec& spec : info.attrs) {
    if (attrs.has(spec.name) || invalid.count(spec.name)) continue;
    if (spec.required) {
      c_.diags.error(loc_of(c_.file, e.key), fmt::format("layer '{}': {} needs attribute '{}' ({})",
                                                         full, info.name, spec.name, spec.summary));
      ok = false;
    } else if (auto v = ir::default_attr(spec)) {
      attrs.set(spec.name, *v);
    }
  }
  const auto n = static_cast<int>(inputs.size());
  if (n < info.min_inputs || n > info.max_inputs) {
    c_.diags.error(loc_of(c_.file, e.key),
                   fmt::format("layer '{}': {} takes {} input{}, got {}", full, info.name,
                               info.min_inputs == info.max_inputs
                                   ? std::to_string(info.min_inputs)
                                   : fmt::format("{} to {}", info.min_inputs, info.max_inputs),
                               info.max_inputs == 1 ? "" : "s", n));
    ok = false;
  }
  if (!ok) return;
  c_.ex.slots[e.slot].layer = static_cast<int>(c_.ex.layers.size());
  c_.ex.layers.push_back(LayerInst{full, *kind, std::move(attrs), inputs, loc_of(c_.file, e.key),
                                   operand ? operand->name : "",
                                   operand ? operand->role : ir::OperandRole::kUnknown});
}

std::optional<int> ScopeExpander::expand_nested(Entry& e, const std::vector<MapEntry>& keys,
                                                int input, const std::string& full,
                                                const YAML::Node* block_key,
                                                const YAML::Node* repeat) {
  int64_t count = 1;
  if (repeat) {
    auto r = eval_int(c_.file, *repeat, env_, fmt::format("layer '{}': 'repeat'", full), c_.diags);
    if (!r) return std::nullopt;
    if (*r < 1 || *r > kMaxLayers) {
      c_.diags.error(loc_of(c_.file, *repeat),
                     fmt::format("layer '{}': 'repeat' must be between 1 and {}, got {}", full,
                                 kMaxLayers, *r));
      return std::nullopt;
    }
    count = *r;
  }
  const BlockDef* def = nullptr;
  const MapEntry* args = nullptr;
  for (const MapEntry& m : keys) {
    if (m.key == "args") args = &m;
    if (m.key != "args" && m.key != "block" && m.key != "layers" && m.key != "repeat" &&
        m.key != "input" && m.key != "inputs" && m.key != "when") {
      c_.diags.error(loc_of(c_.file, m.key_node),
                     fmt::format("layer '{}': unknown key '{}' for a {}", full, m.key,
                                 block_key ? "block instance" : "group"));
      return std::nullopt;
    }
  }
  if (block_key) {
    const std::string name = block_key->IsScalar() ? block_key->Scalar() : "";
    auto it = c_.ex.blocks.find(name);
    if (it == c_.ex.blocks.end()) {
      std::vector<std::string> names;
      for (const auto& [k, v] : c_.ex.blocks) names.push_back(k);
      const std::string hint = closest_match(name, names);
      c_.diags.error(loc_of(c_.file, *block_key),
                     fmt::format("layer '{}': unknown block '{}'{}", full, name,
                                 hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
      return std::nullopt;
    }
    def = &it->second;
    if (std::find(block_stack_.begin(), block_stack_.end(), name) != block_stack_.end()) {
      std::string chain;
      for (const std::string& b : block_stack_) chain += b + " -> ";
      c_.diags.error(loc_of(c_.file, *block_key),
                     fmt::format("layer '{}': block '{}' instantiates itself ({}{})", full, name,
                                 chain, name));
      return std::nullopt;
    }
  } else if (args) {
    c_.diags.error(loc_of(c_.file, args->key_node),
                   fmt::format("layer '{}': 'args' applies to block instances only", full));
    return std::nullopt;
  }
  std::optional<std::vector<MapEntry>> arg_entries;
  if (args) {
    arg_entries =
        map_entries(c_.file, args->value, fmt::format("layer '{}': 'args'", full), c_.diags);
    if (!arg_entries) return std::nullopt;
    for (const MapEntry& a : *arg_entries) {
      const bool known = std::any_of(def->params.begin(), def->params.end(),
                                     [&](const auto& p) { return p.first == a.key; });
      if (!known) {
        c_.diags.error(
            loc_of(c_.file, a.key_node),
            fmt::format("layer '{}': block '{}' has no parameter '{}'", full, def->name, a.key));
        return std::nullopt;
      }
    }
  }
  const YAML::Node body =
      def ? def->layers : std::find_if(keys.begin(), keys.end(), [](const MapEntry& m) {
                            return m.key == "layers";
                          })->value;
  const std::string& body_file = def ? def->file : c_.file;
  int cur = input;
  for (int64_t k = 0; k < count; ++k) {
    ExprEnv caller_env = env_;
    if (repeat) caller_env["i"] = ExprValue{k};
    ExprEnv child_env = def ? c_.ex.globals : caller_env;
    if (def) {
      for (const auto& [pname, dflt] : def->params) {
        const MapEntry* given = nullptr;
        if (arg_entries) {
          for (const MapEntry& a : *arg_entries) {
            if (a.key == pname) given = &a;
          }
        }
        std::optional<ExprValue> v;
        if (given) {
          v = eval_scalar(c_.file, given->value, caller_env,
                          fmt::format("layer '{}': argument '{}'", full, pname), c_.diags,
                          "an integer or a boolean", /*allow_string=*/true);
        } else if (dflt) {
          v = eval_scalar(def->file, *dflt, c_.ex.globals,
                          fmt::format("block '{}': default of '{}'", def->name, pname), c_.diags,
                          "an integer or a boolean", /*allow_string=*/true);
        } else {
          c_.diags.error(
              loc_of(c_.file, e.key),
              fmt::format("layer '{}': block '{}' needs argument '{}'", full, def->name, pname));
        }
        if (!v) return std::nullopt;
        child_env[pname] = *v;
      }
      block_stack_.push_back(def->name);
    }
    const std::string child_prefix = repeat ? fmt::format("{}.{}.", full, k) : full + ".";
    Ctx child_ctx{c_.ex, body_file, c_.diags};
    ScopeExpander child(child_ctx, child_prefix, cur, child_env, depth_ + 1, block_stack_);
    cur = child.run(body);
    if (def) block_stack_.pop_back();
    if (cur < 0) return std::nullopt;
  }
  return cur;
}

}  // namespace

int expand_layers(Expansion& ex, const std::string& file, const YAML::Node& layers,
                  const std::string& prefix, int in_slot, const ExprEnv& env, int depth,
                  std::vector<std::string>& block_stack, Diagnostics& diags,
                  std::map<std::string, int>* scope_out) {
  Ctx c{ex, file, diags};
  ScopeExpander scope(c, prefix, in_slot, env, depth, block_stack);
  const int out = scope.run(layers);
  if (scope_out) *scope_out = scope.scope();
  return out;
}

}  // namespace zoc::yaml
