// Reading YAML files and located scalars for the YAML frontend.
//
// yaml-cpp reports errors by exception and positions 0-based; this file turns both into zoc
// diagnostics (1-based `file:line:col`), so the rest of the frontend never sees an exception.
// It also rejects what yaml-cpp would otherwise read silently or explain badly: NUL bytes,
// invalid UTF-8, a second document after `---`, tabs in indentation, and keys or values holding
// control or invisible characters (a newline in a layer name would forge a diagnostic line; no
// name or value of a model needs one), so no later message can print one.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "compiler/frontend/yaml/internal.h"
#include "compiler/frontend/yaml/yaml_frontend.h"
#include "compiler/support/sanitize.h"

namespace zoc::yaml {

SourceLoc loc_of(const std::string& file, const YAML::Node& node) {
  if (!node.IsDefined()) return SourceLoc{file, 0, 0};
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return SourceLoc{file, 0, 0};
  return SourceLoc{file, m.line + 1, m.column + 1};
}

namespace {

// The 1-based line and column of byte `offset` of `text`.
SourceLoc loc_at(const std::string& path, const std::string& text, size_t offset) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return SourceLoc{path, line, static_cast<int>(offset - line_start) + 1};
}

// The offset of the first byte that is not part of well-formed UTF-8 (YAML's encoding), or npos.
size_t invalid_utf8_offset(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > text.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

// Whether 0-based line `line` of `text` is indented with a tab, which YAML forbids; yaml-cpp
// then reports only a structural error ("end of map not found") that does not say why.
bool indented_with_tab(const std::string& text, int line) {
  size_t pos = 0;
  for (int l = 0; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return false;
    ++pos;
  }
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) {
    if (text[pos] == '\t') return true;
    ++pos;
  }
  return false;
}

// Counts the documents of a YAML stream and notes where each starts and where its root node is.
//
// yaml-cpp 0.7's YAML::LoadAll() loops forever, allocating a null document per turn, when a
// token can start no node (a stray ',' at the top level: three bytes took 24 GB; found by
// fuzzing, jbeder/yaml-cpp#1040, fixed upstream by #1319 after 0.7). So the documents are
// counted with this handler, stopping when one consumes nothing, and the one document is then
// read with YAML::Load(), which parses only the first.
class DocumentCounter final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts, roots;
  // The first scalar (a key or a value) with text that shown_text would escape.
  std::optional<std::pair<YAML::Mark, std::string>> unprintable;

  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    root_pending_ = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    node(mark);
    if (!unprintable && terminal_safe(value, false) != value) unprintable.emplace(mark, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& mark) {
    if (root_pending_) roots.push_back(mark);
    root_pending_ = false;
  }
  bool root_pending_ = false;
};

}  // namespace

std::optional<Document> load_document(const std::string& path, const SourceLoc& included_from,
                                      Diagnostics& diags) {
  const SourceLoc where = included_from.known() ? included_from : SourceLoc{path, 0, 0};
  const char* what = included_from.known() ? "included file" : "model file";
  // Only regular files, and only so much of them: a device or FIFO may never end or may block
  // (`include: /dev/zero`, `include: /dev/stdin`).
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    diags.error(where,
                fmt::format("cannot open {} '{}': {}", what, path,
                            std::filesystem::is_directory(status) ? "it is a directory"
                                                                  : "it is not a regular file"));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error(where, fmt::format("cannot open {} '{}'", what, path));
    return std::nullopt;
  }
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > static_cast<size_t>(kMaxFileBytes)) {
      diags.error(where,
                  fmt::format("{} '{}' is larger than {} MiB", what, path, kMaxFileBytes >> 20));
      return std::nullopt;
    }
  }
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    diags.error(loc_at(path, text, nul), "not a YAML model file (it contains NUL bytes)");
    return std::nullopt;
  }
  if (const size_t bad = invalid_utf8_offset(text); bad != std::string::npos) {
    diags.error(loc_at(path, text, bad),
                fmt::format("not a YAML model file (byte 0x{:02X} is not valid UTF-8 text)",
                            static_cast<unsigned char>(text[bad])));
    return std::nullopt;
  }
  try {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    DocumentCounter docs;
    while (parser.HandleNextDocument(docs)) {
      const size_t n = docs.starts.size();
      if (n >= 2 && docs.starts[n - 1].pos == docs.starts[n - 2].pos) {
        const YAML::Mark& m = docs.starts.back();
        const char c = m.pos >= 0 && static_cast<size_t>(m.pos) < text.size() ? text[m.pos] : 0;
        diags.error(SourceLoc{path, m.line + 1, m.column + 1},
                    c > 0x20 && c < 0x7F ? fmt::format("YAML syntax error: unexpected '{}'", c)
                                         : std::string("YAML syntax error: unexpected input"));
        return std::nullopt;
      }
    }
    if (docs.unprintable) {
      const YAML::Mark& m = docs.unprintable->first;
      diags.error(SourceLoc{path, m.line + 1, m.column + 1},
                  fmt::format("'{}' holds a control or invisible character; the names and values "
                              "of a model file are printable text",
                              shown_text(docs.unprintable->second)));
      return std::nullopt;
    }
    if (docs.starts.size() > 1) {
      const YAML::Mark& m = docs.roots.size() > 1 ? docs.roots[1] : docs.starts[1];
      diags.error(SourceLoc{path, m.line + 1, m.column + 1},
                  fmt::format("the file holds {} YAML documents; a model file holds one",
                              docs.starts.size()));
      return std::nullopt;
    }
    const YAML::Node root = docs.starts.empty() ? YAML::Node() : YAML::Load(text);
    if (!root.IsMap()) {
      diags.error(loc_of(path, root),
                  root.IsNull() || !root.IsDefined()
                      ? std::string("the model file is empty")
                      : fmt::format("a model file must be a YAML mapping (zoc: 1, input: ..., "
                                    "layers: ...), not a {}",
                                    root.IsSequence() ? "list" : "single value"));
      return std::nullopt;
    }
    return Document{path, root};
  } catch (const YAML::DeepRecursion& e) {
    diags.error(SourceLoc{path, e.mark.line + 1, e.mark.column + 1},
                "YAML syntax error: the document is nested too deeply");
  } catch (const YAML::ParserException& e) {
    std::string hint;
    for (int line : {e.mark.line, e.mark.line - 1}) {
      if (line >= 0 && indented_with_tab(text, line)) {
        hint = fmt::format(" (line {} is indented with a tab; YAML indents with spaces only)",
                           line + 1);
        break;
      }
    }
    diags.error(SourceLoc{path, e.mark.line + 1, e.mark.column + 1},
                fmt::format("YAML syntax error: {}{}", terminal_safe(e.msg, false), hint));
  } catch (const YAML::Exception& e) {
    diags.error(SourceLoc{path, e.mark.line + 1, e.mark.column + 1},
                fmt::format("cannot read YAML: {}", terminal_safe(e.msg, false)));
  } catch (const std::exception& e) {
    diags.error(SourceLoc{path, 0, 0},
                fmt::format("cannot read YAML: {}", terminal_safe(e.what(), false)));
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
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

std::optional<ExprValue> eval_scalar(const std::string& file, const YAML::Node& node,
                                     const ExprEnv& env, const std::string& what,
                                     Diagnostics& diags, const char* expected, bool allow_string) {
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
    if (allow_string) return ExprValue{text};
    diags.error(loc, fmt::format("{} must be {}, got '{}'", what, expected, text));
    return std::nullopt;
  }
  return ExprValue{n};
}

std::optional<int64_t> eval_int(const std::string& file, const YAML::Node& node, const ExprEnv& env,
                                const std::string& what, Diagnostics& diags) {
  auto v = eval_scalar(file, node, env, what, diags, "an integer");
  if (!v) return std::nullopt;
  if (!v->is_int()) {
    diags.error(loc_of(file, node), fmt::format("{} must be an integer, got {}", what, v->str()));
    return std::nullopt;
  }
  return v->as_int();
}

std::optional<bool> eval_bool(const std::string& file, const YAML::Node& node, const ExprEnv& env,
                              const std::string& what, Diagnostics& diags) {
  auto v = eval_scalar(file, node, env, what, diags, "true or false");
  if (!v) return std::nullopt;
  if (!v->is_bool()) {
    diags.error(loc_of(file, node),
                fmt::format("{} must be true or false, got {}", what, v->str()));
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

std::optional<TensorOperand> tensor_operand(const std::string& file, const MapEntry& m, bool seen,
                                            const std::string& prefix, const std::string& layer,
                                            ir::OpKind op, size_t inputs, Diagnostics& diags) {
  const YAML::Node& value = m.value;
  if (seen) {
    diags.error(loc_of(file, m.key_node),
                fmt::format("layer '{}': give one of 'tensor', 'parameter' and 'buffer'", layer));
    return std::nullopt;
  }
  if (!ir::is_binary_op(op) || inputs != 1) {
    diags.error(loc_of(file, value),
                fmt::format("layer '{}': only a one-input add, sub, mul or div takes a tensor "
                            "operand ('tensor', 'parameter', 'buffer'), not {} with {} input{}",
                            layer, ir::op_info(op).name, inputs, inputs == 1 ? "" : "s"));
    return std::nullopt;
  }
  const std::string name = value.IsScalar() ? value.Scalar() : "";
  bool ok = !name.empty() && name.size() <= 256 && name.front() != '.' && name.back() != '.' &&
            name.find("..") == std::string::npos;
  for (char c : name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  }
  if (!ok) {
    diags.error(loc_of(file, value),
                fmt::format("layer '{}': the operand must name a tensor of the weights file, such "
                            "as mean or ls1.gamma (letters, digits, '_', '-' and dots)",
                            layer));
    return std::nullopt;
  }
  const ir::OperandRole role = m.key == "parameter" ? ir::OperandRole::kParameter
                               : m.key == "buffer"  ? ir::OperandRole::kBuffer
                                                    : ir::OperandRole::kUnknown;
  return TensorOperand{prefix + name, role};
}

}  // namespace zoc::yaml
