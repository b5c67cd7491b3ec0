// cuDNN descriptor bundles for the generated code: created once in the constructor, re-described
// (host-side only, no allocation) when the batch size changes, destroyed in the destructor.
//
// The generated forward() makes the library calls itself, one per layer, reading these
// descriptors; this header keeps the repetitive descriptor plumbing out of the generated
// source. Algorithm choice uses a measured plan (zoc/cudnn/plan_file.h, ConvLayer::tune) where one
// is given, else cuDNN's heuristics (cudnnGetConvolutionForwardAlgorithm_v7), restricted to the
// workspace the model allocated and, in fp32 mode, to non-tensor-core (FMA) kernels so that
// TF32 is really off (the exact-fp32 algorithm list below, which the trainer's convolution
// bundle, zoc/train_layers/layers.h, uses too). Needs cudnn.h and cublas_v2.h only.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <algorithm>
#include <string>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/cudnn/call_fields.h"
#include "zoc/cudnn/plan_file.h"
#include "zoc/cudnn/recorded_launch.h"
#include "zoc/math/activations.h"

namespace zoc {

// Which convolution algorithms keep fp32 exact. fp32 with TF32 off promises PyTorch's fp32
// numerics (relative L2 error 1e-4): besides non-tensor-core (FMA) math, that rules out the FFT
// and Winograd transforms, which lose digits (measured on an H100: a tuned LeNet picked FFT and
// reached 2e-4). One list for inference (here, and zoc/cudnn/transpose_layer.h) and training
// (zoc/train_layers/layers.h), overloaded per direction so that callers choose by type, not through
// a function pointer.
inline bool exact_algo(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
inline bool exact_algo(cudnnConvolutionBwdDataAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
inline bool exact_algo(cudnnConvolutionBwdFilterAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// The rule both apply to one of cuDNN's ranked candidates (a cudnnConvolution*AlgoPerf_t): it
// ran, fits `limit` bytes of workspace and, under a descriptor with TF32 off (FMA math), was
// measured with FMA math and is exact.
template <class Perf>
bool exact_candidate(const Perf& perf, cudnnMathType_t math, size_t limit) {
  if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > limit) return false;
  return math != CUDNN_FMA_MATH || (perf.mathType == CUDNN_FMA_MATH && exact_algo(perf.algo));
}

// How a model's tensors are stored and computed (its fields: zoc/cudnn/call_fields.h).
struct Precision {
  ZOC_FIELDS_Precision(ZOC_DECLARE_FIELD)
};

inline Status set_tensor(cudnnTensorDescriptor_t d, const Precision& p, int n, int c, int h, int w,
                         const char* layer) {
  ZOC_CUDNN(cudnnSetTensor4dDescriptor(d, p.format, p.data, n, c, h, w), layer);
  return Status::success();
}

// A fused convolution's shape (its fields: zoc/cudnn/call_fields.h).
struct ConvShape {
  ZOC_FIELDS_ConvShape(ZOC_DECLARE_FIELD)
};

// A convolution's filter [k, c / groups, r, s] and its padding, stride, dilation, groups and
// math type, as cuDNN describes them (ConvLayer; ConvTransposeLayer's backward-data call).
inline Status set_conv_descriptors(cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                                   const ConvShape& s, const Precision& p, const char* layer) {
  ZOC_CUDNN(cudnnSetFilter4dDescriptor(w, p.data, p.format, s.k, s.c / s.groups, s.r, s.s), layer);
  ZOC_CUDNN(cudnnSetConvolution2dDescriptor(conv, s.pad_h, s.pad_w, s.stride_h, s.stride_w, s.dil_h,
                                            s.dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            layer);
  ZOC_CUDNN(cudnnSetConvolutionGroupCount(conv, s.groups), layer);
  ZOC_CUDNN(cudnnSetConvolutionMathType(conv, p.math), layer);
  return Status::success();
}

// Times `call` (a cuDNN call enqueued on `stream`, returning its status) as the generated
// forward runs it: kReps back-to-back calls are captured into a CUDA graph whose replays are
// timed, so that the figure is GPU time and not the host's enqueue time (which dominates small
// layers). Returns the median milliseconds per call over kReplays replays after a warm-up one,
// or over 3 when a call takes over a millisecond (tuning a batch of 256 is then 40% shorter).
template <class Call>
Expected<float> time_captured(cudaStream_t stream, Call call, const char* layer) {
  struct Owned {  // released on every return
    cudaEvent_t start = nullptr, stop = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ~Owned() {
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } own;
  constexpr int kReps = 10, kReplays = 5;
  ZOC_CUDA(cudaEventCreate(&own.start), layer);
  ZOC_CUDA(cudaEventCreate(&own.stop), layer);
  ZOC_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), layer);
  cudnnStatus_t captured = CUDNN_STATUS_SUCCESS;
  for (int r = 0; r < kReps && captured == CUDNN_STATUS_SUCCESS; ++r) captured = call();
  const cudaError_t ended = cudaStreamEndCapture(stream, &own.graph);
  ZOC_CUDNN(captured, layer);
  ZOC_CUDA(ended, layer);
  ZOC_CUDA(cudaGraphInstantiate(&own.exec, own.graph, 0), layer);
  std::vector<float> times;  // per call; the first replay is the warm-up
  int replays = kReplays;
  for (int i = 0; i <= replays; ++i) {
    float t = 0;
    ZOC_CUDA(cudaEventRecord(own.start, stream), layer);
    ZOC_CUDA(cudaGraphLaunch(own.exec, stream), layer);
    ZOC_CUDA(cudaEventRecord(own.stop, stream), layer);
    ZOC_CUDA(cudaEventSynchronize(own.stop), layer);
    ZOC_CUDA(cudaEventElapsedTime(&t, own.start, own.stop), layer);
    if (i == 0 && t / kReps > 1.0f) replays = 3;
    if (i > 0) times.push_back(t / kReps);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

class ConvLayer {
 public:
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t workspace = 0;

  Status create(const ConvShape& s, const Precision& p, const char* layer) {
    if (s.other_activation) {
      return Error{std::string("layer '") + layer +
                   "': cuDNN's legacy fused convolution applies ReLU only; another activation "
                   "needs the graph API (GraphConvLayer)"};
    }
    s_ = s;
    p_ = p;
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&x), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&y), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&bias), layer);
    ZOC_CUDNN(cudnnCreateFilterDescriptor(&w), layer);
    ZOC_CUDNN(cudnnCreateConvolutionDescriptor(&conv), layer);
    ZOC_CUDNN(cudnnCreateActivationDescriptor(&act), layer);
    ZOC_TRY(set_conv_descriptors(w, conv, s, p, layer));
    ZOC_CUDNN(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, p.data, 1, s.k, 1, 1), layer);
    ZOC_CUDNN(cudnnSetActivationDescriptor(
                  act, s.relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                  CUDNN_PROPAGATE_NAN, 0.0),
              layer);
    return Status::success();
  }

  // Sets the batch-dependent dims and picks an algorithm whose workspace fits
  // `workspace_limit`: the plan file's measured choice for this layer and batch if it has one
  // that cuDNN still offers, else the fastest by cuDNN's heuristics. Host-side only.
  Status describe(cudnnHandle_t handle, int n, size_t workspace_limit, const char* layer,
                  const PlanFile* plan = nullptr) {
    ZOC_TRY(set_tensor(x, p_, n, s_.c, s_.h, s_.w, layer));
    ZOC_TRY(set_tensor(y, p_, n, s_.k, s_.out_h, s_.out_w, layer));
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    ZOC_TRY(candidates(handle, perf, &got, layer));
    const PlanChoice* chosen = plan ? plan->find(layer, n) : nullptr;
    for (int pass = chosen ? 0 : 1; pass < 2; ++pass) {
      for (int i = 0; i < got; ++i) {
        const cudnnConvolutionFwdAlgoPerf_t& c = perf[i];
        if (!usable(c, workspace_limit)) continue;
        if (pass == 0 && (int(c.algo) != chosen->algo || int(c.mathType) != chosen->math)) continue;
        algo = c.algo;
        workspace = c.memory;
        ZOC_CUDNN(cudnnSetConvolutionMathType(conv, c.mathType), layer);
        return Status::success();
      }
    }
    return Error{std::string("layer '") + layer + "': no cuDNN convolution algorithm for batch " +
                 std::to_string(n) + " fits a workspace of " + std::to_string(workspace_limit) +
                 " bytes"};
  }

  // Times every usable algorithm (within `scratch_bytes` of workspace) on the real call this
  // layer makes in forward(), at batch n, with the given device pointers (z: the residual, or
  // nullptr), and keeps the fastest. Each candidate runs once, then kReps back-to-back calls are
  // captured into a CUDA graph whose replays are timed, so that the figure is GPU time, as in
  // the generated forward, and not the host's enqueue time (which dominates small layers).
  // Leaves the layer described for n with the winner; *chosen receives it. Runs on `stream`.
  Status tune(cudnnHandle_t handle, int n, const void* in, const void* weight,
              const void* bias_data, const void* z, void* out, void* scratch, size_t scratch_bytes,
              cudaStream_t stream, const char* layer, PlanChoice* chosen) {
    *chosen = PlanChoice();
    ZOC_TRY(describe(handle, n, scratch_bytes, layer));
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    ZOC_TRY(candidates(handle, perf, &got, layer));
    ZOC_CUDNN(cudnnSetStream(handle, stream), layer);
    const float one = 1.0f, zero = 0.0f;
    float best = -1;
    for (int i = 0; i < got; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& c = perf[i];
      if (!usable(c, scratch_bytes)) continue;
      ZOC_CUDNN(cudnnSetConvolutionMathType(conv, c.mathType), layer);
      auto call = [&] {
        return cudnnConvolutionBiasActivationForward(handle, &one, x, in, w, weight, conv, c.algo,
                                                     scratch, c.memory, z ? &one : &zero, y,
                                                     z ? z : out, bias, bias_data, act, y, out);
      };
      const cudnnStatus_t first = call();  // loads the kernel; says whether it runs at all
      if (first == CUDNN_STATUS_NOT_SUPPORTED) continue;  // listed, not for this call: skip
      ZOC_CUDNN(first, layer);
      ZOC_ASSIGN_OR_RETURN(const float median, time_captured(stream, call, layer));
      if (best < 0 || median < best) {
        best = median;
        chosen->layer = layer;
        chosen->batch = n;
        chosen->algo = int(c.algo);
        chosen->math = int(c.mathType);
        chosen->workspace = c.memory;
        chosen->ms = median;
      }
    }
    if (best < 0) {
      return Error{std::string("layer '") + layer + "': no convolution algorithm ran at batch " +
                   std::to_string(n)};
    }
    PlanFile only;
    only.choices.push_back(*chosen);
    return describe(handle, n, scratch_bytes, layer, &only);
  }

  // Every algorithm cuDNN's heuristics list for the current descriptors, best first. The list
  // depends on the descriptor's math type, which an earlier choice may have changed: it is
  // reset to the precision's first, so that every query sees the same candidates.
  Status candidates(cudnnHandle_t handle, cudnnConvolutionFwdAlgoPerf_t* perf, int* got,
                    const char* layer) {
    ZOC_CUDNN(cudnnSetConvolutionMathType(conv, p_.math), layer);
    ZOC_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, got, perf),
              layer);
    return Status::success();
  }

  // Whether a listed algorithm may run this layer: it works, fits the workspace, keeps fp32
  // off tensor cores, and (identity epilogue) is the one cuDNN documents for it.
  // fp32 (TF32 off): FMA math and exact algorithms only (exact_candidate above).
  bool usable(const cudnnConvolutionFwdAlgoPerf_t& c, size_t workspace_limit) const {
    if (!exact_candidate(c, p_.math, workspace_limit)) return false;
    return s_.relu || c.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  }

  void destroy() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (act) cudnnDestroyActivationDescriptor(act);
    x = y = bias = nullptr;
    w = nullptr;
    conv = nullptr;
    act = nullptr;
  }

 private:
  ConvShape s_{};
  Precision p_{};
};

struct PoolShape {
  ZOC_FIELDS_PoolShape(ZOC_DECLARE_FIELD)
};

class PoolLayer {
 public:
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  RecordedByBatch recorded;  // the plain forward's kernels per batch size (recorded_launch.h)

  Status create(const PoolShape& s, const Precision& p, const char* layer) {
    s_ = s;
    p_ = p;
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&x), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&y), layer);
    ZOC_CUDNN(cudnnCreatePoolingDescriptor(&pool), layer);
    ZOC_CUDNN(cudnnSetPooling2dDescriptor(pool, s.mode, CUDNN_PROPAGATE_NAN, s.kh, s.kw, s.pad_h,
                                          s.pad_w, s.stride_h, s.stride_w),
              layer);
    return Status::success();
  }
  Status describe(int n, const char* layer) {
    ZOC_TRY(set_tensor(x, p_, n, s_.c, s_.h, s_.w, layer));
    ZOC_TRY(set_tensor(y, p_, n, s_.c, s_.out_h, s_.out_w, layer));
    return Status::success();
  }
  void destroy() {
    recorded.clear();
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (pool) cudnnDestroyPoolingDescriptor(pool);
    x = y = nullptr;
    pool = nullptr;
  }

 private:
  PoolShape s_{};
  Precision p_{};
};

// One tensor descriptor of a fixed per-sample shape (activations, softmax, batch norm).
class TensorLayer {
 public:
  cudnnTensorDescriptor_t t = nullptr;
  RecordedByBatch recorded;  // the plain forward's kernels per batch size (softmax)

  Status create(int c, int h, int w, const Precision& p, const char* layer) {
    c_ = c;
    h_ = h;
    w_ = w;
    p_ = p;
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&t), layer);
    return Status::success();
  }
  Status describe(int n, const char* layer) { return set_tensor(t, p_, n, c_, h_, w_, layer); }
  void destroy() {
    recorded.clear();
    if (t) cudnnDestroyTensorDescriptor(t);
    t = nullptr;
  }

 private:
  int c_ = 0, h_ = 0, w_ = 0;
  Precision p_{};
};

class BatchNormLayer {
 public:
  TensorLayer tensor;
  cudnnTensorDescriptor_t params = nullptr;  // 1 x C x 1 x 1, float

  Status create(int c, int h, int w, const Precision& p, const char* layer) {
    ZOC_TRY(tensor.create(c, h, w, p, layer));
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&params), layer);
    return Status::success();
  }
  Status describe(int n, const char* layer) {
    ZOC_TRY(tensor.describe(n, layer));
    ZOC_CUDNN(cudnnDeriveBNTensorDescriptor(params, tensor.t, CUDNN_BATCHNORM_SPATIAL), layer);
    return Status::success();
  }
  void destroy() {
    tensor.destroy();
    if (params) cudnnDestroyTensorDescriptor(params);
    params = nullptr;
  }
};

}  // namespace zoc
