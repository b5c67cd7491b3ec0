// The jobs a generated model's layer sequence is walked for, one step class each: create the
// descriptor bundles, describe them for a batch size (and pick algorithms), bind graph-API plans
// to their pointers, run the forward pass (optionally recording a profiling event after every
// layer), time each convolution's candidates, destroy.
//
// A generated model lists its layers once (`template <class V> Status layers(V& v)`, a straight
// line of `v.conv(...)`, `v.pool(...)`, ...); zoc/cudnn/model.h instantiates it with each step.
// Calls resolve at compile time (templates, no virtual functions or pointers to functions), so
// the forward pass compiled from Run is the same straight line of library calls the emitter used
// to write out per layer, and zoc-verify follows it call by call. StepBase gives every layer
// kind a no-op; a step implements the kinds its job touches. Run takes the forward steps of the
// layers zoc runs with its own kernels from zoc/cudnn/kernel_steps.h, which the generated
// trainer's run step shares.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/cudnn/graph_layer.h"
#include "zoc/cudnn/kernel_steps.h"
#include "zoc/cudnn/layers.h"
#include "zoc/cudnn/model_calls.h"
#include "zoc/cudnn/model_state.h"
#include "zoc/cudnn/transpose_layer.h"
#include "zoc/kernels/model_kernels.h"

namespace zoc::steps {

inline constexpr float kOne = 1.0f, kZero = 0.0f;

struct StepBase : KernelLayerSkips {
  Status input_to_nhwc(const InputCall&) { return Status::success(); }
  Status input_copy(const InputCall&) { return Status::success(); }
  template <class L>
  Status conv(L&, const ConvCall&, const char*) {
    return Status::success();
  }
  template <class L>
  Status side_conv(L&, const ConvCall&, int, const char*) {
    return Status::success();
  }
  Status join(int, const char*) { return Status::success(); }
  Status conv_transpose(ConvTransposeLayer&, const ConvCall&, const char*) {
    return Status::success();
  }
  Status pool(PoolLayer&, const PoolCall&, const char*) { return Status::success(); }
  Status activation(const ActivationCall&, const char*) { return Status::success(); }
  Status softmax(TensorLayer&, const SoftmaxCall&, const char*) { return Status::success(); }
  Status batchnorm(BatchNormLayer&, const BatchNormCall&, const char*) { return Status::success(); }
  Status add(const AddCall&, const char*) { return Status::success(); }
  Status linear(const LinearCall&, const char*) { return Status::success(); }
  Status output_to_float(const OutputCall&) { return Status::success(); }
  Status output_copy(const OutputCall&) { return Status::success(); }
  Status output_to_caller(const OutputCall&) { return Status::success(); }
  Status relayout(const RelayoutCall&, const char*) { return Status::success(); }
  Status layernorm(const LayerNormCall&, const char*) { return Status::success(); }
  Status depthwise(const DepthwiseCall&, const char*) { return Status::success(); }
  Status argmax(const ArgmaxCall&, const char*) { return Status::success(); }
};

// Creates every descriptor bundle (once, in create()).
struct Create : StepBase {
  ModelState& s;
  explicit Create(ModelState& state) : s(state) {}
  Status conv(ConvLayer& l, const ConvCall& c, const char* name) {
    return l.create(c.shape, s.types, name);
  }
  Status conv(GraphConvLayer& l, const ConvCall& c, const char* name) {
    return l.create(c.shape, s.types, c.z != kNoTensor, name);
  }
  template <class L>
  Status side_conv(L& l, const ConvCall& c, int, const char* name) {
    return conv(l, c, name);
  }
  Status conv_transpose(ConvTransposeLayer& l, const ConvCall& c, const char* name) {
    return l.create(c.shape, s.types, name);
  }
  Status pool(PoolLayer& l, const PoolCall& c, const char* name) {
    return l.create(c.shape, s.types, name);
  }
  Status softmax(TensorLayer& l, const SoftmaxCall& c, const char* name) {
    return l.create(c.features, 1, 1, s.types, name);
  }
  Status batchnorm(BatchNormLayer& l, const BatchNormCall& c, const char* name) {
    return l.create(c.c, c.h, c.w, s.types, name);
  }
};

// Describes every tensor for batch n and picks each convolution's algorithm within `limit`
// (side branches within their own cap); `need` collects the largest workspace the main
// branch's choices need, s.side_need the side branches'. Host-side only.
struct Describe : StepBase {
  ModelState& s;
  int n;
  size_t limit;
  size_t need = 0;
  Describe(ModelState& state, int batch, size_t workspace_limit)
      : s(state), n(batch), limit(workspace_limit) {}
  template <class L>
  Status conv(L& l, const ConvCall&, const char* name) {
    ZOC_TRY(l.describe(s.cudnn, n, limit, name, &s.plan));
    need = std::max(need, l.workspace);
    return Status::success();
  }
  // A graph-API plan is built on the handle that runs it; a legacy one needs no handle of its own.
  Status side_conv(ConvLayer& l, const ConvCall&, int, const char* name) {
    ZOC_TRY(l.describe(s.cudnn, n, s.side_limit, name, &s.plan));
    s.side_need = std::max(s.side_need, l.workspace);
    return Status::success();
  }
  Status side_conv(GraphConvLayer& l, const ConvCall&, int, const char* name) {
    ZOC_TRY(l.describe(s.cudnn_side, n, s.side_limit, name, &s.plan));
    s.side_need = std::max(s.side_need, l.workspace);
    return Status::success();
  }
  Status conv_transpose(ConvTransposeLayer& l, const ConvCall&, const char* name) {
    ZOC_TRY(l.describe(s.cudnn, n, limit, name));
    need = std::max(need, l.workspace);
    return Status::success();
  }
  Status pool(PoolLayer& l, const PoolCall&, const char* name) { return l.describe(n, name); }
  Status softmax(TensorLayer& l, const SoftmaxCall&, const char* name) {
    return l.describe(n, name);
  }
  Status batchnorm(BatchNormLayer& l, const BatchNormCall&, const char* name) {
    return l.describe(n, name);
  }
};

// Binds every graph-API plan to its input, weights, residual, output and workspace.
struct Bind : StepBase {
  ModelState& s;
  int n;  // the batch size being prepared
  Bind(ModelState& state, int batch) : s(state), n(batch) {}
  Status conv(GraphConvLayer& l, const ConvCall& c, const char* name) {
    return bind(l, c, s.cudnn, s.workspace, name);
  }
  Status conv(ConvLayer&, const ConvCall&, const char*) { return Status::success(); }
  Status side_conv(GraphConvLayer& l, const ConvCall& c, int, const char* name) {
    return bind(l, c, s.cudnn_side, s.side_workspace, name);
  }
  Status side_conv(ConvLayer&, const ConvCall&, int, const char*) { return Status::success(); }
  // The legacy calls of the plain forward, recorded for this batch (recorded_launch.h) where
  // they read and write the arena only.
  Status pool(PoolLayer& l, const PoolCall& c, const char* name) {
    if (c.x == kCallerInput) return Status::success();
    char* x = s.act(c.x, nullptr);
    char* y = s.act(c.y, nullptr);
    return l.recorded.record(
        n, s.cudnn, s.capture_stream,
        [&] { return cudnnPoolingForward(s.cudnn, l.pool, &kOne, l.x, x, &kZero, l.y, y); }, name);
  }
  Status softmax(TensorLayer& l, const SoftmaxCall& c, const char* name) {
    if (c.x == kCallerInput) return Status::success();
    char* x = s.act(c.x, nullptr);
    char* y = s.act(c.y, nullptr);
    return l.recorded.record(
        n, s.cudnn, s.capture_stream,
        [&] {
          return cudnnSoftmaxForward(s.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                     &kOne, l.t, x, &kZero, l.t, y);
        },
        name);
  }

 private:
  Status bind(GraphConvLayer& l, const ConvCall& c, cudnnHandle_t handle, void* workspace,
              const char* name) {
    const void* z = c.z == kNoTensor ? nullptr : s.act(c.z, nullptr);
    return l.bind(handle, s.capture_stream, s.act(c.x, nullptr), s.weight(c.w), s.weight(c.b), z,
                  s.act(c.y, nullptr), workspace, name);
  }
};

// A convolution's activation (ConvShape::activation) in place on its output y at batch n: what
// Run launches after a graph-API plan without it, and what Tune times that plan with.
inline cudaError_t conv_activation(const ConvCall& c, int n, void* y, cudaStream_t on) {
  const ConvShape& g = c.shape;
  const int64_t count = int64_t(n) * g.k * g.out_h * g.out_w;
  return model_kernels::activation(g.activation, g.activation_params, y, y, count, on);
}

// Times every usable candidate of every convolution at batch n on the activations of a real
// forward pass, leaving each layer on its fastest, and records the choices in *plan.
struct Tune : StepBase {
  ModelState& s;
  int n;
  const float* input;
  void* scratch;
  size_t scratch_bytes;
  cudaStream_t stream;
  PlanFile* plan;
  // A graph-API layer also times its split form: the activation as Run's in-place kernel.
  template <class L>
  Status conv(L& l, const ConvCall& c, const char* name) {
    PlanChoice choice;
    const void* z = c.z == kNoTensor ? nullptr : s.act(c.z, input);
    void* y = s.act(c.y, input);
    if constexpr (std::is_same_v<L, GraphConvLayer>) {
      auto activate = [&](cudaStream_t on) { return conv_activation(c, n, y, on); };
      ZOC_TRY(l.tune(s.cudnn, n, s.act(c.x, input), s.weight(c.w), s.weight(c.b), z, y, scratch,
                     scratch_bytes, stream, name, &choice, activate));
    } else {
      ZOC_TRY(l.tune(s.cudnn, n, s.act(c.x, input), s.weight(c.w), s.weight(c.b), z, y, scratch,
                     scratch_bytes, stream, name, &choice));
    }
    plan->set(choice);
    return Status::success();
  }
  template <class L>
  Status side_conv(L& l, const ConvCall& c, int, const char* name) {
    return conv(l, c, name);
  }
};

// Destroys every descriptor bundle.
struct Destroy : StepBase {
  template <class L>
  Status conv(L& l, const ConvCall&, const char*) {
    l.destroy();
    return Status::success();
  }
  template <class L>
  Status side_conv(L& l, const ConvCall&, int, const char*) {
    l.destroy();
    return Status::success();
  }
  template <class L, class C>
  Status one(L& l, const C&) {
    l.destroy();
    return Status::success();
  }
  Status conv_transpose(ConvTransposeLayer& l, const ConvCall& c, const char*) { return one(l, c); }
  Status pool(PoolLayer& l, const PoolCall& c, const char*) { return one(l, c); }
  Status softmax(TensorLayer& l, const SoftmaxCall& c, const char*) { return one(l, c); }
  Status batchnorm(BatchNormLayer& l, const BatchNormCall& c, const char*) { return one(l, c); }
};

// The forward pass at the described batch size: one library call or kernel per layer, on
// `stream` (side branches on the side stream between a fork and a join event). With kProfile,
// an event after every layer that issues GPU work (s.marks[1..]).
template <bool kProfile>
struct Run : KernelLayerRun<Run<kProfile>> {
  ModelState& s;
  const float* input;
  float* output;
  cudaStream_t stream;
  int n;
  // The plain forward: side branches whose convolution has recorded kernels run inline on
  // `stream` (no fork and join events); a graph capture keeps them on the side stream, where
  // the graph runs them beside the main branch.
  bool plain = false;
  int mark_index = 0;

  Status mark() {
    if constexpr (kProfile) {
      ++mark_index;
      ZOC_CUDA(cudaEventRecordWithFlags(s.marks[mark_index], stream, s.record_flags), "profile");
    }
    return Status::success();
  }
  char* act(size_t t) const { return s.act(t, input); }
  const char* weight(size_t t) const { return s.weight(t); }
  bool nhwc() const { return s.types.format == CUDNN_TENSOR_NHWC; }

  Status input_to_nhwc(const InputCall& c) {
    ZOC_CUDA(model_kernels::input_to_nhwc(input, act(c.y), n, c.c, c.h, c.w, c.c_stored, stream),
             "input");
    return mark();
  }
  Status input_copy(const InputCall& c) {
    const size_t bytes = size_t(n) * size_t(c.c) * size_t(c.h) * size_t(c.w) * sizeof(float);
    ZOC_CUDA(cudaMemcpyAsync(act(c.y), input, bytes, cudaMemcpyDeviceToDevice, stream), "input");
    return mark();
  }
  Status conv(ConvLayer& l, const ConvCall& c, const char* name) {
    ZOC_TRY(legacy_conv(l, c, s.cudnn, s.workspace, name));
    return mark();
  }
  Status conv(GraphConvLayer& l, const ConvCall& c, const char* name) {
    ZOC_TRY(l.run(s.cudnn, stream, name));
    ZOC_TRY(separate_activation(l, c, stream, name));
    return mark();
  }
  // On the side stream, beside the main branch until join(branch).
  template <class L>
  Status side_conv(L& l, const ConvCall& c, int branch, const char* name) {
    if constexpr (std::is_same_v<L, GraphConvLayer>) {
      s.inline_branch[branch] = plain && l.recorded();
      if (s.inline_branch[branch]) {
        ZOC_TRY(l.run(s.cudnn, stream, name));
        ZOC_TRY(separate_activation(l, c, stream, name));
        return mark();
      }
    }
    ZOC_CUDA(cudaEventRecord(s.fork[branch], stream), name);
    ZOC_CUDA(cudaStreamWaitEvent(s.side, s.fork[branch], 0), name);
    if constexpr (std::is_same_v<L, GraphConvLayer>) {
      ZOC_TRY(l.run(s.cudnn_side, s.side, name));
      ZOC_TRY(separate_activation(l, c, s.side, name));
    } else {
      ZOC_TRY(legacy_conv(l, c, s.cudnn_side, s.side_workspace, name));
    }
    ZOC_CUDA(cudaEventRecord(s.join[branch], s.side), name);
    return mark();
  }
  Status join(int branch, const char* name) {
    if (s.inline_branch[branch]) return Status::success();
    ZOC_CUDA(cudaStreamWaitEvent(stream, s.join[branch], 0), name);
    return Status::success();
  }
  Status conv_transpose(ConvTransposeLayer& l, const ConvCall& c, const char* name) {
    const void* b = c.b == kNoTensor ? nullptr : s.weight(c.b);
    ZOC_TRY(l.run(s.cudnn, act(c.x), s.weight(c.w), b, act(c.y), s.workspace, name));
    return mark();
  }
  Status pool(PoolLayer& l, const PoolCall& c, const char* name) {
    if (const RecordedLaunches* r = plain ? l.recorded.find(n) : nullptr) {
      ZOC_CUDA(r->launch(stream), name);
      return mark();
    }
    ZOC_CUDNN(cudnnPoolingForward(s.cudnn, l.pool, &kOne, l.x, act(c.x), &kZero, l.y, act(c.y)),
              name);
    return mark();
  }
  Status activation(const ActivationCall& c, const char* name) {
    ZOC_CUDA(model_kernels::activation(c.kind, c.params, act(c.x), act(c.y),
                                       int64_t(n) * c.per_sample, stream),
             name);
    return mark();
  }
  Status softmax(TensorLayer& l, const SoftmaxCall& c, const char* name) {
    if (const RecordedLaunches* r = plain ? l.recorded.find(n) : nullptr) {
      ZOC_CUDA(r->launch(stream), name);
      return mark();
    }
    ZOC_CUDNN(cudnnSoftmaxForward(s.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                  &kOne, l.t, act(c.x), &kZero, l.t, act(c.y)),
              name);
    return mark();
  }
  Status batchnorm(BatchNormLayer& l, const BatchNormCall& c, const char* name) {
    const char* p = s.weight(c.params);
    const size_t v = size_t(c.c) * sizeof(float);  // gamma, beta, mean, variance
    ZOC_CUDNN(cudnnBatchNormalizationForwardInference(
                  s.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, l.tensor.t, act(c.x), l.tensor.t,
                  act(c.y), l.params, p, p + v, p + 2 * v, p + 3 * v, c.eps),
              name);
    return mark();
  }
  Status add(const AddCall& c, const char* name) {
    ZOC_CUDA(model_kernels::add(act(c.a), act(c.b), act(c.y), int64_t(n) * c.per_sample, stream),
             name);
    return mark();
  }
  // Row-major y[n, out] = x[n, in] W^T is column-major y^T = W^T^T x^T: op(A) = W (lda = in);
  // a bias is written into y first and the GEMM adds to it (beta = 1).
  Status linear(const LinearCall& c, const char* name) {
    if (c.b != kNoTensor) {
      ZOC_CUDA(model_kernels::bias_rows(act(c.y), s.weight(c.b), n, c.out, stream), name);
    }
    const Precision& t = s.types;
    ZOC_CUBLAS(cublasGemmEx(s.cublas, CUBLAS_OP_T, CUBLAS_OP_N, c.out, n, c.in, &kOne,
                            s.weight(c.w), t.blas_type, c.in, act(c.x), t.blas_type, c.in,
                            c.b != kNoTensor ? &kOne : &kZero, act(c.y), t.blas_type, c.out,
                            t.blas_compute, CUBLAS_GEMM_DEFAULT),
               name);
    return mark();
  }
  Status output_to_float(const OutputCall& c) {
    ZOC_CUDA(model_kernels::to_float(act(c.y), output, int64_t(n) * c.per_sample, stream),
             "output");
    return mark();
  }
  Status output_copy(const OutputCall& c) {
    const size_t bytes = size_t(n) * size_t(c.per_sample) * sizeof(float);
    ZOC_CUDA(cudaMemcpyAsync(output, act(c.y), bytes, cudaMemcpyDeviceToDevice, stream), "output");
    return mark();
  }
  // One of several outputs, or an NHWC image, to its columns of the caller's rows.
  Status output_to_caller(const OutputCall& c) {
    ZOC_CUDA(model_kernels::output_to_caller(act(c.y), output, n, c.g, stream), "output");
    return mark();
  }
  // The zoo's layers whose forward the trainer does not share (kernel_steps.h has the rest).
  Status relayout(const RelayoutCall& c, const char* name) {
    ZOC_CUDA(model_kernels::relayout(act(c.x), act(c.y), n, c.g, stream), name);
    return mark();
  }
  Status layernorm(const LayerNormCall& c, const char* name) {
    const float* p = reinterpret_cast<const float*>(s.weight(c.params));
    ZOC_CUDA(model_kernels::layernorm(act(c.x), act(c.y), p, p + c.c, n, c.c, c.hw, nhwc(), c.eps,
                                      stream),
             name);
    return mark();
  }
  Status depthwise(const DepthwiseCall& c, const char* name) {
    ZOC_CUDA(model_kernels::depthwise_conv(act(c.x), s.weight(c.w), s.weight(c.b),
                                           c.z == kNoTensor ? nullptr : act(c.z), act(c.y), n, c.g,
                                           stream),
             name);
    return mark();
  }
  // A last upsampling writes the caller's output; the rest are kernel_steps.h's.
  Status upsample(const UpsampleCall& c, const char* name) {
    if (c.out.per_sample <= 0) return KernelLayerRun<Run>::upsample(c, name);
    ZOC_CUDA(model_kernels::upsample_to_caller(act(c.x), output, n, c.g, c.out, stream), name);
    return mark();
  }
  Status argmax(const ArgmaxCall& c, const char* name) {
    ZOC_CUDA(model_kernels::channel_argmax(act(c.x), output, n, c.c, nhwc(), c.out, stream), name);
    return mark();
  }

 private:
  // The activation a graph-API plan lacks (no engine fuses it, or tuning measured the split
  // form faster), in place.
  Status separate_activation(const GraphConvLayer& l, const ConvCall& c, cudaStream_t on,
                             const char* name) {
    if (!l.separate_activation()) return Status::success();
    ZOC_CUDA(conv_activation(c, n, act(c.y), on), name);
    return Status::success();
  }
  Status legacy_conv(ConvLayer& l, const ConvCall& c, cudnnHandle_t handle, void* workspace,
                     const char* name) {
    const bool residual = c.z != kNoTensor;
    ZOC_CUDNN(cudnnConvolutionBiasActivationForward(
                  handle, &kOne, l.x, act(c.x), l.w, s.weight(c.w), l.conv, l.algo, workspace,
                  l.workspace, residual ? &kOne : &kZero, l.y, act(residual ? c.z : c.y), l.bias,
                  s.weight(c.b), l.act, l.y, act(c.y)),
              name);
    return Status::success();
  }
};

}  // namespace zoc::steps
