// Shape rules of the training graph's ops (see shapes.h and passes/build_training_graph.cpp).
// Besides typing each result, they check that a backward op agrees with the forward layer it
// stands for (its x and dy are that layer's input and output types), so that a training graph
// that verifies cannot hand a kernel a gradient of the wrong shape.
#include <fmt/format.h>

#include "compiler/ir/shape_rule.h"
#include "compiler/support/checked_math.h"
#include "compiler/support/sanitize.h"

namespace zoc::ir::detail {

void EarlierNodes::extend(size_t upto) {
  for (; indexed_ < upto; ++indexed_) {
    const Node& n = g_.nodes[indexed_];
    nodes_.emplace(n.name, &n);
    if (!n.origin.empty()) continue;
    for (const ParamSpec& p : n.params) {
      if (p.trainable) params_[p.name] = &p;
    }
  }
}

const Node* EarlierNodes::node(const std::string& name, size_t upto) {
  extend(upto);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second;
}

const ParamSpec* EarlierNodes::trainable_param(const std::string& name, size_t upto) {
  extend(upto);
  auto it = params_.find(name);
  return it == params_.end() ? nullptr : it->second;
}

const Node* Rule::earlier_node(const std::string& name) const {
  return earlier_.node(name, node_index());
}

bool Rule::labels() { return set_output({}, Layout::NC, DType::I32); }

bool Rule::softmax_cross_entropy() {
  if (!expect_rank(0, 1, "logits [N, classes] as its first")) return false;
  if (in(1) != TensorType{DType::I32, Layout::NC, {}}) {
    return fail(fmt::format("expects labels (N i32) as its second input, got {}", in(1).str()));
  }
  return expect_extras(1) && set_extra(0, {1}) && set_result(n_.output, in(0));
}

// conv2d_grad, batchnorm2d_grad, linear_grad: (x, dy[, saved]) of the layer named by `origin`,
// whose parameters they read; one extra result per trainable parameter, its gradient (none for a
// frozen one, which the forward layer's marks say).
bool Rule::layer_grad(OpKind forward_op) {
  const Node* f = earlier_node(n_.origin);
  if (!f || f->op != forward_op) {
    return fail(fmt::format("its layer '{}' is not an earlier {} of the graph",
                            shown_text(n_.origin), op_info(forward_op).name));
  }
  if (in(0) != g_.type(f->inputs[0]) || in(1) != g_.type(f->output)) {
    return fail(fmt::format("x {} and dy {} are not its layer's input {} and output {}",
                            in(0).str(), in(1).str(), g_.type(f->inputs[0]).str(),
                            g_.type(f->output).str()));
  }
  if (forward_op == OpKind::BatchNorm2d &&
      (f->extra_outputs.size() != 1 || in(2) != g_.type(f->extra_outputs[0]))) {
    return fail(
        fmt::format("its statistics {} are not those its training-mode layer saves", in(2).str()));
  }
  n_.params = f->params;
  size_t trained = 0;
  for (const ParamSpec& p : n_.params) trained += p.trainable && !p.frozen;
  if (!expect_extras(trained)) return false;
  size_t k = 0;
  for (const ParamSpec& p : n_.params) {
    if (p.trainable && !p.frozen && !set_extra(k++, p.shape)) return false;
  }
  return set_result(n_.output, in(0));
}

// A one-input add, sub, mul or div's by a parameter of the weights file (its operand, per
// channel, per feature or one value), with its layer's attributes.
bool Rule::operand_grad() {
  const Node* f = earlier_node(n_.origin);
  if (f && (!is_binary_op(f->op) || f->inputs.size() != 1 || f->operand_tensor.empty())) {
    return fail(fmt::format("its layer '{}' is not an add, sub, mul or div by a tensor operand",
                            shown_text(n_.origin)));
  }
  if (f && n_.attrs != f->attrs) {
    return fail(fmt::format("its attributes are not its layer '{}''s", shown_text(n_.origin)));
  }
  return layer_grad(f ? f->op : OpKind::Mul);
}

// (y or x, dy) -> dx of a pointwise op, or of softmax: all three of one shape.
bool Rule::activation_grad() {
  if (in(0) != in(1)) {
    return fail(fmt::format("its operands differ: {} vs {}", in(0).str(), in(1).str()));
  }
  return set_result(n_.output, in(1));
}

// (x[, y], dy) -> dx: dy (and y) must be what pooling x with these attributes gives.
bool Rule::pool_grad(bool is_max) {
  const std::vector<int64_t> out = pool_dims(is_max);
  if (out.empty()) return false;
  for (size_t i = 1; i < n_.inputs.size(); ++i) {
    if (in(i).dims != out) {
      return fail(fmt::format("operand {} is {}, but pooling x gives {}", i, dims_str(in(i).dims),
                              dims_str(out)));
    }
  }
  return set_result(n_.output, in(0));
}

bool Rule::global_avgpool_grad() {
  if (!expect_rank(0, 3, "an image [N, C, H, W] as x")) return false;
  if (in(1).dims != std::vector<int64_t>{in(0).dims[0], 1, 1}) {
    return fail(fmt::format("dy {} is not x's channel means", dims_str(in(1).dims)));
  }
  return set_result(n_.output, in(0));
}

bool Rule::flatten_grad() {
  auto numel = checked_product_of(in(0).dims);
  if (!numel || checked_product_of(in(1).dims) != numel) {
    return fail(fmt::format("dy {} does not have the elements of x {}", dims_str(in(1).dims),
                            dims_str(in(0).dims)));
  }
  return set_result(n_.output, in(0));
}

// (a, b, dy) -> da; extra: db, a batched value of b's type (per sample, like b).
bool Rule::mul_grad() {
  if (in(2) != in(0)) {
    return fail(fmt::format("dy {} is not of a's type {}", in(2).str(), in(0).str()));
  }
  const std::vector<int64_t>&a = in(0).dims, &b = in(1).dims;
  if (a != b && !(a.size() == 3 && b == std::vector<int64_t>{a[0], 1, 1})) {
    return fail(fmt::format("b {} is neither of a's shape {} nor its channel vector", dims_str(b),
                            dims_str(a)));
  }
  return expect_extras(1) && set_result(n_.extra_outputs[0], in(1)) && set_result(n_.output, in(0));
}

// dy [count, H, W] placed at channels [start, start + count) of [channels, H, W].
bool Rule::pad_channels() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const std::vector<int64_t>& d = in(0).dims;
  const int64_t start = n_.attrs.i("start"), channels = n_.attrs.i("channels");
  if (start + d[0] > channels) {
    return fail(fmt::format("channels {}..{} are outside the result's {}", start, start + d[0] - 1,
                            channels));
  }
  return set_output({channels, d[1], d[2]}, Layout::NCHW);
}

// dy [C, H + top + bottom, W + left + right] -> [C, H, W].
bool Rule::pad_grad() {
  if (!expect_rank(0, 3, "an image [N, C, H, W]")) return false;
  const std::vector<int64_t>& d = in(0).dims;
  const Attrs& a = n_.attrs;
  const int64_t h = d[1] - a.i("top") - a.i("bottom"), w = d[2] - a.i("left") - a.i("right");
  if (h < 1 || w < 1) return fail(fmt::format("dy {} is smaller than the padding", dims_str(d)));
  return set_output({d[0], h, w}, Layout::NCHW);
}

bool Rule::adaptive_avgpool2d_grad() {
  if (!expect_rank(0, 3, "an image [N, C, H, W] as x")) return false;
  const Pair out = n_.attrs.pair("output_size");
  if (in(1).dims != std::vector<int64_t>{in(0).dims[0], out.h, out.w}) {
    return fail(fmt::format("dy {} is not x {} pooled to {}x{}", dims_str(in(1).dims),
                            dims_str(in(0).dims), out.h, out.w));
  }
  return set_result(n_.output, in(0));
}

// sgd(grad): the parameter named by `origin`, declared by an earlier (model) layer, updated.
bool Rule::sgd() {
  const ParamSpec* param = earlier_.trainable_param(n_.origin, node_index());
  if (!param) {
    return fail(fmt::format("no layer has a trainable parameter '{}'", shown_text(n_.origin)));
  }
  const TensorType want = whole_tensor(param->shape);
  if (in(0) != want) {
    return fail(fmt::format("its gradient {} does not match the parameter's shape {}", in(0).str(),
                            shape_str(param->shape)));
  }
  n_.params = {*param};
  return set_result(n_.output, want);
}

}  // namespace zoc::ir::detail
