// Which cuDNN convolution algorithms keep fp32 exact. fp32 with TF32 off promises PyTorch's fp32
// numerics (relative L2 error 1e-4): besides non-tensor-core (FMA) math, that rules out the FFT
// and Winograd transforms, which lose digits (measured on an H100: a tuned LeNet picked FFT and
// reached 2e-4). One list for inference (zoc/cudnn/layers.h) and training (zoc/train/layers.h),
// overloaded per direction so that callers choose by type, not through a function pointer.
#pragma once

#include <cudnn.h>

namespace zoc {

inline bool exact_algo(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
inline bool exact_algo(cudnnConvolutionBwdDataAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
inline bool exact_algo(cudnnConvolutionBwdFilterAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

}  // namespace zoc
