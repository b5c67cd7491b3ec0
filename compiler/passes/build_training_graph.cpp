// Pass build-training-graph: a model, as the frontend wrote it, becomes its training graph:
// ordinary IR that one interpreter runs and one emitter compiles. In order:
//
//   input, labels                     the batch: images and one class index per sample
//   the forward nodes                 BatchNorm and dropout in training mode (BatchNorm saves
//                                     its batch statistics as an extra result); a final softmax
//                                     or log_softmax is left out: the loss reads its input, the
//                                     logits (cross-entropy of log_softmax(x) is x's, PyTorch's
//                                     nll_loss after log_softmax); so is a final argmax (the
//                                     class index, which has no gradient), with a softmax or
//                                     log_softmax under it
//   softmax_cross_entropy             d.<logits> and the batch-mean loss
//   the backward nodes, in reverse    each op's gradient rule (ir/grad_rules.h); where a value
//                                     has several users, their contributions are summed by
//                                     `add` nodes as they arrive (in the order PyTorch's and the
//                                     former train_step's accumulation used)
//   sgd, one per trainable parameter  (TrainingGraphOptions::optimizer) in state_dict order;
//                                     none for a frozen one (requires_grad=False), which
//                                     PyTorch's optimizer never moves
//
// Gradients are computed only for values downstream of a trainable parameter that is not frozen
// and upstream of the logits: the model input's never, nor those of a frozen backbone that
// nothing trainable precedes. A backward node that does run has no result for its layer's frozen
// parameters: the call that computes the others skips theirs (PyTorch's autograd skips them
// too). Names: d.<value>
// for an activation's gradient, d.<value>.via.<layer> for one of several contributions (or an
// unused one), d.<value>.sum<k> for partial sums, grad.<parameter>, updated.<parameter>; a name a
// model layer already has gets a ".2".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/ir/grad_rules.h"
#include "compiler/ir/shapes.h"
#include "compiler/ir/verify.h"
#include "compiler/passes/pipeline.h"
#include "compiler/support/sanitize.h"

namespace zoc::passes {
namespace {

using ir::kNoValue;
using ir::ValueId;

class Builder final : public ir::GradContext {
 public:
  Builder(const ir::Graph& model, Diagnostics& diags) : m_(model), diags_(diags) {}
  std::optional<ir::Graph> build(const TrainingGraphOptions& options);

  ValueId x(size_t k) const override { return map_[fwd_->inputs[k]]; }
  ValueId y() const override { return map_[fwd_->output]; }
  ValueId dy() const override { return grad_[fwd_->output]; }
  ValueId saved() const override { return t_.producer(y()).extra_outputs.at(0); }
  const ir::TensorType& input_type(size_t k) const override { return m_.type(fwd_->inputs[k]); }
  bool needs(size_t k) const override { return needs_[fwd_->inputs[k]]; }
  ValueId backward(size_t k, ir::OpKind op, std::vector<ValueId> inputs, ir::Attrs attrs,
                   bool param_grads) override;
  ValueId also_backward(ValueId grad, size_t k) override;
  ValueId same_constant(size_t k) override;
  void pass_through(size_t k, ValueId grad) override { contribute(fwd_->inputs[k], grad); }
  ValueId temp(size_t k, const std::string& part, ir::OpKind op, std::vector<ValueId> inputs,
               ir::Attrs attrs) override;

 private:
  bool check_model();
  void find_tail();
  void find_needs();
  void copy_forward();
  void add_loss();
  void add_backward();
  void add_optimizer();
  // Adds `grad` to model value v's gradient.
  void contribute(ValueId v, ValueId grad);
  int32_t add(ir::OpKind op, const std::string& name, std::vector<ValueId> inputs, ir::Attrs attrs,
              const SourceLoc& loc) {
    return t_.add_node(op, unique(name), std::move(inputs), std::move(attrs), loc);
  }
  std::string unique(const std::string& name);
  // The name of the forward node's contribution to input k's gradient.
  std::string grad_name(size_t k) const;
  const std::string& name_of(ValueId model_value) const { return m_.value_name(model_value); }

  const ir::Graph& m_;
  Diagnostics& diags_;
  ir::Graph t_;
  std::set<std::string> names_;    // taken in the training graph
  const ir::Node* fwd_ = nullptr;  // the forward node whose gradient rule runs
  // A final argmax, softmax or log_softmax (an argmax's input too), left out.
  std::vector<const ir::Node*> left_out_;
  bool left_out(const ir::Node& n) const {
    return std::find(left_out_.begin(), left_out_.end(), &n) != left_out_.end();
  }
  ValueId logits_ = kNoValue;  // of the model
  ValueId labels_ = kNoValue, loss_ = kNoValue;
  // Per model value: its training-graph value, whether its gradient is wanted, how many
  // contributions it gets and has got, and their sum so far.
  std::vector<ValueId> map_;
  std::vector<bool> needs_;
  std::vector<int> expected_, arrived_;
  std::vector<ValueId> grad_;
  std::map<std::string, ValueId> param_grads_;
  std::vector<ValueId> updated_;
};

std::string Builder::unique(const std::string& name) {
  std::string candidate = name;
  for (int k = 2; !names_.insert(candidate).second; ++k) candidate = fmt::format("{}.{}", name, k);
  return candidate;
}

// What cannot be trained is reported all at once, each at its layer.
bool Builder::check_model() {
  const SourceLoc model_loc{m_.name, 0, 0};
  bool ok = true;
  for (const ir::Value& v : m_.values) {
    if (!v.type) {
      diags_.error(model_loc, "training graph: the model has untyped values");
      return false;
    }
  }
  if (m_.outputs.size() == 1) find_tail();
  std::map<std::string, const ir::Node*> declared;  // trainable tensor -> its first reader
  bool any_frozen = false, any_trained = false;
  for (const ir::Node& n : m_.nodes) {
    if (left_out(n)) continue;
    for (const ir::ParamSpec& p : n.params) {
      any_frozen = any_frozen || p.frozen;
      any_trained = any_trained || (p.trainable && !p.frozen);
    }
    // A parameter two layers read (an operand of the weights file may be shared) would get two
    // gradients, of which the pass below keeps one: summing them is not built yet.
    for (const ir::ParamSpec& p : n.params) {
      auto [first, fresh] = declared.emplace(p.name, &n);
      if (p.trainable && !fresh) {
        diags_.error(n.loc,
                     fmt::format("layer '{}' ({}) reads parameter '{}', which layer '{}' reads "
                                 "too; zoc's trainer does not sum a shared parameter's gradients "
                                 "over its readers yet, so training refuses it (inference "
                                 "compiles it)",
                                 shown_text(n.name), ir::op_info(n.op).name, shown_text(p.name),
                                 shown_text(first->second->name)));
        ok = false;
      }
    }
    // A layer called twice (issue 36) has one gradient, the sum of both calls'; the backward
    // pass here keys parameter gradients by tensor and would keep one call's only.
    if (!n.weights_of.empty()) {
      diags_.error(
          n.loc, fmt::format("layer '{}' ({}) runs layer '{}' a second time, on the same "
                             "weights; zoc's trainer does not sum a shared layer's "
                             "gradients over its calls, so training refuses shared "
                             "layers (inference compiles them)",
                             shown_text(n.name), ir::op_info(n.op).name, shown_text(n.weights_of)));
      ok = false;
      continue;
    }
    ir::GradRule rule = ir::grad_rule(n.op);
    if (rule.fn) rule.refusal = ir::grad_form_refusal(m_, n);
    if (!rule.refusal.empty()) {
      diags_.error(n.loc, fmt::format("layer '{}' ({}): {}", shown_text(n.name),
                                      ir::op_info(n.op).name, rule.refusal));
      ok = false;
    }
  }
  // PyTorch's optimizers refuse an empty parameter list; a trainer would change nothing.
  if (any_frozen && !any_trained) {
    diags_.error(model_loc, fmt::format("training graph: every parameter of model '{}' is frozen "
                                        "(requires_grad=False or --freeze), so training would "
                                        "change nothing (PyTorch's optimizer refuses an empty "
                                        "parameter list); unfreeze the layers to train",
                                        shown_text(m_.name)));
    ok = false;
  }
  if (m_.outputs.size() != 1) {
    diags_.error(model_loc, fmt::format("training graph: model '{}' has {} outputs; training "
                                        "takes one",
                                        shown_text(m_.name), m_.outputs.size()));
    return false;
  }
  if (!ok) return false;
  const ir::Node& last = m_.producer(m_.outputs[0]);
  if (m_.type(logits_).dims.size() != 1) {
    const bool image = m_.type(logits_).dims.size() == 3;
    diags_.error(last.loc, fmt::format("layer '{}' ({}): training needs [classes] logits as the "
                                       "model's output (or a final softmax's, log_softmax's or "
                                       "argmax's input), not {}{}",
                                       shown_text(last.name), ir::op_info(last.op).name,
                                       m_.type(logits_).str(),
                                       image ? ": a loss over each pixel's class (segmentation) "
                                               "is not built yet"
                                             : ""));
    return false;
  }
  return true;
}

// The model's one output's tail that training leaves out, and the logits the loss reads.
void Builder::find_tail() {
  const ir::Node* last = &m_.producer(m_.outputs[0]);
  if (last->op == ir::OpKind::Argmax) {
    left_out_.push_back(last);
    last = &m_.producer(last->inputs[0]);
  }
  if (last->op == ir::OpKind::Softmax || last->op == ir::OpKind::LogSoftmax) {
    left_out_.push_back(last);
  }
  logits_ = left_out_.empty() ? m_.outputs[0] : left_out_.back()->inputs[0];
}

// needs: downstream of a trainable parameter and upstream of the logits.
void Builder::find_needs() {
  const size_t nv = m_.values.size();
  std::vector<bool> down(nv, false), up(nv, false);
  for (const ir::Node& n : m_.nodes) {
    bool any = false;
    for (const ir::ParamSpec& p : n.params) any = any || (p.trainable && !p.frozen);
    for (ValueId v : n.inputs) any = any || down[v];
    down[n.output] = any;
  }
  up[logits_] = true;
  for (size_t i = m_.nodes.size(); i-- > 0;) {
    const ir::Node& n = m_.nodes[i];
    if (left_out(n) || !up[n.output]) continue;
    for (ValueId v : n.inputs) up[v] = true;
  }
  needs_.assign(nv, false);
  for (size_t v = 0; v < nv; ++v) needs_[v] = down[v] && up[v];
  expected_.assign(nv, 0);
  arrived_.assign(nv, 0);
  grad_.assign(nv, kNoValue);
  for (const ir::Node& n : m_.nodes) {
    if (left_out(n) || !needs_[n.output]) continue;
    for (ValueId v : n.inputs) expected_[v] += needs_[v] ? 1 : 0;
  }
  if (needs_[logits_]) ++expected_[logits_];  // from the loss
}

void Builder::copy_forward() {
  t_.name = m_.name;
  map_.assign(m_.values.size(), kNoValue);
  for (const ir::Node& n : m_.nodes) names_.insert(n.name);
  for (const ir::Node& n : m_.nodes) {
    if (left_out(n)) continue;
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) inputs.push_back(map_[v]);
    ir::Attrs attrs = n.attrs;
    const bool bn = n.op == ir::OpKind::BatchNorm2d;
    if (bn || n.op == ir::OpKind::Dropout) {
      attrs.set("training", ir::AttrValue{ir::AttrKind::Bool, 1, {}, 0});
    }
    const int32_t i = t_.add_node(n.op, n.name, std::move(inputs), std::move(attrs), n.loc);
    t_.nodes[i].fused_from = n.fused_from;
    t_.nodes[i].operand_tensor = n.operand_tensor;  // a constant operand from the weights file
    t_.nodes[i].scalar_from = n.scalar_from;
    t_.nodes[i].operand_role = n.operand_role;
    t_.nodes[i].frozen = n.frozen;
    map_[n.output] = t_.nodes[i].output;
    if (bn) t_.add_extra_output(i, unique(n.name + ".saved"));
    if (n.op == ir::OpKind::Input) {
      labels_ = t_.nodes[add(ir::OpKind::Labels, "labels", {}, {}, n.loc)].output;
    }
  }
}

void Builder::add_loss() {
  const int32_t i = add(ir::OpKind::SoftmaxCrossEntropy, "d." + name_of(logits_),
                        {map_[logits_], labels_}, {}, m_.producer(logits_).loc);
  loss_ = t_.add_extra_output(i, unique("loss"));
  contribute(logits_, t_.nodes[i].output);
}

std::string Builder::grad_name(size_t k) const {
  const ValueId v = fwd_->inputs[k];
  return needs_[v] && expected_[v] == 1 ? "d." + name_of(v)
                                        : fmt::format("d.{}.via.{}", name_of(v), fwd_->name);
}

ValueId Builder::backward(size_t k, ir::OpKind op, std::vector<ValueId> inputs, ir::Attrs attrs,
                          bool param_grads) {
  const ValueId v = fwd_->inputs[k];
  const int32_t i = add(op, grad_name(k), std::move(inputs), std::move(attrs), fwd_->loc);
  t_.nodes[i].origin = fwd_->name;
  for (const ir::ParamSpec& p : param_grads ? fwd_->params : std::vector<ir::ParamSpec>{}) {
    if (!p.trainable || p.frozen) continue;
    param_grads_[p.name] = t_.add_extra_output(i, unique("grad." + p.name));
  }
  const ValueId out = t_.nodes[i].output;
  contribute(v, out);
  return out;
}

// The forward op with its constant (a scalar, or a tensor of the weights file), applied to dy.
ValueId Builder::same_constant(size_t k) {
  const ValueId out = backward(k, fwd_->op, {dy()}, fwd_->attrs, false);
  ir::Node& n = t_.nodes[static_cast<size_t>(t_.values[out].producer)];
  n.operand_tensor = fwd_->operand_tensor;
  n.scalar_from = fwd_->scalar_from;
  n.operand_role = fwd_->operand_role;
  return out;
}

ValueId Builder::temp(size_t k, const std::string& part, ir::OpKind op, std::vector<ValueId> inputs,
                      ir::Attrs attrs) {
  const int32_t i =
      add(op, grad_name(k) + "." + part, std::move(inputs), std::move(attrs), fwd_->loc);
  t_.nodes[i].origin = fwd_->name;
  return t_.nodes[i].output;
}

ValueId Builder::also_backward(ValueId grad, size_t k) {
  const ValueId out = t_.add_extra_output(t_.values[grad].producer, unique(grad_name(k)));
  contribute(fwd_->inputs[k], out);
  return out;
}

void Builder::contribute(ValueId v, ValueId grad) {
  if (!needs_[v]) return;
  const int k = ++arrived_[v];
  if (k == 1) {
    grad_[v] = grad;
    return;
  }
  const std::string name =
      k == expected_[v] ? "d." + name_of(v) : fmt::format("d.{}.sum{}", name_of(v), k);
  grad_[v] = t_.nodes[add(ir::OpKind::Add, name, {grad_[v], grad}, {}, m_.producer(v).loc)].output;
}

// Reverse order: every user of a node's output has contributed to its gradient before it runs.
void Builder::add_backward() {
  for (size_t i = m_.nodes.size(); i-- > 0;) {
    const ir::Node& n = m_.nodes[i];
    if (left_out(n) || !needs_[n.output]) continue;
    fwd_ = &n;
    ir::grad_rule(n.op).fn(*this, n);
  }
  fwd_ = nullptr;
}

// PyTorch's state_dict order: layers in model order, each layer's parameters in its order.
void Builder::add_optimizer() {
  for (const ir::Node& n : m_.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      auto grad = param_grads_.find(p.name);
      if (grad == param_grads_.end()) continue;
      const int32_t i = add(ir::OpKind::Sgd, "updated." + p.name, {grad->second}, {}, n.loc);
      t_.nodes[i].origin = p.name;
      updated_.push_back(t_.nodes[i].output);
    }
  }
}

std::optional<ir::Graph> Builder::build(const TrainingGraphOptions& options) {
  if (!check_model()) return std::nullopt;
  find_needs();
  copy_forward();
  add_loss();
  add_backward();
  if (options.optimizer) add_optimizer();
  t_.outputs = {loss_, map_[logits_]};
  for (const ir::Node& n : m_.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      if (auto grad = param_grads_.find(p.name); grad != param_grads_.end()) {
        t_.outputs.push_back(grad->second);
      }
    }
  }
  t_.outputs.insert(t_.outputs.end(), updated_.begin(), updated_.end());
  if (!ir::infer_shapes(t_, diags_) || !ir::verify(t_, diags_)) {
    diags_.note(SourceLoc{m_.name, 0, 0}, "in the training graph of this model");
    return std::nullopt;
  }
  return std::move(t_);
}

}  // namespace

std::optional<ir::Graph> build_training_graph(const ir::Graph& model,
                                              const TrainingGraphOptions& options,
                                              Diagnostics& diags) {
  return Builder(model, diags).build(options);
}

bool build_training_graph_pass(ir::Graph& g, Diagnostics& diags) {
  auto training = build_training_graph(g, TrainingGraphOptions{}, diags);
  if (training) g = std::move(*training);
  return training.has_value();
}

}  // namespace zoc::passes
