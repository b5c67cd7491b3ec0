// What the cuDNN emitter knows when it emits a trainer (emit_trainer.cpp) besides what any
// emission knows (emit_internal.h): the parameters' layout in PyTorch's order, the values'
// names and readers in the training graph, and the gradient buckets of data-parallel training.
// The training graph's nodes go through emit_train_layer's switch (emit_train_layers.cpp): the
// snippets of the training-only ops, and of the forward ops in the trainer's fp32 NCHW,
// PyTorch-layout form, are there and in emit_train_kernel_layers.cpp (the layers zoc's own
// kernels run); add, concat, flatten and the arithmetic share inference's.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/backend/cudnn/emit_internal.h"
#include "compiler/lower/memory_plan.h"

namespace zoc::cudnn {

// One state_dict tensor (float): where it lies in params(), grads() and the momenta.
struct ParamSlot {
  std::string name;
  std::string id;                 // its byte-offset constant: kP_<id>
  int64_t offset = 0, count = 0;  // floats
  std::vector<int64_t> shape;
  bool trainable = true;
  std::string rule;  // zoc::InitRule used when no weights file is given
  int64_t fan = 0;   // its fan: fan_in (uniform) or fan_out (normal)
};

// A range of the gradient buffer all-reduced as one (data-parallel training), complete after
// the training graph's node `last_node`.
struct GradBucket {
  int64_t offset = 0, count = 0;  // floats
  size_t last_node = 0;
};

// SGD inside the backward pass (Trainer::use_fused_sgd): after training-graph node `node`, the
// trainable tensors whose gradients it wrote, as runs of contiguous floats of the layout. While
// the node runs, its gradients go to a window that starts at float `origin` of the layout.
struct GradUpdate {
  size_t node = 0;
  int64_t origin = 0;
  std::vector<std::pair<int64_t, int64_t>> runs;  // offset, count (floats)
};

struct TrainInfo {
  bool tf32 = false;  // --precision tf32: cuDNN and cuBLAS may round fp32 operands to TF32
  // The activations' storage type: F32, or BF16 / F16 (--precision bf16 / fp16: mixed
  // precision, emit_trainer.cpp's mark_half; fp16 scales the loss).
  ir::DType storage = ir::DType::F32;
  bool mixed() const { return storage != ir::DType::F32; }
  const char* storage_name() const {  // as --precision names it
    return storage == ir::DType::BF16 ? "bf16" : storage == ir::DType::F16 ? "fp16" : "fp32";
  }
  int64_t grad_scratch_elements = 0;  // mixed: the largest convolution weight
  int64_t grad_discard_elements = 0;  // 2 x the widest BatchNorm with a frozen gamma or beta
  std::vector<ParamSlot> params;      // trainable first, then running statistics; model order
  std::map<std::string, size_t> param_index;
  int64_t param_elements = 0, trainable_elements = 0;
  std::vector<std::string> value_ids;  // per value: a unique C++ identifier
  std::vector<int> readers;            // per value: how many node inputs read it
  std::vector<GradBucket> buckets;
  std::vector<GradUpdate> updates;  // empty: SGD cannot run inside this graph's backward pass
  // An activation node (or an activation's gradient) -> the add right before it whose sum only
  // it reads: it adds the add's two inputs itself, and the add is not emitted.
  std::map<size_t, size_t> add_into;
  int64_t grad_window_elements = 0;          // the widest node's span of gradients (0: no updates)
  std::map<std::string, size_t> node_index;  // node name -> index in the training graph
  lower::MemoryPlan plan;                    // the training graph's memory plan
};

// What the trainer's snippets share (emit_train_layers.cpp).
namespace train_snippet {
// The byte-offset constant of the node's parameter of `role` in params(), or zoc::kNoTensor.
std::string param_offset(const EmitContext& ctx, const ir::Node& n, ir::ParamRole role);
// The layer a backward node stands for (its descriptor bundle and its name in errors).
const ir::Node& forward_of(const EmitContext& ctx, const ir::Node& n);
// A result nobody reads is not computed (the graph input's gradient): zoc::kNoTensor.
std::string needed(const EmitContext& ctx, ir::ValueId v);
// The gradient result named grad.<param> of the node's parameter of `role`, or zoc::kNoTensor.
std::string grad_of(const EmitContext& ctx, const ir::Node& n, ir::ParamRole role);
// The node's comment (name, what it computes, where the model file has it) and its call.
void call(EmitContext& ctx, const ir::Node& n, const std::string& what, const std::string& text);
}  // namespace train_snippet

// The snippets of the layers zoc's own kernels run in a trainer, and of their backwards
// (emit_train_kernel_layers.cpp): layer scale, layer norm, ECA's 1-D convolution, and the
// backwards of mul, layer scale, layer norm, adaptive pooling, ECA's convolution, channel
// slices and padding.
bool emit_train_kernel_layer(EmitContext& ctx, const ir::Node& n, size_t i);

// The training graph's bucket plan (emit_train_sync.cpp): PyTorch DDP's defaults.
std::vector<GradBucket> plan_buckets(const ir::Graph& g, const TrainInfo& info);
// Where each gradient is final and its parameter no longer read (emit_train_sync.cpp): the
// in-backward SGD plan, or none where a tensor's gradient is not written by exactly one node
// after which nothing reads the tensor.
void plan_updates(const ir::Graph& model, const ir::Graph& g, TrainInfo& info);
// The CMake section that finds NCCL for data-parallel training.
std::string nccl_cmake(const std::string& base);

// The name of value v in a trainer's calls: kA_<id> (arena, per sample), kF_<id> (the fixed
// region) or kP_<param> (a parameter's gradient, pinned at its parameter's offset).
std::string train_tensor(const EmitContext& ctx, ir::ValueId v);

}  // namespace zoc::cudnn
