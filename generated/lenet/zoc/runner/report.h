// What the generated models' command-line runner (zoc/runner/main_harness.h) reports of a
// measured point (measure_point.h): the JSON fields of the point and of the whole run, which
// tools/harness and tools/gpu_compare.py read, and the printed latency and per-layer profile.
// Kept apart from the measuring so that every field and line of the report is in one file.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "zoc/core/timing.h"
#include "zoc/runner/harness_support.h"
#include "zoc/runner/measure_point.h"

namespace zoc {
namespace harness {

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
  std::printf(
      "profile batch=%d: %d layers sum to %.4f ms (first to last event %.4f ms); "
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

}  // namespace harness
}  // namespace zoc
