// Gradient rules: how each op of the table is differentiated, beside its shape rule
// (shapes.cpp) and keyed by the same table. A rule sees one forward node of the model and adds
// its backward nodes to the training graph being built (passes/build_training_graph.cpp, which
// owns the order, the names and the summing of several contributions to one gradient); it says
// only which backward op computes what from which values. Unary activations share one rule,
// driven by ops.def's ZOC_ACTIVATION rows and zoc/math/activations.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace zoc::ir {

// What a gradient rule sees of the training graph being built, and the two ways it adds to it.
class GradContext {
 public:
  virtual ~GradContext() = default;
  // The training graph's values of the forward node's input k and output, the loss's gradient
  // with respect to that output, and (a training-mode BatchNorm) its saved statistics.
  virtual ValueId x(size_t k) const = 0;
  virtual ValueId y() const = 0;
  virtual ValueId dy() const = 0;
  virtual ValueId saved() const = 0;
  // The model's type of input k.
  virtual const TensorType& input_type(size_t k) const = 0;
  // Whether input k's gradient is wanted: a trainable parameter lies upstream of it.
  virtual bool needs(size_t k) const = 0;
  // Appends a backward node of the forward node whose output is a contribution to input k's
  // gradient (unused where that is not wanted), and returns it. With `param_grads` the node
  // reads the layer's parameters and defines one extra result per trainable one, its gradient
  // (none for a frozen one, ParamSpec::frozen: the backward call skips its gradient).
  virtual ValueId backward(size_t k, OpKind op, std::vector<ValueId> inputs, Attrs attrs,
                           bool param_grads) = 0;
  // Gives the backward node that defined `grad` one more result, a contribution to input k's
  // gradient, and returns it (mul_grad: da is its output, db an extra).
  virtual ValueId also_backward(ValueId grad, size_t k) = 0;
  // Appends the forward node's own op and constant (its scalar, or its tensor of the weights
  // file) applied to dy, as a contribution to input k's gradient: x * c's dy * c, x / c's dy / c.
  virtual ValueId same_constant(size_t k) = 0;
  // Adds an existing value to input k's gradient (an add passes dy to both operands).
  virtual void pass_through(size_t k, ValueId grad) = 0;
  // Appends a backward node of the forward node whose output is a step on the way to a
  // gradient, not a contribution (div's db = -(dy / b) * y: the product before the sign),
  // named after the contribution to input k with `part` appended.
  virtual ValueId temp(size_t k, const std::string& part, OpKind op, std::vector<ValueId> inputs,
                       Attrs attrs) = 0;
};

using GradFn = void (*)(GradContext& ctx, const Node& forward);

struct GradRule {
  GradFn fn = nullptr;       // null: the op cannot be differentiated; `refusal` says why
  std::string refusal = "";  // reported as "layer 'x' (op): <refusal>"
};

// The op table's switch: each op's rule.
GradRule grad_rule(OpKind op);

// Why node `n` of `g` (shapes inferred) cannot be differentiated although its op has a rule: a
// form the rule does not cover (a softmax over the channels of an image); "" when it can.
std::string grad_form_refusal(const Graph& g, const Node& n);

// The parameter gradients a node defines, (parameter name, value) per trainable parameter in
// the layer's order (a frozen one has none): the extra results of the backward ops that read a
// layer's parameters.
std::vector<std::pair<std::string, ValueId>> param_gradients(const Node& node);

}  // namespace zoc::ir
