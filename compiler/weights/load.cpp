// Loading and validating a safetensors weights file against a graph (see weights.h).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/support/sanitize.h"
#include "compiler/weights/weights.h"
#include "zoc/io/safetensors.h"

namespace zoc {
namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The dtypes st::to_float32 converts. (F8 counts as floating point to the reader, but zoc does
// not convert it.)
bool converts_to_float32(st::DType t) {
  return t == st::DType::F32 || t == st::DType::F16 || t == st::DType::BF16 || t == st::DType::F64;
}

// A module's whole state_dict (safetensors metadata "format": "pt", as `zoc extract-weights`
// and safetensors.torch write it) holds the tensors of layers no output depends on, such as
// Inception's auxiliary head: while nothing else is wrong they are ignored, with one note. Any
// other file (or a state_dict that also misses tensors, where an unused name is a clue to a
// misnamed one) gets an error per tensor no layer uses.
void report_unused(const st::File& file, const std::set<std::string, std::less<>>& expected,
                   const ir::Graph& graph, bool other_errors, const SourceLoc& loc,
                   Diagnostics& diags) {
  std::vector<std::string> unused;
  for (const st::TensorView& t : file.tensors()) {
    if (!expected.count(t.name)) unused.push_back(shown_text(t.name));
  }
  if (unused.empty()) return;
  const auto& meta = file.metadata();
  const bool state_dict = std::any_of(meta.begin(), meta.end(), [](const auto& kv) {
    return kv.first == "format" && kv.second == "pt";
  });
  if (state_dict && !other_errors) {
    constexpr size_t kShown = 4;
    const size_t n = unused.size();
    const std::string more = n > kShown ? fmt::format(" and {} more", n - kShown) : "";
    unused.resize(std::min(n, kShown));
    diags.note(loc, fmt::format("{} tensor{} of this state_dict no layer of model '{}' uses, "
                                "ignored (an unused layer or an auxiliary head): '{}'{}",
                                n, n == 1 ? "" : "s", shown_text(graph.name),
                                fmt::join(unused, "', '"), more));
    return;
  }
  for (const std::string& name : unused) {
    diags.error(loc, fmt::format("unexpected tensor '{}': no layer of model '{}' uses it", name,
                                 shown_text(graph.name)));
  }
}

// One-element parameters the frontend compiled in as a layer's constant (Node::scalar_from): a
// file that holds one under its name must hold the value compiled in, else the model would
// silently run new weights with an old constant. Each such name then counts as expected.
void check_compiled_constants(const ir::Graph& graph, const st::File& file,
                              std::set<std::string, std::less<>>& expected, const SourceLoc& loc,
                              Diagnostics& diags) {
  std::set<std::string> reported;
  for (const ir::Node& node : graph.nodes) {
    if (node.scalar_from.empty() || !node.attrs.has("scalar")) continue;
    expected.insert(node.scalar_from);
    const st::TensorView* t = file.find(node.scalar_from);
    if (!t || reported.count(node.scalar_from)) continue;
    const float compiled = static_cast<float>(node.attrs.f("scalar"));
    float held = 0;
    const bool one =
        t->numel() == 1 && converts_to_float32(t->dtype) && st::to_float32(*t, &held, 1).ok();
    if (one && held == compiled) continue;
    reported.insert(node.scalar_from);
    const std::string what = one ? fmt::format("holds {}", held)
                                 : fmt::format("has shape {} and dtype {}", shape_str(t->shape),
                                               st::dtype_name(t->dtype));
    diags.error(loc, fmt::format("tensor '{}' {}, but the model file's value {} is compiled into "
                                 "layer '{}' ({}) as a constant: compile a model file that holds "
                                 "these weights instead",
                                 shown_text(node.scalar_from), what, compiled,
                                 shown_text(node.name), ir::op_info(node.op).name));
  }
}

}  // namespace

std::optional<Weights> load_weights(const ir::Graph& graph, const std::string& path,
                                    Diagnostics& diags, const LoadWeightsOptions& options) {
  auto file = st::File::open(path);
  if (!file) {
    diags.file_error(path, file.error().message);
    return std::nullopt;
  }
  return load_weights(graph, *file, path, diags, options);
}

std::optional<Weights> load_weights(const ir::Graph& graph, const st::File& file,
                                    const std::string& path, Diagnostics& diags,
                                    const LoadWeightsOptions& options) {
  const SourceLoc file_loc{path, 0, 0};
  Weights out;
  std::set<std::string, std::less<>> expected;
  const size_t errors_before = diags.error_count();
  for (const ir::Node& node : graph.nodes) {
    for (const ir::ParamSpec& p : node.params) {
      // A tensor several layers read (a shared layer's, a buffer several ops take) is checked
      // once; the verifier made them declare it alike.
      if (!expected.insert(p.name).second) continue;
      // Names from the model and the file, as messages show them (sanitize.h).
      const std::string layer =
          fmt::format("layer '{}' ({})", shown_text(node.name), ir::op_info(node.op).name);
      const std::string name = shown_text(p.name);
      const st::TensorView* t = file.find(p.name);
      if (!t) {
        if (!p.optional) {
          diags.error(file_loc, fmt::format("missing tensor '{}' needed by {} with shape {}", name,
                                            layer, shape_str(p.shape)));
        }
        continue;
      }
      if (t->shape != p.shape) {
        diags.error(file_loc, fmt::format("tensor '{}' has shape {}, but {} expects {}", name,
                                          shape_str(t->shape), layer, shape_str(p.shape)));
        continue;
      }
      if (p.dtype == ir::DType::I64) {
        if (t->dtype != st::DType::I64) {
          diags.error(file_loc, fmt::format("tensor '{}' has dtype {}, but {} expects I64", name,
                                            st::dtype_name(t->dtype), layer));
        }
        continue;
      }
      if (!converts_to_float32(t->dtype)) {
        diags.error(file_loc, fmt::format("tensor '{}' has dtype {}, but {} expects floating point "
                                          "(F32, F16, BF16 or F64)",
                                          name, st::dtype_name(t->dtype), layer));
        continue;
      }
      std::vector<float> values(t->numel());
      if (Status s = st::to_float32(*t, values.data(), values.size()); !s) {
        diags.file_error(path, s.error().message);
        continue;
      }
      // NaN and Inf in the file, and F64 values that become Inf in float32.
      const size_t bad = st::count_non_finite(*t);
      const size_t non_finite = static_cast<size_t>(
          std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); }));
      std::vector<std::string> problems;
      if (bad > 0) {
        problems.push_back(fmt::format("{} NaN or infinite value{}", bad, bad == 1 ? "" : "s"));
      }
      if (non_finite > bad) {
        const size_t n = non_finite - bad;
        problems.push_back(fmt::format("{} value{} too large for float32", n, n == 1 ? "" : "s"));
      }
      if (!problems.empty()) {
        const std::string msg =
            fmt::format("tensor '{}' holds {}", name, fmt::join(problems, " and "));
        if (options.strict) {
          diags.error(file_loc, msg);
          continue;
        }
        diags.warning(file_loc, msg + " (an error with --strict)");
      }
      out.tensors.emplace(p.name, std::move(values));
    }
  }
  check_compiled_constants(graph, file, expected, file_loc, diags);
  report_unused(file, expected, graph, diags.error_count() != errors_before, file_loc, diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return out;
}

}  // namespace zoc
