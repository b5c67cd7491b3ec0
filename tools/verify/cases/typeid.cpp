// Planted violation for zoc-verify, rule typeid: run-time type information in generated code.
// expect: 26:32 typeid
#include <cuda_runtime.h>

#include <typeinfo>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

struct Precision {
  int bytes = 2;
};

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  (void)input;
  (void)output;
  (void)batch;
  (void)stream;
  const std::type_info& type = typeid(Precision);
  (void)type;
  return zoc::Status::success();
}

}  // namespace zoc_case
