// One measured point of the generated models' command-line runner (zoc/runner/main_harness.h):
// the input batch on the host, then for one batch size the model created (after --tune has
// measured its algorithms), the two poisoned correctness forwards, the timing, the profile and
// the memory figures, all gathered in PointData for the report (report.h). Apart from
// main_harness.h so that the flow of one point reads on its own, whichever mode (a single batch
// or a --batches sweep) asks for it.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/device.h"
#include "zoc/core/expected.h"
#include "zoc/core/timing.h"
#include "zoc/cudnn/plan_file.h"
#include "zoc/io/npy.h"
#include "zoc/runner/harness_support.h"
#include "zoc/runner/timed_runs.h"

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
    *input =
        tile_samples(*data, static_cast<size_t>(file_samples), *batch, static_cast<size_t>(chw));
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
  std::printf("tuned batch=%d in %.1f s: %s now holds %zu choices\n", batch, micros_since(t0) / 1e6,
              args.tune.c_str(), plan.choices.size());
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
    p->deterministic =
        warn_if_different(p->first, last, "the last timed forward") && p->deterministic;
  }
  if (args.profile > 0) {
    auto prof = profile_layers(*model, in, d_output->as<float>(), batch, args.profile, stream);
    if (!prof.ok()) return prof.error();
    p->profile = std::move(*prof);
  }
  if (args.h2d_reps > 0) {
    auto h2d =
        time_h2d(input.data(), input.size() * sizeof(float), d_input->get(), args.h2d_reps, stream);
    if (!h2d.ok()) return h2d.error();
    p->h2d = *h2d;
  }
  p->used_after = device_used_bytes();
  p->arena = model->arena_bytes();
  p->workspace = model->workspace_bytes();
  p->weights = model->weight_bytes();
  return Status();
}

}  // namespace harness
}  // namespace zoc
