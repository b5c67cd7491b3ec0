// The ops of issues 36 and 37 against PyTorch 1.13, one small model per case: tests/ops/
// make_op_cases.py (run by the reference_data fixture) writes each case's model file beside the
// PyTorch module it transcribes, seeded weights and input, and PyTorch's outputs; here the model
// is loaded through the YAML frontend, run on the reference interpreter, and every output is
// compared. Index arithmetic (nearest upsampling, argmax, padding) must match exactly; the rest
// within 1e-6 of PyTorch by relative L2 error and by largest error relative to the largest value.
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
  const char* name;  // a folder of testdata/ops (tests/ops/make_op_cases.py)
  double tolerance;  // 0: bit for bit
};

// PyTorch's k-th output in a case's folder.
std::string output_file(size_t k) { return "/output" + std::to_string(k) + ".npy"; }

class OpsVsPyTorch : public ::testing::TestWithParam<Case> {};

TEST_P(OpsVsPyTorch, MatchesPyTorch) {
  const Case& c = GetParam();
  const std::string dir = std::string(ZOC_TEST_DATA_DIR) + "/ops/" + c.name;
  ASSERT_TRUE(std::filesystem::exists(dir + "/output0.npy"))
      << dir << " is missing: the reference_data fixture (tests/ops/make_op_cases.py) did not run";
  Diagnostics d;
  auto g = load_verified_model(dir + "/model.yaml", d);
  ASSERT_TRUE(g) << d.render();
  auto w = load_weights(*g, dir + "/weights.safetensors", d, {.strict = true});
  ASSERT_TRUE(w) << d.render();
  ref::Tensor x;
  auto xd = npy::read_float32(dir + "/input.npy", &x.shape);
  ASSERT_TRUE(xd.ok()) << xd.error().message;
  x.data = std::move(*xd);
  auto outs = ref::run(*g, *w, x);
  ASSERT_TRUE(outs.ok()) << outs.error().message;
  for (size_t k = 0; k < outs->size() || std::filesystem::exists(dir + output_file(k)); ++k) {
    ASSERT_LT(k, outs->size()) << "PyTorch has more outputs than the model";
    std::vector<int64_t> shape;
    auto ref = npy::read_float32(dir + output_file(k), &shape);
    ASSERT_TRUE(ref.ok()) << ref.error().message;
    const std::vector<float>& got = (*outs)[k].data;
    ASSERT_EQ((*outs)[k].shape, shape) << "output " << k;
    double num = 0, den = 0, max_err = 0, max_ref = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double e = std::abs(double(got[i]) - (*ref)[i]);
      num += e * e;
      den += double((*ref)[i]) * (*ref)[i];
      max_err = std::max(max_err, e);
      max_ref = std::max(max_ref, std::abs(double((*ref)[i])));
    }
    const double rel_l2 = std::sqrt(num / den), rel_max = max_err / max_ref;
    std::printf("[ numbers  ] %s output %zu: rel L2 %.3g, max error / max %.3g\n", c.name, k,
                rel_l2, rel_max);
    EXPECT_GT(max_ref, 0.0) << "a reference of zeros tests nothing";
    if (c.tolerance == 0) {
      EXPECT_EQ(got, *ref) << c.name << " output " << k << " differs from PyTorch's";
    } else {
      EXPECT_LE(rel_l2, c.tolerance) << c.name << " output " << k;
      EXPECT_LE(rel_max, c.tolerance) << c.name << " output " << k;
    }
  }
}

// One case per line (tests/ops/make_op_cases.py writes each); 0: bit for bit.
const Case kCases[] = {
    {"upsample_nearest_size", 0},
    {"upsample_nearest_scale", 0},
    {"upsample_nearest_scale_one_channel", 0},
    {"upsample_bilinear_scale_one_channel", 1e-6},
    {"upsample_bilinear_size_ac_false", 1e-6},
    {"upsample_bilinear_size_ac_true", 1e-6},
    {"upsample_bilinear_scale_ac_false", 1e-6},
    {"upsample_bilinear_scale_ac_true", 1e-6},
    {"conv_transpose2d", 1e-6},
    {"softmax_channels", 1e-6},
    {"log_softmax_channels", 1e-6},
    {"log_softmax_features", 1e-6},
    {"argmax_channels", 0},
    {"argmax_keepdim", 0},
    {"several_outputs", 1e-6},
    {"normalize_buffers", 1e-6},
    {"layer_scale_gamma", 1e-6},
    {"scalar_operands", 1e-6},
    {"broadcast_two_tensors", 1e-6},
    {"feature_operands", 1e-6},
    {"leaky_relu_elu", 1e-6},
    {"se_linear_view", 1e-6},
};

INSTANTIATE_TEST_SUITE_P(Ops, OpsVsPyTorch, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace zoc
