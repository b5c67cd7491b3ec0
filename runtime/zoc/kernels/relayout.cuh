// A reshape whose stored element order changes: the same elements in NCHW order (the IR's
// reshape and flatten semantics) from an image or features stored in one layout to a shape
// stored in another. In NCHW, and in NHWC where channels or pixels are 1, a reshape is a view
// and runs no kernel; otherwise an NHWC image's channels are interleaved per pixel and element j
// of the NCHW order lies elsewhere: rSoftMax's view(n, 1, 2, 64) -> [2, 1, 64] in ResNeSt, or a
// flatten of an NHWC image read by anything but a linear layer (which permutes its weights
// instead). One output element per thread of a grid-stride loop. Included by the generated .cu
// file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernels.cuh"
#include "zoc/kernels/model_kernels.h"

namespace zoc::kernels {

template <class T>
__global__ void relayout_kernel(const T* x, T* y, int64_t count, RelayoutGeometry g) {
  const int64_t per_sample = g.c_out * g.hw_out;
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    const int64_t s = i / per_sample, r = i % per_sample;
    const int64_t ch = g.nhwc_out ? r % g.c_out : r / g.hw_out;
    const int64_t p = g.nhwc_out ? r / g.c_out : r % g.hw_out;
    const int64_t j = ch * g.hw_out + p;  // the element's place in NCHW order
    const int64_t ci = j / g.hw_in, pi = j % g.hw_in;
    y[i] = x[s * per_sample + (g.nhwc_in ? pi * g.c_in + ci : j)];
  }
}

template <class T>
cudaError_t launch_relayout(const T* x, T* y, int64_t n, const RelayoutGeometry& g,
                            cudaStream_t stream) {
  if (n < 0 || g.c_in <= 0 || g.hw_in <= 0 || g.c_out <= 0 || g.hw_out <= 0 ||
      g.c_in * g.hw_in != g.c_out * g.hw_out) {
    return cudaErrorInvalidValue;
  }
  const int64_t count = n * g.c_out * g.hw_out;
  if (count == 0) return cudaSuccess;
  relayout_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, y, count, g);
  return detail::launched();
}

}  // namespace zoc::kernels
