// Shared declarations of the ONNX frontend's files: model_file.cpp (reading and checking the
// file), tensors.cpp (TensorProto to values), names.cpp (layer names), translate.cpp (the graph
// walk), context.cpp (what an op handler sees of its node) and the op table: ops_layers.cpp,
// ops_tensor.cpp, ops_zoo.cpp (the CNN zoo's layers and views), ops_decomposed.cpp (ops an
// exporter writes node by node) and ops_shape.cpp (shape arithmetic folded while compiling).
// own_checks.cpp checks a file newer than libonnx's checker knows. The only header of zoc that
// includes libonnx.
#pragma once

#include <onnx/onnx_pb.h>

#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/frontend/activation_view.h"
#include "compiler/frontend/onnx/onnx_frontend.h"
#include "compiler/support/float_decimal.h"
#include "compiler/support/sanitize.h"  // shown_text: every name a message quotes

namespace zoc::onnx::detail {

namespace pb = ::onnx;

// --- model_file.cpp --------------------------------------------------------------------------

inline constexpr int64_t kMaxModelBytes = int64_t{2} << 30;  // protobuf's own limit

// Reads and parses `path`, checks its versions, loads external data (only from files beside the
// model), checks tensor sizes, node inputs and cycles, then runs ONNX's checker. Returns the
// model with all tensor data inline and the opset of the default domain it imports.
// Where a tensor's external data lies: checked (a regular file beside the model, long enough),
// not yet read.
struct ExternalData {
  std::string file;
  int64_t offset = 0;
  int64_t bytes = 0;
};
struct ModelFile {
  pb::ModelProto proto;
  int64_t opset = 0;
  // Per initializer of the main graph: its external float32 data, left in the file until the
  // translator reads it straight into its values (read_external_floats), so that the data is
  // never held twice (issue 31). Other external data is read into the proto.
  std::vector<std::optional<ExternalData>> external_initializers;
};
std::optional<ModelFile> read_model(const std::string& path, Diagnostics& diags);
// Checks that every value has one producer, every input one, and nodes come in topological
// order (structure.cpp); reports each problem at its node.
bool check_graph_structure(const pb::GraphProto& g, const std::string& path, Diagnostics& diags);
// "node 'name' (Conv, #3)", or "node #3 (Conv)" for a node without a name.
std::string describe_node(const pb::NodeProto& n, int index);
// Where node `index` is: "model.onnx: node '/conv1/Conv' (Conv, #3)".
SourceLoc node_loc(const std::string& path, const pb::NodeProto& n, int index);
// The bytes of a regular file of at most `limit` bytes; the error says why not, without the path
// (the caller's location or prefix names it).
Expected<std::string> read_bytes(const std::string& path, int64_t limit);
// A message of ONNX's checker on one line (its context after "\n\n==> Context:" joined),
// escaped like every name from the file.
std::string checker_message(const std::exception& e);

// --- own_checks.cpp --------------------------------------------------------------------------

// Whether libonnx's checker knows the model's IR version and opset; if not, zoc checks it itself.
bool checker_knows(const ModelFile& m);
// What ONNX's checker would check, as far as zoc reads the model, for a file newer than libonnx's
// checker knows: graph inputs, outputs and initializers, and each node of an op zoc maps against
// its schema at the file's opset. Each problem is reported at its node or value; a note says that
// zoc checked the model itself when none is found.
bool check_newer_model(const ModelFile& m, const std::string& path, Diagnostics& diags);

// --- tensors.cpp -----------------------------------------------------------------------------

// A tensor whose value is known when the model is compiled: an initializer, a bound input or a
// Constant node's value. Floating types are kept as float32, integer and bool types as int64.
// Every Constant is created non-const (std::make_shared<Constant>) and shared as const, so that
// Translator::collect_weights may move the values out of one it holds alone.
struct Constant {
  std::string name;  // the tensor's own name
  bool floating = true;
  int32_t elem_type = 1;  // the TensorProto's data_type where one was decoded (1: FLOAT)
  std::vector<int64_t> dims;
  std::vector<float> f;
  std::vector<int64_t> i;
  // Integer elements that stand for the batch size, which zoc keeps dynamic: a Shape of an
  // activation, and what Gather, Unsqueeze, Concat and Cast make of it (ops_shape.cpp). Empty
  // when none does; else one flag per element of `i`. Only readers that understand it take such
  // a constant (NodeContext::shape_constant); NodeContext::constant refuses it.
  std::vector<bool> batch;

  size_t numel() const { return floating ? f.size() : i.size(); }
  bool has_batch() const;
};

// The elem_type's name in ONNX's spelling ("FLOAT", "INT64"), or "type N".
std::string elem_type_name(int32_t elem_type);
bool is_floating(int32_t elem_type);
// Whether `t`'s data matches its dims and type, without decoding it (every tensor of a model is
// checked so before ONNX's checker sees it); the message says why not.
Status check_tensor_data(const pb::TensorProto& t);
// The value of `t`, or why it cannot be read (dims negative or overflowing, data of the wrong
// length, an unsupported type, data stored externally).
Expected<Constant> decode_tensor(const pb::TensorProto& t);
// The value of an initializer whose data read_model left in its file (model_file.cpp).
Expected<Constant> read_external_floats(const pb::TensorProto& t, const ExternalData& data);
// Element size in bytes of an elem_type zoc decodes; 0 for others (strings, complex).
int64_t elem_size(int32_t elem_type);
// Product of dims, or nullopt if one is negative or it overflows int64.
std::optional<int64_t> checked_numel(const std::vector<int64_t>& dims);

// --- translate.cpp, context.cpp --------------------------------------------------------------

struct Partial;

// A reshape target's element that stands for the batch size (from Constant::batch).
inline constexpr int64_t kBatchDim = INT64_MIN;
// A reshape target for messages, kBatchDim shown as N: "[N, 2, 58, 8, 8]".
std::string target_str(const std::vector<int64_t>& to);

// What an ONNX value name stands for during the walk.
struct Val {
  enum class Kind {
    kPoison,      // the result of a node already reported as unsupported
    kActivation,  // the IR value `id`, possibly seen through a view
    kConstant,    // `constant`, known now
    kPartial,     // a step of an op the exporter decomposed (`partial`), not yet complete
  };
  // kActivation: what the ONNX tensor is to the IR value, which is an NCHW image or features.
  // Besides the value itself, the two views torch.onnx.export writes around the zoo's layers,
  // which zoc follows without an IR node (as the TorchScript frontend does): ConvNeXt's
  // channels-last [N, H, W, C] (Transpose perm [0, 2, 3, 1]) that LayerNormalization and MatMul
  // run on, and ShuffleNet's [N, g, C/g, H, W] (a Reshape), also after its Transpose perm
  // [0, 2, 1, 3, 4]. Only handlers that understand a view take one (NodeContext::viewed).
  using View = frontend::ActivationView;  // compiler/frontend/activation_view.h

  Kind kind = Kind::kPoison;
  ir::ValueId id = ir::kNoValue;
  std::shared_ptr<const Constant> constant;
  std::string name;  // the ONNX name the value was reached by (an Identity's output: its own)
  View view = View::kNone;                 // kActivation
  int64_t groups = 0;                      // kActivation viewed kGrouped or kGroupedTransposed: g
  std::shared_ptr<const Partial> partial;  // kPartial

  bool is(Kind k) const { return kind == k; }
  static Val known(std::shared_ptr<const Constant> k, std::string name = {}) {
    Val r;
    r.kind = Kind::kConstant;
    r.constant = std::move(k);
    r.name = std::move(name);
    return r;
  }
  static Val activation(ir::ValueId v, View view = View::kNone, int64_t groups = 0) {
    Val r;
    r.kind = Kind::kActivation;
    r.id = v;
    r.view = view;
    r.groups = groups;
    return r;
  }
};

// How a view reads in messages ("a channels-last [N, H, W, C] view").
std::string view_name(Val::View view);
// The per-sample dims of the ONNX tensor `v` stands for, given the dims of its IR value.
std::vector<int64_t> viewed_dims(const Val& v, const std::vector<int64_t>& dims);

// A step of an op that torch.onnx.export writes as several nodes, followed node by node until
// the one that completes it (ops_decomposed.cpp): GELU's erf form x * 0.5 * (1 + erf(x / sqrt 2)),
// LayerNormalization below opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul,
// Add), a zero Pad before AveragePool (PyTorch's count_include_pad), and the dynamo exporter's
// as_strided that reads a tensor back unchanged (Reshape to [-1], then a Gather of every element
// in order: timm's ConvNeXt head). No IR node exists for
// a step; a use of one other than the next step is unsupported, with the step named.
struct Partial {
  enum class Step {
    kGeluScaled,    // x / sqrt(2)
    kGeluErf,       // erf(x / sqrt(2))
    kGeluErfPlus1,  // 1 + erf(x / sqrt(2))
    kGeluUnhalved,  // x * (1 + erf(x / sqrt(2)))
    kNormMean,      // mean of x over its last axis
    kNormCentered,  // d = x - mean
    kNormSquared,   // d^2
    kNormVariance,  // mean of d^2
    kNormVarEps,    // variance + eps
    kNormStd,       // sqrt(variance + eps)
    kNormalized,    // d / sqrt(variance + eps)
    kNormScaled,    // that times the weight
    kPadded,        // x padded with zeros on H and W by `pad`
    kFlattened,     // x with its (fixed) batch flattened into one axis: Reshape to [-1]
  };
  Partial(Step s, Val x) : step(s), source(std::move(x)) {}

  Step step;
  Val source;  // x, the activation the op applies to
  double eps = 0;
  std::shared_ptr<const Constant> weight;
  std::string weight_name;  // the ONNX name the weight was reached by
  ir::Pair pad{0, 0};
};

// What a step is, for messages ("the Erf of GELU's erf form").
std::string step_name(Partial::Step step);

// A constant that becomes one of a layer's parameter tensors: `<layer>.<suffix>` in the IR.
struct ParamBinding {
  std::string suffix;  // "weight", "bias", "running_mean", "running_var"
  std::shared_ptr<const Constant> value;
  std::string seen_as;     // the ONNX name the node used for it
  bool transpose = false;  // a 2-D [in, out] tensor the IR holds as [out, in]
};

class Translator;

// What an op handler (ops_*.cpp) sees of one node: its inputs as activations or constants,
// its attributes, and emitters. Readers record why a use is unsupported (fail) and return
// nullopt/false, so a handler is a straight sequence of reads, checks and one emit.
class NodeContext {
 public:
  NodeContext(Translator& t, const pb::NodeProto& n, int index) : t_(t), n_(n), index_(index) {}

  const pb::NodeProto& node() const { return n_; }
  int64_t opset() const;
  // Whether input i is given (ONNX marks an omitted optional input with an empty name).
  bool has_input(size_t i) const;
  const Val& in(size_t i) const;
  // Input i as an activation that is not a view; nullopt after recording why not.
  std::optional<ir::ValueId> activation(size_t i);
  // Inputs 0 and 1 as activations that are not views, with their per-sample dims (Add, Mul).
  struct Operands {
    ir::ValueId a, b;
    const std::vector<int64_t>& da;
    const std::vector<int64_t>& db;
  };
  std::optional<Operands> activation_pair();
  // Input i as an activation, viewed or not, for the handlers that follow views.
  const Val* viewed(size_t i);
  // Input i as a constant; `what` names it in the message if it is not one, or if it depends
  // on the batch size.
  const Val* constant(size_t i, const char* what);
  // The same, where elements standing for the batch size (Constant::batch) are understood.
  const Val* shape_constant(size_t i, const char* what);
  // A constant scalar (one element) of input i as a double.
  std::optional<double> scalar(size_t i, const char* what);
  // The batch size the model's input declares, if it fixes one.
  std::optional<int64_t> declared_batch() const;
  // Per-sample dims (no batch) of an activation; nullptr after a shape error was reported.
  const std::vector<int64_t>* dims(ir::ValueId v);
  // Whether output k is read by a node that matters or is a graph output.
  bool output_used(size_t k) const;
  // Readers of attributes: leave `out` as it is when the attribute is absent; false (after a
  // failure is recorded) when it has another type.
  bool attr(const char* name, int64_t& out);
  bool attr(const char* name, double& out);
  bool attr(const char* name, std::vector<int64_t>& out);
  bool attr(const char* name, std::string& out);
  bool has_attr(const char* name) const;

  // Records why this node is unsupported; always returns false.
  bool fail(const std::string& why);
  // Notes v's int8 scale (a QuantizeLinear's, ops_qdq.cpp); false, after recording why, if v
  // already has another.
  bool int8_scale(ir::ValueId v, float scale);
  // v's int8 scale if a QuantizeLinear noted one, else null.
  const float* noted_int8_scale(ir::ValueId v) const;
  // Appends an IR node named after its parameters (if it binds any) or the ONNX node.
  std::optional<ir::ValueId> emit(ir::OpKind op, std::vector<ir::ValueId> inputs, ir::Attrs attrs,
                                  std::vector<ParamBinding> params = {});
  void result(Val v);
  // Input i becomes v for this node and every later reader of its ONNX value (a Partial made
  // into the activation it stands for).
  void rebind_input(size_t i, Val v);
  // Sets output k (result() sets output 0).
  void result_at(size_t k, Val v);
  bool result_activation(ir::ValueId v) {
    result(Val::activation(v));
    return true;
  }
  // v seen through the view of `as` (an op that keeps its input's layout).
  bool result_like(ir::ValueId v, const Val& as) {
    result(Val::activation(v, as.view, as.groups));
    return true;
  }
  bool result_partial(Partial p) {
    Val v;
    v.kind = Val::Kind::kPartial;
    v.partial = std::make_shared<const Partial>(std::move(p));
    result(std::move(v));
    return true;
  }
  bool result_constant(Constant k) {
    result(Val::known(std::make_shared<Constant>(std::move(k))));
    return true;
  }
  // The IR node producing `v`, and the parameters bound to it so far.
  ir::Node& producer(ir::ValueId v);
  std::vector<ParamBinding>& params_of(const ir::Node& node);
  // How many needed nodes read the ONNX value of input i (a bias may join only a sole reader).
  size_t readers_of_input(size_t i) const;
  // How many needed nodes read IR value v under any ONNX name (an Identity's output, a view),
  // graph outputs counted as readers.
  size_t readers_of_value(ir::ValueId v) const;
  // The needed nodes that read output 0, a nullptr standing for the graph's output (an Expand
  // maps only into the Mul that broadcasts it).
  std::vector<const pb::NodeProto*> readers_of_output() const;
  // What ONNX value `name` stands for now, or nullptr if no node has made it yet.
  const Val* value_now(const std::string& name) const;

 private:
  Translator& t_;
  const pb::NodeProto& n_;
  int index_;
  bool failed_ = false;  // one reason per node is enough
};

// The IR pad node of image x by pads [top, left, bottom, right] of `value` (ops_zoo.cpp).
std::optional<ir::ValueId> emit_pad(NodeContext& c, ir::ValueId x, const std::vector<int64_t>& tlbr,
                                    double value);

// An op handler: maps one ONNX node to IR nodes and sets its output; false after fail().
using Handler = bool (*)(NodeContext&);
// The handler of an op type of the default domain, or nullptr if zoc does not map it.
Handler find_handler(const std::string& op_type);
// The tables of ops_layers.cpp, ops_tensor.cpp, ops_zoo.cpp, ops_decomposed.cpp, ops_shape.cpp.
struct OpEntry {
  const char* op_type;
  Handler handler;
};
std::span<const OpEntry> layer_ops();
std::span<const OpEntry> tensor_ops();
std::span<const OpEntry> zoo_ops();
std::span<const OpEntry> decomposed_ops();
std::span<const OpEntry> shape_ops();
std::span<const OpEntry> qdq_ops();  // ops_qdq.cpp: QuantizeLinear, DequantizeLinear (issue 35)
// ops_dense.cpp (issues 36 and 37), consulted first; base_handler is the other tables' handler,
// which it hands the uses it does not take to.
std::span<const OpEntry> dense_ops();
Handler base_handler(const std::string& op_type);
// ops_eca.cpp (ECA attention, issue 36), consulted before dense_ops; dense_handler is the
// handler it hands other uses to (dense_ops', else base_handler's).
std::span<const OpEntry> eca_ops();
Handler dense_handler(const std::string& op_type);
// ops_radix.cpp (split attention over a radix, issue 36), consulted before eca_ops;
// eca_handler is the handler it hands other uses to (eca_ops', else dense_handler's).
std::span<const OpEntry> radix_ops();
Handler eca_handler(const std::string& op_type);

// Handlers that share an op type with another file's: each op type has one table entry, which
// hands its node to these where its inputs call for them.
//   ops_shape.cpp: a node whose inputs are all constants (shape arithmetic: Add, Sub, Mul,
//   Div, Concat, ...) is computed now, by the handler constant_handler gives (nullptr: none).
bool all_inputs_constant(const NodeContext& c);
Handler constant_handler(const std::string& op_type);
//   ops_decomposed.cpp: a node with a Partial input, the next step of a decomposed op; and the
//   first step of a decomposed LayerNormalization, a ReduceMean over a channels-last view.
bool decomposed_step(NodeContext& c);
bool start_layer_norm(NodeContext& c, const Val& x);
//   ops_layers.cpp: AveragePool of a Pad's result x (count_include_pad).
bool average_pool_padded(NodeContext& c, const Val& x, ir::Pair pad);
//   ops_zoo.cpp: the axes a ReduceMean reduces: its attribute below opset 18, its input from 18;
//   empty for all of them, unless `identity` (noop_with_empty_axes with no axes) is set.
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool identity = false;
};
std::optional<ReduceAxes> reduce_axes(NodeContext& c);
//   ops_zoo.cpp: Reshape of an image into ShuffleNet's grouped view and back.
bool reshape_view(NodeContext& c, const std::vector<int64_t>& shape);
//   ops_zoo.cpp: MatMul of a channels-last view (a linear layer over each pixel's channels).
bool pixel_linear(NodeContext& c, const Val& x, const Val& w);
//   ops_zoo.cpp: a layernorm of x from `axis` (the last) with its weight and bias, for
//   LayerNormalization and its decomposition.
bool emit_layer_norm(NodeContext& c, const Val& x, int64_t axis, double eps, ParamBinding weight,
                     const Val& bias);

ir::AttrValue int_attr(int64_t v);
ir::AttrValue bool_attr(bool v);
ir::AttrValue float_attr(double v);
ir::AttrValue pair_attr(ir::Pair p);
// A float32 attribute as the shortest decimal that reads back as it (float_decimal.h), so the IR
// equals the YAML and TorchScript routes'.
using zoc::decimal_of_float;

// --- names.cpp -------------------------------------------------------------------------------

// Names IR layers: a layer with parameters after the state_dict prefix its initializers share
// ("layer1.0.conv1" for layer1.0.conv1.weight and .bias), else after its node; a parameter-free
// layer after its node. torch.onnx.export names nodes by module scope
// ("/layer1/layer1.0/relu_1/Relu"): that becomes the module path, "layer1.0.relu_1", as the
// TorchScript frontend names the layer.
class LayerNames {
 public:
  // `graph`: the nodes to name; `tensors`: names of initializers and bound inputs, whose
  // prefixes are kept for the layers that own them.
  LayerNames(const pb::GraphProto& graph, const std::vector<std::string>& tensors);
  // A fresh name for node `index` emitting an op of kind `op`; `params` are its bindings.
  std::string name_for(int index, ir::OpKind op, const std::vector<ParamBinding>& params);

 private:
  void scope_from_readers(const pb::GraphProto& graph);
  std::string from_node(int index, ir::OpKind op) const;
  std::string fresh(const std::string& base);

  std::vector<std::string> node_names_;
  std::vector<std::string> scope_paths_;  // per node: its module path ("" if none)
  std::vector<bool> scoped_;              // per node: its name or metadata gives its module path
  std::vector<bool> scope_is_leaf_;       // per node: no other node lies inside its scope
  std::set<std::string> reserved_;        // prefixes of parameter tensors, "input"
  std::set<std::string> tensors_;         // names of initializers and bound inputs
  std::set<std::string> used_;
};

// Runs the graph walk (translate.cpp).
class Translator {
 public:
  // Takes the initializers' data out of `model` as it reads them.
  Translator(ModelFile& model, const std::string& path, const Options& options, Diagnostics& diags);
  bool run(Model& out);

 private:
  friend class NodeContext;
  struct Problem {
    int node;
    std::string why;
  };

  bool bind_graph_inputs();
  void report_inputs(const std::vector<const pb::ValueInfoProto*>& data);
  bool add_input_node(const pb::ValueInfoProto& input);
  void mark_needed();
  void step(int index);
  bool finish_output();
  void check_declared_output(const pb::ValueInfoProto& o, ir::ValueId id);
  void check_params();
  void report_problems();
  bool collect_weights(Model& out);

  const Val& get(const std::string& name) const;
  void bind(const std::string& name, Val v);  // env_[name] = v, noting an activation's names
  const std::vector<int64_t>* dims(ir::ValueId v);

  ModelFile& model_;
  const pb::GraphProto& g_;
  std::string path_;
  const Options& options_;
  Diagnostics& diags_;
  ir::Graph graph_;
  std::unordered_map<std::string, Val> env_;
  // IR value -> the ONNX names bound to it (an Identity's output shares its input's value), so
  // that NodeContext::readers_of_value need not scan env_ per node.
  std::unordered_map<ir::ValueId, std::vector<std::string>> names_of_value_;
  std::vector<bool> needed_;                         // per node: its result reaches the output
  std::unordered_map<std::string, size_t> readers_;  // value name -> needed nodes reading it
  std::set<std::string> graph_outputs_;
  std::map<int32_t, std::vector<ParamBinding>> params_;  // IR node index -> its parameters
  std::vector<Problem> problems_;
  std::optional<LayerNames> names_;
  std::vector<std::string> tensor_names_;
  std::optional<int64_t> batch_;  // the batch size the model's input declares, if it fixes one
  bool dims_overridden_ = false;  // --input set a dimension the model leaves dynamic
  std::map<ir::ValueId, float> int8_scales_;  // QuantizeLinear's scales (ops_qdq.cpp)
  bool fatal_ = false;
  size_t typed_nodes_ = 0;  // nodes [0, typed_nodes_) have their shapes inferred (dims())
};

}  // namespace zoc::onnx::detail
