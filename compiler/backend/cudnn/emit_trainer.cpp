// The trainer emitter (issue 8): a graph as the frontend wrote it (BatchNorm not folded) to a
// standalone C++/cuDNN trainer class, fp32 with TF32 off. Its step() is a straight line: every
// layer's training-mode forward call, softmax cross-entropy on the logits, then every layer's
// backward call in reverse order; sgd() is PyTorch's SGD with momentum and weight decay.
//
// evaluate() is the same forward in evaluation mode (running statistics, dropout the identity),
// and metrics() counts the epoch's loss and correct rows on the device.
//
// Memory is static: one buffer per value (all kept for the backward pass; Flatten aliases its
// input); gradients in a second arena planned by their lives in the backward pass
// (plan_gradients: backward calls add into an input's gradient, so a value with several users
// collects each contribution, and each is zeroed just before its first), and parameters, their gradients and momenta in three buffers of one layout,
// PyTorch's (KCRS weights, [out, in] matrices), so that checkpoints are plain state_dicts.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "compiler/backend/cudnn/train_emitter.h"
#include "compiler/ir/printer.h"
#include "compiler/weights/weights.h"
#include "zoc/core/init.h"

namespace zoc::cudnn {
namespace train {

bool TrainerEmitter::plan() {
  if (g_.outputs.size() != 1) {
    diags_.error(SourceLoc{g_.name, 0, 0}, "the trainer needs a model with one output");
    return false;
  }
  alias_.resize(g_.values.size());
  for (size_t v = 0; v < g_.values.size(); ++v) alias_[v] = static_cast<ir::ValueId>(v);
  const ir::Node& last = g_.producer(g_.outputs[0]);
  logits_ = last.op == ir::OpKind::Softmax ? last.inputs[0] : g_.outputs[0];
  if (g_.type(logits_).dims.size() != 1) {
    diags_.error(last.loc, "the trainer needs [classes] logits as the model's output (or a final "
                           "softmax's input)");
    return false;
  }
  classes_ = g_.type(logits_).dims[0];
  // Layer members are <id>_: ids never take the names of the class's own members.
  std::set<std::string> used = {"max_batch", "batch",   "cudnn", "cublas",    "params",
                                "grads",     "momenta", "acts",  "dacts",     "saved",
                                "loss_rows", "loss",    "workspace", "workspace_bytes",
                                "dropout",   "dropout_seed", "draws", "device_bytes"};
  for (const ir::Node& n : g_.nodes) {
    std::string ident = sanitize_identifier(n.name);
    for (int k = 2; !used.insert(ident).second; ++k) {
      ident = fmt::format("{}_{}", sanitize_identifier(n.name), k);
    }
    ids_[&n] = ident;
    if (n.op == ir::OpKind::Input) input_ = n.output;
    if (n.op == ir::OpKind::Flatten) {
      alias_[static_cast<size_t>(n.output)] = alias_[static_cast<size_t>(n.inputs[0])];
    }
    if (&n == &last && n.op == ir::OpKind::Softmax) continue;  // not computed: the loss reads z
    if (alias_[static_cast<size_t>(n.output)] == n.output) {
      act_off_[n.output] = act_per_sample_;
      act_per_sample_ += g_.type(n.output).sample_numel();
    }
    for (const ir::ParamSpec& p : n.params) {
      if (p.dtype != ir::DType::F32) continue;  // num_batches_tracked: counted by the runner
      // Seeded initialization as the model declares it (compiler/weights: init_choice).
      const InitChoice init = init_choice(n, p);
      ParamSlot s{p.name, param_elements_, 1, p.shape, p.trainable, init_rule_cpp(init.rule),
                  init.fan};
      for (int64_t d : p.shape) s.count *= d;
      param_index_[p.name] = params_.size();
      params_.push_back(s);
      param_elements_ += s.count;
      if (s.trainable) trainable_elements_ += s.count;
    }
    if (n.op == ir::OpKind::BatchNorm2d) {
      bn_save_[&n] = bn_save_elements_;
      bn_save_elements_ += 2 * g_.type(n.output).dims[0];
    }
  }
  // Trainable parameters first, then the running statistics, each group in model order: SGD is
  // then one launch over [0, kTrainableElements).
  int64_t next_trainable = 0, next_state = trainable_elements_;
  for (ParamSlot& s : params_) {
    int64_t& next = s.trainable ? next_trainable : next_state;
    s.offset = next;
    next += s.count;
  }
  // Which values need a gradient: those downstream of a parameter (the input's does not).
  needs_grad_.assign(g_.values.size(), false);
  for (const ir::Node& n : g_.nodes) {
    bool any = !n.params.empty();
    for (ir::ValueId v : n.inputs) any = any || needs_grad_[static_cast<size_t>(v)];
    if (n.op != ir::OpKind::Input) needs_grad_[static_cast<size_t>(n.output)] = any;
  }
  plan_gradients();
  plan_buckets();
  return true;
}

// The gradient arena: a value's gradient lives from the backward call that first adds into it
// (backward runs in reverse, so its last consumer's) to the call that reads it (its producer's),
// and values whose lives do not overlap share memory. Each is zeroed just before its first
// contribution, since backward calls add into their inputs' gradients. The logits' gradient is
// written (not added) by the loss, before any backward call.
void TrainerEmitter::plan_gradients() {
  const int64_t count = static_cast<int64_t>(g_.nodes.size());
  auto runs_backward = [&](const ir::Node& n) {
    return n.op != ir::OpKind::Input && n.op != ir::OpKind::Flatten &&
           needs_grad_[static_cast<size_t>(n.output)] &&
           !(n.op == ir::OpKind::Softmax && n.output == g_.outputs[0]);
  };
  struct Life {
    int64_t start = std::numeric_limits<int64_t>::max();  // backward steps: node k runs at
    int64_t end = -2;                                      // step count - 1 - k
  };
  std::map<ir::ValueId, Life> life;  // per root value that some backward call touches
  for (int64_t k = 0; k < count; ++k) {
    const ir::Node& n = g_.nodes[static_cast<size_t>(k)];
    if (!runs_backward(n)) continue;
    const int64_t t = count - 1 - k;
    Life& own = life[root(n.output)];  // read as dy
    own.end = std::max(own.end, t);
    for (ir::ValueId v : n.inputs) {  // written (added into) as dx
      // Convolution, linear, add and dropout skip an input that needs no gradient (the
      // model's input); cuDNN's batch norm, activation and pooling calls always write it.
      const bool always = n.op == ir::OpKind::BatchNorm2d || n.op == ir::OpKind::Relu ||
                          n.op == ir::OpKind::Tanh || n.op == ir::OpKind::Sigmoid ||
                          n.op == ir::OpKind::MaxPool2d || n.op == ir::OpKind::AvgPool2d ||
                          n.op == ir::OpKind::GlobalAvgPool;
      if (!always && !needs_grad_[static_cast<size_t>(v)]) continue;
      Life& in = life[root(v)];
      in.start = std::min(in.start, t);
      in.end = std::max(in.end, t);
    }
  }
  life[root(logits_)].start = -1;  // the loss writes it
  for (auto& [v, l] : life) {
    if (l.start > l.end) l.start = l.end;  // nothing adds into it: zeroed before it is read
  }
  // Place each life, in order of start, at the lowest offset free for its whole span.
  std::vector<std::pair<ir::ValueId, Life>> order(life.begin(), life.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
  struct Placed {
    int64_t offset, size, end;
  };
  std::vector<Placed> placed;
  for (const auto& [v, l] : order) {
    const int64_t size = g_.type(v).sample_numel();
    std::vector<Placed> busy;
    for (const Placed& p : placed) {
      if (p.end >= l.start) busy.push_back(p);
    }
    std::sort(busy.begin(), busy.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    int64_t offset = 0;
    for (const Placed& p : busy) {
      if (offset + size <= p.offset) break;
      offset = std::max(offset, p.offset + p.size);
    }
    placed.push_back({offset, size, l.end});
    grad_off_[v] = offset;
    grad_per_sample_ = std::max(grad_per_sample_, offset + size);
    if (v != root(logits_)) zero_at_[count - 1 - l.start].push_back(v);
  }
}


std::optional<Generated> TrainerEmitter::run() {
  if (!plan()) return std::nullopt;
  bool ok = true;
  for (const ir::Node& n : g_.nodes) {
    forward_ = CodeWriter();
    eval_node_ = CodeWriter();
    eval_only_ = false;
    ok = emit_node(n) && ok;
    train_forward_.append(forward_);
    eval_forward_.append(eval_only_ ? eval_node_ : forward_);
  }
  if (!ok) return std::nullopt;
  for (size_t k = g_.nodes.size(); k-- > 0;) {
    for (ir::ValueId v : zero_at_[static_cast<int64_t>(k)]) {
      backward_.line("ZOC_CUDA(cudaMemsetAsync({}, 0, size_t(n) * {} * sizeof(float), stream), "
                     "\"{}\");  // {}'s output gradient, before its first contribution",
                     D(v), g_.type(v).sample_numel(), sanitize_comment(g_.nodes[k].name),
                     sanitize_comment(g_.producer(v).name));
    }
    emit_backward(g_.nodes[k]);
    emit_bucket_hooks(k);
  }
  backward_.line("if (sync_) ZOC_TRY(sync_->finish(stream));  // every bucket averaged before SGD");

  ir::PrintOptions popts;
  popts.locations = false;
  const uint64_t hash = fnv1a64(ir::print_graph(g_, popts));
  const std::string base = sanitize_identifier(g_.name) + "_train";
  const std::string cls = class_name_for(g_.name) + "Trainer";
  const std::string head = banner(o_, g_.name + " (trainer)", hash);
  const auto& in = g_.type(input_).dims;

  CodeWriter h;
  h.raw_line(head);
  h.line("// {}: one training step of model '{}' on the GPU, fp32 with TF32 off (see", cls,
         sanitize_comment(g_.name));
  h.line("// zoc/train/layers.h). step() runs forward, softmax cross-entropy and backward and");
  h.line("// leaves the loss, logits and parameter gradients on the device; sgd() applies them.");
  h.line("#pragma once");
  h.blank();
  h.line("#include <cublas_v2.h>");
  h.line("#include <cuda_runtime.h>");
  h.line("#include <cudnn.h>");
  h.blank();
  h.line("#include <cstdint>");
  h.line("#include <memory>");
  h.line("#include <string>");
  h.blank();
  h.line("#include \"zoc/core/expected.h\"");
  h.line("#include \"zoc/train/dist.h\"");
  h.line("#include \"zoc/train/layers.h\"");
  h.blank();
  {
    auto ns = h.ns("namespace zoc_model", "}  // namespace zoc_model");
    h.blank();
    auto c = h.block("class " + cls, "};");
    h.access("public:");
    h.line("static constexpr const char* kModelName = \"{}\";", sanitize_comment(g_.name));
    h.line("static constexpr int kInputC = {}, kInputH = {}, kInputW = {}, kClasses = {};", in[0],
           in[1], in[2], classes_);
    h.line("struct Param {{");
    h.line("  const char* name;  // state_dict name");
    h.line("  size_t offset;     // in floats, in params(), grads() and the momenta");
    h.line("  size_t count;");
    h.line("  int rank;");
    h.line("  int64_t shape[4];");
    h.line("  bool trainable;    // false: a BatchNorm running statistic");
    h.line("}};");
    h.line("static constexpr int kNumParams = {};", params_.size());
    h.line("static constexpr size_t kParamElements = {};", param_elements_);
    h.line("// The trainable parameters come first: [0, kTrainableElements) of params() and grads().");
    h.line("static constexpr size_t kTrainableElements = {};", trainable_elements_);
    h.line("static const Param kParamTable[kNumParams];");
    h.line("// BatchNorm's num_batches_tracked names (int64 scalars in a state_dict), nullptr-ended.");
    h.line("static const char* const kCounterNames[];");
    h.blank();
    h.line("// weights: a safetensors file with state_dict names, or empty for PyTorch's default");
    h.line("// initialization drawn with `seed` (zoc/core/init.h). Steps take up to max_batch samples.");
    h.line("// benchmark: pick each convolution's algorithms by timing cuDNN's exact fp32 candidates");
    h.line("// (as cudnn.benchmark), else by cuDNN's heuristics; deterministic: only algorithms");
    h.line("// cuDNN marks deterministic, so that the same steps give the same bits.");
    h.line("static zoc::Expected<std::unique_ptr<{}>> create(const std::string& weights, "
           "uint64_t seed, int max_batch, bool benchmark = true, bool deterministic = false);",
           cls);
    h.line("~{}();", cls);
    h.line("{0}(const {0}&) = delete;", cls);
    h.line("{0}& operator=(const {0}&) = delete;", cls);
    h.blank();
    h.line("// Forward in training mode on input [n, C, H, W] (fp32, device) and labels [n] (int32,");
    h.line("// device, each below kClasses), the mean cross-entropy, and backward: grads() then holds");
    h.line("// every parameter's gradient, and BatchNorm running statistics are updated. On `stream`.");
    h.line("// Once a batch size is described, step() only enqueues work: it may be captured in a");
    h.line("// CUDA graph (the cuBLAS workspace is fixed; dropout draws from a device counter).");
    h.line("zoc::Status step(const float* input, const int32_t* labels, int n, cudaStream_t stream);");
    h.line("// PyTorch's SGD (dampening 0, no Nesterov) on every trainable parameter.");
    h.line("zoc::Status sgd(float lr, float momentum, float weight_decay, cudaStream_t stream);");
    h.line("// Forward in evaluation mode (running statistics; dropout the identity) on input");
    h.line("// [n, C, H, W], 1 <= n <= max_batch: logits() then holds [n, kClasses].");
    h.line("zoc::Status evaluate(const float* input, int n, cudaStream_t stream);");
    h.line("// Device counters for an epoch's log: counts[0] += the rows of logits() whose first");
    h.line("// largest logit is labels[row]; with add_loss, sums[0] += loss()[0]. Nothing waits.");
    h.line("zoc::Status metrics(const int32_t* labels, int n, bool add_loss, double* sums,");
    h.line("                    unsigned long long* counts, cudaStream_t stream);");
    h.line("// Dropout in step(): on by default; off makes it the identity, as the CPU oracle");
    h.line("// (zoc grad) and tools/train/grad_reference.py treat it. Masks are drawn from");
    h.line("// (seed, number of steps taken, element); set_steps() continues a resumed run.");
    h.line("void set_dropout(bool on) {{ dropout_ = on; }}");
    h.line("zoc::Status set_steps(uint64_t steps);");
    emit_sync_members(h);
    h.blank();
    h.line("float* params() {{ return params_; }}  // PyTorch layout, kParamTable's offsets");
    h.line("const float* params() const {{ return params_; }}");
    h.line("float* momenta() {{ return momenta_; }}  // SGD's momentum buffers, same layout");
    h.line("const float* grads() const {{ return grads_; }}");
    h.line("const float* loss() const {{ return loss_; }}  // [1], the last step's");
    h.line("// Every byte this trainer holds on the device (a static plan: fixed at create()).");
    h.line("size_t device_bytes() const {{ return device_bytes_; }}");
    h.line("const float* logits() const {{ return acts_ + size_t({}) * max_batch_; }}  // [n, kClasses]",
           act_off_.at(root(logits_)));
    h.blank();
    h.access("private:");
    h.line("{}() = default;", cls);
    h.line("zoc::Status describe(int n);  // every layer for batch n; picks algorithms");
    h.line("int max_batch_ = 0, batch_ = 0;");
    h.line("cudnnHandle_t cudnn_ = nullptr;");
    h.line("cublasHandle_t cublas_ = nullptr;");
    h.line("float* params_ = nullptr;    // kParamElements: weights and BatchNorm running statistics");
    h.line("float* grads_ = nullptr;     // kParamElements");
    h.line("float* momenta_ = nullptr;   // kParamElements");
    h.line("float* acts_ = nullptr;      // every value, {} floats per sample", act_per_sample_);
    h.line("float* dacts_ = nullptr;     // gradients, {} floats per sample, shared by values whose",
           grad_per_sample_);
    h.line("                             // lives in the backward pass do not overlap");
    h.line("float* saved_ = nullptr;     // BatchNorm saved mean and inverse deviation, {} floats",
           bn_save_elements_);
    h.line("float* loss_rows_ = nullptr; // [max_batch]");
    h.line("float* loss_ = nullptr;      // [1]");
    h.line("void* workspace_ = nullptr;");
    h.line("size_t workspace_bytes_ = 0;");
    h.line("size_t workspace_need_ = 0;  // what the last describe() chose");
    h.line("bool sized_ = false;         // the workspace is allocated: describe() picks within it");
    h.line("size_t device_bytes_ = 0;");
    h.line("bool dropout_ = true;");
    h.line("uint64_t dropout_seed_ = 0;  // create()'s seed");
    h.line("uint64_t* draws_ = nullptr;  // [1] on the device: steps taken, each draws its own masks");
    h.line("void* blas_workspace_ = nullptr;");
    h.line("bool benchmark_ = true;");
    h.line("bool deterministic_ = false;");
    h.line("zoc::train::GradSync* sync_ = nullptr;  // data parallel: set_grad_sync()");
    h.append(members_);
  }

  CodeWriter c;
  c.raw_line(head);
  c.line("#include \"{}.h\"", base);
  c.blank();
  c.line("#include <algorithm>");
  c.line("#include <vector>");
  c.blank();
  c.line("#include \"zoc/core/cuda_check.h\"");
  c.line("#include \"zoc/core/init.h\"");
  c.line("#include \"zoc/core/weight_source.h\"");
  c.line("#include \"{}_kernels.h\"", base);
  c.blank();
  {
    auto ns = c.ns("namespace zoc_model", "}  // namespace zoc_model");
    c.line("namespace {{");
    c.line("constexpr float kOne = 1.0f, kZero = 0.0f;");
    c.line("constexpr size_t kWorkspaceLimit = size_t(256) << 20;");
    c.line("constexpr size_t kBlasWorkspaceBytes = size_t(4) << 20;");
    c.line("}}  // namespace");
    c.blank();
    {
      auto t = c.block(fmt::format("const {0}::Param {0}::kParamTable[{0}::kNumParams] =", cls), "};");
      for (const ParamSlot& p : params_) {
        std::string shape;
        for (size_t k = 0; k < 4; ++k) {
          shape += (k ? ", " : "") + std::to_string(k < p.shape.size() ? p.shape[k] : 0);
        }
        c.line("{{\"{}\", {}, {}, {}, {{{}}}, {}}},", sanitize_comment(p.name), p.offset, p.count,
               p.shape.size(), shape, p.trainable ? "true" : "false");
      }
    }
    {
      auto t = c.block(fmt::format("const char* const {}::kCounterNames[] =", cls), "};");
      for (const ir::Node& n : g_.nodes) {
        for (const ir::ParamSpec& p : n.params) {
          if (p.dtype != ir::DType::F32) c.line("\"{}\",", sanitize_comment(p.name));
        }
      }
      c.line("nullptr,");
    }
    emit_bucket_table(c, cls);
    c.blank();
    {
      auto f = c.block(fmt::format("zoc::Expected<std::unique_ptr<{0}>> {0}::create(const std::string& "
                                   "weights, uint64_t seed, int max_batch, bool benchmark, bool deterministic)",
                                   cls));
      c.line("if (max_batch < 2 || max_batch > 65536) {{");
      c.line("  return zoc::Error{{\"{}: max_batch \" + std::to_string(max_batch) + \" is out of range "
             "2..65536 (training-mode batch norm needs two samples)\"}};",
             cls);
      c.line("}}");
      c.line("std::unique_ptr<{0}> t(new {0}());", cls);
      c.line("t->max_batch_ = max_batch;");
      c.line("t->dropout_seed_ = seed;");
      c.line("t->benchmark_ = benchmark;");
      c.line("t->deterministic_ = deterministic;");
      c.line("const size_t B = size_t(max_batch);");
      c.line("// Weights: every tensor checked by name, shape and dtype before anything is allocated.");
      c.line("auto source = weights.empty() ? zoc::Expected<zoc::WeightSource>(zoc::WeightSource::seeded(seed))");
      c.line("                              : zoc::WeightSource::open(weights, /*strict=*/true);");
      c.line("if (!source) return source.error();");
      c.line("std::vector<float> host(kParamElements);");
      for (const ParamSlot& p : params_) {
        std::string shape;
        for (int64_t d : p.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        c.line("ZOC_TRY(source->fill(\"{}\", {{{}}}, {}, {}, host.data() + {}));",
               sanitize_comment(p.name), shape, p.rule, p.fan, p.offset);
      }
      for (const ir::Node& n : g_.nodes) {
        for (const ir::ParamSpec& p : n.params) {
          if (p.dtype != ir::DType::F32) c.line("source->ignore(\"{}\");", sanitize_comment(p.name));
        }
      }
      c.line("ZOC_TRY(source->finish());");
      c.line("ZOC_CUDNN(cudnnCreate(&t->cudnn_), \"init\");");
      c.line("ZOC_CUBLAS(cublasCreate(&t->cublas_), \"init\");");
      c.line("// Exact fp32: no TF32 in cuBLAS either.");
      c.line("ZOC_CUBLAS(cublasSetMathMode(t->cublas_, CUBLAS_PEDANTIC_MATH), \"init\");");
      c.line("// A fixed cuBLAS workspace: nothing is allocated while a step is captured.");
      c.line("ZOC_CUDA(cudaMalloc(&t->blas_workspace_, kBlasWorkspaceBytes), \"init\");");
      c.line("ZOC_CUBLAS(cublasSetWorkspace(t->cublas_, t->blas_workspace_, kBlasWorkspaceBytes), "
             "\"init\");");
      c.line("ZOC_CUDA(cudaMalloc(&t->draws_, sizeof(uint64_t)), \"init\");");
      c.line("ZOC_CUDA(cudaMemset(t->draws_, 0, sizeof(uint64_t)), \"init\");");
      c.line("ZOC_CUDA(cudaMalloc(&t->params_, kParamElements * sizeof(float)), \"init\");");
      c.line("ZOC_CUDA(cudaMalloc(&t->grads_, kParamElements * sizeof(float)), \"init\");");
      c.line("ZOC_CUDA(cudaMalloc(&t->momenta_, kParamElements * sizeof(float)), \"init\");");
      c.line("ZOC_CUDA(cudaMemset(t->grads_, 0, kParamElements * sizeof(float)), \"init\");");
      c.line("ZOC_CUDA(cudaMemset(t->momenta_, 0, kParamElements * sizeof(float)), \"init\");");
      c.line("ZOC_CUDA(cudaMemcpy(t->params_, host.data(), kParamElements * sizeof(float), "
             "cudaMemcpyHostToDevice), \"init\");");
      c.line("ZOC_CUDA(cudaMalloc(&t->acts_, size_t({}) * B * sizeof(float)), \"init\");",
             act_per_sample_);
      c.line("ZOC_CUDA(cudaMalloc(&t->dacts_, size_t({}) * B * sizeof(float)), \"init\");",
             grad_per_sample_);
      c.line("ZOC_CUDA(cudaMalloc(&t->saved_, size_t({}) * sizeof(float)), \"init\");",
             std::max<int64_t>(bn_save_elements_, 1));
      c.line("ZOC_CUDA(cudaMalloc(&t->loss_rows_, B * sizeof(float)), \"init\");");
      c.line("ZOC_CUDA(cudaMalloc(&t->loss_, sizeof(float)), \"init\");");
      c.append(create_);
      c.line("ZOC_TRY(t->describe(max_batch));  // with benchmark: times the candidates once");
      c.line("if (t->workspace_need_ > 0) {{  // allocated once: step() never allocates");
      c.line("  ZOC_CUDA(cudaMalloc(&t->workspace_, t->workspace_need_), \"init\");");
      c.line("  t->workspace_bytes_ = t->workspace_need_;");
      c.line("}}");
      c.line("t->sized_ = true;");
      c.line("t->device_bytes_ = 3 * kParamElements * sizeof(float) + size_t({}) * B * sizeof(float) + "
             "size_t({}) * sizeof(float) + (B + 1) * sizeof(float) + t->workspace_bytes_ + "
             "kBlasWorkspaceBytes + sizeof(uint64_t);",
             act_per_sample_ + grad_per_sample_, std::max<int64_t>(bn_save_elements_, 1));
      c.line("return t;");
    }
    c.blank();
    {
      auto f = c.block(fmt::format("{0}::~{0}()", cls));
      c.append(destroy_);
      c.line("for (void* q : {{(void*)params_, (void*)grads_, (void*)momenta_, (void*)acts_, "
             "(void*)dacts_, (void*)saved_, (void*)loss_rows_, (void*)loss_, workspace_, "
             "blas_workspace_, (void*)draws_}}) {{");
      c.line("  if (q) cudaFree(q);");
      c.line("}}");
      c.line("if (cublas_) cublasDestroy(cublas_);");
      c.line("if (cudnn_) cudnnDestroy(cudnn_);");
    }
    c.blank();
    {
      auto f = c.block(fmt::format("zoc::Status {}::describe(int n)", cls));
      c.line("// The workspace is sized at the largest batch, in create(); other batch sizes pick");
      c.line("// within it, so that step() never allocates. Until every layer is described, no");
      c.line("// batch size is: a failure here leaves the next step() describing again.");
      c.line("batch_ = 0;");
      c.line("const size_t workspace_limit = sized_ ? workspace_bytes_ : kWorkspaceLimit;");
      c.line("size_t need = 0;");
      c.append(describe_);
      c.line("workspace_need_ = need;");
      c.line("batch_ = n;");
      c.line("return zoc::Status::success();");
    }
    c.blank();
    {
      auto f = c.block(fmt::format("zoc::Status {}::step(const float* input, const int32_t* labels, "
                                   "int n, cudaStream_t stream)",
                                   cls));
      c.line("if (n < 2 || n > max_batch_) {{");
      c.line("  return zoc::Error{{\"{}::step: batch \" + std::to_string(n) + \" is out of range 2..\" "
             "+ std::to_string(max_batch_)}};",
             cls);
      c.line("}}");
      c.line("if (n != batch_) ZOC_TRY(describe(n));  // zoc-verify: one-time");
      c.line("ZOC_CUDNN(cudnnSetStream(cudnn_, stream), \"step\");");
      c.line("ZOC_CUBLAS(cublasSetStream(cublas_, stream), \"step\");");
      c.line("// cublasSetStream resets the workspace to cuBLAS's own pool: the fixed one again.");
      c.line("ZOC_CUBLAS(cublasSetWorkspace(cublas_, blas_workspace_, kBlasWorkspaceBytes), \"step\");");
      c.line("const size_t B = size_t(max_batch_);  // arena offsets are per sample");
      c.line("float* const a = acts_;");
      c.line("float* const d = dacts_;");
      c.line("float* const p = params_;");
      c.line("float* const g = grads_;");
      c.line("float* const s = saved_;");
      c.line("(void)d;");
      c.line("(void)g;");
      c.line("(void)s;");
      c.blank();
      if (has_dropout_) {
        c.line("ZOC_CUDA(train_kernels::count_step(draws_, stream), \"step\");  // this step's masks");
      }
      c.line("// ---- forward, training mode");
      c.append(train_forward_);
      c.blank();
      c.line("// ---- loss: mean softmax cross-entropy, and its gradient");
      c.line("ZOC_CUDA(train_kernels::softmax_xent({}, labels, n, kClasses, loss_rows_, loss_, "
             "{}, stream), \"loss\");",
             A(logits_), D(logits_));
      c.blank();
      c.line("// ---- backward, in reverse");
      c.append(backward_);
      c.line("return zoc::Status::success();");
    }
    c.blank();
    {
      auto f = c.block(fmt::format("zoc::Status {}::sgd(float lr, float momentum, float weight_decay, "
                                   "cudaStream_t stream)",
                                   cls));
      c.line("// Every trainable tensor at once: they lie together at the front of params_.");
      c.line("ZOC_CUDA(train_kernels::sgd(params_, grads_, momenta_, kTrainableElements, lr, momentum, "
             "weight_decay, stream), \"sgd\");");
      c.line("return zoc::Status::success();");
    }
    c.blank();
    {
      auto f = c.block(fmt::format("zoc::Status {}::evaluate(const float* input, int n, "
                                   "cudaStream_t stream)",
                                   cls));
      c.line("if (n < 1 || n > max_batch_) {{");
      c.line("  return zoc::Error{{\"{}::evaluate: batch \" + std::to_string(n) + \" is out of range "
             "1..\" + std::to_string(max_batch_)}};",
             cls);
      c.line("}}");
      c.line("if (n != batch_) ZOC_TRY(describe(n));  // zoc-verify: one-time");
      c.line("ZOC_CUDNN(cudnnSetStream(cudnn_, stream), \"evaluate\");");
      c.line("ZOC_CUBLAS(cublasSetStream(cublas_, stream), \"evaluate\");");
      c.line("ZOC_CUBLAS(cublasSetWorkspace(cublas_, blas_workspace_, kBlasWorkspaceBytes), "
             "\"evaluate\");");
      c.line("const size_t B = size_t(max_batch_);");
      c.line("float* const a = acts_;");
      c.line("float* const p = params_;");
      c.line("(void)p;");
      c.append(eval_forward_);
      c.line("return zoc::Status::success();");
    }
    c.blank();
    {
      auto f = c.block(fmt::format("zoc::Status {}::metrics(const int32_t* labels, int n, bool "
                                   "add_loss, double* sums, unsigned long long* counts, "
                                   "cudaStream_t stream)",
                                   cls));
      c.line("ZOC_CUDA(train_kernels::metrics(logits(), labels, n, kClasses, add_loss ? loss_ : "
             "nullptr, sums, counts, stream), \"metrics\");");
      c.line("return zoc::Status::success();");
    }
    c.blank();
    {
      auto f = c.block(fmt::format("zoc::Status {}::set_steps(uint64_t steps)", cls));
      c.line("ZOC_CUDA(cudaMemcpy(draws_, &steps, sizeof steps, cudaMemcpyHostToDevice), "
             "\"set_steps\");");
      c.line("return zoc::Status::success();");
    }
  }

  // The custom kernels' host functions: declared for the C++ side, defined in the .cu file by
  // forwarding to zoc/train/kernels.cuh (nvcc only), as the inference code's kernels are.
  struct KernelFn {
    const char* name;
    const char* params;
    const char* args;
  };
  const KernelFn kernel_fns[] = {
      {"softmax_xent",
       "const float* logits, const int32_t* labels, int64_t rows, int64_t classes, float* "
       "loss_rows, float* loss, float* dlogits, cudaStream_t stream",
       "logits, labels, rows, classes, loss_rows, loss, dlogits, stream"},
      {"add_bias_rows", "float* y, const float* b, int64_t rows, int64_t cols, cudaStream_t stream",
       "y, b, rows, cols, stream"},
      {"sum_rows", "const float* dy, float* db, int64_t rows, int64_t cols, cudaStream_t stream",
       "dy, db, rows, cols, stream"},
      {"add", "const float* a, const float* b, float* y, int64_t count, cudaStream_t stream",
       "a, b, y, count, stream"},
      {"accumulate", "float* dst, const float* src, int64_t count, cudaStream_t stream",
       "dst, src, count, stream"},
      {"sgd",
       "float* w, const float* g, float* v, int64_t count, float lr, float momentum, float "
       "weight_decay, cudaStream_t stream",
       "w, g, v, count, lr, momentum, weight_decay, stream"},
      {"dropout",
       "const float* x, float* y, int64_t count, float p, uint64_t seed, const uint64_t* draw, "
       "uint64_t layer, bool accumulate, cudaStream_t stream",
       "x, y, count, p, seed, draw, layer, accumulate, stream"},
      {"count_step", "uint64_t* draws, cudaStream_t stream", "draws, stream"},
      {"metrics",
       "const float* logits, const int32_t* labels, int64_t rows, int64_t classes, const float* "
       "loss, double* sums, unsigned long long* counts, cudaStream_t stream",
       "logits, labels, rows, classes, loss, sums, counts, stream"},
  };
  CodeWriter kh;
  kh.raw_line(head);
  kh.line("// Host functions of the trainer's custom kernels, defined in {}_kernels.cu (nvcc) so", base);
  kh.line("// that the trainer's C++ needs no CUDA compiler.");
  kh.line("#pragma once");
  kh.blank();
  kh.line("#include <cuda_runtime.h>");
  kh.blank();
  kh.line("#include <cstdint>");
  kh.blank();
  kh.line("namespace zoc_model::train_kernels {{");
  for (const KernelFn& k : kernel_fns) kh.line("cudaError_t {}({});", k.name, k.params);
  kh.line("}}  // namespace zoc_model::train_kernels");

  CodeWriter kc;
  kc.raw_line(head);
  kc.line("// The trainer's custom kernels (zoc/train/kernels.cuh), behind {}_kernels.h.", base);
  kc.line("#include \"{}_kernels.h\"", base);
  kc.blank();
  kc.line("#include \"zoc/train/kernels.cuh\"");
  kc.blank();
  kc.line("namespace zoc_model::train_kernels {{");
  kc.blank();
  for (const KernelFn& k : kernel_fns) {
    kc.line("cudaError_t {}({}) {{", k.name, k.params);
    kc.line("  return zoc::train_kernels::launch_{}({});", k.name, k.args);
    kc.line("}}");
  }
  kc.line("}}  // namespace zoc_model::train_kernels");

  Generated gen;
  gen.class_name = cls;
  gen.arena_bytes_per_sample = (act_per_sample_ + grad_per_sample_) * 4;
  gen.unshared_bytes_per_sample = gen.arena_bytes_per_sample;
  gen.weight_bytes = 3 * param_elements_ * 4;
  gen.files = {{"CMakeLists.txt",
                cmake_lists(banner(o_, g_.name + " (trainer)", hash, "#"), base) + nccl_cmake(base)},
               {base + ".h", h.str()},
               {base + ".cpp", c.str()},       {base + "_kernels.h", kh.str()},
               {base + "_kernels.cu", kc.str()},
               {"main.cpp", runner_main(head, base, cls, "train/main.h", "run_train_main")}};
  add_runtime_files(gen.files);
  return gen;
}

}  // namespace train

std::optional<Generated> emit_trainer(const ir::Graph& graph, const EmitOptions& options,
                                      Diagnostics& diags) {
  if (options.precision != Precision::kFP32) {
    diags.error(SourceLoc{graph.name, 0, 0},
                "the trainer is fp32 (TF32 off) for now: compile with --precision fp32");
    return std::nullopt;
  }
  if (options.layout == Layout::kNHWC) {
    diags.error(SourceLoc{graph.name, 0, 0},
                "the trainer stores activations NCHW: drop --layout nhwc");
    return std::nullopt;
  }
  return train::TrainerEmitter(graph, options, diags).run();
}

}  // namespace zoc::cudnn
