// Planted violation for zoc-verify, rule heap-allocation: every way forward can allocate or free
// memory, directly and through a helper (new/delete, malloc/free, the CUDA allocators).
// expect: 22:12 heap-allocation
// expect: 28:17 heap-allocation
// expect: 29:3 heap-allocation
// expect: 30:15 heap-allocation
// expect: 32:3 heap-allocation
// expect: 34:12 heap-allocation
// expect: 35:12 heap-allocation
#include <cuda_runtime.h>

#include <cstdlib>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

// A scratch buffer made per call: the allocation is one call away from forward.
inline zoc::Status scratch(void** out, size_t bytes) {
  *out = nullptr;
  ZOC_CUDA(cudaMalloc(out, bytes), "scratch");
  return zoc::Status::success();
}

zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream) {
  (void)input;
  float* host = new float[4];
  delete[] host;
  void* raw = std::malloc(16);
  void* device = nullptr;
  std::free(raw);
  ZOC_TRY(scratch(&device, size_t(batch) * 4));
  ZOC_CUDA(cudaFree(device), "scratch");
  ZOC_CUDA(cudaHostAlloc(&raw, 64, cudaHostAllocDefault), "pinned");
  ZOC_CUDA(cudaMemsetAsync(output, 0, size_t(batch) * 4, stream), "clear");
  return zoc::Status::success();
}

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream) {
    return zoc_case::forward(input, output, batch, stream);
  }
};

}  // namespace zoc_case
