// A fused convolution layer on cuDNN's graph (backend) API, with the same create / describe /
// destroy shape as the legacy bundles in cudnn_layers.h, so the emitter can use either.
//
// describe() builds the execution plan for a batch size (host-side, one-time per batch size);
// bind() fixes the device pointers into a variant pack once; run() is then a single
// cudnnBackendExecute, which costs a few microseconds of host time where the legacy
// cudnnConvolutionBiasActivationForward costs about a hundred (see
// results/2026-11-22-h200-cudnn-graph-prototype/). Needs cudnn.h and cuda_runtime.h only.
#pragma once

#include "zoc/cudnn_graph.h"
#include "zoc/cudnn_layers.h"

namespace zoc {

class GraphConvLayer {
 public:
  size_t workspace = 0;  // of the plan for the current batch size

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

  // Builds the plan for batch n within workspace_limit bytes of workspace.
  Status describe(cudnnHandle_t handle, int n, size_t workspace_limit, const char* layer) {
    FusedConvSpec spec{n,         s_.c,        s_.h,        s_.w,      s_.k,      s_.r,
                       s_.s,      s_.pad_h,    s_.pad_w,    s_.stride_h, s_.stride_w, s_.dil_h,
                       s_.dil_w,  s_.out_h,    s_.out_w,    residual_, s_.relu,   p_.data,
                       p_.format == CUDNN_TENSOR_NHWC,
                       p_.data == CUDNN_DATA_FLOAT && p_.math != CUDNN_FMA_MATH};
    auto built = FusedConvPlan::build(handle, spec, workspace_limit, layer);
    if (!built) return built.error();
    plan_ = std::move(*built);
    workspace = plan_.workspace_bytes();
    return Status::success();
  }

  // Fixes the pointers the plan reads and writes (z: the residual, or null).
  Status bind(void* x, const void* w, const void* bias, const void* z, void* y, void* ws,
              const char* layer) {
    return plan_.bind(x, w, bias, z, y, ws, layer);
  }

  Status run(cudnnHandle_t handle, const char* layer) const { return plan_.run(handle, layer); }

  void destroy() { plan_ = FusedConvPlan(); }

 private:
  ConvShape s_{};
  Precision p_{};
  bool residual_ = false;
  FusedConvPlan plan_;
};

}  // namespace zoc
