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
// Needs cudnn.h and cuda_runtime.h only.
#pragma once

#include "zoc/cudnn/graph.h"
#include "zoc/cudnn/layers.h"
#include "zoc/cudnn/plan_file.h"
#include "zoc/core/timing.h"

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
    if (s.groups != 1) {
      return Error{std::string("layer '") + layer +
                   "': the graph-API convolution supports groups = 1 only"};
    }
    s_ = s;
    p_ = p;
    residual_ = residual;
    return Status::success();
  }

  // Builds the plan for batch n within workspace_limit bytes of workspace: the plan file's
  // engine config for (layer, n) if it has one that fits (a graph-split one without the
  // activation), else the heuristics' first; without the epilogue's activation if no engine
  // fuses it (see separate_activation()).
  Status describe(cudnnHandle_t handle, int n, size_t workspace_limit, const char* layer,
                  const PlanFile* plan = nullptr) {
    const PlanChoice* chosen = plan ? plan->find(layer, n) : nullptr;
    if (chosen && chosen->split && s_.other_activation) {
      separate_ = true;
      return describe_spec(handle, n, workspace_limit, layer, plan);
    }
    return with_fallback([&] { return describe_spec(handle, n, workspace_limit, layer, plan); });
  }

  // Times every candidate engine config (FusedConvPlan::candidates, at most kMaxTuneCandidates)
  // on the real call at batch n with the given device pointers (z: the residual, or nullptr),
  // within `scratch_bytes` of workspace, and keeps the fastest: *chosen receives it, and the
  // layer is left described with it (bind() again before run()). Runs on `stream`. A config
  // whose second call (the first loads its kernel) takes over twice the best median so far is
  // not timed further: at batch 256 the slow engines would otherwise take most of the tuning.
  // With an activation other than ReLU, `activate(stream)` launches it in place on y: the split
  // form (the convolution's configs without it, each timed with that launch after it) competes
  // where the fused best is slower than kSplitTryMs.
  template <class Activate>
  Status tune(cudnnHandle_t handle, int n, void* x, const void* w, const void* bias,
              const void* z, void* y, void* scratch, size_t scratch_bytes, cudaStream_t stream,
              const char* layer, PlanChoice* chosen, Activate activate) {
    auto no_activation = [](cudaStream_t) { return cudaSuccess; };
    auto fused_step = [&] {
      return tune_spec(handle, n, x, w, bias, z, y, scratch, scratch_bytes, stream, layer, chosen,
                       kMaxTuneCandidates, no_activation);
    };
    if (!s_.other_activation) return with_fallback(fused_step);
    separate_ = false;
    Status fused = fused_step();
    if (fused && chosen->ms <= kSplitTryMs) return fused;
    const PlanChoice fused_choice = *chosen;
    FusedConvPlan fused_plan = std::move(plan_);
    separate_ = true;
    Status split = tune_spec(handle, n, x, w, bias, z, y, scratch, scratch_bytes, stream, layer,
                             chosen, fused ? kMaxSplitCandidates : kMaxTuneCandidates, activate);
    if (split && (!fused || chosen->ms < fused_choice.ms)) {
      chosen->split = true;
      return split;
    }
    separate_ = false;
    *chosen = fused_choice;
    if (!fused) return fused;
    return adopt(std::move(fused_plan));
  }

  // True when the plan lacks the epilogue's activation (no engine fuses it): the caller applies
  // ConvShape::activation in place on y after run().
  bool separate_activation() const { return separate_; }

  // Fixes the pointers the plan reads and writes (z: the residual, or null).
  Status bind(void* x, const void* w, const void* bias, const void* z, void* y, void* ws,
              const char* layer) {
    return plan_.bind(x, w, bias, z, y, ws, layer);
  }

  Status run(cudnnHandle_t handle, const char* layer) const { return plan_.run(handle, layer); }

  // The engine the current plan runs, for logs ("A#0 eng12 tc {k2=3}", "plan eng..." when
  // rebuilt from a plan file; "+ activation kernel" when the activation runs after it).
  std::string engine_name() const {
    return plan_.engine_name() + (separate_ ? " + activation kernel" : "");
  }

  void destroy() { plan_ = FusedConvPlan(); }

 private:
  // Runs `step` (describe or tune) with the activation in the epilogue; if that fails and the
  // activation is not ReLU, once more without it. The first error is the one reported when
  // both fail.
  template <class Step>
  Status with_fallback(Step step) {
    separate_ = false;
    Status fused = step();
    if (fused || !s_.other_activation) return fused;
    separate_ = true;
    Status plain = step();
    if (!plain) {
      separate_ = false;
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
                   const void* z, void* y, void* scratch, size_t scratch_bytes,
                   cudaStream_t stream, const char* layer, PlanChoice* chosen, size_t most,
                   After after) {
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
    return FusedConvSpec{n,         s_.c,        s_.h,        s_.w,      s_.k,      s_.r,
                         s_.s,      s_.pad_h,    s_.pad_w,    s_.stride_h, s_.stride_w, s_.dil_h,
                         s_.dil_w,  s_.out_h,    s_.out_w,    residual_, s_.relu,   p_.data,
                         p_.format == CUDNN_TENSOR_NHWC,
                         p_.data == CUDNN_DATA_FLOAT && p_.math != CUDNN_FMA_MATH,
                         s_.other_activation && !separate_, s_.activation, s_.activation_params};
  }
  Status adopt(FusedConvPlan p) {
    plan_ = std::move(p);
    workspace = plan_.workspace_bytes();
    return Status::success();
  }

  ConvShape s_{};
  Precision p_{};
  bool residual_ = false;
  bool separate_ = false;  // the plan lacks s_.activation (separate_activation())
  FusedConvPlan plan_;
};

}  // namespace zoc
