// The IR's vocabulary after lower-to-target (compiler/lower/lower_to_target.h): where each value
// is stored and which runtime layer runs each node.
//
// Before the lowering a graph says what to compute; after it, also how the target computes it:
// every value's dtype and layout (in its TensorType), its stored channels, its arena slot and the
// stream that writes it (Value::storage); every node's runtime layer kind, its epilogue, where
// its packed weights lie and which side branches it starts or joins (Node::lowered); and the
// graph's totals (Graph::target). The lowering writes these, the verifier checks them
// (verify_lowering.cpp), the printer shows them, and the emitter only prints them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zoc::ir {

using ValueId = int32_t;

// The runtime layers of the cuDNN backend (zoc/cudnn/model_steps.h, kernel_steps.h), one row each:
// X(Id, "name", nchw, nhwc, f32_only, "what runs")
//   nchw, nhwc: the storage layouts of images it reads and writes; f32_only: it moves fp32 only.
#define ZOC_LAYER_KINDS(X)                                                                      \
  X(InputInPlace, "input.in_place", true, false, true,                                          \
    "the caller's fp32 NCHW buffer, read in place (no call)")                                   \
  X(InputCopy, "input.copy", true, false, true,                                                 \
    "the caller's fp32 NCHW buffer, copied into the arena (graph plans bind fixed pointers)")   \
  X(InputConvert, "input.to_nhwc", false, true, false,                                          \
    "the caller's fp32 NCHW buffer, converted to NHWC in the model's dtype (channels padded)")  \
  X(ConvLegacy, "conv.legacy", true, true, false,                                               \
    "cudnnConvolutionBiasActivationForward (ConvLayer): ReLU at most in its epilogue")          \
  X(ConvGraph, "conv.graph", true, true, false,                                                 \
    "a cuDNN graph-API plan (GraphConvLayer): any pointwise activation in its epilogue")        \
  X(ConvDepthwise, "conv.depthwise", true, true, false,                                         \
    "zoc's depthwise kernel (zoc/kernels/depthwise.cuh), epilogue fused")                       \
  X(ConvTranspose, "conv_transpose.cudnn", true, true, false,                                   \
    "cudnnConvolutionBackwardData then cudnnAddTensor for the bias (ConvTransposeLayer)")       \
  X(LinearGemm, "linear.cublas", true, true, false, "cuBLAS GEMM after a bias kernel")          \
  X(LinearConv, "linear.conv", true, true, false,                                               \
    "a legacy cuDNN convolution whose filter covers the input, bias in its epilogue")           \
  X(Pool, "pool.cudnn", true, true, false, "cudnnPoolingForward (PoolLayer)")                   \
  X(PoolKernel, "pool.kernel", true, true, false,                                               \
    "zoc's pooling kernel (ceil_mode, dilation: PyTorch's edge rules)")                         \
  X(AdaptivePool, "pool.adaptive", true, true, false, "zoc's adaptive average pooling kernel")  \
  X(Softmax, "softmax.cudnn", true, true, false, "cudnnSoftmaxForward")                         \
  X(ChannelSoftmax, "softmax.kernel", true, true, false,                                        \
    "zoc's softmax or log-softmax over the channels of an image, per pixel")                    \
  X(BatchNorm, "batchnorm.cudnn", true, true, false,                                            \
    "cudnnBatchNormalizationForwardInference (no convolution absorbed it)")                     \
  X(Add, "add.kernel", true, true, false, "zoc's elementwise add kernel")                       \
  X(Activation, "activation.kernel", true, true, false, "zoc's activation kernel")              \
  X(Copy, "copy", true, true, false, "strided copies (concat, channel slices)")                 \
  X(View, "view", true, true, false, "no call: a view of its input's storage")                  \
  X(Mul, "mul.kernel", true, true, false, "zoc's multiply kernel (per channel or elementwise)") \
  X(ConstOp, "const_op.kernel", true, true, false,                                              \
    "zoc's add, sub, mul or div by a constant: a compiled-in scalar, or an fp32 weight per "    \
    "channel or one value")                                                                     \
  X(Binary, "binary.kernel", true, true, false,                                                 \
    "zoc's elementwise sub or div of two tensors of one shape")                                 \
  X(ChannelConv, "channel_conv.kernel", true, true, false,                                      \
    "zoc's 1-D convolution over the features of each sample (ECA attention), fp32 weights")     \
  X(PadKernel, "pad.kernel", true, true, false,                                                 \
    "zoc's constant padding kernel (any side, any amount: cuDNN pads symmetrically)")           \
  X(Relayout, "reshape.kernel", true, true, false,                                              \
    "zoc's copy of a reshape or flatten whose stored element order differs from NCHW's (NHWC)") \
  X(LayerNorm, "layernorm.kernel", true, true, false, "zoc's layer norm kernel")                \
  X(Shuffle, "shuffle.kernel", true, true, false, "zoc's channel shuffle kernel")               \
  X(Upsample, "upsample.kernel", true, true, false,                                             \
    "zoc's nearest or bilinear upsampling kernel (PyTorch's source indices)")                   \
  X(UpsampleOutput, "upsample.to_output", true, true, false,                                    \
    "zoc's upsampling kernel writing a model output straight to the caller's fp32 NCHW rows")   \
  X(ArgmaxOutput, "argmax.to_output", true, true, false,                                        \
    "zoc's argmax over channels, a model output: class indices as fp32 in the caller's rows")

enum class LayerKind : uint8_t {
  None,  // not lowered
#define ZOC_LAYER_KIND(id, name, nchw, nhwc, f32_only, summary) id,
  ZOC_LAYER_KINDS(ZOC_LAYER_KIND)
#undef ZOC_LAYER_KIND
};

struct LayerKindInfo {
  LayerKind kind;
  std::string_view name;
  bool nchw, nhwc;  // image layouts it supports
  bool f32_only;
  std::string_view summary;
};
const LayerKindInfo& layer_kind_info(LayerKind kind);

// Where a fused convolution's activation (its "activation" attribute) runs.
enum class Epilogue : uint8_t {
  kNone,      // it has none
  kFused,     // in the layer's own epilogue
  kSeparate,  // as zoc's activation kernel after it, in place on its output
};

// How a node's weights are packed (zoc/weights/pack.h).
enum class WeightLayout : uint8_t {
  kNone,
  kKCRS,       // filters as PyTorch stores them
  kKRSC,       // channels last (NHWC convolutions), input channels padded to the stored ones
  kTapsMajor,  // a depthwise filter [r, s, k] for zoc's NHWC kernel
  kRows,       // a linear layer's [out, in] matrix
  kRowsHWC,    // [out, in] with columns permuted to an NHWC image's (h, w, c) flatten order
  kVector,     // per-channel vectors (batch norm, layer norm, layer scale)
};
std::string_view weight_layout_name(WeightLayout layout);

enum class Stream : uint8_t { kMain, kSide };

// A value's storage (Value::storage): what the lowering placed.
struct Storage {
  int64_t stored_channels = 0;    // an image's channels as stored: its type's, or a padded input's
  int64_t offset = -1;            // per-sample byte offset in the activation arena; -1: caller's
  int64_t bytes = 0;              // per-sample bytes it occupies there (aligned)
  ValueId alias_of = -1;          // a view of that value's storage (flatten), or -1
  Stream stream = Stream::kMain;  // the stream that writes it
};

// A node's runtime layer (Node::lowered).
struct Lowered {
  LayerKind kind = LayerKind::None;
  Epilogue epilogue = Epilogue::kNone;
  WeightLayout weights = WeightLayout::kNone;
  int64_t weight_offset = -1, bias_offset = -1;  // bytes into the packed weights; -1: none
  int side_branch = -1;                          // >= 0: runs on the side stream as side branch k
  std::vector<int> joins;  // side branches the main stream waits for before this node
};

// The graph's totals and the choices it was lowered with (Graph::target).
struct TargetInfo {
  std::string precision;   // "fp16": the backend's precision (dtype and math mode)
  bool graph_api = false;  // convolutions chose cuDNN's graph API where they could
  int64_t arena_bytes_per_sample = 0;
  int64_t unshared_bytes_per_sample = 0;  // every value in its own bytes, for the report
  int64_t weight_bytes = 0;
  int side_branches = 0;
  // The logits leave through the conversion kernel to fp32 (NHWC storage), else a plain copy.
  bool output_convert = false;
  uint64_t model_hash = 0;  // of the graph before lowering (printed without locations)
};

}  // namespace zoc::ir
