// The machinery the shape rules share (internal to compiler/ir): a Rule binds one node, reads
// its input types, declares its parameters and sets its results' types, each check reporting a
// located error that names the layer. The rules themselves are member functions, one per op
// (or family of ops): the model's ops in shapes.cpp, the training graph's in shapes_train.cpp.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc::ir::detail {

std::string dims_str(const std::vector<int64_t>& dims);    // "Nx3x224x224"
std::string shape_str(const std::vector<int64_t>& shape);  // "[64, 3, 7, 7]"

// What the training ops' rules look up among the nodes before theirs: a layer by name (the
// first so named) and a trainable parameter of a forward layer by name (the last). Indexed when
// a rule first asks and extended as inference moves on, so a training graph of n nodes is typed
// in O(n), not by a scan of the earlier nodes per node (issue 31). The nodes it indexes keep
// their names and parameters while it lives (infer_shapes changes only the node it types).
class EarlierNodes {
 public:
  explicit EarlierNodes(const Graph& g) : g_(g) {}
  // Among nodes [0, upto):
  const Node* node(const std::string& name, size_t upto);
  const ParamSpec* trainable_param(const std::string& name, size_t upto);

 private:
  void extend(size_t upto);
  const Graph& g_;
  size_t indexed_ = 0;
  std::unordered_map<std::string_view, const Node*> nodes_;
  std::unordered_map<std::string_view, const ParamSpec*> params_;
};

class Rule {
 public:
  Rule(Graph& g, Node& n, Diagnostics& d, EarlierNodes& earlier)
      : g_(g), n_(n), d_(d), earlier_(earlier) {}

  bool fail(const std::string& msg);
  const TensorType& in(size_t i) const { return g_.type(n_.inputs[i]); }
  bool expect_rank(size_t i, size_t rank, const char* what);
  // Declares a tensor the layer needs from the weights file. Its size is bounded like an
  // activation's, so that loading or initializing it never sizes an absurd buffer.
  bool param(const std::string& suffix, std::vector<int64_t> shape, ParamRole role,
             bool trainable = true, DType dtype = DType::F32, bool optional = false,
             const std::string* owner = nullptr);
  // The same under a full state_dict name (a binary op's operand tensor); errors call it
  // `shown` if given.
  bool named_param(std::string name, std::vector<int64_t> shape, ParamRole role,
                   bool trainable = true, DType dtype = DType::F32, bool optional = false,
                   const std::string* shown = nullptr);
  // The layer's declared init (attribute `attr`), if any, for the parameter just declared.
  void declared_init(std::string_view attr) {
    if (auto scheme = n_.attrs.init(attr)) n_.params.back().init = *scheme;
  }
  void bn_params(int64_t c, const std::string* owner, std::string_view init_attr);
  // Sets a result's type after bounding its size (dims >= 1, each and the total within limits).
  bool set_result(ValueId v, TensorType type);
  bool set_output(std::vector<int64_t> dims, Layout layout, DType dtype = DType::F32) {
    return set_result(n_.output, TensorType{dtype, layout, std::move(dims)});
  }
  // The type of a whole (non-batched) f32 tensor: a parameter's gradient or update, saved
  // statistics, the loss.
  static TensorType whole_tensor(std::vector<int64_t> shape) {
    const Layout layout = shape.size() == 4 ? Layout::NCHW : Layout::NC;
    return TensorType{DType::F32, layout, std::move(shape), false};
  }
  // Extra result k: a whole tensor of the given shape.
  bool set_extra(size_t k, std::vector<int64_t> shape) {
    return set_result(n_.extra_outputs[k], whole_tensor(std::move(shape)));
  }
  // The node must have exactly `count` extra results (an op that defines none need not say so).
  bool expect_extras(size_t count);
  bool extras_checked() const { return extras_checked_; }
  // Whether `groups` divides both channel counts of a convolution (each failure reported).
  bool groups_divide(int64_t c, int64_t out_c, int64_t groups);
  // The output dims of a max (is_max) or average pooling of input 0 with the node's attributes;
  // empty after a reported error.
  std::vector<int64_t> pool_dims(bool is_max);

  // The model's ops (shapes.cpp).
  bool input();
  bool conv2d();
  bool batchnorm2d();
  bool same_as_input();
  bool pool(bool is_max);
  bool global_avgpool();
  bool flatten();
  bool linear();
  bool softmax();
  bool concat();
  bool layer_scale();
  bool layernorm();
  bool channel_shuffle();
  bool adaptive_avgpool2d();

  // Ops that move pixels (shapes_spatial.cpp).
  bool upsample();
  bool conv_transpose2d();
  bool reshape();
  bool channel_conv1d();

  // Reductions and elementwise ops of issues 36 and 37 (shapes_pointwise.cpp).
  bool argmax();
  bool binary();
  bool pad();  // shapes.cpp

  // The training graph's ops (shapes_train.cpp).
  bool labels();
  bool softmax_cross_entropy();
  bool layer_grad(OpKind forward_op);
  bool operand_grad();
  bool activation_grad();
  bool pool_grad(bool is_max);
  bool global_avgpool_grad();
  bool flatten_grad();
  bool slice_channels();
  bool mul_grad();
  bool pad_channels();
  bool pad_grad();
  bool adaptive_avgpool2d_grad();
  bool sgd();

 private:
  const Node* earlier_node(const std::string& name) const;
  size_t node_index() const { return static_cast<size_t>(&n_ - g_.nodes.data()); }

  Graph& g_;
  Node& n_;
  Diagnostics& d_;
  EarlierNodes& earlier_;
  bool extras_checked_ = false;
};

}  // namespace zoc::ir::detail
