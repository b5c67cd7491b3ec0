// The precision table (see target.h).
#include "compiler/backend/cudnn/target.h"

namespace zoc::cudnn {
namespace {

constexpr Target kTargets[] = {
    {Precision::kFP32, "fp32", 4, false, "CUDNN_DATA_FLOAT", "CUDNN_TENSOR_NCHW", "CUDNN_FMA_MATH",
     "CUDA_R_32F", "CUBLAS_COMPUTE_32F", "zoc::DeviceDType::kF32", "float"},
    // tf32 stores NHWC: ResNet-50 on an H100 at batch 256, 27.8 ms NCHW, 14.4 ms NHWC (b1: 0.81,
    // 0.46); fp32 (FMA math) stays NCHW: NHWC was slower at batch 1 (2.02 vs 1.86 ms) and found
    // no algorithm for a strided 1x1 convolution at batch 256 (results/2026-11-23-h100-tf32-nhwc).
    {Precision::kTF32, "tf32", 4, true, "CUDNN_DATA_FLOAT", "CUDNN_TENSOR_NHWC",
     "CUDNN_DEFAULT_MATH", "CUDA_R_32F", "CUBLAS_COMPUTE_32F_FAST_TF32",
     "zoc::DeviceDType::kF32", "float"},
    {Precision::kFP16, "fp16", 2, true, "CUDNN_DATA_HALF", "CUDNN_TENSOR_NHWC",
     "CUDNN_TENSOR_OP_MATH", "CUDA_R_16F", "CUBLAS_COMPUTE_32F", "zoc::DeviceDType::kF16",
     "__half"},
    {Precision::kBF16, "bf16", 2, true, "CUDNN_DATA_BFLOAT16", "CUDNN_TENSOR_NHWC",
     "CUDNN_TENSOR_OP_MATH", "CUDA_R_16BF", "CUBLAS_COMPUTE_32F", "zoc::DeviceDType::kBF16",
     "__nv_bfloat16"},
};

}  // namespace

const Target& target(Precision p) { return kTargets[static_cast<int>(p)]; }

std::optional<Precision> parse_precision(std::string_view name) {
  for (const Target& t : kTargets) {
    if (t.name == name) return t.precision;
  }
  return std::nullopt;
}

}  // namespace zoc::cudnn
