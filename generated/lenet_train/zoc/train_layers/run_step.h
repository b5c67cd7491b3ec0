// The run step of generated trainers (see zoc/train_layers/steps.h): one library call or kernel per
// training-graph node, on the trainer's stream. kTrain: the training step (BatchNorm with the
// batch's statistics, dropout masks on); otherwise the forward pass in evaluation mode (running
// statistics, dropout the identity), which walks the same forward nodes. In a mixed-precision
// trainer (bf16 or fp16) the batch is stored NHWC in that type on entry, each convolution and
// linear layer rounds its fp32 weight into a copy before use (KRSC for a convolution; with SGD
// inside the backward pass, a convolution's update writes it instead), and their weight gradients
// come back as fp32 in PyTorch's layout; the logits and the loss stay fp32. fp16 multiplies the
// loss's gradient by the loss scale (zoc::trainer_kernels::LossScale; Trainer::step unscales).
#pragma once

#include "zoc/train_layers/steps.h"

namespace zoc::train {

// A mixed trainer's convolution weight's KRSC copy (bf16 or fp16), rounded from its fp32 weight.
inline Status copy_conv_weight(TrainState& s, const Conv& l, const ConvTrainCall& c,
                               cudaStream_t stream, const char* name) {
  const ConvGeometry& g = l.geometry();
  ZOC_CUDA(trainer_kernels::store_nhwc(s.p(c.w), s.p16(c.w), g.k, g.c / g.groups,
                                       int64_t(g.r) * g.s, stream),
           name);
  return Status::success();
}

template <bool kTrain>
struct TrainRun : steps::KernelLayerRun<TrainRun<kTrain>> {
  TrainState& s;
  const float* in;  // the caller's batch
  const int32_t* labels;
  cudaStream_t stream;
  int n;

  // What zoc/cudnn/kernel_steps.h's forward steps, inference's, read.
  char* act(size_t t) const { return s.act(t); }
  const float* weight(size_t t) const { return s.p(t); }
  bool nhwc() const { return s.mixed(); }
  Status mark() { return Status::success(); }

  // The caller's fp32 NCHW batch, copied into the arena (mixed: as NHWC bf16 or fp16).
  Status input(const InputCall& c) {
    if (s.mixed()) {
      ZOC_CUDA(trainer_kernels::store_nhwc(in, s.act(c.y), n, c.c, int64_t(c.h) * c.w, stream),
               "input");
      return Status::success();
    }
    const size_t bytes = size_t(n) * size_t(c.c) * size_t(c.h) * size_t(c.w) * sizeof(float);
    ZOC_CUDA(cudaMemcpyAsync(s.act(c.y), in, bytes, cudaMemcpyDeviceToDevice, stream), "input");
    return Status::success();
  }
  // mixed: the weight's KRSC copy, made here; in a training step with in-backward SGD, the
  // last step's update wrote it (and use_fused_sgd the first), but for a depthwise layer on cuDNN.
  Status conv(Conv& l, const ConvTrainCall& c, const char* name, bool copied = kTrain) {
    if (s.mixed()) {  // (no bias: refused by zoc)
      if (!(copied && s.window)) ZOC_TRY(copy_conv_weight(s, l, c, stream, name));
      return l.forward(s.cudnn, s.act(c.x), s.p16(c.w), nullptr, s.act(c.y), s.workspace,
                       s.workspace_bytes, name);
    }
    return l.forward(s.cudnn, s.act(c.x), s.p(c.w), s.p(c.b), s.act(c.y), s.workspace,
                     s.workspace_bytes, name);
  }
  // dw kNoTensor: a frozen weight, whose gradient is not computed.
  Status conv_grad(Conv& l, const ConvGradCall& c, const char* name) {
    void* dx = c.dx == kNoTensor ? nullptr : s.act(c.dx);
    if (s.mixed() && c.dw == kNoTensor) {
      return l.backward(s.cudnn, s.act(c.x), s.p16(c.w), s.act(c.dy), dx, nullptr, nullptr,
                        s.workspace, s.workspace_bytes, name);
    }
    if (s.mixed()) {  // dW in bf16/fp16 KRSC (as autocast's), then into fp32 KCRS
      const ConvGeometry& g = l.geometry();
      ZOC_TRY(l.backward(s.cudnn, s.act(c.x), s.p16(c.w), s.act(c.dy), dx, s.grad16, nullptr,
                         s.workspace, s.workspace_bytes, name));
      if (s.window) {  // in-backward SGD now, and the next step's copy
        ZOC_CUDA(trainer_kernels::sgd_krsc(s.p(c.w), s.grad16, s.momenta + c.dw / sizeof(float),
                                           s.p16(c.w), g.k, g.c / g.groups, int64_t(g.r) * g.s,
                                           s.hyper, stream),
                 name);
        s.updated = c.dw / sizeof(float);
        return Status::success();
      }
      ZOC_CUDA(trainer_kernels::load_nchw(s.grad16, s.g(c.dw), g.k, g.c / g.groups,
                                          int64_t(g.r) * g.s, stream),
               name);
      return Status::success();
    }
    return l.backward(s.cudnn, s.act(c.x), s.p(c.w), s.act(c.dy), dx, s.g(c.dw), s.g(c.db),
                      s.workspace, s.workspace_bytes, name);
  }
  // A transposed convolution (fp32 only): its bundle's backward-data, then the bias; its
  // backward the forward and backward-filter (zoc/train_layers/layers.h).
  Status conv_transpose(Conv& l, const ConvTrainCall& c, const char* name) {
    return l.forward_transposed(s.cudnn, s.act(c.x), s.p(c.w), s.p(c.b), s.act(c.y), s.workspace,
                                s.workspace_bytes, name);
  }
  Status conv_transpose_grad(Conv& l, const ConvGradCall& c, const char* name) {
    void* dx = c.dx == kNoTensor ? nullptr : s.act(c.dx);
    return l.backward_transposed(s.cudnn, s.act(c.x), s.p(c.w), s.act(c.dy), dx, s.g(c.dw),
                                 s.g(c.db), s.workspace, s.workspace_bytes, name);
  }
  // A depthwise convolution of a mixed trainer: zoc's NHWC kernels (zoc/kernels/depthwise.cuh and
  // depthwise_grad.cuh) on a tap-major bf16/fp16 copy of the weight ([kh, kw, C]); dW straight
  // into fp32 (cuDNN, as autocast, computes it in bf16/fp16). With --deterministic the filter
  // gradient's partial sums are added in a fixed order.
  Status depthwise(Conv& l, const ConvTrainCall& c, const char* name) {
    if (l.depthwise_on_cudnn) return conv(l, c, name, false);  // beyond 32-bit indices
    const ConvGeometry& g = l.geometry();
    ZOC_CUDA(trainer_kernels::store_nhwc(s.p(c.w), s.p16(c.w), 1, g.k, int64_t(g.r) * g.s, stream),
             name);
    ZOC_CUDA(trainer_kernels::depthwise_forward(s.act(c.x), s.p16(c.w), s.act(c.y), n,
                                                depthwise_geometry(g), stream),
             name);
    return Status::success();
  }
  Status depthwise_grad(Conv& l, const ConvGradCall& c, const char* name) {
    if (l.depthwise_on_cudnn) return conv_grad(l, c, name);
    void* dx = c.dx == kNoTensor ? nullptr : s.act(c.dx);
    ZOC_CUDA(trainer_kernels::depthwise_backward(s.act(c.x), s.p16(c.w), s.act(c.dy), dx, s.g(c.dw),
                                                 n, depthwise_geometry(l.geometry()),
                                                 s.deterministic, stream),
             name);
    return Status::success();
  }
  // Training: normalized with the batch's statistics, running averages updated in place with
  // the layer's momentum (cuDNN uses the unbiased variance, as PyTorch), mean and inverse
  // deviation saved for backward. Evaluation: the running statistics. Mixed NHWC: cuDNN's
  // persistent NHWC kernels through the Ex calls (as PyTorch's channels-last batch norm), in
  // the trainer's workspace; the plain calls there ran NCHW-style kernels, 80% of the step.
  Status batchnorm(BatchNormLayer& l, const BatchNormTrainCall& c, const char* name) {
    const float one = 1.0f, zero = 0.0f;
    const double eps = std::max(c.eps, CUDNN_BN_MIN_EPSILON);
    if constexpr (kTrain) {
      float* saved = s.f(c.saved);
      if (s.mixed()) {
        ZOC_CUDNN(cudnnBatchNormalizationForwardTrainingEx(
                      s.cudnn, kBnPersistent, CUDNN_BATCHNORM_OPS_BN, &one, &zero, l.tensor.t,
                      s.act(c.x), nullptr, nullptr, l.tensor.t, s.act(c.y), l.params, s.p(c.gamma),
                      s.p(c.beta), c.momentum, s.p(c.mean), s.p(c.var), eps, saved, saved + c.c,
                      nullptr, s.workspace, s.workspace_bytes, nullptr, 0),
                  name);
        return Status::success();
      }
      ZOC_CUDNN(cudnnBatchNormalizationForwardTraining(
                    s.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, l.tensor.t, s.act(c.x),
                    l.tensor.t, s.act(c.y), l.params, s.p(c.gamma), s.p(c.beta), c.momentum,
                    s.p(c.mean), s.p(c.var), eps, saved, saved + c.c),
                name);
    } else {
      ZOC_CUDNN(cudnnBatchNormalizationForwardInference(s.cudnn, CUDNN_BATCHNORM_SPATIAL, &one,
                                                        &zero, l.tensor.t, s.act(c.x), l.tensor.t,
                                                        s.act(c.y), l.params, s.p(c.gamma),
                                                        s.p(c.beta), s.p(c.mean), s.p(c.var), eps),
                name);
    }
    return Status::success();
  }
  // A frozen gamma or beta (kNoTensor) has its gradient written to the discard buffer: cuDNN
  // computes both in one call (dgamma's half of the buffer, or dbeta's).
  Status batchnorm_grad(BatchNormLayer& l, const BatchNormGradCall& c, const char* name) {
    const float one = 1.0f, zero = 0.0f;
    const float* saved = s.f(c.saved);
    const double eps = std::max(c.eps, CUDNN_BN_MIN_EPSILON);
    float* dgamma = c.dgamma == kNoTensor ? s.discard : s.g(c.dgamma);
    float* dbeta = c.dbeta == kNoTensor ? s.discard_beta : s.g(c.dbeta);
    if (s.mixed()) {
      ZOC_CUDNN(
          cudnnBatchNormalizationBackwardEx(
              s.cudnn, kBnPersistent, CUDNN_BATCHNORM_OPS_BN, &one, &zero, &one, &zero, l.tensor.t,
              s.act(c.x), nullptr, nullptr, l.tensor.t, s.act(c.dy), nullptr, nullptr, l.tensor.t,
              s.act(c.dx), l.params, s.p(c.gamma), nullptr, dgamma, dbeta, eps, saved, saved + c.c,
              nullptr, s.workspace, s.workspace_bytes, nullptr, 0),
          name);
      return Status::success();
    }
    ZOC_CUDNN(cudnnBatchNormalizationBackward(s.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                              &zero, l.tensor.t, s.act(c.x), l.tensor.t,
                                              s.act(c.dy), l.tensor.t, s.act(c.dx), l.params,
                                              s.p(c.gamma), dgamma, dbeta, eps, saved, saved + c.c),
              name);
    return Status::success();
  }
  Status pool(PoolLayer& l, const PoolCall& c, const char* name) {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnPoolingForward(s.cudnn, l.pool, &one, l.x, s.act(c.x), &zero, l.y, s.act(c.y)),
              name);
    return Status::success();
  }
  Status pool_grad(PoolLayer& l, const PoolGradCall& c, const char* name) {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnPoolingBackward(s.cudnn, l.pool, &one, l.y, s.act(c.y), l.y, s.act(c.dy), l.x,
                                   s.act(c.x), &zero, l.x, s.act(c.dx)),
              name);
    return Status::success();
  }
  Status activation(const ActivationTrainCall& c, const char* name) {
    ZOC_CUDA(trainer_kernels::activation(c.kind, c.params, s.act(c.x), s.maybe_act(c.x2),
                                         s.act(c.y), int64_t(n) * c.per_sample, stream),
             name);
    return Status::success();
  }
  Status activation_grad(const ActivationGradCall& c, const char* name) {
    ZOC_CUDA(trainer_kernels::activation_backward(c.kind, c.params, s.act(c.s), s.act(c.dy),
                                                  s.maybe_act(c.dy2), s.act(c.dx),
                                                  int64_t(n) * c.per_sample, stream),
             name);
    return Status::success();
  }
  // Row-major y[n, out] = x[n, in] W^T is column-major y^T = W^T^T x^T (as in inference).
  // mixed: the product of bf16/fp16 copies accumulated and written in fp32 (the logits: zoc
  // refuses a mixed trainer whose linear layer is not the last).
  Status linear(const LinearTrainCall& c, const char* name) {
    const float one = 1.0f, zero = 0.0f;
    if (s.mixed()) {
      ZOC_CUDA(trainer_kernels::store(s.p(c.w), s.p16(c.w), int64_t(c.out) * c.in, stream), name);
      ZOC_CUBLAS(
          cublasGemmEx(s.cublas, CUBLAS_OP_T, CUBLAS_OP_N, c.out, n, c.in, &one, s.p16(c.w),
                       s.types.blas_type, c.in, s.act(c.x), s.types.blas_type, c.in, &zero,
                       s.act(c.y), CUDA_R_32F, c.out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          name);
    } else {
      ZOC_CUBLAS(cublasSgemm(s.cublas, CUBLAS_OP_T, CUBLAS_OP_N, c.out, n, c.in, &one, s.p(c.w),
                             c.in, s.a(c.x), c.in, &zero, s.a(c.y), c.out),
                 name);
    }
    if (c.b != kNoTensor) {
      ZOC_CUDA(trainer_kernels::add_bias_rows(s.a(c.y), s.p(c.b), n, c.out, stream), name);
    }
    return Status::success();
  }
  // dx = dy W; dW = dy^T x; db = column sums of dy (each kNoTensor: not computed). mixed: dy
  // (dlogits), x and dx bf16/fp16, dW accumulated and written in fp32.
  Status linear_grad(const LinearGradCall& c, const char* name) {
    const float one = 1.0f, zero = 0.0f;
    if (s.mixed()) {
      if (c.dx != kNoTensor) {
        ZOC_CUBLAS(cublasGemmEx(s.cublas, CUBLAS_OP_N, CUBLAS_OP_N, c.in, n, c.out, &one,
                                s.p16(c.w), s.types.blas_type, c.in, s.act(c.dy), s.types.blas_type,
                                c.out, &zero, s.act(c.dx), s.types.blas_type, c.in,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   name);
      }
      if (c.dw != kNoTensor) {
        ZOC_CUBLAS(
            cublasGemmEx(s.cublas, CUBLAS_OP_N, CUBLAS_OP_T, c.in, c.out, n, &one, s.act(c.x),
                         s.types.blas_type, c.in, s.act(c.dy), s.types.blas_type, c.out, &zero,
                         s.g(c.dw), CUDA_R_32F, c.in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            name);
      }
      if (c.db != kNoTensor) {
        ZOC_CUDA(trainer_kernels::sum_rows(s.act(c.dy), s.g(c.db), n, c.out, stream), name);
      }
      return Status::success();
    }
    if (c.dx != kNoTensor) {
      ZOC_CUBLAS(cublasSgemm(s.cublas, CUBLAS_OP_N, CUBLAS_OP_N, c.in, n, c.out, &one, s.p(c.w),
                             c.in, s.a(c.dy), c.out, &zero, s.a(c.dx), c.in),
                 name);
    }
    if (c.dw != kNoTensor) {
      ZOC_CUBLAS(cublasSgemm(s.cublas, CUBLAS_OP_N, CUBLAS_OP_T, c.in, c.out, n, &one, s.a(c.x),
                             c.in, s.a(c.dy), c.out, &zero, s.g(c.dw), c.in),
                 name);
    }
    if (c.db != kNoTensor) {
      ZOC_CUDA(trainer_kernels::sum_rows(s.a(c.dy), s.g(c.db), n, c.out, stream), name);
    }
    return Status::success();
  }
  Status add(const AddCall& c, const char* name) {
    ZOC_CUDA(
        trainer_kernels::add(s.act(c.a), s.act(c.b), s.act(c.y), int64_t(n) * c.per_sample, stream),
        name);
    return Status::success();
  }
  // Masks from (seed, step, layer, element); the identity in evaluation or with dropout off.
  Status dropout(const DropoutCall& c, const char* name) {
    const float p = kTrain && s.dropout ? c.p : 0.0f;
    ZOC_CUDA(trainer_kernels::dropout(s.act(c.x), s.act(c.y), int64_t(n) * c.per_sample, p,
                                      s.dropout_seed, s.draws, c.layer, stream),
             name);
    return Status::success();
  }
  Status dropout_grad(const DropoutCall& c, const char* name) { return dropout(c, name); }
  // (backward) One input's slice of its gradient: a concatenation's strided copies.
  template <size_t N>
  Status slice(const CopyCall (&parts)[N], const char* name) {
    return this->concat(parts, name);
  }
  // The zoo's kernel layers: the forwards of concat, mul (layer scale: a mul by its gamma in
  // params()), const_op, binary, channel_conv, pad, shuffle, pool_kernel, adaptive_pool, upsample
  // and channel_softmax are inference's steps (zoc/cudnn/kernel_steps.h); the backwards are
  // zoc/kernels/layer_grad_kernels.cuh's (and gradients made of forward ops: x * c's dy * c,
  // c - x's -dy, run as those ops).
  Status mul_grad(const MulGradCall& c, const char* name) {
    float* da = c.da == kNoTensor ? nullptr : s.a(c.da);
    float* db = c.db == kNoTensor ? nullptr : s.a(c.db);
    ZOC_CUDA(trainer_kernels::mul_grad(s.a(c.a), s.a(c.b), s.a(c.dy), da, db, n, c.m, stream),
             name);
    return Status::success();
  }
  Status operand_grad(const OperandGradCall& c, const char* name) {
    ZOC_CUDA(trainer_kernels::operand_grad(s.a(c.x), s.p(c.v), s.a(c.dy), s.a(c.dx), s.g(c.dv), n,
                                           c.c, c.hw, c.op, c.reverse,
                                           static_cast<double*>(s.workspace), stream),
             name);
    return Status::success();
  }
  Status layernorm(const LayerNormTrainCall& c, const char* name) {
    ZOC_CUDA(model_kernels::layernorm(s.a(c.x), s.a(c.y), s.p(c.gamma), s.p(c.beta), n, c.c, c.hw,
                                      false, c.eps, stream),
             name);
    return Status::success();
  }
  Status layernorm_grad(const LayerNormGradCall& c, const char* name) {
    ZOC_CUDA(trainer_kernels::layernorm_grad(s.a(c.x), s.p(c.gamma), s.a(c.dy), s.a(c.dx),
                                             s.g(c.dgamma), s.g(c.dbeta), n, c.c, c.hw, c.eps,
                                             static_cast<float*>(s.workspace), stream),
             name);
    return Status::success();
  }
  Status adaptive_pool_grad(const AdaptivePoolGradCall& c, const char* name) {
    ZOC_CUDA(trainer_kernels::adaptive_avgpool_grad(s.a(c.dy), s.a(c.dx), n, c.g, stream), name);
    return Status::success();
  }
  // Pooling cuDNN cannot express (ceil_mode, dilation): its gradient.
  Status pool_kernel_grad(const PoolKernelGradCall& c, const char* name) {
    ZOC_CUDA(trainer_kernels::pool_grad(s.a(c.x), s.a(c.dy), s.a(c.dx), n, c.g, stream), name);
    return Status::success();
  }
  // A softmax or log_softmax inside the model: its backward, from its output.
  Status softmax_grad(const SoftmaxGradCall& c, const char* name) {
    ZOC_CUDA(
        trainer_kernels::softmax_grad(s.a(c.y), s.a(c.dy), s.a(c.dx), n, c.c, c.hw, c.log, stream),
        name);
    return Status::success();
  }
  // ECA's 1-D convolution (taps and bias in params()): its backward.
  Status channel_conv_grad(const ChannelConvGradCall& c, const char* name) {
    float* dx = c.dx == kNoTensor ? nullptr : s.a(c.dx);
    float* dw = c.dw == kNoTensor ? nullptr : s.g(c.dw);
    float* db = c.db == kNoTensor ? nullptr : s.g(c.db);
    ZOC_CUDA(trainer_kernels::channel_conv_grad(s.a(c.x), s.p(c.w), s.a(c.dy), dx, dw, db, n, c.g,
                                                stream),
             name);
    return Status::success();
  }
  // Upsampling's backward gathers each pixel's share of dy.
  Status upsample_grad(const UpsampleGradCall& c, const char* name) {
    ZOC_CUDA(trainer_kernels::upsample_grad(s.a(c.dy), s.a(c.dx), n, c.g, stream), name);
    return Status::success();
  }
  // Constant padding's backward: one 3-D copy of each plane's inside.
  Status pad_grad(const PadCall& c, const char* name) {
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(s.a(c.x), size_t(c.g.out_w) * sizeof(float), size_t(c.g.out_w),
                                   size_t(c.g.out_h));
    p.srcPos = make_cudaPos(size_t(c.g.left) * sizeof(float), size_t(c.g.top), 0);
    p.dstPtr =
        make_cudaPitchedPtr(s.a(c.y), size_t(c.g.w) * sizeof(float), size_t(c.g.w), size_t(c.g.h));
    p.extent = make_cudaExtent(size_t(c.g.w) * sizeof(float), size_t(c.g.h), size_t(n) * c.g.c);
    p.kind = cudaMemcpyDeviceToDevice;
    ZOC_CUDA(cudaMemcpy3DAsync(&p, stream), name);
    return Status::success();
  }
  // dx zeroed, then dy's channels copied into their place in each sample.
  Status pad_channels(const PadChannelsCall& c, const char* name) {
    const size_t plane = size_t(c.hw) * sizeof(float);
    ZOC_CUDA(cudaMemsetAsync(s.act(c.dx), 0, size_t(n) * size_t(c.channels) * plane, stream), name);
    ZOC_CUDA(cudaMemcpy2DAsync(s.act(c.dx) + size_t(c.start) * plane, size_t(c.channels) * plane,
                               s.act(c.dy), size_t(c.count) * plane, size_t(c.count) * plane,
                               size_t(n), cudaMemcpyDeviceToDevice, stream),
             name);
    return Status::success();
  }
  Status loss(const LossCall& c) {
    ZOC_CUDA(trainer_kernels::softmax_xent(s.a(c.logits), labels, n, c.classes, s.label_smoothing,
                                           s.loss_scale(), s.loss_rows, s.f(c.loss),
                                           s.act(c.dlogits), stream),
             "loss");
    return Status::success();
  }
  // In-backward SGD (Trainer::use_fused_sgd): the next node writes its gradients into the
  // window, which starts at float `origin` of the layout; once [offset, offset + count) is final
  // and nothing later reads those tensors (the emitter's plan), SGD updates them.
  Status grads_to(size_t origin) {
    s.window_origin = origin;
    return Status::success();
  }
  Status grads_ready(size_t offset, size_t count) {
    if (!s.window) return Status::success();
    if (offset == s.updated) {  // a bf16 convolution's weight: its backward step updated it
      s.updated = kNoTensor;
      return Status::success();
    }
    ZOC_CUDA(trainer_kernels::sgd_at(reinterpret_cast<float*>(s.params) + offset,
                                     s.window + (offset - s.window_origin), s.momenta + offset,
                                     int64_t(count), s.hyper, stream),
             "sgd");
    return Status::success();
  }
  // Gradient bucket k ([offset, offset + count) floats of grads) is complete: average it over
  // the processes while the rest of the backward pass runs (data parallel only).
  Status bucket_ready(int k, size_t offset, size_t count) {
    if (s.sync) {
      ZOC_TRY(s.sync->bucket_ready(k, reinterpret_cast<float*>(s.grads) + offset, count, stream));
    }
    return Status::success();
  }
};

// The bf16 copies of every convolution weight as a training step's forward reads them with
// in-backward SGD (KRSC; zoc's own depthwise kernels make theirs each step): made once when it
// starts, and after the weights change otherwise (Trainer::use_fused_sgd, sync_weight_copies).
struct TrainCopyWeights : TrainStepBase {
  TrainState& s;
  cudaStream_t stream;
  TrainCopyWeights(TrainState& state, cudaStream_t st) : s(state), stream(st) {}
  Status conv(Conv& l, const ConvTrainCall& c, const char* name) {
    return s.mixed() ? copy_conv_weight(s, l, c, stream, name) : Status::success();
  }
};

}  // namespace zoc::train
