// The classic CNN zoo through the TorchScript route (issue 20): 17 torchvision classifiers, each
// scripted and traced by tests/zoo/export_zoo.py with seeded weights, must
//   - translate to the same IR scripted as traced (up to the graph's name and locations);
//   - run on the reference interpreter, before and after the inference passes, within relative
//     L2 error 1e-5 of PyTorch's fp32 output, at 64x64 (Inception v3: 96x96, the smallest size a
//     multiple of 32 that PyTorch itself runs it at, 75x75 being its minimum);
//   - translate at 224x224 and go through the inference passes (`zoc ir --input 3x224x224
//     --optimize`).
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

// The interpreter on `g` before and after the passes against PyTorch; returns the IR printed
// before the passes.
std::string expect_matches_pytorch(const std::string& label, const fs::path& dir,
                                   const fs::path& pt, const ref::Tensor& x,
                                   const std::vector<float>& want) {
  Diagnostics d;
  auto g = load_pt(pt, x.shape.at(2), d);
  EXPECT_TRUE(g) << d.render();
  if (!g) return "";
  const bool scripted_tuple = pt.filename() == "model.pt" &&
                              (label == "googlenet" || label == "inception_v3");
  EXPECT_EQ(d.render().find("forward returns a tuple of") != std::string::npos, scripted_tuple)
      << d.render();
  const std::string printed = ir_text(*g);
  auto w = load_weights(*g, (dir / "weights.safetensors").string(), d, {.strict = true});
  EXPECT_TRUE(w) << d.render();
  if (!w) return printed;
  for (bool optimized : {false, true}) {
    const auto start = Clock::now();
    if (optimized) {
      passes::PassOptions popts;
      popts.verify_each = true;
      EXPECT_TRUE(passes::run_pipeline(*g, d, popts)) << d.render();
    }
    auto out = ref::run(*g, *w, x);
    EXPECT_TRUE(out.ok()) << out.error().message;
    if (!out.ok()) return printed;
    const double e = test::rel_l2((*out)[0].data, want);
    double max_abs = 0;
    for (size_t i = 0; i < want.size() && i < (*out)[0].data.size(); ++i) {
      max_abs = std::max(max_abs, std::abs(double((*out)[0].data[i]) - want[i]));
    }
    std::printf("[ zoo ] %s %s (%s, %lld nodes): rel L2 %.3g, max abs %.3g against PyTorch (%.1f s)\n",
                label.c_str(), pt.filename().c_str(), optimized ? "after passes" : "before passes",
                static_cast<long long>(g->nodes.size()), e, max_abs, seconds_since(start));
    EXPECT_LE(e, 1e-5) << label << " " << pt.filename() << (optimized ? " after passes" : "");
  }
  return printed;
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

TEST_P(Zoo, ScriptedAndTracedMatchPyTorchAndCompileAt224) {
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
  ref::Tensor x;
  auto xd = npy::read_float32((scratch.dir / "input.npy").string(), &x.shape);
  ASSERT_TRUE(xd.ok()) << xd.error().message;
  x.data = std::move(*xd);
  std::vector<int64_t> y_shape;
  auto y = npy::read_float32((scratch.dir / "output.npy").string(), &y_shape);
  ASSERT_TRUE(y.ok()) << y.error().message;
  std::string printed[2];
  for (int k = 0; k < 2; ++k) {
    const fs::path pt = scratch.dir / (k == 0 ? "model.pt" : "model_traced.pt");
    printed[k] = expect_matches_pytorch(model, scratch.dir, pt, x, *y);
    expect_compiles_at_224(model, pt);
  }
  EXPECT_EQ(printed[0], printed[1]) << "scripted and traced " << model << " differ";
  std::printf("[ zoo ] %s: %.1f s in all\n", model.c_str(), seconds_since(start));
}

INSTANTIATE_TEST_SUITE_P(Torchvision, Zoo,
                         ::testing::Values("resnet152", "resnext50_32x4d", "wide_resnet50_2",
                                           "regnet_x_400mf", "squeezenet1_1", "mobilenet_v2",
                                           "mobilenet_v3_small", "efficientnet_b0",
                                           "regnet_y_400mf", "densenet121", "googlenet",
                                           "inception_v3", "shufflenet_v2_x1_0", "mnasnet0_5",
                                           "convnext_tiny", "alexnet", "vgg11_bn"),
                         [](const auto& param_info) { return std::string(param_info.param); });

}  // namespace
}  // namespace zoc
