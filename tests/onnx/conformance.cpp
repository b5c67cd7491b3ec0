// ONNX's backend conformance suite through zoc: every case of the `node` and
// `pytorch-converted` sets (Debian's libonnx-testdata) whose graph uses only op types zoc maps.
//
// ONNX backends prove themselves against these cases (a model.onnx, input_*.pb and the expected
// output_*.pb per data set); zoc holds itself to the same, with one rule of its own: a case is
// either refused with a located error or computed correctly, never computed wrongly. Each case
// is loaded the way `zoc run` loads a model, with the case's inputs after the first bound as
// constants (most node cases pass a convolution's weights as inputs; zoc compiles weights in),
// and run by the reference interpreter before and after the inference passes. Outputs are
// compared as ONNX's backend test runner compares them, elementwise with rtol 1e-3 and atol 1e-7
// (onnx/backend/test/loader: the tolerances of every case that ships its model.onnx).
//
// Prints one line per case (PASS, REFUSED with the first lines of its error, WRONG with why),
// then `onnx conformance: N passed, M refused, W wrong`. Exit status 1 if W > 0 or N < 40.
// Usage: zoc_onnx_conformance DATA_DIR [SET...]   (default sets: node pytorch-converted)
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/driver/model_loader.h"
#include "compiler/frontend/onnx/onnx_frontend.h"
#include "compiler/passes/pipeline.h"

namespace {

namespace fs = std::filesystem;

constexpr double kRtol = 1e-3, kAtol = 1e-7;
constexpr int kMinPassed = 40;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The case's model, if every node's op type is one zoc maps (else the case is not zoc's).
struct CaseModel {
  std::vector<std::string> data_inputs;  // graph inputs that are not initializers, in order
};

std::optional<CaseModel> mapped_case(const fs::path& model_path,
                                     const std::set<std::string>& mapped) {
  ::onnx::ModelProto m;
  if (!m.ParseFromString(read_file(model_path))) return std::nullopt;
  for (const ::onnx::NodeProto& n : m.graph().node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (!default_domain || !mapped.count(n.op_type())) return std::nullopt;
  }
  std::set<std::string> initializers;
  for (const ::onnx::TensorProto& t : m.graph().initializer()) initializers.insert(t.name());
  CaseModel c;
  for (const ::onnx::ValueInfoProto& v : m.graph().input()) {
    if (!initializers.count(v.name())) c.data_inputs.push_back(v.name());
  }
  return c;
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  // input_10.pb after input_9.pb: by the number after the prefix.
  auto number = [&](const fs::path& p) {
    const std::string s = p.stem().string().substr(prefix.size());
    return std::atoi(s.c_str());
  };
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    return number(a) != number(b) ? number(a) < number(b) : a < b;
  });
  return out;
}

// np.testing.assert_allclose(actual, expected, rtol, atol): NaN equals NaN, shapes must match.
std::optional<std::string> compare(const zoc::ref::Tensor& got, const zoc::onnx::HostTensor& want) {
  if (got.shape != want.dims) {
    return fmt::format("output shape [{}] where the case expects [{}]", fmt::join(got.shape, ", "),
                       fmt::join(want.dims, ", "));
  }
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    const double a = got.data[i], e = want.values[i];
    if (std::isnan(a) && std::isnan(e)) continue;
    const double err = std::fabs(a - e), allowed = kAtol + kRtol * std::fabs(e);
    if (!(err <= allowed)) {
      if (bad++ == 0) first = i;
      worst = std::max(worst, err);
    }
  }
  if (bad == 0) return std::nullopt;
  return fmt::format(
      "{} of {} values differ beyond rtol {:g}, atol {:g} (first at {}: {} vs {}; "
      "largest difference {:g})",
      bad, want.values.size(), kRtol, kAtol, first, got.data[first], want.values[first], worst);
}

// The first lines of the diagnostics, indented, to say why a case was refused.
std::string first_lines(const std::string& text, int lines) {
  std::string out;
  size_t start = 0;
  for (int k = 0; k < lines && start < text.size(); ++k) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "\n    " + text.substr(start, end - start);
    start = end + 1;
  }
  return out;
}

enum class Outcome { kPass, kRefused, kWrong };

// Loads, runs and checks one case; prints its line.
Outcome run_case(const std::string& label, const fs::path& dir, const CaseModel& cm) {
  const std::vector<fs::path> sets = sorted_files(dir, "test_data_set_");
  if (sets.empty()) {
    std::printf("WRONG   %s: no test_data_set_* folder\n", label.c_str());
    return Outcome::kWrong;
  }
  // Inputs after the first are bound as constants; their values are the first data set's (the
  // cases that bind weights have one data set).
  const std::vector<fs::path> inputs = sorted_files(sets[0], "input_");
  zoc::LoadOptions opts;
  for (size_t i = 1; i < inputs.size() && i < cm.data_inputs.size(); ++i) {
    opts.bound_inputs.emplace_back(cm.data_inputs[i], read_file(inputs[i]));
  }
  if (!inputs.empty()) {
    auto x = zoc::onnx::read_tensor_file(inputs[0].string());
    if (x && x->dims.size() == 4)
      opts.input_dims = std::array<int64_t, 3>{x->dims[1], x->dims[2], x->dims[3]};
  }
  zoc::Diagnostics diags;
  auto model = zoc::load_model_and_weights((dir / "model.onnx").string(), diags, opts);
  if (!model) {
    std::printf("REFUSED %s:%s\n", label.c_str(), first_lines(diags.render(), 4).c_str());
    return Outcome::kRefused;
  }
  zoc::ir::Graph optimized = model->graph;
  if (!zoc::passes::run_pipeline(optimized, diags)) {
    std::printf("WRONG   %s: the passes fail:%s\n", label.c_str(),
                first_lines(diags.render(), 4).c_str());
    return Outcome::kWrong;
  }
  for (const fs::path& set : sets) {
    auto x = zoc::onnx::read_tensor_file((set / "input_0.pb").string());
    auto want = zoc::onnx::read_tensor_file((set / "output_0.pb").string());
    if (!x || !want) {
      std::printf("WRONG   %s: %s\n", label.c_str(),
                  (!x ? x.error() : want.error()).message.c_str());
      return Outcome::kWrong;
    }
    const zoc::ref::Tensor input{x->dims, x->values};
    for (const zoc::ir::Graph* g : {&model->graph, &optimized}) {
      const char* when = g == &optimized ? "after the passes" : "before the passes";
      auto out = zoc::ref::run(*g, *model->weights, input);
      if (!out) {
        std::printf("WRONG   %s (%s, %s): %s\n", label.c_str(), set.filename().c_str(), when,
                    out.error().message.c_str());
        return Outcome::kWrong;
      }
      if (auto why = compare(out->front(), *want)) {
        std::printf("WRONG   %s (%s, %s): %s\n", label.c_str(), set.filename().c_str(), when,
                    why->c_str());
        return Outcome::kWrong;
      }
      // The comparison must be able to fail: one value moved by twice the tolerance.
      zoc::ref::Tensor moved = out->front();
      if (!moved.data.empty()) {
        float& v = moved.data[moved.data.size() / 2];
        v += static_cast<float>(2 * kRtol * std::fabs(v) + 1e-6);
        if (!compare(moved, *want)) {
          std::printf("WRONG   %s: a changed output still compares equal\n", label.c_str());
          return Outcome::kWrong;
        }
      }
    }
  }
  std::printf("PASS    %s\n", label.c_str());
  return Outcome::kPass;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR [SET...]\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  std::vector<std::string> set_names(argv + 2, argv + argc);
  if (set_names.empty()) set_names = {"node", "pytorch-converted"};
  std::set<std::string> mapped;
  for (std::string_view op : zoc::onnx::mapped_op_types()) mapped.emplace(op);

  int passed = 0, refused = 0, wrong = 0, skipped = 0;
  for (const std::string& set : set_names) {
    std::vector<fs::path> cases;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root / set, ec)) {
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    }
    if (ec || cases.empty()) {
      std::fprintf(stderr, "%s: no test cases (is libonnx-testdata installed?)\n",
                   (root / set).c_str());
      return 2;
    }
    std::sort(cases.begin(), cases.end());
    for (const fs::path& dir : cases) {
      auto cm = mapped_case(dir / "model.onnx", mapped);
      if (!cm) {
        ++skipped;
        continue;
      }
      switch (run_case(set + "/" + dir.filename().string(), dir, *cm)) {
        case Outcome::kPass:
          ++passed;
          break;
        case Outcome::kRefused:
          ++refused;
          break;
        case Outcome::kWrong:
          ++wrong;
          break;
      }
    }
  }
  std::printf("(%d cases use op types zoc does not map and were not run)\n", skipped);
  std::printf("onnx conformance: %d passed, %d refused, %d wrong\n", passed, refused, wrong);
  if (wrong > 0 || passed < kMinPassed) {
    std::fprintf(stderr, "FAIL: %s\n",
                 wrong > 0 ? "cases computed wrongly" : "fewer than 40 cases passed");
    return 1;
  }
  return 0;
}
