// The descriptor bundle of a transposed convolution (PyTorch's ConvTranspose2d; the decoders of
// UNet-like models), run as cuDNN's backward-data convolution plus a bias add.
//
// A transposed convolution is the data gradient of the forward convolution that maps its output
// back to its input, so its ConvShape describes that forward convolution: c, h, w are the
// transposed convolution's output (channels, size), k its input channels, out_h, out_w its input
// size; the filter is PyTorch's [c_in, c_out / groups, kh, kw] as [k, c / groups, r, s] (KCRS,
// or KRSC in NHWC), stride, padding, dilation and groups PyTorch's. output_padding needs no field:
// it only makes the output larger than the smallest one the forward convolution maps onto the
// input, and cuDNN takes the output size as given. The algorithm is cuDNN's heuristic choice
// within the workspace the model allocated (fp32: FMA math and exact algorithms only, as
// ConvLayer). Needs cudnn.h only.
#pragma once

#include <cudnn.h>

#include <string>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/cudnn/layers.h"

namespace zoc {

class ConvTransposeLayer {
 public:
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;  // x: its input (dy)
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionBwdDataAlgo_t algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  size_t workspace = 0;

  Status create(const ConvShape& s, const Precision& p, const char* layer) {
    s_ = s;
    p_ = p;
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&x), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&y), layer);
    ZOC_CUDNN(cudnnCreateTensorDescriptor(&bias), layer);
    ZOC_CUDNN(cudnnCreateFilterDescriptor(&w), layer);
    ZOC_CUDNN(cudnnCreateConvolutionDescriptor(&conv), layer);
    ZOC_TRY(set_conv_descriptors(w, conv, s, p, layer));
    ZOC_CUDNN(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, p.data, 1, s.c, 1, 1), layer);
    return Status::success();
  }

  // Sets the batch-dependent dims and picks the first algorithm cuDNN's heuristics list that
  // fits `workspace_limit` (and, in fp32, keeps FMA math and exact arithmetic). Host-side only.
  Status describe(cudnnHandle_t handle, int n, size_t workspace_limit, const char* layer) {
    ZOC_TRY(set_tensor(x, p_, n, s_.k, s_.out_h, s_.out_w, layer));
    ZOC_TRY(set_tensor(y, p_, n, s_.c, s_.h, s_.w, layer));
    ZOC_CUDNN(cudnnSetConvolutionMathType(conv, p_.math), layer);
    int got = 0;
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    ZOC_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                  handle, w, x, conv, y, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf),
              layer);
    for (int i = 0; i < got; ++i) {
      const cudnnConvolutionBwdDataAlgoPerf_t& c = perf[i];
      if (c.status != CUDNN_STATUS_SUCCESS || c.memory > workspace_limit) continue;
      if (p_.math == CUDNN_FMA_MATH && (c.mathType != CUDNN_FMA_MATH || !exact_algo(c.algo))) {
        continue;
      }
      algo = c.algo;
      workspace = c.memory;
      ZOC_CUDNN(cudnnSetConvolutionMathType(conv, c.mathType), layer);
      return Status::success();
    }
    return Error{std::string("layer '") + layer + "': no cuDNN backward-data algorithm for batch " +
                 std::to_string(n) + " fits a workspace of " + std::to_string(workspace_limit) +
                 " bytes"};
  }

  // y = conv_transpose(in, weight) (+ bias_data per output channel, unless null).
  Status run(cudnnHandle_t handle, const void* in, const void* weight, const void* bias_data,
             void* out, void* ws, const char* layer) const {
    const float one = 1.0f, zero = 0.0f;
    ZOC_CUDNN(cudnnConvolutionBackwardData(handle, &one, w, weight, x, in, conv, algo, ws,
                                           workspace, &zero, y, out),
              layer);
    if (bias_data) {
      ZOC_CUDNN(cudnnAddTensor(handle, &one, bias, bias_data, &one, y, out), layer);
    }
    return Status::success();
  }

  void destroy() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    x = y = bias = nullptr;
    w = nullptr;
    conv = nullptr;
  }

 private:
  ConvShape s_{};
  Precision p_{};
};

}  // namespace zoc
