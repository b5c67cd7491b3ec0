// A training step on the CPU (see train_step.h): the forward pass in training mode keeping
// every value, the loss, then one backward sweep over the nodes in reverse, accumulating the
// gradient of each value from all of its users (a residual block's input has two).
#include "compiler/backend/reference/train_step.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/backend/reference/grad_kernels.h"
#include "compiler/backend/reference/kernels.h"
#include "compiler/backend/reference/node_shapes.h"

namespace zoc::ref {
namespace {

constexpr int64_t kMaxStepBytes = int64_t{16} << 30;

class Step {
 public:
  Step(const ir::Graph& g, const Weights& w, int64_t n) : g_(g), w_(w), n_(n) {}

  Expected<StepResult> run(const Tensor& input, const std::vector<int32_t>& labels);

 private:
  struct BnStats {
    std::vector<double> mean, var, invstd;
  };

  // The parameter `node.name + "." + suffix`, checked against its declared size.
  Expected<const float*> param(const ir::Node& node, const char* suffix) const;
  // A conv's or linear's bias: null when the layer has none.
  Expected<const float*> bias_of(const ir::Node& node) const {
    if (!node.attrs.b("bias")) return static_cast<const float*>(nullptr);
    return param(node, "bias");
  }
  Status forward(const ir::Node& node, size_t i);
  Status backward(const ir::Node& node, size_t i);
  // The gradient buffer of value v, zero-filled on first use; gradients from several users add.
  std::vector<float>& grad_of(ir::ValueId v) {
    std::vector<float>& gv = grads_[static_cast<size_t>(v)];
    if (gv.empty()) gv.assign(values_[static_cast<size_t>(v)].data.size(), 0.0f);
    return gv;
  }
  void add_grad(ir::ValueId v, const std::vector<float>& g) {
    std::vector<float>& gv = grad_of(v);
    for (size_t k = 0; k < g.size(); ++k) gv[k] += g[k];
  }
  const std::vector<int64_t>& dims(ir::ValueId v) const { return g_.type(v).dims; }
  Conv2dShape conv_shape(const ir::Node& node) const { return conv_shape_of(g_, node, n_); }
  Pool2dShape pool_shape(const ir::Node& node) const { return pool_shape_of(g_, node, n_); }

  const ir::Graph& g_;
  const Weights& w_;
  int64_t n_;
  std::vector<Tensor> values_;
  std::vector<std::vector<float>> grads_;
  std::vector<BnStats> bn_;  // per node
  ir::ValueId logits_ = ir::kNoValue;
  StepResult result_;
};

Expected<const float*> Step::param(const ir::Node& node, const char* suffix) const {
  const std::string name = node.name + "." + suffix;
  const std::vector<float>* v = w_.find(name);
  if (!v) {
    return Error{fmt::format("training step: layer '{}': no weights for '{}'", node.name, name)};
  }
  for (const ir::ParamSpec& p : node.params) {
    int64_t numel = 1;
    for (int64_t d : p.shape) numel *= d;
    if (p.name == name && static_cast<int64_t>(v->size()) != numel) {
      return Error{fmt::format("training step: layer '{}': '{}' has {} values, expected {}",
                               node.name, name, v->size(), numel)};
    }
  }
  return v->data();
}

Status Step::forward(const ir::Node& node, size_t i) {
  Tensor& out = values_[static_cast<size_t>(node.output)];
  out.shape = {n_};
  const std::vector<int64_t>& od = dims(node.output);
  out.shape.insert(out.shape.end(), od.begin(), od.end());
  out.data.assign(static_cast<size_t>(n_ * g_.type(node.output).sample_numel()), 0.0f);
  auto in = [&](size_t k) -> const float* {
    return values_[static_cast<size_t>(node.inputs[k])].data.data();
  };
  const auto count = static_cast<int64_t>(out.data.size());
  const ir::Attrs& a = node.attrs;
  switch (node.op) {
    case ir::OpKind::Input: break;
    case ir::OpKind::Conv2d: {
      auto w = param(node, "weight");
      if (!w) return w.error();
      auto b = bias_of(node);
      if (!b) return b.error();
      conv2d(in(0), *w, *b, out.data.data(), conv_shape(node));
      break;
    }
    case ir::OpKind::BatchNorm2d: {
      auto gamma = param(node, "weight"), beta = param(node, "bias");
      auto rm = param(node, "running_mean"), rv = param(node, "running_var");
      for (auto* e : {&gamma, &beta, &rm, &rv}) {
        if (!*e) return e->error();
      }
      const std::vector<int64_t>& d = dims(node.inputs[0]);
      const int64_t c = d[0], hw = d[1] * d[2];
      BnStats& st = bn_[i];
      st.mean.assign(static_cast<size_t>(c), 0.0);
      st.var.assign(static_cast<size_t>(c), 0.0);
      st.invstd.assign(static_cast<size_t>(c), 0.0);
      batchnorm2d_train(in(0), out.data.data(), n_, c, hw, *gamma, *beta, a.f("eps"),
                        st.mean.data(), st.var.data(), st.invstd.data());
      // PyTorch's running averages: (1 - momentum) * old + momentum * batch, with the unbiased
      // variance (n * hw / (n * hw - 1)); a single value per channel leaves it undefined.
      const double mom = a.f("momentum"), m = double(n_ * hw);
      std::vector<float> mean(static_cast<size_t>(c)), var(static_cast<size_t>(c));
      for (int64_t k = 0; k < c; ++k) {
        const double unbiased = m > 1 ? st.var[k] * m / (m - 1) : st.var[k];
        mean[k] = float((1 - mom) * (*rm)[k] + mom * st.mean[k]);
        var[k] = float((1 - mom) * (*rv)[k] + mom * unbiased);
      }
      result_.buffers[node.name + ".running_mean"] = std::move(mean);
      result_.buffers[node.name + ".running_var"] = std::move(var);
      break;
    }
    case ir::OpKind::Relu: relu(in(0), out.data.data(), count); break;
    case ir::OpKind::Tanh: tanh(in(0), out.data.data(), count); break;
    case ir::OpKind::Sigmoid: sigmoid(in(0), out.data.data(), count); break;
    case ir::OpKind::Dropout:  // the identity (train_step.h says why)
    case ir::OpKind::Flatten:
      out.data = values_[static_cast<size_t>(node.inputs[0])].data;
      break;
    case ir::OpKind::Add: add(in(0), in(1), out.data.data(), count); break;
    case ir::OpKind::MaxPool2d: maxpool2d(in(0), out.data.data(), pool_shape(node)); break;
    case ir::OpKind::AvgPool2d: avgpool2d(in(0), out.data.data(), pool_shape(node)); break;
    case ir::OpKind::GlobalAvgPool: {
      const std::vector<int64_t>& d = dims(node.inputs[0]);
      global_avgpool(in(0), out.data.data(), n_, d[0], d[1] * d[2]);
      break;
    }
    case ir::OpKind::Linear: {
      auto w = param(node, "weight");
      if (!w) return w.error();
      auto b = bias_of(node);
      if (!b) return b.error();
      linear(in(0), *w, *b, out.data.data(), n_, dims(node.inputs[0])[0], od[0]);
      break;
    }
    case ir::OpKind::Softmax: softmax(in(0), out.data.data(), n_, od[0]); break;
    case ir::OpKind::Concat: {
      std::vector<const float*> ptrs;
      std::vector<int64_t> channels;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        ptrs.push_back(in(k));
        channels.push_back(dims(node.inputs[k])[0]);
      }
      concat_channels(ptrs, channels, out.data.data(), n_, od[1] * od[2]);
      break;
    }
    case ir::OpKind::FusedConv2d:
      return Error{fmt::format(
          "training step: layer '{}' is a fused convolution: training takes the graph as "
          "written, before the inference passes",
          node.name)};
  }
  return Status::success();
}

Status Step::backward(const ir::Node& node, size_t i) {
  const std::vector<float>& dy = grads_[static_cast<size_t>(node.output)];
  if (dy.empty() || node.inputs.empty()) return Status::success();  // off the loss's path, or the input
  auto x = [&](size_t k) -> const Tensor& { return values_[static_cast<size_t>(node.inputs[k])]; };
  const Tensor& y = values_[static_cast<size_t>(node.output)];
  const auto count = static_cast<int64_t>(dy.size());
  std::vector<float> dx(x(0).data.size());
  const ir::Attrs& a = node.attrs;
  switch (node.op) {
    case ir::OpKind::Input: return Status::success();  // (has no inputs: returned above)
    case ir::OpKind::Conv2d: {
      const Conv2dShape s = conv_shape(node);
      auto w = param(node, "weight");
      if (!w) return w.error();
      std::vector<float> dw(static_cast<size_t>(s.c_out * s.c_in / s.groups * s.kh * s.kw));
      std::vector<float> db(a.b("bias") ? static_cast<size_t>(s.c_out) : 0);
      conv2d_backward(x(0).data.data(), *w, dy.data(), dx.data(), dw.data(),
                      db.empty() ? nullptr : db.data(), s);
      result_.grads[node.name + ".weight"] = std::move(dw);
      if (!db.empty()) result_.grads[node.name + ".bias"] = std::move(db);
      break;
    }
    case ir::OpKind::BatchNorm2d: {
      auto gamma = param(node, "weight");
      if (!gamma) return gamma.error();
      const std::vector<int64_t>& d = dims(node.inputs[0]);
      const int64_t c = d[0], hw = d[1] * d[2];
      std::vector<float> dgamma(static_cast<size_t>(c)), dbeta(static_cast<size_t>(c));
      batchnorm2d_train_backward(x(0).data.data(), dy.data(), *gamma, bn_[i].mean.data(),
                                 bn_[i].invstd.data(), n_, c, hw, dx.data(), dgamma.data(),
                                 dbeta.data());
      result_.grads[node.name + ".weight"] = std::move(dgamma);
      result_.grads[node.name + ".bias"] = std::move(dbeta);
      break;
    }
    case ir::OpKind::Relu: relu_backward(y.data.data(), dy.data(), dx.data(), count); break;
    case ir::OpKind::Tanh: tanh_backward(y.data.data(), dy.data(), dx.data(), count); break;
    case ir::OpKind::Sigmoid: sigmoid_backward(y.data.data(), dy.data(), dx.data(), count); break;
    case ir::OpKind::Dropout:
    case ir::OpKind::Flatten: dx = dy; break;
    case ir::OpKind::Add:
      add_grad(node.inputs[1], dy);
      dx = dy;
      break;
    case ir::OpKind::MaxPool2d:
      maxpool2d_backward(x(0).data.data(), dy.data(), dx.data(), pool_shape(node));
      break;
    case ir::OpKind::AvgPool2d: avgpool2d_backward(dy.data(), dx.data(), pool_shape(node)); break;
    case ir::OpKind::GlobalAvgPool: {
      const std::vector<int64_t>& d = dims(node.inputs[0]);
      global_avgpool_backward(dy.data(), dx.data(), n_, d[0], d[1] * d[2]);
      break;
    }
    case ir::OpKind::Linear: {
      auto w = param(node, "weight");
      if (!w) return w.error();
      const int64_t in = dims(node.inputs[0])[0], out = dims(node.output)[0];
      std::vector<float> dw(static_cast<size_t>(in * out));
      std::vector<float> db(a.b("bias") ? static_cast<size_t>(out) : 0);
      linear_backward(x(0).data.data(), *w, dy.data(), dx.data(), dw.data(),
                      db.empty() ? nullptr : db.data(), n_, in, out);
      result_.grads[node.name + ".weight"] = std::move(dw);
      if (!db.empty()) result_.grads[node.name + ".bias"] = std::move(db);
      break;
    }
    case ir::OpKind::Softmax:
      softmax_backward(y.data.data(), dy.data(), dx.data(), n_, dims(node.output)[0]);
      break;
    case ir::OpKind::Concat: {  // each input gets its channel slice of dy
      const std::vector<int64_t>& od = dims(node.output);
      const int64_t hw = od[1] * od[2];
      int64_t c0 = 0;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const int64_t ck = dims(node.inputs[k])[0];
        std::vector<float> part(static_cast<size_t>(n_ * ck * hw));
        for (int64_t b = 0; b < n_; ++b) {
          std::copy_n(dy.begin() + (b * od[0] + c0) * hw, ck * hw, part.begin() + b * ck * hw);
        }
        add_grad(node.inputs[k], part);
        c0 += ck;
      }
      return Status::success();
    }
    case ir::OpKind::FusedConv2d: return Status::success();  // rejected by forward()
  }
  add_grad(node.inputs[0], dx);
  return Status::success();
}

Expected<StepResult> Step::run(const Tensor& input, const std::vector<int32_t>& labels) {
  values_.assign(g_.values.size(), Tensor{});
  grads_.assign(g_.values.size(), {});
  bn_.assign(g_.nodes.size(), BnStats{});
  // The loss reads the logits: the graph's output, or a final Softmax layer's input.
  const ir::ValueId out = g_.outputs.at(0);
  const ir::Node& last = g_.producer(out);
  logits_ = last.op == ir::OpKind::Softmax ? last.inputs[0] : out;
  const std::vector<int64_t>& ld = dims(logits_);
  if (ld.size() != 1) {
    return Error{fmt::format("training step: model '{}' must end in [classes] logits, not a "
                             "tensor of {} dimensions",
                             g_.name, ld.size())};
  }
  const int64_t classes = ld[0];
  if (static_cast<int64_t>(labels.size()) != n_) {
    return Error{fmt::format("training step: {} labels for a batch of {}", labels.size(), n_)};
  }
  for (size_t k = 0; k < labels.size(); ++k) {
    if (labels[k] < 0 || labels[k] >= classes) {
      return Error{fmt::format("training step: label {} of sample {} is outside 0..{}", labels[k],
                               k, classes - 1)};
    }
  }
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& node = g_.nodes[i];
    if (node.op == ir::OpKind::Input) {
      values_[static_cast<size_t>(node.output)] = input;
      continue;
    }
    if (Status s = forward(node, i); !s) return s.error();
  }
  Tensor& logits = values_[static_cast<size_t>(logits_)];
  std::vector<float>& dlogits = grad_of(logits_);
  result_.loss =
      softmax_cross_entropy(logits.data.data(), labels.data(), n_, classes, dlogits.data());
  result_.logits = logits;
  for (size_t i = g_.nodes.size(); i-- > 0;) {
    const ir::Node& node = g_.nodes[i];
    if (node.output == out && node.op == ir::OpKind::Softmax && out != logits_) continue;
    if (Status s = backward(node, i); !s) return s.error();
  }
  return std::move(result_);
}

}  // namespace

Expected<StepResult> train_step(const ir::Graph& graph, const Weights& weights,
                                const Tensor& input, const std::vector<int32_t>& labels) {
  if (graph.outputs.size() != 1) {
    return Error{fmt::format("training step: model '{}' has {} outputs; training takes one",
                             graph.name, graph.outputs.size())};
  }
  const ir::Node* in_node = nullptr;
  for (const ir::Node& n : graph.nodes) {
    if (n.op == ir::OpKind::Input) in_node = &n;
  }
  if (!in_node) return Error{"training step: the graph has no input"};
  const std::vector<int64_t>& want = graph.type(in_node->output).dims;
  if (input.shape.size() != want.size() + 1 || input.shape[0] < 1 ||
      !std::equal(want.begin(), want.end(), input.shape.begin() + 1)) {
    return Error{fmt::format("training step: the input's shape does not match model '{}'",
                             graph.name)};
  }
  int64_t numel = 1;
  for (int64_t d : input.shape) numel *= d;
  if (static_cast<int64_t>(input.data.size()) != numel) {
    return Error{"training step: input data size does not match its shape"};
  }
  // Every value and its gradient stay alive: bound them (the batch comes from a user's file).
  int64_t per_sample = 0;
  for (const ir::Value& v : graph.values) {
    if (!v.type) return Error{"training step: the graph has untyped values"};
    per_sample += v.type->sample_numel();
  }
  if (per_sample > kMaxStepBytes / 8 / input.shape[0]) {
    return Error{fmt::format("training step: batch {} is too large for the reference "
                             "interpreter (activations and gradients above {} bytes)",
                             input.shape[0], kMaxStepBytes)};
  }
  Step step(graph, weights, input.shape[0]);
  return step.run(input, labels);
}

}  // namespace zoc::ref
