// One constant per layer of a generated model: everything its calls need besides its
// descriptor bundle (shapes, the tensors it reads and writes, its packed weights), so that the
// generated layer sequence names each layer once: `v.conv(conv1_, kConv_conv1, "conv1")`.
//
// Tensors are per-sample byte offsets into the activation arena, or kCallerInput / kNoTensor
// (zoc/cudnn/model_state.h); weights are byte offsets into the packed weight buffer. The steps
// of zoc/cudnn/model_steps.h turn them into device addresses. Plain aggregates, usable as
// constexpr, each declared from its field list (zoc/cudnn/call_fields.h), from which zoc prints
// the generated constants by field name; needs cudnn.h only.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "zoc/cudnn/call_fields.h"
#include "zoc/cudnn/layers.h"
#include "zoc/kernels/model_kernels.h"
#include "zoc/math/activations.h"

namespace zoc {

// Tensor names in a layer sequence: a per-sample byte offset into the activation arena (scaled
// by max_batch at run time), or one of these.
inline constexpr size_t kCallerInput = ~size_t(0);   // the caller's fp32 NCHW input, in place
inline constexpr size_t kNoTensor = ~size_t(0) - 1;  // no residual, no bias

// Each call constant, declared from its field list (zoc/cudnn/call_fields.h says what each holds).
struct ConvCall {
  ZOC_FIELDS_ConvCall(ZOC_DECLARE_FIELD)
};
struct DepthwiseCall {
  ZOC_FIELDS_DepthwiseCall(ZOC_DECLARE_FIELD)
};
struct PoolCall {
  ZOC_FIELDS_PoolCall(ZOC_DECLARE_FIELD)
};
struct ActivationCall {
  ZOC_FIELDS_ActivationCall(ZOC_DECLARE_FIELD)
};
struct SoftmaxCall {
  ZOC_FIELDS_SoftmaxCall(ZOC_DECLARE_FIELD)
};
struct BatchNormCall {
  ZOC_FIELDS_BatchNormCall(ZOC_DECLARE_FIELD)
};
struct AddCall {
  ZOC_FIELDS_AddCall(ZOC_DECLARE_FIELD)
};
struct LinearCall {
  ZOC_FIELDS_LinearCall(ZOC_DECLARE_FIELD)
};
struct CopyCall {
  ZOC_FIELDS_CopyCall(ZOC_DECLARE_FIELD)
};
struct MulCall {
  ZOC_FIELDS_MulCall(ZOC_DECLARE_FIELD)
};
struct ConstOpCall {
  ZOC_FIELDS_ConstOpCall(ZOC_DECLARE_FIELD)
};
struct BinaryCall {
  ZOC_FIELDS_BinaryCall(ZOC_DECLARE_FIELD)
};
struct ChannelConvCall {
  ZOC_FIELDS_ChannelConvCall(ZOC_DECLARE_FIELD)
};
struct PadCall {
  ZOC_FIELDS_PadCall(ZOC_DECLARE_FIELD)
};
struct RelayoutCall {
  ZOC_FIELDS_RelayoutCall(ZOC_DECLARE_FIELD)
};
struct LayerNormCall {
  ZOC_FIELDS_LayerNormCall(ZOC_DECLARE_FIELD)
};
struct ShuffleCall {
  ZOC_FIELDS_ShuffleCall(ZOC_DECLARE_FIELD)
};
struct PoolKernelCall {
  ZOC_FIELDS_PoolKernelCall(ZOC_DECLARE_FIELD)
};
struct AdaptivePoolCall {
  ZOC_FIELDS_AdaptivePoolCall(ZOC_DECLARE_FIELD)
};
struct UpsampleCall {
  ZOC_FIELDS_UpsampleCall(ZOC_DECLARE_FIELD)
};
struct ArgmaxCall {
  ZOC_FIELDS_ArgmaxCall(ZOC_DECLARE_FIELD)
};
struct ChannelSoftmaxCall {
  ZOC_FIELDS_ChannelSoftmaxCall(ZOC_DECLARE_FIELD)
};
struct InputCall {
  ZOC_FIELDS_InputCall(ZOC_DECLARE_FIELD)
};
struct OutputCall {
  ZOC_FIELDS_OutputCall(ZOC_DECLARE_FIELD)
};

}  // namespace zoc
