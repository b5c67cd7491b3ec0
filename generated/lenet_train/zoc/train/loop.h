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
//             it) and, beside it, the optimizer state (momenta, steps, epoch) that --resume reads,
//             committed so that a kill at any moment leaves a consistent pair (checkpoint.h);
//   processes with WORLD_SIZE > 1 (zoc/train/dist.h): each takes its interleaved shard of every
//             global batch of --batch, gradients are averaged with NCCL in buckets overlapping
//             the backward pass, the test set is split between them and the metrics summed,
//             rank 0's BatchNorm statistics are the model's, and rank 0 logs and checkpoints.
//
// Errors name the file or option and the cause; nothing is trained until every input is valid.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"
#include "zoc/train/datasets.h"
#include "zoc/train/dist.h"
#include "zoc/train/fit.h"
#include "zoc/train/options.h"

namespace zoc {
namespace detail {

// The run's shape: the processes, each one's share of a global batch, the steps of an epoch.
struct FitShape {
  train::DistEnv env;
  int local = 0;  // samples per process and step: --batch / WORLD_SIZE
  int steps = 0;
  bool logs() const { return env.rank == 0; }  // rank 0 logs and checkpoints
};

template <class Trainer>
Expected<FitShape> fit_shape(const FitArgs& a, const DataSplits& d, const train::DistEnv& env) {
  for (const data::ImageSet* set : {&d.train, &d.test}) {
    if (set->channels != Trainer::kInputC || set->height != Trainer::kInputH ||
        set->width != Trainer::kInputW) {
      return Error{a.data + ": " + a.dataset + " images are " + std::to_string(set->channels) +
                   "x" + std::to_string(set->height) + "x" + std::to_string(set->width) +
                   ", the model takes " + std::to_string(Trainer::kInputC) + "x" +
                   std::to_string(Trainer::kInputH) + "x" + std::to_string(Trainer::kInputW)};
    }
  }
  FitShape s;
  s.env = env;
  if (a.batch % env.world != 0 || a.batch / env.world < 2) {
    return Error{"--batch " + std::to_string(a.batch) + " over WORLD_SIZE " +
                 std::to_string(env.world) +
                 ": each process needs an equal share of at least 2 "
                 "samples (training-mode batch norm)"};
  }
  s.local = a.batch / env.world;
  s.steps = int(d.train.count / a.batch);  // the last partial batch is dropped
  if (a.max_steps > 0) s.steps = std::min(s.steps, a.max_steps);
  if (s.steps < 1) {
    return Error{a.data + ": " + std::to_string(d.train.count) +
                 " training images make no batch "
                 "of " +
                 std::to_string(a.batch)};
  }
  return s;
}

struct FitLogs {
  std::FILE* csv = nullptr;
  std::FILE* json = nullptr;
  ~FitLogs() {
    if (csv) std::fclose(csv);
    if (json) std::fclose(json);
  }
};

inline Status open_logs(const FitArgs& a, bool resumed, FitLogs& logs) {
  if (!a.csv.empty()) {
    logs.csv = std::fopen(a.csv.c_str(), resumed ? "a" : "w");
    if (!logs.csv) return Error{a.csv + ": cannot open for writing"};
    std::fseek(logs.csv, 0, SEEK_END);
    if (std::ftell(logs.csv) == 0) {  // a new file (a resumed run may append to the first run's)
      std::fprintf(logs.csv,
                   "impl,model,dataset,seed,epoch,train_loss,train_acc,test_acc,step_ms,"
                   "epoch_s,peak_mem_mb,world_size,img_per_s\n");
    }
  }
  if (!a.json.empty()) {
    logs.json = std::fopen(a.json.c_str(), resumed ? "a" : "w");
    if (!logs.json) return Error{a.json + ": cannot open for writing"};
  }
  return Status::success();
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
  int64_t test_batches = 0;              // of FitShape::local samples
  double* sums = nullptr;                // [train loss]
  unsigned long long* counts = nullptr;  // [train correct, test correct]
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

// Streams, the two input slots, step events, metrics, and the test set on the device: normalized
// once in file order, padded to whole batches of `local` (padding rows are zeros, evaluated but
// never counted: evaluation treats every sample on its own).
template <class Trainer>
Status allocate(FitResources& r, const DataSplits& d, const FitShape& s) {
  constexpr int64_t kSample = int64_t{Trainer::kInputC} * Trainer::kInputH * Trainer::kInputW;
  ZOC_CUDA(cudaStreamCreateWithFlags(&r.compute, cudaStreamNonBlocking), "streams");
  ZOC_CUDA(cudaStreamCreateWithFlags(&r.copy, cudaStreamNonBlocking), "streams");
  const size_t bx = size_t(s.local) * kSample;
  for (int k = 0; k < 2; ++k) {
    ZOC_CUDA(cudaEventCreateWithFlags(&r.copied[k], cudaEventDisableTiming), "events");
    ZOC_CUDA(cudaEventCreateWithFlags(&r.consumed[k], cudaEventDisableTiming), "events");
    ZOC_CUDA(cudaMallocHost(&r.host_x[k], bx * sizeof(float)), "pinned buffers");
    ZOC_CUDA(cudaMallocHost(&r.host_y[k], size_t(s.local) * sizeof(int32_t)), "pinned buffers");
    ZOC_TRY(r.device(&r.dev_x[k], bx, "input buffers"));
    ZOC_TRY(r.device(&r.dev_y[k], size_t(s.local), "input buffers"));
  }
  r.starts.resize(size_t(s.steps));
  r.stops.resize(size_t(s.steps));
  for (int k = 0; k < s.steps; ++k) {
    ZOC_CUDA(cudaEventCreate(&r.starts[size_t(k)]), "events");
    ZOC_CUDA(cudaEventCreate(&r.stops[size_t(k)]), "events");
  }
  r.test_batches = (d.test.count + s.local - 1) / s.local;
  const size_t test_rows = size_t(r.test_batches) * size_t(s.local);
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
  ZOC_TRY(r.device(&r.sums, 1, "metrics"));
  ZOC_TRY(r.device(&r.counts, 2, "metrics"));
  return Status::success();
}

// The step of slot `s` (its input buffer's fixed address) as one CUDA graph.
template <class Trainer>
Status capture_step(Trainer& t, FitResources& r, const FitShape& fs, int s) {
  cudaGraph_t graph = nullptr;
  ZOC_CUDA(cudaStreamBeginCapture(r.compute, cudaStreamCaptureModeThreadLocal), "capture");
  Status st = t.step(r.dev_x[s], r.dev_y[s], fs.local, r.compute);
  if (st.ok()) st = t.metrics(r.dev_y[s], fs.local, true, r.sums, r.counts, r.compute);
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
}

// One epoch's steps; `ms` gets each step's time (wait-for-input + step + SGD), `last_lr` the
// rate of the last step.
template <class Trainer>
Status train_epoch(Trainer& t, FitResources& r, const FitArgs& a, const DataSplits& d,
                   const FitShape& fs, int epoch, bool& use_graph, double& last_lr,
                   std::vector<float>& ms) {
  constexpr int64_t kSample = int64_t{Trainer::kInputC} * Trainer::kInputH * Trainer::kInputW;
  const size_t bx = size_t(fs.local) * kSample;
  const std::vector<int64_t> global = data::shuffled_order(d.train.count, a.seed, uint64_t(epoch));
  const std::vector<int64_t> order =
      fs.env.distributed() ? train::rank_order(global, fs.env.rank, fs.env.world) : global;
  auto stage = [&](int k) -> Status {  // this process's share of batch k into slot k % 2
    const int s = k % 2;
    ZOC_CUDA(cudaEventSynchronize(r.copied[s]), "input");  // the pinned slot's last copy
    data::normalized_batch(d.train, order, int64_t(k) * fs.local, fs.local, d.mean.data(),
                           d.stddev.data(), r.host_x[s], r.host_y[s]);
    ZOC_CUDA(cudaStreamWaitEvent(r.copy, r.consumed[s], 0), "input");
    ZOC_CUDA(cudaMemcpyAsync(r.dev_x[s], r.host_x[s], bx * sizeof(float), cudaMemcpyHostToDevice,
                             r.copy),
             "input");
    ZOC_CUDA(cudaMemcpyAsync(r.dev_y[s], r.host_y[s], size_t(fs.local) * sizeof(int32_t),
                             cudaMemcpyHostToDevice, r.copy),
             "input");
    ZOC_CUDA(cudaEventRecord(r.copied[s], r.copy), "input");
    return Status::success();
  };
  ZOC_TRY(stage(0));
  for (int k = 0; k < fs.steps; ++k) {
    const int s = k % 2;
    last_lr = scheduled_lr(a.schedule, a.lr, epoch, a.epochs, k, fs.steps);
    if (t.fused_sgd()) {  // the step runs SGD itself, at this rate (a capture needs it set)
      ZOC_TRY(t.set_sgd(float(last_lr), float(a.momentum), float(a.weight_decay), r.compute));
    }
    if (use_graph && !r.graphs[s]) {
      const Status c = capture_step(t, r, fs, s);
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
      ZOC_TRY(t.step(r.dev_x[s], r.dev_y[s], fs.local, r.compute));
      ZOC_TRY(t.metrics(r.dev_y[s], fs.local, true, r.sums, r.counts, r.compute));
    }
    ZOC_CUDA(cudaEventRecord(r.consumed[s], r.compute), "step");
    const uint64_t step = uint64_t(epoch) * uint64_t(fs.steps) + uint64_t(k) + 1;  // from 1
    if (!t.fused_sgd()) ZOC_TRY(optimize(t, a, last_lr, step, r.compute));
    ZOC_CUDA(cudaEventRecord(r.stops[size_t(k)], r.compute), "step");
    if (k + 1 < fs.steps) ZOC_TRY(stage(k + 1));  // on the host while the GPU runs step k
  }
  ZOC_CUDA(cudaStreamSynchronize(r.compute), "epoch");
  ms.assign(size_t(fs.steps), 0.0f);
  for (int k = 0; k < fs.steps; ++k) {
    ZOC_CUDA(cudaEventElapsedTime(&ms[size_t(k)], r.starts[size_t(k)], r.stops[size_t(k)]),
             "timing");
  }
  return Status::success();
}

struct EpochMetrics {
  double train_loss = 0, train_acc = 0, test_acc = 0;
};

// Test accuracy with rank 0's BatchNorm statistics over this process's share of the test
// batches (b = rank, rank + W, ...), and the epoch's counters summed over the processes.
template <class Trainer>
Expected<EpochMetrics> evaluate_epoch(Trainer& t, FitResources& r, const DataSplits& d,
                                      const FitShape& fs, train::GradSync* sync) {
  constexpr int64_t kSample = int64_t{Trainer::kInputC} * Trainer::kInputH * Trainer::kInputW;
  constexpr size_t kStats = Trainer::kParamElements - Trainer::kTrainableElements;
  if (sync && kStats > 0) {
    ZOC_TRY(sync->broadcast(t.params() + Trainer::kTrainableElements, kStats, r.compute));
  }
  const int world = fs.env.world;
  for (int64_t b = fs.env.rank; b < r.test_batches; b += world) {
    const int valid = int(std::min<int64_t>(fs.local, d.test.count - b * fs.local));
    ZOC_TRY(t.evaluate(r.test_x + size_t(b) * size_t(fs.local) * kSample, fs.local, r.compute));
    ZOC_TRY(t.metrics(r.test_y + size_t(b) * size_t(fs.local), valid, false, r.sums, r.counts + 1,
                      r.compute));
  }
  if (sync) {
    ZOC_TRY(sync->sum(r.sums, 1, r.compute));
    ZOC_TRY(sync->sum(r.counts, 2, r.compute));
  }
  double loss_sum = 0;
  unsigned long long counts[2] = {0, 0};
  ZOC_CUDA(cudaMemcpyAsync(&loss_sum, r.sums, sizeof loss_sum, cudaMemcpyDeviceToHost, r.compute),
           "metrics");
  ZOC_CUDA(cudaMemcpyAsync(counts, r.counts, sizeof counts, cudaMemcpyDeviceToHost, r.compute),
           "metrics");
  ZOC_CUDA(cudaStreamSynchronize(r.compute), "metrics");
  EpochMetrics m;
  m.train_loss = loss_sum / (double(fs.steps) * world);  // each step's loss is its shard's mean
  m.train_acc = double(counts[0]) / (double(fs.steps) * fs.local * world);
  m.test_acc = double(counts[1]) / double(d.test.count);
  return m;
}

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

// Everything one epoch's log line says.
struct EpochLog {
  int epoch = 0, steps = 0, world = 1;
  EpochMetrics m;
  double median_ms = 0, mean_ms = 0, epoch_s = 0, peak_mb = 0, used_mb = 0, lr = 0, img_per_s = 0;
  // The trainer alone: weights, gradients, optimizer state, arena, workspace.
  double trainer_mb = 0;
  bool graph = true;
  std::string loss_scale;  // fp16: `, "loss_scale": S, "skipped_steps": K` for the JSON line
};

template <class Trainer>
void log_epoch(const FitArgs& a, const EpochLog& e, FitLogs& logs) {
  if (logs.csv) {
    std::fprintf(logs.csv, "zoc,%s,%s,%llu,%d,%.6f,%.6f,%.6f,%.4f,%.3f,%.1f,%d,%.1f\n",
                 Trainer::kModelName, a.dataset.c_str(), (unsigned long long)a.seed, e.epoch,
                 e.m.train_loss, e.m.train_acc, e.m.test_acc, e.median_ms, e.epoch_s, e.peak_mb,
                 e.world, e.img_per_s);
    std::fflush(logs.csv);
  }
  char line[1400];
  std::snprintf(line, sizeof line,
                "{\"impl\": \"zoc\", \"model\": \"%s\", \"dataset\": \"%s\", \"seed\": %llu, "
                "\"epoch\": %d, \"train_loss\": %.6f, \"train_acc\": %.6f, \"test_acc\": %.6f, "
                "\"step_ms\": %.4f, \"step_ms_mean\": %.4f, \"epoch_s\": %.3f, "
                "\"peak_mem_mb\": %.1f, \"trainer_mem_mb\": %.1f, \"device_used_mb\": %.1f, "
                "\"steps\": %d, "
                "\"world_size\": %d, \"img_per_s\": %.1f, \"lr_last\": %.9g, \"graph\": %s, "
                "\"benchmark\": %s, \"deterministic\": %s, \"precision\": \"%s\"%s, "
                "\"device\": \"cuda\"}",
                Trainer::kModelName, json_escape(a.dataset).c_str(), (unsigned long long)a.seed,
                e.epoch, e.m.train_loss, e.m.train_acc, e.m.test_acc, e.median_ms, e.mean_ms,
                e.epoch_s, e.peak_mb, e.trainer_mb, e.used_mb, e.steps, e.world, e.img_per_s, e.lr,
                e.graph ? "true" : "false", a.benchmark ? "true" : "false",
                a.deterministic ? "true" : "false",
                Trainer::kBF16   ? "bf16"
                : Trainer::kFP16 ? "fp16"
                : Trainer::kTF32 ? "tf32"
                                 : "fp32",
                e.loss_scale.c_str());
  std::printf("%s\n", line);
  std::fflush(stdout);
  if (logs.json) {
    std::fprintf(logs.json, "%s\n", line);
    std::fflush(logs.json);
  }
}

inline double median_of(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return n % 2 ? ms[n / 2] : 0.5 * (double(ms[n / 2 - 1]) + ms[n / 2]);
}

}  // namespace detail

template <class Trainer>
Status run_fit(const FitArgs& a) {
  auto env = train::dist_env();
  if (!env) return env.error();
  if (env->distributed()) ZOC_CUDA(cudaSetDevice(env->local_rank), "LOCAL_RANK's device");
  auto splits = load_data(a, Trainer::kClasses);
  if (!splits) return splits.error();
  const DataSplits& d = *splits;
  auto shape = detail::fit_shape<Trainer>(a, d, *env);
  if (!shape) return shape.error();
  const detail::FitShape& fs = *shape;
  // The trainer: from --resume's weights, --weights, or the model's seeded initialization.
  const std::string& start = !a.resume.empty() ? a.resume : a.weights;
  auto made = Trainer::create(start, a.seed, fs.local, a.benchmark, a.deterministic);
  if (!made) return made.error();
  Trainer& t = **made;
  t.set_dropout(a.dropout);
  t.set_label_smoothing(float(a.label_smoothing));
  ZOC_TRY(apply_loss_scale(t, a));  // (--resume then restores the checkpoint's)
  if (a.optimizer == "adamw") ZOC_TRY(t.use_adamw());
  if (a.optimizer == "sgd" && a.fused_sgd && !fs.env.distributed() && !Trainer::kFP16 &&
      Trainer::kGradWindowElements > 0) {
    ZOC_TRY(t.use_fused_sgd());  // no buffer of every gradient: the peak drops by the weights'
  }
  std::unique_ptr<train::GradSync> sync;
  if (fs.env.distributed()) {
    auto s = train::GradSync::create(fs.env, Trainer::kBuckets);
    if (!s) return s.error();
    sync = std::move(*s);
    t.set_grad_sync(sync.get());
    // Each process draws its own dropout masks (rank 0 keeps the single-process ones).
    t.set_dropout_seed(a.seed + uint64_t(fs.env.rank) * 0x9E3779B97F4A7C15ull);
  }
  detail::Resumed resumed;
  if (!a.resume.empty()) {
    auto r = detail::read_resume(a, t, fs.steps);
    if (!r) return r.error();
    resumed = *r;
    ZOC_TRY(t.set_steps(resumed.steps_done));
  } else {
    auto counters = read_counters<Trainer>(a.weights);
    if (!counters) return counters.error();
    resumed.counters = std::move(*counters);
  }
  detail::FitLogs logs;
  if (fs.logs()) ZOC_TRY(detail::open_logs(a, resumed.epochs_done > 0, logs));
  detail::FitResources r;
  ZOC_TRY(detail::allocate<Trainer>(r, d, fs));
  const double peak_mb = double(t.device_bytes() + r.device_bytes) / (1 << 20);
  // Everything above (weights, momenta, counters, the test set) went through the legacy default
  // stream or blocking copies; the loop's streams do not wait for it, so wait here once.
  ZOC_CUDA(cudaDeviceSynchronize(), "setup");
  if (sync) {  // every replica starts from rank 0's weights, as DDP's constructor broadcasts them
    ZOC_TRY(sync->broadcast(t.params(), Trainer::kParamElements, r.compute));
  }
  bool use_graph = a.graph;
  uint64_t steps_done = resumed.steps_done;
  for (int epoch = resumed.epochs_done; epoch < a.epochs; ++epoch) {
    ZOC_CUDA(cudaMemsetAsync(r.sums, 0, sizeof(double), r.compute), "metrics");
    ZOC_CUDA(cudaMemsetAsync(r.counts, 0, 2 * sizeof(unsigned long long), r.compute), "metrics");
    ZOC_CUDA(cudaStreamSynchronize(r.compute), "metrics");
    const auto t0 = std::chrono::steady_clock::now();
    detail::EpochLog e;
    std::vector<float> ms;
    ZOC_TRY(detail::train_epoch(t, r, a, d, fs, epoch, use_graph, e.lr, ms));
    e.epoch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    steps_done += uint64_t(fs.steps);
    auto m = detail::evaluate_epoch(t, r, d, fs, sync.get());
    if (!m) return m.error();
    if (!std::isfinite(m->train_loss)) {
      return Error{"epoch " + std::to_string(epoch + 1) +
                   ": the training loss is not finite "
                   "(diverged; try a lower --lr)"};
    }
    size_t free_b = 0, total_b = 0;
    ZOC_CUDA(cudaMemGetInfo(&free_b, &total_b), "memory");
    e.epoch = epoch + 1;
    e.steps = fs.steps;
    e.world = fs.env.world;
    e.m = *m;
    e.median_ms = detail::median_of(ms);
    for (float x : ms) e.mean_ms += double(x) / double(ms.size());
    e.img_per_s = e.median_ms > 0 ? 1000.0 * a.batch / e.median_ms : 0;
    e.peak_mb = peak_mb;
    e.trainer_mb = double(t.device_bytes()) / (1 << 20);
    e.used_mb = double(total_b - free_b) / (1 << 20);
    e.graph = use_graph;
    if constexpr (Trainer::kFP16) {  // where dynamic loss scaling stands, and what it skipped
      auto ls = t.loss_scale();
      if (!ls) return ls.error();
      e.loss_scale = ", \"loss_scale\": " + detail::exact(ls->scale) +
                     ", \"skipped_steps\": " + std::to_string(int64_t(ls->skipped));
    }
    if (!fs.logs()) continue;
    detail::log_epoch<Trainer>(a, e, logs);
    if (!a.checkpoint.empty()) {
      ZOC_TRY(detail::write_checkpoint(a, t, epoch + 1, steps_done, resumed.counters));
    }
  }
  return Status::success();
}

}  // namespace zoc
