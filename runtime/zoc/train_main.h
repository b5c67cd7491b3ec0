// The command-line runner of generated trainers (issue 8), for any generated Trainer class, in
// two modes:
//
// Train (zoc/train_fit.h): epochs over a data set, per-epoch CSV/JSON, checkpoints, resume.
//   <model>_train --data DIR [--dataset fashion-mnist|mnist|cifar10] [--epochs 5] [--batch 128]
//                 [--lr 0.1] [--momentum 0.9] [--weight-decay 5e-4]
//                 [--schedule cosine|step|constant] [--seed 0] [--weights W] [--no-dropout]
//                 [--mean M[,M,M] --std S[,S,S]] [--max-steps K] [--csv F] [--json F]
//                 [--checkpoint C] [--resume C] [--no-graph] [--no-benchmark]
//
// One batch: one batch from a safetensors file (the file tools/train/grad_reference.py
// writes), one training step's loss, logits and gradients written in the same layout, so that
// the two can be compared tensor by tensor (dropout off, as the reference's); optionally K SGD
// steps on that batch and the final weights as a safetensors checkpoint with state_dict names
// (loadable by PyTorch and by zoc's inference code).
//   <model>_train --batch-file B --out G [--weights W | --seed S] [--steps K --lr 0.1
//                 --momentum 0.9 --weight-decay 5e-4 --weights-out C]
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

#include "zoc/cuda_check.h"
#include "zoc/expected.h"
#include "zoc/safetensors.h"
#include "zoc/train_batch.h"
#include "zoc/train_fit.h"

namespace zoc {

struct TrainArgs {
  std::string weights, batch_file, out, weights_out;
  uint64_t seed = 0;
  int steps = 0;
  float lr = 0.1f, momentum = 0.9f, weight_decay = 5e-4f;
  bool fit = false;  // --data given: the epoch loop, with `fit`'s settings
  FitArgs fit_args;
};

namespace detail {
inline std::vector<float> float_list(const std::string& v) {
  std::vector<float> out;
  size_t start = 0;
  while (start <= v.size()) {
    const size_t end = std::min(v.find(',', start), v.size());
    size_t used = 0;
    const std::string item = v.substr(start, end - start);
    out.push_back(std::stof(item, &used));
    if (used != item.size()) throw std::invalid_argument(item);
    start = end + 1;
  }
  return out;
}
}  // namespace detail

inline Expected<TrainArgs> parse_train_args(int argc, char** argv) {
  TrainArgs a;
  FitArgs& f = a.fit_args;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--no-dropout" || k == "--no-graph" || k == "--no-benchmark") {
      (k == "--no-dropout" ? f.dropout : k == "--no-graph" ? f.graph : f.benchmark) = false;
      continue;
    }
    if (i + 1 >= argc) return Error{"option " + k + " needs a value"};
    const std::string v = argv[++i];
    auto whole = [&](auto parse) {  // the whole value must be the number
      size_t used = 0;
      auto x = parse(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
      return x;
    };
    auto to_int = [](const std::string& s, size_t* u) { return std::stoi(s, u); };
    auto to_u64 = [](const std::string& s, size_t* u) { return std::stoull(s, u); };
    auto to_double = [](const std::string& s, size_t* u) { return std::stod(s, u); };
    try {
      if (k == "--weights") a.weights = f.weights = v;
      else if (k == "--batch-file") a.batch_file = v;
      else if (k == "--out") a.out = v;
      else if (k == "--weights-out") a.weights_out = v;
      else if (k == "--seed") a.seed = f.seed = whole(to_u64);
      else if (k == "--steps") a.steps = whole(to_int);
      else if (k == "--lr") { f.lr = whole(to_double); a.lr = float(f.lr); }
      else if (k == "--momentum") { f.momentum = whole(to_double); a.momentum = float(f.momentum); }
      else if (k == "--weight-decay") {
        f.weight_decay = whole(to_double);
        a.weight_decay = float(f.weight_decay);
      }
      else if (k == "--data") { f.data = v; a.fit = true; }
      else if (k == "--dataset") f.dataset = v;
      else if (k == "--epochs") f.epochs = whole(to_int);
      else if (k == "--batch") f.batch = whole(to_int);
      else if (k == "--max-steps") f.max_steps = whole(to_int);
      else if (k == "--schedule") f.schedule = v;
      else if (k == "--csv") f.csv = v;
      else if (k == "--json") f.json = v;
      else if (k == "--checkpoint") f.checkpoint = v;
      else if (k == "--resume") f.resume = v;
      else if (k == "--mean") f.mean = detail::float_list(v);
      else if (k == "--std") f.stddev = detail::float_list(v);
      else return Error{"unknown option " + k};
    } catch (const std::exception&) {
      return Error{"option " + k + ": '" + v + "' is not a valid number"};
    }
  }
  if (a.fit) {
    if (!a.batch_file.empty() || !a.out.empty()) {
      return Error{"--data (train) and --batch-file/--out (one batch) are different modes"};
    }
    if (f.epochs < 1 || f.epochs > 100000) return Error{"--epochs must be in 1..100000"};
    if (f.batch < 2 || f.batch > 65536) {
      return Error{"--batch must be in 2..65536 (training-mode batch norm needs two samples)"};
    }
    if (f.max_steps < 0) return Error{"--max-steps must be >= 0"};
    if (f.schedule != "cosine" && f.schedule != "step" && f.schedule != "constant") {
      return Error{"--schedule " + f.schedule + ": expected cosine, step or constant"};
    }
    if (!(f.lr > 0) || !(f.momentum >= 0) || !(f.weight_decay >= 0)) {
      return Error{"--lr must be positive, --momentum and --weight-decay non-negative"};
    }
    if (!f.resume.empty() && !f.weights.empty()) {
      return Error{"--resume already gives the weights: drop --weights"};
    }
    return a;
  }
  if (a.batch_file.empty() || a.out.empty()) {
    return Error{"either --data DIR (train) or --batch-file B --out G (one batch) is required"};
  }
  if (a.steps < 0 || a.steps > 100000) return Error{"--steps must be in 0..100000"};
  return a;
}

template <class Trainer>
Status run_train(const TrainArgs& a) {
  auto batch = read_batch(a.batch_file, Trainer::kInputC, Trainer::kInputH, Trainer::kInputW,
                          Trainer::kClasses);
  if (!batch) return batch.error();
  const int n = static_cast<int>(batch->shape[0]);
  auto trainer = Trainer::create(a.weights, a.seed, n, a.fit_args.benchmark);
  if (!trainer) return trainer.error();
  (*trainer)->set_dropout(false);  // as grad_reference.py and `zoc grad`: dropout the identity
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
    ZOC_TRY((*trainer)->sgd(a.lr, a.momentum, a.weight_decay, stream));
  }
  ZOC_CUDA(cudaDeviceSynchronize(), "steps");
  std::vector<st::TensorToWrite> out;
  out.push_back({"loss", st::DType::F32, {1}, &loss, sizeof loss});
  out.push_back({"logits", st::DType::F32, {n, Trainer::kClasses}, logits.data(),
                 logits.size() * sizeof(float)});
  std::vector<std::string> names;  // kept alive until the write
  names.reserve(2 * Trainer::kNumParams);
  for (int i = 0; i < Trainer::kNumParams; ++i) {
    const auto& p = Trainer::kParamTable[i];
    names.push_back(std::string(p.trainable ? "grad." : "after.") + p.name);
    const std::vector<float>& src = p.trainable ? grads : params;
    out.push_back({names.back(), st::DType::F32,
                   std::vector<int64_t>(p.shape, p.shape + p.rank), src.data() + p.offset,
                   p.count * sizeof(float)});
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
    std::vector<int64_t> counts;
    for (const char* const* c = Trainer::kCounterNames; *c; ++c) counts.push_back(forwards);
    if (!a.weights.empty()) {
      auto file = st::File::open(a.weights);
      if (!file) return file.error();
      size_t k = 0;
      for (const char* const* c = Trainer::kCounterNames; *c; ++c, ++k) {
        const st::TensorView* t = file->find(*c);
        if (t && t->dtype == st::DType::I64 && t->numel() == 1) {
          int64_t before = 0;
          std::memcpy(&before, t->data, sizeof before);
          counts[k] += before;
        }
      }
    }
    size_t k = 0;
    for (const char* const* c = Trainer::kCounterNames; *c; ++c, ++k) {
      w.push_back({*c, st::DType::I64, {}, &counts[k], sizeof(int64_t)});
    }
    ZOC_TRY(st::write_file(a.weights_out, w, {{"format", "pt"}, {"producer", "zoc trainer"}}));
    std::printf("wrote %s after %d SGD steps (lr %g, momentum %g, weight decay %g)\n",
                a.weights_out.c_str(), a.steps, double(a.lr), double(a.momentum),
                double(a.weight_decay));
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
    std::fprintf(stderr, "%s: error: %s\n", argc > 0 ? argv[0] : "trainer", s.error().message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace zoc
