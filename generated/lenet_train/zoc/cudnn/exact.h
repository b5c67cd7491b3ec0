// Which cuDNN convolution algorithms keep fp32 exact. fp32 with TF32 off promises PyTorch's fp32
// numerics (relative L2 error 1e-4): besides non-tensor-core (FMA) math, that rules out the FFT
// and Winograd transforms, which lose digits (measured on an H100: a tuned LeNet picked FFT and
// reached 2e-4). One list for inference (zoc/cudnn/layers.h) and training (zoc/train/layers.h),
// overloaded per direction so that callers choose by type, not through a function pointer.
#pragma once

#include <cudnn.h>

#include <cstddef>

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

// The rule both apply to one of cuDNN's ranked candidates (a cudnnConvolution*AlgoPerf_t): it
// ran, fits `limit` bytes of workspace and, under a descriptor with TF32 off (FMA math), was
// measured with FMA math and is exact.
template <class Perf>
bool exact_candidate(const Perf& perf, cudnnMathType_t math, size_t limit) {
  if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > limit) return false;
  return math != CUDNN_FMA_MATH || (perf.mathType == CUDNN_FMA_MATH && exact_algo(perf.algo));
}

}  // namespace zoc
