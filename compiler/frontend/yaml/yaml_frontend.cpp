// The YAML frontend's entry point: top-level keys, includes, block definitions, params and the
// model input, then expansion (expand.cpp) and linking (link.cpp).
#include "compiler/frontend/yaml/yaml_frontend.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/yaml/internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::yaml {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kModelKeys = {"zoc",   "name",   "include", "params",
                                             "input", "layers", "output",  "blocks"};
const std::vector<std::string> kLibraryKeys = {"zoc", "include", "blocks"};
const std::vector<std::string> kInputKeys = {"channels", "height", "width"};

// What an include may name (models/README.md, docs/security.md): a file in the folder of the
// file that includes it or below it, by a relative path. An absolute path or '..' is refused as
// written, and a path that resolves elsewhere (a symbolic link) once resolved, so a model file
// cannot make zoc read, and quote in its errors, a file of the user's outside the model's folder
// (`include: /etc/shadow` printed its lines). Devices, pipes and folders are refused when the
// file is opened (load_document). Returns why `name` may not be included, or "".
std::string include_refusal(const fs::path& including_file, const std::string& name) {
  const fs::path rel(name);
  const std::string shown = shown_text(name);
  constexpr const char* kRule =
      "an include names a file in the including file's folder or below "
      "it, by a relative path (models/README.md)";
  if (rel.is_absolute()) return fmt::format("include '{}' is an absolute path: {}", shown, kRule);
  for (const fs::path& part : rel) {
    if (part == "..") {
      return fmt::format("include '{}' leads out of the including file's folder ('..'): {}", shown,
                         kRule);
    }
  }
  std::error_code ec;
  const fs::path dir =
      including_file.parent_path().empty() ? fs::path(".") : including_file.parent_path();
  const fs::path base = fs::weakly_canonical(dir, ec);
  const fs::path target = ec ? fs::path() : fs::weakly_canonical(dir / rel, ec);
  const auto [mismatch, _] = std::mismatch(base.begin(), base.end(), target.begin(), target.end());
  if (ec || mismatch != base.end()) {
    return fmt::format(
        "include '{}' resolves outside the including file's folder (a symbolic "
        "link?): {}",
        shown, kRule);
  }
  return "";
}

class Loader {
 public:
  Loader(Diagnostics& diags, const Options& options) : diags_(diags), options_(options) {}

  std::optional<ir::Graph> run(const std::string& path);

 private:
  std::optional<std::vector<MapEntry>> top_level(const Document& doc,
                                                 const std::vector<std::string>& allowed);
  void load_blocks(const Document& doc, const std::vector<MapEntry>& keys, int depth);
  void parse_block(const std::string& file, const MapEntry& entry);
  bool parse_params(const std::string& file, const YAML::Node& params);
  bool parse_input(const std::string& file, const YAML::Node& input, const SourceLoc& at);
  std::optional<std::vector<int>> parse_outputs(const std::string& file, const YAML::Node& output,
                                                const std::map<std::string, int>& scope);

  Diagnostics& diags_;
  const Options& options_;
  Expansion ex_;
  std::vector<std::string> include_stack_;
};

std::optional<std::vector<MapEntry>> Loader::top_level(const Document& doc,
                                                       const std::vector<std::string>& allowed) {
  auto keys = map_entries(doc.path, doc.root, "the model file", diags_);
  if (!keys) return std::nullopt;
  bool has_version = false;
  for (const MapEntry& m : *keys) {
    if (std::find(allowed.begin(), allowed.end(), m.key) == allowed.end()) {
      const std::string hint = closest_match(m.key, allowed);
      diags_.error(loc_of(doc.path, m.key_node),
                   fmt::format("unknown top-level key '{}' {}", m.key,
                               hint.empty() ? fmt::format("(expected {})", fmt::join(allowed, ", "))
                                            : fmt::format("(did you mean '{}'?)", hint)));
    }
    if (m.key == "zoc") {
      has_version = true;
      if (!m.value.IsScalar() || m.value.Scalar() != "1") {
        diags_.error(loc_of(doc.path, m.value),
                     "unsupported format version: this zoc reads 'zoc: 1' files");
      }
    }
  }
  if (!has_version) {
    diags_.error(SourceLoc{doc.path, 1, 1},
                 "missing 'zoc: 1' (the format version) at the top of the file");
  }
  return keys;
}

void Loader::load_blocks(const Document& doc, const std::vector<MapEntry>& keys, int depth) {
  for (const MapEntry& m : keys) {
    if (m.key == "include") {
      if (!m.value.IsSequence() && !m.value.IsScalar()) {
        diags_.error(loc_of(doc.path, m.value), "'include' must be a file name or a list of them");
        continue;
      }
      std::vector<YAML::Node> files;
      if (m.value.IsScalar()) {
        files.push_back(m.value);
      } else {
        for (const YAML::Node& f : m.value) files.push_back(f);
      }
      for (const YAML::Node& f : files) {
        const SourceLoc at = loc_of(doc.path, f);
        if (!f.IsScalar() || f.Scalar().empty()) {
          diags_.error(at, "an include must be a file name");
          continue;
        }
        if (const std::string why = include_refusal(doc.path, f.Scalar()); !why.empty()) {
          diags_.error(at, why);
          continue;
        }
        const fs::path target = fs::path(doc.path).parent_path() / f.Scalar();
        std::error_code ec;
        const std::string canon = fs::weakly_canonical(target, ec).string();
        if (auto first = std::find(include_stack_.begin(), include_stack_.end(), canon);
            first != include_stack_.end()) {
          std::string chain;
          for (auto it = first; it != include_stack_.end(); ++it) {
            chain += fs::path(*it).filename().string() + " -> ";
          }
          diags_.error(
              at, fmt::format("include cycle: {}{}", chain, fs::path(canon).filename().string()));
          continue;
        }
        if (depth + 1 > kMaxIncludeDepth) {
          diags_.error(at, fmt::format("includes nested more than {} deep", kMaxIncludeDepth));
          continue;
        }
        auto inc = load_document(target.string(), at, diags_);
        if (!inc) continue;
        auto inc_keys = top_level(*inc, kLibraryKeys);
        if (!inc_keys) continue;
        include_stack_.push_back(canon);
        load_blocks(*inc, *inc_keys, depth + 1);
        include_stack_.pop_back();
      }
    }
  }
  for (const MapEntry& m : keys) {
    if (m.key != "blocks") continue;
    auto defs = map_entries(doc.path, m.value, "'blocks'", diags_);
    if (!defs) continue;
    for (const MapEntry& d : *defs) parse_block(doc.path, d);
  }
}

void Loader::parse_block(const std::string& file, const MapEntry& entry) {
  const SourceLoc loc = loc_of(file, entry.key_node);
  if (auto prev = ex_.blocks.find(entry.key); prev != ex_.blocks.end()) {
    diags_.error(
        loc, fmt::format("block '{}' is already defined at {}", entry.key, prev->second.loc.str()));
    return;
  }
  auto keys = map_entries(file, entry.value, fmt::format("block '{}'", entry.key), diags_);
  if (!keys) return;
  BlockDef def{entry.key, file, YAML::Node(), {}, loc};
  bool ok = true;
  for (const MapEntry& m : *keys) {
    if (m.key == "layers") {
      def.layers = m.value;
    } else if (m.key == "params") {
      if (m.value.IsSequence()) {
        for (const YAML::Node& p : m.value) {
          if (!p.IsScalar()) {
            diags_.error(loc_of(file, p), "a block parameter must be a name");
            ok = false;
            continue;
          }
          def.params.emplace_back(p.Scalar(), std::nullopt);
        }
      } else if (m.value.IsMap()) {
        auto params =
            map_entries(file, m.value, fmt::format("block '{}': params", entry.key), diags_);
        if (!params) return;
        for (const MapEntry& p : *params) {
          def.params.emplace_back(
              p.key, p.value.IsNull() ? std::nullopt : std::optional<YAML::Node>(p.value));
        }
      } else {
        diags_.error(loc_of(file, m.value),
                     "block params must be a list of names or a mapping of names to defaults");
        ok = false;
      }
    } else {
      diags_.error(loc_of(file, m.key_node),
                   fmt::format("block '{}': unknown key '{}' (expected 'params' or 'layers')",
                               entry.key, m.key));
      ok = false;
    }
  }
  if (!def.layers.IsDefined()) {
    diags_.error(loc, fmt::format("block '{}' has no 'layers'", entry.key));
    ok = false;
  }
  if (ok) ex_.blocks.emplace(entry.key, std::move(def));
}

bool Loader::parse_params(const std::string& file, const YAML::Node& params) {
  auto entries = map_entries(file, params, "'params'", diags_);
  if (!entries) return false;
  bool ok = true;
  for (const MapEntry& m : *entries) {
    auto v = eval_scalar(file, m.value, ex_.globals, fmt::format("param '{}'", m.key), diags_,
                         "an integer or a boolean", /*allow_string=*/true);
    if (!v) {
      ok = false;
      continue;
    }
    ex_.globals[m.key] = *v;
  }
  return ok;
}

bool Loader::parse_input(const std::string& file, const YAML::Node& input, const SourceLoc& at) {
  if (!input.IsDefined()) {
    diags_.error(at, "missing 'input: {channels: C, height: H, width: W}'");
    return false;
  }
  auto keys = map_entries(file, input, "'input'", diags_);
  if (!keys) return false;
  ir::Attrs attrs;
  bool ok = true;
  for (const MapEntry& m : *keys) {
    const ir::AttrSpec* spec = ir::find_attr(ir::OpKind::Input, m.key);
    if (!spec) {
      diags_.error(
          loc_of(file, m.key_node),
          fmt::format("'input': unknown key '{}' (expected channels, height, width)", m.key));
      ok = false;
      continue;
    }
    auto v = eval_int(file, m.value, ex_.globals, fmt::format("input {}", m.key), diags_);
    if (!v) {
      ok = false;
      continue;
    }
    if (*v < spec->min || *v > spec->max) {
      diags_.error(loc_of(file, m.value), fmt::format("input {} must be between {} and {}, got {}",
                                                      m.key, static_cast<int64_t>(spec->min),
                                                      static_cast<int64_t>(spec->max), *v));
      ok = false;
      continue;
    }
    attrs.set(m.key, ir::AttrValue{ir::AttrKind::Int, *v, {}, 0});
  }
  for (const std::string& k : kInputKeys) {
    if (!attrs.has(k) && ok) {
      diags_.error(loc_of(file, input), fmt::format("'input' needs '{}'", k));
      ok = false;
    }
  }
  ex_.layers.push_back(LayerInst{"input", ir::OpKind::Input, attrs, {}, loc_of(file, input)});
  ex_.slots.push_back(Slot{"input", loc_of(file, input), 0, -1});
  return ok;
}

// `output: name`, or `output: [a, b]` for several outputs, in that order: top-level layers.
std::optional<std::vector<int>> Loader::parse_outputs(const std::string& file,
                                                      const YAML::Node& output,
                                                      const std::map<std::string, int>& scope) {
  std::vector<YAML::Node> names;
  if (output.IsSequence() && output.size() > 0) {
    for (const YAML::Node& o : output) names.push_back(o);
  } else {
    names.push_back(output);
  }
  std::vector<int> slots;
  std::map<std::string, SourceLoc> seen;
  bool ok = true;
  for (const YAML::Node& o : names) {
    auto it = o.IsScalar() ? scope.find(o.Scalar()) : scope.end();
    if (it == scope.end()) {
      std::vector<std::string> known;
      for (const auto& [k, v] : scope) known.push_back(k);
      const std::string hint = o.IsScalar() ? closest_match(o.Scalar(), known) : "";
      diags_.error(
          loc_of(file, o),
          o.IsScalar()
              ? fmt::format("'output' names '{}', which is not a top-level layer{}", o.Scalar(),
                            hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint))
              : std::string("'output' must be the name of a top-level layer, or a "
                            "list of them"));
      ok = false;
      continue;
    }
    if (auto [prev, fresh] = seen.emplace(o.Scalar(), loc_of(file, o)); !fresh) {
      diags_.error(loc_of(file, o), fmt::format("'output' names '{}' twice (first at {})",
                                                o.Scalar(), prev->second.str()));
      ok = false;
      continue;
    }
    slots.push_back(it->second);
  }
  if (!ok) return std::nullopt;
  return slots;
}

std::optional<ir::Graph> Loader::run(const std::string& path) {
  auto doc = load_document(path, SourceLoc{}, diags_);
  if (!doc) return std::nullopt;
  auto keys = top_level(*doc, kModelKeys);
  if (!keys) return std::nullopt;
  std::error_code ec;
  include_stack_.push_back(fs::weakly_canonical(path, ec).string());
  load_blocks(*doc, *keys, 0);

  auto get = [&](std::string_view k) -> YAML::Node {
    for (const MapEntry& m : *keys) {
      if (m.key == k) return m.value;
    }
    return YAML::Node(YAML::NodeType::Undefined);
  };
  const SourceLoc top{path, 1, 1};
  std::string name = fs::path(path).stem().string();
  if (YAML::Node n = get("name"); n.IsDefined()) {
    if (!n.IsScalar() || n.Scalar().empty()) {
      diags_.error(loc_of(path, n), "'name' must be a non-empty string");
    } else {
      name = n.Scalar();
    }
  }
  if (YAML::Node p = get("params"); p.IsDefined()) parse_params(path, p);
  for (const auto& [key, text] : options_.overrides) {
    auto it = ex_.globals.find(key);
    if (it == ex_.globals.end()) {
      std::vector<std::string> known;
      for (const auto& [k, v] : ex_.globals) known.push_back(k);
      const std::string hint = closest_match(key, known);
      diags_.error(SourceLoc{"--set", 0, 0},
                   fmt::format("'{}' is not a param of model '{}'{}", key, name,
                               hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
      continue;
    }
    if (it->second.is_string()) {  // a name such as kaiming_normal_fan_out, taken as written
      it->second = ExprValue{text};
      continue;
    }
    auto v = eval_expr(text, {});
    if (!v || v->v.index() != it->second.v.index()) {
      diags_.error(SourceLoc{"--set", 0, 0},
                   fmt::format("--set {}={}: expected {}", key, text,
                               it->second.is_int() ? "an integer" : "true or false"));
      continue;
    }
    it->second = *v;
  }
  if (diags_.has_errors()) return std::nullopt;
  const bool input_ok = parse_input(path, get("input"), top);
  YAML::Node layers = get("layers");
  if (!layers.IsDefined()) {
    diags_.error(top, "missing 'layers': the model has no layers");
    return std::nullopt;
  }
  std::vector<std::string> block_stack;
  std::map<std::string, int> scope;
  int out = expand_layers(ex_, path, layers, "", 0, ex_.globals, 0, block_stack, diags_, &scope);
  std::vector<int> outputs = {out};
  if (YAML::Node o = get("output"); o.IsDefined() && out >= 0) {
    auto named = parse_outputs(path, o, scope);
    if (!named) return std::nullopt;
    outputs = std::move(*named);
  }
  if (!input_ok || out < 0 || diags_.has_errors()) return std::nullopt;
  return link_graph(ex_, name, outputs, diags_);
}

}  // namespace

std::optional<ir::Graph> load_model(const std::string& path, Diagnostics& diags,
                                    const Options& options) {
  Loader loader(diags, options);
  return loader.run(path);
}

}  // namespace zoc::yaml
