// Shared declarations of the LibTorch plugin's files: module.cpp (loading, state_dict, the
// plugin entry point), translate.cpp, translate_values.cpp and translate_report.cpp (the symbolic
// interpreter: its walk, its values, its messages and names) and aten_ops.cpp (ATen ops to IR
// ops). The only header of zoc that includes LibTorch; the plugin's files are the only
// translation units that include it, because each one costs many seconds to compile.
#pragma once

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/frontend/activation_view.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"

namespace zoc::torchscript::detail {

namespace jit = torch::jit;

// What a TorchScript value stands for while `forward` is run symbolically.
struct Val {
  enum class Kind {
    kPoison,  // the result of something already reported as an error
    kConst,   // a value known now: int, float, bool, string, None, list, constant tensor
    kModule,  // a module object; `name` is its path ("layer1.0", "" for the root)
    kParam,   // a tensor attribute; `name` is its state_dict name ("layer1.0.conv1.weight")
    kTensor,  // an activation: the IR value `id`
    kBatch,   // the batch size, which zoc keeps dynamic
    kList,    // a list or tuple holding some non-constant items
    kDict,    // a dict of tensors with string keys known now (dicts.cpp): `keys` and `items`
    // A result zoc does not compute (adaptive_max_pool2d's indices): `name` says which. It may
    // be moved around (a tuple, a return) but an op that reads it is refused with that name.
    kUnavailable,
  };
  // kTensor: what the TorchScript tensor is to the IR value, an NCHW image or features. Besides
  // the value itself, two views zoc follows without an IR node: the channels-last permutation
  // [N, H, W, C] that ConvNeXt normalizes and applies Linear layers to (x.permute(0, 2, 3, 1)),
  // and ShuffleNet's 5-D [N, g, C/g, H, W] (x.view(n, g, c / g, h, w)), also after its
  // transpose(1, 2) to [N, C/g, g, H, W]. Only the handlers that understand a view accept one
  // (OpContext::activation); every other use of it is unsupported, with the view named.
  using View = frontend::ActivationView;  // compiler/frontend/activation_view.h

  Kind kind = Kind::kPoison;
  View view = View::kNone;        // kTensor
  int64_t groups = 0;             // kTensor viewed kGrouped or kGroupedTransposed: g
  c10::IValue value;              // kConst, kModule
  std::string name;               // kModule, kParam, kUnavailable
  at::Tensor tensor;              // kParam
  bool transposed = false;        // kParam seen through aten::t
  bool in_state_dict = true;      // kParam: a parameter or buffer, not a plain attribute
  bool parameter = false;         // kParam: a parameter (trained), not a buffer
  int64_t stored_rank = -1;       // kParam seen reshaped (timm's gamma): its stored tensor's rank
  ir::ValueId id = ir::kNoValue;  // kTensor
  std::vector<Val> items;         // kList; kDict: the values, in insertion order
  std::vector<std::string> keys;  // kDict: the keys, in insertion order
  // Mutation (aliasing.cpp). kTensor: the storage it shares with its aliases and, for a view
  // that is not the storage's whole content in its layout (`derived`: a flatten, a chunk, a
  // reshape that may copy), the view object it is. kList: the list object (-1 for a tuple);
  // kDict: its dict object, kept with the lists.
  // `version`: the storage's or list's version that `id` or `items` reflect.
  int32_t storage = -1;
  int32_t object = -1;
  int32_t list = -1;
  uint32_t version = 0;
  bool derived = false;
  uint32_t depth = 0;  // kList: how deep lists and tuples nest in it (kMaxFoldedDepth)

  static Val constant(c10::IValue v) {
    Val r;
    r.kind = Kind::kConst;
    r.value = std::move(v);
    return r;
  }
  static Val activation(ir::ValueId v) {
    Val r;
    r.kind = Kind::kTensor;
    r.id = v;
    return r;
  }
  bool is(Kind k) const { return kind == k; }
  Val viewed(View v, int64_t g = 0) const {
    Val r = *this;
    r.view = v;
    r.groups = g;
    return r;
  }
};

// How a view reads in messages ("a channels-last [N, H, W, C] view").
std::string view_name(Val::View view);
// The per-sample dims (no batch) of the TorchScript tensor `v` stands for, given the dims of its
// IR value: the view's own order.
std::vector<int64_t> viewed_dims(const Val& v, const std::vector<int64_t>& dims);

// Where a TorchScript node comes from: the innermost module whose code it is, and the most
// useful source position (the innermost one outside PyTorch's own Python files).
struct Origin {
  std::string module_path;  // "layer3.4.conv2"; "" for the top-level module
  bool leaf = false;        // that module has no submodules (ReLU, Conv2d, ...)
  SourceLoc loc;
};

class Translator;

// What an op handler (aten_ops.cpp) sees of one node: typed readers of its inputs that record
// an "unsupported use" and return nullopt when an input is not what zoc can map, and emitters.
class OpContext {
 public:
  OpContext(Translator& t, jit::Node* n) : t_(t), n_(n) {}

  jit::Node* node() const { return n_; }
  size_t num_inputs() const { return n_->inputs().size(); }
  const Val& in(size_t i) const;
  bool none(size_t i) const;

  // An activation that is not a view (Val::View), or nullopt after a failure.
  std::optional<ir::ValueId> tensor(size_t i);
  // An activation, viewed or not, for the handlers that follow views.
  const Val* activation(size_t i);
  const Val* param(size_t i);  // a parameter or buffer of the module
  // The layer a parameter belongs to: "conv1" for "conv1.weight" when `suffix` is "weight".
  std::optional<std::string> layer_of(const Val& p, const char* suffix);
  // Input i is None (if allowed) or the parameter `layer.suffix`; true if it is the parameter.
  std::optional<bool> optional_param(size_t i, const std::string& layer, const char* suffix);
  std::optional<int64_t> i(size_t i);
  std::optional<double> f(size_t i);
  std::optional<bool> b(size_t i);
  std::optional<std::string> str(size_t i);
  // An int list; a single int counts as a one-element list. kBatch items become kBatchDim.
  std::optional<std::vector<int64_t>> ints(size_t i, bool allow_batch = false);
  static constexpr int64_t kBatchDim = INT64_MIN;
  // A [h, w] pair from a list of one or two ints.
  std::optional<ir::Pair> pair(size_t i, const char* what);
  // Per-sample dims of an activation (no batch); nullptr after a shape error was reported.
  const std::vector<int64_t>* dims(ir::ValueId v);
  // TorchScript uses of input i (for fusing a bias add into a preceding matmul).
  size_t uses_of_input(size_t i) const { return n_->input(i)->uses().size(); }
  ir::Node& producer(ir::ValueId v);

  // Records why this use of the op is unsupported; always returns false.
  bool fail(const std::string& why);
  // Appends an IR node. `layer` names a layer with parameters; a layer that ran before (a module
  // called twice) gets a fresh name and reads the first call's tensors (ir::Node::weights_of).
  // Without it the node gets a name from its module path.
  std::optional<ir::ValueId> emit(ir::OpKind op, std::vector<ir::ValueId> inputs, ir::Attrs attrs,
                                  const std::string* layer = nullptr);
  void result(Val v, size_t output = 0);
  bool result_tensor(ir::ValueId v) {
    result(Val::activation(v));
    return true;
  }
  // v seen through the view of `as` (an op that keeps its input's layout: an activation's result
  // is as permuted as its input).
  bool result_like(ir::ValueId v, const Val& as) {
    result(Val::activation(v).viewed(as.view, as.groups));
    return true;
  }

 private:
  Translator& t_;
  jit::Node* n_;
  bool failed_ = false;  // one reason per node is enough
};

// Constant folding's limits and allow-list (fold_policy.cpp says why and where the list comes
// from). Sizes count string and tensor data bytes and 8 bytes per number and per item.
inline constexpr uint64_t kMaxFoldedValueBytes = uint64_t{1} << 20;    // any one value
inline constexpr uint64_t kMaxFoldedTotalBytes = uint64_t{256} << 20;  // all, per translation
inline constexpr size_t kMaxFoldedDepth = 100;                         // nesting of a value
inline constexpr int64_t kMaxFoldedTensorElements = 1024;  // tensors folding computes with

struct FoldSize {
  uint64_t bytes = 0;  // stops growing once past kMaxFoldedValueBytes
  bool too_deep = false;
};
// The size of `v`, counting its tensors' data only if `tensor_data` (values that are moved around
// or whose sizes are read cost no copy of their data).
FoldSize measure_value(const c10::IValue& v, bool tensor_data);

struct FoldVerdict {
  enum Kind { kAllowed, kNotPure, kTooLarge } kind = kAllowed;
  std::string why;           // kNotPure: why it is not evaluated; kTooLarge: what it would give
  bool tensor_data = false;  // kAllowed: the op computes with tensor data (count it)
};
// Whether node `n` may be evaluated on the constants `args` (its inputs, in order).
FoldVerdict check_fold(jit::Node* n, const std::vector<c10::IValue>& args);
// Whether a TorchScript type is or holds a tensor.
bool holds_tensor(const c10::TypePtr& t);
// LibTorch's message `text` made printable, its INTERNAL ASSERT wording (a request to report a
// LibTorch bug, with a path into LibTorch's sources) replaced by what it means (module.cpp).
std::string readable_libtorch_text(const std::string& text);
// Puts LibTorch's string operators whose result can outgrow their inputs behind zoc's size
// check, once per process, before any model is compiled (fold_policy.cpp says why).
void guard_libtorch_string_ops();

// An op handler: maps one ATen node to IR nodes and sets its results; false after fail().
using Handler = bool (*)(OpContext&);
// The handler for an op kind ("aten::conv2d"), or nullptr if zoc does not map it.
Handler find_handler(c10::Symbol kind);
// The ops with handlers, for messages.
const char* mapped_ops_summary();
// The CNN zoo's handlers (aten_zoo_ops.cpp), which find_handler also consults.
const std::map<std::string, Handler>& zoo_handlers();
// The handlers of issues 36 and 37 (aten_dense_ops.cpp), which find_handler consults first;
// base_handler is the one of aten_ops.cpp or aten_zoo_ops.cpp they hand other uses to.
const std::map<std::string, Handler>& dense_handlers();
Handler base_handler(c10::Symbol kind);
// ECA attention's handlers (aten_eca_ops.cpp), consulted before all others; dense_handler is the
// one they hand other uses to (aten_dense_ops.cpp's, else base_handler).
const std::map<std::string, Handler>& eca_handlers();
Handler dense_handler(c10::Symbol kind);
// Split attention's handlers (aten_radix_ops.cpp), consulted before ECA's; eca_handler is the
// one they hand other uses to (aten_eca_ops.cpp's, else dense_handler).
const std::map<std::string, Handler>& radix_handlers();
Handler eca_handler(c10::Symbol kind);
// Activations through aten::permute / aten::transpose / aten::view / aten::reshape (the
// channels-last and channel-shuffle views, aten_zoo_ops.cpp): aten_ops.cpp hands these ops to
// them when their input is an activation (permute, transpose) or one that is or becomes a view
// (view/reshape of a view, or to 5-D: `shape` with the batch as OpContext::kBatchDim).
bool permute_activation(OpContext& c);
bool transpose_activation(OpContext& c);
bool view_activation(OpContext& c, const Val& x, const std::vector<int64_t>& shape);
// nn.Linear on a channels-last image x (ConvNeXt's), with weight w: a 1x1 convolution.
bool pixel_linear(OpContext& c, const Val& x, const Val& w);

ir::AttrValue int_attr(int64_t v);
ir::AttrValue bool_attr(bool v);
ir::AttrValue float_attr(double v);
ir::AttrValue pair_attr(ir::Pair p);

// A module path and an attribute: "layer1.0" and "conv1" give "layer1.0.conv1"; the root is "".
inline std::string join_path(const std::string& a, const std::string& b) {
  return a.empty() ? b : a + "." + b;
}

// Runs a module's `forward` symbolically on an input of known shape and builds the IR graph.
class Translator {
 public:
  Translator(const jit::Module& root, const std::string& path, const Options& options,
             Diagnostics& diags);
  // The graph, or false after reporting errors.
  bool run(ir::Graph& out);
  // Whether the code read a module's `training` flag as true (a model saved in training mode).
  bool read_training() const { return read_training_; }

 private:
  friend class OpContext;
  struct Frame {
    std::string module_path;
    bool leaf = false;
    jit::SourceRange call_site;  // empty for the root
  };
  struct Problem {
    std::string what;
    Origin origin;
    bool on_numbers = false;  // the op reads no tensor (arithmetic on sizes and counts)
  };

  void run_graph(jit::Graph& graph, std::vector<Val> args, const Frame& frame,
                 std::vector<Val>& results);
  // A tuple of the output and auxiliary heads becomes its first item, with a note.
  void take_main_output(Val& result, const SourceLoc& at);
  void run_block(jit::Block* block);
  void step(jit::Node* n);
  bool structural(jit::Node* n);  // lists, sizes, None checks, casts with non-constant parts
  bool fold_container(jit::Node* n, const std::vector<Val>& in);
  bool fold(jit::Node* n);  // runs a node on constant inputs with LibTorch's own kernel
  // Counts a folded value against the limits; false after reporting it past them.
  bool charge_folded(jit::Node* n, const c10::IValue& v, const char* role, bool tensor_data);
  bool charge_folded_items(jit::Node* n, size_t items);  // lists of non-constant values
  void get_attr(jit::Node* n);
  void call(jit::Node* n, bool method);
  void run_if(jit::Node* n);
  void run_loop(jit::Node* n);
  void run_op(jit::Node* n);

  const Val& get(jit::Value* v);
  void set(jit::Value* v, Val val) { env_[v] = std::move(val); }

  // Mutation semantics (aliasing.cpp says why): every tensor belongs to a storage, every list is
  // an object, and a value is brought up to date with the writes since it was made when it is
  // read.
  struct Storage {
    ir::ValueId base = ir::kNoValue;  // the content, in the layout of its whole (underived) views
    uint32_t version = 0;             // writes so far
    std::string written_by;           // the last write: "aten::relu_ at model.py:8:9"
    std::string lost_by;              // set once a write through a derived view changed it
  };
  struct ViewObject {
    ir::ValueId id = ir::kNoValue;  // its content as of `version`
    uint32_t version = 0;
    std::string made_by;  // "aten::flatten at model.py:7:13"
  };
  struct ListObject {
    std::vector<Val> items;
    uint32_t version = 0;
    std::vector<std::string> keys;  // a dict's
  };
  void new_storage(Val& v);
  bool refresh(Val& v, std::string& why);
  bool refresh_inputs(jit::Node* n);
  bool refresh_value(jit::Value* v, jit::Node* at);  // a block's or graph's output
  void track_mutation(jit::Node* n);
  bool apply_write(jit::Node* n, size_t input, size_t output);
  void classify_result(jit::Node* n, Val& r, std::optional<size_t> source, bool definite);
  void register_lists(jit::Node* n);
  bool append_to_list(jit::Node* n, const Val& list, const Val& item);
  // Dicts of tensors (dicts.cpp): true if node n is a dict op it handled (or refused).
  bool dict_op(jit::Node* n, const std::vector<Val>& in);
  bool new_dict(jit::Node* n, const std::vector<Val>& in);
  bool read_dict(jit::Node* n, const std::vector<Val>& in);
  bool write_dict(jit::Node* n, const std::vector<Val>& in);
  // A dict returned by forward: its values become the graph's outputs, in insertion order.
  bool dict_outputs(const Val& dict, const SourceLoc& at);
  std::string where(jit::Node* n) const;
  void poison_outputs(jit::Node* n);
  Origin origin(jit::Node* n) const;
  std::optional<SourceLoc> to_loc(const jit::SourceRange& r) const;
  void unsupported(jit::Node* n, const std::string& why);
  void not_folded(jit::Node* n, const std::string& why);  // listed with the unsupported ops
  void error(jit::Node* n, const std::string& message);   // a fatal, located error
  bool is_leaf(const c10::IValue& module) const;
  std::string fresh_name(const Origin& o, ir::OpKind op) const;
  const std::vector<int64_t>* dims(ir::ValueId v);
  void check_parameters();
  void report_problems(const SourceLoc& at);  // one error listing every unsupported operation

  jit::Module root_;
  std::string path_;
  const Options& options_;
  Diagnostics& diags_;
  ir::Graph graph_;
  std::unordered_map<const jit::Value*, Val> env_;
  std::vector<Frame> frames_;
  std::vector<Problem> problems_;
  std::set<std::string> used_names_;
  std::set<std::string> reserved_names_;     // layers that own state_dict tensors, and "input"
  std::map<std::string, at::Tensor> state_;  // state_dict name -> tensor
  std::set<std::string> frozen_;             // parameters with requires_grad=False
  std::vector<Storage> storages_;
  std::vector<ViewObject> objects_;
  std::vector<ListObject> lists_;
  // Constant lists that an activation was appended to: every holder of the constant now reads
  // the list object (key: the list's LibTorch object, kept alive here).
  std::unordered_map<const void*, std::pair<c10::IValue, int32_t>> converted_lists_;
  std::set<std::string> stale_reported_;  // one refusal per stale view
  int64_t steps_ = 0;
  uint64_t folded_bytes_ = 0;  // all values folding took and gave (kMaxFoldedTotalBytes)
  bool fatal_ = false;
  bool read_training_ = false;
};

}  // namespace zoc::torchscript::detail
