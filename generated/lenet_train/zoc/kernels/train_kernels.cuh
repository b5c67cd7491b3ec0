// The few custom kernels of generated trainers (issue 8): softmax cross-entropy with its
// gradient, the linear layer's bias glue, elementwise adds, the activations and their gradients
// (zoc/math/activations.h, the formulas the reference interpreter runs), dropout, the per-epoch
// metrics, the SGD and AdamW updates, and (mixed precision, issue 38) the casts between fp32
// NCHW (the caller's batch, the master weights and their gradients) and bf16 or fp16 NHWC, and
// fp16's dynamic loss scaling. The kernels over activations are templates over their storage
// type T (float, or __nv_bfloat16 / __half in a mixed-precision trainer), computing in float;
// weights, gradients, optimizer state and the loss are float.
// cuDNN and cuBLAS do the layers. Every kernel uses a grid-stride loop with 64-bit indices; every
// host launcher takes a stream, launches nothing for empty work and returns cudaGetLastError().
// Included by the generated <model>_train_kernels.cu only (nvcc, C++17), whose functions call
// these.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernels.cuh"        // conversions and their kernels
#include "zoc/kernels/trainer_kernels.h"  // LossScale
#include "zoc/math/activations.h"

namespace zoc::train_kernels {

using kernels::from_float;
using kernels::to_float;
using trainer_kernels::LossScale;

namespace detail {
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

// Per row, with label smoothing e (PyTorch's cross_entropy(label_smoothing=e): the target is
// (1 - e) onehot + e / classes): loss_rows[r] = logsumexp(z) - (1 - e) z[label] - e mean(z);
// dz = (softmax(z) - target) * scale / rows (scale: the loss scale, or 1). A label outside
// [0, classes) gives NaN loss and gradient (the host validated labels before).
template <class T>
__global__ void softmax_xent_kernel(const float* z, const int32_t* labels, int64_t rows,
                                    int64_t classes, float smoothing, const float* scale,
                                    float* loss_rows, T* dz) {
  const double e = smoothing, spread = e / double(classes);
  const double per_row = (scale ? double(*scale) : 1.0) / double(rows);
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    const float* zr = z + r * classes;
    float top = zr[0];
    for (int64_t k = 1; k < classes; ++k) top = fmaxf(top, zr[k]);
    double sum = 0.0;
    for (int64_t k = 0; k < classes; ++k) sum += exp(double(zr[k]) - top);
    const double log_sum = log(sum) + top;
    const int32_t label = labels[r];
    const bool ok = label >= 0 && label < classes;
    double mean = 0.0;
    if (e != 0.0) {
      for (int64_t k = 0; k < classes; ++k) mean += zr[k];
      mean /= double(classes);
    }
    loss_rows[r] =
        ok ? float(log_sum - (1.0 - e) * zr[label] - e * mean) : __int_as_float(0x7fc00000);
    for (int64_t k = 0; k < classes; ++k) {
      const double p = exp(double(zr[k]) - log_sum);
      const double target = (k == label ? 1.0 - e : 0.0) + spread;
      dz[r * classes + k] =
          from_float<T>(ok ? float((p - target) * per_row) : __int_as_float(0x7fc00000));
    }
  }
}

// loss[0] = mean of loss_rows (one thread: rows is a batch, a few hundred at most).
__global__ void mean_kernel(const float* loss_rows, int64_t rows, float* loss) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double s = 0.0;
  for (int64_t r = 0; r < rows; ++r) s += loss_rows[r];
  loss[0] = float(s / double(rows));
}

__global__ void add_bias_rows_kernel(float* y, const float* b, int64_t rows, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] += b[i % cols];
  }
}

template <class T>
__global__ void sum_rows_kernel(const T* dy, float* db, int64_t rows, int64_t cols) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    double s = 0.0;
    for (int64_t r = 0; r < rows; ++r) s += to_float(dy[r * cols + c]);
    db[c] = float(s);
  }
}

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
  }
}

// y[n][c][hw] = x[n][hw][c] in float: a KRSC weight gradient into the KCRS master layout.
template <class T>
__global__ void load_nchw_kernel(const T* x, float* y, int64_t n, int64_t c, int64_t hw) {
  const int64_t count = n * c * hw;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pi = i % hw, ci = (i / hw) % c, ni = i / (c * hw);
    y[i] = to_float(x[(ni * hw + pi) * c + ci]);
  }
}

// y = f(x) and dx = f'(s) * dy for an activation of zoc/math/activations.h (s: the forward's
// output or input, as Math::kFromOutput says), computed in float. With x2 (dy2), of the sum an
// add would have stored: a + b rounded to T, as add_kernel rounds it.
template <class T>
__device__ __forceinline__ float sum_or_first(const T* a, const T* b, int64_t i) {
  return b ? to_float(from_float<T>(to_float(a[i]) + to_float(b[i]))) : to_float(a[i]);
}
template <class Math, class T>
__global__ void activation_kernel(const T* x, const T* x2, T* y, int64_t count, act::Params p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = from_float<T>(Math::forward(sum_or_first(x, x2, i), p));
  }
}
template <class Math, class T>
__global__ void activation_backward_kernel(const T* s, const T* dy, const T* dy2, T* dx,
                                           int64_t count, act::Params p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    dx[i] = from_float<T>(Math::backward(to_float(s[i]), sum_or_first(dy, dy2, i), p));
  }
}

// PyTorch's SGD (dampening 0, no Nesterov): d = g + weight_decay * w; v = momentum * v + d
// (v starts at 0, so the first step's v is d, as PyTorch's clone); w -= lr * v.
__device__ __forceinline__ void sgd_update(float& w, float g, float& v, float lr, float momentum,
                                           float weight_decay) {
  const float d = g + weight_decay * w;
  v = momentum * v + d;
  w -= lr * v;
}

__global__ void sgd_kernel(float* w, const float* g, float* v, int64_t count, float lr,
                           float momentum, float weight_decay, const float* skip) {
  if (skip && *skip != 0.0f) return;  // a loss-scaled step that overflowed
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    sgd_update(w[i], g[i], v[i], lr, momentum, weight_decay);
  }
}

// The same with {lr, momentum, weight_decay} read from the device: a captured step that runs
// SGD inside its backward pass takes each step's rate from there.
__global__ void sgd_at_kernel(float* w, const float* g, float* v, int64_t count,
                              const float* hyper) {
  const float lr = hyper[0], momentum = hyper[1], weight_decay = hyper[2];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    sgd_update(w[i], g[i], v[i], lr, momentum, weight_decay);
  }
}

// A bf16 trainer's convolution weight, in-backward: its gradient g as cuDNN wrote it (bf16,
// [K, RS, C]), the fp32 weight w and momentum v in PyTorch's [K, C, RS]; w's bf16 copy w16
// ([K, RS, C], what the next step's forward reads) rewritten from the updated weight. One kernel
// where SGD after the step takes three (the gradient's conversion, SGD, the next step's copy);
// the same arithmetic and rounding. One block per output channel k, through shared memory: the
// row's bf16 gradient and copy are read and written whole ([RS, C]), the fp32 weight and
// momentum in their own order ([C, RS]), so that every global access is coalesced. Each thread
// rewrites in place the copy's elements whose gradient it read.
template <class T>
__global__ void sgd_krsc_rows_kernel(float* w, const T* g, float* v, T* w16, int c, int rs,
                                     const float* hyper) {
  extern __shared__ unsigned char sgd_krsc_row[];
  T* row = reinterpret_cast<T*>(sgd_krsc_row);
  const float lr = hyper[0], momentum = hyper[1], weight_decay = hyper[2];
  const int n = c * rs;
  const int64_t base = int64_t(blockIdx.x) * n;
  for (int j = threadIdx.x; j < n; j += blockDim.x) row[j] = g[base + j];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int at = (i % rs) * c + i / rs;
    sgd_update(w[base + i], to_float(row[at]), v[base + i], lr, momentum, weight_decay);
    row[at] = from_float<T>(w[base + i]);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < n; j += blockDim.x) w16[base + j] = row[j];
}

// The same for a row beyond 48 KiB of shared memory: one thread per element in KRSC order, so
// that the fp32 accesses stride by RS.
template <class T>
__global__ void sgd_krsc_kernel(float* w, const T* g, float* v, T* w16, int64_t k, int64_t c,
                                int64_t rs, const float* hyper) {
  const float lr = hyper[0], momentum = hyper[1], weight_decay = hyper[2];
  const int64_t count = k * c * rs;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < count;
       j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ci = j % c, pi = (j / c) % rs, ki = j / (c * rs);
    const int64_t i = (ki * c + ci) * rs + pi;
    sgd_update(w[i], to_float(g[j]), v[i], lr, momentum, weight_decay);
    w16[j] = from_float<T>(w[i]);
  }
}

// Dynamic loss scaling (LossScale in zoc/kernels/trainer_kernels.h), PyTorch's arithmetic:
// g *= 1 / scale (the reciprocal in double, rounded once, as GradScaler's inv_scale), found_inf
// set by any thread that met an inf or NaN (every writer writes 1).
__global__ void unscale_begin_kernel(LossScale* s) { s->found_inf = 0.0f; }
__global__ void unscale_kernel(float* g, int64_t count, LossScale* s) {
  const float inv = float(1.0 / double(s->scale));
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = g[i];
    bad = bad || !isfinite(v);
    g[i] = v * inv;
  }
  if (bad) s->found_inf = 1.0f;
}
// torch._amp_update_scale_: an overflow halves the scale and restarts the count; kGrowthInterval
// steps without one double it (if the double is finite).
__global__ void update_scale_kernel(LossScale* s) {
  if (s->found_inf != 0.0f) {
    s->scale *= LossScale::kBackoff;
    s->growth_tracker = 0.0f;
    s->skipped += 1.0f;
    return;
  }
  const float successful = s->growth_tracker + 1.0f;
  if (successful == float(LossScale::kGrowthInterval)) {
    const float grown = s->scale * LossScale::kGrowth;
    if (isfinite(grown)) s->scale = grown;
    s->growth_tracker = 0.0f;
  } else {
    s->growth_tracker = successful;
  }
}

__global__ void set_sgd_kernel(float* hyper, float lr, float momentum, float weight_decay) {
  hyper[0] = lr, hyper[1] = momentum, hyper[2] = weight_decay;
}

// PyTorch's AdamW (torch.optim.AdamW, amsgrad off), in its order: w *= decay; m = m + (1 - beta1)
// (g - m); v = beta2 v + (1 - beta2) g^2; w -= step_size * m / (sqrt(v) / bias2_sqrt + eps). The
// host computes each constant in double and rounds it once, as PyTorch's Python scalars are:
// decay = 1 - lr * weight_decay, step_size = lr / (1 - beta1^t), bias2_sqrt = sqrt(1 - beta2^t)
// for step t (from 1).
__global__ void adamw_kernel(float* w, const float* g, float* m, float* v, int64_t count,
                             float decay, float one_minus_beta1, float beta2, float one_minus_beta2,
                             float eps, float step_size, float bias2_sqrt, const float* skip,
                             const float* corrections) {
  if (skip && *skip != 0.0f) return;  // a loss-scaled step that overflowed
  if (corrections) step_size = corrections[0], bias2_sqrt = corrections[1];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float wi = w[i] * decay;
    const float mi = m[i] + one_minus_beta1 * (gi - m[i]);
    const float vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] = wi - step_size * (mi / (sqrtf(vi) / bias2_sqrt + eps));
  }
}

// The bias corrections of a loss-scaled trainer's step t (launch_adamw_corrections). A step
// whose own update is skipped (every one so far) keeps t >= 1: its constants are not used.
__global__ void adamw_corrections_kernel(const LossScale* s, double lr, double beta1, double beta2,
                                         uint64_t t, float* out) {
  const uint64_t skipped = uint64_t(s->skipped);
  const double k = double(t > skipped ? t - skipped : 1);
  out[0] = float(lr / (1.0 - pow(beta1, k)));
  out[1] = float(sqrt(1.0 - pow(beta2, k)));
}

// Dropout's mask, a pure function of (seed, draw, layer, element): no mask is stored, backward
// recomputes it; `layer` (the node's index) keeps two dropout layers of one size from sharing a
// mask. The element's 64-bit hash (SplitMix64's finalizer over seed, draw, layer and index)
// gives u = top 24 bits / 2^24 in [0, 1); the element is kept when u >= p and then scaled by
// 1 / (1 - p), as PyTorch's dropout (whose masks come from its own generator and differ).
__device__ inline float dropout_scale(uint64_t seed, uint64_t draw, uint64_t layer, int64_t i,
                                      float p) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + draw * 0xbf58476d1ce4e5b9ull +
               layer * 0x94d049bb133111ebull + uint64_t(i);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const float u = float(z >> 40) * 0x1.0p-24f;
  return u >= p ? 1.0f / (1.0f - p) : 0.0f;
}

// Forward y = x * scale (p = 0: a copy); backward dx = dy * scale, the same mask.
template <class T>
__global__ void dropout_kernel(const T* x, T* y, int64_t count, float p, uint64_t seed,
                               const uint64_t* draws, uint64_t layer) {
  const uint64_t draw = p > 0.0f ? *draws : 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = p > 0.0f ? from_float<T>(to_float(x[i]) * dropout_scale(seed, draw, layer, i, p)) : x[i];
  }
}

// The step counter dropout draws from: one more per training step.
__global__ void count_step_kernel(uint64_t* draws) {
  if (blockIdx.x == 0 && threadIdx.x == 0) ++draws[0];
}

// The epoch's running metrics, on the device so that no step waits for the host: sums[0] +=
// loss[0] (when loss is given), and counts[0] += the rows whose first largest logit is the
// label. One block; rows is a batch.
__global__ void metrics_kernel(const float* logits, const int32_t* labels, int64_t rows,
                               int64_t classes, const float* loss, double* sums,
                               unsigned long long* counts) {
  __shared__ unsigned int correct;
  if (threadIdx.x == 0) correct = 0;
  __syncthreads();
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const float* z = logits + r * classes;
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k) best = z[k] > z[best] ? k : best;
    if (best == labels[r]) atomicAdd(&correct, 1u);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    counts[0] += correct;
    if (loss) sums[0] += double(loss[0]);
  }
}
}  // namespace detail

// The logits are float in every trainer (a mixed-precision trainer's last linear layer writes
// fp32);
// dlogits has the activations' storage type.
template <class T>
inline cudaError_t launch_softmax_xent(const float* logits, const int32_t* labels, int64_t rows,
                                       int64_t classes, float smoothing, const float* scale,
                                       float* loss_rows, float* loss, T* dlogits,
                                       cudaStream_t stream) {
  if (rows <= 0 || classes <= 0) return cudaSuccess;
  detail::softmax_xent_kernel<<<detail::blocks_for(rows), 256, 0, stream>>>(
      logits, labels, rows, classes, smoothing, scale, loss_rows, dlogits);
  detail::mean_kernel<<<1, 1, 0, stream>>>(loss_rows, rows, loss);
  return cudaGetLastError();
}

inline cudaError_t launch_add_bias_rows(float* y, const float* b, int64_t rows, int64_t cols,
                                        cudaStream_t stream) {
  if (rows * cols <= 0) return cudaSuccess;
  detail::add_bias_rows_kernel<<<detail::blocks_for(rows * cols), 256, 0, stream>>>(y, b, rows,
                                                                                    cols);
  return cudaGetLastError();
}

template <class T>
inline cudaError_t launch_sum_rows(const T* dy, float* db, int64_t rows, int64_t cols,
                                   cudaStream_t stream) {
  if (cols <= 0) return cudaSuccess;
  detail::sum_rows_kernel<<<detail::blocks_for(cols), 256, 0, stream>>>(dy, db, rows, cols);
  return cudaGetLastError();
}

template <class T>
inline cudaError_t launch_add(const T* a, const T* b, T* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  detail::add_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(a, b, y, count);
  return cudaGetLastError();
}

// y[n][hw][c] = x[n][c][hw] rounded to T: the caller's NCHW batch into NHWC storage, and a KCRS
// weight into the KRSC copy a convolution reads (n = K, c = C / groups, hw = R * S). Inference's
// input conversion (zoc/kernels/kernels.cuh), without channel padding.
template <class T>
inline cudaError_t launch_store_nhwc(const float* x, T* y, int64_t n, int64_t c, int64_t hw,
                                     cudaStream_t stream) {
  return kernels::launch_nchw_to_nhwc(x, y, int(n), int(c), int(hw), 1, int(c), stream);
}

template <class T>
inline cudaError_t launch_load_nchw(const T* x, float* y, int64_t n, int64_t c, int64_t hw,
                                    cudaStream_t stream) {
  if (n * c * hw <= 0) return cudaSuccess;
  detail::load_nchw_kernel<<<detail::blocks_for(n * c * hw), 256, 0, stream>>>(x, y, n, c, hw);
  return cudaGetLastError();
}

// y = x rounded to T, elementwise (a linear layer's weight copy): inference's conversion.
template <class T>
inline cudaError_t launch_store(const float* x, T* y, int64_t count, cudaStream_t stream) {
  return kernels::launch_from_float(x, y, count, stream);
}

template <class T>
inline cudaError_t launch_activation(act::Kind kind, act::Params p, const T* x, const T* x2, T* y,
                                     int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  switch (kind) {
#define ZOC_LAUNCH_ACTIVATION(name)                                          \
  case act::Kind::k##name:                                                   \
    detail::activation_kernel<act::name, T>                                  \
        <<<detail::blocks_for(count), 256, 0, stream>>>(x, x2, y, count, p); \
    break;
    ZOC_ACTIVATION_LIST(ZOC_LAUNCH_ACTIVATION)
#undef ZOC_LAUNCH_ACTIVATION
  }
  return cudaGetLastError();
}

template <class T>
inline cudaError_t launch_activation_backward(act::Kind kind, act::Params p, const T* s,
                                              const T* dy, const T* dy2, T* dx, int64_t count,
                                              cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  switch (kind) {
#define ZOC_LAUNCH_ACTIVATION(name)                                                \
  case act::Kind::k##name:                                                         \
    detail::activation_backward_kernel<act::name, T>                               \
        <<<detail::blocks_for(count), 256, 0, stream>>>(s, dy, dy2, dx, count, p); \
    break;
    ZOC_ACTIVATION_LIST(ZOC_LAUNCH_ACTIVATION)
#undef ZOC_LAUNCH_ACTIVATION
  }
  return cudaGetLastError();
}

inline cudaError_t launch_sgd(float* w, const float* g, float* v, int64_t count, float lr,
                              float momentum, float weight_decay, const float* skip,
                              cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  detail::sgd_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(w, g, v, count, lr, momentum,
                                                                    weight_decay, skip);
  return cudaGetLastError();
}

inline cudaError_t launch_unscale_grads(float* g, int64_t count, LossScale* s,
                                        cudaStream_t stream) {
  detail::unscale_begin_kernel<<<1, 1, 0, stream>>>(s);
  if (count > 0) detail::unscale_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(g, count, s);
  return cudaGetLastError();
}

inline cudaError_t launch_update_scale(LossScale* s, cudaStream_t stream) {
  detail::update_scale_kernel<<<1, 1, 0, stream>>>(s);
  return cudaGetLastError();
}

inline cudaError_t launch_sgd_at(float* w, const float* g, float* v, int64_t count,
                                 const float* hyper, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  detail::sgd_at_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(w, g, v, count, hyper);
  return cudaGetLastError();
}

template <class T>
inline cudaError_t launch_sgd_krsc(float* w, const T* g, float* v, T* w16, int64_t k, int64_t c,
                                   int64_t rs, const float* hyper, cudaStream_t stream) {
  if (k * c * rs <= 0) return cudaSuccess;
  const int64_t row_bytes = c * rs * int64_t(sizeof(T));
  if (row_bytes <= 48 * 1024 && k <= 0x7fffffff) {
    detail::sgd_krsc_rows_kernel<<<unsigned(k), 256, size_t(row_bytes), stream>>>(
        w, g, v, w16, int(c), int(rs), hyper);
    return cudaGetLastError();
  }
  detail::sgd_krsc_kernel<<<detail::blocks_for(k * c * rs), 256, 0, stream>>>(w, g, v, w16, k, c,
                                                                              rs, hyper);
  return cudaGetLastError();
}

inline cudaError_t launch_set_sgd(float* hyper, float lr, float momentum, float weight_decay,
                                  cudaStream_t stream) {
  detail::set_sgd_kernel<<<1, 1, 0, stream>>>(hyper, lr, momentum, weight_decay);
  return cudaGetLastError();
}

// draws: the device step counter (read only when p > 0).
template <class T>
inline cudaError_t launch_dropout(const T* x, T* y, int64_t count, float p, uint64_t seed,
                                  const uint64_t* draws, uint64_t layer, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  detail::dropout_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(x, y, count, p, seed, draws,
                                                                        layer);
  return cudaGetLastError();
}

inline cudaError_t launch_adamw(float* w, const float* g, float* m, float* v, int64_t count,
                                float decay, float one_minus_beta1, float beta2,
                                float one_minus_beta2, float eps, float step_size, float bias2_sqrt,
                                const float* skip, const float* corrections, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  detail::adamw_kernel<<<detail::blocks_for(count), 256, 0, stream>>>(
      w, g, m, v, count, decay, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, bias2_sqrt,
      skip, corrections);
  return cudaGetLastError();
}

inline cudaError_t launch_adamw_corrections(const LossScale* s, double lr, double beta1,
                                            double beta2, uint64_t t, float* out,
                                            cudaStream_t stream) {
  detail::adamw_corrections_kernel<<<1, 1, 0, stream>>>(s, lr, beta1, beta2, t, out);
  return cudaGetLastError();
}

inline cudaError_t launch_count_step(uint64_t* draws, cudaStream_t stream) {
  detail::count_step_kernel<<<1, 1, 0, stream>>>(draws);
  return cudaGetLastError();
}

inline cudaError_t launch_metrics(const float* logits, const int32_t* labels, int64_t rows,
                                  int64_t classes, const float* loss, double* sums,
                                  unsigned long long* counts, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  detail::metrics_kernel<<<1, 256, 0, stream>>>(logits, labels, rows, classes, loss, sums, counts);
  return cudaGetLastError();
}

}  // namespace zoc::train_kernels
