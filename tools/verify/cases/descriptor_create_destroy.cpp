// Planted violation for zoc-verify, rule descriptor-create-destroy: descriptors, handles and
// graphs made or destroyed per pass (cudnnSet* on an existing descriptor is fine and not reported).
// expect: 23:13 descriptor-create-destroy
// expect: 44:3 descriptor-create-destroy
// expect: 45:14 descriptor-create-destroy
// expect: 47:7 descriptor-create-destroy
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc_case {

struct Tensor {
  cudnnTensorDescriptor_t desc = nullptr;
};

// Describing a tensor the framework way: a fresh descriptor every time.
inline zoc::Status describe(Tensor* t, int n) {
  t->desc = nullptr;
  ZOC_CUDNN(cudnnCreateTensorDescriptor(&t->desc), "describe");
  ZOC_CUDNN(cudnnSetTensor4dDescriptor(t->desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, 1, 1, 1),
            "describe");
  return zoc::Status::success();
}

class Model {
 public:
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream);

 private:
  Tensor x_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaGraph_t graph_ = nullptr;
};

zoc::Status Model::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  (void)input;
  (void)output;
  ZOC_TRY(describe(&x_, batch));
  cudnnDestroyTensorDescriptor(x_.desc);
  ZOC_CUBLAS(cublasCreate(&cublas_), "gemm");
  cudaGraphExec_t exec = nullptr;
  if (cudaGraphInstantiate(&exec, graph_, 0) != cudaSuccess) return zoc::Error{"instantiate"};
  ZOC_CUDNN(cudnnSetStream(cudnn_, stream), "forward");
  ZOC_CUDA(cudaGraphLaunch(exec, stream), "graph");
  return zoc::Status::success();
}

}  // namespace zoc_case
