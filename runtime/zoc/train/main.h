// The command-line runner of generated trainers (issue 8), for any generated Trainer class, in
// two modes:
//
// Train (zoc/train/loop.h): epochs over a data set, per-epoch CSV/JSON, checkpoints, resume.
//   <model>_train --data DIR [--dataset fashion-mnist|mnist|cifar10] [--epochs 5] [--batch 128]
//                 [--optimizer sgd|adamw] [--lr 0.1] [--momentum 0.9] [--weight-decay 5e-4]
//                 [--betas 0.9,0.999 --eps 1e-8 (adamw; its defaults --lr 1e-3
//                 --weight-decay 1e-2)] [--label-smoothing 0]
//                 [--schedule cosine|step|constant] [--seed 0] [--weights W] [--no-dropout]
//                 [--resize S] [--channels C] [--mean M[,M,M] --std S[,S,S]]
//                 [--max-steps K] [--csv F] [--json F]
//                 [--checkpoint C] [--resume C] [--no-graph] [--no-benchmark] [--deterministic]
//                 [--no-fused-sgd] [--loss-scale 65536 (fp16)]
//
// One batch: one batch from a safetensors file (the file tools/train/grad_reference.py
// writes), one training step's loss, logits and gradients written in the same layout, so that
// the two can be compared tensor by tensor (dropout off, as the reference's); optionally K SGD
// steps on that batch and the final weights as a safetensors checkpoint with state_dict names
// (loadable by PyTorch and by zoc's inference code).
//   <model>_train --batch-file B --out G [--weights W | --seed S] [--label-smoothing 0]
//                 [--loss-scale 65536 (fp16)] [--steps K --weights-out C and the optimizer's
//                 options]
//
// Errors name the file or option and the cause; the exit status is 1 on any error.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/io/safetensors.h"
#include "zoc/train/datasets.h"
#include "zoc/train/loop.h"

namespace zoc {

template <class Trainer>
Status run_train(const TrainArgs& a) {
  const FitArgs& f = a.fit_args;  // the options the modes share
  auto batch = read_batch(a.batch_file, Trainer::kInputC, Trainer::kInputH, Trainer::kInputW,
                          Trainer::kClasses);
  if (!batch) return batch.error();
  const int n = static_cast<int>(batch->shape[0]);
  auto trainer = Trainer::create(f.weights, f.seed, n, f.benchmark, f.deterministic);
  if (!trainer) return trainer.error();
  (*trainer)->set_dropout(false);  // as grad_reference.py and `zoc grad`: dropout the identity
  (*trainer)->set_label_smoothing(float(f.label_smoothing));
  ZOC_TRY(apply_loss_scale(**trainer, f));
  if (f.optimizer == "adamw") ZOC_TRY((*trainer)->use_adamw());
  struct Device {  // released on every return
    float* x = nullptr;
    int32_t* y = nullptr;
    ~Device() {
      cudaFree(x);
      cudaFree(y);
    }
  } dev;
  ZOC_CUDA(cudaMalloc(&dev.x, batch->input.size() * sizeof(float)), "batch");
  ZOC_CUDA(cudaMalloc(&dev.y, batch->labels.size() * sizeof(int32_t)), "batch");
  ZOC_CUDA(cudaMemcpy(dev.x, batch->input.data(), batch->input.size() * sizeof(float),
                      cudaMemcpyHostToDevice),
           "batch");
  ZOC_CUDA(cudaMemcpy(dev.y, batch->labels.data(), batch->labels.size() * sizeof(int32_t),
                      cudaMemcpyHostToDevice),
           "batch");
  cudaStream_t stream = nullptr;  // the default stream: this runner is sequential
  ZOC_TRY((*trainer)->step(dev.x, dev.y, n, stream));
  if constexpr (Trainer::kFP16) {  // gradients that overflowed fp16 at the first loss scale
    auto ls = (*trainer)->loss_scale();
    if (!ls) return ls.error();
    if (ls->skipped > 0) {
      std::fprintf(stderr,
                   "warning: the first step's gradients overflowed at loss scale %g: "
                   "its update is skipped (the written gradients are not finite)\n",
                   double(ls->scale / trainer_kernels::LossScale::kBackoff));
    }
  }
  float first_loss = 0;
  ZOC_CUDA(cudaMemcpy(&first_loss, (*trainer)->loss(), sizeof(float), cudaMemcpyDeviceToHost),
           "loss");
  std::vector<float> params(Trainer::kParamElements), grads(Trainer::kParamElements);
  std::vector<float> logits(static_cast<size_t>(n) * Trainer::kClasses);
  // The gradients written are the first step's: those of the weights read in.
  ZOC_CUDA(cudaMemcpy(grads.data(), (*trainer)->grads(), grads.size() * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "gradients");
  ZOC_CUDA(cudaMemcpy(logits.data(), (*trainer)->logits(), logits.size() * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "logits");
  ZOC_CUDA(cudaMemcpy(params.data(), (*trainer)->params(), params.size() * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "running statistics");
  float loss = first_loss;
  for (int s = 0; s < a.steps; ++s) {
    if (s > 0) ZOC_TRY((*trainer)->step(dev.x, dev.y, n, stream));
    ZOC_TRY(optimize(**trainer, f, f.lr, uint64_t(s) + 1, stream));
  }
  ZOC_CUDA(cudaDeviceSynchronize(), "steps");
  std::vector<st::TensorToWrite> out;
  out.push_back({"loss", st::DType::F32, {1}, &loss, sizeof loss});
  out.push_back({"logits",
                 st::DType::F32,
                 {n, Trainer::kClasses},
                 logits.data(),
                 logits.size() * sizeof(float)});
  std::vector<std::string> names;  // kept alive until the write
  names.reserve(2 * Trainer::kNumParams);
  for (int i = 0; i < Trainer::kNumParams; ++i) {
    const auto& p = Trainer::kParamTable[i];
    names.push_back(std::string(p.trainable ? "grad." : "after.") + p.name);
    const std::vector<float>& src = p.trainable ? grads : params;
    out.push_back({names.back(), st::DType::F32, std::vector<int64_t>(p.shape, p.shape + p.rank),
                   src.data() + p.offset, p.count * sizeof(float)});
  }
  ZOC_TRY(st::write_file(a.out, out, {{"producer", "zoc trainer"}}));
  std::printf("wrote %s: loss %.6f, batch %d, %d tensors\n", a.out.c_str(), double(loss), n,
              Trainer::kNumParams);
  if (!a.weights_out.empty()) {
    ZOC_CUDA(cudaMemcpy(params.data(), (*trainer)->params(), params.size() * sizeof(float),
                        cudaMemcpyDeviceToHost),
             "weights");
    std::vector<st::TensorToWrite> w;
    for (int i = 0; i < Trainer::kNumParams; ++i) {
      const auto& p = Trainer::kParamTable[i];
      w.push_back({p.name, st::DType::F32, std::vector<int64_t>(p.shape, p.shape + p.rank),
                   params.data() + p.offset, p.count * sizeof(float)});
    }
    // num_batches_tracked: the weights file's count plus the training-mode forward passes
    // taken here, as PyTorch counts them.
    const int64_t forwards = a.steps > 0 ? a.steps : 1;
    auto counted = read_counters<Trainer>(f.weights);
    if (!counted) return counted.error();
    std::vector<int64_t> counts = std::move(*counted);
    for (int64_t& c : counts) c += forwards;
    size_t k = 0;
    for (const char* const* c = Trainer::kCounterNames; *c; ++c, ++k) {
      w.push_back({*c, st::DType::I64, {}, &counts[k], sizeof(int64_t)});
    }
    ZOC_TRY(st::write_file(a.weights_out, w, {{"format", "pt"}, {"producer", "zoc trainer"}}));
    std::printf("wrote %s after %d %s steps (lr %g, weight decay %g)\n", a.weights_out.c_str(),
                a.steps, f.optimizer == "adamw" ? "AdamW" : "SGD", f.lr, f.weight_decay);
  }
  return Status::success();
}

template <class Trainer>
int run_train_main(int argc, char** argv) {
  auto args = parse_train_args(argc, argv);
  Status s = !args       ? Status(args.error())
             : args->fit ? run_fit<Trainer>(args->fit_args)
                         : run_train<Trainer>(*args);
  if (!s) {
    std::fprintf(stderr, "%s: error: %s\n", argc > 0 ? argv[0] : "trainer",
                 s.error().message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace zoc
