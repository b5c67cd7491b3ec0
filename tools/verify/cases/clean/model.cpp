// The clean model's construction and forward pass (see model.h for what it exercises).
// expect-output: per forward pass (zoc_case::Clean::run_layers): 3 library calls (cudaMemcpyAsync 1, cudnnActivationForward 1, cudnnSetStream 1), 1 kernel launches (scale 1)
// expect-output: static arena: 4096 bytes per sample
// expect-output: 3 cuDNN descriptors; 5 creation calls (cudnnCreateTensorDescriptor 2, cudaMalloc 1, cudnnCreate 1, cudnnCreateActivationDescriptor 1)
// expect-output: one-time (`// zoc-verify: one-time`): cudaGraphExecDestroy (descriptor-create-destroy) at
// expect-output: clean/model.cpp:68:17, cudaStreamEndCapture (descriptor-create-destroy) at
// expect-output: clean/model.cpp:73:31, cudaGraphInstantiate (descriptor-create-destroy) at
// expect-output: clean/model.cpp:76:30, cudaGraphDestroy (descriptor-create-destroy) at
// expect-output: clean/model.cpp:77:5
// expect-output: clean: no findings
#include "model.h"

#include <algorithm>
#include <string>

#include "model_kernels.h"
#include "zoc/core/cuda_check.h"
#include "zoc/core/device.h"

namespace zoc_case {

zoc::Expected<std::unique_ptr<Clean>> Clean::create(int max_batch) {
  std::unique_ptr<Clean> model(new Clean());
  ZOC_TRY(model->init(max_batch));
  return zoc::Expected<std::unique_ptr<Clean>>(std::move(model));
}

zoc::Status Clean::init(int max_batch) {
  if (max_batch < 1) return zoc::Error{"max_batch " + std::to_string(max_batch) + " is below 1"};
  max_batch_ = max_batch;
  ZOC_CUDNN(cudnnCreate(&cudnn_), "init");
  ZOC_CUDNN(cudnnCreateTensorDescriptor(&x_), "init");
  ZOC_CUDNN(cudnnCreateTensorDescriptor(&y_), "init");
  ZOC_CUDNN(cudnnCreateActivationDescriptor(&act_), "init");
  ZOC_CUDNN(cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
            "init");
  ZOC_CUDA(cudaMalloc(&arena_, kArenaBytesPerSample * size_t(max_batch)), "arena");
  ZOC_TRY(set_batch(max_batch));
  return zoc::Status::success();
}

Clean::~Clean() {
  if (graph_) cudaGraphExecDestroy(graph_);
  if (act_) cudnnDestroyActivationDescriptor(act_);
  if (y_) cudnnDestroyTensorDescriptor(y_);
  if (x_) cudnnDestroyTensorDescriptor(x_);
  if (arena_) cudaFree(arena_);
  if (cudnn_) cudnnDestroy(cudnn_);
}

// Host-side only: re-describes existing descriptors.
zoc::Status Clean::set_batch(int n) {
  ZOC_CUDNN(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, 1, 32, 32), "x");
  ZOC_CUDNN(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, 1, 32, 32), "y");
  workspace_ = std::max(workspace_, size_t(n) * 4);
  batch_ = n;
  return zoc::Status::success();
}

zoc::Status Clean::forward(const float* input, float* output, int batch, cudaStream_t stream) {
  ZOC_TRY(zoc::check_batch(batch, max_batch_));  // builds its message on the error path only
  if (input == output) {
    const std::string what = "input and output " + std::to_string(batch);
    return zoc::Error{what + " alias"};
  }
  if (batch != batch_) ZOC_TRY(set_batch(batch));
  if (!graph_ || graph_batch_ != batch) {
    if (graph_) cudaGraphExecDestroy(graph_);  // zoc-verify: one-time (per batch size)
    graph_ = nullptr;
    cudaGraph_t graph = nullptr;
    ZOC_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    const zoc::Status captured = run_layers(input, output, stream);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);  // zoc-verify: one-time
    if (!captured.ok()) return captured;
    ZOC_CUDA(ended, "capture");
    const cudaError_t made = cudaGraphInstantiate(&graph_, graph, 0);  // zoc-verify: one-time
    cudaGraphDestroy(graph);  // zoc-verify: one-time
    ZOC_CUDA(made, "instantiate");
    graph_batch_ = batch;
  }
  ZOC_CUDA(cudaGraphLaunch(graph_, stream), "launch");
  return zoc::Status::success();
}

zoc::Status Clean::run_layers(const float* input, float* output, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  float* const a = static_cast<float*>(arena_);
  ZOC_CUDNN(cudnnSetStream(cudnn_, stream), "forward");
  ZOC_CUDA(kernels::scale(input, a, batch_ * 1024, 2.0f, stream), "scale");
  ZOC_CUDNN(cudnnActivationForward(cudnn_, act_, &one, x_, a, &zero, y_, a), "relu");
  ZOC_CUDA(cudaMemcpyAsync(output, a, size_t(batch_) * 4096, cudaMemcpyDeviceToDevice, stream),
           "output");
  return zoc::Status::success();
}

}  // namespace zoc_case
