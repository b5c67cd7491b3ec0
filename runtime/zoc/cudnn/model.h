// The class skeleton every generated inference model shares: creation, forward (optionally
// replayed from a CUDA graph), re-planning for a batch size, per-layer profiling and tuning,
// written once here instead of once per generated model.
//
// A generated model is `class Resnet50 : public zoc::Model<Resnet50>` (CRTP: no virtual
// functions, every call resolved at compile time). It supplies what only it knows: its
// constants (kName, kPrecision, kInputC/H/W, kOutputs, kArenaBytesPerSample, kWeightBytes,
// kIrHash, kLayers, kSideBranches, kUsesCublas, kTypes, kTitles, kClassName), its descriptor
// bundles, its weight packing (`static Status pack(WeightSource&, uint8_t* staging)`), a
// destructor calling release(), and its layer sequence
// (`template <class V> Status layers(V& v)`), which this class walks with the steps of
// zoc/cudnn/model_steps.h. Nothing is created or allocated inside forward() except on its
// marked one-time paths (a new batch size re-describes; a new batch or buffer pair re-captures).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/device.h"
#include "zoc/core/expected.h"
#include "zoc/cudnn/model_state.h"
#include "zoc/cudnn/model_steps.h"
#include "zoc/cudnn/plan_file.h"
#include "zoc/weights/weight_source.h"

namespace zoc {

template <class M>
class Model {
 public:
  using Options = ModelOptions;

  // Loads weights (safetensors with PyTorch names; empty path: seeded PyTorch-default init),
  // creates every descriptor and allocates all device memory for max_batch.
  static Expected<std::unique_ptr<M>> create(const std::string& weights_path, int max_batch,
                                             const Options& options) {
    std::unique_ptr<M> model(new M());
    ZOC_TRY(model->init(weights_path, max_batch, options));
    return Expected<std::unique_ptr<M>>(std::move(model));
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // input: device fp32 NCHW [batch, C, H, W]; output: device fp32 [batch, kOutputs].
  // Allocates nothing on its steady path. With options.cuda_graph (the default) it replays the
  // graph captured for this batch size and buffer pair: one launch. The first call of a new
  // batch size or buffer pair captures one (the marked one-time path: it re-describes tensors
  // for a new batch size first, prepare()), keeping up to ModelState::kGraphCache graphs; after
  // kMaxBufferRecaptures captures in a row for new buffers at a batch already captured, the
  // caller's buffers are taken to change on every call and forward() runs the plain path from
  // then on (graph_replay() says which). The plain path issues the model's calls one by one,
  // each prepared in create()/prepare(): a new batch size re-describes first.
  Status forward(const float* input, float* output, int batch, cudaStream_t stream) {
    ZOC_TRY(check_call(input, output, batch));
    if (s_.options.cuda_graph && !s_.graphs_off && !capturing(stream)) {
      if (ModelState::Captured* g = cached_graph(batch, input, output)) {
        g->used = ++s_.graph_clock;
        s_.buffer_recaptures = 0;
        ZOC_CUDA(cudaGraphLaunch(g->exec, stream), "forward: graph launch");
        return Status::success();
      }
      // The one-time path (per batch size and buffer pair), the only one that creates objects.
      return capture_and_launch(input, output, batch, stream);  // zoc-verify: one-time
    }
    if (batch != s_.batch) ZOC_TRY(prepare(batch));  // zoc-verify: one-time
    return run_layers<false>(input, output, stream);
  }

  // Whether forward() replays CUDA graphs (options.cuda_graph, unless the caller's buffers
  // changed on every call). On a stream that the caller is capturing into a graph of its own,
  // forward() always takes the plain path, whose calls that capture then records.
  bool graph_replay() const { return s_.options.cuda_graph && !s_.graphs_off; }

  // Re-describes every tensor and re-plans every layer for a new batch size (host-side).
  // forward() does this itself on a batch change; calling it ahead keeps that one-time work out
  // of the timed path. The workspace allocated at create() fits every layer at max_batch, but
  // cuDNN can need more at a smaller batch (split-K kernels: a fused convolution without ReLU
  // has one algorithm, whose workspace at batch 8 exceeded batch 64's in ConvNeXt and RegNetY,
  // 2026-11-24): then the layers are planned within options.workspace_limit and the workspace
  // grows to what they need, once; later batches plan within the larger one.
  Status prepare(int batch) {
    ZOC_TRY(check_batch(batch, s_.max_batch));
    s_.batch = 0;  // until every layer describes `batch` (a failure part-way re-prepares)
    size_t need = 0;
    if (!set_batch(batch, s_.workspace_bytes, &need).ok()) {
      const size_t side_had = s_.side_limit;
      s_.side_limit = s_.options.workspace_limit;
      const Status planned = set_batch(batch, s_.options.workspace_limit, &need);
      s_.side_limit = side_had;
      ZOC_TRY(planned);
      ZOC_TRY(grow_workspace(need));
    } else if (need > s_.workspace_bytes ||
               (M::kSideBranches > 0 && s_.side_need > s_.side_limit)) {
      // A plan kept for this batch needs more than the workspace holds: tune() leaves each layer
      // on its fastest config, chosen within options.workspace_limit (a LeNet fp32 layer tuned at
      // batch 64 needed 35 MB where create() had allocated none, H200, 2026-11-30).
      ZOC_TRY(grow_workspace(need));
    }
    ZOC_TRY(bind_layers(batch));
    s_.batch = batch;
    return Status::success();
  }

  // The source layers each timed layer stands for, in forward order (0 <= k < M::kLayers).
  static const char* layer_name(int k) { return k >= 0 && k < M::kLayers ? M::kTitles[k] : "?"; }

  // One forward pass with a CUDA event between layers (inside a CUDA graph when
  // options.cuda_graph, like forward()); layer_ms[kLayers] receives each layer's GPU time,
  // *total_ms the first to last event. Creates its events and graph on first use.
  Status profile(const float* input, float* output, int batch, cudaStream_t stream, float* layer_ms,
                 float* total_ms);

  // Times every usable algorithm or engine config of every convolution at `batch`, within
  // options.workspace_limit (at most 1 GiB), on the activations of a real forward, and records
  // the fastest of each in *plan (whose header it fills). The model keeps its own choices:
  // create it again with Options::plan_file to use the plan. Synchronizes.
  Status tune(const float* input, float* output, int batch, cudaStream_t stream, PlanFile* plan);

  int max_batch() const { return s_.max_batch; }
  size_t arena_bytes() const { return M::kArenaBytesPerSample * size_t(s_.max_batch); }
  size_t workspace_bytes() const { return s_.workspace_bytes; }
  size_t weight_bytes() const { return M::kWeightBytes; }

 protected:
  Model() = default;
  ~Model() = default;
  // Frees everything create() made. M's destructor calls it: the descriptor bundles are M's
  // members, gone by the time this base's destructor runs.
  void release();

 private:
  M& self() { return static_cast<M&>(*this); }
  Status init(const std::string& weights_path, int max_batch, const Options& options);
  Status create_handles();
  Status grow_workspace(size_t need);
  Status load_weights(const std::string& weights_path);
  Status load_plan();
  Status set_batch(int n, size_t workspace_limit, size_t* workspace_need);
  Status bind_layers(int batch) {
    steps::Bind bind(s_, batch);
    return self().layers(bind);
  }
  Status begin(const float* input, float* output, int batch);
  Status check_call(const float* input, const float* output, int batch);
  ModelState::Captured* cached_graph(int batch, const float* input, const float* output);
  Status capture_and_launch(const float* input, float* output, int batch, cudaStream_t stream);
  void drop_graphs();
  static bool capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    return cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
           status != cudaStreamCaptureStatusNone;
  }
  template <bool kProfile>
  Status run_layers(const float* input, float* output, cudaStream_t stream, bool plain = true);
  template <bool kProfile>
  Status capture(cudaGraphExec_t* exec, const float* input, float* output, cudaStream_t stream);

  ModelState s_;
};

template <class M>
Status Model<M>::init(const std::string& weights_path, int max_batch, const Options& options) {
  if (max_batch < 1 || max_batch > 65536) {
    return Error{std::string(M::kClassName) + ": max_batch " + std::to_string(max_batch) +
                 " is out of range 1..65536"};
  }
  s_.options = options;
  s_.max_batch = max_batch;
  s_.types = M::kTypes;
  s_.mark_events.assign(M::kLayers + 1, nullptr);
  s_.marks = s_.mark_events.data();
  ZOC_TRY(create_handles());
  // Descriptors: every one the forward pass uses is created here.
  steps::Create create(s_);
  ZOC_TRY(self().layers(create));
  ZOC_TRY(load_weights(weights_path));
  ZOC_TRY(load_plan());
  // Activations and workspace, sized for max_batch.
  ZOC_CUDA(cudaMalloc(&s_.arena, M::kArenaBytesPerSample * size_t(max_batch)), "arena");
  size_t need = 0;
  ZOC_TRY(set_batch(max_batch, options.workspace_limit, &need));
  // Room for the plan's measured choices at every batch size up to max_batch too.
  need = std::max<size_t>(need, s_.plan.largest_workspace(max_batch, options.workspace_limit));
  s_.workspace_bytes = need;
  if (need > 0) ZOC_CUDA(cudaMalloc(&s_.workspace, need), "workspace");
  if constexpr (M::kSideBranches > 0) {
    if (s_.side_need > 0) ZOC_CUDA(cudaMalloc(&s_.side_workspace, s_.side_need), "workspace");
    s_.side_limit = s_.side_need;
  }
  ZOC_TRY(bind_layers(max_batch));
  s_.batch = max_batch;
  // The weight upload ran on the legacy default stream, which the caller's non-blocking stream
  // does not wait for.
  ZOC_CUDA(cudaDeviceSynchronize(), "init");
  return Status::success();
}

template <class M>
Status Model<M>::create_handles() {
  ZOC_CUDNN(cudnnCreate(&s_.cudnn), "init");
  // Where forward()'s graphs and the graph-API layers' recorded launches are captured.
  ZOC_CUDA(cudaStreamCreateWithFlags(&s_.capture_stream, cudaStreamNonBlocking), "init");
  if constexpr (M::kUsesCublas) {
    constexpr size_t kBlasWorkspaceBytes = size_t(4) << 20;
    ZOC_CUBLAS(cublasCreate(&s_.cublas), "init");
    ZOC_CUDA(cudaMalloc(&s_.blas_workspace, kBlasWorkspaceBytes), "init");
    ZOC_CUBLAS(cublasSetWorkspace(s_.cublas, s_.blas_workspace, kBlasWorkspaceBytes), "init");
  }
  if constexpr (M::kSideBranches > 0) {
    ZOC_CUDA(cudaStreamCreateWithFlags(&s_.side, cudaStreamNonBlocking), "init");
    ZOC_CUDNN(cudnnCreate(&s_.cudnn_side), "init");
    ZOC_CUDNN(cudnnSetStream(s_.cudnn_side, s_.side), "init");
    s_.fork_events.assign(M::kSideBranches, nullptr);
    s_.join_events.assign(M::kSideBranches, nullptr);
    s_.fork = s_.fork_events.data();
    s_.join = s_.join_events.data();
    s_.inline_branches.assign(M::kSideBranches, 0);
    s_.inline_branch = s_.inline_branches.data();
    for (int k = 0; k < M::kSideBranches; ++k) {
      ZOC_CUDA(cudaEventCreateWithFlags(&s_.fork[k], cudaEventDisableTiming), "init");
      ZOC_CUDA(cudaEventCreateWithFlags(&s_.join[k], cudaEventDisableTiming), "init");
    }
    s_.side_limit = s_.options.workspace_limit;
  }
  return Status::success();
}

// The workspaces grown to `need` (main branch) and s_.side_need (side branches) where they are
// smaller, after the GPU finished with the old ones. Only prepare() calls it, on a batch change.
template <class M>
Status Model<M>::grow_workspace(size_t need) {
  ZOC_CUDA(cudaDeviceSynchronize(), "prepare: workspace");
  drop_graphs();  // they captured the old workspace's address
  if (need > s_.workspace_bytes) {
    if (s_.workspace) ZOC_CUDA(cudaFree(s_.workspace), "prepare: workspace");
    s_.workspace = nullptr;
    s_.workspace_bytes = 0;
    ZOC_CUDA(cudaMalloc(&s_.workspace, need), "prepare: workspace");
    s_.workspace_bytes = need;
  }
  if constexpr (M::kSideBranches > 0) {
    if (s_.side_need > s_.side_limit) {
      if (s_.side_workspace) ZOC_CUDA(cudaFree(s_.side_workspace), "prepare: workspace");
      s_.side_workspace = nullptr;
      s_.side_limit = 0;
      ZOC_CUDA(cudaMalloc(&s_.side_workspace, s_.side_need), "prepare: workspace");
      s_.side_limit = s_.side_need;
    }
  }
  return Status::success();
}

// Weights: validated, BN-folded, converted to the model's precision and layout on the host (the
// generated <model>_weights.h), then copied to the GPU once.
template <class M>
Status Model<M>::load_weights(const std::string& weights_path) {
  auto opened = weights_path.empty() ? Expected<WeightSource>(WeightSource::seeded(s_.options.seed))
                                     : WeightSource::open(weights_path, s_.options.strict);
  if (!opened) return opened.error();
  WeightSource& source = *opened;
  std::vector<uint8_t> staging(M::kWeightBytes);
  ZOC_TRY(M::pack(source, staging.data()));
  for (const std::string& warning : source.warnings()) {
    std::fprintf(stderr, "warning: %s\n", warning.c_str());
  }
  ZOC_CUDA(cudaMalloc(&s_.weights, M::kWeightBytes), "weights");
  ZOC_CUDA(cudaMemcpy(s_.weights, staging.data(), M::kWeightBytes, cudaMemcpyHostToDevice),
           "weights");
  return Status::success();
}

// Measured algorithm choices, if a plan file is given and was made here.
template <class M>
Status Model<M>::load_plan() {
  if (s_.options.plan_file.empty()) return Status::success();
  auto plan = PlanFile::load(s_.options.plan_file);
  if (!plan) return plan.error();
  std::string gpu;
  ZOC_TRY(gpu_name(&gpu));
  const std::string why =
      plan->mismatch(gpu, cudnnGetVersion(), M::kName, M::kPrecision, M::kIrHash);
  if (why.empty()) {
    s_.plan = std::move(*plan);
  } else {
    std::fprintf(stderr, "warning: %s: not used (%s); using cuDNN's heuristics\n",
                 s_.options.plan_file.c_str(), why.c_str());
  }
  return Status::success();
}

// Describes every tensor for batch n and picks each convolution's algorithm within
// workspace_limit; reports the largest workspace the choices need. Host-side only.
template <class M>
Status Model<M>::set_batch(int n, size_t workspace_limit, size_t* workspace_need) {
  s_.side_need = 0;
  steps::Describe describe(s_, n, workspace_limit);
  ZOC_TRY(self().layers(describe));
  *workspace_need = describe.need;
  return Status::success();
}

// Checks a call's batch and pointers (a pointer pair once: cudaPointerGetAttributes is not free).
template <class M>
Status Model<M>::check_call(const float* input, const float* output, int batch) {
  ZOC_TRY(check_batch(batch, s_.max_batch));
  if (input != s_.checked_input || output != s_.checked_output) {
    ZOC_TRY(check_device_pointer(input, "forward: input"));
    ZOC_TRY(check_device_pointer(output, "forward: output"));
    s_.checked_input = input;
    s_.checked_output = const_cast<float*>(output);
  }
  return Status::success();
}

// Checks a call's batch and pointers and prepares a new batch size.
template <class M>
Status Model<M>::begin(const float* input, float* output, int batch) {
  ZOC_TRY(check_call(input, output, batch));
  if (batch != s_.batch) ZOC_TRY(prepare(batch));  // zoc-verify: one-time
  return Status::success();
}

// forward()'s graph for this batch size and buffer pair, or null.
template <class M>
ModelState::Captured* Model<M>::cached_graph(int batch, const float* input, const float* output) {
  for (ModelState::Captured& g : s_.graphs) {
    if (g.exec && g.batch == batch && g.input == input && g.output == output) return &g;
  }
  return nullptr;
}

// Captures forward() for a new batch size or buffer pair into the least recently used slot and
// launches it; counts captures that only new buffers caused (see forward()).
template <class M>
Status Model<M>::capture_and_launch(const float* input, float* output, int batch,
                                    cudaStream_t stream) {
  bool batch_seen = false;
  ModelState::Captured* slot = &s_.graphs[0];
  for (ModelState::Captured& g : s_.graphs) {
    batch_seen = batch_seen || (g.exec && g.batch == batch);
    if (!g.exec || (slot->exec && g.used < slot->used)) slot = &g;
  }
  if (batch_seen && ++s_.buffer_recaptures >= ModelState::kMaxBufferRecaptures) {
    s_.graphs_off = true;  // the buffers change on every call: the plain path from now on
    drop_graphs();
    if (batch != s_.batch) ZOC_TRY(prepare(batch));
    return run_layers<false>(input, output, stream);
  }
  if (batch != s_.batch) ZOC_TRY(prepare(batch));
  if (slot->exec) cudaGraphExecDestroy(slot->exec);
  *slot = ModelState::Captured{};
  ZOC_TRY(capture<false>(&slot->exec, input, output, stream));
  *slot = ModelState::Captured{slot->exec, batch, input, output, ++s_.graph_clock};
  ZOC_CUDA(cudaGraphLaunch(slot->exec, stream), "forward: graph launch");
  return Status::success();
}

// Forgets forward()'s graphs: the buffers or kernels they captured are about to change.
template <class M>
void Model<M>::drop_graphs() {
  for (ModelState::Captured& g : s_.graphs) {
    if (g.exec) cudaGraphExecDestroy(g.exec);
    g = ModelState::Captured{};
  }
  if (s_.profile_graph) cudaGraphExecDestroy(s_.profile_graph);
  s_.profile_graph = nullptr;
  s_.profile_batch = 0;
}

// The forward pass: one library call or kernel per layer, in order (the model's layer sequence
// walked with steps::Run); the kProfile instantiation also records s_.marks.
template <class M>
template <bool kProfile>
Status Model<M>::run_layers(const float* input, float* output, cudaStream_t stream, bool plain) {
  ZOC_CUDNN(cudnnSetStream(s_.cudnn, stream), "forward");
  if constexpr (M::kUsesCublas) ZOC_CUBLAS(cublasSetStream(s_.cublas, stream), "forward");
  if constexpr (kProfile) {
    ZOC_CUDA(cudaEventRecordWithFlags(s_.marks[0], stream, s_.record_flags), "profile");
  }
  steps::Run<kProfile> run{{}, s_, input, output, stream, s_.batch, plain};
  return self().layers(run);
}

// Runs run_layers once on `stream` (first launches load kernels), then captures it into *exec
// on the model's own capture stream, so that any stream can replay it, the legacy default stream
// included (which cannot itself be captured).
template <class M>
template <bool kProfile>
Status Model<M>::capture(cudaGraphExec_t* exec, const float* input, float* output,
                         cudaStream_t stream) {
  ZOC_TRY(run_layers<kProfile>(input, output, stream, /*plain=*/false));
  cudaStream_t on = s_.capture_stream;  // capturing runs nothing: the launch below orders it
  if (*exec) cudaGraphExecDestroy(*exec);
  *exec = nullptr;
  cudaGraph_t graph = nullptr;
  ZOC_CUDA(cudaStreamBeginCapture(on, cudaStreamCaptureModeThreadLocal), "forward: capture");
  s_.record_flags = cudaEventRecordExternal;
  const Status captured = run_layers<kProfile>(input, output, on, /*plain=*/false);
  s_.record_flags = cudaEventRecordDefault;
  if constexpr (M::kSideBranches > 0) {
    if (!captured.ok()) {  // a failure between a fork and its join: join the side stream
      (void)cudaEventRecord(s_.join[0], s_.side);
      (void)cudaStreamWaitEvent(on, s_.join[0], 0);
    }
  }
  const cudaError_t ended = cudaStreamEndCapture(on, &graph);
  // Later plain calls use `stream` again (run_layers sets the handles' stream each call).
  if (!captured.ok() || ended != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    if (!captured.ok()) return captured;
  }
  ZOC_CUDA(ended, "forward: capture");
  const cudaError_t made = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  ZOC_CUDA(made, "forward: graph instantiation");
  return Status::success();
}

template <class M>
Status Model<M>::profile(const float* input, float* output, int batch, cudaStream_t stream,
                         float* layer_ms, float* total_ms) {
  ZOC_TRY(begin(input, output, batch));
  if (!s_.marks[0]) {
    for (cudaEvent_t& e : s_.mark_events) ZOC_CUDA(cudaEventCreate(&e), "profile");
  }
  if (!s_.options.cuda_graph) {
    ZOC_TRY(run_layers<true>(input, output, stream));
  } else {
    if (!s_.profile_graph || s_.profile_batch != batch || s_.profile_input != input ||
        s_.profile_output != output) {
      ZOC_TRY(capture<true>(&s_.profile_graph, input, output, stream));
      s_.profile_batch = batch;
      s_.profile_input = input;
      s_.profile_output = output;
    }
    ZOC_CUDA(cudaGraphLaunch(s_.profile_graph, stream), "profile: graph launch");
  }
  ZOC_CUDA(cudaEventSynchronize(s_.marks[M::kLayers]), "profile");
  for (int k = 0; k < M::kLayers; ++k) {
    ZOC_CUDA(cudaEventElapsedTime(&layer_ms[k], s_.marks[k], s_.marks[k + 1]), "profile");
  }
  ZOC_CUDA(cudaEventElapsedTime(total_ms, s_.marks[0], s_.marks[M::kLayers]), "profile");
  return Status::success();
}

template <class M>
Status Model<M>::tune(const float* input, float* output, int batch, cudaStream_t stream,
                      PlanFile* plan) {
  ZOC_TRY(begin(input, output, batch));
  ZOC_TRY(run_layers<false>(input, output, stream));  // real activations to time on
  ZOC_CUDA(cudaStreamSynchronize(stream), "tune");
  s_.batch = 0;  // tuning re-describes layers: prepare() again below, or on the next call
  ZOC_TRY(gpu_name(&plan->gpu));
  plan->cudnn = cudnnGetVersion();
  plan->model = M::kName;
  plan->precision = M::kPrecision;
  plan->ir_hash = M::kIrHash;
  const size_t scratch_bytes = std::min(s_.options.workspace_limit, size_t(1) << 30);
  auto scratch = DeviceBuffer::allocate(std::max<size_t>(scratch_bytes, 1), "tune: workspace");
  if (!scratch) return scratch.error();
  steps::Tune tuner{{}, s_, batch, input, scratch->get(), scratch_bytes, stream, plan};
  drop_graphs();  // tuning replaces plans whose kernels they replay
  ZOC_TRY(self().layers(tuner));
  // Back to the model's own choices (tuning left each layer on its fastest).
  return prepare(batch);
}

template <class M>
void Model<M>::release() {
  drop_graphs();
  if (s_.capture_stream) cudaStreamDestroy(s_.capture_stream);
  if constexpr (M::kSideBranches > 0) {
    for (cudaEvent_t e : s_.fork_events) {
      if (e) cudaEventDestroy(e);
    }
    for (cudaEvent_t e : s_.join_events) {
      if (e) cudaEventDestroy(e);
    }
    if (s_.side_workspace) cudaFree(s_.side_workspace);
    if (s_.cudnn_side) cudnnDestroy(s_.cudnn_side);
    if (s_.side) cudaStreamDestroy(s_.side);
  }
  for (cudaEvent_t e : s_.mark_events) {
    if (e) cudaEventDestroy(e);
  }
  steps::Destroy destroy;
  (void)self().layers(destroy);
  if (s_.arena) cudaFree(s_.arena);
  if (s_.workspace) cudaFree(s_.workspace);
  if (s_.weights) cudaFree(s_.weights);
  if (s_.blas_workspace) cudaFree(s_.blas_workspace);
  if (s_.cublas) cublasDestroy(s_.cublas);
  if (s_.cudnn) cudnnDestroy(s_.cudnn);
}

}  // namespace zoc

// Explicit instantiations, written once in a generated model's .cpp: the skeleton for model M,
// and M's layer sequence for every step (the skeleton's members, instantiated in other
// translation units such as main.cpp, call them). Only the step list lives here.
#define ZOC_MODEL_INSTANTIATE(M)                           \
  template class zoc::Model<M>;                            \
  template zoc::Status M::layers(zoc::steps::Create&);     \
  template zoc::Status M::layers(zoc::steps::Describe&);   \
  template zoc::Status M::layers(zoc::steps::Bind&);       \
  template zoc::Status M::layers(zoc::steps::Tune&);       \
  template zoc::Status M::layers(zoc::steps::Destroy&);    \
  template zoc::Status M::layers(zoc::steps::Run<false>&); \
  template zoc::Status M::layers(zoc::steps::Run<true>&)
