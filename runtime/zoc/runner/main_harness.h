// The command-line driver shared by every generated model's main.cpp.
//
// Generated code is a library: it returns errors and never prints. Something still has to load
// an input, run the model, prove the output is sane, and measure it in the same way for every
// model and precision, and that is this header, the only code in a generated folder that prints
// or chooses an exit code (0 ok, 1 the model or the GPU failed, 2 bad command line). It checks
// correctness before speed: the output buffer is poisoned with NaN before each of two
// correctness runs, every value must come back finite, and the two runs must agree bit for bit
// (a difference means a race or an unwritten element; it is reported as a warning because it
// is not a wrong answer by itself). Then it times `iters` forwards after `warmup`, each with its
// own CUDA events, and prints the median and tails. Hand-written argument parsing keeps the
// folder free of dependencies. The model class is a template parameter; see run_main.
//
// The benchmark harness (tools/harness) needs more than latency, measured where only this
// process can measure it, so the JSON also holds: every iteration's time, the host CPU time
// spent inside forward() (the enqueue, not the wait: CLOCK_THREAD_CPUTIME_ID around the call),
// device memory in use from cudaMemGetInfo, the wall-clock window of the timed loop (so that an
// outside NVML sampler can attribute its samples), and with --h2d-reps the time of copying the
// input batch to the device from pageable and from pinned memory. --batches sweeps several
// batch sizes in one process, creating the model afresh for each (max batch = that batch, so
// its memory is what that batch needs) and rewriting the JSON after every point, so a sweep cut
// short keeps what it measured; --tile repeats the --input samples to fill larger batches;
// --max-time-ms bounds the timed loop (and the warm-up) for large batches.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "zoc/core/device.h"
#include "zoc/core/expected.h"
#include "zoc/runner/harness_support.h"
#include "zoc/io/npy.h"
#include "zoc/cudnn/plan_file.h"
#include "zoc/core/timing.h"

namespace zoc {
namespace harness {

// The input batch on the host: read from --input (tiled with --tile), or seeded random.
// *distinct receives how many of its samples are distinct (the file's, or the batch).
template <class Model>
Status load_input(const Args& args, int* batch, std::vector<float>* input, std::string* source,
                  int* distinct = nullptr) {
  const int64_t chw = int64_t{Model::kInputC} * Model::kInputH * Model::kInputW;
  if (args.batch_given && args.batch * chw > (int64_t{1} << 32)) {  // 16 GiB of fp32
    return Error{"--batch " + std::to_string(args.batch) + " would need " +
                 detail::bytes_text(static_cast<size_t>(args.batch * chw) * 4) + " of input"};
  }
  if (args.input.empty()) {
    *batch = args.batch;
    *input = standard_normal(args.seed, static_cast<size_t>(*batch) * static_cast<size_t>(chw));
    *source = "seeded N(0,1), seed " + std::to_string(args.seed);
    if (distinct) *distinct = *batch;
    return Status();
  }
  std::vector<int64_t> shape;
  auto data = npy::read_float32(args.input, &shape);
  if (!data.ok()) return data.error();
  const std::vector<int64_t> want = {Model::kInputC, Model::kInputH, Model::kInputW};
  if (shape.size() != 4 || !std::equal(want.begin(), want.end(), shape.begin() + 1) ||
      shape[0] < 1) {
    return Error{args.input + ": shape " + st::detail::shape_string(shape) +
                 " does not match the model's input [N, " + std::to_string(Model::kInputC) + ", " +
                 std::to_string(Model::kInputH) + ", " + std::to_string(Model::kInputW) +
                 "] with N >= 1"};
  }
  if (args.batch_given && args.batch > shape[0] && !args.tile) {
    return Error{"--batch " + std::to_string(args.batch) + " but " + args.input + " holds only " +
                 std::to_string(shape[0]) + " samples (--tile repeats them)"};
  }
  *batch = args.batch_given ? args.batch : static_cast<int>(std::min<int64_t>(shape[0], kMaxBatch));
  const int file_samples = static_cast<int>(std::min<int64_t>(shape[0], kMaxBatch));
  if (distinct) *distinct = std::min(*batch, file_samples);
  if (*batch > file_samples) {
    *input = tile_samples(*data, static_cast<size_t>(file_samples), *batch,
                          static_cast<size_t>(chw));
    *source = args.input + " (" + std::to_string(file_samples) + " samples tiled)";
    return Status();
  }
  *input = std::move(*data);
  input->resize(static_cast<size_t>(*batch) * static_cast<size_t>(chw));  // first `batch` samples
  *source = args.input;
  return Status();
}

// A copy ordered on the model's stream, complete on return. Plain cudaMemcpy would be ordered on
// the legacy default stream, which a non-blocking stream does not wait for.
inline Status copy(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                   const char* what) {
  if (cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
      e != cudaSuccess) {
    return cuda_error(what, e);
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) return cuda_error(what, e);
  return Status();
}

// Runs forward into a poisoned output buffer and copies the result back.
template <class Model>
Status checked_forward(Model& model, const float* input, DeviceBuffer& output, int batch,
                       cudaStream_t stream, std::vector<float>* host) {
  if (cudaError_t e = cudaMemsetAsync(output.get(), 0xFF, output.size(), stream);
      e != cudaSuccess) {
    return cuda_error("cudaMemsetAsync(output poison)", e);
  }
  Status s = model.forward(input, output.as<float>(), batch, stream);
  if (!s.ok()) return Error{"forward: " + s.error().message};
  host->resize(output.size() / sizeof(float));
  return copy(host->data(), output.get(), output.size(), stream, "copying the output back");
}

// Seconds since the Unix epoch: the clock an outside sampler (NVML in tools/harness) also reads.
inline double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// CPU time this thread has used, microseconds (0 if the clock is unavailable).
inline double thread_cpu_us() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

inline double micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// Device memory in use on this GPU by every process (total - free), or 0 if unknown.
inline size_t device_used_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return total_bytes - free_bytes;
}

// Per-forward measurements of the timed loop.
struct TimedRun {
  std::vector<float> ms;            // CUDA events around each forward
  std::vector<float> host_cpu_us;   // thread CPU time inside forward() (the enqueue)
  std::vector<float> host_wall_us;  // wall time inside forward()
  double t_start = 0, t_end = 0;    // epoch seconds around the loop
};

// Times up to `iters` forwards after up to `warmup`, one event pair each. With max_time_ms > 0
// the loop stops once that much GPU time is measured (after at least 5 forwards, or `iters` if
// fewer), and warm-up once it has taken half of it.
template <class Model>
Expected<TimedRun> time_forward(Model& model, const float* input, float* output, int batch,
                                int warmup, int iters, int max_time_ms, cudaStream_t stream) {
  const auto warm0 = std::chrono::steady_clock::now();
  for (int i = 0; i < warmup; ++i) {
    Status s = model.forward(input, output, batch, stream);
    if (!s.ok()) return Error{"forward (warm-up " + std::to_string(i) + "): " + s.error().message};
    if (max_time_ms > 0) {
      if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
        return cuda_error("cudaStreamSynchronize in warm-up", e);
      }
      if (micros_since(warm0) >= 500.0 * max_time_ms) break;
    }
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return cuda_error("cudaStreamSynchronize after warm-up", e);
  }
  TimedRun run;
  run.ms.reserve(static_cast<size_t>(iters));
  const int floor_iters = std::min(iters, 5);
  double measured_ms = 0;
  EventTimer timer;
  run.t_start = epoch_seconds();
  for (int i = 0; i < iters; ++i) {
    if (max_time_ms > 0 && i >= floor_iters && measured_ms >= max_time_ms) break;
    if (Status s = timer.start(stream); !s.ok()) return s.error();
    const double cpu0 = thread_cpu_us();
    const auto wall0 = std::chrono::steady_clock::now();
    Status s = model.forward(input, output, batch, stream);
    const double wall_us = micros_since(wall0);
    const double cpu_us = thread_cpu_us() - cpu0;
    if (!s.ok()) return Error{"forward (timed " + std::to_string(i) + "): " + s.error().message};
    auto t = timer.stop_ms(stream);
    if (!t.ok()) return t.error();
    run.ms.push_back(*t);
    run.host_cpu_us.push_back(static_cast<float>(cpu_us));
    run.host_wall_us.push_back(static_cast<float>(wall_us));
    measured_ms += *t;
  }
  run.t_end = epoch_seconds();
  return run;
}

// Median times of copying `bytes` of input to the device from pageable memory (`host`) and
// from a pinned copy of it, each after one untimed copy.
struct CopyTimes {
  size_t bytes = 0;
  int reps = 0;
  float pageable_ms = 0, pinned_ms = 0;
};

inline Expected<CopyTimes> time_h2d(const float* host, size_t bytes, void* device, int reps,
                                    cudaStream_t stream) {
  CopyTimes times;
  times.bytes = bytes;
  times.reps = reps;
  if (reps <= 0 || bytes == 0) return times;
  void* pinned = nullptr;
  if (cudaError_t e = cudaMallocHost(&pinned, bytes); e != cudaSuccess) {
    return cuda_error("cudaMallocHost (pinned input for the copy timing)", e);
  }
  std::memcpy(pinned, host, bytes);
  std::vector<float> pageable_ms, pinned_ms;
  EventTimer timer;
  auto copy_once = [&](const void* src, std::vector<float>* out) -> Status {
    if (Status s = timer.start(stream); !s.ok()) return s;
    if (cudaError_t e = cudaMemcpyAsync(device, src, bytes, cudaMemcpyHostToDevice, stream);
        e != cudaSuccess) {
      return cuda_error("cudaMemcpyAsync (input copy timing)", e);
    }
    auto ms = timer.stop_ms(stream);
    if (!ms.ok()) return ms.error();
    if (out) out->push_back(*ms);
    return Status();
  };
  auto all_copies = [&]() -> Status {
    for (int i = 0; i <= reps; ++i) {  // the first of each is untimed
      if (Status s = copy_once(host, i > 0 ? &pageable_ms : nullptr); !s.ok()) return s;
      if (Status s = copy_once(pinned, i > 0 ? &pinned_ms : nullptr); !s.ok()) return s;
    }
    return Status();
  };
  Status status = all_copies();
  (void)cudaFreeHost(pinned);
  if (!status.ok()) return status.error();
  times.pageable_ms = summarize(pageable_ms).median;
  times.pinned_ms = summarize(pinned_ms).median;
  return times;
}

// Per-layer GPU times from Model::profile(): the median over `runs` profiled forwards.
struct LayerProfile {
  int runs = 0;
  std::vector<float> layer_ms;  // Model::kLayers medians
  float total_ms = 0;           // median first-to-last event time
};

template <class Model>
Expected<LayerProfile> profile_layers(Model& model, const float* input, float* output, int batch,
                                      int runs, cudaStream_t stream) {
  LayerProfile prof;
  prof.runs = runs;
  std::vector<std::vector<float>> per_layer(Model::kLayers);
  std::vector<float> totals, one(Model::kLayers);
  for (int r = 0; r <= runs; ++r) {  // the first profiled forward is untimed (captures, warms)
    float total = 0;
    Status s = model.profile(input, output, batch, stream, one.data(), &total);
    if (!s.ok()) return Error{"profile (run " + std::to_string(r) + "): " + s.error().message};
    if (r == 0) continue;
    for (int k = 0; k < Model::kLayers; ++k) per_layer[static_cast<size_t>(k)].push_back(one[k]);
    totals.push_back(total);
  }
  for (const std::vector<float>& times : per_layer) {
    prof.layer_ms.push_back(static_cast<float>(summarize(times).median));
  }
  prof.total_ms = static_cast<float>(summarize(totals).median);
  return prof;
}

// Everything one created model measured at one batch size.
struct PointData {
  int batch = 0, max_batch = 0;
  double create_ms = 0;
  bool deterministic = true;
  std::vector<float> first;  // the first forward's output, [batch, kOutputs]
  TimedRun timed;
  LatencyStats stats;
  CopyTimes h2d;
  LayerProfile profile;
  size_t used_before = 0, used_after = 0;  // device memory in use before create, after timing
  size_t arena = 0, workspace = 0, weights = 0;
  double t_point_start = 0;
};

// The model options every created model shares (--workspace-mb, --seed, --strict).
template <class Model>
typename CreateTraits<decltype(&Model::create)>::Options base_options(const Args& args) {
  typename CreateTraits<decltype(&Model::create)>::Options options;
  if (args.workspace_mb >= 0)
    options.workspace_limit = static_cast<size_t>(args.workspace_mb) << 20;
  options.seed = args.seed;
  options.strict = args.strict;
  return options;
}

// The input batch copied to the device, and room for `batch` rows of output.
struct DeviceIO {
  DeviceBuffer input, output;
};

template <class Model>
Expected<DeviceIO> upload(const std::vector<float>& input, int batch, cudaStream_t stream) {
  const size_t input_bytes = input.size() * sizeof(float);
  auto d_input = DeviceBuffer::allocate(input_bytes, "the harness's input");
  if (!d_input.ok()) return d_input.error();
  auto d_output = DeviceBuffer::allocate(
      static_cast<size_t>(batch) * static_cast<size_t>(Model::kOutputs) * sizeof(float),
      "the harness's output");
  if (!d_output.ok()) return d_output.error();
  if (Status r = copy(d_input->get(), input.data(), input_bytes, stream, "copying the input");
      !r.ok()) {
    return r.error();
  }
  return DeviceIO{std::move(*d_input), std::move(*d_output)};
}

// --tune: a model with cuDNN's heuristic choices times every candidate algorithm of every
// convolution at `batch` on `input`, and the fastest are merged into the plan file args.tune
// (its earlier choices are kept if it was made for this GPU, cuDNN and model).
template <class Model>
Status tune_point(const Args& args, int batch, int max_batch, const std::vector<float>& input,
                  cudaStream_t stream) {
  auto created = Model::create(args.weights, max_batch, base_options<Model>(args));
  if (!created.ok()) return created.error();
  std::unique_ptr<Model> model = std::move(created).value();
  Expected<DeviceIO> io = upload<Model>(input, batch, stream);
  if (!io.ok()) return io.error();
  PlanFile plan;
  if (FILE* f = std::fopen(args.tune.c_str(), "rb")) {  // an earlier plan to extend
    std::fclose(f);
    auto old = PlanFile::load(args.tune);
    if (!old.ok()) return old.error();
    std::string gpu;
    if (Status s = gpu_name(&gpu); !s.ok()) return s;
    if (old->mismatch(gpu, cudnnGetVersion(), Model::kName, Model::kPrecision, Model::kIrHash)
            .empty()) {
      plan = std::move(*old);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = model->tune(io->input.as<float>(), io->output.as<float>(), batch, stream, &plan);
      !s.ok()) {
    return s;
  }
  if (Status s = plan.save(args.tune); !s.ok()) return s;
  std::printf("tuned batch=%d in %.1f s: %s now holds %zu choices\n", batch,
              micros_since(t0) / 1e6, args.tune.c_str(), plan.choices.size());
  return Status();
}

// Creates the model for max_batch, runs the two poisoned correctness forwards on `input`
// ([batch, C, H, W] on the host), times it, optionally times the input copy, and destroys it.
template <class Model>
Status measure_point(const Args& args, int batch, int max_batch, const std::vector<float>& input,
                     cudaStream_t stream, PointData* p) {
  if (!args.tune.empty()) {
    if (Status s = tune_point<Model>(args, batch, max_batch, input, stream); !s.ok()) return s;
  }
  p->batch = batch;
  p->max_batch = max_batch;
  p->t_point_start = epoch_seconds();
  p->used_before = device_used_bytes();
  auto options = base_options<Model>(args);
  options.cuda_graph = args.graph;
  options.plan_file = args.tune.empty() ? args.plan : args.tune;
  const auto t0 = std::chrono::steady_clock::now();
  auto created = Model::create(args.weights, max_batch, options);
  if (!created.ok()) return created.error();
  std::unique_ptr<Model> model = std::move(created).value();
  if (!model || model->max_batch() != max_batch) {
    return Error{"create returned no model, or one for another maximum batch"};
  }
  p->create_ms = micros_since(t0) / 1000.0;

  const size_t output_count = static_cast<size_t>(batch) * static_cast<size_t>(Model::kOutputs);
  Expected<DeviceIO> io = upload<Model>(input, batch, stream);
  if (!io.ok()) return io.error();
  DeviceBuffer* d_input = &io->input;
  DeviceBuffer* d_output = &io->output;
  const float* in = d_input->as<float>();

  // Correctness: two poisoned runs, all finite, identical.
  std::vector<float> again;
  if (Status r = checked_forward(*model, in, *d_output, batch, stream, &p->first); !r.ok()) {
    return r;
  }
  if (std::string bad = non_finite_report(p->first, Model::kOutputs); !bad.empty()) {
    return Error{bad};
  }
  if (Status r = checked_forward(*model, in, *d_output, batch, stream, &again); !r.ok()) return r;
  p->deterministic = warn_if_different(p->first, again, "the second forward");

  if (args.iters > 0) {
    auto timed = time_forward(*model, in, d_output->as<float>(), batch, args.warmup, args.iters,
                              args.max_time_ms, stream);
    if (!timed.ok()) return timed.error();
    p->timed = std::move(*timed);
    p->stats = summarize(p->timed.ms);
    // The timed runs wrote the same output buffer: it must still hold the first run's values.
    std::vector<float> last(output_count);
    if (Status r = copy(last.data(), d_output->get(), output_count * sizeof(float), stream,
                        "copying the output after timing");
        !r.ok()) {
      return r;
    }
    p->deterministic = warn_if_different(p->first, last, "the last timed forward") &&
                       p->deterministic;
  }
  if (args.profile > 0) {
    auto prof = profile_layers(*model, in, d_output->as<float>(), batch, args.profile, stream);
    if (!prof.ok()) return prof.error();
    p->profile = std::move(*prof);
  }
  if (args.h2d_reps > 0) {
    auto h2d = time_h2d(input.data(), input.size() * sizeof(float), d_input->get(), args.h2d_reps,
                        stream);
    if (!h2d.ok()) return h2d.error();
    p->h2d = *h2d;
  }
  p->used_after = device_used_bytes();
  p->arena = model->arena_bytes();
  p->workspace = model->workspace_bytes();
  p->weights = model->weight_bytes();
  return Status();
}

// The per-batch fields of the JSON (the same in single and sweep mode).
template <class Model>
void point_json(const PointData& p, JsonWriter* j) {
  j->field("batch", p.batch).field("max_batch", p.max_batch);
  j->latency("latency_ms", p.stats);
  j->field("throughput_img_s", p.stats.median > 0 ? 1000.0 * p.batch / p.stats.median : 0.0);
  j->field("create_ms", p.create_ms).field("deterministic", p.deterministic);
  j->field("arena_bytes", p.arena).field("workspace_bytes", p.workspace);
  j->field("weight_bytes", p.weights);
  j->field("device_used_before_bytes", p.used_before).field("device_used_bytes", p.used_after);
  j->latency("host_cpu_us", summarize(p.timed.host_cpu_us));
  j->latency("host_wall_us", summarize(p.timed.host_wall_us));
  if (p.h2d.reps > 0) {
    JsonWriter h;
    h.field("bytes", p.h2d.bytes).field("reps", p.h2d.reps);
    h.field("pageable_ms", static_cast<double>(p.h2d.pageable_ms));
    h.field("pinned_ms", static_cast<double>(p.h2d.pinned_ms));
    j->object("h2d", h);
  }
  if (p.profile.runs > 0) {
    JsonWriter prof;
    prof.field("runs", p.profile.runs);
    prof.field("total_ms", static_cast<double>(p.profile.total_ms));
    double sum = 0;
    std::vector<JsonWriter> layers;
    for (int k = 0; k < Model::kLayers; ++k) {
      const float ms = p.profile.layer_ms[static_cast<size_t>(k)];
      sum += ms;
      JsonWriter layer;
      layer.field("layer", Model::layer_name(k)).field("ms", static_cast<double>(ms));
      layers.push_back(layer);
    }
    prof.field("sum_ms", sum);
    prof.objects("layers", layers);
    j->object("profile", prof);
  }
  j->seconds("t_point_start", p.t_point_start);
  j->seconds("t_start", p.timed.t_start).seconds("t_end", p.timed.t_end);
  j->floats("iter_ms", p.timed.ms);
  j->floats("iter_host_cpu_us", p.timed.host_cpu_us);
  j->argmax("top1", p.first, p.batch, Model::kOutputs);
}

// Fields that describe the run rather than a batch size.
template <class Model>
void run_json(const Args& args, const std::string& gpu, const std::string& input_source,
              JsonWriter* j) {
  j->field("model", Model::kName).field("precision", Model::kPrecision).field("gpu", gpu);
  j->field("cuda_graph", args.graph);
  j->field("weights", args.weights.empty() ? "seeded init" : args.weights);
  j->field("input", input_source).field("seed", args.seed);
  j->field("warmup", args.warmup).field("iters", args.iters);
  j->field("max_time_ms", args.max_time_ms).field("h2d_reps", args.h2d_reps);
  j->field("plan", args.tune.empty() ? args.plan : args.tune);
  j->field("tuned", !args.tune.empty());
  j->field("cudnn_version", static_cast<uint64_t>(cudnnGetVersion()));
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  (void)cublasGetProperty(MAJOR_VERSION, &cublas_major);
  (void)cublasGetProperty(MINOR_VERSION, &cublas_minor);
  (void)cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  j->field("cublas_version", std::to_string(cublas_major) + "." + std::to_string(cublas_minor) +
                                 "." + std::to_string(cublas_patch));
}

// The profile's sum against the timed forward's median, and the slowest layers.
template <class Model>
void print_profile(const PointData& p) {
  if (p.profile.runs == 0) return;
  double sum = 0;
  std::vector<int> order(Model::kLayers);
  for (int k = 0; k < Model::kLayers; ++k) {
    order[static_cast<size_t>(k)] = k;
    sum += p.profile.layer_ms[static_cast<size_t>(k)];
  }
  std::printf("profile batch=%d: %d layers sum to %.4f ms (first to last event %.4f ms); "
              "forward median %.4f ms (median of %d profiled runs)\n",
              p.batch, Model::kLayers, sum, p.profile.total_ms, p.stats.median, p.profile.runs);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return p.profile.layer_ms[static_cast<size_t>(a)] > p.profile.layer_ms[static_cast<size_t>(b)];
  });
  for (int i = 0; i < std::min(Model::kLayers, 10); ++i) {
    const int k = order[static_cast<size_t>(i)];
    const double ms = p.profile.layer_ms[static_cast<size_t>(k)];
    std::printf("  %8.4f ms %5.1f%%  %s\n", ms, sum > 0 ? 100.0 * ms / sum : 0.0,
                Model::layer_name(k));
  }
}

inline void print_latency(const PointData& p, int warmup) {
  const LatencyStats& s = p.stats;
  std::printf(
      "latency batch=%d: median %.4f ms, p90 %.4f ms, p99 %.4f ms, min %.4f ms, max %.4f ms, "
      "mean %.4f ms (%zu iters after %d warm-up)\n",
      p.batch, s.median, s.p90, s.p99, s.min, s.max, s.mean, s.count, warmup);
  std::printf("throughput batch=%d: %.1f img/s (batch / median)\n", p.batch,
              s.median > 0 ? 1000.0 * p.batch / s.median : 0.0);
}

// --batches: one created model per batch size, the JSON rewritten after every point.
template <class Model>
int run_sweep(const Args& args, const std::string& gpu, cudaStream_t stream) {
  const char* name = Model::kName;
  const int largest = *std::max_element(args.batches.begin(), args.batches.end());
  const size_t chw = size_t{Model::kInputC} * Model::kInputH * Model::kInputW;
  if (static_cast<double>(largest) * static_cast<double>(chw) > 4294967296.0) {
    return fail(name, "--batches up to " + std::to_string(largest) + " would need " +
                          detail::bytes_text(static_cast<size_t>(largest) * chw * 4) +
                          " of input");
  }
  Args source_args = args;  // the file's samples, or seeded ones for the largest batch
  source_args.batch = largest;
  source_args.batch_given = args.input.empty();
  int samples = 0, distinct = 0;
  std::vector<float> source;
  std::string input_source;
  if (Status s = load_input<Model>(source_args, &samples, &source, &input_source, &distinct);
      !s.ok()) {
    return fail(name, s.error().message);
  }
  std::string stem = args.output;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".npy") == 0) stem.resize(stem.size() - 4);

  JsonWriter head;
  run_json<Model>(args, gpu, input_source, &head);
  std::vector<JsonWriter> points;
  auto save = [&]() -> Status {
    if (args.json.empty()) return Status();
    JsonWriter doc = head;
    doc.objects("points", points);
    return doc.write(args.json);
  };
  for (int batch : args.batches) {
    const std::vector<float> input =
        tile_samples(source, static_cast<size_t>(samples), batch, chw);
    PointData p;
    Status s = measure_point<Model>(args, batch, batch, input, stream, &p);
    if (!s.ok()) {
      JsonWriter failed;
      failed.field("batch", batch).field("error", s.error().message);
      points.push_back(failed);
      (void)save();
      return fail(name, "batch " + std::to_string(batch) + ": " + s.error().message);
    }
    if (!stem.empty()) {
      const int rows = std::min(batch, distinct);
      const std::string path = stem + "_b" + std::to_string(batch) + ".npy";
      Status w = npy::write_float32(path, p.first.data(), {rows, Model::kOutputs});
      if (!w.ok()) return fail(name, w.error().message);
    }
    if (p.stats.count > 0) print_latency(p, args.warmup);
    print_profile<Model>(p);
    std::printf("memory batch=%d: device in use %s (before create %s), created in %.0f ms\n",
                batch, detail::bytes_text(p.used_after).c_str(),
                detail::bytes_text(p.used_before).c_str(), p.create_ms);
    std::fflush(stdout);
    JsonWriter point;
    point_json<Model>(p, &point);
    points.push_back(point);
    if (Status w = save(); !w.ok()) return fail(name, w.error().message);
  }
  if (!args.json.empty()) std::printf("wrote %s\n", args.json.c_str());
  std::fflush(stdout);
  return 0;
}

template <class Model>
int run(const Args& args) {
  const char* name = Model::kName;

  std::string gpu;
  if (Status s = describe_gpu(&gpu); !s.ok()) return fail(name, s.error().message);
  Stream stream;
  if (Status s = stream.create(); !s.ok()) return fail(name, s.error().message);
  if (!args.batches.empty()) {
    std::printf("%s (%s) on %s: batches", name, Model::kPrecision, gpu.c_str());
    for (int b : args.batches) std::printf(" %d", b);
    std::printf(", cuda graph %s\n", args.graph ? "on" : "off");
    std::fflush(stdout);
    return run_sweep<Model>(args, gpu, stream.get());
  }

  int batch = 0;
  std::vector<float> input;
  std::string input_source;
  if (Status s = load_input<Model>(args, &batch, &input, &input_source); !s.ok()) {
    return fail(name, s.error().message);
  }
  const int max_batch = args.max_batch > 0 ? args.max_batch : batch;
  if (max_batch < batch) {
    std::fprintf(stderr, "%s: --max-batch %d is smaller than the batch %d\n", name, max_batch,
                 batch);
    return 2;
  }

  std::printf("%s (%s) on %s: batch %d, max batch %d, cuda graph %s, weights %s, input %s\n", name,
              Model::kPrecision, gpu.c_str(), batch, max_batch, args.graph ? "on" : "off",
              args.weights.empty() ? ("seeded init, seed " + std::to_string(args.seed)).c_str()
                                   : args.weights.c_str(),
              input_source.c_str());
  std::fflush(stdout);

  PointData p;
  if (Status s = measure_point<Model>(args, batch, max_batch, input, stream.get(), &p); !s.ok()) {
    return fail(name, s.error().message);
  }
  std::printf("output [%d, %d] all finite (created in %.0f ms)\n", batch, Model::kOutputs,
              p.create_ms);
  if (!args.output.empty()) {
    Status s = npy::write_float32(args.output, p.first.data(), {batch, Model::kOutputs});
    if (!s.ok()) return fail(name, s.error().message);
    std::printf("wrote %s\n", args.output.c_str());
  }
  print_top_k(p.first, batch, Model::kOutputs, args.top);
  if (args.iters > 0) print_latency(p, args.warmup);
  print_profile<Model>(p);
  if (p.h2d.reps > 0) {
    std::printf("input copy batch=%d: %s, pageable %.4f ms, pinned %.4f ms (median of %d)\n",
                batch, detail::bytes_text(p.h2d.bytes).c_str(), p.h2d.pageable_ms,
                p.h2d.pinned_ms, p.h2d.reps);
  }
  std::printf("memory: arena %s, workspace %s, weights %s\n",
              detail::bytes_text(p.arena).c_str(), detail::bytes_text(p.workspace).c_str(),
              detail::bytes_text(p.weights).c_str());

  if (!args.json.empty()) {
    JsonWriter j;
    run_json<Model>(args, gpu, input_source, &j);
    point_json<Model>(p, &j);
    if (Status s = j.write(args.json); !s.ok()) return fail(name, s.error().message);
    std::printf("wrote %s\n", args.json.c_str());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace harness

// The whole of a generated main(): `return zoc::run_main<zoc_model::Resnet50>(argc, argv);`.
// Model must provide kName, kPrecision, kInputC/H/W, kOutputs, a non-overloaded static
// create(const std::string&, int, const Options&) returning Expected<std::unique_ptr<Model>>,
// forward(const float*, float*, int, cudaStream_t) returning Status, and the *_bytes()
// accessors.
template <class Model>
int run_main(int argc, char** argv) {
  harness::Args args;
  std::string error = harness::parse_args(argc, argv, Model::kOutputs, &args);
  if (!error.empty()) {
    std::fprintf(stderr, "%s: %s\n(run with --help for the options)\n", Model::kName,
                 error.c_str());
    return 2;
  }
  if (args.help) {
    harness::print_usage(Model::kName, Model::kPrecision, Model::kInputC, Model::kInputH,
                         Model::kInputW, Model::kOutputs);
    return 0;
  }
  return harness::run<Model>(args);
}

}  // namespace zoc
