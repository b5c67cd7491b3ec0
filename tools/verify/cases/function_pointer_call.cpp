// Planted violation for zoc-verify, rule function-pointer-call: a table of layer functions
// called through pointers, an interpreter's dispatch loop in miniature.
// expect: 28:14 function-pointer-call
#include <cuda_runtime.h>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

using LayerFn = cudaError_t (*)(cudaStream_t stream);

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);

 private:
  LayerFn layers_[2] = {};
  int count_ = 0;
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  (void)input;
  (void)output;
  (void)batch;
  for (int i = 0; i < count_; ++i) {
    LayerFn layer = layers_[i];
    ZOC_CUDA(layer(stream), "layer");
  }
  return zoc::Status::success();
}

}  // namespace zoc_case
