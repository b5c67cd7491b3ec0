// The cuDNN backend's precisions, as a small table of settings (the tinygrad idea of a backend
// as settings): the dtype and default storage layout each gives lower-to-target
// (lowering_target, emitter.h), and the printer's type mapping: the cuDNN/cuBLAS types and math
// modes, the weight packing's dtype and the kernels' element type it prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "compiler/ir/graph.h"

namespace zoc::cudnn {

enum class Precision { kFP32, kTF32, kFP16, kBF16 };

struct Target {
  Precision precision;
  std::string_view name;          // "fp16"
  ir::DType dtype;                // of activations and weights
  ir::Layout layout;              // default storage of images (--layout auto)
  std::string_view cudnn_data;    // CUDNN_DATA_HALF
  std::string_view cudnn_math;    // CUDNN_FMA_MATH keeps TF32 off in fp32 mode
  std::string_view blas_type;     // CUDA_R_16F
  std::string_view blas_compute;  // CUBLAS_COMPUTE_32F
  std::string_view device_dtype;  // zoc::DeviceDType::kF16 (weight packing)
  std::string_view cuda_type;     // __half (custom kernels)
};

const Target& target(Precision p);
std::optional<Precision> parse_precision(std::string_view name);

// The printer's name of a storage layout: CUDNN_TENSOR_NHWC or CUDNN_TENSOR_NCHW.
std::string_view cudnn_format(ir::Layout layout);

}  // namespace zoc::cudnn
