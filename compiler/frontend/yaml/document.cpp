// Reading YAML files and located scalars for the YAML frontend.
//
// yaml-cpp reports errors by exception and positions 0-based; this file turns both into zoc
// diagnostics (1-based `file:line:col`), so the rest of the frontend never sees an exception.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "compiler/frontend/yaml/internal.h"

namespace zoc::yaml {

SourceLoc loc_of(const std::string& file, const YAML::Node& node) {
  if (!node.IsDefined()) return SourceLoc{file, 0, 0};
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return SourceLoc{file, 0, 0};
  return SourceLoc{file, m.line + 1, m.column + 1};
}

std::optional<Document> load_document(const std::string& path, const SourceLoc& included_from,
                                      Diagnostics& diags) {
  std::ifstream in(path, std::ios::binary);
  const SourceLoc where = included_from.known() ? included_from : SourceLoc{path, 0, 0};
  if (!in) {
    diags.error(where, fmt::format("cannot open model file '{}'", path));
    return std::nullopt;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  if (text.find('\0') != std::string::npos) {
    diags.error(SourceLoc{path, 0, 0}, "not a YAML model file (it contains NUL bytes)");
    return std::nullopt;
  }
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) {
      diags.error(loc_of(path, root), root.IsNull() || !root.IsDefined()
                                          ? std::string("the model file is empty")
                                          : std::string("a model file must be a YAML mapping"));
      return std::nullopt;
    }
    return Document{path, root};
  } catch (const YAML::ParserException& e) {
    diags.error(SourceLoc{path, e.mark.line + 1, e.mark.column + 1},
                fmt::format("YAML syntax error: {}", e.msg));
  } catch (const YAML::Exception& e) {
    diags.error(SourceLoc{path, e.mark.line + 1, e.mark.column + 1},
                fmt::format("cannot read YAML: {}", e.msg));
  } catch (const std::exception& e) {
    diags.error(SourceLoc{path, 0, 0}, fmt::format("cannot read YAML: {}", e.what()));
  }
  return std::nullopt;
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_dist = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    // Levenshtein distance with a rolling row.
    std::vector<size_t> row(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (word[i - 1] != c[j - 1])});
        diag = up;
      }
    }
    if (row[c.size()] < best_dist) {
      best_dist = row[c.size()];
      best = c;
    }
  }
  return best;
}

namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::optional<ExprValue> eval_scalar(const std::string& file, const YAML::Node& node,
                                     const ExprEnv& env, const std::string& what,
                                     Diagnostics& diags) {
  const SourceLoc loc = loc_of(file, node);
  if (!node.IsScalar()) {
    diags.error(loc, fmt::format("{} must be a single value", what));
    return std::nullopt;
  }
  const std::string& text = node.Scalar();
  if (text.size() >= 3 && text.compare(0, 2, "${") == 0 && text.back() == '}') {
    auto v = eval_expr(std::string_view(text).substr(2, text.size() - 3), env);
    if (!v) {
      diags.error(loc, fmt::format("{}: {}", what, v.error().message));
      return std::nullopt;
    }
    return *v;
  }
  if (!text.empty() && text[0] == '$') {
    const std::string_view name = std::string_view(text).substr(1);
    if (!is_identifier(name)) {
      diags.error(loc, fmt::format("{}: '{}' is not a parameter reference (write $name or "
                                   "${{expression}})",
                                   what, text));
      return std::nullopt;
    }
    auto it = env.find(name);
    if (it == env.end()) {
      std::vector<std::string> known;
      for (const auto& [k, v] : env) known.push_back(k);
      const std::string hint = closest_match(std::string(name), known);
      diags.error(loc, fmt::format("{}: unknown parameter '{}'{}", what, name,
                                   hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
      return std::nullopt;
    }
    return it->second;
  }
  if (text == "true") return ExprValue{true};
  if (text == "false") return ExprValue{false};
  int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (ec == std::errc::result_out_of_range) {
    diags.error(loc, fmt::format("{}: integer '{}' is out of range", what, text));
    return std::nullopt;
  }
  if (ec != std::errc() || ptr != end || text.empty()) {
    diags.error(loc, fmt::format("{} must be an integer or a boolean, got '{}'", what, text));
    return std::nullopt;
  }
  return ExprValue{n};
}

std::optional<int64_t> eval_int(const std::string& file, const YAML::Node& node,
                                const ExprEnv& env, const std::string& what, Diagnostics& diags) {
  auto v = eval_scalar(file, node, env, what, diags);
  if (!v) return std::nullopt;
  if (!v->is_int()) {
    diags.error(loc_of(file, node), fmt::format("{} must be an integer, got {}", what, v->str()));
    return std::nullopt;
  }
  return v->as_int();
}

std::optional<bool> eval_bool(const std::string& file, const YAML::Node& node,
                              const ExprEnv& env, const std::string& what, Diagnostics& diags) {
  auto v = eval_scalar(file, node, env, what, diags);
  if (!v) return std::nullopt;
  if (!v->is_bool()) {
    diags.error(loc_of(file, node), fmt::format("{} must be true or false, got {}", what, v->str()));
    return std::nullopt;
  }
  return v->as_bool();
}

std::optional<std::vector<MapEntry>> map_entries(const std::string& file, const YAML::Node& map,
                                                 const std::string& what, Diagnostics& diags) {
  if (!map.IsMap()) {
    diags.error(loc_of(file, map), fmt::format("{} must be a mapping", what));
    return std::nullopt;
  }
  std::vector<MapEntry> out;
  std::set<std::string> seen;
  bool ok = true;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar()) {
      diags.error(loc_of(file, key), fmt::format("{}: keys must be plain names", what));
      ok = false;
      continue;
    }
    if (!seen.insert(key.Scalar()).second) {
      diags.error(loc_of(file, key), fmt::format("{}: duplicate key '{}'", what, key.Scalar()));
      ok = false;
      continue;
    }
    out.push_back({key.Scalar(), key, it->second});
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace zoc::yaml
