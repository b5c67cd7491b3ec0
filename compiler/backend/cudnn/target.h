// The cuDNN backend's precisions, as a small table of settings (the tinygrad idea of a backend
// as settings): how activations are stored, which cuDNN/cuBLAS types and math modes are used.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace zoc::cudnn {

enum class Precision { kFP32, kTF32, kFP16, kBF16 };

struct Target {
  Precision precision;
  std::string_view name;           // "fp16"
  int element_bytes;               // bytes per activation/weight element
  bool nhwc;                       // channels-last storage
  std::string_view cudnn_data;     // CUDNN_DATA_HALF
  std::string_view cudnn_format;   // CUDNN_TENSOR_NHWC
  std::string_view cudnn_math;     // CUDNN_FMA_MATH keeps TF32 off in fp32 mode
  std::string_view blas_type;      // CUDA_R_16F
  std::string_view blas_compute;   // CUBLAS_COMPUTE_32F
  std::string_view device_dtype;   // zoc::DeviceDType::kF16 (weight packing)
  std::string_view cuda_type;      // __half (custom kernels)
};

const Target& target(Precision p);
std::optional<Precision> parse_precision(std::string_view name);

}  // namespace zoc::cudnn
