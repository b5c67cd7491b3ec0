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
//
// This file is the entry point and holds the two modes (one batch, a --batches sweep); the rest
// is split by role: harness_support.h (arguments, checks, the JSON writer), measure_point.h (one
// created model measured at one batch size, --tune first), timed_runs.h (the clocks and the
// timing loops) and report.h (the JSON fields and the printed latency and profile).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "zoc/core/device.h"
#include "zoc/core/expected.h"
#include "zoc/io/npy.h"
#include "zoc/runner/harness_support.h"
#include "zoc/runner/measure_point.h"
#include "zoc/runner/report.h"

namespace zoc {
namespace harness {

// `path` ([rows, kOutputs], every output of a sample in one row) and, for a model with several
// outputs, each output k also to <path without .npy>_<k>.npy as [rows, C, H, W] (NCHW).
template <class Model>
Status write_outputs(const std::string& path, const std::vector<float>& rows_data, int rows) {
  ZOC_TRY(npy::write_float32(path, rows_data.data(), {rows, Model::kOutputs}));
  if (Model::kOutputCount == 1) return Status::success();
  std::string stem = path;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".npy") == 0) {
    stem.resize(stem.size() - 4);
  }
  for (int k = 0; k < Model::kOutputCount; ++k) {
    const int* shape = Model::kOutputShapes[k];
    const size_t size = size_t(shape[0]) * shape[1] * shape[2];
    std::vector<float> part(size * size_t(rows));
    for (int r = 0; r < rows; ++r) {
      const float* row = rows_data.data() + size_t(r) * Model::kOutputs + Model::kOutputOffsets[k];
      std::copy(row, row + size, part.begin() + size_t(r) * size);
    }
    ZOC_TRY(npy::write_float32(stem + "_" + std::to_string(k) + ".npy", part.data(),
                               {rows, shape[0], shape[1], shape[2]}));
  }
  return Status::success();
}

// --batches: one created model per batch size, the JSON rewritten after every point.
template <class Model>
int run_sweep(const Args& args, const std::string& gpu, cudaStream_t stream) {
  const char* name = Model::kName;
  const int largest = *std::max_element(args.batches.begin(), args.batches.end());
  const size_t chw = size_t{Model::kInputC} * Model::kInputH * Model::kInputW;
  if (static_cast<double>(largest) * static_cast<double>(chw) > 4294967296.0) {
    return fail(name, "--batches up to " + std::to_string(largest) + " would need " +
                          detail::bytes_text(static_cast<size_t>(largest) * chw * 4) + " of input");
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
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".npy") == 0)
    stem.resize(stem.size() - 4);

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
    const std::vector<float> input = tile_samples(source, static_cast<size_t>(samples), batch, chw);
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
      Status w = write_outputs<Model>(path, p.first, rows);
      if (!w.ok()) return fail(name, w.error().message);
    }
    if (p.stats.count > 0) print_latency(p, args.warmup);
    print_profile<Model>(p);
    std::printf("memory batch=%d: device in use %s (before create %s), created in %.0f ms\n", batch,
                detail::bytes_text(p.used_after).c_str(), detail::bytes_text(p.used_before).c_str(),
                p.create_ms);
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
    Status s = write_outputs<Model>(args.output, p.first, batch);
    if (!s.ok()) return fail(name, s.error().message);
    std::printf("wrote %s\n", args.output.c_str());
  }
  print_top_k(p.first, batch, Model::kOutputs, args.top);
  if (args.iters > 0) print_latency(p, args.warmup);
  print_profile<Model>(p);
  if (p.h2d.reps > 0) {
    std::printf("input copy batch=%d: %s, pageable %.4f ms, pinned %.4f ms (median of %d)\n", batch,
                detail::bytes_text(p.h2d.bytes).c_str(), p.h2d.pageable_ms, p.h2d.pinned_ms,
                p.h2d.reps);
  }
  std::printf("memory: arena %s, workspace %s, weights %s\n", detail::bytes_text(p.arena).c_str(),
              detail::bytes_text(p.workspace).c_str(), detail::bytes_text(p.weights).c_str());

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
