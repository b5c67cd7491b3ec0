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
#include "zoc/train/layers.h"

namespace zoc::train {

// A parameter of the state_dict: where it lies in params(), grads() and the momenta, its shape,
// whether SGD updates it, and how it is drawn without a weights file (zoc/core/init.h).
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

// y = conv(x, w) (+ b); parameters w, b at byte offsets of params().
struct ConvTrainCall {
  ConvGeometry g;
  size_t x, w, b, y;
};

// dx = conv^T(dy) (kNoTensor: not needed), dw and db (grads() offsets; db kNoTensor if none).
struct ConvGradCall {
  size_t x, dy, w, dx, dw, db;
};

// Batch norm with its parameters in params() (gamma, beta, running mean, running variance) and
// its saved statistics in the fixed region ([2, c]: mean, then inverse deviation).
struct BatchNormTrainCall {
  int c, h, w;
  double eps, momentum;
  size_t x, y, gamma, beta, mean, var, saved;
};

// dx = BN'(dy); dgamma, dbeta into grads().
struct BatchNormGradCall {
  int c;
  double eps;
  size_t x, dy, saved, gamma, dx, dgamma, dbeta;
};

// A unary pointwise activation over `per_sample` elements: y = f(x); its backward reads the
// forward's output or input (`s`, as zoc::act's kFromOutput says).
struct ActivationTrainCall {
  act::Kind kind;
  act::Params params;
  int64_t per_sample;
  size_t x, y;
};
struct ActivationGradCall {
  act::Kind kind;
  act::Params params;
  int64_t per_sample;
  size_t s, dy, dx;
};

// dx = pool'(dy), for the PoolCall of the same layer (y: the forward's output, or for average
// pooling, which does not read it, any tensor of its shape).
struct PoolGradCall {
  size_t x, y, dy, dx;
};

// y[n, out] = x W^T (+ b), parameters in params().
struct LinearTrainCall {
  int in, out;
  size_t w, b, x, y;
};
// dx = dy W (kNoTensor: not needed); dW = dy^T x; db = column sums of dy (grads()).
struct LinearGradCall {
  int in, out;
  size_t x, dy, w, dx, dw, db;
};

// Dropout with probability p: masks from (seed, step, layer, element), the same in backward.
struct DropoutCall {
  float p;
  uint64_t layer;
  int64_t per_sample;
  size_t x, y;
};

// The mean softmax cross-entropy of `logits` against the labels: dlogits into the arena, the
// loss into the fixed region.
struct LossCall {
  int classes;
  size_t logits, dlogits, loss;
};

}  // namespace zoc::train
