// Planted violation for zoc-verify, rule member-pointer-call: forward picks its implementation
// through a member-function pointer chosen at run time.
// expect: 28:11 member-pointer-call
#include <cuda_runtime.h>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);

 private:
  zoc::Status run_graph(cudaStream_t stream) { return run_layers(stream); }
  zoc::Status run_layers(cudaStream_t) { return zoc::Status::success(); }

  using Step = zoc::Status (Model::*)(cudaStream_t);
  Step step_ = &Model::run_layers;
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  (void)input;
  (void)output;
  (void)batch;
  // A pointer chosen at construction: which member runs is decided at run time.
  ZOC_TRY((this->*step_)(stream));
  return zoc::Status::success();
}

}  // namespace zoc_case
