// <model>_kernels.cu: the host functions of zoc/kernels/model_kernels.h that the model's layers
// call, for its element type, each forwarding to a kernel template of zoc/kernels/ (nvcc only).
// A function no layer of the lowered graph calls is left out, and so is the header of kernels
// none of them launches: nvcc compiles only the kernels the model runs (a ResNet-50 compiled
// the depthwise convolution, layer norm and channel shuffle too). The runtime calls each
// function only from the step of its layer kind (zoc/cudnn/model_steps.h or kernel_steps.h,
// templates instantiated per layer), so a left-out one is never referenced.
#include <algorithm>
#include <initializer_list>
#include <set>
#include <string>

#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_internal.h"
#include "compiler/lower/lower_to_target.h"

namespace zoc::cudnn {
namespace {

// One host function: the header of the kernel it launches, its definition for element type T,
// and whether a lowered graph calls it.
struct HostFunction {
  const char* header;
  const char* definition;
  bool (*used)(const ir::Graph& g);
  // Whether a trainer's graph calls it (a training graph is not lowered: by op); null: never.
  bool (*trained)(const ir::Graph& g) = nullptr;
};

bool any_epilogue(const ir::Graph& g, ir::Epilogue e) {
  for (const ir::Node& n : g.nodes) {
    if (n.lowered->epilogue == e) return true;
  }
  return false;
}

// The upsampling step calls one of two functions by its constant (into the arena, or a model
// output into the caller's rows): both are defined where either kind runs.
bool any_upsample(const ir::Graph& g) {
  return any_layer(g, ir::LayerKind::Upsample) || any_layer(g, ir::LayerKind::UpsampleOutput);
}

// Whether a (training) graph has a node of one of `ops` with `inputs` operands (an arithmetic op
// with one: a tensor and a constant, const_op's; with two: tensors).
bool any_with_inputs(const ir::Graph& g, std::initializer_list<ir::OpKind> ops, size_t inputs) {
  for (const ir::Node& n : g.nodes) {
    if (n.inputs.size() == inputs && std::find(ops.begin(), ops.end(), n.op) != ops.end()) {
      return true;
    }
  }
  return false;
}

// The definitions are raw strings, written as generated (T: the model's element type).
const HostFunction kFunctions[] = {
    {"zoc/kernels/kernels.cuh", R"(
cudaError_t input_to_nhwc(const float* in, void* out, int n, int c, int h, int w, int c_stored,
                          cudaStream_t stream) {
  return kernels::launch_nchw_to_nhwc<T>(in, static_cast<T*>(out), n, c, h, w, c_stored,
                                         stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::InputConvert); }},
    {"zoc/kernels/kernels.cuh", R"(
cudaError_t to_float(const void* in, float* out, int64_t count, cudaStream_t stream) {
  return kernels::launch_to_float<T>(static_cast<const T*>(in), out, count, stream);
})",
     [](const ir::Graph& g) { return g.target->output_convert; }},
    // A cuBLAS linear layer's bias.
    {"zoc/kernels/kernels.cuh", R"(
cudaError_t bias_rows(void* y, const void* bias, int rows, int cols, cudaStream_t stream) {
  return kernels::launch_bias_rows<T>(static_cast<T*>(y), static_cast<const T*>(bias), rows,
                                      cols, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::LinearGemm); }},
    {"zoc/kernels/kernels.cuh", R"(
cudaError_t add(const void* a, const void* b, void* y, int64_t count, cudaStream_t stream) {
  return kernels::launch_add<T>(static_cast<const T*>(a), static_cast<const T*>(b),
                                static_cast<T*>(y), count, false, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::Add); }},
    // Activation layers, an activation after a convolution whose epilogue lacks it, and every
    // graph-API convolution (its split form, which tuning may choose, runs it).
    {"zoc/kernels/kernels.cuh", R"(
cudaError_t activation(act::Kind kind, act::Params p, const void* x, void* y, int64_t count,
                       cudaStream_t stream) {
  return kernels::launch_activation<T>(kind, p, static_cast<const T*>(x), static_cast<T*>(y),
                                       count, stream);
})",
     [](const ir::Graph& g) {
       return any_layer(g, ir::LayerKind::Activation) || any_layer(g, ir::LayerKind::ConvGraph) ||
              any_epilogue(g, ir::Epilogue::kSeparate);
     }},
    {"zoc/kernels/layer_kernels.cuh", R"(
cudaError_t channel_mul(const void* x, const void* s, void* y, int64_t count, ChannelMulShape m,
                        cudaStream_t stream) {
  return kernels::launch_channel_mul<T, T>(static_cast<const T*>(x), static_cast<const T*>(s),
                                           static_cast<T*>(y), count, m, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::Mul); },
     [](const ir::Graph& g) {
       return any_with_inputs(g, {ir::OpKind::Mul}, 2) || any_op(g, ir::OpKind::LayerScale);
     }},
    {"zoc/kernels/const_op.cuh", R"(
cudaError_t const_op(const void* x, const float* v, void* y, int64_t count, ConstOpShape m,
                     cudaStream_t stream) {
  return kernels::launch_const_op<T>(static_cast<const T*>(x), v, static_cast<T*>(y), count, m,
                                     stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::ConstOp); },
     [](const ir::Graph& g) {
       return any_with_inputs(
           g, {ir::OpKind::Add, ir::OpKind::Sub, ir::OpKind::Mul, ir::OpKind::Div}, 1);
     }},
    {"zoc/kernels/const_op.cuh", R"(
cudaError_t binary(const void* a, const void* b, void* y, int64_t count, ConstOpKind op,
                   cudaStream_t stream) {
  return kernels::launch_binary<T>(static_cast<const T*>(a), static_cast<const T*>(b),
                                   static_cast<T*>(y), count, op, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::Binary); },
     [](const ir::Graph& g) {
       return any_with_inputs(g, {ir::OpKind::Sub, ir::OpKind::Div}, 2);
     }},
    {"zoc/kernels/channel_conv.cuh", R"(
cudaError_t channel_conv(const void* x, const float* w, const float* bias, void* y, int64_t n,
                         ChannelConvGeometry g, cudaStream_t stream) {
  return kernels::launch_channel_conv<T>(static_cast<const T*>(x), w, bias, static_cast<T*>(y), n,
                                         g, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::ChannelConv); },
     [](const ir::Graph& g) { return any_op(g, ir::OpKind::ChannelConv1d); }},
    {"zoc/kernels/pad.cuh", R"(
cudaError_t pad(const void* x, void* y, int64_t n, PadGeometry g, cudaStream_t stream) {
  return kernels::launch_pad<T>(static_cast<const T*>(x), static_cast<T*>(y), n, g, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::PadKernel); },
     [](const ir::Graph& g) { return any_op(g, ir::OpKind::Pad); }},
    {"zoc/kernels/relayout.cuh", R"(
cudaError_t relayout(const void* x, void* y, int64_t n, RelayoutGeometry g, cudaStream_t stream) {
  return kernels::launch_relayout<T>(static_cast<const T*>(x), static_cast<T*>(y), n, g, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::Relayout); }},
    {"zoc/kernels/layer_kernels.cuh", R"(
cudaError_t layernorm(const void* x, void* y, const float* gamma, const float* beta, int64_t n,
                      int64_t c, int64_t hw, bool nhwc, float eps, cudaStream_t stream) {
  return kernels::launch_layernorm<T>(static_cast<const T*>(x), static_cast<T*>(y), gamma, beta,
                                      n, c, hw, nhwc, eps, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::LayerNorm); },
     [](const ir::Graph& g) { return any_op(g, ir::OpKind::LayerNorm); }},
    {"zoc/kernels/layer_kernels.cuh", R"(
cudaError_t channel_shuffle(const void* x, void* y, int64_t n, int64_t c, int64_t hw,
                            int64_t groups, bool nhwc, cudaStream_t stream) {
  return kernels::launch_channel_shuffle<T>(static_cast<const T*>(x), static_cast<T*>(y), n, c,
                                            hw, groups, nhwc, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::Shuffle); },
     [](const ir::Graph& g) { return any_op(g, ir::OpKind::ChannelShuffle); }},
    {"zoc/kernels/layer_kernels.cuh", R"(
cudaError_t pool(const void* x, void* y, int64_t n, PoolGeometry g, cudaStream_t stream) {
  return kernels::launch_pool<T>(static_cast<const T*>(x), static_cast<T*>(y), n, g, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::PoolKernel); }, any_pool_kernel},
    {"zoc/kernels/layer_kernels.cuh", R"(
cudaError_t adaptive_avgpool(const void* x, void* y, int64_t n, AdaptiveGeometry g,
                             cudaStream_t stream) {
  return kernels::launch_adaptive_avgpool<T>(static_cast<const T*>(x), static_cast<T*>(y), n, g,
                                             stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::AdaptivePool); },
     [](const ir::Graph& g) { return any_op(g, ir::OpKind::AdaptiveAvgPool2d); }},
    {"zoc/kernels/dense_kernels.cuh", R"(
cudaError_t output_to_caller(const void* y, float* out, int64_t n, OutputGeometry g,
                             cudaStream_t stream) {
  return kernels::launch_output_to_caller<T>(static_cast<const T*>(y), out, n, g, stream);
})",
     output_kernel_used},
    {"zoc/kernels/dense_kernels.cuh", R"(
cudaError_t channel_softmax(const void* x, void* y, int64_t n, int64_t c, int64_t hw, bool nhwc,
                            bool log, cudaStream_t stream) {
  return kernels::launch_channel_softmax<T>(static_cast<const T*>(x), static_cast<T*>(y), n, c,
                                            hw, nhwc, log, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::ChannelSoftmax); },
     [](const ir::Graph& g) {
       return any_op(g, ir::OpKind::Softmax) || any_op(g, ir::OpKind::LogSoftmax);
     }},
    {"zoc/kernels/dense_kernels.cuh", R"(
cudaError_t upsample(const void* x, void* y, int64_t n, UpsampleGeometry g, cudaStream_t stream) {
  return kernels::launch_upsample<T>(static_cast<const T*>(x), static_cast<T*>(y), n, g, stream);
})",
     any_upsample,
     [](const ir::Graph& g) {
       return any_op(g, ir::OpKind::UpsampleNearest) || any_op(g, ir::OpKind::UpsampleBilinear);
     }},
    {"zoc/kernels/dense_kernels.cuh", R"(
cudaError_t upsample_to_caller(const void* x, float* out, int64_t n, UpsampleGeometry g,
                               OutputGeometry o, cudaStream_t stream) {
  return kernels::launch_upsample_to_caller<T>(static_cast<const T*>(x), out, n, g, o, stream);
})",
     any_upsample},
    {"zoc/kernels/dense_kernels.cuh", R"(
cudaError_t channel_argmax(const void* x, float* out, int64_t n, int64_t c, bool nhwc,
                           OutputGeometry o, cudaStream_t stream) {
  return kernels::launch_channel_argmax<T>(static_cast<const T*>(x), out, n, c, nhwc, o, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::ArgmaxOutput); }},
    {"zoc/kernels/depthwise.cuh", R"(
cudaError_t depthwise_conv(const void* x, const void* w, const void* b, const void* z, void* y,
                           int64_t n, DepthwiseGeometry g, cudaStream_t stream) {
  return kernels::launch_depthwise<T>(static_cast<const T*>(x), static_cast<const T*>(w),
                                      static_cast<const T*>(b), static_cast<const T*>(z),
                                      static_cast<T*>(y), n, g, stream);
})",
     [](const ir::Graph& g) { return any_layer(g, ir::LayerKind::ConvDepthwise); }},
};

}  // namespace

bool any_pool_kernel(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes) {
    if (lower::pool_needs_kernel(n)) return true;
  }
  return false;
}

bool any_op(const ir::Graph& g, ir::OpKind op) {
  for (const ir::Node& n : g.nodes) {
    if (n.op == op) return true;
  }
  return false;
}

std::string trainer_forward_kernels(const ir::Graph& g, std::set<std::string>* headers) {
  CodeWriter cu;
  bool any = false;
  for (const HostFunction& f : kFunctions) {
    if (!f.trained || !f.trained(g)) continue;
    if (!any) {
      cu.line("namespace zoc::model_kernels {{");
      cu.blank();
      cu.line("using T = float;");
      any = true;
    }
    headers->insert(f.header);
    cu.raw_line(f.definition + 1);  // after R"(\n
  }
  if (any) cu.line("}}  // namespace zoc::model_kernels");
  return cu.str();
}

std::string kernels_source(const ir::Graph& g, const std::string& head, const std::string& base,
                           const Target& t) {
  std::set<std::string> headers = {"zoc/kernels/model_kernels.h"};
  std::vector<const HostFunction*> used;
  for (const HostFunction& f : kFunctions) {
    if (!f.used(g)) continue;
    used.push_back(&f);
    headers.insert(f.header);
  }
  CodeWriter cu;
  cu.raw_line(head);
  cu.line("// Custom kernels of {}, for its element type ({}): the host functions of", base,
          t.cuda_type);
  cu.line("// zoc/kernels/model_kernels.h that its layers call.");
  for (const std::string& h : headers) cu.line("#include \"{}\"", h);
  cu.blank();
  {
    auto ns = cu.ns("namespace zoc::model_kernels", "}  // namespace zoc::model_kernels");
    cu.line("using T = {};", t.cuda_type);
    cu.blank();
    for (const HostFunction* f : used) cu.raw_line(f->definition + 1);  // after R"(\n
  }
  return cu.str();
}

}  // namespace zoc::cudnn
