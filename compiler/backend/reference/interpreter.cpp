// Execution of the graph IR on the CPU, one kernel call per node (see interpreter.h).
// Intermediate tensors are freed after their last use, so ResNet-152 runs in little memory.
#include "compiler/backend/reference/interpreter.h"

#include <fmt/format.h>

#include "compiler/backend/reference/kernels.h"
#include "compiler/backend/reference/node_shapes.h"
#include "compiler/support/checked_math.h"
#include "zoc/core/fold.h"

namespace zoc::ref {
namespace {

constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

class Runner {
 public:
  Runner(const ir::Graph& g, const Weights& w, int64_t batch) : g_(g), w_(w), n_(batch) {}

  Expected<std::vector<Tensor>> run(const Tensor& input);

 private:
  const float* param(const ir::Node& node, std::string_view suffix, bool required = true) {
    const std::string name = node.name + "." + std::string(suffix);
    const std::vector<float>* v = w_.find(name);
    if (!v) {
      if (required) missing_ = name;
      return nullptr;
    }
    for (const ir::ParamSpec& p : node.params) {
      if (p.name == name && static_cast<int64_t>(v->size()) != checked_numel(p.shape)) {
        missing_ = name + " (wrong size)";
        return nullptr;
      }
    }
    return v->data();
  }
  // The tensor of `role` among the node's parameters (null if the node has none).
  const float* param_by_role(const ir::Node& node, ir::ParamRole role) {
    for (const ir::ParamSpec& p : node.params) {
      if (p.role != role) continue;
      const std::vector<float>* v = w_.find(p.name);
      if (!v || static_cast<int64_t>(v->size()) != checked_numel(p.shape)) {
        missing_ = p.name;
        return nullptr;
      }
      return v->data();
    }
    return nullptr;
  }
  Status fused_conv(const ir::Node& node, Tensor& out);
  static int64_t checked_numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  Status exec(const ir::Node& node);

  const ir::Graph& g_;
  const Weights& w_;
  int64_t n_;
  std::vector<Tensor> values_;
  std::string missing_;
};

Status Runner::exec(const ir::Node& node) {
  const ir::TensorType& out_t = g_.type(node.output);
  Tensor& out = values_[node.output];
  out.shape = {n_};
  out.shape.insert(out.shape.end(), out_t.dims.begin(), out_t.dims.end());
  out.data.assign(static_cast<size_t>(n_ * out_t.sample_numel()), 0.0f);
  auto in = [&](size_t i) -> const Tensor& { return values_[node.inputs[i]]; };
  auto dims = [&](size_t i) -> const std::vector<int64_t>& { return g_.type(node.inputs[i]).dims; };
  const ir::Attrs& a = node.attrs;
  const int64_t count = static_cast<int64_t>(out.data.size());

  switch (node.op) {
    case ir::OpKind::Input: break;  // filled by run()
    case ir::OpKind::Conv2d: {
      const Conv2dShape cs = conv_shape_of(g_, node, n_);
      const float* w = param(node, "weight");
      const float* b = a.b("bias") ? param(node, "bias") : nullptr;
      if (!missing_.empty()) break;
      conv2d(in(0).data.data(), w, b, out.data.data(), cs);
      break;
    }
    case ir::OpKind::FusedConv2d:
      if (Status st = fused_conv(node, out); !st) return st;
      break;
    case ir::OpKind::BatchNorm2d: {
      const float* gamma = param(node, "weight");
      const float* beta = param(node, "bias");
      const float* mean = param(node, "running_mean");
      const float* var = param(node, "running_var");
      if (!missing_.empty()) break;
      batchnorm2d(in(0).data.data(), out.data.data(), n_, dims(0)[0], dims(0)[1] * dims(0)[2],
                  gamma, beta, mean, var, a.f("eps"));
      break;
    }
    case ir::OpKind::Relu: relu(in(0).data.data(), out.data.data(), count); break;
    case ir::OpKind::Tanh: tanh(in(0).data.data(), out.data.data(), count); break;
    case ir::OpKind::Sigmoid: sigmoid(in(0).data.data(), out.data.data(), count); break;
    case ir::OpKind::Dropout:  // identity at inference
    case ir::OpKind::Flatten:  // NCHW order is already the flattened order
      out.data = in(0).data;
      break;
    case ir::OpKind::Add:
      add(in(0).data.data(), in(1).data.data(), out.data.data(), count);
      break;
    case ir::OpKind::MaxPool2d:
    case ir::OpKind::AvgPool2d: {
      const Pool2dShape ps = pool_shape_of(g_, node, n_);
      if (node.op == ir::OpKind::MaxPool2d) {
        maxpool2d(in(0).data.data(), out.data.data(), ps);
      } else {
        avgpool2d(in(0).data.data(), out.data.data(), ps);
      }
      break;
    }
    case ir::OpKind::GlobalAvgPool:
      global_avgpool(in(0).data.data(), out.data.data(), n_, dims(0)[0], dims(0)[1] * dims(0)[2]);
      break;
    case ir::OpKind::Linear: {
      const float* w = param(node, "weight");
      const float* b = a.b("bias") ? param(node, "bias") : nullptr;
      if (!missing_.empty()) break;
      linear(in(0).data.data(), w, b, out.data.data(), n_, dims(0)[0], out_t.dims[0]);
      break;
    }
    case ir::OpKind::Softmax:
      softmax(in(0).data.data(), out.data.data(), n_, out_t.dims[0]);
      break;
    case ir::OpKind::Concat: {
      std::vector<const float*> ptrs;
      std::vector<int64_t> channels;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        ptrs.push_back(in(i).data.data());
        channels.push_back(dims(i)[0]);
      }
      concat_channels(ptrs, channels, out.data.data(), n_, out_t.dims[1] * out_t.dims[2]);
      break;
    }
  }
  if (!missing_.empty()) {
    return Error{fmt::format("reference interpreter: layer '{}' ({}): no weights for '{}'",
                             node.name, ir::op_info(node.op).name, missing_)};
  }
  return Status::success();
}

// conv + bias (+ folded BN) (+ residual) (+ ReLU), computed as the unfused layers would be,
// with the BN folded by the same arithmetic the generated code uses (zoc/core/fold.h).
Status Runner::fused_conv(const ir::Node& node, Tensor& out) {
  const ir::Attrs& a = node.attrs;
  const Conv2dShape cs = conv_shape_of(g_, node, n_);
  const float* w = param_by_role(node, ir::ParamRole::kWeight);
  const float* b = param_by_role(node, ir::ParamRole::kBias);
  const bool bn = a.has("bn_eps");
  const float* gamma = bn ? param_by_role(node, ir::ParamRole::kBnWeight) : nullptr;
  const float* beta = bn ? param_by_role(node, ir::ParamRole::kBnBias) : nullptr;
  const float* mean = bn ? param_by_role(node, ir::ParamRole::kBnMean) : nullptr;
  const float* var = bn ? param_by_role(node, ir::ParamRole::kBnVar) : nullptr;
  if (!missing_.empty() || !w) {
    return Error{fmt::format("reference interpreter: layer '{}' ({}): no weights for '{}'",
                             node.name, ir::op_info(node.op).name, missing_)};
  }
  const int64_t per_k = cs.c_in / cs.groups * cs.kh * cs.kw;
  std::vector<float> w_eff(static_cast<size_t>(cs.c_out * per_k)), b_eff(cs.c_out);
  fold_conv_bias_bn(w, b, gamma, beta, mean, var, bn ? a.f("bn_eps") : 0.0, cs.c_out, per_k,
                    w_eff.data(), b_eff.data());
  conv2d(values_[node.inputs[0]].data.data(), w_eff.data(), b_eff.data(), out.data.data(), cs);
  const auto count = static_cast<int64_t>(out.data.size());
  if (node.inputs.size() == 2) {
    add(out.data.data(), values_[node.inputs[1]].data.data(), out.data.data(), count);
  }
  if (a.i("activation") == 1) relu(out.data.data(), out.data.data(), count);
  return Status::success();
}

Expected<std::vector<Tensor>> Runner::run(const Tensor& input) {
  values_.assign(g_.values.size(), Tensor{});
  // Last use of each value, so intermediates can be freed early.
  std::vector<size_t> last_use(g_.values.size(), 0);
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (ir::ValueId v : g_.nodes[i].inputs) last_use[v] = i;
  }
  for (ir::ValueId v : g_.outputs) last_use[v] = g_.nodes.size();
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& node = g_.nodes[i];
    if (node.op == ir::OpKind::Input) {
      values_[node.output] = input;
      continue;
    }
    if (Status s = exec(node); !s) return s.error();
    for (ir::ValueId v : node.inputs) {
      if (last_use[v] == i) values_[v] = Tensor{};
    }
  }
  std::vector<Tensor> outs;
  for (ir::ValueId v : g_.outputs) outs.push_back(values_[v]);
  return outs;
}

}  // namespace

Expected<std::vector<Tensor>> run(const ir::Graph& graph, const Weights& weights,
                                  const Tensor& input) {
  const ir::Node* in_node = nullptr;
  for (const ir::Node& n : graph.nodes) {
    if (n.op == ir::OpKind::Input) in_node = &n;
  }
  if (!in_node) return Error{"reference interpreter: the graph has no input"};
  const std::vector<int64_t>& want = graph.type(in_node->output).dims;
  auto shape_str = [](const std::vector<int64_t>& s) {
    std::string out;
    for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
    return out;
  };
  if (input.shape.size() != want.size() + 1 || input.shape[0] < 1 ||
      !std::equal(want.begin(), want.end(), input.shape.begin() + 1)) {
    return Error{fmt::format("input has shape {}, but model '{}' expects Nx{}",
                             shape_str(input.shape), graph.name, shape_str(want))};
  }
  int64_t numel = 1;
  for (int64_t d : input.shape) numel *= d;
  if (static_cast<int64_t>(input.data.size()) != numel) {
    return Error{"input data size does not match its shape"};
  }
  // Every intermediate must fit: the batch comes from the user's input file.
  for (const ir::Value& v : graph.values) {
    if (!v.type) return Error{"reference interpreter: the graph has untyped values"};
    auto bytes = checked_product({input.shape[0], v.type->sample_numel(), 4});
    if (!bytes || *bytes > kMaxTensorBytes) {
      return Error{fmt::format("batch {} is too large for the reference interpreter (a tensor "
                               "would exceed {} bytes)",
                               input.shape[0], kMaxTensorBytes)};
    }
  }
  Runner runner(graph, weights, input.shape[0]);
  return runner.run(input);
}

}  // namespace zoc::ref
