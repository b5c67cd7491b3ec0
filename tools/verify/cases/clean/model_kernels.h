// Host wrapper of the clean model's one custom kernel (defined in model_kernels.cu).
#pragma once

#include <cuda_runtime.h>

namespace zoc_case::kernels {

cudaError_t scale(const float* in, float* out, int count, float factor, cudaStream_t stream);

}  // namespace zoc_case::kernels
