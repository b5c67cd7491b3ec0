// Tests of declared initialization: the `init` attribute of the YAML format, the IR it becomes
// (an attribute that is present only when it is not PyTorch's default, and ParamSpec::init per
// tensor), init_choice(), the seeded draws of zoc/weights/init.h, and the torchvision ResNet scheme
// of the shipped models. Malformed `init` values are bad-input files
// (tests/bad_inputs/yaml/init_*).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/passes/pipeline.h"
#include "compiler/weights/weights.h"
#include "tests/unit/test_util.h"
#include "zoc/weights/init.h"

namespace zoc {
namespace {

using ir::InitScheme;
using test::repo_path;

const std::vector<std::pair<std::string, std::string>> kTorchvision = {
    {"conv_init", "kaiming_normal_fan_out"}, {"zero_init_residual", "true"}};

const ir::ParamSpec& param(const ir::Graph& g, const std::string& name) {
  for (const ir::Node& n : g.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      if (p.name == name) return p;
    }
  }
  ADD_FAILURE() << "no parameter " << name;
  static const ir::ParamSpec none;
  return none;
}

const ir::Node& owner(const ir::Graph& g, const std::string& param_name) {
  for (const ir::Node& n : g.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      if (p.name == param_name) return n;
    }
  }
  ADD_FAILURE() << "no parameter " << param_name;
  return g.nodes.front();
}

struct Moments {
  double mean = 0, stddev = 0, within_one_sd = 0;  // the last: fraction with |x - mean| < sd
};

Moments moments(const std::vector<float>& v) {
  Moments m;
  double sum = 0, sq = 0;
  for (float x : v) sum += x;
  m.mean = sum / double(v.size());
  for (float x : v) sq += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(sq / double(v.size()));
  int64_t inside = 0;
  for (float x : v) inside += std::abs(x - m.mean) < m.stddev;
  m.within_one_sd = double(inside) / double(v.size());
  return m;
}

TEST(InitAttribute, ParsedIntoTheIr) {
  test::TempDir dir;
  const std::string path = dir.write("m.yaml", R"(zoc: 1
input: {channels: 3, height: 8, width: 8}
layers:
  - a: {op: conv2d, out_channels: 4, kernel: 3, init: kaiming_normal_fan_out}
  - a_bn: {op: batchnorm2d, init: zeros}
  - b: {op: conv2d, out_channels: 4, kernel: 3, init: pytorch}
  - b_bn: {op: batchnorm2d, init: ones}
  - c: {op: conv2d, out_channels: 4, kernel: 1, bias: false}
  - c_bn: {op: batchnorm2d}
  - pool: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 5, init: kaiming_normal_fan_out}
)");
  Diagnostics d;
  auto g = test::load(path, d);
  ASSERT_TRUE(g) << d.render();
  // Declared non-defaults are attributes ...
  EXPECT_EQ(g->find_node("a")->attrs.init("init"), InitScheme::kKaimingNormalFanOut);
  EXPECT_EQ(g->find_node("a_bn")->attrs.init("init"), InitScheme::kZeros);
  EXPECT_EQ(g->find_node("fc")->attrs.init("init"), InitScheme::kKaimingNormalFanOut);
  // ... a declared default is the same as none: absent, so the IR prints as it always did.
  for (const char* n : {"b", "b_bn", "c", "c_bn"}) {
    EXPECT_FALSE(g->find_node(n)->attrs.has("init")) << n;
  }
  EXPECT_EQ(ir::format_attrs(*g->find_node("b")).find("init"), std::string::npos);
  EXPECT_NE(ir::format_attrs(*g->find_node("a")).find("init=kaiming_normal_fan_out"),
            std::string::npos);
  // Per tensor: only the weight (conv, linear) or gamma (BN) takes the declared scheme.
  EXPECT_EQ(param(*g, "a.weight").init, InitScheme::kKaimingNormalFanOut);
  EXPECT_EQ(param(*g, "a.bias").init, InitScheme::kPytorchDefault);
  EXPECT_EQ(param(*g, "a_bn.weight").init, InitScheme::kZeros);
  for (const char* p : {"a_bn.bias", "a_bn.running_mean", "a_bn.running_var", "b.weight",
                        "b_bn.weight", "c.weight", "c_bn.weight", "fc.bias"}) {
    EXPECT_EQ(param(*g, p).init, InitScheme::kPytorchDefault) << p;
  }
  EXPECT_EQ(param(*g, "fc.weight").init, InitScheme::kKaimingNormalFanOut);
  const std::string text = ir::print_graph(*g);
  EXPECT_NE(text.find("param  a.weight [4x3x3x3] init=kaiming_normal_fan_out\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("param  a_bn.weight [4] init=zeros\n"), std::string::npos) << text;
  EXPECT_NE(text.find("param  a.bias [4]\n"), std::string::npos) << text;
}

// The op table bounds each op's schemes; the verifier holds graphs built in code to them.
TEST(InitAttribute, VerifierRejectsASchemeTheOpDoesNotTake) {
  Diagnostics d;
  auto g = test::load(repo_path("models/resnet18.yaml"), d);
  ASSERT_TRUE(g) << d.render();
  for (ir::Node& n : g->nodes) {
    if (n.name == "conv1")
      n.attrs.set("init", {ir::AttrKind::Init, int64_t(InitScheme::kZeros), {}, 0});
    if (n.name == "bn1")
      n.attrs.set("init", {ir::AttrKind::Init, int64_t(InitScheme::kZeros), {}, 0});
  }
  Diagnostics v;
  EXPECT_FALSE(ir::verify(*g, v));
  EXPECT_EQ(v.error_count(), 1u) << v.render();
  EXPECT_NE(v.render().find("layer 'conv1' (conv2d): attribute 'init' out of range"),
            std::string::npos)
      << v.render();
}

TEST(InitAttribute, StringParamsExpressionsAndSet) {
  test::TempDir dir;
  const std::string path = dir.write("m.yaml", R"(zoc: 1
params: {conv_init: pytorch, zero_last: false}
input: {channels: 3, height: 8, width: 8}
blocks:
  unit:
    params: {init_of_conv: pytorch}
    layers:
      - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1, init: $init_of_conv}
      - bn: {op: batchnorm2d, init: "${zero_last ? 'zeros' : 'ones'}"}
layers:
  - stem: {op: conv2d, out_channels: 4, kernel: 3, padding: 1, init: $conv_init}
  - u1: {block: unit, args: {init_of_conv: $conv_init}}
  - u2: {block: unit, args: {init_of_conv: kaiming_normal_fan_out}}
  - u3: {block: unit}
)");
  Diagnostics d;
  auto g = test::load(path, d);
  ASSERT_TRUE(g) << d.render();
  for (const char* n : {"stem", "u1.conv", "u1.bn", "u3.conv", "u3.bn"}) {
    EXPECT_FALSE(g->find_node(n)->attrs.has("init")) << n;
  }
  EXPECT_EQ(g->find_node("u2.conv")->attrs.init("init"), InitScheme::kKaimingNormalFanOut);

  Diagnostics d2;
  auto g2 = test::load(path, d2, {{"conv_init", "kaiming_normal_fan_out"}, {"zero_last", "true"}});
  ASSERT_TRUE(g2) << d2.render();
  for (const char* n : {"stem", "u1.conv", "u2.conv"}) {
    EXPECT_EQ(g2->find_node(n)->attrs.init("init"), InitScheme::kKaimingNormalFanOut) << n;
  }
  EXPECT_FALSE(g2->find_node("u3.conv")->attrs.has("init"));  // the block's own default
  for (const char* n : {"u1.bn", "u2.bn", "u3.bn"}) {
    EXPECT_EQ(g2->find_node(n)->attrs.init("init"), InitScheme::kZeros) << n;
  }

  // A bad name given with --set is reported where it is used, with what is allowed.
  Diagnostics d3;
  EXPECT_FALSE(test::load(path, d3, {{"conv_init", "kaiming"}}));
  EXPECT_NE(d3.render().find("m.yaml:11:70: error: layer 'stem': attribute 'init' must be "
                             "pytorch or kaiming_normal_fan_out, got 'kaiming'"),
            std::string::npos)
      << d3.render();
  // A string param keeps its type: --set of a bool param to a name is still an error.
  Diagnostics d4;
  EXPECT_FALSE(test::load(path, d4, {{"zero_last", "zeros"}}));
  EXPECT_NE(d4.render().find("--set zero_last=zeros: expected true or false"), std::string::npos)
      << d4.render();
}

TEST(InitAttribute, ShippedResNetsDefaultToPyTorchAndOptIntoTorchvision) {
  for (const char* model : {"resnet18", "resnet34", "resnet50", "resnet101", "resnet152"}) {
    const bool bottleneck = std::string(model) != "resnet18" && std::string(model) != "resnet34";
    const std::string last_bn = bottleneck ? ".bn3" : ".bn2";
    Diagnostics d;
    auto plain = test::load(repo_path(std::string("models/") + model + ".yaml"), d);
    auto tv = test::load(repo_path(std::string("models/") + model + ".yaml"), d, kTorchvision);
    ASSERT_TRUE(plain && tv) << model << "\n" << d.render();
    int convs = 0, zeroed = 0;
    for (const ir::Node& n : plain->nodes) {
      EXPECT_FALSE(n.attrs.has("init")) << model << " " << n.name;
      for (const ir::ParamSpec& p : n.params) {
        EXPECT_EQ(p.init, InitScheme::kPytorchDefault) << p.name;
      }
    }
    for (const ir::Node& n : tv->nodes) {
      for (const ir::ParamSpec& p : n.params) {
        InitScheme want = InitScheme::kPytorchDefault;
        if (n.op == ir::OpKind::Conv2d && p.role == ir::ParamRole::kWeight) {
          want = InitScheme::kKaimingNormalFanOut;  // every conv: stem, blocks, downsample
          ++convs;
        }
        if (n.op == ir::OpKind::BatchNorm2d && n.name.ends_with(last_bn) &&
            p.role == ir::ParamRole::kBnWeight) {
          want = InitScheme::kZeros;  // each residual block's last BN gamma
          ++zeroed;
        }
        EXPECT_EQ(p.init, want) << model << " " << p.name;
      }
    }
    int blocks = 0;  // one add per residual block
    for (const ir::Node& n : tv->nodes) blocks += n.op == ir::OpKind::Add;
    EXPECT_EQ(zeroed, blocks) << model;
    EXPECT_GT(convs, 0);
    EXPECT_EQ(param(*tv, "fc.weight").init, InitScheme::kPytorchDefault) << model;
  }
}

TEST(InitChoice, MapsSchemeAndRoleToARuleAndFan) {
  test::TempDir dir;
  const std::string path = dir.write("m.yaml", R"(zoc: 1
input: {channels: 6, height: 8, width: 8}
layers:
  - g: {op: conv2d, out_channels: 4, kernel: [3, 5], groups: 2, init: kaiming_normal_fan_out}
  - bn: {op: batchnorm2d, init: zeros}
  - pool: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 7, init: kaiming_normal_fan_out}
  - fc2: {op: linear, out_features: 3}
)");
  Diagnostics d;
  auto g = test::load(path, d);
  ASSERT_TRUE(g) << d.render();
  auto choice = [&](const std::string& name) {
    return init_choice(owner(*g, name), param(*g, name));
  };
  // Grouped conv weight [4, 3, 3, 5]: fan_in = 3*3*5 = 45, fan_out = 4*3*5 = 60 (torch.nn.init
  // does not divide fan_out by groups).
  EXPECT_EQ(choice("g.weight"), (InitChoice{InitRule::kNormalFanOut, 60}));
  EXPECT_EQ(choice("g.bias"), (InitChoice{InitRule::kUniformFanIn, 45}));
  EXPECT_EQ(choice("bn.weight"), (InitChoice{InitRule::kZeros, 0}));
  EXPECT_EQ(choice("bn.bias"), (InitChoice{InitRule::kZeros, 0}));
  EXPECT_EQ(choice("bn.running_mean"), (InitChoice{InitRule::kZeros, 0}));
  EXPECT_EQ(choice("bn.running_var"), (InitChoice{InitRule::kOnes, 0}));
  EXPECT_EQ(choice("fc.weight"), (InitChoice{InitRule::kNormalFanOut, 7}));
  EXPECT_EQ(choice("fc.bias"), (InitChoice{InitRule::kUniformFanIn, 4}));
  EXPECT_EQ(choice("fc2.weight"), (InitChoice{InitRule::kUniformFanIn, 7}));
  EXPECT_STREQ(init_rule_cpp(InitRule::kNormalFanOut), "zoc::InitRule::kNormalFanOut");
  EXPECT_STREQ(init_rule_cpp(InitRule::kUniformFanIn), "zoc::InitRule::kUniformFanIn");
  EXPECT_STREQ(init_rule_cpp(InitRule::kOnes), "zoc::InitRule::kOnes");
  EXPECT_STREQ(init_rule_cpp(InitRule::kZeros), "zoc::InitRule::kZeros");
}

// The default rule must keep its draws bit for bit: checked against values recorded before the
// normal rule was added, and against the rule written out independently.
TEST(InitTensor, UniformRuleIsUnchanged) {
  float v[4];
  init_tensor(7, "conv1.weight", InitRule::kUniformFanIn, 147, v, 4);
  EXPECT_EQ(v[0], 0x1.f9ad16p-5f);
  EXPECT_EQ(v[1], -0x1.492e2cp-4f);
  EXPECT_EQ(v[2], 0x1.768406p-5f);
  EXPECT_EQ(v[3], 0x1.86c544p-5f);
  init_tensor(7, "fc.bias", InitRule::kUniformFanIn, 512, v, 2);
  EXPECT_EQ(v[0], -0x1.25b9ccp-6f);
  EXPECT_EQ(v[1], 0x1.7026d2p-6f);

  Diagnostics d;
  auto g = test::load(repo_path("models/resnet18.yaml"), d);
  ASSERT_TRUE(g) << d.render();
  const Weights w = init_weights(*g, 5);
  for (const ir::Node& n : g->nodes) {
    if (n.op != ir::OpKind::Conv2d && n.op != ir::OpKind::Linear) continue;
    for (const ir::ParamSpec& p : n.params) {
      const auto& ws = n.params.front().shape;
      int64_t fan_in = 1;
      for (size_t k = 1; k < ws.size(); ++k) fan_in *= ws[k];
      std::mt19937_64 gen(5 ^ fnv1a64(p.name));
      const double bound = 1.0 / std::sqrt(double(fan_in));
      const std::vector<float>& got = *w.find(p.name);
      for (size_t i = 0; i < got.size(); ++i) {
        const double u = double(gen() >> 11) * 0x1.0p-53;
        ASSERT_EQ(got[i], float((2.0 * u - 1.0) * bound)) << p.name << "[" << i << "]";
      }
    }
  }
}

TEST(InitTensor, NormalRuleIsSeededPerNameAndFinite) {
  std::vector<float> a(1001), b(1001), c(1001);
  init_tensor(3, "x.weight", InitRule::kNormalFanOut, 50, a.data(), 1001);
  init_tensor(3, "x.weight", InitRule::kNormalFanOut, 50, b.data(), 1001);
  init_tensor(3, "y.weight", InitRule::kNormalFanOut, 50, c.data(), 1001);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float x : a) EXPECT_TRUE(std::isfinite(x));
  // An odd count draws the same leading values as an even one.
  std::vector<float> even(1002);
  init_tensor(3, "x.weight", InitRule::kNormalFanOut, 50, even.data(), 1002);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), even.begin()));
}

// torchvision's scheme on ResNet-50: conv weights ~ N(0, 2/fan_out), every bottleneck's bn3
// gamma 0, the other BNs PyTorch's, and fc untouched (the same bytes as without the options).
TEST(InitWeights, TorchvisionResNetScheme) {
  Diagnostics d;
  auto plain = test::load(repo_path("models/resnet50.yaml"), d);
  auto tv = test::load(repo_path("models/resnet50.yaml"), d, kTorchvision);
  ASSERT_TRUE(plain && tv) << d.render();
  const Weights wp = init_weights(*plain, 7);
  const Weights wt = init_weights(*tv, 7);
  // layer4.0.conv2: [512, 512, 3, 3], 2.4 M values, fan_out = 512 * 9.
  for (const auto& [name, fan_out] :
       std::vector<std::pair<std::string, double>>{{"layer4.0.conv2.weight", 512.0 * 9},
                                                   {"layer3.1.conv1.weight", 256.0},
                                                   {"conv1.weight", 64.0 * 49},
                                                   {"layer4.0.downsample.0.weight", 2048.0}}) {
    const Moments m = moments(*wt.find(name));
    const double want = std::sqrt(2.0 / fan_out);
    const double n = double(wt.find(name)->size());
    EXPECT_NEAR(m.stddev, want, want * 5.0 / std::sqrt(n)) << name;  // ~7 standard errors
    EXPECT_NEAR(m.mean, 0.0, want * 5.0 / std::sqrt(n)) << name;
    EXPECT_NEAR(m.within_one_sd, 0.6827, 3.0 / std::sqrt(n))
        << name;  // normal, not uniform (0.577)
    EXPECT_NE(*wt.find(name), *wp.find(name)) << name;
  }
  int zeroed = 0;
  for (const ir::Node& n : tv->nodes) {
    if (n.op != ir::OpKind::BatchNorm2d) continue;
    for (const ir::ParamSpec& p : n.params) {
      if (p.dtype != ir::DType::F32) continue;
      const std::vector<float>& values = *wt.find(p.name);
      if (p.role == ir::ParamRole::kBnWeight && n.name.ends_with(".bn3")) {
        ++zeroed;
        for (float v : values) ASSERT_EQ(v, 0.0f) << p.name;
      } else {
        EXPECT_EQ(values, *wp.find(p.name)) << p.name;  // gamma 1, beta 0, statistics
      }
    }
  }
  EXPECT_EQ(zeroed, 16);  // 3 + 4 + 6 + 3 bottlenecks
  EXPECT_EQ(*wt.find("fc.weight"), *wp.find("fc.weight"));
  EXPECT_EQ(*wt.find("fc.bias"), *wp.find("fc.bias"));
}

// `zoc run --optimize` draws its seeded weights on the folded graph: declared inits must
// survive lowering and BN folding (fused_conv2d's `init` and `bn_init`).
TEST(InitWeights, SameOnTheOptimizedGraph) {
  Diagnostics d;
  auto g = test::load(repo_path("models/resnet18.yaml"), d, kTorchvision);
  ASSERT_TRUE(g) << d.render();
  ir::Graph opt = *g;
  ASSERT_TRUE(passes::run_pipeline(opt, d)) << d.render();
  const Weights before = init_weights(*g, 9);
  const Weights after = init_weights(opt, 9);
  EXPECT_EQ(before.tensors, after.tensors);
  EXPECT_EQ(param(opt, "layer2.1.bn2.weight").init, InitScheme::kZeros);
}

}  // namespace
}  // namespace zoc
