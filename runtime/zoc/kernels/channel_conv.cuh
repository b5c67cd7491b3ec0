// A 1-D convolution over each sample's features, one input and one output channel: ECA
// attention's conv over the pooled channels (ecaresnet's `se.conv`, k = 3 or 5). PyTorch's
// Conv1d(1, 1, k) on [N, 1, F]: y[o] = bias + sum_t w[t] * x[o * stride - padding + t * dilation],
// zeros outside. The taps (fp32, never rounded to the model's type) accumulate in float and the
// sum is rounded once; one output per thread of a grid-stride loop. Included by the generated
// .cu file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernels.cuh"
#include "zoc/kernels/model_kernels.h"

namespace zoc::kernels {

template <class T>
__global__ void channel_conv_kernel(const T* x, const float* w, const float* bias, T* y,
                                    int64_t count, ChannelConvGeometry g) {
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const int64_t s = i / g.out, o = i % g.out;
    const T* row = x + s * g.f;
    float acc = bias ? bias[0] : 0.0f;
    for (int64_t t = 0; t < g.k; ++t) {
      const int64_t at = o * g.stride - g.padding + t * g.dilation;
      if (at >= 0 && at < g.f) acc = __fmaf_rn(w[t], to_float(row[at]), acc);
    }
    y[i] = from_float<T>(acc);
  }
}

template <class T>
cudaError_t launch_channel_conv(const T* x, const float* w, const float* bias, T* y, int64_t n,
                                const ChannelConvGeometry& g, cudaStream_t stream) {
  if (n < 0 || g.f <= 0 || g.out <= 0 || g.k <= 0) return cudaErrorInvalidValue;
  const int64_t count = n * g.out;
  if (count == 0) return cudaSuccess;
  channel_conv_kernel<T>
      <<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, w, bias, y, count, g);
  return detail::launched();
}

}  // namespace zoc::kernels
