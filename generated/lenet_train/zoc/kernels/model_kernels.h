// The custom kernels a generated model calls between its cuDNN and cuBLAS calls, as host
// functions with type-erased pointers: declared here for the C++ side (zoc/cudnn/model_steps.h),
// defined in each generated folder's <model>_kernels.cu for its element type by forwarding to
// zoc/kernels/kernels.cuh, so the model's C++ needs no CUDA compiler. zoc-verify recognises them as
// the model's kernel wrappers (a `*_kernels.h` declaration defined in the folder's .cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernel_shapes.h"
#include "zoc/math/activations.h"

namespace zoc::model_kernels {

// fp32 NCHW -> NHWC in the model's element type; channels c..c_stored-1 are zeros.
cudaError_t input_to_nhwc(const float* in, void* out, int n, int c, int h, int w, int c_stored,
                          cudaStream_t stream);
// The model's element type -> fp32.
cudaError_t to_float(const void* in, float* out, int64_t count, cudaStream_t stream);
// One of several outputs, or an NHWC image, into the caller's fp32 NCHW rows
// (zoc/kernels/dense_kernels.cuh).
cudaError_t output_to_caller(const void* y, float* out, int64_t n, OutputGeometry g,
                             cudaStream_t stream);
// y[r, c] = bias[c] (before a GEMM with beta = 1).
cudaError_t bias_rows(void* y, const void* bias, int rows, int cols, cudaStream_t stream);
// y = a + b, elementwise.
cudaError_t add(const void* a, const void* b, void* y, int64_t count, cudaStream_t stream);
// y = x * s: s per channel (and sample), or elementwise (zoc/kernels/layer_kernels.cuh).
cudaError_t channel_mul(const void* x, const void* s, void* y, int64_t count, ChannelMulShape m,
                        cudaStream_t stream);
// y = x op k or k op x, k m.scalar or the fp32 vector v (zoc/kernels/const_op.cuh).
cudaError_t const_op(const void* x, const float* v, void* y, int64_t count, ConstOpShape m,
                     cudaStream_t stream);
// y = a - b or a / b, elementwise (zoc/kernels/const_op.cuh).
cudaError_t binary(const void* a, const void* b, void* y, int64_t count, ConstOpKind op,
                   cudaStream_t stream);
// A 1-D convolution over each sample's features, fp32 weights (zoc/kernels/channel_conv.cuh).
cudaError_t channel_conv(const void* x, const float* w, const float* bias, void* y, int64_t n,
                         ChannelConvGeometry g, cudaStream_t stream);
// Constant padding of an image (zoc/kernels/pad.cuh).
cudaError_t pad(const void* x, void* y, int64_t n, PadGeometry g, cudaStream_t stream);
// A reshape between stored element orders (zoc/kernels/relayout.cuh).
cudaError_t relayout(const void* x, void* y, int64_t n, RelayoutGeometry g, cudaStream_t stream);
// Layer norm over the channels at every pixel; gamma and beta fp32.
cudaError_t layernorm(const void* x, void* y, const float* gamma, const float* beta, int64_t n,
                      int64_t c, int64_t hw, bool nhwc, float eps, cudaStream_t stream);
cudaError_t channel_shuffle(const void* x, void* y, int64_t n, int64_t c, int64_t hw,
                            int64_t groups, bool nhwc, cudaStream_t stream);
// Max or average pooling with PyTorch's edge rules (ceil_mode, dilation, both divisors).
cudaError_t pool(const void* x, void* y, int64_t n, PoolGeometry g, cudaStream_t stream);
cudaError_t adaptive_avgpool(const void* x, void* y, int64_t n, AdaptiveGeometry g,
                             cudaStream_t stream);
// Nearest or bilinear upsampling with PyTorch's source indices (zoc/kernels/dense_kernels.cuh).
cudaError_t upsample(const void* x, void* y, int64_t n, UpsampleGeometry g, cudaStream_t stream);
// The same, a model output written straight to the caller's fp32 NCHW rows where o says.
cudaError_t upsample_to_caller(const void* x, float* out, int64_t n, UpsampleGeometry g,
                               OutputGeometry o, cudaStream_t stream);
// Argmax over the c channels at every pixel (a class map), a model output written as fp32 to the
// caller's rows where o says (zoc/kernels/dense_kernels.cuh).
cudaError_t channel_argmax(const void* x, float* out, int64_t n, int64_t c, bool nhwc,
                           OutputGeometry o, cudaStream_t stream);
// Softmax (or log-softmax) over the c channels at every pixel (zoc/kernels/dense_kernels.cuh).
cudaError_t channel_softmax(const void* x, void* y, int64_t n, int64_t c, int64_t hw, bool nhwc,
                            bool log, cudaStream_t stream);
// y = act(depthwise_conv(x, w) + b [+ z]) (zoc/kernels/depthwise.cuh); z may be null.
cudaError_t depthwise_conv(const void* x, const void* w, const void* b, const void* z, void* y,
                           int64_t n, DepthwiseGeometry g, cudaStream_t stream);
// y = f(x) for an activation of zoc/math/activations.h, elementwise.
cudaError_t activation(act::Kind kind, act::Params p, const void* x, void* y, int64_t count,
                       cudaStream_t stream);

}  // namespace zoc::model_kernels
