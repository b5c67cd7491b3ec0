// The backward kernels of the reference interpreter, and the training-mode forward pieces they
// need (issue 8), reached only through the interpreter's op switch on a training graph's nodes
// (passes/build_training_graph.cpp). They are the CPU oracle for zoc's generated trainer, as
// kernels.h is for its inference code, so they follow PyTorch's training semantics exactly:
// batch-norm with batch statistics (biased variance to normalize, unbiased for the running
// average), max-pool gradients routed to the first maximum of each window, avg-pool's divisors,
// softmax cross-entropy averaged over the batch. Sums are in double and rounded once. Layouts and
// preconditions are kernels.h's; gradient outputs are overwritten, not accumulated into, unless a
// kernel says otherwise. Activations' gradients are kernels.h's activation_backward.
#pragma once

#include <cstdint>

#include "compiler/backend/reference/kernels.h"

namespace zoc::ref {

// Given dy [n, c_out, out_h, out_w]: dx [n, c_in, h, w], dw [c_out, c_in / groups, kh, kw] and
// db [c_out], each skipped when null.
void conv2d_backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, const Conv2dShape& s);

// Training-mode batch-norm over x[n, c, hw]: y = (x - mean) * invstd * gamma + beta with the
// batch's mean and biased variance; writes them per channel (mean, var_biased), and invstd =
// 1 / sqrt(var_biased + eps). gamma/beta may be null (1 and 0).
void batchnorm2d_train(const float* x, float* y, int64_t n, int64_t c, int64_t hw,
                       const float* gamma, const float* beta, double eps, double* mean,
                       double* var_biased, double* invstd);

// Its backward: dx, dgamma and dbeta (the latter two skipped when null) from dy, x and the
// statistics batchnorm2d_train wrote.
void batchnorm2d_train_backward(const float* x, const float* dy, const float* gamma,
                                const double* mean, const double* invstd, int64_t n, int64_t c,
                                int64_t hw, float* dx, float* dgamma, float* dbeta);

// Max pooling's gradient: each dy element goes to the element the forward pass picked (scanning
// rows then columns: the first maximum, or the last NaN), added up where windows overlap.
void maxpool2d_backward(const float* x, const float* dy, float* dx, const Pool2dShape& s);

// Average pooling's gradient: each dy element spread over the input taps of its window, divided
// by the forward's divisor.
void avgpool2d_backward(const float* dy, float* dx, const Pool2dShape& s);

// dx[n, c, hw] = dy[n, c] / hw.
void global_avgpool_backward(const float* dy, float* dx, int64_t n, int64_t c, int64_t hw);

// For y = x w^T + b: dx [n, in], dw [out, in] and db [out], each skipped when null.
void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, int64_t n, int64_t in, int64_t out);

// Mean softmax cross-entropy of logits[rows, cols] against labels (each in [0, cols)); writes
// dlogits = (softmax - onehot) / rows and returns the loss.
double softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                             float* dlogits);

// mul's gradient: da = dy * b and db = dy * a, db summed over hw where b is per channel
// (b_per_channel: b and db are [n, c]).
void mul_backward(const float* a, const float* b, const float* dy, float* da, float* db, int64_t n,
                  int64_t c, int64_t hw, bool b_per_channel);

// The gradient of y = x op v[c] (or v[c] op x: `reverse`), v a parameter per channel (one
// value: c = 1, hw = the whole sample): dx, and dv[c] (skipped when null) summed over n and hw,
// PyTorch's formulas: add dv = sum dy; sub -sum dy (reverse: dx = -dy, dv = sum dy); mul
// dx = dy * v, dv = sum dy * x (layer_scale's); div dx = dy / v, dv = -sum(dy * x) / v^2
// (reverse: dx = -dy * v / x^2, dv = sum dy / x).
void operand_backward(BinaryOp op, bool reverse, const float* x, const float* v, const float* dy,
                      float* dx, float* dv, int64_t n, int64_t c, int64_t hw);

// layernorm's gradient with the statistics recomputed from x: dx, and dweight and dbias
// (skipped when null) summed over n and hw.
void layernorm_backward(const float* x, const float* dy, const float* weight, int64_t n, int64_t c,
                        int64_t hw, double eps, float* dx, float* dweight, float* dbias);

// adaptive_avg_pool2d's gradient: each dy divided evenly over its bin, summed where bins
// overlap.
void adaptive_avgpool2d_backward(const float* dy, float* dx, const AdaptivePoolShape& s);

// Softmax's gradient from its output y, dx = y * (dy - sum(dy * y)), the sum over the c channels of
// each of the hw pixels of y[n, c, hw] (hw = 1: the rows of features); with `log`, log-softmax's:
// dx = dy - exp(y) * sum(dy).
void softmax_dim1_backward(const float* y, const float* dy, float* dx, int64_t n, int64_t c,
                           int64_t hw, bool log);

// upsample_nearest's (bilinear false) or upsample_bilinear's gradient (resample.cpp, beside the
// forwards, whose index arithmetic it shares): each dy [planes, oh, ow] added to the pixels of dx
// [planes, h, w] its forward read, with the forward's weights.
void upsample_backward(const float* dy, float* dx, const UpsampleShape& s, bool bilinear);

}  // namespace zoc::ref
