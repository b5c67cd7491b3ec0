// Fused convolution (conv + bias [+ residual] [+ activation]) through cuDNN's backend (graph) API,
// built once and executed with a single cudnnBackendExecute per call.
//
// Why: cuDNN 9's deprecated cudnnConvolutionBiasActivationForward costs about 100 us of host time
// per fp16 NHWC call on an H200 (23 us in fp32 NCHW), as if it described and planned the whole
// fusion again on every call, so a generated ResNet-50 without a CUDA graph is host-bound at
// 6.8 ms per forward. Here all of that is done once, at construction: the operation graph
// (zoc/cudnn/graph_ops.h), the engine config (zoc/cudnn/graph_engine.h: heuristics mode A, then
// FALLBACK, or exactly the config a plan file names), the finalized execution plan and the
// variant pack holding the device pointers (fixed: weights and arena offsets are known when the
// model is built); forward() is left with cudnnBackendExecute. A plan is specific to its batch
// size: a model builds one per batch it runs, outside forward() (e.g. in set_batch), or one for
// its maximum batch only. When no engine supports the graph, build() returns an error for which
// is_no_engine_error() is true, so the caller can keep the legacy call.
// Header-only C++17; needs cudnn.h and cuda_runtime.h (through cuda_check.h and device.h).
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>
#include <utility>
#include <vector>

#include "zoc/cudnn/graph_engine.h"
#include "zoc/cudnn/graph_ops.h"

namespace zoc {

class FusedConvPlan {
 public:
  FusedConvPlan() = default;
  ~FusedConvPlan() { release(); }
  FusedConvPlan(FusedConvPlan&& o) noexcept { take(o); }
  FusedConvPlan& operator=(FusedConvPlan&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  FusedConvPlan(const FusedConvPlan&) = delete;
  FusedConvPlan& operator=(const FusedConvPlan&) = delete;

  // Builds the operation graph for `s` and the first execution plan, in heuristics order (mode A,
  // then FALLBACK), that finalizes and needs at most `workspace_limit` bytes of workspace.
  // Skipped: engines that down-convert inputs or reduce in reduced precision (fp32 compute is
  // the contract) and, in fp32 without allow_tf32, those with tensor-core numerics (TF32).
  // `device_prop`, normally null, is a finalized CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR (cuDNN >=
  // 9.8) to plan for a device that is not present (handle null): how a GPU-less machine can
  // check this function, and a way to build plans ahead of time.
  static Expected<FusedConvPlan> build(cudnnHandle_t handle, const FusedConvSpec& s,
                                       size_t workspace_limit, const char* layer,
                                       cudnnBackendDescriptor_t device_prop = nullptr) {
    using namespace graph_detail;
    constexpr int kMaxAttempts = 16;  // plan finalizations: the good configs come first
    ZOC_TRY(validate(s, layer));
    FusedConvPlan p;  // owns every descriptor from here on, on every path
    p.spec_ = s;
    ZOC_ASSIGN_OR_RETURN(const cudnnBackendDescriptor_t graph,
                         make_op_graph(handle, s, &p.keep_, layer));
    std::string tried;  // why the rejected configs were rejected, for the error message
    ZOC_ASSIGN_OR_RETURN(std::vector<OfferedConfig> offered,
                         all_offered(s, graph, device_prop, false, &tried, layer));
    int attempts = 0;
    for (OfferedConfig& o : offered) {
      if (attempts++ == kMaxAttempts) break;
      ZOC_ASSIGN_OR_RETURN(bool ok, p.adopt(std::move(o.cfg), o.info, o.tag, workspace_limit,
                                            device_prop, &tried, layer));
      if (ok) return Expected<FusedConvPlan>(std::move(p));
    }
    return Error{"layer '" + std::string(layer ? layer : "") + "': " + kNoEngineMarker + " (" +
                 std::to_string(attempts) + " plans tried" + tried + ")"};
  }

  // Builds exactly the engine config `choice` (from a plan file, or a tuning candidate) for `s`.
  // An error when it does not finalize or needs more than `workspace_limit` bytes.
  static Expected<FusedConvPlan> build_choice(cudnnHandle_t handle, const FusedConvSpec& s,
                                              const EngineChoice& choice, size_t workspace_limit,
                                              const char* layer,
                                              cudnnBackendDescriptor_t device_prop = nullptr) {
    using namespace graph_detail;
    ZOC_TRY(validate(s, layer));
    FusedConvPlan p;
    p.spec_ = s;
    ZOC_ASSIGN_OR_RETURN(const cudnnBackendDescriptor_t graph,
                         make_op_graph(handle, s, &p.keep_, layer));
    ZOC_ASSIGN_OR_RETURN(BackendDesc cfg, make_config(graph, choice, &p.keep_, layer));
    ZOC_ASSIGN_OR_RETURN(ConfigInfo info, describe_config(cfg, layer));
    std::string why;
    ZOC_ASSIGN_OR_RETURN(
        bool ok, p.adopt(std::move(cfg), info, "plan", workspace_limit, device_prop, &why, layer));
    if (!ok) {
      return Error{"layer '" + std::string(layer ? layer : "") + "': engine config " +
                   std::to_string(choice.engine) + " {" + choice.knob_text() +
                   "} cannot run: " + why.substr(2)};
    }
    return Expected<FusedConvPlan>(std::move(p));
  }

  // The engine configs worth timing for `s`: all that heuristics modes A and B and the fallback
  // list offer within the precision's numerics, each once, A's best first; at most `max`.
  static Expected<std::vector<EngineChoice>> candidates(cudnnHandle_t handle,
                                                        const FusedConvSpec& s, size_t max,
                                                        const char* layer) {
    using namespace graph_detail;
    ZOC_TRY(validate(s, layer));
    std::vector<BackendDesc> keep;
    ZOC_ASSIGN_OR_RETURN(const cudnnBackendDescriptor_t graph,
                         make_op_graph(handle, s, &keep, layer));
    std::string notes;
    ZOC_ASSIGN_OR_RETURN(std::vector<OfferedConfig> offered,
                         all_offered(s, graph, nullptr, true, &notes, layer));
    std::vector<EngineChoice> out;
    for (const OfferedConfig& o : offered) {
      if (out.size() == max) break;
      out.push_back(o.info.choice);
    }
    while (!keep.empty()) keep.pop_back();  // users before what they use
    return out;
  }

  size_t workspace_bytes() const { return workspace_; }
  const FusedConvSpec& spec() const { return spec_; }
  const EngineChoice& choice() const { return choice_; }
  // "A#0 eng12 rtc tc {k2=3,...}": heuristics mode and rank (or "plan"), engine, notes, knobs.
  std::string engine_name() const { return name_; }

  // Binds the device pointers into a prebuilt variant pack; call again to rebind. `z` must be
  // given exactly when the spec has a residual; `workspace` when workspace_bytes() > 0.
  Status bind(void* x, const void* w, const void* bias, const void* z, void* y, void* workspace,
              const char* layer) {
    using namespace graph_detail;
    const std::string who = "layer '" + std::string(layer ? layer : "") + "': ";
    if (!plan_.get()) return Error{who + "bind() on an empty FusedConvPlan"};
    pack_.reset();  // a failed bind leaves the plan unbound, never bound to stale pointers
    if (spec_.residual != (z != nullptr)) {
      return Error{who + "the residual z is " + (spec_.residual ? "required" : "not expected") +
                   " by this fused convolution"};
    }
    if (workspace_ > 0 && workspace == nullptr) {
      return Error{who + "the plan needs " + std::to_string(workspace_) +
                   " bytes of workspace but none was given"};
    }
    int64_t uids[5] = {kUidX, kUidW, kUidB, kUidY, kUidZ};
    void* ptrs[5] = {x, const_cast<void*>(w), const_cast<void*>(bias), y, const_cast<void*>(z)};
    const char* names[5] = {"x", "w", "bias", "y", "residual z"};
    const int64_t n = spec_.residual ? 5 : 4;
    for (int64_t i = 0; i < n; ++i) {
      const std::string what = who + names[i] + " of the fused convolution";
      ZOC_TRY(check_device_pointer(ptrs[i], what.c_str()));
      if (reinterpret_cast<uintptr_t>(ptrs[i]) % kAlignment != 0) {
        return Error{what + " is not " + std::to_string(kAlignment) + "-byte aligned"};
      }
    }
    void* ws = workspace;
    ZOC_ASSIGN_OR_RETURN(
        BackendDesc pack,
        BackendDesc::create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack", layer));
    ZOC_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids,
                 "variant pack", layer);
    ZOC_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs,
                 "variant pack", layer);
    ZOC_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws,
                 "variant pack", layer);
    ZOC_TRY(finalize(pack, "variant pack", layer));
    pack_ = std::move(pack);
    return Status();
  }

  // The finalized plan and the bound variant pack (null before bind), for timing loops.
  cudnnBackendDescriptor_t plan() const { return plan_.get(); }
  cudnnBackendDescriptor_t pack() const { return pack_.get(); }

  // One cudnnBackendExecute on the handle's stream with the bound pointers.
  Status run(cudnnHandle_t handle, const char* layer) const {
    if (!pack_.get())
      return Error{"layer '" + std::string(layer ? layer : "") +
                   "': FusedConvPlan::run before bind"};
    ZOC_CUDNN(cudnnBackendExecute(handle, plan_.get(), pack_.get()), layer);
    return Status();
  }

 private:
  // Finalizes an execution plan of `cfg` and keeps it when its workspace fits: true; false
  // (with the reason appended to *why) when cuDNN cannot finalize it or it needs too much.
  Expected<bool> adopt(BackendDesc cfg, const graph_detail::ConfigInfo& info,
                       const std::string& tag, size_t workspace_limit,
                       cudnnBackendDescriptor_t device_prop, std::string* why, const char* layer) {
    using namespace graph_detail;
    const std::string name = tag + " " + info.name();
    ZOC_ASSIGN_OR_RETURN(
        BackendDesc plan,
        BackendDesc::create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan", layer));
    ZOC_SET_DESC(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg.get(), "execution plan", layer);
    if (device_prop) {
      ZOC_SET_DESC(plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, device_prop, "execution plan",
                   layer);
    }
    const cudnnStatus_t st = cudnnBackendFinalize(plan.get());
    if (st != CUDNN_STATUS_SUCCESS) {
      if (why->size() < 3000) *why += "; " + name + ": " + detail::cudnn_status_text(st);
      return false;
    }
    ZOC_ASSIGN_OR_RETURN(int64_t ws, get_int64(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                               "CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE", layer));
    if (ws < 0 || uint64_t(ws) > workspace_limit) {
      if (why->size() < 3000) {
        *why += "; " + name + ": workspace " + std::to_string(ws) + " bytes over the limit";
      }
      return false;
    }
    workspace_ = size_t(ws);
    name_ = name;
    choice_ = info.choice;
    keep_.push_back(std::move(cfg));
    plan_ = std::move(plan);
    return true;
  }
  void release() {  // plan and pack first, then what they were built from, newest first
    pack_.reset();
    plan_.reset();
    while (!keep_.empty()) keep_.pop_back();
  }
  void take(FusedConvPlan& o) {
    spec_ = o.spec_;
    workspace_ = std::exchange(o.workspace_, 0);
    name_ = std::move(o.name_);
    choice_ = std::move(o.choice_);
    keep_ = std::move(o.keep_);
    o.keep_.clear();
    plan_ = std::move(o.plan_);
    pack_ = std::move(o.pack_);
  }

  FusedConvSpec spec_{};
  size_t workspace_ = 0;
  std::string name_;
  EngineChoice choice_;
  std::vector<BackendDesc> keep_;
  BackendDesc plan_, pack_;
};

}  // namespace zoc
