// Shared declarations of the ONNX frontend's files: model_file.cpp (reading and checking the
// file), tensors.cpp (TensorProto to values), names.cpp (layer names), translate.cpp (the graph
// walk), context.cpp (what an op handler sees of its node) and ops_layers.cpp / ops_tensor.cpp
// (the op table). The only header of zoc that includes libonnx.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/frontend/onnx/onnx_frontend.h"

namespace zoc::onnx::detail {

namespace pb = ::onnx;

// --- model_file.cpp --------------------------------------------------------------------------

inline constexpr int64_t kMaxModelBytes = int64_t{2} << 30;  // protobuf's own limit

// Reads and parses `path`, checks its versions, loads external data (only from files beside the
// model), checks tensor sizes, node inputs and cycles, then runs ONNX's checker. Returns the
// model with all tensor data inline and the opset of the default domain it imports.
struct ModelFile {
  pb::ModelProto proto;
  int64_t opset = 0;
};
std::optional<ModelFile> read_model(const std::string& path, Diagnostics& diags);
// Checks that every value has one producer, every input one, and nodes come in topological
// order (structure.cpp); reports each problem at its node.
bool check_graph_structure(const pb::GraphProto& g, const std::string& path, Diagnostics& diags);
// "node 'name' (Conv, #3)", or "node #3 (Conv)" for a node without a name.
std::string describe_node(const pb::NodeProto& n, int index);
// Where node `index` is: "model.onnx: node '/conv1/Conv' (Conv, #3)".
SourceLoc node_loc(const std::string& path, const pb::NodeProto& n, int index);
// The bytes of a regular file of at most `limit` bytes.
Expected<std::string> read_bytes(const std::string& path, int64_t limit);

// --- tensors.cpp -----------------------------------------------------------------------------

// A tensor whose value is known when the model is compiled: an initializer, a bound input or a
// Constant node's value. Floating types are kept as float32, integer and bool types as int64.
struct Constant {
  std::string name;  // the tensor's own name
  bool floating = true;
  std::vector<int64_t> dims;
  std::vector<float> f;
  std::vector<int64_t> i;

  size_t numel() const { return floating ? f.size() : i.size(); }
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
// Element size in bytes of an elem_type zoc decodes; 0 for others (strings, complex).
int64_t elem_size(int32_t elem_type);
// Product of dims, or nullopt if one is negative or it overflows int64.
std::optional<int64_t> checked_numel(const std::vector<int64_t>& dims);

// --- translate.cpp, context.cpp --------------------------------------------------------------

// What an ONNX value name stands for during the walk.
struct Val {
  enum class Kind {
    kPoison,      // the result of a node already reported as unsupported
    kActivation,  // the IR value `id`
    kConstant,    // `constant`, known now
  };
  Kind kind = Kind::kPoison;
  ir::ValueId id = ir::kNoValue;
  std::shared_ptr<const Constant> constant;
  std::string name;  // the ONNX name the value was reached by (an Identity's output: its own)

  bool is(Kind k) const { return kind == k; }
};

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
  std::optional<ir::ValueId> activation(size_t i);
  // Input i as a constant; `what` names it in the message if it is not one.
  const Val* constant(size_t i, const char* what);
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
  // Appends an IR node named after its parameters (if it binds any) or the ONNX node.
  std::optional<ir::ValueId> emit(ir::OpKind op, std::vector<ir::ValueId> inputs, ir::Attrs attrs,
                                  std::vector<ParamBinding> params = {});
  void result(Val v);
  bool result_activation(ir::ValueId v) {
    result(Val{Val::Kind::kActivation, v, nullptr, {}});
    return true;
  }
  // The IR node producing `v`, and the parameters bound to it so far.
  ir::Node& producer(ir::ValueId v);
  std::vector<ParamBinding>& params_of(const ir::Node& node);
  // How many needed nodes read the ONNX value of input i (a bias may join only a sole reader).
  size_t readers_of_input(size_t i) const;

 private:
  Translator& t_;
  const pb::NodeProto& n_;
  int index_;
  bool failed_ = false;  // one reason per node is enough
};

// An op handler: maps one ONNX node to IR nodes and sets its output; false after fail().
using Handler = bool (*)(NodeContext&);
// The handler of an op type of the default domain, or nullptr if zoc does not map it.
Handler find_handler(const std::string& op_type);
// The tables of ops_layers.cpp and ops_tensor.cpp.
struct OpEntry {
  const char* op_type;
  Handler handler;
};
std::span<const OpEntry> layer_ops();
std::span<const OpEntry> tensor_ops();

ir::AttrValue int_attr(int64_t v);
ir::AttrValue bool_attr(bool v);
ir::AttrValue float_attr(double v);
ir::AttrValue pair_attr(ir::Pair p);
// A float32 attribute as the shortest decimal that reads back as it (1e-05, not 9.99999975e-06):
// the value its writer meant, so the IR equals the YAML and TorchScript routes'.
double decimal_of_float(float v);

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
  std::string from_node(int index, ir::OpKind op) const;
  std::string fresh(const std::string& base);

  std::vector<std::string> node_names_;
  std::vector<std::string> scope_paths_;  // per node: its module path ("" if none)
  std::vector<bool> scope_is_leaf_;       // per node: no other node lies inside its scope
  std::set<std::string> reserved_;        // prefixes of parameter tensors, "input"
  std::set<std::string> used_;
};

// Text safe to show for a user-supplied name: printable, quoted characters escaped, bounded.
std::string shown_name(const std::string& name);

// Runs the graph walk (translate.cpp).
class Translator {
 public:
  Translator(const ModelFile& model, const std::string& path, const Options& options,
             Diagnostics& diags);
  bool run(Model& out);

 private:
  friend class NodeContext;
  struct Problem {
    int node;
    std::string why;
  };

  bool bind_graph_inputs();
  bool add_input_node(const pb::ValueInfoProto& input);
  void mark_needed();
  void step(int index);
  bool finish_output();
  bool check_declared_output(const pb::ValueInfoProto& output);
  void check_params();
  void report_problems();
  bool collect_weights(Model& out);

  const Val& get(const std::string& name) const;
  const std::vector<int64_t>* dims(ir::ValueId v);

  const ModelFile& model_;
  const pb::GraphProto& g_;
  std::string path_;
  const Options& options_;
  Diagnostics& diags_;
  ir::Graph graph_;
  std::unordered_map<std::string, Val> env_;
  std::vector<bool> needed_;                       // per node: its result reaches the output
  std::unordered_map<std::string, size_t> readers_;  // value name -> needed nodes reading it
  std::set<std::string> graph_outputs_;
  std::map<int32_t, std::vector<ParamBinding>> params_;  // IR node index -> its parameters
  std::vector<Problem> problems_;
  std::optional<LayerNames> names_;
  std::vector<std::string> tensor_names_;
  std::optional<int64_t> batch_;  // the batch size the model's input declares, if it fixes one
  bool dims_overridden_ = false;  // --input set a dimension the model leaves dynamic
  bool fatal_ = false;
};

}  // namespace zoc::onnx::detail
