// Constant padding of an image (PyTorch's F.pad, ONNX's Pad in constant mode): the input at rows
// top.., columns left.. of a larger image whose other elements are `value`, in either layout.
// hgnetv2's stem pads (0, 1, 0, 1) before a convolution and a max pool; cuDNN's legacy
// convolution and pooling take only symmetric padding, so the padded image is made first.
// One output element per thread of a grid-stride loop. Included by the generated .cu file only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernels.cuh"
#include "zoc/kernels/model_kernels.h"

namespace zoc::kernels {

template <class T>
__global__ void pad_kernel(const T* x, T* y, int64_t count, PadGeometry g) {
  const T fill = from_float<T>(g.value);
  for (int64_t i = detail::thread_index(); i < count; i += detail::thread_stride()) {
    int64_t c, oy, ox, s;
    if (g.nhwc) {
      c = i % g.c, ox = (i / g.c) % g.out_w, oy = (i / (g.c * g.out_w)) % g.out_h;
      s = i / (g.c * g.out_w * g.out_h);
    } else {
      ox = i % g.out_w, oy = (i / g.out_w) % g.out_h, c = (i / (g.out_w * g.out_h)) % g.c;
      s = i / (g.out_w * g.out_h * g.c);
    }
    const int64_t iy = oy - g.top, ix = ox - g.left;
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
      y[i] = fill;
      continue;
    }
    y[i] =
        x[g.nhwc ? ((s * g.h + iy) * g.w + ix) * g.c + c : ((s * g.c + c) * g.h + iy) * g.w + ix];
  }
}

template <class T>
cudaError_t launch_pad(const T* x, T* y, int64_t n, const PadGeometry& g, cudaStream_t stream) {
  if (n < 0 || g.c <= 0 || g.out_h <= 0 || g.out_w <= 0) return cudaErrorInvalidValue;
  const int64_t count = n * g.c * g.out_h * g.out_w;
  if (count == 0) return cudaSuccess;
  pad_kernel<T><<<detail::grid_for(count), detail::kBlock, 0, stream>>>(x, y, count, g);
  return detail::launched();
}

}  // namespace zoc::kernels
