// What the epoch loop of generated trainers (zoc/train/loop.h, which says what a run does) reads
// and writes besides the model: the data set with its stated normalization constants, the
// BatchNorm counters of a weights file, and checkpoints (written with checkpoint.h's
// crash-safe pair; --resume checks that the checkpoint continues the same run). CUDA is used
// only to move momenta and weights between the device and the files.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/io/safetensors.h"
#include "zoc/kernels/trainer_kernels.h"
#include "zoc/train/checkpoint.h"
#include "zoc/train/datasets.h"
#include "zoc/train/dist.h"
#include "zoc/train/options.h"

namespace zoc {

// The data set's files and normalization constants, every one stated here.
struct DataSplits {
  data::ImageSet train, test;
  std::vector<float> mean, stddev;
};

inline Expected<DataSplits> load_data(const FitArgs& a, int classes) {
  DataSplits d;
  const std::string& dir = a.data;
  if (a.dataset == "fashion-mnist" || a.dataset == "mnist") {
    auto tr =
        data::read_idx(dir + "/train-images-idx3-ubyte", dir + "/train-labels-idx1-ubyte", classes);
    if (!tr) return tr.error();
    auto te =
        data::read_idx(dir + "/t10k-images-idx3-ubyte", dir + "/t10k-labels-idx1-ubyte", classes);
    if (!te) return te.error();
    d.train = std::move(*tr);
    d.test = std::move(*te);
    // Measured over the 60000 training images (tools/train/README.md; MNIST's usual constants).
    d.mean = {a.dataset == "mnist" ? 0.1307f : 0.2860f};
    d.stddev = {a.dataset == "mnist" ? 0.3081f : 0.3530f};
  } else if (a.dataset == "cifar10") {
    std::vector<std::string> files;
    for (int k = 1; k <= 5; ++k) files.push_back(dir + "/data_batch_" + std::to_string(k) + ".bin");
    auto tr = data::read_cifar10(files);
    if (!tr) return tr.error();
    auto te = data::read_cifar10({dir + "/test_batch.bin"});
    if (!te) return te.error();
    d.train = std::move(*tr);
    d.test = std::move(*te);
    d.mean = {0.4914f, 0.4822f, 0.4465f};  // the training set's per-channel statistics
    d.stddev = {0.2470f, 0.2435f, 0.2616f};
  } else {
    return Error{"--dataset " + a.dataset + ": expected fashion-mnist, mnist or cifar10"};
  }
  for (data::ImageSet* set : {&d.train, &d.test}) {  // the input pipeline's options, stated
    if (a.resize > 0) ZOC_TRY(data::resize_bilinear(*set, a.resize, a.resize));
    if (a.channels > 0) ZOC_TRY(data::replicate_channels(*set, a.channels));
  }
  if (d.mean.size() == 1 && d.train.channels > 1) {  // grey constants for replicated channels
    d.mean.assign(size_t(d.train.channels), d.mean[0]);
    d.stddev.assign(size_t(d.train.channels), d.stddev[0]);
  }
  if (!a.mean.empty()) d.mean = a.mean;
  if (!a.stddev.empty()) d.stddev = a.stddev;
  if (d.mean.size() != size_t(d.train.channels) || d.stddev.size() != size_t(d.train.channels)) {
    return Error{"--mean/--std: " + std::to_string(d.train.channels) +
                 " value(s) needed, one per "
                 "channel of " +
                 a.dataset};
  }
  for (float s : d.stddev) {
    if (!(s > 0.0f)) return Error{"--std: every value must be positive"};
  }
  return d;
}

// BatchNorm's num_batches_tracked in a weights file, in kCounterNames order: 0 where the file
// has none, as PyTorch starts counting.
template <class Trainer>
std::vector<int64_t> read_counters(const st::File& f) {
  std::vector<int64_t> counts;
  for (const char* const* c = Trainer::kCounterNames; *c; ++c) {
    const st::TensorView* v = f.find(*c);
    int64_t n = 0;
    if (v && v->dtype == st::DType::I64 && v->numel() == 1) std::memcpy(&n, v->data, sizeof n);
    counts.push_back(n);
  }
  return counts;
}

// The same from a path; an empty path has no counters (all 0).
template <class Trainer>
Expected<std::vector<int64_t>> read_counters(const std::string& path) {
  if (path.empty()) {
    std::vector<int64_t> zeros;
    for (const char* const* c = Trainer::kCounterNames; *c; ++c) zeros.push_back(0);
    return zeros;
  }
  auto f = st::File::open(path);
  if (!f) return f.error();
  return read_counters<Trainer>(*f);
}

// One optimizer update of every trainable parameter at step t (from 1, over the whole run) with
// rate lr: --optimizer's, SGD or AdamW (use_adamw() called before the first step).
template <class Trainer>
Status optimize(Trainer& t, const FitArgs& a, double lr, uint64_t step, cudaStream_t stream) {
  if (a.optimizer == "adamw") {
    return t.adamw(lr, a.beta1, a.beta2, a.eps, a.weight_decay, step, stream);
  }
  return t.sgd(float(lr), float(a.momentum), float(a.weight_decay), stream);
}

// --loss-scale: an fp16 trainer's first loss scale (GradScaler's init_scale); refused by the
// trainers that scale no loss.
template <class Trainer>
Status apply_loss_scale(Trainer& t, const FitArgs& a) {
  if (a.loss_scale == 0) return Status::success();
  if (!Trainer::kFP16) {
    return Error{
        "--loss-scale: only an fp16 trainer (zoc compile --train --precision fp16) scales "
        "the loss"};
  }
  trainer_kernels::LossScale s;
  s.scale = float(a.loss_scale);
  return t.set_loss_scale(s);
}

namespace detail {

// A setting as metadata text that reads back exactly (std::to_string prints 1e-8 as 0.000000).
inline std::string exact(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// The optimizer state's tensors per trainable parameter, in a checkpoint's `.optim` file, and
// the device buffer of each: SGD's momentum buffers, or AdamW's two moments (PyTorch's names).
template <class Trainer>
std::vector<std::pair<std::string, float*>> optimizer_state(const FitArgs& a, Trainer& t) {
  if (a.optimizer == "adamw")
    return {{"exp_avg.", t.momenta()}, {"exp_avg_sq.", t.second_moments()}};
  return {{"momentum.", t.momenta()}};
}

// The state a checkpoint adds to the weights, to continue exactly where it stopped.
struct Resumed {
  int epochs_done = 0;
  uint64_t steps_done = 0;
  std::vector<int64_t> counters;  // num_batches_tracked, in kCounterNames order
};

template <class Trainer>
Expected<Resumed> read_resume(const FitArgs& a, Trainer& t, int steps_per_epoch) {
  Resumed r;
  auto pair = open_checkpoint_pair(a.resume);  // the weights and the optimizer state of one epoch
  if (!pair) return pair.error();
  st::File* const weights = &pair->weights;
  st::File* const f = &pair->optim;
  r.counters = read_counters<Trainer>(*weights);
  const std::string path = f->path();
  auto number = [&](const st::File& file, const char* key) -> Expected<unsigned long long> {
    const std::string v = checkpoint_meta(file, key);
    try {
      size_t used = 0;
      const unsigned long long x = std::stoull(v, &used);
      if (used == v.size() && !v.empty() && v[0] != '-') return x;
    } catch (const std::exception&) {
    }
    return Error{file.path() + ": metadata '" + key +
                 "' is missing or not a non-negative integer "
                 "(not a checkpoint written by a zoc trainer?)"};
  };
  auto epochs_done = number(*f, "epochs_done");
  if (!epochs_done) return epochs_done.error();
  auto steps_done = number(*f, "steps_done");
  if (!steps_done) return steps_done.error();
  auto seed = number(*f, "seed");
  if (!seed) return seed.error();
  auto batch = number(*f, "batch");
  if (!batch) return batch.error();
  auto epochs = number(*f, "epochs");
  if (!epochs) return epochs.error();
  // The learning rate of every step follows from the schedule and (except constant) the
  // epoch count: a different one would not continue the same run.
  const std::string schedule = checkpoint_meta(*f, "schedule");
  if (schedule != a.schedule || (a.schedule != "constant" && *epochs != uint64_t(a.epochs))) {
    return Error{path + ": the checkpoint was trained with --schedule " + schedule + " --epochs " +
                 std::to_string(*epochs) + "; this run has --schedule " + a.schedule +
                 " --epochs " + std::to_string(a.epochs)};
  }
  // The order of epoch e depends on (seed, e) and its batches on the batch size: anything else
  // would not continue the same run.
  if (*seed != a.seed || *batch != uint64_t(a.batch)) {
    return Error{path + ": the checkpoint was trained with --seed " + std::to_string(*seed) +
                 " --batch " + std::to_string(*batch) + "; this run has --seed " +
                 std::to_string(a.seed) + " --batch " + std::to_string(a.batch)};
  }
  if (*epochs_done < 1 || *epochs_done >= uint64_t(a.epochs)) {
    return Error{path + ": " + std::to_string(*epochs_done) + " epochs are done, --epochs " +
                 std::to_string(a.epochs) + " leaves nothing to train"};
  }
  if (*steps_done != *epochs_done * uint64_t(steps_per_epoch)) {
    return Error{path + ": " + std::to_string(*steps_done) + " steps in " +
                 std::to_string(*epochs_done) + " epochs, but this run takes " +
                 std::to_string(steps_per_epoch) + " per epoch (--max-steps?)"};
  }
  const std::string kind = checkpoint_meta(*f, "optimizer_kind");
  if ((kind.empty() ? "sgd" : kind) != a.optimizer) {
    return Error{path + ": the checkpoint was trained with --optimizer " +
                 (kind.empty() ? "sgd" : kind) + "; this run has --optimizer " + a.optimizer};
  }
  for (const auto& [prefix, device] : optimizer_state(a, t)) {
    std::vector<float> state(Trainer::kParamElements, 0.0f);
    for (int i = 0; i < Trainer::kNumParams; ++i) {
      const auto& p = Trainer::kParamTable[i];
      if (!p.trainable) continue;
      const std::string name = prefix + p.name;
      const st::TensorView* v = f->find(name);
      if (!v || v->dtype != st::DType::F32 || size_t(v->numel()) != p.count) {
        return Error{path + ": tensor " + name + " is missing or not F32 with " +
                     std::to_string(p.count) + " elements"};
      }
      std::memcpy(state.data() + p.offset, v->data, p.count * sizeof(float));
    }
    ZOC_CUDA(cudaMemcpy(device, state.data(), state.size() * sizeof(float), cudaMemcpyHostToDevice),
             "resume");
  }
  if constexpr (Trainer::kFP16) {  // the loss scale where the checkpointed run left it
    trainer_kernels::LossScale ls;
    auto tracker = number(*f, "loss_scale_growth_tracker");
    if (!tracker) return tracker.error();
    auto skipped = number(*f, "loss_scale_skipped");
    if (!skipped) return skipped.error();
    const std::string scale = checkpoint_meta(*f, "loss_scale");
    char* end = nullptr;
    ls.scale = std::strtof(scale.c_str(), &end);
    if (scale.empty() || *end != '\0' || !(ls.scale > 0.0f) || !std::isfinite(ls.scale) ||
        *tracker >= uint64_t(trainer_kernels::LossScale::kGrowthInterval)) {
      return Error{path + ": metadata 'loss_scale' (" + scale + ") or its growth tracker (" +
                   std::to_string(*tracker) + ") is not a loss scale's state"};
    }
    ls.growth_tracker = float(*tracker);
    ls.skipped = float(*skipped);
    ZOC_TRY(t.set_loss_scale(ls));
  }
  r.epochs_done = int(*epochs_done);
  r.steps_done = uint64_t(*steps_done);
  for (int64_t& c : r.counters) c -= int64_t(r.steps_done);  // write_checkpoint adds them back
  return r;
}

template <class Trainer>
Status write_checkpoint(const FitArgs& a, Trainer& t, int epochs_done, uint64_t steps_done,
                        const std::vector<int64_t>& counters_before) {
  std::vector<float> params(Trainer::kParamElements);
  ZOC_CUDA(
      cudaMemcpy(params.data(), t.params(), params.size() * sizeof(float), cudaMemcpyDeviceToHost),
      "checkpoint");
  const auto state = detail::optimizer_state(a, t);
  std::vector<std::vector<float>> host(state.size(), std::vector<float>(Trainer::kParamElements));
  for (size_t s = 0; s < state.size(); ++s) {
    ZOC_CUDA(cudaMemcpy(host[s].data(), state[s].second, host[s].size() * sizeof(float),
                        cudaMemcpyDeviceToHost),
             "checkpoint");
  }
  std::vector<st::TensorToWrite> w, o;
  std::vector<std::string> names;
  names.reserve(state.size() * Trainer::kNumParams);  // no reallocation: o points into it
  for (int i = 0; i < Trainer::kNumParams; ++i) {
    const auto& p = Trainer::kParamTable[i];
    const std::vector<int64_t> shape(p.shape, p.shape + p.rank);
    w.push_back({p.name, st::DType::F32, shape, params.data() + p.offset, p.count * sizeof(float)});
    for (size_t s = 0; p.trainable && s < state.size(); ++s) {
      names.push_back(state[s].first + p.name);
      o.push_back({names.back(), st::DType::F32, shape, host[s].data() + p.offset,
                   p.count * sizeof(float)});
    }
  }
  // num_batches_tracked: what the starting weights had plus one per training-mode forward.
  std::vector<int64_t> counts = counters_before;
  for (int64_t& c : counts) c += int64_t(steps_done);
  size_t k = 0;
  for (const char* const* c = Trainer::kCounterNames; *c; ++c, ++k) {
    w.push_back({*c, st::DType::I64, {}, &counts[k], sizeof(int64_t)});
  }
  const std::string meta_epochs = std::to_string(epochs_done);
  MetaList meta = {
      {"producer", "zoc trainer"},
      {"optimizer",
       a.optimizer == "adamw"
           ? "AdamW betas " + exact(a.beta1) + "," + exact(a.beta2) + " eps " + exact(a.eps) +
                 " weight_decay " + exact(a.weight_decay)
           : "SGD momentum " + exact(a.momentum) + " weight_decay " + exact(a.weight_decay)},
      {"optimizer_kind", a.optimizer},
      {"label_smoothing", exact(a.label_smoothing)},
      {"epochs_done", meta_epochs},
      {"steps_done", std::to_string(steps_done)},
      {"seed", std::to_string(a.seed)},
      {"batch", std::to_string(a.batch)},
      {"epochs", std::to_string(a.epochs)},
      {"schedule", a.schedule}};
  if constexpr (Trainer::kFP16) {  // the loss scale, as GradScaler's state_dict keeps it
    auto ls = t.loss_scale();
    if (!ls) return ls.error();
    meta.push_back({"loss_scale", exact(ls->scale)});
    meta.push_back({"loss_scale_growth_tracker", std::to_string(int64_t(ls->growth_tracker))});
    meta.push_back({"loss_scale_skipped", std::to_string(int64_t(ls->skipped))});
  }
  return write_checkpoint_pair(
      a.checkpoint, w,
      {{"format", "pt"}, {"producer", "zoc trainer"}, {"epochs_done", meta_epochs}}, o, meta);
}

}  // namespace detail

}  // namespace zoc
