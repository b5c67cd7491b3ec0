// Per-op shape rules of the model's ops (see shapes.h; the training graph's are in
// shapes_train.cpp), and infer_shapes with the one switch over the op table.
#include "compiler/ir/shapes.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/ir/activation_params.h"
#include "compiler/ir/shape_rule.h"
#include "compiler/support/checked_math.h"
#include "compiler/support/sanitize.h"

namespace zoc::ir {
namespace detail {

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "N";
  for (int64_t d : dims) s += fmt::format("x{}", d);
  return s;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

bool Rule::fail(const std::string& msg) {
  d_.error(n_.loc,
           fmt::format("layer '{}' ({}): {}", shown_text(n_.name), op_info(n_.op).name, msg));
  return false;
}

bool Rule::expect_rank(size_t i, size_t rank, const char* what) {
  if (in(i).dims.size() == rank) return true;
  return fail(fmt::format("expects {} input, got {}", what, dims_str(in(i).dims)));
}

bool Rule::param(const std::string& suffix, std::vector<int64_t> shape, ParamRole role,
                 bool trainable, DType dtype, bool optional, const std::string* owner) {
  return named_param((owner ? *owner : weights_owner(n_)) + "." + suffix, std::move(shape), role,
                     trainable, dtype, optional, &suffix);
}

bool Rule::named_param(std::string name, std::vector<int64_t> shape, ParamRole role, bool trainable,
                       DType dtype, bool optional, const std::string* shown) {
  auto numel = checked_product_of(shape);
  if (!numel || !checked_mul(*numel, 8) || *numel * 8 > kMaxSampleBytes) {
    return fail(fmt::format("parameter '{}' of shape {} is too large (over {} bytes)",
                            shown ? *shown : name, shape_str(shape), kMaxSampleBytes));
  }
  n_.params.push_back({std::move(name), dtype, std::move(shape), trainable, optional, role,
                       InitScheme::kPytorchDefault});
  return true;
}

void Rule::bn_params(int64_t c, const std::string* owner, std::string_view init_attr) {
  if (param("weight", {c}, ParamRole::kBnWeight, true, DType::F32, false, owner)) {
    declared_init(init_attr);
  }
  param("bias", {c}, ParamRole::kBnBias, true, DType::F32, false, owner);
  param("running_mean", {c}, ParamRole::kBnMean, false, DType::F32, false, owner);
  param("running_var", {c}, ParamRole::kBnVar, false, DType::F32, false, owner);
  param("num_batches_tracked", {}, ParamRole::kBnCount, false, DType::I64, true, owner);
}

bool Rule::set_result(ValueId v, TensorType type) {
  const std::vector<int64_t>& dims = type.dims;
  const std::string shown = type.batched ? dims_str(dims) : shape_str(dims);
  for (int64_t d : dims) {
    if (d < 1) return fail(fmt::format("output shape {} has an empty dimension", shown));
    if (d > kMaxDim) {
      return fail(fmt::format("output dimension {} exceeds the limit {}", d, kMaxDim));
    }
  }
  auto numel = checked_product_of(dims);
  if (!numel || !checked_mul(*numel, 8) || *numel * 8 > kMaxSampleBytes) {
    return fail(fmt::format("output shape {} is too large (over {} bytes{})", shown,
                            kMaxSampleBytes, type.batched ? " per sample" : ""));
  }
  g_.values[v].type = std::move(type);
  return true;
}

bool Rule::expect_extras(size_t count) {
  extras_checked_ = true;
  if (n_.extra_outputs.size() == count) return true;
  return fail(fmt::format("has {} extra results, expects {}", n_.extra_outputs.size(), count));
}

bool Rule::groups_divide(int64_t c, int64_t out_c, int64_t groups) {
  bool ok = true;
  if (c % groups != 0) {
    ok = fail(fmt::format("groups {} does not divide the {} input channels", groups, c));
  }
  if (out_c % groups != 0) {
    ok = fail(fmt::format("groups {} does not divide out_channels {}", groups, out_c));
  }
  return ok;
}

bool Rule::input() {
  const Attrs& a = n_.attrs;
  return set_output({a.i("channels"), a.i("height"), a.i("width")}, Layout::NCHW);
}

bool Rule::conv2d() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const Attrs& a = n_.attrs;
  const int64_t c = in(0).dims[0], h = in(0).dims[1], w = in(0).dims[2];
  const int64_t out_c = a.i("out_channels"), groups = a.i("groups");
  const Pair k = a.pair("kernel"), s = a.pair("stride"), p = a.pair("padding"),
             dl = a.pair("dilation");
  if (!groups_divide(c, out_c, groups)) return false;
  auto oh = conv_output_size(h, k.h, s.h, p.h, dl.h);
  auto ow = conv_output_size(w, k.w, s.w, p.w, dl.w);
  if (!oh || !ow) {
    return fail(fmt::format(
        "output size would be < 1: input {}x{}, kernel {}x{}, padding {}x{}, dilation {}x{}", h, w,
        k.h, k.w, p.h, p.w, dl.h, dl.w));
  }
  // weight_2d: a linear layer over the channels, its weight kept as the state_dict's [O, C].
  const bool weight_2d = a.flag("weight_2d");
  if (weight_2d && (k != Pair{1, 1} || groups != 1)) {
    return fail(
        fmt::format("an [out, in] weight (weight_2d) needs a 1x1 kernel and groups 1, "
                    "not kernel {}x{} and groups {}",
                    k.h, k.w, groups));
  }
  std::vector<int64_t> weight_shape = {out_c, c / groups, k.h, k.w};
  if (weight_2d) weight_shape = {out_c, c};
  if (!param("weight", std::move(weight_shape), ParamRole::kWeight)) return false;
  declared_init("init");
  if (a.b("bias")) param("bias", {out_c}, ParamRole::kBias);
  if (n_.op == OpKind::FusedConv2d) {
    // A folded BatchNorm's tensors keep the BN layer's names (fused_from[1], see
    // passes/fold_batchnorm.cpp); a residual input must match the output.
    if (a.has("bn_eps")) {
      if (n_.fused_from.size() < 2) return fail("folded BatchNorm without its layer name");
      bn_params(out_c, &n_.fused_from[1], "bn_init");
    }
    if (n_.inputs.size() == 2 && in(1).dims != std::vector<int64_t>{out_c, *oh, *ow}) {
      return fail(fmt::format("residual input {} does not match the output {}",
                              dims_str(in(1).dims), dims_str({out_c, *oh, *ow})));
    }
  }
  return set_output({out_c, *oh, *ow}, Layout::NCHW);
}

// In training mode, an extra result: the batch's statistics for the backward pass.
bool Rule::batchnorm2d() {
  // BatchNorm1d (after a flatten or linear layer) reaches here as the same op; say so rather
  // than only that an image was expected.
  if (in(0).dims.size() == 1) {
    return fail(
        fmt::format("BatchNorm over a 2-D (N, C) tensor ({}, BatchNorm1d) is not "
                    "supported; zoc's BatchNorm takes images [N, C, H, W]",
                    dims_str(in(0).dims)));
  }
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const int64_t c = in(0).dims[0];
  bn_params(c, nullptr, "init");
  const bool training = n_.attrs.flag("training");
  if (!expect_extras(training ? 1 : 0) || (training && !set_extra(0, {2, c}))) return false;
  return set_output(in(0).dims, in(0).layout);
}

bool Rule::same_as_input() {
  // hardtanh clamps to [min_val, max_val]; with min_val above max_val the kernels would disagree
  // on which bound wins (issue 31: accepted from any frontend).
  if (n_.op == OpKind::Hardtanh &&
      !(activation_param(n_, "min_val") <= activation_param(n_, "max_val"))) {
    return fail(
        fmt::format("min_val {:g} is above max_val {:g}: hardtanh clamps to [min_val, "
                    "max_val]",
                    activation_param(n_, "min_val"), activation_param(n_, "max_val")));
  }
  return set_output(in(0).dims, in(0).layout);
}

bool Rule::pool(bool is_max) {
  std::vector<int64_t> dims = pool_dims(is_max);
  return !dims.empty() && set_output(std::move(dims), Layout::NCHW);
}

std::vector<int64_t> Rule::pool_dims(bool is_max) {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return {};
  Attrs& a = n_.attrs;
  const Pair k = a.pair("kernel");
  if (!a.has("stride")) a.set("stride", AttrValue{AttrKind::Pair, 0, k, 0});
  const Pair s = a.pair("stride"), p = a.pair("padding");
  const Pair dl = is_max ? a.pair("dilation") : Pair{1, 1};
  if (p.h > k.h / 2 || p.w > k.w / 2) {
    fail(fmt::format("padding {}x{} exceeds half the kernel {}x{}", p.h, p.w, k.h, k.w));
    return {};
  }
  const int64_t c = in(0).dims[0], h = in(0).dims[1], w = in(0).dims[2];
  auto oh = pool_output_size(h, k.h, s.h, p.h, dl.h, a.b("ceil_mode"));
  auto ow = pool_output_size(w, k.w, s.w, p.w, dl.w, a.b("ceil_mode"));
  if (!oh || !ow) {
    fail(fmt::format("output size would be < 1: input {}x{}, window {}x{}, padding {}x{}", h, w,
                     k.h, k.w, p.h, p.w));
    return {};
  }
  return {c, *oh, *ow};
}

bool Rule::global_avgpool() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  return set_output({in(0).dims[0], 1, 1}, Layout::NCHW);
}

bool Rule::flatten() {
  auto numel = checked_product_of(in(0).dims);
  if (!numel) return fail("flattened size overflows");
  return set_output({*numel}, Layout::NC);
}

bool Rule::linear() {
  if (in(0).dims.size() != 1) {
    return fail(fmt::format("expects features [N, F], got {}; add a flatten before it",
                            dims_str(in(0).dims)));
  }
  const int64_t f = in(0).dims[0], out = n_.attrs.i("out_features");
  if (!param("weight", {out, f}, ParamRole::kWeight)) return false;
  declared_init("init");
  if (n_.attrs.b("bias")) param("bias", {out}, ParamRole::kBias);
  return set_output({out}, Layout::NC);
}

// softmax and log_softmax: over dim 1, the features of [N, F] or the channels of each pixel.
bool Rule::softmax() {
  const size_t rank = in(0).dims.size();
  if (rank != 1 && rank != 3) {
    return fail(fmt::format("expects features [N, F] or an image [N, C, H, W], got {}",
                            dims_str(in(0).dims)));
  }
  return set_output(in(0).dims, in(0).layout);
}

bool Rule::concat() {
  if (!expect_rank(0, 3, "images [N, C, H, W]")) return false;
  int64_t channels = 0;
  for (size_t i = 0; i < n_.inputs.size(); ++i) {
    const auto& d = in(i).dims;
    if (d.size() != 3 || d[1] != in(0).dims[1] || d[2] != in(0).dims[2]) {
      return fail(
          fmt::format("input {} has shape {}, but concatenation along channels needs "
                      "N x C x {} x {}",
                      i, dims_str(d), in(0).dims[1], in(0).dims[2]));
    }
    auto sum = checked_add(channels, d[0]);
    if (!sum) return fail("channel count overflows");
    channels = *sum;
  }
  return set_output({channels, in(0).dims[1], in(0).dims[2]}, Layout::NCHW);
}

bool Rule::layer_scale() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  return param("layer_scale", {in(0).dims[0], 1, 1}, ParamRole::kScale) &&
         set_output(in(0).dims, Layout::NCHW);
}

// Over the channels of an image (each pixel normalized on its own) or the features of [N, F].
bool Rule::layernorm() {
  const size_t rank = in(0).dims.size();
  if (rank != 3 && rank != 1) {
    return fail(fmt::format("expects an image [N, C, H, W] or features [N, F], got {}",
                            dims_str(in(0).dims)));
  }
  const int64_t c = in(0).dims[0];
  return param("weight", {c}, ParamRole::kNormWeight) && param("bias", {c}, ParamRole::kNormBias) &&
         set_output(in(0).dims, in(0).layout);
}

bool Rule::channel_shuffle() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const int64_t c = in(0).dims[0], groups = n_.attrs.i("groups");
  if (c % groups != 0) {
    return fail(fmt::format("groups {} does not divide the {} input channels", groups, c));
  }
  return set_output(in(0).dims, Layout::NCHW);
}

bool Rule::slice_channels() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const std::vector<int64_t>& d = in(0).dims;
  const int64_t start = n_.attrs.i("start"), count = n_.attrs.i("count");
  if (start + count > d[0]) {
    return fail(
        fmt::format("channels {}..{} are outside the input's {}", start, start + count - 1, d[0]));
  }
  return set_output({count, d[1], d[2]}, Layout::NCHW);
}

// Constant padding: H and W grow by the rows and columns added on each side.
bool Rule::pad() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const std::vector<int64_t>& d = in(0).dims;
  const Attrs& a = n_.attrs;
  return set_output({d[0], d[1] + a.i("top") + a.i("bottom"), d[2] + a.i("left") + a.i("right")},
                    Layout::NCHW);
}

// Any output size: PyTorch's bins overlap where it does not divide the input and repeat input
// cells where it is larger.
bool Rule::adaptive_avgpool2d() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const Pair out = n_.attrs.pair("output_size");
  return set_output({in(0).dims[0], out.h, out.w}, Layout::NCHW);
}

}  // namespace detail

Expected<bool> mul_swaps_operands(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  auto channel_vector_of = [](const std::vector<int64_t>& v, const std::vector<int64_t>& image) {
    return image.size() == 3 && v == std::vector<int64_t>{image[0], 1, 1};
  };
  if (a == b || channel_vector_of(b, a)) return false;
  if (channel_vector_of(a, b)) return true;
  return make_error(
      fmt::format("broadcasting [N, {}] * [N, {}]; zoc multiplies tensors of one "
                  "shape, or an image by its channel vector [N, C, 1, 1]",
                  fmt::join(a, ", "), fmt::join(b, ", ")));
}

namespace {

// How far a window of `kernel` taps spaced `dilation` apart can slide over the padded input:
// in + 2*pad - (dilation*(kernel-1) + 1), or nullopt if it does not fit or overflows.
std::optional<int64_t> window_room(int64_t in, int64_t kernel, int64_t pad, int64_t dilation) {
  auto two_pad = checked_mul(2, pad);
  auto reach = checked_mul(dilation, kernel - 1);
  if (!two_pad || !reach) return std::nullopt;
  auto padded = checked_add(in, *two_pad);
  auto span = checked_add(*reach, 1);
  if (!padded || !span || *padded < *span) return std::nullopt;
  return *padded - *span;
}

}  // namespace

std::optional<int64_t> conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                                        int64_t dilation) {
  // out = floor((in + 2p - d(k-1) - 1) / s) + 1
  auto room = window_room(in, kernel, pad, dilation);
  if (!room || stride < 1) return std::nullopt;
  return *room / stride + 1;
}

std::optional<int64_t> pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                                        int64_t dilation, bool ceil_mode) {
  auto maybe_room = window_room(in, kernel, pad, dilation);
  if (!maybe_room || stride < 1) return std::nullopt;
  const int64_t room = *maybe_room;
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  // PyTorch: with ceil_mode the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

namespace {

// The op table's switch: which rule types a node.
bool apply_rule(detail::Rule& rule, OpKind op) {
  switch (op) {
    case OpKind::Input:
      return rule.input();
    case OpKind::Conv2d:
    case OpKind::FusedConv2d:
      return rule.conv2d();
    case OpKind::BatchNorm2d:
      return rule.batchnorm2d();
    case OpKind::Dropout:
    case OpKind::DropoutGrad:
    case OpKind::Quantize:
      return rule.same_as_input();
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
      return rule.binary();
    case OpKind::MaxPool2d:
      return rule.pool(true);
    case OpKind::AvgPool2d:
      return rule.pool(false);
    case OpKind::GlobalAvgPool:
      return rule.global_avgpool();
    case OpKind::Flatten:
      return rule.flatten();
    case OpKind::Linear:
      return rule.linear();
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      return rule.softmax();
    case OpKind::UpsampleNearest:
    case OpKind::UpsampleBilinear:
      return rule.upsample();
    case OpKind::ConvTranspose2d:
      return rule.conv_transpose2d();
    case OpKind::Reshape:
      return rule.reshape();
    case OpKind::Argmax:
      return rule.argmax();
    case OpKind::Concat:
      return rule.concat();
    case OpKind::LayerScale:
      return rule.layer_scale();
    case OpKind::LayerNorm:
      return rule.layernorm();
    case OpKind::ChannelShuffle:
      return rule.channel_shuffle();
    case OpKind::SliceChannels:
      return rule.slice_channels();
    case OpKind::Pad:
      return rule.pad();
    case OpKind::ChannelConv1d:
      return rule.channel_conv1d();
    case OpKind::AdaptiveAvgPool2d:
      return rule.adaptive_avgpool2d();
#define ZOC_ACTIVATION(op, grad, math) \
  case OpKind::op:                     \
    return rule.same_as_input();       \
  case OpKind::grad:                   \
    return rule.activation_grad();
#define ZOC_REF_ACTIVATION(op, grad, math) ZOC_ACTIVATION(op, grad, math)
#include "compiler/ir/ops.def"
    case OpKind::Labels:
      return rule.labels();
    case OpKind::SoftmaxCrossEntropy:
      return rule.softmax_cross_entropy();
    case OpKind::Conv2dGrad:
      return rule.layer_grad(OpKind::Conv2d);
    case OpKind::BatchNorm2dGrad:
      return rule.layer_grad(OpKind::BatchNorm2d);
    case OpKind::LinearGrad:
      return rule.layer_grad(OpKind::Linear);
    case OpKind::SoftmaxGrad:
    case OpKind::LogSoftmaxGrad:
      return rule.activation_grad();
    case OpKind::MaxPool2dGrad:
      return rule.pool_grad(true);
    case OpKind::AvgPool2dGrad:
      return rule.pool_grad(false);
    case OpKind::GlobalAvgPoolGrad:
      return rule.global_avgpool_grad();
    case OpKind::FlattenGrad:
      return rule.flatten_grad();
    case OpKind::MulGrad:
      return rule.mul_grad();
    case OpKind::LayerScaleGrad:
      return rule.layer_grad(OpKind::LayerScale);
    case OpKind::OperandGrad:
      return rule.operand_grad();
    case OpKind::LayerNormGrad:
      return rule.layer_grad(OpKind::LayerNorm);
    case OpKind::PadChannels:
      return rule.pad_channels();
    case OpKind::PadGrad:
      return rule.pad_grad();
    case OpKind::ChannelConv1dGrad:
      return rule.layer_grad(OpKind::ChannelConv1d);
    case OpKind::AdaptiveAvgPool2dGrad:
      return rule.adaptive_avgpool2d_grad();
    case OpKind::UpsampleNearestGrad:
      return rule.layer_grad(OpKind::UpsampleNearest);
    case OpKind::UpsampleBilinearGrad:
      return rule.layer_grad(OpKind::UpsampleBilinear);
    case OpKind::ConvTranspose2dGrad:
      return rule.layer_grad(OpKind::ConvTranspose2d);
    case OpKind::Sgd:
      return rule.sgd();
  }
  return false;
}

}  // namespace

bool infer_shapes(Graph& graph, Diagnostics& diags) { return infer_shapes_from(graph, 0, diags); }

bool infer_shapes_from(Graph& graph, size_t first, Diagnostics& diags) {
  bool all_ok = true;
  detail::EarlierNodes earlier(graph);
  for (size_t i = first; i < graph.nodes.size(); ++i) {
    Node& node = graph.nodes[i];
    node.params.clear();
    for (ValueId v : Graph::results(node)) graph.values[v].type.reset();
    bool inputs_ok = true;
    for (ValueId v : node.inputs) inputs_ok = inputs_ok && graph.values[v].type.has_value();
    if (!inputs_ok) {
      all_ok = false;  // an earlier error already explains it
      continue;
    }
    detail::Rule rule(graph, node, diags, earlier);
    bool ok = true;
    // A model's ops read per-sample float tensors: never labels or a non-batched value.
    for (ValueId v : op_info(node.op).user ? node.inputs : std::vector<ValueId>{}) {
      const TensorType& t = graph.type(v);
      if (!t.batched || t.dtype != DType::F32) {
        ok = rule.fail(fmt::format("reads %{} of type {}, not a batched f32 tensor",
                                   graph.value_name(v), t.str()));
      }
    }
    ok = ok && apply_rule(rule, node.op);
    // The parameters the source module keeps fixed (a backward node's copies of its layer's
    // parameters keep the layer's marks).
    for (ParamSpec& p : node.params) {
      if (std::find(node.frozen.begin(), node.frozen.end(), p.name) != node.frozen.end()) {
        p.frozen = p.trainable;
      }
    }
    if (ok && !rule.extras_checked() && !node.extra_outputs.empty()) {
      ok = rule.fail(fmt::format("has {} extra results; the op defines one result",
                                 node.extra_outputs.size()));
    }
    all_ok = all_ok && ok;
  }
  return all_ok;
}

}  // namespace zoc::ir
