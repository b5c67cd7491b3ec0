// cuDNN descriptor bundles for generated trainers (issue 8), fp32 NCHW with TF32 off: each
// training layer's forward and backward calls, so that the generated step() is a straight
// line of one call per layer and direction. Created once, described per batch size (host side
// only), destroyed with the trainer.
//
// Conventions every backward call here follows: parameter gradients are overwritten (beta 0);
// the gradient of a layer's input is *added* to (beta 1), because a value with several users (a
// residual block's input) collects one contribution from each, and the trainer zeroes all value
// gradients at the start of a step. Algorithms come from cuDNN's heuristics or its timing (see
// Conv::describe), restricted to FMA
// (non-tensor-core) math and, as in inference, to no FFT or Winograd, within the workspace.
// Needs cudnn.h only.
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <string>

#include "zoc/core/cuda_check.h"
#include "zoc/cudnn/exact.h"
#include "zoc/core/expected.h"

namespace zoc::train {

inline Status set4d(cudnnTensorDescriptor_t d, int n, int c, int h, int w, const char* layer) {
  ZOC_CUDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w), layer);
  return Status::success();
}

struct ConvGeometry {
  int c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups, out_h, out_w;
};

// A convolution with an optional bias: y = conv(x, w) + b; backward gives dx (+=), dw, db.
class Conv {
 public:
  size_t workspace = 0;  // the most any of the three chosen algorithms needs

  Status create(const ConvGeometry& g, const char* layer) {
    g_ = g;
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&x_), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&y_), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&b_), layer);
    ZOC_CUDNN(cudnnCreateFilterDescriptor(&w_), layer);
    ZOC_CUDNN(cudnnCreateConvolutionDescriptor(&conv_), layer);
    ZOC_CUDNN(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.k,
                                         g.c / g.groups, g.r, g.s),
              layer);
    ZOC_CUDNN(cudnnSetConvolution2dDescriptor(conv_, g.pad_h, g.pad_w, g.stride_h, g.stride_w,
                                              g.dil_h, g.dil_w, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT),
              layer);
    ZOC_CUDNN(cudnnSetConvolutionGroupCount(conv_, g.groups), layer);
    ZOC_CUDNN(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH), layer);
    return set4d(b_, 1, g.k, 1, 1, layer);
  }

  // Describes batch n and picks, for each direction, the first exact algorithm that fits of
  // cuDNN's candidates: ranked by its heuristics, or with `benchmark` by timing each once (as
  // PyTorch's cudnn.benchmark; cuDNN allocates the buffers it times with); with
  // `deterministic`, only algorithms cuDNN marks deterministic (no atomics in the reduction).
  Status describe(cudnnHandle_t h, int n, size_t workspace_limit, bool benchmark,
                  bool deterministic, const char* layer) {
    deterministic_ = deterministic;
    ZOC_TRY(set4d(x_, n, g_.c, g_.h, g_.w, layer));
    ZOC_TRY(set4d(y_, n, g_.k, g_.out_h, g_.out_w, layer));
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

  Status forward(cudnnHandle_t h, const float* x, const float* w, const float* b, float* y,
                 void* ws, size_t ws_bytes, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnConvolutionForward(h, &one, x_, x, w_, w, conv_, fwd_, ws, ws_bytes, &zero,
                                      y_, y),
              layer);
    if (b) ZOC_CUDNN(cudnnAddTensor(h, &one, b_, b, &one, y_, y), layer);
    return Status::success();
  }

  // dx (may be null: the graph's input needs no gradient) += conv^T(dy); dw = x * dy; db = sum dy.
  Status backward(cudnnHandle_t h, const float* x, const float* w, const float* dy, float* dx,
                  float* dw, float* db, void* ws, size_t ws_bytes, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    if (dx) {
      ZOC_CUDNN(cudnnConvolutionBackwardData(h, &one, w_, w, y_, dy, conv_, bwd_data_, ws,
                                             ws_bytes, &one, x_, dx),
                layer);
    }
    ZOC_CUDNN(cudnnConvolutionBackwardFilter(h, &one, x_, x, y_, dy, conv_, bwd_filter_, ws,
                                             ws_bytes, &zero, w_, dw),
              layer);
    if (db) ZOC_CUDNN(cudnnConvolutionBackwardBias(h, &one, y_, dy, &zero, b_, db), layer);
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
  // The first of cuDNN's ranked candidates that runs, fits the workspace, uses FMA math and is
  // exact; its workspace counts toward `workspace`.
  template <class Perf, class Algo>
  bool pick(const Perf* perf, int got, size_t limit, Algo* algo) {
    for (int i = 0; i < got; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit ||
          perf[i].mathType != CUDNN_FMA_MATH || !exact_algo(perf[i].algo) ||
          (deterministic_ && perf[i].determinism != CUDNN_DETERMINISTIC)) {
        continue;
      }
      *algo = perf[i].algo;
      workspace = std::max(workspace, perf[i].memory);
      return true;
    }
    return false;
  }
  static Status none(const char* layer, const char* what, int n, size_t limit) {
    return Error{std::string("layer '") + layer + "': no exact fp32 " + what +
                 " convolution algorithm for batch " + std::to_string(n) + " fits a workspace of " +
                 std::to_string(limit) + " bytes"};
  }
  ConvGeometry g_{};
  bool deterministic_ = false;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
};

// Training-mode batch normalization (spatial: one mean and variance per channel over the batch
// and the image). cuDNN's running averages follow PyTorch: (1 - momentum) * running + momentum *
// batch statistic, with the unbiased variance; saved mean and inverse deviation feed backward.
class BatchNorm {
 public:
  Status create(int c, int h, int w, double eps, double momentum, const char* layer) {
    c_ = c;
    h_ = h;
    w_ = w;
    eps_ = std::max(eps, CUDNN_BN_MIN_EPSILON);
    momentum_ = momentum;
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&x_), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&p_), layer);
    return set4d(p_, 1, c, 1, 1, layer);
  }
  Status describe(int n, const char* layer) { return set4d(x_, n, c_, h_, w_, layer); }

  // y = BN(x) with the batch's statistics; updates running_mean/var in place and writes
  // save_mean/save_invstd ([c] each).
  Status forward(cudnnHandle_t h, const float* x, float* y, const float* gamma, const float* beta,
                 float* running_mean, float* running_var, float* save_mean, float* save_invstd,
                 const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnBatchNormalizationForwardTraining(
                  h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_, x, x_, y, p_, gamma, beta,
                  momentum_, running_mean, running_var, eps_, save_mean, save_invstd),
              layer);
    return Status::success();
  }

  // Evaluation mode: y = (x - running_mean) / sqrt(running_var + eps) * gamma + beta.
  Status forward_inference(cudnnHandle_t h, const float* x, float* y, const float* gamma,
                           const float* beta, const float* running_mean,
                           const float* running_var, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_,
                                                      x, x_, y, p_, gamma, beta, running_mean,
                                                      running_var, eps_),
              layer);
    return Status::success();
  }

  // dx += BN'(dy); dgamma, dbeta overwritten.
  Status backward(cudnnHandle_t h, const float* x, const float* dy, float* dx, const float* gamma,
                  float* dgamma, float* dbeta, const float* save_mean, const float* save_invstd,
                  const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnBatchNormalizationBackward(h, CUDNN_BATCHNORM_SPATIAL, &one, &one, &one, &zero,
                                              x_, x, x_, dy, x_, dx, p_, gamma, dgamma, dbeta,
                                              eps_, save_mean, save_invstd),
              layer);
    return Status::success();
  }

  void destroy() {
    if (x_) cudnnDestroyTensorDescriptor(x_);
    if (p_) cudnnDestroyTensorDescriptor(p_);
    x_ = p_ = nullptr;
  }

 private:
  int c_ = 0, h_ = 0, w_ = 0;
  double eps_ = 1e-5, momentum_ = 0.1;
  cudnnTensorDescriptor_t x_ = nullptr, p_ = nullptr;
};

// Max or average pooling (global average pooling is a window of the whole image).
class Pool {
 public:
  Status create(cudnnPoolingMode_t mode, int kh, int kw, int pad_h, int pad_w, int stride_h,
                int stride_w, int c, int h, int w, int out_h, int out_w, const char* layer) {
    c_ = c;
    h_ = h;
    w_ = w;
    oh_ = out_h;
    ow_ = out_w;
    ZOC_CUDNN(cudnnCreatePoolingDescriptor(&pool_), layer);
    ZOC_CUDNN(cudnnSetPooling2dDescriptor(pool_, mode, CUDNN_PROPAGATE_NAN, kh, kw, pad_h, pad_w,
                                          stride_h, stride_w),
              layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&x_), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&y_), layer);
    return Status::success();
  }
  Status describe(int n, const char* layer) {
    ZOC_TRY(set4d(x_, n, c_, h_, w_, layer));
    return set4d(y_, n, c_, oh_, ow_, layer);
  }
  Status forward(cudnnHandle_t h, const float* x, float* y, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnPoolingForward(h, pool_, &one, x_, x, &zero, y_, y), layer);
    return Status::success();
  }
  // dx += pool'(dy)
  Status backward(cudnnHandle_t h, const float* x, const float* y, const float* dy, float* dx,
                  const char* layer) const {
    const float one = 1.0f;
    ZOC_CUDNN(cudnnPoolingBackward(h, pool_, &one, y_, y, y_, dy, x_, x, &one, x_, dx), layer);
    return Status::success();
  }
  void destroy() {
    if (pool_) cudnnDestroyPoolingDescriptor(pool_);
    if (x_) cudnnDestroyTensorDescriptor(x_);
    if (y_) cudnnDestroyTensorDescriptor(y_);
    pool_ = nullptr;
    x_ = y_ = nullptr;
  }

 private:
  int c_ = 0, h_ = 0, w_ = 0, oh_ = 0, ow_ = 0;
  cudnnPoolingDescriptor_t pool_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
};

// ReLU, tanh or sigmoid over a tensor of `per_sample` elements per sample.
class Activation {
 public:
  Status create(cudnnActivationMode_t mode, int per_sample, const char* layer) {
    per_sample_ = per_sample;
    ZOC_CUDNN(cudnnCreateActivationDescriptor(&act_), layer);
    ZOC_CUDNN(cudnnSetActivationDescriptor(act_, mode, CUDNN_PROPAGATE_NAN, 0.0), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&t_), layer);
    return Status::success();
  }
  Status describe(int n, const char* layer) { return set4d(t_, n, per_sample_, 1, 1, layer); }
  Status forward(cudnnHandle_t h, const float* x, float* y, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnActivationForward(h, act_, &one, t_, x, &zero, t_, y), layer);
    return Status::success();
  }
  // dx += act'(dy)
  Status backward(cudnnHandle_t h, const float* x, const float* y, const float* dy, float* dx,
                  const char* layer) const {
    const float one = 1.0f;
    ZOC_CUDNN(cudnnActivationBackward(h, act_, &one, t_, y, t_, dy, t_, x, &one, t_, dx), layer);
    return Status::success();
  }
  void destroy() {
    if (act_) cudnnDestroyActivationDescriptor(act_);
    if (t_) cudnnDestroyTensorDescriptor(t_);
    act_ = nullptr;
    t_ = nullptr;
  }

 private:
  int per_sample_ = 0;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnTensorDescriptor_t t_ = nullptr;
};

}  // namespace zoc::train
