// Planted violation for zoc-verify, rule external-call: forward reaches functions that are
// neither generated code nor the CUDA/cuDNN/cuBLAS C APIs: a C library call, a standard
// container (which allocates), and a function declared but defined nowhere the tool can see.
// Building the message of a returned zoc::Error is the error path and is not reported.
// expect: 32:3 external-call
// expect: 33:11 external-call
// expect: 34:3 external-call
// (push_back is reported as a call out of generated code, whatever it does inside)
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

zoc::Status log_batch(int batch);  // defined elsewhere, maybe with a virtual call

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);

 private:
  std::vector<int> batches_;
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  if (batch < 1) return zoc::Error{"batch " + std::to_string(batch) + " is below 1"};
  std::printf("batch %d\n", batch);
  ZOC_TRY(log_batch(batch));
  batches_.push_back(batch);
  ZOC_CUDA(cudaMemcpyAsync(output, input, sizeof(float) * size_t(batch), cudaMemcpyDeviceToDevice,
                           stream),
           "copy");
  return zoc::Status::success();
}

}  // namespace zoc_case
