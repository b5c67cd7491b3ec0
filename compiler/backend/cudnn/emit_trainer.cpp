// The trainer emitter (issue 8, as a lowering of the IR since issue 18): a model as the frontend
// wrote it becomes its training graph (passes/build_training_graph.cpp: training-mode forward,
// loss, backward, SGD), whose memory is planned by the one planner inference uses and whose
// nodes go through the emitter's one per-op switch (emit_layer). The result is a trainer class
// deriving zoc::Trainer (runtime/zoc/train/trainer.h), fp32 with TF32 off (or on), or bf16 or
// fp16 mixed precision (mark_half below; fp16 with dynamic loss scaling), that holds only the
// model: its parameter table, its memory plan, one constant per node and two layer sequences,
// forward (input to logits) and backward (the loss, then every backward node); the graph's sgd
// nodes are one launch over the trainable parameters, which lie together at the front of
// params(). Parameters, their gradients and momenta share PyTorch's layout (KCRS weights,
// [out, in] matrices), so that checkpoints are plain state_dicts: each parameter's gradient
// value is pinned at its parameter's offset of grads(). Activations and their gradients share
// one arena by lifetime; BatchNorm's saved statistics and the loss lie in a fixed region.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/backend/cudnn/emit_snippet.h"
#include "compiler/backend/cudnn/train_emitter.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/lower_to_target.h"
#include "compiler/passes/pipeline.h"
#include "compiler/support/sanitize.h"
#include "compiler/weights/weights.h"
#include "zoc/weights/init.h"

namespace zoc::cudnn {

std::string train_tensor(const EmitContext& ctx, ir::ValueId v) {
  const lower::MemoryPlan::Slot& slot = ctx.train->plan.slots[static_cast<size_t>(v)];
  const ir::ValueId root = slot.alias_of == ir::kNoValue ? v : slot.alias_of;
  const lower::MemoryPlan::Slot& r = ctx.train->plan.slots[static_cast<size_t>(root)];
  if (r.pinned) {  // a parameter's gradient (grad.<name>) or its update (updated.<name>)
    const std::string& name = ctx.g.value_name(root);
    const std::string param = name.substr(name.find('.') + 1);
    return "kP_" + ctx.train->params[ctx.train->param_index.at(param)].id;
  }
  return (r.fixed ? "kF_" : "kA_") + ctx.train->value_ids[static_cast<size_t>(root)];
}

namespace {

// Parameters in PyTorch's layout: trainable tensors first, then the running statistics and
// frozen parameters, each group in model order, so that SGD is one launch over
// [0, trainable_elements). A mixed trainer starts every tensor at a multiple of 16 floats (64
// bytes; the gaps stay zero): cuDNN's NHWC batch norm kernels load its statistics as vectors, and
// its convolutions their weights' copies.
void plan_params(const ir::Graph& model, TrainInfo& info) {
  std::set<std::string> ids;
  for (const ir::Node& n : model.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      if (p.dtype != ir::DType::F32 || info.param_index.count(p.name)) continue;
      const InitChoice init = init_choice(n, p);
      ParamSlot s{p.name,      sanitize_identifier(p.name), 0,       1, p.shape,
                  p.trainable, init_rule_cpp(init.rule),    init.fan};
      s.trainable = p.trainable && !p.frozen;  // a frozen one lies with the running statistics
      for (int k = 2; !ids.insert(s.id).second; ++k) {
        s.id = fmt::format("{}_{}", sanitize_identifier(p.name), k);
      }
      for (int64_t d : p.shape) s.count *= d;
      info.param_index[p.name] = info.params.size();
      info.params.push_back(s);
      info.param_elements += s.count;
      if (s.trainable) info.trainable_elements += s.count;
    }
  }
  const int64_t align = info.mixed() ? 16 : 1;
  auto aligned = [&](int64_t x) { return (x + align - 1) / align * align; };
  if (info.mixed()) {  // the trainable region's end, then each state tensor's start, aligned
    int64_t end = 0;
    for (const ParamSlot& s : info.params) end = s.trainable ? aligned(end) + s.count : end;
    info.trainable_elements = aligned(end);
  }
  int64_t next_trainable = 0, next_state = info.trainable_elements;
  for (ParamSlot& s : info.params) {
    int64_t& next = s.trainable ? next_trainable : next_state;
    s.offset = aligned(next);
    next = s.offset + s.count;
  }
  if (info.mixed()) info.param_elements = aligned(next_state);
}

// Value identifiers, readers and node indices of the training graph.
void index_graph(const ir::Graph& g, TrainInfo& info) {
  std::set<std::string> used;
  info.value_ids.resize(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    const std::string base = sanitize_identifier(g.value_name(static_cast<ir::ValueId>(v)));
    std::string id = base;
    for (int k = 2; !used.insert(id).second; ++k) id = fmt::format("{}_{}", base, k);
    info.value_ids[v] = id;
  }
  info.readers.assign(g.values.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    info.node_index[g.nodes[k].name] = k;
    for (ir::ValueId v : g.nodes[k].inputs) ++info.readers[static_cast<size_t>(v)];
  }
}

// The node that writes value v (null: none).
const ir::Node* producer(const ir::Graph& g, ir::ValueId v) {
  const int32_t k = g.values[static_cast<size_t>(v)].producer;
  return k < 0 ? nullptr : &g.nodes[static_cast<size_t>(k)];
}

// A flatten of a value with more than one pixel per channel.
bool flattens_pixels(const ir::Graph& g, const ir::Node& flatten) {
  const std::vector<int64_t>& d = g.type(flatten.inputs[0]).dims;
  return d.size() >= 3 && d[1] * d[2] > 1;
}

// Mixed precision (--precision bf16 or fp16, issue 38), as PyTorch's autocast: every batched
// float value of the training graph (activations and their gradients) is stored in `half`
// (BF16 or F16), but the logits, which the last linear layer writes in fp32 for the loss
// (autocast rounds them first: zoc's are the more exact); parameters, their gradients,
// BatchNorm's statistics and the loss stay fp32. The ops the mixed trainer runs are checked
// here: the rest are refused by name. Returns the largest convolution weight (elements), whose
// half-precision gradient needs a scratch buffer.
std::optional<int64_t> mark_half(ir::Graph& g, ir::DType half, Diagnostics& diags) {
  const char* name = half == ir::DType::BF16 ? "bf16" : "fp16";
  ir::ValueId logits = ir::kNoValue;
  for (const ir::Node& n : g.nodes) {
    if (n.op == ir::OpKind::SoftmaxCrossEntropy) logits = n.inputs[0];
  }
  int64_t largest = 0;
  bool ok = true;
  for (const ir::Node& n : g.nodes) {
    // A backward node is refused where its layer is (its own error would repeat the layer's).
    if (!n.origin.empty()) continue;
    std::string why;
    switch (n.op) {
#define ZOC_ACTIVATION(op, grad, math) \
  case ir::OpKind::op:                 \
  case ir::OpKind::grad:
#include "compiler/ir/ops.def"
      case ir::OpKind::Input:
      case ir::OpKind::Labels:
      case ir::OpKind::Conv2dGrad:
      case ir::OpKind::BatchNorm2dGrad:
      case ir::OpKind::Flatten:
      case ir::OpKind::FlattenGrad:
      case ir::OpKind::Dropout:
      case ir::OpKind::DropoutGrad:
      case ir::OpKind::LinearGrad:
      case ir::OpKind::SoftmaxCrossEntropy:
      case ir::OpKind::Sgd:
        break;
      case ir::OpKind::Add:
        if (n.inputs.size() == 1) why = "an add of a constant";
        break;
      case ir::OpKind::Conv2d:
        if (n.attrs.b("bias")) why = "a convolution with a bias";
        for (const ir::ParamSpec& p : n.params) {
          int64_t count = 1;
          for (int64_t d : p.shape) count *= d;
          if (p.role == ir::ParamRole::kWeight) largest = std::max(largest, count);
        }
        break;
      case ir::OpKind::BatchNorm2d:  // its saved inverse deviations follow C means: 16-byte
        if (g.type(n.output).dims[0] % 4 != 0) {  // aligned for cuDNN's NHWC kernels
          why = "a batch norm over a channel count that is not a multiple of 4";
        }
        break;
      case ir::OpKind::Linear:
        if (n.output != logits) {
          why = "a linear layer other than the last";
        } else if (const ir::Node* in = producer(g, n.inputs[0]);
                   in && in->op == ir::OpKind::Flatten && flattens_pixels(g, *in)) {
          // NHWC rows are (h, w, c) ordered; the weight's columns are PyTorch's (c, h, w)
          why = "a linear layer on a flattened activation larger than 1x1";
        }
        break;
      case ir::OpKind::GlobalAvgPool:
      case ir::OpKind::MaxPool2d:
      case ir::OpKind::AvgPool2d:
      case ir::OpKind::MaxPool2dGrad:
      case ir::OpKind::AvgPool2dGrad:
      case ir::OpKind::GlobalAvgPoolGrad:
        if (lower::pool_needs_kernel(n)) why = "pooling that cuDNN cannot express";
        break;
      default:
        why = fmt::format("the op {}", ir::op_info(n.op).name);
    }
    if (why.empty()) continue;
    diags.error(n.loc, fmt::format("layer '{}': {} training does not support {} yet (fp32 and "
                                   "tf32 do)",
                                   shown_text(n.name), name, why));
    ok = false;
  }
  const ir::Node* last = logits == ir::kNoValue ? nullptr : producer(g, logits);
  if (last && last->op != ir::OpKind::Linear) {  // the loss reads fp32 logits
    diags.error(last->loc, fmt::format("layer '{}': {} training needs the logits written by a "
                                       "linear layer, not by {} (fp32 and tf32 train it)",
                                       shown_text(last->name), name, ir::op_info(last->op).name));
    ok = false;
  }
  if (!ok) return std::nullopt;
  for (size_t v = 0; v < g.values.size(); ++v) {
    std::optional<ir::TensorType>& t = g.values[v].type;
    if (t && t->batched && t->dtype == ir::DType::F32 && static_cast<ir::ValueId>(v) != logits) {
      t->dtype = half;
    }
  }
  return largest;
}

// cuDNN's BatchNorm backward writes dgamma and dbeta in one call, wanted or not: a BatchNorm
// whose gamma or beta has no gradient (frozen) writes both to a discard buffer of two halves,
// each as wide as the widest such C rounded up to 16 floats (64 bytes, as every tensor of the
// trainer's layout: NHWC kernels load vectors). The runtime puts dbeta at the second half.
int64_t grad_discard_elements(const ir::Graph& g) {
  int64_t most = 0;
  for (const ir::Node& n : g.nodes) {
    if (n.op != ir::OpKind::BatchNorm2dGrad) continue;
    const ir::ParamSpec* gamma = snippet::param(n, ir::ParamRole::kBnWeight);
    const ir::ParamSpec* beta = snippet::param(n, ir::ParamRole::kBnBias);
    const auto trains = [](const ir::ParamSpec* p) { return p && p->trainable && !p->frozen; };
    if (trains(gamma) && trains(beta)) continue;
    most = std::max(most, 2 * ((g.type(n.inputs[0]).dims.at(0) + 15) / 16 * 16));
  }
  return most;
}

// An add whose sum only the next node reads, an activation (as its input) or an activation's
// gradient (as its dy), is done by that node (ActivationTrainCall's x2, ActivationGradCall's
// dy2): the sum is never stored and read back. ResNet-50: each residual add, and each sum of a
// block input's two gradients before the previous block's ReLU.
void plan_add_fusions(const ir::Graph& g, TrainInfo& info) {
  std::vector<bool> is_output(g.values.size(), false);
  for (ir::ValueId v : g.outputs) is_output[static_cast<size_t>(v)] = true;
  for (size_t k = 0; k + 1 < g.nodes.size(); ++k) {
    const ir::Node& add = g.nodes[k];
    const ir::Node& next = g.nodes[k + 1];
    if (add.op != ir::OpKind::Add || add.inputs.size() != 2 || !add.extra_outputs.empty() ||
        info.readers[static_cast<size_t>(add.output)] != 1 ||
        is_output[static_cast<size_t>(add.output)]) {
      continue;
    }
    const std::vector<int64_t>& dims = g.type(add.output).dims;
    if (g.type(add.inputs[0]).dims != dims || g.type(add.inputs[1]).dims != dims) continue;
    bool fits = false;
    switch (next.op) {
#define ZOC_ACTIVATION(op, grad, math)                              \
  case ir::OpKind::op:                                              \
    fits = next.inputs[0] == add.output;                            \
    break;                                                          \
  case ir::OpKind::grad:                                            \
    fits = next.inputs.size() == 2 && next.inputs[1] == add.output; \
    break;
#include "compiler/ir/ops.def"
      default:
        break;
    }
    if (fits) info.add_into[k + 1] = k;
  }
}

// The memory plan: every parameter's gradient (and update) pinned at its parameter's offset; an
// add's inputs live until the activation that adds them (plan_add_fusions).
lower::MemoryPlan plan_training_memory(const ir::Graph& g, const TrainInfo& info) {
  lower::MemoryPlanOptions o;
  for (const auto& [act, add] : info.add_into) {
    for (ir::ValueId v : g.nodes[add].inputs) o.live_until.emplace_back(v, int64_t(act));
    o.unstored.insert(g.nodes[add].output);  // the sum is never written
  }
  o.element_bytes = 4;
  o.external_input = false;  // copied into the arena: a captured step binds fixed pointers
  for (size_t v = 0; v < g.values.size(); ++v) {
    const std::string& name = g.value_name(static_cast<ir::ValueId>(v));
    for (const char* prefix : {"grad.", "updated."}) {
      const size_t len = std::string(prefix).size();
      if (name.compare(0, len, prefix) != 0) continue;
      auto it = info.param_index.find(name.substr(len));
      if (it != info.param_index.end()) {
        o.pinned[static_cast<ir::ValueId>(v)] = info.params[it->second].offset * 4;
      }
    }
  }
  return lower::plan_memory(g, o);
}

// Emits every node but the sgd ones (sgd() runs them all at once) and the adds an activation
// does (plan_add_fusions): the forward sequence until
// the loss, the backward one from it, with data-parallel bucket hooks after the node that
// completes each bucket, and the in-backward SGD's hooks around each node writing gradients.
bool emit_nodes(EmitContext& ctx, CodeWriter* forward, CodeWriter* backward) {
  bool ok = true, in_backward = false;
  std::vector<const GradUpdate*> update_of(ctx.g.nodes.size(), nullptr);
  for (const GradUpdate& u : ctx.train->updates) update_of[u.node] = &u;
  for (size_t k = 0; k < ctx.g.nodes.size(); ++k) {
    const ir::Node& n = ctx.g.nodes[k];
    if (n.op == ir::OpKind::Sgd) continue;
    if (ctx.train->add_into.count(k + 1) && ctx.train->add_into.at(k + 1) == k) continue;
    if (n.op == ir::OpKind::SoftmaxCrossEntropy && !in_backward) {
      *forward = std::move(ctx.s.layers);
      ctx.s.layers = CodeWriter(CodeWriter::kMaxColumns - 2);
      in_backward = true;
    }
    const GradUpdate* update = update_of[k];
    if (update) {
      ctx.s.layers.line("ZOC_TRY(v.grads_to({}));  // its gradients: in-backward SGD's window",
                        update->origin);
    }
    ok = emit_train_layer(ctx, n) && ok;
    for (size_t r = 0; update && r < update->runs.size(); ++r) {
      ctx.s.layers.line("ZOC_TRY(v.grads_ready({}, {}));  // final: in-backward SGD",
                        update->runs[r].first, update->runs[r].second);
    }
    for (size_t b = 0; b < ctx.train->buckets.size(); ++b) {
      const GradBucket& bucket = ctx.train->buckets[b];
      if (bucket.last_node != k) continue;
      ctx.s.layers.line("ZOC_TRY(v.bucket_ready({}, {}, {}));  // complete: average", b,
                        bucket.offset, bucket.count);
    }
  }
  *backward = std::move(ctx.s.layers);
  return ok;
}

// <model>_train.h: the trainer class.
std::string trainer_header(const EmitContext& ctx, const std::string& head, const std::string& cls,
                           ir::ValueId input, ir::ValueId logits, ir::ValueId loss) {
  const TrainInfo& info = *ctx.train;
  const auto& in = ctx.g.type(input).dims;
  CodeWriter h;
  h.raw_line(head);
  const bool tf32 = info.tf32;
  h.line("// {}: training model '{}' on the GPU, {}; what every trainer shares", cls,
         sanitize_comment(ctx.g.name),
         info.mixed() ? fmt::format("{} mixed precision (fp32 weights{})", info.storage_name(),
                                    info.storage == ir::DType::F16 ? ", dynamic loss scaling" : "")
                      : fmt::format("fp32 (TF32 {})", tf32 ? "on" : "off"));
  h.line("// (create, step, sgd, evaluate, metrics) is zoc/train/trainer.h.");
  h.line("#pragma once");
  h.blank();
  h.line("#include <cstddef>");
  h.line("#include <cstdint>");
  h.blank();
  h.line("#include \"zoc/train/trainer.h\"");
  h.blank();
  {
    auto ns = h.ns("namespace zoc_model", "}  // namespace zoc_model");
    auto c = h.block(fmt::format("class {0} : public zoc::Trainer<{0}>", cls), "};");
    h.access("public:");
    h.line("static constexpr const char* kModelName = \"{}\";", sanitize_comment(ctx.g.name));
    h.line("static constexpr const char* kClassName = \"{}\";", cls);
    h.line("static constexpr int kInputC = {}, kInputH = {}, kInputW = {}, kClasses = {};", in[0],
           in[1], in[2], ctx.g.type(logits).dims[0]);
    h.line("using Param = zoc::train::Param;");
    h.line("static constexpr int kNumParams = {};", info.params.size());
    h.line("static constexpr size_t kParamElements = {};", info.param_elements);
    h.line(
        "// The trainable parameters come first: [0, kTrainableElements) of params() and grads().");
    h.line("static constexpr size_t kTrainableElements = {};", info.trainable_elements);
    h.line("static const Param kParamTable[kNumParams];");
    h.line(
        "// BatchNorm's num_batches_tracked names (int64 scalars in a state_dict), nullptr-ended.");
    h.line("static const char* const kCounterNames[];");
    h.line("// Gradient buckets of data-parallel training (zoc/train/dist.h), in the order the");
    h.line("// backward pass completes them: [offset, offset + count) floats of grads().");
    h.line("using Bucket = zoc::train::Bucket;");
    h.line("static constexpr int kBuckets = {};", info.buckets.size());
    h.line("static const Bucket kBucketTable[kBuckets];");
    h.comment(fmt::format("The training graph's memory plan: {}.", info.plan.summary()));
    h.line("static constexpr size_t kArenaBytesPerSample = {};", info.plan.arena_bytes_per_sample);
    h.line("static constexpr size_t kFixedBytes = {};", info.plan.fixed_bytes);
    h.line("static constexpr size_t kLogits = {};  // the logits, per sample in the arena",
           info.plan.slots[static_cast<size_t>(logits)].offset);
    h.line("static constexpr size_t kLoss = {};    // the mean loss, in the fixed region",
           info.plan.slots[static_cast<size_t>(loss)].offset);
    bool dropout = false;
    for (const ir::Node& n : ctx.g.nodes) dropout = dropout || n.op == ir::OpKind::Dropout;
    h.line("static constexpr bool kHasDropout = {};", dropout ? "true" : "false");
    h.line("// cuDNN and cuBLAS may round fp32 operands to TF32 (--precision tf32).");
    h.line("static constexpr bool kTF32 = {};", tf32 ? "true" : "false");
    h.line(
        "// Mixed precision (--precision bf16 or fp16): activations and their gradients bf16 or");
    h.line("// fp16 NHWC, a copy of each weight per step, fp32 weights, gradients and optimizer");
    h.line("// state; fp16 scales the loss (zoc::trainer_kernels::LossScale).");
    h.line("static constexpr bool kBF16 = {};", info.storage == ir::DType::BF16 ? "true" : "false");
    h.line("static constexpr bool kFP16 = {};", info.storage == ir::DType::F16 ? "true" : "false");
    h.line("static constexpr size_t kGradScratchElements = {};  // the largest conv weight",
           info.grad_scratch_elements);
    h.line("// cuDNN writes a BatchNorm's dgamma and dbeta together: a frozen one's go here.");
    h.line("static constexpr size_t kGradDiscardElements = {};", info.grad_discard_elements);
    h.line(
        "// SGD inside the backward pass (use_fused_sgd): the gradients of one node at a time, in");
    h.line("// a window of this many floats instead of a buffer for all (0: not for this graph).");
    h.line("static constexpr size_t kGradWindowElements = {};", info.grad_window_elements);
    h.blank();
    h.line("~{}() {{ release(); }}", cls);
    h.blank();
    h.access("private:");
    h.line("friend class zoc::Trainer<{}>;", cls);
    h.line("{}() = default;", cls);
    h.line("// The training graph as two layer sequences (the .cpp), walked by the steps of");
    h.line("// zoc/train_layers/steps.h: input to logits, then the loss and every backward node.");
    h.line("template <class V>");
    h.line("zoc::Status forward_layers(V& v);");
    h.line("template <class V>");
    h.line("zoc::Status backward_layers(V& v);");
    h.blank();
    h.line("// One descriptor bundle per layer that needs one (its backward node uses it too).");
    h.append(ctx.s.members);
  }
  h.blank();
  h.line("extern template class zoc::Trainer<zoc_model::{}>;", cls);
  return h.str();
}

// The parameter, counter and bucket tables.
void trainer_tables(const EmitContext& ctx, const ir::Graph& model, const std::string& cls,
                    CodeWriter& c) {
  const TrainInfo& info = *ctx.train;
  c.line("const {0}::Param {0}::kParamTable[{0}::kNumParams] = {{", cls);
  for (const ParamSlot& p : info.params) {
    std::string shape;
    for (size_t k = 0; k < 4; ++k) {
      shape += (k ? ", " : "") + std::to_string(k < p.shape.size() ? p.shape[k] : 0);
    }
    c.line("    {{\"{}\", {}, {}, {}, {{{}}}, {}, {}, {}}},", sanitize_comment(p.name), p.offset,
           p.count, p.shape.size(), shape, p.trainable ? "true" : "false", p.rule, p.fan);
  }
  c.line("}};");
  c.line("const char* const {}::kCounterNames[] = {{", cls);
  for (const ir::Node& n : model.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      if (p.dtype != ir::DType::F32) c.line("    \"{}\",", sanitize_comment(p.name));
    }
  }
  c.line("    nullptr,");
  c.line("}};");
  c.line("const {0}::Bucket {0}::kBucketTable[{0}::kBuckets] = {{", cls);
  for (const GradBucket& b : info.buckets) c.line("    {{{}, {}}},", b.offset, b.count);
  c.line("}};");
}

// <model>_train.cpp: parameter offsets, the memory plan, each node's constant, the tables and
// the two layer sequences.
std::string trainer_source(const EmitContext& ctx, const ir::Graph& model, const std::string& head,
                           const std::string& cls, const std::string& base,
                           const CodeWriter& forward, const CodeWriter& backward) {
  const TrainInfo& info = *ctx.train;
  CodeWriter c;
  c.raw_line(head);
  c.line("// {}: the trainer's constants and its training graph's layer sequences.", base);
  c.line("#include \"{}.h\"", base);
  c.blank();
  {
    auto ns = c.ns("namespace zoc_model", "}  // namespace zoc_model");
    {
      auto anon = c.ns("namespace", "}  // namespace");
      c.line(
          "// Parameters: byte offsets in params(), grads() and the momenta (PyTorch's layout).");
      for (const ParamSlot& p : info.params) {
        c.line("constexpr size_t kP_{} = {};  // {}", p.id, p.offset * 4, sanitize_comment(p.name));
      }
      c.blank();
      c.line("// Activations and their gradients: per-sample byte offsets in the arena (kA_), and");
      c.line(
          "// BatchNorm's saved statistics and the loss: byte offsets in the fixed region (kF_).");
      for (size_t v = 0; v < ctx.g.values.size(); ++v) {
        const lower::MemoryPlan::Slot& s = info.plan.slots[v];
        if (s.alias_of != ir::kNoValue || s.offset < 0 || s.pinned) continue;
        const ir::ValueId id = static_cast<ir::ValueId>(v);
        c.line("constexpr size_t k{}_{} = {};  // %{}: {}", s.fixed ? "F" : "A", info.value_ids[v],
               s.offset, sanitize_comment(ctx.g.value_name(id)), ctx.g.type(id).str());
      }
      c.blank();
      c.line("// Each node's shapes, tensors and parameters (zoc/train_layers/calls.h).");
      c.append(ctx.s.constants);
    }
    c.blank();
    trainer_tables(ctx, model, cls, c);
    c.blank();
    c.line(
        "// The forward pass, input to logits (training mode in step(), evaluation in "
        "evaluate()).");
    {
      auto f =
          c.block(fmt::format("template <class V>\nzoc::Status {}::forward_layers(V& v)", cls));
      c.append(forward);
      c.line("return zoc::Status::success();");
    }
    c.blank();
    c.line("// The loss, then every backward node in reverse order of the layers.");
    {
      auto f =
          c.block(fmt::format("template <class V>\nzoc::Status {}::backward_layers(V& v)", cls));
      c.append(backward);
      c.line("return zoc::Status::success();");
    }
  }
  c.blank();
  c.line("// The shared skeleton and these layer sequences, for every step (zoc/train/trainer.h).");
  c.line("ZOC_TRAINER_INSTANTIATE(zoc_model::{});", cls);
  return c.str();
}

}  // namespace

std::optional<Generated> emit_trainer(const ir::Graph& model, const EmitOptions& options,
                                      Diagnostics& diags) {
  TrainInfo info;
  if (options.precision == Precision::kBF16) info.storage = ir::DType::BF16;
  if (options.precision == Precision::kFP16) info.storage = ir::DType::F16;
  if (options.layout == (info.mixed() ? Layout::kNCHW : Layout::kNHWC)) {
    diags.error(SourceLoc{model.name, 0, 0},
                info.mixed() ? fmt::format("the {} trainer stores activations NHWC: drop --layout "
                                           "nchw",
                                           info.storage_name())
                             : "the fp32 trainer stores activations NCHW: drop --layout nhwc");
    return std::nullopt;
  }
  std::optional<ir::Graph> graph = passes::build_training_graph(model, {}, diags);
  if (!graph) return std::nullopt;
  if (info.mixed()) {
    std::optional<int64_t> largest = mark_half(*graph, info.storage, diags);
    if (!largest) return std::nullopt;
    info.grad_scratch_elements = *largest;
  }
  const ir::Graph& g = *graph;
  info.tf32 = options.precision == Precision::kTF32;
  info.grad_discard_elements = grad_discard_elements(g);
  plan_params(model, info);
  index_graph(g, info);
  plan_add_fusions(g, info);
  info.plan = plan_training_memory(g, info);
  EmitContext ctx{g, target(Precision::kFP32), {}, diags, {}, &info};
  for (const ir::Node& n : g.nodes)
    ctx.ids.push_back(info.value_ids[static_cast<size_t>(n.output)]);
  info.buckets = plan_buckets(g, info);
  // fp16: the loss scale's overflow check reads every gradient before any update.
  if (info.storage != ir::DType::F16) plan_updates(model, g, info);

  CodeWriter forward, backward;
  if (!emit_nodes(ctx, &forward, &backward)) return std::nullopt;
  ir::ValueId input = ir::kNoValue, logits = ir::kNoValue, loss = ir::kNoValue;
  for (const ir::Node& n : g.nodes) {
    if (n.op == ir::OpKind::Input) input = n.output;
    if (n.op == ir::OpKind::SoftmaxCrossEntropy) logits = n.inputs[0], loss = n.extra_outputs[0];
  }

  ir::PrintOptions popts;
  popts.locations = false;
  const uint64_t hash = fnv1a64(ir::print_graph(model, popts));
  const std::string base = sanitize_identifier(model.name) + "_train";
  const std::string cls = class_name_for(model.name) + "Trainer";
  const std::string head = banner(options, model.name + " (trainer)", hash, false);
  Generated gen;
  gen.class_name = cls;
  gen.arena_bytes_per_sample = info.plan.arena_bytes_per_sample;
  gen.unshared_bytes_per_sample = info.plan.unplanned_bytes_per_sample;
  // Weights and momenta, and the gradients' buffer (SGD inside the backward pass, the default
  // of one process: one layer's window).
  const int64_t grads =
      info.grad_window_elements > 0 ? info.grad_window_elements : info.param_elements;
  gen.weight_bytes = (2 * info.param_elements + grads + info.grad_discard_elements) * 4 +
                     (info.mixed() ? 2 * (info.param_elements + info.grad_scratch_elements) : 0);
  gen.files = {{"CMakeLists.txt",
                cmake_lists(banner(options, model.name + " (trainer)", hash, false, "#"), base) +
                    nccl_cmake(base)},
               {base + ".h", trainer_header(ctx, head, cls, input, logits, loss)},
               {base + ".cpp", trainer_source(ctx, model, head, cls, base, forward, backward)},
               {base + "_kernels.cu", trainer_kernels_source(g, head, base, info.storage)},
               {"main.cpp", runner_main(head, base, cls, "train/main.h", "run_train_main")}};
  add_runtime_files(gen.files);
  return gen;
}

}  // namespace zoc::cudnn
