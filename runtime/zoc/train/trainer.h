// The class skeleton every generated trainer shares (issue 8's trainer, as a lowering of the IR:
// issue 18): creation, the training step, SGD, evaluation, metrics, written once here instead of
// once per generated trainer.
//
// A generated trainer is `class LenetTrainer : public zoc::Trainer<LenetTrainer>` (CRTP: no
// virtual functions). It supplies its constants (kModelName, kClassName, kInputC/H/W, kClasses,
// the parameter table in PyTorch's layout, kCounterNames, the gradient buckets, the arena and
// fixed-region sizes, kLogits, kLoss, kHasDropout, kTF32, kBF16, kFP16, kGradScratchElements,
// kGradDiscardElements), its descriptor bundles and the training graph as two layer sequences:
// `forward_layers(v)` (input to logits) and `backward_layers(v)` (the loss, then every backward
// node), walked with the steps of zoc/train_layers/steps.h. step() runs both in training mode,
// evaluate() the forward one in evaluation mode, sgd() the graph's sgd nodes as one launch (the
// trainable tensors lie together at the front of params()). Once a batch size is described, step()
// only enqueues work: it may be captured in a CUDA graph (the cuBLAS workspace is fixed; dropout
// draws from a device counter).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/kernels/trainer_kernels.h"
#include "zoc/train/dist.h"
#include "zoc/train_layers/run_step.h"
#include "zoc/train_layers/steps.h"
#include "zoc/weights/init.h"
#include "zoc/weights/weight_source.h"

namespace zoc {

template <class M>
class Trainer {
 public:
  // weights: a safetensors file with state_dict names, or empty for PyTorch's default
  // initialization drawn with `seed` (zoc/weights/init.h). Steps take up to max_batch samples.
  // benchmark: pick each convolution's algorithms by timing cuDNN's exact fp32 candidates (as
  // cudnn.benchmark), else by cuDNN's heuristics; deterministic: only algorithms cuDNN marks
  // deterministic, so that the same steps give the same bits.
  static Expected<std::unique_ptr<M>> create(const std::string& weights, uint64_t seed,
                                             int max_batch, bool benchmark = true,
                                             bool deterministic = false);
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Forward in training mode on input [n, C, H, W] (fp32, device) and labels [n] (int32,
  // device, each below kClasses), the mean cross-entropy, and backward: grads() then holds
  // every parameter's gradient (with use_fused_sgd, SGD has updated the parameters instead),
  // and BatchNorm running statistics are updated. On `stream`.
  Status step(const float* input, const int32_t* labels, int n, cudaStream_t stream);
  // PyTorch's SGD (dampening 0, no Nesterov) on every trainable parameter (fp16: nothing when
  // the step's scaled gradients overflowed).
  Status sgd(float lr, float momentum, float weight_decay, cudaStream_t stream) {
    if (s_.window) return Error{"sgd: this trainer runs SGD inside step() (use_fused_sgd)"};
    ZOC_CUDA(trainer_kernels::sgd(reinterpret_cast<float*>(s_.params),
                                  reinterpret_cast<const float*>(s_.grads), s_.momenta,
                                  M::kTrainableElements, lr, momentum, weight_decay,
                                  s_.skip_update(), stream),
             "sgd");
    return Status::success();
  }
  // PyTorch's AdamW on every trainable parameter, step t from 1 (the bias corrections'); its
  // moments are momenta() (exp_avg) and second_moments() (exp_avg_sq), which use_adamw()
  // allocates: call it once before the first step (a captured step never allocates). fp16: t
  // counts the steps the loss scale did not skip, on the device (as PyTorch's AdamW, whose
  // step() GradScaler does not call then).
  Status use_adamw() {
    if (s_.second) return Status::success();
    if (s_.window) return Error{"use_adamw: this trainer runs SGD inside step() (use_fused_sgd)"};
    const size_t bytes = M::kParamElements * sizeof(float);
    ZOC_CUDA(cudaMalloc(&s_.second, bytes), "adamw");
    ZOC_CUDA(cudaMemset(s_.second, 0, bytes), "adamw");
    s_.device_bytes += bytes;
    if (M::kFP16) {
      ZOC_CUDA(cudaMalloc(&s_.corrections, 2 * sizeof(float)), "adamw");
      s_.device_bytes += 2 * sizeof(float);
    }
    return Status::success();
  }
  Status adamw(double lr, double beta1, double beta2, double eps, double weight_decay, uint64_t t,
               cudaStream_t stream) {
    if (!s_.second || t < 1) return Error{"adamw: call use_adamw() first; steps count from 1"};
    const double step_size = lr / (1.0 - std::pow(beta1, double(t)));  // in double, as Python
    const double bias2_sqrt = std::sqrt(1.0 - std::pow(beta2, double(t)));
    if constexpr (M::kFP16) {  // t less the skipped steps, known on the device only
      ZOC_CUDA(trainer_kernels::adamw_corrections(s_.scaler, lr, beta1, beta2, t, s_.corrections,
                                                  stream),
               "adamw");
    }
    ZOC_CUDA(trainer_kernels::adamw(
                 reinterpret_cast<float*>(s_.params), reinterpret_cast<const float*>(s_.grads),
                 s_.momenta, s_.second, M::kTrainableElements, float(1.0 - lr * weight_decay),
                 float(1.0 - beta1), float(beta2), float(1.0 - beta2), float(eps), float(step_size),
                 float(bias2_sqrt), s_.skip_update(), s_.corrections, stream),
             "adamw");
    return Status::success();
  }
  // SGD inside the backward pass, one process: step() then updates each layer's tensors as
  // soon as their gradients are final and nothing later reads them, with the rates set_sgd()
  // last wrote on the step's stream, so that no buffer holds every gradient at once (a window
  // of M::kGradWindowElements floats does: one layer's). The same arithmetic as sgd() after
  // step(). grads() is then null; sgd() and use_adamw() are refused, and step() with
  // set_grad_sync(). Call once, before the first step. M::kGradWindowElements 0: this graph
  // cannot (the emitter found a tensor read after its gradient is final, or written twice).
  // Mixed precision: each convolution's update also writes the weight's copy the next step's
  // forward reads; weights written through params() afterwards need sync_weight_copies(). Not
  // fp16: its loss scaling checks every gradient for an overflow before any update.
  Status use_fused_sgd();
  Status sync_weight_copies(cudaStream_t stream) {
    train::TrainCopyWeights copy(s_, stream);
    return self().forward_layers(copy);
  }
  Status set_sgd(float lr, float momentum, float weight_decay, cudaStream_t stream) {
    if (!s_.window) return Error{"set_sgd: call use_fused_sgd() first"};
    ZOC_CUDA(trainer_kernels::set_sgd(s_.hyper, lr, momentum, weight_decay, stream), "set_sgd");
    s_.hyper_set = true;
    return Status::success();
  }
  bool fused_sgd() const { return s_.window != nullptr; }
  // fp16's dynamic loss scaling (zoc::trainer_kernels::LossScale): its state now (the host
  // waits for the device), and a resumed run's.
  Expected<trainer_kernels::LossScale> loss_scale() const {
    trainer_kernels::LossScale h;
    if (!s_.scaler) return h;
    ZOC_CUDA(cudaMemcpy(&h, s_.scaler, sizeof h, cudaMemcpyDeviceToHost), "loss_scale");
    return h;
  }
  Status set_loss_scale(const trainer_kernels::LossScale& h) {
    if (!s_.scaler) return Status::success();
    ZOC_CUDA(cudaMemcpy(s_.scaler, &h, sizeof h, cudaMemcpyHostToDevice), "set_loss_scale");
    return Status::success();
  }
  // Forward in evaluation mode (running statistics; dropout the identity) on input
  // [n, C, H, W], 1 <= n <= max_batch: logits() then holds [n, kClasses].
  Status evaluate(const float* input, int n, cudaStream_t stream);
  // Device counters for an epoch's log: counts[0] += the rows of logits() whose first largest
  // logit is labels[row]; with add_loss, sums[0] += loss()[0]. Nothing waits.
  Status metrics(const int32_t* labels, int n, bool add_loss, double* sums,
                 unsigned long long* counts, cudaStream_t stream) {
    ZOC_CUDA(trainer_kernels::metrics(logits(), labels, n, M::kClasses, add_loss ? loss() : nullptr,
                                      sums, counts, stream),
             "metrics");
    return Status::success();
  }
  // Dropout in step(): on by default; off makes it the identity, as the CPU oracle (zoc grad)
  // and tools/train/grad_reference.py treat it. Masks are drawn from (seed, number of steps
  // taken, element); set_steps() continues a resumed run.
  void set_dropout(bool on) { s_.dropout = on; }
  // The loss's label smoothing in [0, 1): set before the first step (a captured step keeps it).
  void set_label_smoothing(float e) { s_.label_smoothing = e; }
  Status set_steps(uint64_t steps) {
    ZOC_CUDA(cudaMemcpy(s_.draws, &steps, sizeof steps, cudaMemcpyHostToDevice), "set_steps");
    return Status::success();
  }
  // Data parallel: step() averages each bucket over the processes as soon as the backward pass
  // completes it (nullptr: one process). Dropout masks then differ per process through
  // set_dropout_seed().
  void set_grad_sync(train::GradSync* sync) { s_.sync = sync; }
  void set_dropout_seed(uint64_t seed) { s_.dropout_seed = seed; }

  float* params() { return reinterpret_cast<float*>(s_.params); }  // kParamTable's offsets
  const float* params() const { return reinterpret_cast<const float*>(s_.params); }
  float* momenta() { return s_.momenta; }        // SGD's momentum buffers (AdamW's exp_avg)
  float* second_moments() { return s_.second; }  // AdamW's exp_avg_sq (null before use_adamw)
  // null with use_fused_sgd()
  const float* grads() const { return reinterpret_cast<const float*>(s_.grads); }
  const float* loss() const { return s_.f(M::kLoss); }  // [1], the last step's
  // Every byte this trainer holds on the device (a static plan: fixed at create()).
  size_t device_bytes() const { return s_.device_bytes; }
  const float* logits() const { return s_.a(M::kLogits); }  // [n, kClasses]

 protected:
  Trainer() = default;
  ~Trainer() = default;
  // Frees everything create() made; M's destructor calls it (the bundles are M's members).
  void release();

 private:
  static constexpr size_t kWorkspaceLimit = size_t(256) << 20;
  static constexpr size_t kBlasWorkspaceBytes = size_t(4) << 20;

  M& self() { return static_cast<M&>(*this); }
  static constexpr bool kMixed = M::kBF16 || M::kFP16;
  // Mixed precision: the weights' copies and one convolution's weight gradient (fp16: and the
  // loss scale).
  static constexpr size_t half_bytes() {
    return kMixed ? (M::kParamElements + M::kGradScratchElements) * 2 +
                        (M::kFP16 ? sizeof(trainer_kernels::LossScale) : 0)
                  : 0;
  }
  Status init(const std::string& weights, uint64_t seed, int max_batch);
  Status load_params(const std::string& weights, uint64_t seed);
  Status allocate();
  Status describe(int n);
  Status begin(cudaStream_t stream, const char* what);

  train::TrainState s_;
};

template <class M>
Expected<std::unique_ptr<M>> Trainer<M>::create(const std::string& weights, uint64_t seed,
                                                int max_batch, bool benchmark, bool deterministic) {
  if (max_batch < 2 || max_batch > 65536) {
    return Error{std::string(M::kClassName) + ": max_batch " + std::to_string(max_batch) +
                 " is out of range 2..65536 (training-mode batch norm needs two samples)"};
  }
  std::unique_ptr<M> t(new M());
  t->s_.benchmark = benchmark;
  t->s_.deterministic = deterministic;
  ZOC_TRY(t->init(weights, seed, max_batch));
  return Expected<std::unique_ptr<M>>(std::move(t));
}

template <class M>
Status Trainer<M>::init(const std::string& weights, uint64_t seed, int max_batch) {
  s_.max_batch = max_batch;
  s_.dropout_seed = seed;
  if (M::kBF16) {  // mixed precision: bf16 NHWC activations, tensor cores, fp32 accumulation
    s_.types = {CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NHWC, CUDNN_TENSOR_OP_MATH, CUDA_R_16BF,
                CUBLAS_COMPUTE_32F};
  }
  if (M::kFP16) {  // the same in fp16
    s_.types = {CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, CUDNN_TENSOR_OP_MATH, CUDA_R_16F,
                CUBLAS_COMPUTE_32F};
  }
  ZOC_TRY(load_params(weights, seed));
  if (M::kTF32) s_.types.math = CUDNN_DEFAULT_MATH;  // cuDNN may round fp32 to TF32
  train::TrainCreate create(s_);
  ZOC_TRY(self().forward_layers(create));
  ZOC_TRY(self().backward_layers(create));
  ZOC_TRY(describe(max_batch));  // with benchmark: times the candidates once
  if (s_.workspace_need > 0) {   // allocated once: step() never allocates
    ZOC_CUDA(cudaMalloc(&s_.workspace, s_.workspace_need), "init");
    s_.workspace_bytes = s_.workspace_need;
  }
  s_.sized = true;
  const size_t B = size_t(max_batch);
  s_.device_bytes = (3 * M::kParamElements + M::kGradDiscardElements) * sizeof(float) +
                    M::kArenaBytesPerSample * B + M::kFixedBytes + (B + 1) * sizeof(float) +
                    s_.workspace_bytes + kBlasWorkspaceBytes + sizeof(uint64_t) + half_bytes();
  return Status::success();
}

// Weights: every tensor checked by name, shape and dtype before anything is allocated, then the
// handles and every buffer (all sized for max_batch).
template <class M>
Status Trainer<M>::load_params(const std::string& weights, uint64_t seed) {
  auto source = weights.empty() ? Expected<WeightSource>(WeightSource::seeded(seed))
                                : WeightSource::open(weights, /*strict=*/true);
  if (!source) return source.error();
  std::vector<float> host(M::kParamElements);
  for (const train::Param& p : M::kParamTable) {
    const std::vector<int64_t> shape(p.shape, p.shape + p.rank);
    ZOC_TRY(source->fill(p.name, shape, p.init, p.fan, host.data() + p.offset));
  }
  for (const char* const* c = M::kCounterNames; *c; ++c) source->ignore(*c);
  ZOC_TRY(source->finish());
  ZOC_TRY(allocate());
  ZOC_CUDA(
      cudaMemcpy(s_.params, host.data(), M::kParamElements * sizeof(float), cudaMemcpyHostToDevice),
      "init");
  return Status::success();
}

template <class M>
Status Trainer<M>::allocate() {
  ZOC_CUDNN(cudnnCreate(&s_.cudnn), "init");
  ZOC_CUBLAS(cublasCreate(&s_.cublas), "init");
  // fp32: no TF32 in cuBLAS either; tf32: cuBLAS's and cuDNN's TF32 tensor cores.
  // Mixed: cublasGemmEx on bf16/fp16 operands, fp32 accumulation (tensor cores).
  ZOC_CUBLAS(cublasSetMathMode(s_.cublas, M::kTF32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                          : kMixed ? CUBLAS_DEFAULT_MATH
                                                   : CUBLAS_PEDANTIC_MATH),
             "init");
  // A fixed cuBLAS workspace: nothing is allocated while a step is captured.
  ZOC_CUDA(cudaMalloc(&s_.blas_workspace, kBlasWorkspaceBytes), "init");
  ZOC_CUBLAS(cublasSetWorkspace(s_.cublas, s_.blas_workspace, kBlasWorkspaceBytes), "init");
  ZOC_CUDA(cudaMalloc(&s_.draws, sizeof(uint64_t)), "init");
  ZOC_CUDA(cudaMemset(s_.draws, 0, sizeof(uint64_t)), "init");
  const size_t param_bytes = M::kParamElements * sizeof(float);
  ZOC_CUDA(cudaMalloc(&s_.params, param_bytes), "init");
  ZOC_CUDA(cudaMalloc(&s_.grads, param_bytes), "init");
  ZOC_CUDA(cudaMalloc(&s_.momenta, param_bytes), "init");
  ZOC_CUDA(cudaMemset(s_.grads, 0, param_bytes), "init");
  ZOC_CUDA(cudaMemset(s_.momenta, 0, param_bytes), "init");
  if (M::kGradDiscardElements > 0) {
    ZOC_CUDA(cudaMalloc(&s_.discard, M::kGradDiscardElements * sizeof(float)), "init");
    s_.discard_beta = s_.discard + M::kGradDiscardElements / 2;
  }
  if (kMixed) {
    ZOC_CUDA(cudaMalloc(&s_.params16, M::kParamElements * 2), "init");
    ZOC_CUDA(cudaMalloc(&s_.grad16, std::max<size_t>(M::kGradScratchElements * 2, 2)), "init");
  }
  if (M::kFP16) {  // the loss scale starts at PyTorch's 65536
    ZOC_CUDA(cudaMalloc(&s_.scaler, sizeof(trainer_kernels::LossScale)), "init");
    ZOC_TRY(set_loss_scale(trainer_kernels::LossScale{}));
  }
  ZOC_CUDA(cudaMalloc(&s_.arena, M::kArenaBytesPerSample * size_t(s_.max_batch)), "init");
  ZOC_CUDA(cudaMalloc(&s_.fixed, std::max<size_t>(M::kFixedBytes, 1)), "init");
  ZOC_CUDA(cudaMalloc(&s_.loss_rows, size_t(s_.max_batch) * sizeof(float)), "init");
  return Status::success();
}

// The workspace is sized at the largest batch, in create(); other batch sizes pick within it, so
// that step() never allocates. Until every layer is described, no batch size is: a failure here
// leaves the next step() describing again.
template <class M>
Status Trainer<M>::describe(int n) {
  s_.batch = 0;
  train::TrainDescribe d(s_, n, s_.sized ? s_.workspace_bytes : kWorkspaceLimit);
  ZOC_TRY(self().forward_layers(d));
  ZOC_TRY(self().backward_layers(d));
  s_.workspace_need = d.need;
  s_.batch = n;
  return Status::success();
}

template <class M>
Status Trainer<M>::begin(cudaStream_t stream, const char* what) {
  ZOC_CUDNN(cudnnSetStream(s_.cudnn, stream), what);
  ZOC_CUBLAS(cublasSetStream(s_.cublas, stream), what);
  // cublasSetStream resets the workspace to cuBLAS's own pool: the fixed one again.
  ZOC_CUBLAS(cublasSetWorkspace(s_.cublas, s_.blas_workspace, kBlasWorkspaceBytes), what);
  return Status::success();
}

template <class M>
Status Trainer<M>::step(const float* input, const int32_t* labels, int n, cudaStream_t stream) {
  if (n < 2 || n > s_.max_batch) {
    return Error{std::string(M::kClassName) + "::step: batch " + std::to_string(n) +
                 " is out of range 2.." + std::to_string(s_.max_batch)};
  }
  if (s_.window && (!s_.hyper_set || s_.sync)) {
    return Error{std::string(M::kClassName) +
                 "::step: SGD inside the backward pass needs set_sgd() first and one process"};
  }
  if (n != s_.batch) ZOC_TRY(describe(n));  // zoc-verify: one-time
  ZOC_TRY(begin(stream, "step"));
  if constexpr (M::kHasDropout) {
    ZOC_CUDA(trainer_kernels::count_step(s_.draws, stream), "step");  // this step's masks
  }
  train::TrainRun<true> run{{}, s_, input, labels, stream, n};
  ZOC_TRY(self().forward_layers(run));
  ZOC_TRY(self().backward_layers(run));
  if (s_.sync) ZOC_TRY(s_.sync->finish(stream));  // every bucket averaged before SGD
  if constexpr (M::kFP16) {  // the gradients unscaled and checked, the scale updated
    ZOC_CUDA(trainer_kernels::unscale_grads(reinterpret_cast<float*>(s_.grads),
                                            M::kTrainableElements, s_.scaler, stream),
             "loss scale");
    ZOC_CUDA(trainer_kernels::update_scale(s_.scaler, stream), "loss scale");
  }
  return Status::success();
}

template <class M>
Status Trainer<M>::use_fused_sgd() {
  if (s_.window) return Status::success();
  const char* why =
      M::kFP16 ? "fp16's loss scaling checks every gradient for an overflow before any update"
      : M::kGradWindowElements == 0
          ? "this training graph reads a tensor after its gradient is final"
      : s_.sync   ? "SGD in one process only (data parallel: after the step)"
      : s_.second ? "the optimizer is AdamW (after the step)"
                  : nullptr;
  if (why) return Error{std::string(M::kClassName) + "::use_fused_sgd: " + why};
  const size_t window_bytes = M::kGradWindowElements * sizeof(float);
  ZOC_CUDA(cudaMalloc(&s_.window, window_bytes), "use_fused_sgd");
  ZOC_CUDA(cudaMalloc(&s_.hyper, 3 * sizeof(float)), "use_fused_sgd");
  ZOC_CUDA(cudaMemset(s_.hyper, 0, 3 * sizeof(float)), "use_fused_sgd");
  ZOC_CUDA(cudaFree(s_.grads), "use_fused_sgd");
  s_.grads = nullptr;
  s_.device_bytes += window_bytes + 3 * sizeof(float);
  s_.device_bytes -= M::kParamElements * sizeof(float);
  ZOC_TRY(sync_weight_copies(nullptr));  // the first step's copies (legacy stream: waited)
  ZOC_CUDA(cudaDeviceSynchronize(), "use_fused_sgd");
  return Status::success();
}

template <class M>
Status Trainer<M>::evaluate(const float* input, int n, cudaStream_t stream) {
  if (n < 1 || n > s_.max_batch) {
    return Error{std::string(M::kClassName) + "::evaluate: batch " + std::to_string(n) +
                 " is out of range 1.." + std::to_string(s_.max_batch)};
  }
  if (n != s_.batch) ZOC_TRY(describe(n));  // zoc-verify: one-time
  ZOC_TRY(begin(stream, "evaluate"));
  train::TrainRun<false> run{{}, s_, input, nullptr, stream, n};
  return self().forward_layers(run);
}

template <class M>
void Trainer<M>::release() {
  train::TrainDestroy destroy;
  (void)self().forward_layers(destroy);
  (void)self().backward_layers(destroy);
  for (void* q :
       {static_cast<void*>(s_.params), static_cast<void*>(s_.grads), static_cast<void*>(s_.momenta),
        static_cast<void*>(s_.second), static_cast<void*>(s_.arena), static_cast<void*>(s_.fixed),
        static_cast<void*>(s_.loss_rows), static_cast<void*>(s_.draws), s_.workspace,
        s_.blas_workspace, static_cast<void*>(s_.params16), s_.grad16,
        static_cast<void*>(s_.discard), static_cast<void*>(s_.window), static_cast<void*>(s_.hyper),
        static_cast<void*>(s_.scaler), static_cast<void*>(s_.corrections)}) {
    if (q) cudaFree(q);
  }
  if (s_.cublas) cublasDestroy(s_.cublas);
  if (s_.cudnn) cudnnDestroy(s_.cudnn);
}

}  // namespace zoc

// Explicit instantiations, written once in a generated trainer's .cpp: the skeleton for trainer
// M, and M's two layer sequences for every step.
#define ZOC_TRAINER_INSTANTIATE(M)                                      \
  template class zoc::Trainer<M>;                                       \
  template zoc::Status M::forward_layers(zoc::train::TrainCreate&);     \
  template zoc::Status M::backward_layers(zoc::train::TrainCreate&);    \
  template zoc::Status M::forward_layers(zoc::train::TrainDescribe&);   \
  template zoc::Status M::backward_layers(zoc::train::TrainDescribe&);  \
  template zoc::Status M::forward_layers(zoc::train::TrainDestroy&);    \
  template zoc::Status M::backward_layers(zoc::train::TrainDestroy&);   \
  template zoc::Status M::forward_layers(zoc::train::TrainRun<true>&);  \
  template zoc::Status M::backward_layers(zoc::train::TrainRun<true>&); \
  template zoc::Status M::forward_layers(zoc::train::TrainRun<false>&); \
  template zoc::Status M::forward_layers(zoc::train::TrainCopyWeights&)
