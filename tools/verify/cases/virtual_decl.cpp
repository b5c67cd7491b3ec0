// Planted violation for zoc-verify, rule virtual-decl: generated code must not declare a virtual
// function, even one nothing calls, since any call to it could dispatch dynamically.
// expect: 14:3 virtual-decl
#include <cuda_runtime.h>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

// A layer interface, the framework way.
class Layer {
 public:
  virtual ~Layer() = default;
};

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  ZOC_CUDA(cudaMemcpyAsync(output, input, sizeof(float) * size_t(batch), cudaMemcpyDeviceToDevice,
                           stream),
           "copy");
  return zoc::Status::success();
}

}  // namespace zoc_case
