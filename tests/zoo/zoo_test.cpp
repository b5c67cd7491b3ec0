// The classic CNN zoo through the TorchScript and ONNX routes (issue 20): 17 torchvision
// classifiers, each scripted, traced and exported to ONNX (opsets 17 and 13) by
// tests/zoo/export_zoo.py with seeded weights, must
//   - translate to the same IR scripted as traced (up to the graph's name and locations);
//   - run on the reference interpreter, before and after the inference passes, within relative
//     L2 error 1e-5 of PyTorch's fp32 output, at 64x64 (Inception v3: 96x96, the smallest size a
//     multiple of 32 that PyTorch itself runs it at, 75x75 being its minimum);
//   - translate at 224x224 and go through the inference passes (`zoc ir --input 3x224x224
//     --optimize`);
//   - through ONNX (model.onnx, opset 17), with the weights its initializers carry: match PyTorch
//     the same way (AlexNet and VGG at 224x224, the size torch.onnx.export takes them at), hold
//     exactly the state_dict's weights under the IR's names, and give after the passes the IR the
//     TorchScript route gives (ir_compare.h: the same ops, attributes, parameters and wiring;
//     names of parameter-free layers may differ; Inception v3's nested torch.cat, which the
//     exporter writes as one Concat, flattened first). Before the passes the two differ where the
//     exporter drops what is the identity at inference (dropout, AlexNet's and VGG's adaptive
//     pooling at 224x224). model_opset13.onnx, where GELU, LayerNorm and hardswish are
//     decomposed into elementwise nodes, must give the opset-17 IR exactly and the same weights,
//     which makes its numbers the opset-17 file's without another interpreter run.
// One model at a time: its files (AlexNet's and VGG's weights are 0.2 to 0.5 GB, three copies
// with the two archives) are written into the build folder and deleted when its test ends.
// Each test prints its numbers as `[ zoo ] MODEL FILE: ...` lines, which README's zoo table
// quotes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/driver/model_loader.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/rewrite.h"
#include "compiler/passes/pipeline.h"
#include "compiler/weights/weights.h"
#include "tests/numeric/ir_compare.h"
#include "zoc/io/npy.h"

namespace zoc {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Removes a model's folder when its test ends, passed or not.
struct Scratch {
  fs::path dir;
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::optional<ir::Graph> load_pt(const fs::path& pt, int64_t side, Diagnostics& d) {
  LoadOptions opts;
  opts.input_dims = std::array<int64_t, 3>{3, side, side};
  return load_verified_model(pt.string(), d, opts);
}

std::string ir_text(ir::Graph g) {
  g.name = "model";
  return ir::print_graph(g, {.locations = false});
}

ref::Tensor read_npy(const fs::path& path) {
  ref::Tensor t;
  auto v = npy::read_float32(path.string(), &t.shape);
  EXPECT_TRUE(v.ok()) << v.error().message;
  if (v.ok()) t.data = std::move(*v);
  return t;
}

// The interpreter on `g` with `w`, before and after the passes (which `g` is left after),
// against PyTorch's output `want`.
void expect_matches_before_and_after_passes(const std::string& label, const std::string& file,
                                            ir::Graph& g, const Weights& w, const ref::Tensor& x,
                                            const std::vector<float>& want) {
  Diagnostics d;
  for (bool optimized : {false, true}) {
    const auto start = Clock::now();
    if (optimized) {
      passes::PassOptions popts;
      popts.verify_each = true;
      EXPECT_TRUE(passes::run_pipeline(g, d, popts)) << d.render();
    }
    auto out = ref::run(g, w, x);
    EXPECT_TRUE(out.ok()) << out.error().message;
    if (!out.ok()) return;
    const double e = test::rel_l2((*out)[0].data, want);
    double max_abs = 0;
    for (size_t i = 0; i < want.size() && i < (*out)[0].data.size(); ++i) {
      max_abs = std::max(max_abs, std::abs(double((*out)[0].data[i]) - want[i]));
    }
    std::printf(
        "[ zoo ] %s %s (%s, %lld nodes): rel L2 %.3g, max abs %.3g against PyTorch (%.1f s)\n",
        label.c_str(), file.c_str(), optimized ? "after passes" : "before passes",
        static_cast<long long>(g.nodes.size()), e, max_abs, seconds_since(start));
    EXPECT_LE(e, 1e-5) << label << " " << file << (optimized ? " after passes" : "");
  }
}

// The TorchScript route on the interpreter against PyTorch; returns the IR printed before the
// passes.
std::string expect_matches_pytorch(const std::string& label, const fs::path& dir,
                                   const fs::path& pt, const ref::Tensor& x,
                                   const std::vector<float>& want) {
  Diagnostics d;
  auto g = load_pt(pt, x.shape.at(2), d);
  EXPECT_TRUE(g) << d.render();
  if (!g) return "";
  const bool scripted_tuple =
      pt.filename() == "model.pt" && (label == "googlenet" || label == "inception_v3");
  EXPECT_EQ(d.render().find("forward returns a tuple of") != std::string::npos, scripted_tuple)
      << d.render();
  const std::string printed = ir_text(*g);
  auto w = load_weights(*g, (dir / "weights.safetensors").string(), d, {.strict = true});
  EXPECT_TRUE(w) << d.render();
  if (w) expect_matches_before_and_after_passes(label, pt.filename(), *g, *w, x, want);
  return printed;
}

// The same tensors under the same names, the first difference reported.
void expect_same_weights(const Weights& a, const Weights& b, const std::string& what) {
  EXPECT_EQ(a.tensors.size(), b.tensors.size()) << what;
  for (const auto& [name, values] : a.tensors) {
    const std::vector<float>* other = b.find(name);
    ASSERT_NE(other, nullptr) << what << ": " << name;
    ASSERT_EQ(values, *other) << what << ": " << name;
  }
}

// A concat of a concat read by nothing else becomes one concat of all their inputs: what
// torch.onnx.export makes of Inception v3's torch.cat([torch.cat([a, b], 1), torch.cat([c, d],
// 1)], 1) in Mixed_7b and Mixed_7c (one Concat of four), the same numbers in other nodes.
void flatten_nested_concats(ir::Graph& g) {
  std::vector<bool> removed(g.nodes.size(), false);
  for (ir::Node& outer : g.nodes) {
    if (outer.op != ir::OpKind::Concat) continue;
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId v : outer.inputs) {
      const int32_t p = g.values[static_cast<size_t>(v)].producer;
      const ir::Node& inner = g.nodes[static_cast<size_t>(p)];
      if (inner.op == ir::OpKind::Concat && ir::use_count(g, v) == 1) {
        inputs.insert(inputs.end(), inner.inputs.begin(), inner.inputs.end());
        removed[static_cast<size_t>(p)] = true;
      } else {
        inputs.push_back(v);
      }
    }
    outer.inputs = inputs;
  }
  ASSERT_TRUE(ir::compact_and_sort(g, removed));
}

// The ONNX route (see the top of the file): model.onnx against PyTorch and the TorchScript
// route's IR, model_opset13.onnx against model.onnx.
void expect_onnx_matches(const std::string& label, const fs::path& dir, const ref::Tensor& x64,
                         const std::vector<float>& y64) {
  const auto start = Clock::now();
  const bool own_input = fs::exists(dir / "onnx_input.npy");  // AlexNet, VGG: 224x224
  const ref::Tensor x = own_input ? read_npy(dir / "onnx_input.npy") : x64;
  const std::vector<float> want = own_input ? read_npy(dir / "onnx_output.npy").data : y64;
  Diagnostics d;
  auto m = load_model_and_weights((dir / "model.onnx").string(), d);
  auto m13 = load_model_and_weights((dir / "model_opset13.onnx").string(), d);
  ASSERT_TRUE(m && m->weights && m13 && m13->weights) << d.render();
  std::printf("[ zoo ] %s model.onnx, model_opset13.onnx: loaded in %.1f s\n", label.c_str(),
              seconds_since(start));
  EXPECT_EQ(ir_text(m13->graph), ir_text(m->graph)) << label << ": opset 13 and 17 differ";
  expect_same_weights(*m13->weights, *m->weights, label + ": opset 13 vs 17");
  auto w = load_weights(m->graph, (dir / "weights.safetensors").string(), d, {.strict = true});
  ASSERT_TRUE(w) << d.render();
  expect_same_weights(*w, *m->weights, label + ": state_dict vs ONNX initializers");
  expect_matches_before_and_after_passes(label, "model.onnx", m->graph, *m->weights, x, want);
  auto ts = load_pt(dir / "model.pt", x.shape.at(2), d);
  ASSERT_TRUE(ts && passes::run_pipeline(*ts, d)) << d.render();
  if (label == "inception_v3") flatten_nested_concats(*ts);
  test::expect_same_structure(*ts, m->graph, label + " after passes, TorchScript vs ONNX");
  std::printf("[ zoo ] %s: ONNX route %.1f s\n", label.c_str(), seconds_since(start));
}

// `zoc ir MODEL --input 3x224x224 --optimize`.
void expect_compiles_at_224(const std::string& label, const fs::path& pt) {
  const auto start = Clock::now();
  Diagnostics d;
  auto g = load_pt(pt, 224, d);
  ASSERT_TRUE(g) << d.render();
  ASSERT_TRUE(passes::run_pipeline(*g, d)) << d.render();
  std::printf("[ zoo ] %s %s: 224x224 through the inference passes, %zu nodes (%.1f s)\n",
              label.c_str(), pt.filename().c_str(), g->nodes.size(), seconds_since(start));
}

class Zoo : public ::testing::TestWithParam<const char*> {};

TEST_P(Zoo, ScriptedTracedAndOnnxMatchPyTorchAndCompileAt224) {
  if (!torchscript::built_with_libtorch()) GTEST_SKIP() << "built without LibTorch";
  const std::string model = GetParam();
  Scratch scratch{fs::path(ZOC_ZOO_DIR) / model};
  fs::remove_all(scratch.dir);
  const auto start = Clock::now();
  const std::string command = std::string(ZOC_PYTHON) + " " + ZOC_SOURCE_DIR +
                              "/tests/zoo/export_zoo.py --model " + model + " --out " +
                              scratch.dir.string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::printf("[ zoo ] %s: exported in %.1f s\n", model.c_str(), seconds_since(start));
  const ref::Tensor x = read_npy(scratch.dir / "input.npy");
  const ref::Tensor y = read_npy(scratch.dir / "output.npy");
  ASSERT_FALSE(x.data.empty() || y.data.empty());
  std::string printed[2];
  for (int k = 0; k < 2; ++k) {
    const fs::path pt = scratch.dir / (k == 0 ? "model.pt" : "model_traced.pt");
    printed[k] = expect_matches_pytorch(model, scratch.dir, pt, x, y.data);
    expect_compiles_at_224(model, pt);
  }
  EXPECT_EQ(printed[0], printed[1]) << "scripted and traced " << model << " differ";
  expect_onnx_matches(model, scratch.dir, x, y.data);
  std::printf("[ zoo ] %s: %.1f s in all\n", model.c_str(), seconds_since(start));
}

auto model_name = [](const auto& param_info) { return std::string(param_info.param); };
INSTANTIATE_TEST_SUITE_P(Torchvision, Zoo,
                         ::testing::Values("resnext50_32x4d", "regnet_x_400mf", "squeezenet1_1",
                                           "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
                                           "regnet_y_400mf", "densenet121", "googlenet",
                                           "inception_v3", "shufflenet_v2_x1_0", "mnasnet0_5",
                                           "convnext_tiny", "alexnet"),
                         model_name);
// The three slowest, whose layers the models above already cover (ResNet-50's blocks deeper
// or wider, AlexNet's layers with BatchNorm): labelled `slow` in tests/CMakeLists.txt, so CI
// leaves them out and `ctest -L slow` runs them.
INSTANTIATE_TEST_SUITE_P(TorchvisionLarge, Zoo,
                         ::testing::Values("resnet152", "wide_resnet50_2", "vgg11_bn"), model_name);

}  // namespace
}  // namespace zoc
