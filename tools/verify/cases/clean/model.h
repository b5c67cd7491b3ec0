// A clean model for zoc-verify, shaped like a generated folder: everything here must pass.
//
// It exercises what the checker must allow: descriptors created in create() and only
// re-described in forward (cudnnSet*), a kernel wrapper defined in the .cu file, std::max,
// error messages built only on the error path, and CUDA-graph capture on lines marked
// `// zoc-verify: one-time`, which the inventory lists instead of failing.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <string>

#include "zoc/core/expected.h"

namespace zoc_case {

class Clean {
 public:
  static constexpr size_t kArenaBytesPerSample = 4096;
  static constexpr size_t kWeightBytes = 1024;

  static zoc::Expected<std::unique_ptr<Clean>> create(int max_batch);
  ~Clean();
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);

 private:
  Clean() = default;
  zoc::Status init(int max_batch);
  zoc::Status set_batch(int n);
  zoc::Status run_layers(const float* input, float* output, cudaStream_t stream);

  int max_batch_ = 0, batch_ = 0;
  size_t workspace_ = 0;
  cudnnHandle_t cudnn_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  void* arena_ = nullptr;
  cudaGraphExec_t graph_ = nullptr;
  int graph_batch_ = 0;
};

}  // namespace zoc_case
