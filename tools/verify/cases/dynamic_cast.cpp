// Planted violation for zoc-verify, rule dynamic-cast: run-time type information in generated
// code (the polymorphic types are the standard library's, so only the cast is reported).
// expect: 25:23 dynamic-cast
#include <cuda_runtime.h>

#include <stdexcept>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);

 private:
  const std::exception* last_ = nullptr;
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  (void)input;
  (void)output;
  (void)stream;
  const auto* range = dynamic_cast<const std::out_of_range*>(last_);
  if (range != nullptr && batch > 0) return zoc::Error{"a previous pass failed"};
  return zoc::Status::success();
}

}  // namespace zoc_case
