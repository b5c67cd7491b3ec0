// A fused convolution layer on cuDNN's graph (backend) API, with the same create / describe /
// tune / destroy shape as the legacy bundles in cudnn/layers.h, so the emitter can use either.
//
// describe() builds the execution plan for a batch size (host-side, one-time per batch size):
// the plan file's measured engine config for this layer and batch when it has one, else cuDNN's
// heuristics; bind() fixes the device pointers into a variant pack once; run() is then a single
// cudnnBackendExecute, which costs a few microseconds of host time where the legacy
// cudnnConvolutionBiasActivationForward costs about a hundred (see
// results/2026-11-22-h200-cudnn-graph-prototype/). tune() times the engine configs the
// heuristics offer, as PyTorch's cudnn.benchmark does, and keeps the fastest.
// An activation other than ReLU (ConvShape::other_activation) goes into the plan's epilogue where
// an engine fuses it (fp16, bf16 and TF32 on the H100); where none does (fp32 with TF32 off: no
// engine, measured 2026-11-25), the plan is the convolution alone and separate_activation() tells
// the model to run its activation kernel in place after it. tune() also measures that split
// form where the fused one is slow, and keeps it when faster (measured 2026-11-25: MobileNetV2's
// 3->32 stem with ReLU6 fused ran 1.15 ms at batch 256 fp16, the engine heuristics and tuning
// offered for conv + bias + clipped ReLU being poor at 4 input channels); the plan file says
// `graph-split` for it.
//
// Plans are kept per batch size (one entry per batch the model has run): prepare() for a batch
// seen before rebuilds nothing, and a CUDA graph captured at one batch size stays valid while
// another runs (a graph replays the kernels of the plan it captured, which must stay loaded).
// Grouped convolutions go through the graph API too (cuDNN infers the group count from the
// filter's channels). Where no engine runs a layer at some batch (is_no_engine_error), and its
// epilogue is one the legacy call has (ReLU or none), that batch falls back to the legacy fused
// call (fallback_reason() says so); it costs about a hundred microseconds of host time per call
// in cuDNN 9, which is why it is only the fallback.
// Needs cudnn.h and cuda_runtime.h only.
#pragma once

#include "zoc/core/timing.h"
#include "zoc/cudnn/graph.h"
#include "zoc/cudnn/layers.h"
#include "zoc/cudnn/plan_file.h"
#include "zoc/cudnn/recorded_launch.h"

#include <memory>
#include <string>
#include <vector>

namespace zoc {

class GraphConvLayer {
 public:
  size_t workspace = 0;  // of the plan for the current batch size
  // Engine configs timed per layer and batch by tune(), A's best first (PyTorch's
  // torch.backends.cudnn.benchmark_limit is 10 by default).
  static constexpr size_t kMaxTuneCandidates = 24;
  // The split form (convolution alone, activation after it) is timed only where the best fused
  // config takes longer than this, and over fewer configs: it doubles a layer's tuning, and
  // can win back only a share of a layer's time (EfficientNet-B0 at batch 1 has 50 layers of
  // a few microseconds each, and its tuning already takes minutes).
  static constexpr float kSplitTryMs = 0.05f;
  static constexpr size_t kMaxSplitCandidates = 8;

  Status create(const ConvShape& s, const Precision& p, bool residual, const char* layer) {
    if (s.groups < 1 || s.c % s.groups != 0 || s.k % s.groups != 0) {
      return Error{std::string("layer '") + layer + "': groups must divide the channels"};
    }
    s_ = s;
    p_ = p;
    residual_ = residual;
    return Status::success();
  }

  // Makes batch n's plan current, building it within workspace_limit bytes of workspace if this
  // batch has none yet: the plan file's engine config for (layer, n) if it has one that fits (a
  // graph-split one without the activation), else the heuristics' first; without the
  // epilogue's activation if no engine fuses it (see separate_activation()); the legacy call if
  // no engine runs the layer at all (see the top of this file).
  Status describe(cudnnHandle_t handle, int n, size_t workspace_limit, const char* layer,
                  const PlanFile* plan = nullptr) {
    if (PerBatch* have = find(n)) return select(have, handle, n, workspace_limit, layer, plan);
    PerBatch entry;
    entry.n = n;
    cur_ = &entry;
    const PlanChoice* chosen = plan ? plan->find(layer, n) : nullptr;
    auto build = [&] { return describe_spec(handle, n, workspace_limit, layer, plan); };
    const bool split = chosen && chosen->split && s_.other_activation;
    entry.separate = split;
    Status built = split ? build() : with_fallback(build);
    cur_ = nullptr;
    if (!built) {
      if (!is_no_engine_error(built.error()) || s_.other_activation) return built;
      entry.legacy = true;  // no engine runs it: the legacy call, described below
      entry.why = built.error().message;
    }
    return select(keep(std::move(entry)), handle, n, workspace_limit, layer, plan);
  }

  // Times every candidate engine config (FusedConvPlan::candidates, at most kMaxTuneCandidates)
  // on the real call at batch n with the given device pointers (z: the residual, or nullptr),
  // within `scratch_bytes` of workspace, and keeps the fastest as batch n's plan: *chosen
  // receives it, and the layer is left described with it (bind() again before run()). Runs on
  // `stream`. A config whose second call (the first loads its kernel) takes over twice the best
  // median so far is not timed further: at batch 256 the slow engines would otherwise take most
  // of the tuning. With an activation other than ReLU, `activate(stream)` launches it in place
  // on y: the split form (the convolution's configs without it, each timed with that launch
  // after it) competes where the fused best is slower than kSplitTryMs.
  template <class Activate>
  Status tune(cudnnHandle_t handle, int n, void* x, const void* w, const void* bias, const void* z,
              void* y, void* scratch, size_t scratch_bytes, cudaStream_t stream, const char* layer,
              PlanChoice* chosen, Activate activate) {
    PerBatch entry;
    entry.n = n;
    cur_ = &entry;
    Status tuned = tune_entry(handle, n, x, w, bias, z, y, scratch, scratch_bytes, stream, layer,
                              chosen, activate);
    cur_ = nullptr;
    if (!tuned) {
      if (PerBatch* have = find(n)) cur_ = have;  // keep what batch n had
      return tuned;
    }
    if (PerBatch* have = find(n)) {
      *have = std::move(entry);
      cur_ = have;
    } else {
      cur_ = keep(std::move(entry));
    }
    workspace = cur_->plan.workspace_bytes();
    return Status::success();
  }

  // True when the current plan lacks the epilogue's activation (no engine fuses it): the
  // caller applies ConvShape::activation in place on y after run().
  bool separate_activation() const { return cur_ && cur_->separate; }
  // True when run() launches recorded kernels: they may go on any stream.
  bool recorded() const { return cur_ && !cur_->legacy && !cur_->launches.empty(); }
  // Non-empty when the current batch runs the legacy call because no engine runs the layer.
  const std::string& fallback_reason() const {
    static const std::string none;
    return cur_ && cur_->legacy ? cur_->why : none;
  }

  // Fixes the pointers the current plan reads and writes (z: the residual, or null), and records
  // the kernels its execute launches (zoc/cudnn/recorded_launch.h) by capturing one execute on
  // `capture_stream` with `handle`, the handle that runs it.
  Status bind(cudnnHandle_t handle, cudaStream_t capture_stream, void* x, const void* w,
              const void* bias, const void* z, void* y, void* ws, const char* layer) {
    if (!cur_) return Error{std::string("layer '") + layer + "': bind() before describe()"};
    bound_ = {x, w, bias, z, y, ws};
    if (cur_->legacy) return Status::success();
    // A batch size seen before keeps its variant pack and launches when the pointers are the
    // same (they change only when the workspace grows): switching batch sizes builds nothing.
    if (cur_->plan.pack() && cur_->bound == bound_) return Status::success();
    cur_->launches = RecordedLaunches();
    ZOC_TRY(cur_->plan.bind(x, w, bias, z, y, ws, layer));
    cur_->bound = bound_;
    if (capture_stream) {
      ZOC_ASSIGN_OR_RETURN(const bool recorded,
                           cur_->launches.record(handle, cur_->plan.plan(), cur_->plan.pack(),
                                                 capture_stream, &cur_->not_recorded, layer));
      (void)recorded;  // when false, run() calls cudnnBackendExecute (not_recorded says why)
    }
    return Status::success();
  }

  // One convolution on `stream` (the handle's stream): the recorded kernels, else one
  // cudnnBackendExecute, else (no engine) the legacy call.
  Status run(cudnnHandle_t handle, cudaStream_t stream, const char* layer) const {
    if (!cur_) return Error{std::string("layer '") + layer + "': run() before describe()"};
    if (!cur_->legacy && !cur_->launches.empty()) {
      ZOC_CUDA(cur_->launches.launch(stream), layer);
      return Status::success();
    }
    if (!cur_->legacy) return cur_->plan.run(handle, layer);
    const bool residual = bound_.z != nullptr;
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnConvolutionBiasActivationForward(
                  handle, &one, legacy_.x, bound_.x, legacy_.w, bound_.w, legacy_.conv,
                  legacy_.algo, bound_.ws, legacy_.workspace, residual ? &one : &zero, legacy_.y,
                  residual ? bound_.z : bound_.y, legacy_.bias, bound_.bias, legacy_.act, legacy_.y,
                  bound_.y),
              layer);
    return Status::success();
  }

  // The engine the current plan runs, for logs ("A#0 eng12 tc {k2=3}", "plan eng..." when
  // rebuilt from a plan file; "+ activation kernel" when the activation runs after it).
  std::string engine_name() const {
    if (!cur_) return "(none)";
    if (cur_->legacy) return "legacy call (no graph-API engine)";
    return cur_->plan.engine_name() + (cur_->separate ? " + activation kernel" : "") +
           (cur_->launches.empty()
                ? " (executed: " + cur_->not_recorded + ")"
                : " (" + std::to_string(cur_->launches.kernels()) + " recorded kernels)");
  }

  void destroy() {
    cur_ = nullptr;
    plans_.clear();
    legacy_.destroy();
    legacy_created_ = false;
  }

 private:
  struct Bound {
    void* x = nullptr;
    const void* w = nullptr;
    const void* bias = nullptr;
    const void* z = nullptr;
    void* y = nullptr;
    void* ws = nullptr;
    bool operator==(const Bound& o) const {
      return x == o.x && w == o.w && bias == o.bias && z == o.z && y == o.y && ws == o.ws;
    }
  };
  struct PerBatch {
    int n = 0;
    FusedConvPlan plan;
    Bound bound;                // what plan's variant pack holds
    RecordedLaunches launches;  // what its execute launches, for the plain forward
    std::string not_recorded;   // why launches is empty, if it is
    bool separate = false;      // the plan lacks s_.activation (separate_activation())
    bool legacy = false;        // no engine: the legacy call (fallback_reason())
    std::string why;
  };

  PerBatch* find(int n) {
    for (auto& p : plans_) {
      if (p->n == n) return p.get();
    }
    return nullptr;
  }
  PerBatch* keep(PerBatch entry) {
    plans_.push_back(std::make_unique<PerBatch>(std::move(entry)));
    return plans_.back().get();
  }
  // Makes `e` current; a legacy entry (re)describes the legacy bundle for batch n.
  Status select(PerBatch* e, cudnnHandle_t handle, int n, size_t workspace_limit, const char* layer,
                const PlanFile* plan) {
    cur_ = e;
    if (!e->legacy) {
      workspace = e->plan.workspace_bytes();
      return Status::success();
    }
    if (!legacy_created_) {
      ZOC_TRY(legacy_.create(s_, p_, layer));
      legacy_created_ = true;
    }
    ZOC_TRY(legacy_.describe(handle, n, workspace_limit, layer, plan));
    workspace = legacy_.workspace;
    return Status::success();
  }

  template <class Activate>
  Status tune_entry(cudnnHandle_t handle, int n, void* x, const void* w, const void* bias,
                    const void* z, void* y, void* scratch, size_t scratch_bytes,
                    cudaStream_t stream, const char* layer, PlanChoice* chosen, Activate activate) {
    auto no_activation = [](cudaStream_t) { return cudaSuccess; };
    auto fused_step = [&] {
      return tune_spec(handle, n, x, w, bias, z, y, scratch, scratch_bytes, stream, layer, chosen,
                       kMaxTuneCandidates, no_activation);
    };
    if (!s_.other_activation) return with_fallback(fused_step);
    cur_->separate = false;
    Status fused = fused_step();
    if (fused && chosen->ms <= kSplitTryMs) return fused;
    const PlanChoice fused_choice = *chosen;
    FusedConvPlan fused_plan = std::move(cur_->plan);
    cur_->separate = true;
    Status split = tune_spec(handle, n, x, w, bias, z, y, scratch, scratch_bytes, stream, layer,
                             chosen, fused ? kMaxSplitCandidates : kMaxTuneCandidates, activate);
    if (split && (!fused || chosen->ms < fused_choice.ms)) {
      chosen->split = true;
      return split;
    }
    cur_->separate = false;
    *chosen = fused_choice;
    if (!fused) return fused;
    return adopt(std::move(fused_plan));
  }

  // Runs `step` (describe or tune) with the activation in the epilogue; if that fails and the
  // activation is not ReLU, once more without it. The first error is the one reported when
  // both fail.
  template <class Step>
  Status with_fallback(Step step) {
    cur_->separate = false;
    Status fused = step();
    if (fused || !s_.other_activation) return fused;
    cur_->separate = true;
    Status plain = step();
    if (!plain) {
      cur_->separate = false;
      return fused;
    }
    return plain;
  }

  Status describe_spec(cudnnHandle_t handle, int n, size_t workspace_limit, const char* layer,
                       const PlanFile* plan) {
    const PlanChoice* chosen = plan ? plan->find(layer, n) : nullptr;
    if (chosen && chosen->engine >= 0 && chosen->workspace <= workspace_limit) {
      EngineChoice c{chosen->engine, {}};
      if (!parse_knob_list(chosen->knobs, &c.knobs)) {
        return Error{std::string("layer '") + layer + "': malformed knobs '" + chosen->knobs +
                     "' in the plan"};
      }
      auto built = FusedConvPlan::build_choice(handle, spec(n), c, workspace_limit, layer);
      if (!built) return built.error();  // the plan matched GPU, cuDNN and model: it must build
      return adopt(std::move(*built));
    }
    auto built = FusedConvPlan::build(handle, spec(n), workspace_limit, layer);
    if (!built) return built.error();
    return adopt(std::move(*built));
  }

  // Times up to `most` configs of spec(n), each call followed by `after(stream)`.
  template <class After>
  Status tune_spec(cudnnHandle_t handle, int n, void* x, const void* w, const void* bias,
                   const void* z, void* y, void* scratch, size_t scratch_bytes, cudaStream_t stream,
                   const char* layer, PlanChoice* chosen, size_t most, After after) {
    *chosen = PlanChoice();
    ZOC_ASSIGN_OR_RETURN(std::vector<EngineChoice> list,
                         FusedConvPlan::candidates(handle, spec(n), most, layer));
    ZOC_CUDNN(cudnnSetStream(handle, stream), layer);
    EventTimer one_call;
    float best = -1;
    FusedConvPlan winner;
    for (const EngineChoice& c : list) {
      auto built = FusedConvPlan::build_choice(handle, spec(n), c, scratch_bytes, layer);
      if (!built) continue;  // does not finalize here, or needs too much workspace
      FusedConvPlan& p = *built;
      ZOC_TRY(p.bind(x, w, bias, z, y, scratch, layer));
      auto call = [&] {
        const cudnnStatus_t ran = cudnnBackendExecute(handle, p.plan(), p.pack());
        if (ran != CUDNN_STATUS_SUCCESS) return ran;
        return after(stream) == cudaSuccess ? ran : CUDNN_STATUS_EXECUTION_FAILED;
      };
      if (call() != CUDNN_STATUS_SUCCESS) continue;  // loads the kernel; does it run at all?
      ZOC_TRY(one_call.start(stream));
      ZOC_CUDNN(call(), layer);
      ZOC_ASSIGN_OR_RETURN(const float one_ms, one_call.stop_ms(stream));
      if (best >= 0 && one_ms > 2 * best) continue;
      ZOC_ASSIGN_OR_RETURN(const float median, time_captured(stream, call, layer));
      if (best < 0 || median < best) {
        best = median;
        chosen->layer = layer;
        chosen->batch = n;
        chosen->engine = p.choice().engine;
        chosen->knobs = p.choice().knob_text();
        chosen->workspace = p.workspace_bytes();
        chosen->ms = median;
        winner = std::move(p);
      }
    }
    if (best < 0) {
      return Error{std::string("layer '") + layer + "': none of " + std::to_string(list.size()) +
                   " graph-API engine configs ran at batch " + std::to_string(n)};
    }
    return adopt(std::move(winner));
  }

  FusedConvSpec spec(int n) const {
    FusedConvSpec f{n,
                    s_.c,
                    s_.h,
                    s_.w,
                    s_.k,
                    s_.r,
                    s_.s,
                    s_.pad_h,
                    s_.pad_w,
                    s_.stride_h,
                    s_.stride_w,
                    s_.dil_h,
                    s_.dil_w,
                    s_.out_h,
                    s_.out_w,
                    residual_,
                    s_.relu,
                    p_.data,
                    p_.format == CUDNN_TENSOR_NHWC,
                    p_.data == CUDNN_DATA_FLOAT && p_.math != CUDNN_FMA_MATH,
                    s_.other_activation && !(cur_ && cur_->separate),
                    s_.activation,
                    s_.activation_params};
    f.groups = s_.groups;
    return f;
  }
  // The plan being built (cur_ points at the entry under construction) becomes its plan.
  Status adopt(FusedConvPlan p) {
    cur_->plan = std::move(p);
    workspace = cur_->plan.workspace_bytes();
    return Status::success();
  }

  ConvShape s_{};
  Precision p_{};
  bool residual_ = false;
  std::vector<std::unique_ptr<PerBatch>> plans_;  // stable addresses: cur_ points into it
  PerBatch* cur_ = nullptr;
  Bound bound_;
  ConvLayer legacy_;
  bool legacy_created_ = false;
};

}  // namespace zoc
