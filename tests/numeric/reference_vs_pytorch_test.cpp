// The reference interpreter against PyTorch: the same weights and input give the same logits.
//
// models/export.py (run by CTest's `reference_data` fixture, see tests/CMakeLists.txt) builds
// each network in PyTorch with seeded weights and randomized BatchNorm statistics and saves
// weights.safetensors, input.npy and output.npy. Here the YAML model is loaded with the same
// params, the weights validated and the interpreter run. The band is DESIGN.md's oracle band:
// relative L2 error <= 1e-5 in fp32. Because random-weight networks give nearly the same
// logits for every input, the batch-centred output (what actually depends on the input) is
// compared too, with a looser band.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/driver/model_loader.h"
#include "compiler/weights/weights.h"
#include "zoc/io/npy.h"

namespace zoc {
namespace {

struct Case {
  const char* model;  // models/<model>.yaml and testdata/<dir>
  const char* dir;
  std::vector<std::pair<std::string, std::string>> sets;
};

struct Errors {
  double rel_l2 = 0, centred_rel_l2 = 0, max_abs = 0;
  bool top1_agree = true;
};

Errors compare(const std::vector<float>& out, const std::vector<float>& ref, int64_t rows) {
  Errors e;
  const int64_t cols = static_cast<int64_t>(ref.size()) / rows;
  double num = 0, den = 0, cnum = 0, cden = 0;
  for (int64_t c = 0; c < cols; ++c) {
    double mean_o = 0, mean_r = 0;
    for (int64_t r = 0; r < rows; ++r) {
      mean_o += out[r * cols + c];
      mean_r += ref[r * cols + c];
    }
    mean_o /= rows;
    mean_r /= rows;
    for (int64_t r = 0; r < rows; ++r) {
      const double o = out[r * cols + c], f = ref[r * cols + c];
      num += (o - f) * (o - f);
      den += f * f;
      cnum += ((o - mean_o) - (f - mean_r)) * ((o - mean_o) - (f - mean_r));
      cden += (f - mean_r) * (f - mean_r);
      e.max_abs = std::max(e.max_abs, std::abs(o - f));
    }
  }
  e.rel_l2 = std::sqrt(num / den);
  e.centred_rel_l2 = std::sqrt(cnum / cden);
  for (int64_t r = 0; r < rows; ++r) {
    auto row_o = out.begin() + r * cols, row_r = ref.begin() + r * cols;
    e.top1_agree = e.top1_agree && (std::max_element(row_o, row_o + cols) - row_o) ==
                                       (std::max_element(row_r, row_r + cols) - row_r);
  }
  return e;
}

class ReferenceVsPyTorch : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceVsPyTorch, MatchesWithinOracleBand) {
  const Case& c = GetParam();
  const std::string data = std::string(ZOC_TEST_DATA_DIR) + "/" + c.dir;
  ASSERT_TRUE(std::filesystem::exists(data + "/output.npy"))
      << data << " is missing: the reference_data fixture (models/export.py) did not run";
  Diagnostics d;
  LoadOptions opts;
  opts.yaml.overrides = c.sets;
  auto g =
      load_verified_model(std::string(ZOC_SOURCE_DIR) + "/models/" + c.model + ".yaml", d, opts);
  ASSERT_TRUE(g) << d.render();
  auto w = load_weights(*g, data + "/weights.safetensors", d, {.strict = true});
  ASSERT_TRUE(w) << d.render();
  ref::Tensor x;
  auto xd = npy::read_float32(data + "/input.npy", &x.shape);
  ASSERT_TRUE(xd.ok()) << xd.error().message;
  x.data = std::move(*xd);
  std::vector<int64_t> ref_shape;
  auto ref = npy::read_float32(data + "/output.npy", &ref_shape);
  ASSERT_TRUE(ref.ok()) << ref.error().message;

  auto out = ref::run(*g, *w, x);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ((*out)[0].shape, ref_shape);
  const Errors e = compare((*out)[0].data, *ref, ref_shape[0]);
  RecordProperty("rel_l2", std::to_string(e.rel_l2));
  std::printf("[ numbers  ] %s: rel L2 %.3g, batch-centred rel L2 %.3g, max abs %.3g, top-1 %s\n",
              c.dir, e.rel_l2, e.centred_rel_l2, e.max_abs, e.top1_agree ? "agrees" : "DIFFERS");
  EXPECT_LE(e.rel_l2, 1e-5);
  EXPECT_LE(e.centred_rel_l2, 1e-4);
  EXPECT_TRUE(e.top1_agree);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ReferenceVsPyTorch,
    ::testing::Values(Case{"lenet", "lenet", {}},
                      Case{"resnet18", "resnet18_64", {{"resolution", "64"}}},
                      Case{"resnet50", "resnet50_64", {{"resolution", "64"}}},
                      Case{"resnet50",
                           "resnet50_1ch_10cls_32",
                           {{"resolution", "32"}, {"in_channels", "1"}, {"num_classes", "10"}}}),
    [](const auto& p) { return std::string(p.param.dir); });

}  // namespace
}  // namespace zoc
