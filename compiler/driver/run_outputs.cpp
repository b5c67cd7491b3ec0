// `zoc run`'s output file names (see run_outputs.h).
#include "compiler/driver/run_outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <random>

#include <fmt/ranges.h>

#include "compiler/support/sanitize.h"
#include "zoc/io/npy.h"

namespace zoc {
namespace {

// Letters, digits, '.', '_' and '-' kept; anything else (a '/' of an ONNX name) becomes '_'.
std::string file_safe(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return out.empty() || out[0] == '.' ? "_" + out : out;
}

}  // namespace

Expected<std::vector<std::string>> output_files(const ir::Graph& g, const std::string& base) {
  if (g.outputs.size() == 1) return std::vector<std::string>{base};
  const bool npy = base.size() > 4 && base.compare(base.size() - 4, 4, ".npy") == 0;
  const std::string stem = npy ? base.substr(0, base.size() - 4) : base;
  std::vector<std::string> files;
  std::map<std::string, std::string> taken;  // file -> the output that has it
  for (ir::ValueId v : g.outputs) {
    const std::string& name = g.value_name(v);
    std::string file = fmt::format("{}_{}.npy", stem, file_safe(name));
    if (auto [it, fresh] = taken.emplace(file, name); !fresh) {
      return Error{
          fmt::format("outputs '{}' and '{}' would both be written to {}", it->second, name, file)};
    }
    files.push_back(std::move(file));
  }
  return files;
}

// The k largest values of each sample of `out` and where they are.
void print_top_k(const ref::Tensor& out, int64_t top_k) {
  const int64_t rows = out.shape[0];
  const int64_t cols = static_cast<int64_t>(out.data.size()) / std::max<int64_t>(rows, 1);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> idx(static_cast<size_t>(cols));
    std::iota(idx.begin(), idx.end(), 0);
    const float* row = out.data.data() + r * cols;
    const auto k = std::min<int64_t>(top_k, cols);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    std::string line = fmt::format("sample {}: top-{}", r, k);
    for (int64_t j = 0; j < k; ++j) line += fmt::format("  {}:{:.5g}", idx[j], row[idx[j]]);
    std::cout << line << "\n";
  }
}

// The input from --input (.npy), or a seeded standard-normal batch.
Status check_input_shape(const ir::Graph& g, const std::vector<int64_t>& shape) {
  const auto& dims = g.type(g.nodes.front().output).dims;
  if (shape.size() != dims.size() + 1 || shape[0] < 1 ||
      !std::equal(dims.begin(), dims.end(), shape.begin() + 1)) {
    // numpy's spelling of the array's shape: "()" for a scalar ("shape ," before issue 31).
    return Error{fmt::format("the array has shape {}, but model '{}' takes (N, {}) with N >= 1",
                             st::detail::shape_string(shape, /*python=*/true), shown_text(g.name),
                             fmt::join(dims, ", "))};
  }
  return Status::success();
}

std::optional<ref::Tensor> run_input(const ir::Graph& g, const std::string& path, int64_t batch,
                                     uint64_t seed, Diagnostics& diags) {
  ref::Tensor t;
  if (!path.empty()) {
    auto data = npy::read_float32(path, &t.shape);
    if (!data) {
      diags.file_error(path, data.error().message);
      return std::nullopt;
    }
    t.data = std::move(*data);
    if (Status s = check_input_shape(g, t.shape); !s.ok()) {
      diags.error(SourceLoc{path, 0, 0}, s.error().message);
      return std::nullopt;
    }
    return t;
  }
  const auto& dims = g.type(g.nodes.front().output).dims;
  t.shape = {batch};
  t.shape.insert(t.shape.end(), dims.begin(), dims.end());
  std::mt19937_64 gen(seed + 1);
  std::normal_distribution<float> normal;
  t.data.resize(static_cast<size_t>(batch * g.type(g.nodes.front().output).sample_numel()));
  for (float& v : t.data) v = normal(gen);
  return t;
}

}  // namespace zoc
