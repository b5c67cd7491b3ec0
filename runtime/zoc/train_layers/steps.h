// The jobs a generated trainer's layer sequences are walked for (zoc/train/trainer.h): create
// the descriptor bundles, describe them for a batch size (picking algorithms), run the
// sequence (the training step, or the forward pass in evaluation mode), destroy. The trainer's
// counterpart of zoc/cudnn/model_steps.h, over the nodes of the training graph
// (compiler/passes/build_training_graph.cpp): forward nodes, the loss, and every backward node
// is one call. Each output is overwritten; several gradient contributions are summed by the
// graph's add nodes. fp32 NCHW (TF32 off, or on), or mixed precision: activations and their
// gradients bf16 or fp16 NHWC, weights fp32 (KCRS) with a bf16/fp16 copy (KRSC; a depthwise
// layer's tap-major, for zoc's own kernels) made by the layer that reads it (with SGD inside the
// backward pass, a convolution's by its update), weight gradients fp32; fp16 scales the loss.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/cudnn/kernel_steps.h"
#include "zoc/cudnn/layers.h"
#include "zoc/kernels/model_kernels.h"
#include "zoc/kernels/trainer_kernels.h"
#include "zoc/train/dist.h"
#include "zoc/train_layers/calls.h"
#include "zoc/train_layers/layers.h"

namespace zoc::train {

// What a trainer holds: handles, buffers (byte-addressed, as the call constants name them) and
// its modes. Owned by zoc::Trainer, read by the steps.
struct TrainState {
  Precision types{CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CUDNN_FMA_MATH, CUDA_R_32F,
                  CUBLAS_COMPUTE_32F};
  int max_batch = 0;
  int batch = 0;  // the batch size the descriptors describe (0: none yet)
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  void* blas_workspace = nullptr;
  char* arena = nullptr;     // activations and their gradients, per sample * max_batch
  char* params = nullptr;    // PyTorch's layout: trainable tensors first, then running statistics
  char* grads = nullptr;     // the same layout
  char* params16 = nullptr;  // mixed: each conv and linear weight's copy, at half its offset
  void* grad16 = nullptr;    // mixed: a convolution's weight gradient before it becomes fp32
  // A frozen BatchNorm's dgamma (first half) and dbeta (second half, 64-byte aligned: the
  // emitter rounds each half up to 16 floats), which cuDNN must write.
  float* discard = nullptr;
  float* discard_beta = nullptr;
  trainer_kernels::LossScale* scaler = nullptr;  // fp16: dynamic loss scaling, on the device
  float* corrections = nullptr;  // fp16 with AdamW: its bias corrections, made on the device
  float* window = nullptr;       // in-backward SGD: one node's gradients (grads is then null)
  size_t window_origin = 0;      // the float of the layout where the window starts
  float* hyper = nullptr;        // in-backward SGD: {lr, momentum, weight_decay} on the device
  bool hyper_set = false;        // set_sgd() ran
  size_t updated = kNoTensor;    // a tensor (float offset) its backward step updated in place
  float* momenta = nullptr;      // the same layout (AdamW: its first moments)
  float* second = nullptr;       // AdamW's second moments, the same layout (allocated on use)
  char* fixed = nullptr;         // BatchNorm's saved statistics, the loss
  float* loss_rows = nullptr;    // [max_batch]
  uint64_t* draws = nullptr;     // [1] on the device: steps taken, each draws its dropout masks
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  size_t workspace_need = 0;  // what the last describe() chose
  bool sized = false;         // the workspace is allocated: describe() picks within it
  bool benchmark = true;
  bool deterministic = false;
  bool dropout = true;
  uint64_t dropout_seed = 0;
  float label_smoothing = 0.0f;  // the loss's (PyTorch's cross_entropy(label_smoothing=))
  GradSync* sync = nullptr;      // data parallel: gradients averaged bucket by bucket
  size_t device_bytes = 0;

  char* act(size_t offset) const { return arena + offset * size_t(max_batch); }
  char* maybe_act(size_t offset) const { return offset == kNoTensor ? nullptr : act(offset); }
  float* a(size_t offset) const { return reinterpret_cast<float*>(act(offset)); }
  float* p(size_t offset) const {
    return offset == kNoTensor ? nullptr : reinterpret_cast<float*>(params + offset);
  }
  float* g(size_t offset) const {  // with in-backward SGD: in the window
    if (offset == kNoTensor) return nullptr;
    if (window) return window + (offset / sizeof(float) - window_origin);
    return reinterpret_cast<float*>(grads + offset);
  }
  float* f(size_t offset) const { return reinterpret_cast<float*>(fixed + offset); }
  void* p16(size_t offset) const { return params16 + offset / 2; }  // offset: params()' bytes
  // Mixed precision: activations bf16 or fp16 (types.blas_type names the one for cuBLAS).
  bool mixed() const { return types.data == CUDNN_DATA_BFLOAT16 || types.data == CUDNN_DATA_HALF; }
  const float* loss_scale() const { return scaler ? &scaler->scale : nullptr; }
  const float* skip_update() const { return scaler ? &scaler->found_inf : nullptr; }
};

// A depthwise convolution's geometry as zoc's NHWC kernels take it.
inline DepthwiseGeometry depthwise_geometry(const ConvGeometry& g) {
  DepthwiseGeometry d;
  d.c = g.c, d.h = g.h, d.w = g.w, d.out_h = g.out_h, d.out_w = g.out_w, d.kh = g.r, d.kw = g.s;
  d.stride_h = g.stride_h, d.stride_w = g.stride_w, d.pad_h = g.pad_h, d.pad_w = g.pad_w;
  d.dil_h = g.dil_h, d.dil_w = g.dil_w, d.nhwc = true;
  return d;
}

// A mixed trainer's batch norm mode (zoc/train_layers/run_step.h): cuDNN's persistent NHWC kernels.
inline constexpr cudnnBatchNormMode_t kBnPersistent = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

struct TrainStepBase : steps::KernelLayerSkips {
  Status input(const InputCall&) { return Status::success(); }
  template <class L, class C>
  Status conv(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status conv_grad(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status depthwise(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status depthwise_grad(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status conv_transpose(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status conv_transpose_grad(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status batchnorm(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status batchnorm_grad(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status pool(L&, const C&, const char*) {
    return Status::success();
  }
  template <class L, class C>
  Status pool_grad(L&, const C&, const char*) {
    return Status::success();
  }
  Status activation(const ActivationTrainCall&, const char*) { return Status::success(); }
  Status activation_grad(const ActivationGradCall&, const char*) { return Status::success(); }
  Status linear(const LinearTrainCall&, const char*) { return Status::success(); }
  Status linear_grad(const LinearGradCall&, const char*) { return Status::success(); }
  Status add(const AddCall&, const char*) { return Status::success(); }
  Status dropout(const DropoutCall&, const char*) { return Status::success(); }
  Status dropout_grad(const DropoutCall&, const char*) { return Status::success(); }
  template <size_t N>
  Status slice(const CopyCall (&)[N], const char*) {
    return Status::success();
  }
  Status mul_grad(const MulGradCall&, const char*) { return Status::success(); }
  Status operand_grad(const OperandGradCall&, const char*) { return Status::success(); }
  Status layernorm(const LayerNormTrainCall&, const char*) { return Status::success(); }
  Status layernorm_grad(const LayerNormGradCall&, const char*) { return Status::success(); }
  Status pool_kernel_grad(const PoolKernelGradCall&, const char*) { return Status::success(); }
  Status adaptive_pool_grad(const AdaptivePoolGradCall&, const char*) { return Status::success(); }
  Status pad_channels(const PadChannelsCall&, const char*) { return Status::success(); }
  Status upsample_grad(const UpsampleGradCall&, const char*) { return Status::success(); }
  Status pad_grad(const PadCall&, const char*) { return Status::success(); }
  Status softmax_grad(const SoftmaxGradCall&, const char*) { return Status::success(); }
  Status channel_conv_grad(const ChannelConvGradCall&, const char*) { return Status::success(); }
  Status loss(const LossCall&) { return Status::success(); }
  Status bucket_ready(int, size_t, size_t) { return Status::success(); }
  Status grads_to(size_t) { return Status::success(); }
  Status grads_ready(size_t, size_t) { return Status::success(); }
};

// Creates every descriptor bundle (once).
struct TrainCreate : TrainStepBase {
  TrainState& s;
  explicit TrainCreate(TrainState& state) : s(state) {}
  Status conv(Conv& l, const ConvTrainCall& c, const char* name) {
    return l.create(c.g, s.types, name);
  }
  Status depthwise(Conv& l, const ConvTrainCall& c, const char* name) {  // the geometry
    return l.create(c.g, s.types, name);
  }
  Status conv_transpose(Conv& l, const ConvTrainCall& c, const char* name) {
    return l.create(c.g, s.types, name, true);
  }
  Status batchnorm(BatchNormLayer& l, const BatchNormTrainCall& c, const char* name) {
    return l.create(c.c, c.h, c.w, s.types, name);
  }
  Status pool(PoolLayer& l, const PoolCall& c, const char* name) {
    return l.create(c.shape, s.types, name);
  }
};

// Describes every bundle for batch n, picking algorithms within `limit`; `need` collects the
// largest workspace the choices need.
struct TrainDescribe : TrainStepBase {
  TrainState& s;
  int n;
  size_t limit;
  size_t need = 0;
  TrainDescribe(TrainState& state, int batch, size_t workspace_limit)
      : s(state), n(batch), limit(workspace_limit) {}
  Status conv(Conv& l, const ConvTrainCall&, const char* name) {
    ZOC_TRY(l.describe(s.cudnn, n, limit, s.benchmark, s.deterministic, name));
    need = std::max(need, l.workspace);
    return Status::success();
  }
  Status conv_transpose(Conv& l, const ConvTrainCall& c, const char* name) {
    return conv(l, c, name);
  }
  // zoc's depthwise kernels need no workspace; a batch they do not take (32-bit indices) gets
  // cuDNN's algorithms.
  Status depthwise(Conv& l, const ConvTrainCall&, const char* name) {
    l.depthwise_on_cudnn = !trainer_kernels::depthwise_fits(n, depthwise_geometry(l.geometry()));
    if (!l.depthwise_on_cudnn) return Status::success();
    ZOC_TRY(l.describe(s.cudnn, n, limit, s.benchmark, s.deterministic, name));
    need = std::max(need, l.workspace);
    return Status::success();
  }
  // mixed: the persistent kernels' workspace, forward and backward; they need no reserve space
  // without a fused activation (checked).
  Status batchnorm(BatchNormLayer& l, const BatchNormTrainCall&, const char* name) {
    ZOC_TRY(l.describe(n, name));
    if (!s.mixed()) return Status::success();
    size_t fwd = 0, bwd = 0, reserve = 0;
    const cudnnBatchNormOps_t ops = CUDNN_BATCHNORM_OPS_BN;
    ZOC_CUDNN(
        cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
            s.cudnn, kBnPersistent, ops, l.tensor.t, nullptr, l.tensor.t, l.params, nullptr, &fwd),
        name);
    ZOC_CUDNN(cudnnGetBatchNormalizationBackwardExWorkspaceSize(
                  s.cudnn, kBnPersistent, ops, l.tensor.t, l.tensor.t, l.tensor.t, nullptr,
                  l.tensor.t, l.params, nullptr, &bwd),
              name);
    ZOC_CUDNN(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(s.cudnn, kBnPersistent, ops,
                                                                   nullptr, l.tensor.t, &reserve),
              name);
    if (s.sized && std::max(fwd, bwd) > limit) {  // the workspace is sized at max_batch
      return Error{std::string("layer '") + name + "': cuDNN's NHWC batch norm asks for " +
                   std::to_string(std::max(fwd, bwd)) + " bytes of workspace at batch " +
                   std::to_string(n) + ", more than the " + std::to_string(limit) +
                   " allocated for the largest batch"};
    }
    if (reserve != 0) {
      return Error{std::string("layer '") + name + "': cuDNN's NHWC batch norm asks for " +
                   std::to_string(reserve) + " bytes of reserve space, which zoc does not keep"};
    }
    need = std::max({need, fwd, bwd});
    return Status::success();
  }
  Status pool(PoolLayer& l, const PoolCall&, const char* name) { return l.describe(n, name); }
  // Layer norm's backward keeps its per-pixel statistics in the workspace.
  Status layernorm_grad(const LayerNormGradCall& c, const char*) {
    need = std::max(need, 2 * size_t(n) * size_t(c.hw) * sizeof(float));
    return Status::success();
  }
  // An operand's gradient sums its pieces there (zoc::operand_grad_pieces).
  Status operand_grad(const OperandGradCall& c, const char*) {
    need = std::max(need, size_t(c.c * operand_grad_pieces(n, c.c, c.hw)) * sizeof(double));
    return Status::success();
  }
};

struct TrainDestroy : TrainStepBase {
  template <class L, class C>
  Status conv(L& l, const C&, const char*) {
    l.destroy();
    return Status::success();
  }
  template <class L, class C>
  Status conv_transpose(L& l, const C&, const char*) {
    l.destroy();
    return Status::success();
  }
  template <class L, class C>
  Status depthwise(L& l, const C&, const char*) {
    l.destroy();
    return Status::success();
  }
  template <class L, class C>
  Status batchnorm(L& l, const C&, const char*) {
    l.destroy();
    return Status::success();
  }
  template <class L, class C>
  Status pool(L& l, const C&, const char*) {
    l.destroy();
    return Status::success();
  }
};

}  // namespace zoc::train
