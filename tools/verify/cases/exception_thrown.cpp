// Planted violation for zoc-verify, rule exception-thrown: forward reports a bad batch by
// throwing (one call away) instead of returning a zoc::Error.
// expect: 17:29 exception-thrown
#include <cuda_runtime.h>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

enum class Failure { kBadBatch };

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);
  void check(int batch) const {
    if (batch > max_batch_) throw Failure::kBadBatch;
  }

 private:
  int max_batch_ = 8;
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  check(batch);
  ZOC_CUDA(cudaMemcpyAsync(output, input, sizeof(float) * size_t(batch), cudaMemcpyDeviceToDevice,
                           stream),
           "copy");
  return zoc::Status::success();
}

}  // namespace zoc_case
