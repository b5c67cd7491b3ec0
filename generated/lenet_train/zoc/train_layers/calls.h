// One constant per node of a generated trainer's training graph: what its calls need besides
// its descriptor bundle, so that the generated layer sequences name each node once
// (`v.conv_grad(conv1_, kConvGrad_conv1, "conv1")`). The same constants serve the training step
// and the evaluation forward pass (which reads the forward nodes' constants with BatchNorm and
// dropout in evaluation mode).
//
// Tensors are byte offsets: per sample into the arena (scaled by max_batch: activations and
// their gradients share it by lifetime, zoc's one memory planner), or into one of the trainer's
// own buffers, as each field says: the parameters (PyTorch's layout, so checkpoints are
// state_dicts), their gradients (the same layout), the fixed region (BatchNorm's saved
// statistics, the loss). kNoTensor: none (a bias the layer lacks, or a gradient nobody reads).
// Plain aggregates, constexpr; needs cudnn.h only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zoc/cudnn/layers.h"
#include "zoc/cudnn/model_calls.h"
#include "zoc/math/activations.h"
#include "zoc/train_layers/call_fields.h"
#include "zoc/train_layers/layers.h"
#include "zoc/weights/init.h"  // InitRule

namespace zoc::train {

// A parameter of the state_dict: where it lies in params(), grads() and the momenta, its shape,
// whether SGD updates it, and how it is drawn without a weights file (zoc/weights/init.h).
struct Param {
  const char* name;
  size_t offset;  // in floats
  size_t count;
  int rank;
  int64_t shape[4];
  bool trainable;  // false: a BatchNorm running statistic
  InitRule init;
  int64_t fan;
};

// A range of the gradient buffer all-reduced as one in data-parallel training (floats).
struct Bucket {
  size_t offset, count;
};

// Each call constant, declared from its field list (zoc/train_layers/call_fields.h says what each
// holds).
struct ConvTrainCall {
  ZOC_FIELDS_ConvTrainCall(ZOC_DECLARE_FIELD)
};
struct ConvGradCall {
  ZOC_FIELDS_ConvGradCall(ZOC_DECLARE_FIELD)
};
struct BatchNormTrainCall {
  ZOC_FIELDS_BatchNormTrainCall(ZOC_DECLARE_FIELD)
};
struct BatchNormGradCall {
  ZOC_FIELDS_BatchNormGradCall(ZOC_DECLARE_FIELD)
};
struct ActivationTrainCall {
  ZOC_FIELDS_ActivationTrainCall(ZOC_DECLARE_FIELD)
};
struct ActivationGradCall {
  ZOC_FIELDS_ActivationGradCall(ZOC_DECLARE_FIELD)
};
struct PoolGradCall {
  ZOC_FIELDS_PoolGradCall(ZOC_DECLARE_FIELD)
};
struct LinearTrainCall {
  ZOC_FIELDS_LinearTrainCall(ZOC_DECLARE_FIELD)
};
struct LinearGradCall {
  ZOC_FIELDS_LinearGradCall(ZOC_DECLARE_FIELD)
};
struct DropoutCall {
  ZOC_FIELDS_DropoutCall(ZOC_DECLARE_FIELD)
};
struct LossCall {
  ZOC_FIELDS_LossCall(ZOC_DECLARE_FIELD)
};
struct LayerNormTrainCall {
  ZOC_FIELDS_LayerNormTrainCall(ZOC_DECLARE_FIELD)
};
struct MulGradCall {
  ZOC_FIELDS_MulGradCall(ZOC_DECLARE_FIELD)
};
struct OperandGradCall {
  ZOC_FIELDS_OperandGradCall(ZOC_DECLARE_FIELD)
};
struct SoftmaxGradCall {
  ZOC_FIELDS_SoftmaxGradCall(ZOC_DECLARE_FIELD)
};
struct UpsampleGradCall {
  ZOC_FIELDS_UpsampleGradCall(ZOC_DECLARE_FIELD)
};
struct ChannelConvGradCall {
  ZOC_FIELDS_ChannelConvGradCall(ZOC_DECLARE_FIELD)
};
struct LayerNormGradCall {
  ZOC_FIELDS_LayerNormGradCall(ZOC_DECLARE_FIELD)
};
struct PoolKernelGradCall {
  ZOC_FIELDS_PoolKernelGradCall(ZOC_DECLARE_FIELD)
};
struct AdaptivePoolGradCall {
  ZOC_FIELDS_AdaptivePoolGradCall(ZOC_DECLARE_FIELD)
};
struct PadChannelsCall {
  ZOC_FIELDS_PadChannelsCall(ZOC_DECLARE_FIELD)
};

}  // namespace zoc::train
