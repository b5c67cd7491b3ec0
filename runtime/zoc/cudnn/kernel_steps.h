// The forward steps of the layers zoc runs with its own kernels (zoc/kernels/layer_kernels.cuh
// through zoc/kernels/model_kernels.h), written once for the generated model's Run step
// (zoc/cudnn/model_steps.h) and the generated trainer's (zoc/train_layers/run_step.h), so that the
// trainer's forward pass is inference's: a kernel layer's forward is one function here, and
// its skip (for the steps that have nothing to do for it) one line.
//
// A run step derives KernelLayerRun<itself> (CRTP: no virtual functions) and supplies what
// differs between the model and the trainer: act(offset) (a per-sample arena offset to its
// pointer at the batch), weight(offset) (the model's packed weights, or the trainer's
// params(); both null for kNoTensor), nhwc() (the activations' layout), mark() (the model's
// profiling event after each layer; nothing in the trainer), and the members n (the batch) and
// stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/cudnn/model_calls.h"
#include "zoc/kernels/model_kernels.h"

namespace zoc::steps {

// The kernel layers' skips, for the steps that describe, create or destroy descriptors.
struct KernelLayerSkips {
  Status mul(const MulCall&, const char*) { return Status::success(); }
  Status const_op(const ConstOpCall&, const char*) { return Status::success(); }
  Status binary(const BinaryCall&, const char*) { return Status::success(); }
  Status channel_conv(const ChannelConvCall&, const char*) { return Status::success(); }
  Status pad(const PadCall&, const char*) { return Status::success(); }
  Status shuffle(const ShuffleCall&, const char*) { return Status::success(); }
  Status pool_kernel(const PoolKernelCall&, const char*) { return Status::success(); }
  Status adaptive_pool(const AdaptivePoolCall&, const char*) { return Status::success(); }
  Status upsample(const UpsampleCall&, const char*) { return Status::success(); }
  Status channel_softmax(const ChannelSoftmaxCall&, const char*) { return Status::success(); }
  template <size_t N>
  Status concat(const CopyCall (&)[N], const char*) {
    return Status::success();
  }
};

template <class Self>
struct KernelLayerRun {
  // x * s per channel or element: s an activation, or a weight (layer scale's gamma).
  Status mul(const MulCall& c, const char* name) {
    Self& r = self();
    const void* s = c.s_is_weight ? static_cast<const void*>(r.weight(c.s)) : r.act(c.s);
    ZOC_CUDA(model_kernels::channel_mul(r.act(c.x), s, r.act(c.y), per_batch(c.per_sample), c.m,
                                        r.stream),
             name);
    return r.mark();
  }
  // Arithmetic with a scalar or a weight tensor (a buffer, or a parameter).
  Status const_op(const ConstOpCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::const_op(r.act(c.x), floats(c.v), r.act(c.y), per_batch(c.per_sample),
                                     c.m, r.stream),
             name);
    return r.mark();
  }
  // Two activations of one shape.
  Status binary(const BinaryCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::binary(r.act(c.a), r.act(c.b), r.act(c.y), per_batch(c.per_sample),
                                   c.op, r.stream),
             name);
    return r.mark();
  }
  // Each input's rows into its place in the output (a concatenation; a slice's parts too).
  template <size_t N>
  Status concat(const CopyCall (&parts)[N], const char* name) {
    Self& r = self();
    for (const CopyCall& c : parts) {
      ZOC_CUDA(cudaMemcpy2DAsync(r.act(c.y) + c.dst_offset, c.dst_pitch,
                                 r.act(c.src) + c.src_offset, c.src_pitch, c.width,
                                 size_t(r.n) * c.rows, cudaMemcpyDeviceToDevice, r.stream),
               name);
    }
    return r.mark();
  }
  // ECA's 1-D convolution over channels.
  Status channel_conv(const ChannelConvCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::channel_conv(r.act(c.x), floats(c.w), floats(c.b), r.act(c.y), r.n, c.g,
                                         r.stream),
             name);
    return r.mark();
  }
  Status pad(const PadCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::pad(r.act(c.x), r.act(c.y), r.n, c.g, r.stream), name);
    return r.mark();
  }
  Status shuffle(const ShuffleCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::channel_shuffle(r.act(c.x), r.act(c.y), r.n, c.c, c.hw, c.groups,
                                            r.nhwc(), r.stream),
             name);
    return r.mark();
  }
  // Pooling cuDNN cannot express (ceil_mode, dilation).
  Status pool_kernel(const PoolKernelCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::pool(r.act(c.x), r.act(c.y), r.n, c.g, r.stream), name);
    return r.mark();
  }
  Status adaptive_pool(const AdaptivePoolCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::adaptive_avgpool(r.act(c.x), r.act(c.y), r.n, c.g, r.stream), name);
    return r.mark();
  }
  // Into the arena (the model's step also writes a last upsampling into the caller's output).
  Status upsample(const UpsampleCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::upsample(r.act(c.x), r.act(c.y), r.n, c.g, r.stream), name);
    return r.mark();
  }
  // A softmax or log_softmax over channels inside the model.
  Status channel_softmax(const ChannelSoftmaxCall& c, const char* name) {
    Self& r = self();
    ZOC_CUDA(model_kernels::channel_softmax(r.act(c.x), r.act(c.y), r.n, c.c, c.hw, r.nhwc(), c.log,
                                            r.stream),
             name);
    return r.mark();
  }

 private:
  Self& self() { return static_cast<Self&>(*this); }
  int64_t per_batch(int64_t per_sample) { return int64_t(self().n) * per_sample; }
  // A float weight tensor; null for kNoTensor (a bias the layer lacks, a scalar operand), as
  // both weight() accessors return.
  const float* floats(size_t offset) {
    return reinterpret_cast<const float*>(self().weight(offset));
  }
};

}  // namespace zoc::steps
