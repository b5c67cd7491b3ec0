// The graph IR: nodes in topological order, each producing one typed value (training-graph
// ops may produce several: Node::extra_outputs).
//
// A node is an op from the op table, its attributes (checked against the table's schema), its
// input values, its parameters (weights named as in PyTorch's state_dict: "<layer>.weight"),
// and the source location it came from. Values carry a TensorType whose leading batch
// dimension is dynamic: batch size is chosen at run time, everything else is fixed at compile
// time. Weight data lives outside the graph (weights/), so the graph stays cheap to copy and
// print.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/lowering.h"
#include "compiler/ir/ops.h"
#include "compiler/support/diagnostics.h"

namespace zoc::ir {

enum class DType { F32, F16, BF16, I64, I32 };
enum class Layout { NCHW, NHWC, NC };

std::string_view dtype_name(DType dtype);
int64_t dtype_size(DType dtype);
std::string_view layout_name(Layout layout);

// The type of a value. A batched value (every value of an inference graph) has the dynamic
// batch dimension N in front of `dims`: {C, H, W} for images, {F} for feature vectors, {} for
// one scalar per sample (labels). A non-batched value exists once per step whatever the batch
// (a parameter's gradient, saved BatchNorm statistics, the loss): `dims` is its full shape.
struct TensorType {
  DType dtype = DType::F32;
  Layout layout = Layout::NCHW;
  std::vector<int64_t> dims;
  bool batched = true;

  bool operator==(const TensorType&) const = default;
  std::string str() const;  // "Nx64x56x56 f32"; non-batched "64x3x7x7 f32"
  // Product of dims (already overflow-checked by shape inference): elements per sample, or of
  // the whole tensor when not batched.
  int64_t sample_numel() const;
};

struct Pair {
  int64_t h = 0, w = 0;
  bool operator==(const Pair&) const = default;
};

struct AttrValue {
  AttrKind kind = AttrKind::Int;
  int64_t i = 0;  // Int, Bool, Init (an InitScheme)
  Pair pair;      // Pair
  double f = 0;   // Float
  bool operator==(const AttrValue&) const = default;
};

// The op table's default for an optional attribute (nullopt: required, or no default).
std::optional<AttrValue> default_attr(const AttrSpec& spec);

// Attributes by name, ordered as in the op table so printing is stable.
class Attrs {
 public:
  void set(std::string_view name, AttrValue value);
  bool has(std::string_view name) const;
  const AttrValue* find(std::string_view name) const;
  int64_t i(std::string_view name) const;  // Int or Bool; asserts presence
  Pair pair(std::string_view name) const;
  double f(std::string_view name) const;
  bool b(std::string_view name) const { return i(name) != 0; }
  // A Bool attribute that may be absent, which means false (a ZOC_PASS_ATTR such as `training`).
  bool flag(std::string_view name) const {
    const AttrValue* v = find(name);
    return v != nullptr && v->i != 0;
  }
  // An Init attribute's scheme; nullopt when absent (the op's PyTorch default, see ops.def).
  std::optional<InitScheme> init(std::string_view name) const;
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool operator==(const Attrs&) const = default;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

// `given` with every other attribute of `op` that has a default added, in op-table order: how
// the frontends that translate another framework's nodes (TorchScript, ONNX) write out defaults.
Attrs with_defaults(OpKind op, const Attrs& given);

// What the weights-file operand of an add, sub, mul or div (Node::operand_tensor, scalar_from) is
// to PyTorch: a parameter it trains, a buffer it keeps fixed, or not known (an ONNX initializer
// does not say; a YAML `tensor:` does not either, `parameter:` and `buffer:` do).
enum class OperandRole { kUnknown, kBuffer, kParameter };

// What a parameter tensor is to its op, so passes and backends need not parse names. kNormWeight
// and kNormBias are layernorm's; kScale is layer_scale's gamma.
enum class ParamRole {
  kWeight,
  kBias,
  kBnWeight,
  kBnBias,
  kBnMean,
  kBnVar,
  kBnCount,
  kNormWeight,
  kNormBias,
  kScale,
  kOperand,  // a binary op's constant tensor operand (Node::operand_tensor)
};

// A tensor a node needs from the weights file.
struct ParamSpec {
  std::string name;  // full state_dict name, e.g. "layer1.0.bn1.running_var"
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  bool trainable = true;  // counted as a parameter (weights, biases), not a buffer
  bool optional = false;  // may be absent from the file (e.g. num_batches_tracked)
  ParamRole role = ParamRole::kWeight;
  // How the tensor is drawn without a weights file. kPytorchDefault is PyTorch's
  // reset_parameters() for the role: U(+-1/sqrt(fan_in)) for conv/linear weight and bias, 1 for
  // BN weight and running_var, 0 for BN bias, running_mean and num_batches_tracked. Shape
  // inference sets another scheme only where the layer declares one (its `init` attribute);
  // weights/weights.h turns it into a concrete rule (init_choice).
  InitScheme init = InitScheme::kPytorchDefault;
  // A trainable tensor the source module keeps fixed (Node::frozen): training wants no
  // gradient for it and no optimizer moves it.
  bool frozen = false;
  bool operator==(const ParamSpec&) const = default;
};

inline constexpr ValueId kNoValue = -1;

struct Node {
  OpKind op;
  std::string name;  // dotted layer path, unique in the graph ("layer1.0.conv1")
  std::vector<ValueId> inputs;
  ValueId output = kNoValue;
  Attrs attrs;
  std::vector<ParamSpec> params;  // filled by shape inference
  SourceLoc loc;
  // For nodes made by fusion passes: the original layers merged into this one, in order
  // (e.g. "layer1.0.conv3", "layer1.0.bn3", "layer1.0.add", "layer1.0.relu3").
  std::vector<std::string> fused_from;
  // Results beyond `output`, for ops that define several (a backward op's parameter gradients,
  // a training-mode BatchNorm's saved statistics), each named by its Value::name. Inference
  // graphs have none.
  std::vector<ValueId> extra_outputs;
  // Training-graph nodes: the model layer a backward op differentiates (its params are that
  // layer's), or the parameter an sgd node updates. Empty elsewhere.
  std::string origin;
  // Its runtime layer, once lower-to-target ran (lowering.h).
  std::optional<Lowered> lowered;
  // A one-input add, sub, mul or div whose other operand is a tensor of the weights file: that
  // tensor's full state_dict name (a buffer the model's forward reads, `mean` in
  // `(x - self.mean) / self.std`, or `blocks.0.ls1.gamma`), which need not be "<layer>.<suffix>"
  // and which several nodes may share. Shape inference declares it as the node's parameter
  // (ParamRole::kOperand). Empty elsewhere.
  std::string operand_tensor;
  // A one-input add, sub, mul or div whose `scalar` the ONNX frontend read from a one-element
  // initializer (timm's LearnableAffineBlock scale and bias; TorchScript's frontend keeps such a
  // parameter or buffer as an operand_tensor of one value): that tensor's name. The value is
  // compiled in; weights/load.cpp refuses a weights file that holds this name with another
  // value, so that new weights never meet an old constant. Empty elsewhere; not printed (it
  // names where a constant came from, not what the layer computes).
  std::string scalar_from;
  // What operand_tensor or scalar_from is: training keeps a buffer fixed, gives a parameter its
  // gradient, and refuses an unknown one. kUnknown elsewhere.
  OperandRole operand_role = OperandRole::kUnknown;
  // A layer that runs again (a module its forward calls twice, issue 36): the earlier node of
  // the same op whose parameters this one uses, so that both read one tensor
  // ("<weights_of>.weight"). Empty elsewhere: a node's parameters are its own (`name`).
  std::string weights_of;
  // Parameters of this node that the source module keeps fixed in training (TorchScript's
  // requires_grad=False: a frozen backbone, fine-tuned through its head). Shape inference marks
  // them ParamSpec::frozen; training gives them no update. Empty elsewhere.
  std::vector<std::string> frozen;
};

// The layer whose parameters node n declares: n.weights_of, else n itself.
inline const std::string& weights_owner(const Node& n) {
  return n.weights_of.empty() ? n.name : n.weights_of;
}

struct Value {
  std::optional<TensorType> type;  // set by shape inference
  int32_t producer = -1;           // node index
  std::string name;                // extra results only; an output is named after its node
  std::optional<Storage> storage;  // set by lower-to-target (lowering.h)
};

class Graph {
 public:
  std::string name;  // model name
  std::vector<Node> nodes;
  std::vector<Value> values;
  std::vector<ValueId> outputs;
  // Set by lower-to-target (lowering.h): then every value has a storage and every node a layer.
  std::optional<TargetInfo> target;

  // Appends a node with a fresh output value and returns the node index.
  int32_t add_node(OpKind op, std::string node_name, std::vector<ValueId> inputs, Attrs attrs,
                   SourceLoc loc);
  // Gives node `node` one more result, named `value_name`, and returns it.
  ValueId add_extra_output(int32_t node, std::string value_name);
  // Every result of a node: its output, then its extras.
  static std::vector<ValueId> results(const Node& node);
  // The name a value prints as (after '%'): its producer's, or its own for an extra result.
  const std::string& value_name(ValueId v) const;
  const Node& producer(ValueId v) const { return nodes[values[v].producer]; }
  const TensorType& type(ValueId v) const { return *values[v].type; }
  const Node* find_node(std::string_view node_name) const;

  // Trainable parameters and buffers, as PyTorch counts them (each name once: a training
  // graph's backward nodes list their layer's parameters again).
  int64_t trainable_param_count() const;
  int64_t buffer_count() const;        // elements of non-trainable tensors
  int64_t frozen_param_count() const;  // elements of frozen ones (ParamSpec::frozen)
};

// add, sub, mul or div: the ops with a constant operand's forms (ops.def).
bool is_binary_op(OpKind op);

// Whether a one-input binary node's tensor operand (operand_tensor, or operand_grad's layer's) is
// one value, stored [] or, with `one_value`, [1], [1, 1, 1, 1], ...: not one per channel or
// feature.
bool one_value_operand(const Node& n);

// A convolution (Conv2d or FusedConv2d, shapes inferred) with one input and one output channel
// per group, groups > 1: MobileNet's, EfficientNet's and ConvNeXt's depthwise convolutions.
bool is_depthwise_conv(const Graph& g, const Node& conv);

}  // namespace zoc::ir
