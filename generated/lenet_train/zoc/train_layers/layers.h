// The convolution bundle of generated trainers (issue 8): fp32 NCHW (TF32 off, or on where the
// trainer was compiled with --precision tf32), or bf16/fp16 NHWC with fp32 accumulation (mixed
// precision, --precision bf16 or fp16: KRSC weights, tensor cores): forward,
// backward-data and backward-filter algorithms for one layer, so that each training-graph node
// is one call (zoc/train_layers/steps.h). Created once, described per batch size (host side only),
// destroyed with the trainer. Batch norm and pooling use the inference bundles of
// zoc/cudnn/layers.h, whose descriptors serve both directions.
//
// A transposed convolution (conv_transpose2d) is the same bundle for the convolution that maps
// its output back to its input, whose weight [C_in, C_out / groups, kh, kw] is PyTorch's: its
// forward is that convolution's backward-data, its dx the forward, its dw the backward-filter
// with x and dy exchanged, and its bias lies on the input side (create's `transposed`).
//
// Every output is overwritten (beta 0): a value with several users (a residual block's input)
// gets its gradient contributions summed by `add` nodes of the training graph. Algorithms come
// from cuDNN's heuristics or its timing (see Conv::describe), within the workspace; with TF32
// off, restricted to FMA (non-tensor-core) math and, as in inference, to no FFT or Winograd.
// Needs cudnn.h only.
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <string>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/cudnn/layers.h"  // Precision, exact_candidate
#include "zoc/train_layers/call_fields.h"

namespace zoc::train {

// A convolution's geometry (its fields: zoc/train_layers/call_fields.h).
struct ConvGeometry {
  ZOC_FIELDS_ConvGeometry(ZOC_DECLARE_FIELD)
};

// A convolution with an optional bias: y = conv(x, w) + b; backward gives dx (+=), dw, db.
class Conv {
 public:
  size_t workspace = 0;  // the most any of the three chosen algorithms needs
  // A depthwise layer the emitter gave zoc's kernels, at a batch too large for their 32-bit
  // indices: cuDNN's grouped convolution instead (zoc/train_layers/steps.h's TrainDescribe sets
  // it).
  bool depthwise_on_cudnn = false;
  const ConvGeometry& geometry() const { return g_; }

  // types: the trainer's storage type and layout, and its math: CUDNN_FMA_MATH (fp32, TF32 off),
  // CUDNN_DEFAULT_MATH (TF32 tensor cores allowed) or CUDNN_TENSOR_OP_MATH (bf16, fp16).
  Status create(const ConvGeometry& g, const Precision& types, const char* layer,
                bool transposed = false) {
    g_ = g;
    types_ = types;
    math_ = types.math;
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&x_), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&y_), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&b_), layer);
    ZOC_CUDNN(cudnnCreateFilterDescriptor(&w_), layer);
    ZOC_CUDNN(cudnnCreateConvolutionDescriptor(&conv_), layer);
    ZOC_CUDNN(
        cudnnSetFilter4dDescriptor(w_, types.data, types.format, g.k, g.c / g.groups, g.r, g.s),
        layer);
    ZOC_CUDNN(
        cudnnSetConvolution2dDescriptor(conv_, g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dil_h,
                                        g.dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        layer);
    ZOC_CUDNN(cudnnSetConvolutionGroupCount(conv_, g.groups), layer);
    ZOC_CUDNN(cudnnSetConvolutionMathType(conv_, math_), layer);
    return set_tensor(b_, types, 1, transposed ? g.c : g.k, 1, 1, layer);
  }

  // Describes batch n and picks, for each direction, the first exact algorithm that fits of
  // cuDNN's candidates: ranked by its heuristics, or with `benchmark` by timing each once (as
  // PyTorch's cudnn.benchmark; cuDNN allocates the buffers it times with); with
  // `deterministic`, only algorithms cuDNN marks deterministic (no atomics in the reduction).
  Status describe(cudnnHandle_t h, int n, size_t workspace_limit, bool benchmark,
                  bool deterministic, const char* layer) {
    deterministic_ = deterministic;
    ZOC_TRY(set_tensor(x_, types_, n, g_.c, g_.h, g_.w, layer));
    ZOC_TRY(set_tensor(y_, types_, n, g_.k, g_.out_h, g_.out_w, layer));
    workspace = 0;
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t f[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    constexpr int kF = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    ZOC_CUDNN(benchmark ? cudnnFindConvolutionForwardAlgorithm(h, x_, w_, conv_, y_, kF, &got, f)
                        : cudnnGetConvolutionForwardAlgorithm_v7(h, x_, w_, conv_, y_, kF, &got, f),
              layer);
    if (!pick(f, got, workspace_limit, &fwd_)) {
      return none(layer, "forward", n, workspace_limit);
    }
    cudnnConvolutionBwdDataAlgoPerf_t d[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    constexpr int kD = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    ZOC_CUDNN(benchmark
                  ? cudnnFindConvolutionBackwardDataAlgorithm(h, w_, y_, conv_, x_, kD, &got, d)
                  : cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_, y_, conv_, x_, kD, &got, d),
              layer);
    if (!pick(d, got, workspace_limit, &bwd_data_)) {
      return none(layer, "backward-data", n, workspace_limit);
    }
    cudnnConvolutionBwdFilterAlgoPerf_t w[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    constexpr int kW = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    ZOC_CUDNN(
        benchmark
            ? cudnnFindConvolutionBackwardFilterAlgorithm(h, x_, y_, conv_, w_, kW, &got, w)
            : cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_, y_, conv_, w_, kW, &got, w),
        layer);
    if (!pick(w, got, workspace_limit, &bwd_filter_)) {
      return none(layer, "backward-filter", n, workspace_limit);
    }
    return Status::success();
  }

  Status forward(cudnnHandle_t h, const void* x, const void* w, const void* b, void* y, void* ws,
                 size_t ws_bytes, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(
        cudnnConvolutionForward(h, &one, x_, x, w_, w, conv_, fwd_, ws, ws_bytes, &zero, y_, y),
        layer);
    if (b) ZOC_CUDNN(cudnnAddTensor(h, &one, b_, b, &one, y_, y), layer);
    return Status::success();
  }

  // dx = conv^T(dy) (dx null: nobody reads it, as the graph input's); dw = x * dy; db = sum dy.
  Status backward(cudnnHandle_t h, const void* x, const void* w, const void* dy, void* dx, void* dw,
                  void* db, void* ws, size_t ws_bytes, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    if (dx) {
      ZOC_CUDNN(cudnnConvolutionBackwardData(h, &one, w_, w, y_, dy, conv_, bwd_data_, ws, ws_bytes,
                                             &zero, x_, dx),
                layer);
    }
    if (dw) {
      ZOC_CUDNN(cudnnConvolutionBackwardFilter(h, &one, x_, x, y_, dy, conv_, bwd_filter_, ws,
                                               ws_bytes, &zero, w_, dw),
                layer);
    }
    if (db) ZOC_CUDNN(cudnnConvolutionBackwardBias(h, &one, y_, dy, &zero, b_, db), layer);
    return Status::success();
  }

  // A transposed convolution's forward from x (the geometry's output side) into y (its input
  // side), plus the bias (null: none).
  Status forward_transposed(cudnnHandle_t h, const void* x, const void* w, const void* b, void* y,
                            void* ws, size_t ws_bytes, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnConvolutionBackwardData(h, &one, w_, w, y_, x, conv_, bwd_data_, ws, ws_bytes,
                                           &zero, x_, y),
              layer);
    if (b) ZOC_CUDNN(cudnnAddTensor(h, &one, b_, b, &one, x_, y), layer);
    return Status::success();
  }

  // Its backward: dx = conv(dy) (null: nobody reads it); dw with dy as the convolution's input
  // and x as its output's gradient; db = sum dy (null: no bias).
  Status backward_transposed(cudnnHandle_t h, const void* x, const void* w, const void* dy,
                             void* dx, void* dw, void* db, void* ws, size_t ws_bytes,
                             const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    if (dx) {
      ZOC_CUDNN(
          cudnnConvolutionForward(h, &one, x_, dy, w_, w, conv_, fwd_, ws, ws_bytes, &zero, y_, dx),
          layer);
    }
    if (dw) {
      ZOC_CUDNN(cudnnConvolutionBackwardFilter(h, &one, x_, dy, y_, x, conv_, bwd_filter_, ws,
                                               ws_bytes, &zero, w_, dw),
                layer);
    }
    if (db) ZOC_CUDNN(cudnnConvolutionBackwardBias(h, &one, x_, dy, &zero, b_, db), layer);
    return Status::success();
  }

  void destroy() {
    if (x_) cudnnDestroyTensorDescriptor(x_);
    if (y_) cudnnDestroyTensorDescriptor(y_);
    if (b_) cudnnDestroyTensorDescriptor(b_);
    if (w_) cudnnDestroyFilterDescriptor(w_);
    if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
    x_ = y_ = b_ = nullptr;
    w_ = nullptr;
    conv_ = nullptr;
  }

 private:
  // The first of cuDNN's ranked candidates that runs, fits the workspace and (TF32 off) uses
  // FMA math and is exact (exact_candidate); its workspace counts toward `workspace`. bf16 and
  // fp16: only candidates measured with the descriptor's own tensor-op math (cuDNN also ranks
  // other math types, whose time and workspace are not what runs: taking them made steps 5x
  // slower, and one asked for more workspace than it was ranked with; on 2026-12-01, taking the
  // fastest timed candidate of any type and setting the direction's descriptor to its math type
  // made ResNet-50's and MobileNetV2's bf16 and fp16 steps 5-8x slower too).
  template <class Perf, class Algo>
  bool pick(const Perf* perf, int got, size_t limit, Algo* algo) {
    for (int i = 0; i < got; ++i) {
      const bool tensor_op = math_ == CUDNN_TENSOR_OP_MATH;
      if (!exact_candidate(perf[i], math_, limit) ||
          (tensor_op && perf[i].mathType != CUDNN_TENSOR_OP_MATH) ||
          (deterministic_ && perf[i].determinism != CUDNN_DETERMINISTIC)) {
        continue;
      }
      *algo = perf[i].algo;
      workspace = std::max(workspace, perf[i].memory);
      return true;
    }
    return false;
  }
  Status none(const char* layer, const char* what, int n, size_t limit) const {
    const char* type = types_.data == CUDNN_DATA_BFLOAT16 ? "bf16"
                       : types_.data == CUDNN_DATA_HALF   ? "fp16"
                                                          : "fp32";
    return Error{std::string("layer '") + layer + "': no usable " + type + " " + what +
                 " convolution algorithm for batch " + std::to_string(n) + " fits a workspace of " +
                 std::to_string(limit) + " bytes"};
  }
  ConvGeometry g_{};
  Precision types_{};
  bool deterministic_ = false;
  cudnnMathType_t math_ = CUDNN_FMA_MATH;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
};

}  // namespace zoc::train
