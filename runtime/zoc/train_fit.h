// The epoch loop of generated trainers (issue 8): `<model>_train --data DIR ...` trains on an
// image data set under the conventions of tools/train/README.md, so that its per-epoch CSV lines
// up with the PyTorch eager and LibTorch baselines row for row:
//
//   data      MNIST idx (fashion-mnist, mnist; raw, `gunzip -k` the .gz files first) or CIFAR-10
//             binary (cifar10), read and validated completely before anything runs;
//             (pixel / 255 - mean[c]) / std[c] with stated per-data-set constants (--mean/--std);
//   order     epoch e visits zoc::data::shuffled_order(count, seed, e) in consecutive batches,
//             the last partial batch dropped;
//   step      forward, loss, backward and the metrics captured once per input buffer as a CUDA
//             graph (--no-graph: launched one by one), then SGD as one kernel with the step's rate;
//   pipeline  the host normalizes batch k+1 into one of two pinned buffers and copies it on a
//             second stream while the GPU runs step k; the compute stream waits on the copy's
//             event, the copy waits until the step that last read that device buffer is done;
//   schedule  constant, step (x0.1 from epoch ceil(E/2) and again from ceil(3E/4)) or cosine
//             (per step: lr (1 + cos(pi t / T)) / 2), SGD with momentum and weight decay;
//   log       per epoch: train loss and accuracy (summed on the device, so no step waits for the
//             host), test accuracy in evaluation mode over every test image, the median step time
//             (CUDA events around wait-for-input + step + SGD), the epoch's wall time and memory:
//             one CSV row (the baselines' header) and one JSON line;
//   checkpoint after every epoch: the weights as a state_dict (PyTorch and zoc's inference load
//             it) and, beside it, the optimizer state (momenta, steps, epoch) that --resume reads.
//
// Errors name the file or option and the cause; nothing is trained until every input is valid.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "zoc/cuda_check.h"
#include "zoc/datasets.h"
#include "zoc/expected.h"
#include "zoc/safetensors.h"
#include "zoc/train_options.h"

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
    auto tr = data::read_idx(dir + "/train-images-idx3-ubyte", dir + "/train-labels-idx1-ubyte",
                             classes);
    if (!tr) return tr.error();
    auto te = data::read_idx(dir + "/t10k-images-idx3-ubyte", dir + "/t10k-labels-idx1-ubyte",
                             classes);
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
  if (!a.mean.empty()) d.mean = a.mean;
  if (!a.stddev.empty()) d.stddev = a.stddev;
  if (d.mean.size() != size_t(d.train.channels) || d.stddev.size() != size_t(d.train.channels)) {
    return Error{"--mean/--std: " + std::to_string(d.train.channels) + " value(s) needed, one per "
                 "channel of " + a.dataset};
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

namespace detail {

inline std::string meta_value(const st::File& f, const std::string& key) {
  for (const auto& kv : f.metadata()) {
    if (kv.first == key) return kv.second;
  }
  return "";
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
  auto weights = st::File::open(a.resume);
  if (!weights) return weights.error();
  r.counters = read_counters<Trainer>(*weights);
  const std::string path = optim_path_for(a.resume);
  auto f = st::File::open(path);
  if (!f) return Error{f.error().message + " (--resume needs the optimizer state written beside "
                       "the checkpoint)"};
  auto number = [&](const st::File& file, const char* key) -> Expected<unsigned long long> {
    const std::string v = meta_value(file, key);
    try {
      size_t used = 0;
      const unsigned long long x = std::stoull(v, &used);
      if (used == v.size() && !v.empty() && v[0] != '-') return x;
    } catch (const std::exception&) {
    }
    return Error{file.path() + ": metadata '" + key + "' is missing or not a non-negative integer "
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
  // The two files are written one after the other: a run cut off between them leaves a pair
  // from different epochs, which must not pass for one.
  auto weights_epochs = number(*weights, "epochs_done");
  if (!weights_epochs) return weights_epochs.error();
  if (*weights_epochs != *epochs_done) {
    return Error{a.resume + " holds the weights after epoch " + std::to_string(*weights_epochs) +
                 " but " + path + " the optimizer state after epoch " +
                 std::to_string(*epochs_done) + " (a run cut off while checkpointing?)"};
  }
  // The learning rate of every step follows from the schedule and (except constant) the
  // epoch count: a different one would not continue the same run.
  const std::string schedule = meta_value(*f, "schedule");
  if (schedule != a.schedule || (a.schedule != "constant" && *epochs != uint64_t(a.epochs))) {
    return Error{path + ": the checkpoint was trained with --schedule " + schedule +
                 " --epochs " + std::to_string(*epochs) + "; this run has --schedule " +
                 a.schedule + " --epochs " + std::to_string(a.epochs)};
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
  std::vector<float> momenta(Trainer::kParamElements, 0.0f);
  for (int i = 0; i < Trainer::kNumParams; ++i) {
    const auto& p = Trainer::kParamTable[i];
    if (!p.trainable) continue;
    const std::string name = std::string("momentum.") + p.name;
    const st::TensorView* v = f->find(name);
    if (!v || v->dtype != st::DType::F32 || size_t(v->numel()) != p.count) {
      return Error{path + ": tensor " + name + " is missing or not F32 with " +
                   std::to_string(p.count) + " elements"};
    }
    std::memcpy(momenta.data() + p.offset, v->data, p.count * sizeof(float));
  }
  ZOC_CUDA(cudaMemcpy(t.momenta(), momenta.data(), momenta.size() * sizeof(float),
                      cudaMemcpyHostToDevice),
           "resume");
  r.epochs_done = int(*epochs_done);
  r.steps_done = uint64_t(*steps_done);
  for (int64_t& c : r.counters) c -= int64_t(r.steps_done);  // write_checkpoint adds them back
  return r;
}

template <class Trainer>
Status write_checkpoint(const FitArgs& a, Trainer& t, int epochs_done, uint64_t steps_done,
                        const std::vector<int64_t>& counters_before) {
  std::vector<float> params(Trainer::kParamElements), momenta(Trainer::kParamElements);
  ZOC_CUDA(cudaMemcpy(params.data(), t.params(), params.size() * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "checkpoint");
  ZOC_CUDA(cudaMemcpy(momenta.data(), t.momenta(), momenta.size() * sizeof(float),
                      cudaMemcpyDeviceToHost),
           "checkpoint");
  std::vector<st::TensorToWrite> w, o;
  std::vector<std::string> names;
  names.reserve(Trainer::kNumParams);
  for (int i = 0; i < Trainer::kNumParams; ++i) {
    const auto& p = Trainer::kParamTable[i];
    const std::vector<int64_t> shape(p.shape, p.shape + p.rank);
    w.push_back({p.name, st::DType::F32, shape, params.data() + p.offset, p.count * sizeof(float)});
    if (p.trainable) {
      names.push_back(std::string("momentum.") + p.name);
      o.push_back({names.back(), st::DType::F32, shape, momenta.data() + p.offset,
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
  ZOC_TRY(st::write_file(a.checkpoint, w,
                         {{"format", "pt"}, {"producer", "zoc trainer"}, {"epochs_done", meta_epochs}}));
  return st::write_file(optim_path_for(a.checkpoint), o,
                        {{"producer", "zoc trainer"},
                         {"optimizer", "SGD momentum " + std::to_string(a.momentum) +
                                           " weight_decay " + std::to_string(a.weight_decay)},
                         {"epochs_done", meta_epochs},
                         {"steps_done", std::to_string(steps_done)},
                         {"seed", std::to_string(a.seed)},
                         {"batch", std::to_string(a.batch)},
                         {"epochs", std::to_string(a.epochs)},
                         {"schedule", a.schedule}});
}

// Device and host resources of the loop, released on every return.
struct FitResources {
  cudaStream_t compute = nullptr, copy = nullptr;
  cudaEvent_t copied[2] = {}, consumed[2] = {};
  cudaGraphExec_t graphs[2] = {};  // per input buffer
  std::vector<cudaEvent_t> starts, stops;
  float* host_x[2] = {};
  int32_t* host_y[2] = {};
  float* dev_x[2] = {};
  int32_t* dev_y[2] = {};
  float* test_x = nullptr;
  int32_t* test_y = nullptr;
  double* sums = nullptr;                 // [train loss]
  unsigned long long* counts = nullptr;   // [train correct, test correct]
  size_t device_bytes = 0;

  template <class T>
  Status device(T** p, size_t count, const char* what) {
    ZOC_CUDA(cudaMalloc(p, count * sizeof(T)), what);
    device_bytes += count * sizeof(T);
    return Status::success();
  }
  ~FitResources() {
    for (int s = 0; s < 2; ++s) {
      if (graphs[s]) cudaGraphExecDestroy(graphs[s]);
      if (copied[s]) cudaEventDestroy(copied[s]);
      if (consumed[s]) cudaEventDestroy(consumed[s]);
      cudaFreeHost(host_x[s]);
      cudaFreeHost(host_y[s]);
      cudaFree(dev_x[s]);
      cudaFree(dev_y[s]);
    }
    for (cudaEvent_t e : starts) cudaEventDestroy(e);
    for (cudaEvent_t e : stops) cudaEventDestroy(e);
    cudaFree(test_x);
    cudaFree(test_y);
    cudaFree(sums);
    cudaFree(counts);
    if (compute) cudaStreamDestroy(compute);
    if (copy) cudaStreamDestroy(copy);
  }
};

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

}  // namespace detail

template <class Trainer>
Status run_fit(const FitArgs& a) {
  constexpr int64_t kSample = int64_t{Trainer::kInputC} * Trainer::kInputH * Trainer::kInputW;
  auto splits = load_data(a, Trainer::kClasses);
  if (!splits) return splits.error();
  DataSplits& d = *splits;
  for (const data::ImageSet* set : {&d.train, &d.test}) {
    if (set->channels != Trainer::kInputC || set->height != Trainer::kInputH ||
        set->width != Trainer::kInputW) {
      return Error{a.data + ": " + a.dataset + " images are " + std::to_string(set->channels) +
                   "x" + std::to_string(set->height) + "x" + std::to_string(set->width) +
                   ", the model takes " + std::to_string(Trainer::kInputC) + "x" +
                   std::to_string(Trainer::kInputH) + "x" + std::to_string(Trainer::kInputW)};
    }
  }
  int steps = int(d.train.count / a.batch);  // the last partial batch is dropped
  if (a.max_steps > 0) steps = std::min(steps, a.max_steps);
  if (steps < 1) {
    return Error{a.data + ": " + std::to_string(d.train.count) + " training images make no batch "
                 "of " + std::to_string(a.batch)};
  }
  std::FILE* csv = nullptr;
  std::FILE* json = nullptr;
  struct Files {
    std::FILE*& csv;
    std::FILE*& json;
    ~Files() {
      if (csv) std::fclose(csv);
      if (json) std::fclose(json);
    }
  } files{csv, json};
  // The trainer: from --resume's weights, --weights, or the model's seeded initialization.
  const std::string& start = !a.resume.empty() ? a.resume : a.weights;
  auto made = Trainer::create(start, a.seed, a.batch, a.benchmark, a.deterministic);
  if (!made) return made.error();
  Trainer& t = **made;
  t.set_dropout(a.dropout);
  detail::Resumed resumed;
  if (!a.resume.empty()) {
    auto r = detail::read_resume(a, t, steps);
    if (!r) return r.error();
    resumed = *r;
    ZOC_TRY(t.set_steps(resumed.steps_done));
  } else {
    auto counters = read_counters<Trainer>(a.weights);
    if (!counters) return counters.error();
    resumed.counters = std::move(*counters);
  }
  if (!a.csv.empty()) {
    csv = std::fopen(a.csv.c_str(), resumed.epochs_done > 0 ? "a" : "w");
    if (!csv) return Error{a.csv + ": cannot open for writing"};
    std::fseek(csv, 0, SEEK_END);
    if (std::ftell(csv) == 0) {  // a new file (a resumed run may append to the first run's)
      std::fprintf(csv, "impl,model,dataset,seed,epoch,train_loss,train_acc,test_acc,step_ms,"
                        "epoch_s,peak_mem_mb\n");
    }
  }
  if (!a.json.empty()) {
    json = std::fopen(a.json.c_str(), resumed.epochs_done > 0 ? "a" : "w");
    if (!json) return Error{a.json + ": cannot open for writing"};
  }

  detail::FitResources r;
  ZOC_CUDA(cudaStreamCreateWithFlags(&r.compute, cudaStreamNonBlocking), "streams");
  ZOC_CUDA(cudaStreamCreateWithFlags(&r.copy, cudaStreamNonBlocking), "streams");
  const size_t bx = size_t(a.batch) * kSample;
  for (int s = 0; s < 2; ++s) {
    ZOC_CUDA(cudaEventCreateWithFlags(&r.copied[s], cudaEventDisableTiming), "events");
    ZOC_CUDA(cudaEventCreateWithFlags(&r.consumed[s], cudaEventDisableTiming), "events");
    ZOC_CUDA(cudaMallocHost(&r.host_x[s], bx * sizeof(float)), "pinned buffers");
    ZOC_CUDA(cudaMallocHost(&r.host_y[s], size_t(a.batch) * sizeof(int32_t)), "pinned buffers");
    ZOC_TRY(r.device(&r.dev_x[s], bx, "input buffers"));
    ZOC_TRY(r.device(&r.dev_y[s], size_t(a.batch), "input buffers"));
  }
  r.starts.resize(size_t(steps));
  r.stops.resize(size_t(steps));
  for (int k = 0; k < steps; ++k) {
    ZOC_CUDA(cudaEventCreate(&r.starts[size_t(k)]), "events");
    ZOC_CUDA(cudaEventCreate(&r.stops[size_t(k)]), "events");
  }
  // The test set, normalized once in file order, padded to whole batches (padding rows are
  // zeros, evaluated but never counted: evaluation treats every sample on its own).
  const int64_t test_batches = (d.test.count + a.batch - 1) / a.batch;
  const size_t test_rows = size_t(test_batches) * size_t(a.batch);
  {
    std::vector<float> x(test_rows * size_t(kSample), 0.0f);
    std::vector<int32_t> y(test_rows, 0);
    std::vector<int64_t> order(size_t(d.test.count));
    for (int64_t i = 0; i < d.test.count; ++i) order[size_t(i)] = i;
    data::normalized_batch(d.test, order, 0, int(d.test.count), d.mean.data(), d.stddev.data(),
                           x.data(), y.data());
    ZOC_TRY(r.device(&r.test_x, x.size(), "test set"));
    ZOC_TRY(r.device(&r.test_y, y.size(), "test set"));
    ZOC_CUDA(cudaMemcpy(r.test_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice),
             "test set");
    ZOC_CUDA(cudaMemcpy(r.test_y, y.data(), y.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
             "test set");
  }
  ZOC_TRY(r.device(&r.sums, 1, "metrics"));
  ZOC_TRY(r.device(&r.counts, 2, "metrics"));
  const double peak_mb = double(t.device_bytes() + r.device_bytes) / (1 << 20);

  // One graph per input buffer: the step reads its batch from the buffer's fixed address.
  bool use_graph = a.graph;
  auto capture = [&](int s) -> Status {
    cudaGraph_t graph = nullptr;
    ZOC_CUDA(cudaStreamBeginCapture(r.compute, cudaStreamCaptureModeThreadLocal), "capture");
    Status st = t.step(r.dev_x[s], r.dev_y[s], a.batch, r.compute);
    if (st.ok()) st = t.metrics(r.dev_y[s], a.batch, true, r.sums, r.counts, r.compute);
    const cudaError_t ended = cudaStreamEndCapture(r.compute, &graph);
    if (!st.ok() || ended != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      if (!st.ok()) return st;
      ZOC_CUDA(ended, "capture");
    }
    const cudaError_t made_graph = cudaGraphInstantiate(&r.graphs[s], graph, 0);
    cudaGraphDestroy(graph);
    ZOC_CUDA(made_graph, "capture");
    return Status::success();
  };

  // Everything above (weights, momenta, counters, the test set) went through the legacy default
  // stream or blocking copies; the loop's streams do not wait for it, so wait here once.
  ZOC_CUDA(cudaDeviceSynchronize(), "setup");
  uint64_t steps_done = resumed.steps_done;
  double lr = a.lr;
  for (int epoch = resumed.epochs_done; epoch < a.epochs; ++epoch) {
    const std::vector<int64_t> order = data::shuffled_order(d.train.count, a.seed, uint64_t(epoch));
    auto stage = [&](int k) -> Status {  // batch k of this epoch into slot k % 2
      const int s = k % 2;
      ZOC_CUDA(cudaEventSynchronize(r.copied[s]), "input");  // the pinned slot's last copy
      data::normalized_batch(d.train, order, int64_t(k) * a.batch, a.batch, d.mean.data(),
                             d.stddev.data(), r.host_x[s], r.host_y[s]);
      ZOC_CUDA(cudaStreamWaitEvent(r.copy, r.consumed[s], 0), "input");
      ZOC_CUDA(cudaMemcpyAsync(r.dev_x[s], r.host_x[s], bx * sizeof(float),
                               cudaMemcpyHostToDevice, r.copy),
               "input");
      ZOC_CUDA(cudaMemcpyAsync(r.dev_y[s], r.host_y[s], size_t(a.batch) * sizeof(int32_t),
                               cudaMemcpyHostToDevice, r.copy),
               "input");
      ZOC_CUDA(cudaEventRecord(r.copied[s], r.copy), "input");
      return Status::success();
    };
    ZOC_CUDA(cudaMemsetAsync(r.sums, 0, sizeof(double), r.compute), "metrics");
    ZOC_CUDA(cudaMemsetAsync(r.counts, 0, 2 * sizeof(unsigned long long), r.compute), "metrics");
    ZOC_CUDA(cudaStreamSynchronize(r.compute), "metrics");
    const auto t0 = std::chrono::steady_clock::now();
    ZOC_TRY(stage(0));
    for (int k = 0; k < steps; ++k) {
      const int s = k % 2;
      lr = scheduled_lr(a.schedule, a.lr, epoch, a.epochs, k, steps);
      if (use_graph && !r.graphs[s]) {
        const Status c = capture(s);
        if (!c.ok()) {  // stated, never hidden: the run goes on without graphs
          std::fprintf(stderr, "warning: CUDA graph capture failed (%s); stepping without graphs\n",
                       c.error().message.c_str());
          (void)cudaGetLastError();
          use_graph = false;
        }
      }
      ZOC_CUDA(cudaEventRecord(r.starts[size_t(k)], r.compute), "step");
      ZOC_CUDA(cudaStreamWaitEvent(r.compute, r.copied[s], 0), "step");
      if (use_graph) {
        ZOC_CUDA(cudaGraphLaunch(r.graphs[s], r.compute), "step");
      } else {
        ZOC_TRY(t.step(r.dev_x[s], r.dev_y[s], a.batch, r.compute));
        ZOC_TRY(t.metrics(r.dev_y[s], a.batch, true, r.sums, r.counts, r.compute));
      }
      ZOC_CUDA(cudaEventRecord(r.consumed[s], r.compute), "step");
      ZOC_TRY(t.sgd(float(lr), float(a.momentum), float(a.weight_decay), r.compute));
      ZOC_CUDA(cudaEventRecord(r.stops[size_t(k)], r.compute), "step");
      if (k + 1 < steps) ZOC_TRY(stage(k + 1));  // on the host while the GPU runs step k
    }
    ZOC_CUDA(cudaStreamSynchronize(r.compute), "epoch");
    const double epoch_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    steps_done += uint64_t(steps);
    std::vector<float> ms(static_cast<size_t>(steps));
    for (int k = 0; k < steps; ++k) {
      ZOC_CUDA(cudaEventElapsedTime(&ms[size_t(k)], r.starts[size_t(k)], r.stops[size_t(k)]),
               "timing");
    }
    double mean_ms = 0;
    for (float m : ms) mean_ms += m;
    mean_ms /= steps;
    std::sort(ms.begin(), ms.end());
    const double median_ms = steps % 2 ? ms[size_t(steps / 2)]
                                       : 0.5 * (double(ms[size_t(steps / 2 - 1)]) + ms[size_t(steps / 2)]);
    for (int64_t b = 0; b < test_batches; ++b) {
      const int valid = int(std::min<int64_t>(a.batch, d.test.count - b * a.batch));
      ZOC_TRY(t.evaluate(r.test_x + size_t(b) * bx, a.batch, r.compute));
      ZOC_TRY(t.metrics(r.test_y + size_t(b) * size_t(a.batch), valid, false, r.sums,
                        r.counts + 1, r.compute));
    }
    double loss_sum = 0;
    unsigned long long counts[2] = {0, 0};
    ZOC_CUDA(cudaMemcpyAsync(&loss_sum, r.sums, sizeof loss_sum, cudaMemcpyDeviceToHost, r.compute),
             "metrics");
    ZOC_CUDA(cudaMemcpyAsync(counts, r.counts, sizeof counts, cudaMemcpyDeviceToHost, r.compute),
             "metrics");
    ZOC_CUDA(cudaStreamSynchronize(r.compute), "metrics");
    const double train_loss = loss_sum / steps;
    const double train_acc = double(counts[0]) / (double(steps) * a.batch);
    const double test_acc = double(counts[1]) / double(d.test.count);
    if (!std::isfinite(train_loss)) {
      return Error{"epoch " + std::to_string(epoch + 1) + ": the training loss is not finite "
                   "(diverged; try a lower --lr)"};
    }
    size_t free_b = 0, total_b = 0;
    ZOC_CUDA(cudaMemGetInfo(&free_b, &total_b), "memory");
    if (csv) {
      std::fprintf(csv, "zoc,%s,%s,%llu,%d,%.6f,%.6f,%.6f,%.4f,%.3f,%.1f\n", Trainer::kModelName,
                   a.dataset.c_str(), (unsigned long long)a.seed, epoch + 1, train_loss, train_acc,
                   test_acc, median_ms, epoch_s, peak_mb);
      std::fflush(csv);
    }
    char line[1024];
    std::snprintf(line, sizeof line,
                  "{\"impl\": \"zoc\", \"model\": \"%s\", \"dataset\": \"%s\", \"seed\": %llu, "
                  "\"epoch\": %d, \"train_loss\": %.6f, \"train_acc\": %.6f, \"test_acc\": %.6f, "
                  "\"step_ms\": %.4f, \"step_ms_mean\": %.4f, \"epoch_s\": %.3f, "
                  "\"peak_mem_mb\": %.1f, \"device_used_mb\": %.1f, \"steps\": %d, "
                  "\"lr_last\": %.9g, \"graph\": %s, \"benchmark\": %s, \"deterministic\": %s, "
                  "\"device\": \"cuda\"}",
                  Trainer::kModelName, detail::json_escape(a.dataset).c_str(),
                  (unsigned long long)a.seed, epoch + 1, train_loss, train_acc, test_acc,
                  median_ms, mean_ms, epoch_s, peak_mb, double(total_b - free_b) / (1 << 20),
                  steps, lr, use_graph ? "true" : "false", a.benchmark ? "true" : "false",
                  a.deterministic ? "true" : "false");
    std::printf("%s\n", line);
    std::fflush(stdout);
    if (json) {
      std::fprintf(json, "%s\n", line);
      std::fflush(json);
    }
    if (!a.checkpoint.empty()) {
      ZOC_TRY(detail::write_checkpoint(a, t, epoch + 1, steps_done, resumed.counters));
    }
  }
  return Status::success();
}

}  // namespace zoc
