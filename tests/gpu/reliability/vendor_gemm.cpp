// Are racecheck reports inside NVIDIA's GEMM kernels zoc's doing? On an H100, compute-sanitizer
// racecheck reports shared-memory hazards in the nvjet_sm90_* kernels that both cuBLAS (the
// classifier) and cuDNN 9 (1x1 convolutions) run for fp16/bf16, and in no other kernel of a
// generated model. This program makes the same library calls with no zoc code at all: one cuBLAS
// GEMM of ResNet-50's classifier shape and one cuDNN fused 1x1 convolution of its layer1 shape
// (conv + bias + ReLU), fp16 with fp32 accumulation, batch 2, NHWC. Run under racecheck by
// tests/gpu/gpu_reliability.sh: hazards here are the libraries' own (or the tool's), not zoc's.
//
// Usage: vendor_gemm [fp16|bf16]. Exit status 0 when every call succeeded.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "vendor_gemm: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}
bool ok(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "vendor_gemm: %s: cuBLAS status %d\n", what, int(s));
  return false;
}
bool ok(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "vendor_gemm: %s: %s\n", what, cudnnGetErrorString(s));
  return false;
}

// A device buffer of `count` 16-bit values, filled with small values (0.01 * (i % 7 - 3)).
void* filled(size_t count, bool bf16) {
  std::vector<uint16_t> host(count);
  for (size_t i = 0; i < count; ++i) {
    const float v = 0.01f * float(int(i % 7) - 3);
    if (bf16) {
      const __nv_bfloat16 b = __float2bfloat16(v);
      std::memcpy(&host[i], &b, 2);
    } else {
      const __half h = __float2half(v);
      std::memcpy(&host[i], &h, 2);
    }
  }
  void* d = nullptr;
  if (!ok(cudaMalloc(&d, count * 2), "cudaMalloc")) return nullptr;
  if (!ok(cudaMemcpy(d, host.data(), count * 2, cudaMemcpyHostToDevice), "cudaMemcpy"))
    return nullptr;
  return d;
}

// y[2, 1000] = x[2, 2048] W^T + y, as the generated classifier calls it.
bool classifier_gemm(bool bf16) {
  const int n = 2, in = 2048, out = 1000;
  void* w = filled(size_t(out) * in, bf16);
  void* x = filled(size_t(n) * in, bf16);
  void* y = filled(size_t(n) * out, bf16);
  if (!w || !x || !y) return false;
  cublasHandle_t h = nullptr;
  if (!ok(cublasCreate(&h), "cublasCreate")) return false;
  const float one = 1.0f;
  const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  bool good = ok(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, t, in, x, t, in,
                              &one, y, t, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx") &&
              ok(cudaDeviceSynchronize(), "cublasGemmEx (run)");
  cublasDestroy(h);
  cudaFree(w);
  cudaFree(x);
  cudaFree(y);
  std::printf("cuBLAS GEMM %dx%dx%d: %s\n", out, n, in, good ? "ran" : "failed");
  return good;
}

// layer1.0.conv2-like 1x1: 64 -> 256 channels at 56x56, bias and ReLU in the epilogue.
bool conv_1x1(bool bf16) {
  const int n = 2, c = 64, k = 256, hw = 56;
  const cudnnDataType_t t = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  void* x = filled(size_t(n) * c * hw * hw, bf16);
  void* w = filled(size_t(k) * c, bf16);
  void* b = filled(size_t(k), bf16);
  void* y = filled(size_t(n) * k * hw * hw, bf16);
  if (!x || !w || !b || !y) return false;
  cudnnHandle_t h = nullptr;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, bd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  cudnnActivationDescriptor_t ad = nullptr;
  void* ws = nullptr;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int got = 0;
  bool good = ok(cudnnCreate(&h), "cudnnCreate") &&
              ok(cudnnCreateTensorDescriptor(&xd), "descriptor") &&
              ok(cudnnCreateTensorDescriptor(&yd), "descriptor") &&
              ok(cudnnCreateTensorDescriptor(&bd), "descriptor") &&
              ok(cudnnCreateFilterDescriptor(&wd), "descriptor") &&
              ok(cudnnCreateConvolutionDescriptor(&cd), "descriptor") &&
              ok(cudnnCreateActivationDescriptor(&ad), "descriptor") &&
              ok(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, t, n, c, hw, hw), "x") &&
              ok(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, t, n, k, hw, hw), "y") &&
              ok(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, t, 1, k, 1, 1), "bias") &&
              ok(cudnnSetFilter4dDescriptor(wd, t, CUDNN_TENSOR_NHWC, k, c, 1, 1), "w") &&
              ok(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT),
                 "conv") &&
              ok(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH), "math") &&
              ok(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
                 "act") &&
              ok(cudnnGetConvolutionForwardAlgorithm_v7(
                     h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
                 "heuristics") &&
              got > 0 && perf[0].status == CUDNN_STATUS_SUCCESS &&
              ok(cudnnSetConvolutionMathType(cd, perf[0].mathType), "math") &&
              (perf[0].memory == 0 || ok(cudaMalloc(&ws, perf[0].memory), "workspace"));
  if (good) {
    const float one = 1.0f, zero = 0.0f;
    good = ok(cudnnConvolutionBiasActivationForward(h, &one, xd, x, wd, w, cd, perf[0].algo, ws,
                                                    perf[0].memory, &zero, yd, y, bd, b, ad, yd, y),
              "cudnnConvolutionBiasActivationForward") &&
           ok(cudaDeviceSynchronize(), "convolution (run)");
    std::printf("cuDNN 1x1 conv %d->%d at %dx%d, algo %d: %s\n", c, k, hw, hw, int(perf[0].algo),
                good ? "ran" : "failed");
  }
  if (ad) cudnnDestroyActivationDescriptor(ad);
  if (cd) cudnnDestroyConvolutionDescriptor(cd);
  if (wd) cudnnDestroyFilterDescriptor(wd);
  if (bd) cudnnDestroyTensorDescriptor(bd);
  if (yd) cudnnDestroyTensorDescriptor(yd);
  if (xd) cudnnDestroyTensorDescriptor(xd);
  if (h) cudnnDestroy(h);
  cudaFree(ws);
  cudaFree(x);
  cudaFree(w);
  cudaFree(b);
  cudaFree(y);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  const bool bf16 = argc > 1 && std::strcmp(argv[1], "bf16") == 0;
  const bool gemm = classifier_gemm(bf16);
  const bool conv = conv_1x1(bf16);
  return gemm && conv ? 0 : 1;
}
