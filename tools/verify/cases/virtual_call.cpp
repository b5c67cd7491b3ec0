// Planted violation for zoc-verify, rule virtual-call: forward calls a layer through a virtual
// function, the dispatch zoc exists to remove (the declaration is reported too).
// expect: 13:3 virtual-decl
// expect: 28:11 virtual-call
#include <cuda_runtime.h>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

struct Layer {
  virtual zoc::Status run(cudaStream_t) const { return zoc::Status::success(); }
};

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);

 private:
  Layer* layers_[4] = {};
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  (void)input;
  (void)output;
  (void)batch;
  ZOC_TRY(layers_[0]->run(stream));
  return zoc::Status::success();
}

}  // namespace zoc_case
