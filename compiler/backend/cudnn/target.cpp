// The precision table (see target.h), and the lowering target it gives with a compile's
// options (emitter.h).
#include "compiler/backend/cudnn/target.h"

#include "compiler/backend/cudnn/emitter.h"

namespace zoc::cudnn {
namespace {

using ir::DType;
constexpr ir::Layout kNCHW = ir::Layout::NCHW, kNHWC = ir::Layout::NHWC;

constexpr Target kTargets[] = {
    {Precision::kFP32, "fp32", DType::F32, kNCHW, "CUDNN_DATA_FLOAT", "CUDNN_FMA_MATH",
     "CUDA_R_32F", "CUBLAS_COMPUTE_32F", "zoc::DeviceDType::kF32", "float"},
    // tf32 stores NHWC: ResNet-50 on an H100 at batch 256, 27.8 ms NCHW, 14.4 ms NHWC (b1: 0.81,
    // 0.46); fp32 (FMA math) stays NCHW: NHWC was slower at batch 1 (2.02 vs 1.86 ms) and found
    // no algorithm for a strided 1x1 convolution at batch 256 (results/2026-11-23-h100-tf32-nhwc).
    {Precision::kTF32, "tf32", DType::F32, kNHWC, "CUDNN_DATA_FLOAT", "CUDNN_DEFAULT_MATH",
     "CUDA_R_32F", "CUBLAS_COMPUTE_32F_FAST_TF32", "zoc::DeviceDType::kF32", "float"},
    {Precision::kFP16, "fp16", DType::F16, kNHWC, "CUDNN_DATA_HALF", "CUDNN_TENSOR_OP_MATH",
     "CUDA_R_16F", "CUBLAS_COMPUTE_32F", "zoc::DeviceDType::kF16", "__half"},
    {Precision::kBF16, "bf16", DType::BF16, kNHWC, "CUDNN_DATA_BFLOAT16", "CUDNN_TENSOR_OP_MATH",
     "CUDA_R_16BF", "CUBLAS_COMPUTE_32F", "zoc::DeviceDType::kBF16", "__nv_bfloat16"},
};

}  // namespace

const Target& target(Precision p) { return kTargets[static_cast<int>(p)]; }

std::optional<Precision> parse_precision(std::string_view name) {
  for (const Target& t : kTargets) {
    if (t.name == name) return t.precision;
  }
  return std::nullopt;
}

std::string_view cudnn_format(ir::Layout layout) {
  return layout == ir::Layout::NHWC ? "CUDNN_TENSOR_NHWC" : "CUDNN_TENSOR_NCHW";
}

lower::TargetDesc lowering_target(const EmitOptions& options) {
  const Target& t = target(options.precision);
  lower::TargetDesc d;
  d.name = "the cuDNN backend";
  d.precision = t.name;
  d.dtype = t.dtype;
  d.layout = options.layout == Layout::kAuto   ? t.layout
             : options.layout == Layout::kNHWC ? ir::Layout::NHWC
                                               : ir::Layout::NCHW;
  d.graph_api = options.conv_api == ConvApi::kGraph;
  // cuDNN's pointwise operations express every activation but hardswish and hardsigmoid.
  d.graph_epilogue = [](act::Kind k) { return act::cudnn_pointwise(k); };
  d.linear_as_conv = options.linear_api == LinearApi::kCudnn;
  d.depthwise_kernel = options.depthwise == DepthwiseApi::kZoc;
  // cuDNN's NHWC global pooling ran EfficientNet-B0's 17 at ~0.8 TB/s, 15% of its forward at
  // batch 256 fp16 on an H100 (2026-11-25): zoc's kernel instead.
  d.nhwc_global_pool_kernel = true;
  d.pad_input_channels = options.pad_input_channels;
  d.side_stream = options.side_stream;
  return d;
}

}  // namespace zoc::cudnn
