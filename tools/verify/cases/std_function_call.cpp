// Planted violation for zoc-verify, rule std-function-call: a std::function hook called from
// forward (a type-erased function pointer; its operator() is also not a C API call).
// expect: 29:3 std-function-call
// expect: 29:3 external-call
#include <cuda_runtime.h>

#include <functional>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);
  void set_hook(std::function<void(cudaStream_t)> hook) { hook_ = std::move(hook); }

 private:
  std::function<void(cudaStream_t)> hook_;
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  ZOC_CUDA(cudaMemcpyAsync(output, input, sizeof(float) * size_t(batch), cudaMemcpyDeviceToDevice,
                           stream),
           "copy");
  // After every pass, whatever the user registered.

  hook_(stream);
  return zoc::Status::success();
}

}  // namespace zoc_case
