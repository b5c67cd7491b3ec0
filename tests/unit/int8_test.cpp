// Tests of INT8 inference on the reference interpreter (issue 35): the quantize-int8 pass's plan,
// the interpreter's int8 convolution against an independent computation of the stated
// semantics (runtime/zoc/math/requant.h's exact int32 NHWC convolution and epilogue), the scales
// file, and `zoc calibrate`'s scales end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/backend/reference/kernels.h"
#include "compiler/driver/int8_commands.h"
#include "compiler/ir/verify.h"
#include "compiler/passes/pipeline.h"
#include "compiler/passes/quantize_int8.h"
#include "compiler/quant/scales.h"
#include "compiler/weights/weights.h"
#include "tests/unit/test_util.h"
#include "zoc/io/npy.h"
#include "zoc/math/requant.h"
#include "zoc/weights/fold.h"

namespace zoc {
namespace {

// A residual block behind a float stem: c1 (BN, ReLU) and c2 (+ the stem's output, ReLU) can be
// int8; the stem reads the model input and stays float.
constexpr const char* kBlock = R"(zoc: 1
name: int8_block
input: {channels: 3, height: 7, width: 6}
layers:
  - stem: {op: conv2d, out_channels: 32, kernel: 3, padding: 1}
  - stem_relu: {op: relu}
  - c1: {op: conv2d, out_channels: 32, kernel: 3, padding: 1, stride: 1, bias: false}
  - bn1: {op: batchnorm2d}
  - r1: {op: relu}
  - c2: {op: conv2d, out_channels: 32, kernel: 1}
  - add: {op: add, inputs: [c2, stem_relu]}
  - r2: {op: relu}
  - pool: {op: global_avgpool}
  - flat: {op: flatten}
  - fc: {op: linear, out_features: 5}
)";

struct Block {
  test::TempDir dir;
  ir::Graph g;
  Weights w;
  ref::Tensor x;
};

std::unique_ptr<Block> optimized_block(int64_t batch = 2) {
  auto b = std::make_unique<Block>();
  Diagnostics d;
  auto g = test::load(b->dir.write("block.yaml", kBlock), d);
  EXPECT_TRUE(g) << d.render();
  b->g = *g;
  EXPECT_TRUE(passes::run_pipeline(b->g, d)) << d.render();
  b->w = init_weights(b->g, 3);
  b->x.shape = {batch, 3, 7, 6};
  b->x.data.resize(static_cast<size_t>(batch * 3 * 7 * 6));
  for (size_t i = 0; i < b->x.data.size(); ++i) {
    b->x.data[i] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;
  }
  return b;
}

// Scales for every value a convolution reads, from the block's own activations (max method).
std::map<std::string, float> max_scales(const Block& b) {
  std::map<std::string, float> s;
  auto observe = [&](ir::ValueId v, const ref::Tensor& t) {
    float amax = 0.0f;
    for (float x : t.data) amax = std::max(amax, std::fabs(x));
    s[b.g.value_name(v)] = amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f;
  };
  EXPECT_TRUE(ref::run(b.g, b.w, b.x, observe).ok());
  return s;
}

const ir::Node* node_named(const ir::Graph& g, const std::string& name) {
  return g.find_node(name);
}

TEST(Int8, ValueRoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(ref::int8_value(2.5f * 0.5f, 0.5f), 2.0f * 0.5f);  // a tie goes to the even 2
  EXPECT_EQ(ref::int8_value(3.5f * 0.5f, 0.5f), 4.0f * 0.5f);
  EXPECT_EQ(ref::int8_value(-2.5f * 0.5f, 0.5f), -2.0f * 0.5f);
  EXPECT_EQ(ref::int8_value(1000.0f, 0.5f), 127.0f * 0.5f);
  EXPECT_EQ(ref::int8_value(-1000.0f, 0.5f), -128.0f * 0.5f);
  EXPECT_EQ(ref::int8_value(std::nanf(""), 0.5f), 0.0f);
  // A value an int8 tensor holds comes back unchanged at the same scale.
  for (int q = -128; q <= 127; ++q) {
    const float v = static_cast<float>(q) * 0.0137f;
    EXPECT_EQ(ref::int8_value(v, 0.0137f), v) << q;
  }
}

TEST(Int8, PassPlansTheBlock) {
  auto b = optimized_block();
  const std::map<std::string, float> scales = max_scales(*b);
  passes::Int8Plan plan;
  Diagnostics d;
  ASSERT_TRUE(passes::quantize_int8(b->g, scales, plan, d)) << d.render();
  ASSERT_TRUE(ir::verify(b->g, d)) << d.render();
  EXPECT_EQ(plan.int8_convs, 2);
  EXPECT_EQ(plan.int8_outputs, 1);    // c1, read only by c2; c2's output goes to pooling
  EXPECT_EQ(plan.quantize_nodes, 1);  // the stem's output: c1's input and c2's residual
  ASSERT_EQ(plan.float_convs.size(), 1u);
  EXPECT_EQ(plan.float_convs[0].second, "reads the model input");
  const ir::Node* c1 = node_named(b->g, "c1");
  const ir::Node* c2 = node_named(b->g, "c2");
  ASSERT_TRUE(c1 && c2);
  EXPECT_TRUE(c1->attrs.has("int8_in") && c1->attrs.has("int8_out"));
  EXPECT_TRUE(c2->attrs.has("int8_in") && c2->attrs.has("int8_res") && !c2->attrs.has("int8_out"));
  EXPECT_EQ(b->g.producer(c1->inputs[0]).op, ir::OpKind::Quantize);
  EXPECT_EQ(c2->inputs[1], c1->inputs[0]);
  EXPECT_FLOAT_EQ(static_cast<float>(c2->attrs.f("int8_in")), scales.at("c1"));
}

TEST(Int8, MissingOrBadScalesAreLocatedErrors) {
  auto b = optimized_block();
  std::map<std::string, float> scales = max_scales(*b);
  scales.erase("c1");
  passes::Int8Plan plan;
  Diagnostics d;
  EXPECT_FALSE(passes::quantize_int8(b->g, scales, plan, d));
  EXPECT_NE(d.render().find("no int8 scale for %c1, which int8 layer 'c2' reads"),
            std::string::npos)
      << d.render();
  // A QDQ model's scales: a convolution whose input has none stays float, named as such.
  auto q = optimized_block();
  std::map<std::string, float> partial = max_scales(*q);
  partial.erase("c1");
  passes::Int8Plan qplan;
  Diagnostics dq;
  passes::Int8Choices qdq;
  qdq.unscaled_stay_float = true;
  ASSERT_TRUE(passes::quantize_int8(q->g, partial, qplan, dq, qdq)) << dq.render();
  EXPECT_EQ(qplan.int8_convs, 1);  // c1; c2 reads c1's output, which has no scale
  ASSERT_EQ(qplan.float_convs.size(), 2u);
  EXPECT_EQ(qplan.float_convs[1].first, "c2");
  EXPECT_EQ(qplan.float_convs[1].second, "the QDQ model leaves an input of it float");
  EXPECT_FALSE(node_named(q->g, "c1")->attrs.has("int8_out"));  // its reader is float
  auto b2 = optimized_block();
  std::map<std::string, float> bad = max_scales(*b2);
  bad["stem"] = -1.0f;
  Diagnostics d2;
  EXPECT_FALSE(passes::quantize_int8(b2->g, bad, plan, d2));
  EXPECT_NE(d2.render().find("int8 scale of %stem is -1"), std::string::npos) << d2.render();
}

// c's output recomputed from its input values as the interpreter kept them, by requant.h's
// int32 NHWC convolution and the semantics stated in backend/reference/int8.cpp.
std::vector<float> independent_int8_conv(const ir::Graph& g, const ir::Node& c, const Weights& w,
                                         const std::vector<float>& x, const std::vector<float>* z,
                                         int n) {
  const auto& in = g.type(c.inputs[0]).dims;
  const auto& out = g.type(c.output).dims;
  const int k = static_cast<int>(out[0]), ch = static_cast<int>(in[0]);
  const int kh = static_cast<int>(c.attrs.pair("kernel").h),
            pad = static_cast<int>(c.attrs.pair("padding").h);
  requant::ConvDims dims{
      n, ch, static_cast<int>(in[1]),  static_cast<int>(in[2]), k, kh, kh, pad, pad,
      1, 1,  static_cast<int>(out[1]), static_cast<int>(out[2])};
  // The folded weight and bias, as the interpreter folds them.
  const int per_k = ch * kh * kh;
  std::vector<float> wf(static_cast<size_t>(k * per_k)), bf(static_cast<size_t>(k));
  const bool bn = c.attrs.has("bn_eps");
  auto p = [&](const std::string& suffix) {
    const std::vector<float>* t = w.find(c.name + suffix);
    return t ? t->data() : nullptr;
  };
  const std::string bn_name = bn ? c.fused_from.at(1) : "";
  auto bnp = [&](const std::string& s) { return w.find(bn_name + s)->data(); };
  fold_conv_bias_bn(p(".weight"), p(".bias"), bn ? bnp(".weight") : nullptr,
                    bn ? bnp(".bias") : nullptr, bn ? bnp(".running_mean") : nullptr,
                    bn ? bnp(".running_var") : nullptr, bn ? c.attrs.f("bn_eps") : 0.0, k, per_k,
                    wf.data(), bf.data());
  const auto s_x = static_cast<float>(c.attrs.f("int8_in"));
  const bool int8_out = c.attrs.has("int8_out");
  const double s_out = int8_out ? static_cast<float>(c.attrs.f("int8_out")) : 1.0;
  const double pre = z ? static_cast<float>(c.attrs.f("int8_res")) : s_out;
  const auto rne = [](float v) { return requant::to_int8(v, requant::Rounding::kNearestEven); };
  // NCHW floats -> NHWC int8, KCRS -> KRSC int8 with per-channel scales.
  const int hw = dims.h * dims.w, pq = dims.p * dims.q;
  std::vector<int8_t> xq(x.size()), wq(wf.size());
  for (int b = 0; b < n; ++b)
    for (int ci = 0; ci < ch; ++ci)
      for (int i = 0; i < hw; ++i)
        xq[(b * hw + i) * ch + ci] = rne(x[(b * ch + ci) * hw + i] / s_x);
  std::vector<float> sw(static_cast<size_t>(k));
  for (int ki = 0; ki < k; ++ki) {
    float amax = 0.0f;
    for (int j = 0; j < per_k; ++j) amax = std::max(amax, std::fabs(wf[ki * per_k + j]));
    sw[ki] = amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f;
    for (int ci = 0; ci < ch; ++ci)
      for (int t = 0; t < kh * kh; ++t)
        wq[(ki * kh * kh + t) * ch + ci] = rne(wf[(ki * ch + ci) * kh * kh + t] / sw[ki]);
  }
  std::vector<int32_t> acc(static_cast<size_t>(n * pq * k));
  requant::conv_nhwc_int32(dims, xq.data(), wq.data(), acc.data());
  std::vector<float> y(static_cast<size_t>(n * k * pq));
  for (int b = 0; b < n; ++b) {
    for (int ki = 0; ki < k; ++ki) {
      const auto m = static_cast<float>(double{s_x} * sw[ki] / pre);
      const auto cb = static_cast<float>(double{bf[ki]} / pre);
      for (int i = 0; i < pq; ++i) {
        const size_t o = static_cast<size_t>((b * k + ki) * pq + i);
        const float zq = z ? static_cast<float>(rne((*z)[o] / static_cast<float>(pre))) : 0.0f;
        float v = requant::epilogue(acc[(b * pq + i) * k + ki], m, cb, zq, true);
        if (static_cast<float>(pre / s_out) != 1.0f) v = v * static_cast<float>(pre / s_out);
        y[o] = int8_out ? static_cast<float>(rne(v)) * static_cast<float>(s_out) : v;
      }
    }
  }
  return y;
}

TEST(Int8, InterpreterConvolutionMatchesTheStatedSemanticsExactly) {
  auto b = optimized_block(3);
  passes::Int8Plan plan;
  Diagnostics d;
  ASSERT_TRUE(passes::quantize_int8(b->g, max_scales(*b), plan, d)) << d.render();
  std::map<std::string, std::vector<float>> seen;
  auto observe = [&](ir::ValueId v, const ref::Tensor& t) { seen[b->g.value_name(v)] = t.data; };
  ASSERT_TRUE(ref::run(b->g, b->w, b->x, observe).ok());
  for (const char* name : {"c1", "c2"}) {
    const ir::Node& c = *node_named(b->g, name);
    const std::vector<float>& x = seen.at(b->g.value_name(c.inputs[0]));
    const std::vector<float>* z =
        c.inputs.size() == 2 ? &seen.at(b->g.value_name(c.inputs[1])) : nullptr;
    const std::vector<float> want = independent_int8_conv(b->g, c, b->w, x, z, 3);
    const std::vector<float>& got = seen.at(name);
    ASSERT_EQ(got.size(), want.size());
    int differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
    EXPECT_EQ(differ, 0) << name;
  }
}

TEST(Int8, CloseToFloatOnTheBlock) {
  auto b = optimized_block(4);
  auto fp32 = ref::run(b->g, b->w, b->x);
  ASSERT_TRUE(fp32.ok());
  passes::Int8Plan plan;
  Diagnostics d;
  ASSERT_TRUE(passes::quantize_int8(b->g, max_scales(*b), plan, d)) << d.render();
  auto int8 = ref::run(b->g, b->w, b->x);
  ASSERT_TRUE(int8.ok());
  double num = 0, den = 0;
  for (size_t i = 0; i < (*fp32)[0].data.size(); ++i) {
    const double e = (*int8)[0].data[i] - (*fp32)[0].data[i];
    num += e * e;
    den += double((*fp32)[0].data[i]) * (*fp32)[0].data[i];
  }
  EXPECT_LT(std::sqrt(num / den), 0.05);  // two int8 layers: about 1% each
  EXPECT_GT(num, 0.0);                    // and int8 did change the numbers
}

TEST(Int8, ScalesFileRoundTripsAndRejectsOtherFiles) {
  test::TempDir dir;
  quant::Int8Scales s;
  s.scales = {{"input", 0.25f}, {"layer1.0.conv1", 1.0f / 3.0f}};
  s.method = "entropy, 8 images";
  s.model = "m";
  ASSERT_TRUE(quant::write_scales(s, dir.file("s.safetensors")).ok());
  auto back = quant::read_scales(dir.file("s.safetensors"));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->scales, s.scales);
  EXPECT_EQ(back->method, s.method);
  EXPECT_EQ(back->model, "m");
  EXPECT_TRUE(back->float_layers.empty());
  s.float_layers = {"layer4.2.conv3", "layer1.0.conv1"};  // most sensitive first, kept in order
  ASSERT_TRUE(quant::write_scales(s, dir.file("f.safetensors")).ok());
  auto floats = quant::read_scales(dir.file("f.safetensors"));
  ASSERT_TRUE(floats.ok()) << floats.error().message;
  EXPECT_EQ(floats->float_layers, s.float_layers);
  s.float_layers = {"two\nlines"};
  EXPECT_FALSE(quant::write_scales(s, dir.file("nl.safetensors")).ok());
  s.float_layers.clear();

  Block b;  // a weights file is not a scales file
  Diagnostics d;
  auto g = test::load(b.dir.write("block.yaml", kBlock), d);
  ASSERT_TRUE(g);
  ASSERT_TRUE(save_weights(*g, init_weights(*g, 1), dir.file("w.safetensors")).ok());
  auto w = quant::read_scales(dir.file("w.safetensors"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("not an int8 scales file"), std::string::npos);

  s.scales["bad"] = 0.0f;
  ASSERT_TRUE(quant::write_scales(s, dir.file("zero.safetensors")).ok());
  auto z = quant::read_scales(dir.file("zero.safetensors"));
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().message.find("scale 'bad' is 0"), std::string::npos) << z.error().message;
}

TEST(Int8, CalibrateWritesAScalePerConvolutionInput) {
  auto b = optimized_block(6);
  ASSERT_TRUE(npy::write_float32(b->dir.file("a.npy"), b->x.data.data(), b->x.shape).ok());
  CalibrateOptions o;
  o.samples = {b->dir.file("a.npy")};
  o.batch = 4;  // two runs for the file's 6 images
  for (const char* method : {"max", "percentile", "entropy"}) {
    o.method = method;
    auto s = calibrate(b->g, b->w, o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->scales.size(), 3u) << method;  // input (the stem's), stem (c1, c2), c1 (c2)
    EXPECT_EQ(s->method.find(method), 0u);
    EXPECT_NE(s->method.find("6 images"), std::string::npos) << s->method;
    if (std::string(method) == "max") {  // the largest magnitude over both runs, / 127
      const std::map<std::string, float> want = max_scales(*b);
      for (const auto& [name, scale] : s->scales) EXPECT_EQ(scale, want.at(name)) << name;
    }
  }
  o.samples = {b->dir.file("missing.npy")};
  auto missing = calibrate(b->g, b->w, o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("missing.npy"), std::string::npos);
}

TEST(Int8, KeptFloatConvolutionsStayFloatWithTheirReason) {
  auto b = optimized_block();
  passes::Int8Choices keep;
  keep.keep_float = {{"c2", "measured"}};
  passes::Int8Plan plan;
  Diagnostics d;
  ASSERT_TRUE(passes::quantize_int8(b->g, max_scales(*b), plan, d, keep)) << d.render();
  EXPECT_EQ(plan.int8_convs, 1);
  ASSERT_EQ(plan.float_convs.size(), 2u);  // the stem, then c2
  EXPECT_EQ(plan.float_convs[1], std::make_pair(std::string("c2"), std::string("measured")));
  EXPECT_FALSE(node_named(b->g, "c2")->attrs.has("int8_in"));
  EXPECT_FALSE(node_named(b->g, "c1")->attrs.has("int8_out"));  // its reader is float now

  auto other = optimized_block();  // a name from another model
  keep.keep_float = {{"layer1.0.conv1", "measured"}};
  Diagnostics d2;
  EXPECT_FALSE(passes::quantize_int8(other->g, max_scales(*other), plan, d2, keep));
  EXPECT_NE(d2.render().find("convolution 'layer1.0.conv1' is to stay float (measured), but "
                             "model 'int8_block' has no convolution of that name"),
            std::string::npos)
      << d2.render();
}

// The relative L2 distance of the block's outputs from fp32 with `floats` kept float.
double plan_error(const Block& b, const std::vector<std::string>& floats) {
  ir::Graph q = b.g;
  passes::Int8Choices keep;
  for (const std::string& f : floats) keep.keep_float.emplace(f, "test");
  passes::Int8Plan plan;
  Diagnostics d;
  EXPECT_TRUE(passes::quantize_int8(q, max_scales(b), plan, d, keep)) << d.render();
  auto want = ref::run(b.g, b.w, b.x), got = ref::run(q, b.w, b.x);
  EXPECT_TRUE(want.ok() && got.ok());
  double num = 0, den = 0;
  for (size_t i = 0; i < (*want)[0].data.size(); ++i) {
    const double e = double((*got)[0].data[i]) - (*want)[0].data[i];
    num += e * e;
    den += double((*want)[0].data[i]) * (*want)[0].data[i];
  }
  return std::sqrt(num / den);
}

TEST(Int8, MaxErrorKeepsTheFewestMostSensitiveConvolutionsFloat) {
  auto b = optimized_block(6);
  const std::map<std::string, float> scales = max_scales(*b);
  auto loose = choose_float_layers(b->g, b->w, scales, b->x, 1.0, 4);
  ASSERT_TRUE(loose.ok()) << loose.error().message;
  ASSERT_EQ(loose->layers.size(), 2u);  // c1 and c2; the stem reads the model input
  EXPECT_GE(loose->layers[0].error, loose->layers[1].error);
  EXPECT_DOUBLE_EQ(loose->layers[0].error, plan_error(*b, {loose->layers[1].layer}));
  EXPECT_GT(loose->all_int8_error, 0.0);
  EXPECT_DOUBLE_EQ(loose->all_int8_error, plan_error(*b, {}));
  EXPECT_TRUE(loose->float_layers.empty());
  EXPECT_EQ(loose->chosen_error, loose->all_int8_error);
  EXPECT_EQ(loose->images, 6);

  // Just under every-layer-int8's error: the most sensitive layer alone goes back to float,
  // unless the other one alone is still too far, then both.
  const double target = loose->all_int8_error * 0.999;
  auto mid = choose_float_layers(b->g, b->w, scales, b->x, target, 4);
  ASSERT_TRUE(mid.ok()) << mid.error().message;
  ASSERT_FALSE(mid->float_layers.empty());
  EXPECT_EQ(mid->float_layers[0], loose->layers[0].layer);
  EXPECT_LE(mid->chosen_error, target);
  EXPECT_DOUBLE_EQ(mid->chosen_error, plan_error(*b, mid->float_layers));
  if (mid->float_layers.size() == 2) {
    EXPECT_GT(loose->layers[1].error, target);
  }

  auto tight = choose_float_layers(b->g, b->w, scales, b->x, 1e-12, 4);
  ASSERT_TRUE(tight.ok()) << tight.error().message;
  EXPECT_EQ(tight->float_layers.size(), 2u);
  EXPECT_EQ(tight->chosen_error, 0.0);
  EXPECT_FALSE(choose_float_layers(b->g, b->w, scales, b->x, 0.0, 4).ok());
  auto none = choose_float_layers(b->g, b->w, scales, ref::Tensor{}, 0.1, 4);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "no image to measure the sensitivity on");
}

TEST(Int8, CalibrateCommandRecordsTheFloatLayersThatRunThenKeeps) {
  auto b = optimized_block(6);
  ASSERT_TRUE(npy::write_float32(b->dir.file("a.npy"), b->x.data.data(), b->x.shape).ok());
  CalibrateOptions o;
  o.samples = {b->dir.file("a.npy")};
  o.method = "max";
  o.max_error = 1e-12;  // every convolution float
  o.sensitivity_images = 4;
  Diagnostics d;
  testing::internal::CaptureStdout();
  calibrate_command(b->g, b->w, o, b->dir.file("s.safetensors"), d);
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_FALSE(d.has_errors()) << d.render();
  EXPECT_NE(out.find("sensitivity on 4 images"), std::string::npos) << out;
  EXPECT_NE(out.find("kept float: 2 of 2"), std::string::npos) << out;
  auto s = quant::read_scales(b->dir.file("s.safetensors"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->float_layers.size(), 2u);
  std::ostringstream plan;
  ASSERT_TRUE(apply_int8_scales(b->g, b->dir.file("s.safetensors"), plan, d)) << d.render();
  EXPECT_NE(plan.str().find("int8 plan: 0 of 3 convolutions int8"), std::string::npos)
      << plan.str();
  EXPECT_NE(plan.str().find("float: c2 (calibration measured it sensitive (--max-error))"),
            std::string::npos)
      << plan.str();

  // Images from two files, as many as asked for (or --max-images); a layer name the model
  // lacks is refused at the scales file.
  const std::vector<int64_t> three = {3, b->x.shape[1], b->x.shape[2], b->x.shape[3]};
  const size_t half = b->x.data.size() / 2;
  ASSERT_TRUE(npy::write_float32(b->dir.file("p1.npy"), b->x.data.data(), three).ok());
  ASSERT_TRUE(npy::write_float32(b->dir.file("p2.npy"), b->x.data.data() + half, three).ok());
  o.samples = {b->dir.file("p1.npy"), b->dir.file("p2.npy")};
  o.max_error = 1.0;
  for (const auto& [asked, max_images, measured] :
       {std::tuple{5, 0, "sensitivity on 5 images"}, std::tuple{64, 0, "sensitivity on 6 images"},
        std::tuple{64, 4, "sensitivity on 4 images"}}) {
    o.sensitivity_images = asked;
    o.max_images = max_images;
    testing::internal::CaptureStdout();
    calibrate_command(b->g, b->w, o, b->dir.file("t.safetensors"), d);
    const std::string text = testing::internal::GetCapturedStdout();
    ASSERT_FALSE(d.has_errors()) << d.render();
    EXPECT_NE(text.find(measured), std::string::npos) << text;
  }
  quant::Int8Scales other = *s;
  other.float_layers = {"layer1.0.conv1"};
  ASSERT_TRUE(quant::write_scales(other, b->dir.file("o.safetensors")).ok());
  auto fresh = optimized_block();
  Diagnostics d2;
  EXPECT_FALSE(apply_int8_scales(fresh->g, b->dir.file("o.safetensors"), plan, d2));
  EXPECT_NE(d2.render().find("o.safetensors: error: keeps layer 'layer1.0.conv1' float, but "
                             "model 'int8_block' has no convolution of that name"),
            std::string::npos)
      << d2.render();
}

}  // namespace
}  // namespace zoc
