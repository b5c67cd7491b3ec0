// The custom kernels a generated trainer calls, as host functions: declared here for the C++
// side (zoc/train_layers/steps.h, zoc/train/trainer.h), defined in each generated trainer's
// <model>_train_kernels.cu by forwarding to zoc/kernels/train_kernels.cuh (nvcc only), so the
// trainer's C++ needs no CUDA compiler. zoc-verify recognises them as the model's kernel wrappers
// (a `*_kernels.h` declaration defined in the folder's .cu). Pointers to activations (and their
// gradients) are void*: the folder's .cu reads them as its trainer's storage type (float, or
// bf16 or fp16 in a mixed-precision trainer); weights, gradients, optimizer state and the loss
// are float.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/kernels/kernel_shapes.h"
#include "zoc/math/activations.h"

namespace zoc {

// How many consecutive pieces a trainer's operand gradient (zoc/kernels/layer_grad_kernels.cuh)
// sums each of its c values' n * hw terms in, one block per piece, then adds the pieces in
// order: about 1024 blocks in all, none under 2048 terms, so that one value over a whole
// activation is not one block's work. The workspace holds c * pieces doubles.
inline int64_t operand_grad_pieces(int64_t n, int64_t c, int64_t hw) {
  const int64_t terms = n * hw, by_size = (terms + 2047) / 2048, by_count = 1024 / (c > 0 ? c : 1);
  const int64_t pieces = by_size < by_count ? by_size : by_count;
  return pieces > 1 ? pieces : 1;
}

}  // namespace zoc

namespace zoc::trainer_kernels {

// Dynamic loss scaling (an fp16 trainer, as PyTorch's torch.amp.GradScaler with its defaults),
// on the device: the loss's gradient is multiplied by `scale` so that small gradients survive
// fp16; after the backward pass the gradients are divided by it (unscale_grads), a step whose
// gradients hold an inf or NaN sets `found_inf` and its update is skipped (sgd, adamw), and
// update_scale halves the scale then, or doubles it after kGrowthInterval steps without one.
struct LossScale {
  static constexpr float kInitScale = 65536.0f, kGrowth = 2.0f, kBackoff = 0.5f;
  static constexpr int kGrowthInterval = 2000;
  float scale = kInitScale;
  float growth_tracker = 0.0f;  // steps since the last overflow or growth
  float found_inf = 0.0f;       // 1: this step's gradients overflowed, its update is skipped
  float skipped = 0.0f;         // steps skipped so far
};

// loss_rows[r] = cross-entropy of row r against the target (1 - smoothing) onehot + smoothing /
// classes, loss[0] = their mean, dlogits = (softmax - target) / rows, times *scale when scale is
// not null (dynamic loss scaling).
cudaError_t softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t classes,
                         float smoothing, const float* scale, float* loss_rows, float* loss,
                         void* dlogits, cudaStream_t stream);
// Loss scaling after the backward pass: found_inf = whether g[0, count) holds an inf or NaN,
// g /= scale (PyTorch's unscale_); then the scale's update (PyTorch's update()).
cudaError_t unscale_grads(float* g, int64_t count, LossScale* s, cudaStream_t stream);
cudaError_t update_scale(LossScale* s, cudaStream_t stream);
// y[r, c] += b[c].
cudaError_t add_bias_rows(float* y, const float* b, int64_t rows, int64_t cols,
                          cudaStream_t stream);
// db[c] = sum over rows of dy[r, c].
cudaError_t sum_rows(const void* dy, float* db, int64_t rows, int64_t cols, cudaStream_t stream);
// y = a + b.
cudaError_t add(const void* a, const void* b, void* y, int64_t count, cudaStream_t stream);
// y = f(x), and dx = f'(s) * dy, for an activation of zoc/math/activations.h; with x2 (dy2) not
// null, of x + x2 (dy + dy2) rounded to the storage type: an add and the activation in one pass.
cudaError_t activation(act::Kind kind, act::Params p, const void* x, const void* x2, void* y,
                       int64_t count, cudaStream_t stream);
cudaError_t activation_backward(act::Kind kind, act::Params p, const void* s, const void* dy,
                                const void* dy2, void* dx, int64_t count, cudaStream_t stream);
// Mixed precision: y[n][hw][c] = x[n][c][hw] in the storage type (the batch into NHWC, a KCRS
// weight into its KRSC copy), its inverse into float (a KRSC weight gradient into KCRS), and
// an elementwise copy in the storage type (a linear layer's weight).
cudaError_t store_nhwc(const float* x, void* y, int64_t n, int64_t c, int64_t hw,
                       cudaStream_t stream);
cudaError_t load_nchw(const void* x, float* y, int64_t n, int64_t c, int64_t hw,
                      cudaStream_t stream);
cudaError_t store(const float* x, void* y, int64_t count, cudaStream_t stream);
// A mixed-precision trainer's depthwise convolution in NHWC (zoc/kernels/depthwise_grad.cuh): y =
// conv(x, w) with w tap-major ([kh, kw, C]), and its gradients dx (null: nobody reads it) and dw
// (float, [C, 1, kh, kw]); deterministic: dw's partial sums added in a fixed order (slower).
// Whether depthwise_backward takes a layer at batch n: square filters of 3, 5 or 7, and every
// element index of x and dy within 32 bits (the trainer runs other batches through cuDNN).
inline bool depthwise_fits(int64_t n, const DepthwiseGeometry& g) {
  const bool square = g.kh == g.kw && (g.kh == 3 || g.kh == 5 || g.kh == 7);
  const int64_t pixels = g.h * g.w > g.out_h * g.out_w ? g.h * g.w : g.out_h * g.out_w;
  return square && g.c > 0 && n * g.c * pixels < (int64_t(1) << 31);
}
cudaError_t depthwise_forward(const void* x, const void* w, void* y, int64_t n, DepthwiseGeometry g,
                              cudaStream_t stream);
cudaError_t depthwise_backward(const void* x, const void* w, const void* dy, void* dx, float* dw,
                               int64_t n, DepthwiseGeometry g, bool deterministic,
                               cudaStream_t stream);
// PyTorch's SGD over count floats of w with gradients g and momentum buffers v; nothing changes
// when skip is not null and *skip is not 0 (a loss-scaled step that overflowed).
cudaError_t sgd(float* w, const float* g, float* v, int64_t count, float lr, float momentum,
                float weight_decay, const float* skip, cudaStream_t stream);
// The same with hyper = {lr, momentum, weight_decay} on the device, which set_sgd writes in
// stream order (a captured step reads each step's rate there).
cudaError_t sgd_at(float* w, const float* g, float* v, int64_t count, const float* hyper,
                   cudaStream_t stream);
// A bf16 convolution weight's in-backward SGD from its bf16 KRSC gradient g, rewriting its bf16
// KRSC copy w16 (zoc/kernels/train_kernels.cuh's sgd_krsc_rows_kernel).
cudaError_t sgd_krsc(float* w, const void* g, float* v, void* w16, int64_t k, int64_t c, int64_t rs,
                     const float* hyper, cudaStream_t stream);
cudaError_t set_sgd(float* hyper, float lr, float momentum, float weight_decay,
                    cudaStream_t stream);
// PyTorch's AdamW over count floats of w with gradients g and moments m, v; the constants
// computed by the host (zoc/kernels/train_kernels.cuh says which), but step_size and
// bias2_sqrt read from corrections[0, 1] when it is not null; skip as sgd's.
cudaError_t adamw(float* w, const float* g, float* m, float* v, int64_t count, float decay,
                  float one_minus_beta1, float beta2, float one_minus_beta2, float eps,
                  float step_size, float bias2_sqrt, const float* skip, const float* corrections,
                  cudaStream_t stream);
// A loss-scaled trainer's AdamW bias corrections, on the device: its step counts only the steps
// not skipped (t - s->skipped), as PyTorch's, whose AdamW.step() a skipped step never calls;
// out = {lr / (1 - beta1^t), sqrt(1 - beta2^t)}, in double, each rounded once.
cudaError_t adamw_corrections(const LossScale* s, double lr, double beta1, double beta2, uint64_t t,
                              float* out, cudaStream_t stream);
// y = x * the mask of (seed, *draw, layer, element) / (1 - p); p = 0: a copy.
cudaError_t dropout(const void* x, void* y, int64_t count, float p, uint64_t seed,
                    const uint64_t* draw, uint64_t layer, cudaStream_t stream);
// One more training step: dropout draws its masks from the device counter.
cudaError_t count_step(uint64_t* draws, cudaStream_t stream);
// counts[0] += rows whose first largest logit is the label; sums[0] += loss[0] if loss.
cudaError_t metrics(const float* logits, const int32_t* labels, int64_t rows, int64_t classes,
                    const float* loss, double* sums, unsigned long long* counts,
                    cudaStream_t stream);

// The zoo's kernel layers' gradients (zoc/kernels/layer_grad_kernels.cuh), defined only in the
// trainers whose graphs have them: a null result pointer is a gradient nobody reads.
cudaError_t mul_grad(const float* a, const float* b, const float* dy, float* da, float* db,
                     int64_t n, ChannelMulShape m, cudaStream_t stream);
cudaError_t operand_grad(const float* x, const float* v, const float* dy, float* dx, float* dv,
                         int64_t n, int64_t c, int64_t hw, ConstOpKind op, bool reverse,
                         double* scratch, cudaStream_t stream);
cudaError_t layernorm_grad(const float* x, const float* gamma, const float* dy, float* dx,
                           float* dgamma, float* dbeta, int64_t n, int64_t c, int64_t hw, float eps,
                           float* scratch, cudaStream_t stream);
cudaError_t pool_grad(const float* x, const float* dy, float* dx, int64_t n, PoolGeometry g,
                      cudaStream_t stream);
cudaError_t adaptive_avgpool_grad(const float* dy, float* dx, int64_t n, AdaptiveGeometry g,
                                  cudaStream_t stream);
cudaError_t softmax_grad(const float* y, const float* dy, float* dx, int64_t n, int64_t c,
                         int64_t hw, bool log, cudaStream_t stream);
cudaError_t upsample_grad(const float* dy, float* dx, int64_t n, UpsampleGeometry g,
                          cudaStream_t stream);
cudaError_t channel_conv_grad(const float* x, const float* w, const float* dy, float* dx, float* dw,
                              float* db, int64_t n, ChannelConvGeometry g, cudaStream_t stream);

}  // namespace zoc::trainer_kernels
