// What the model-file fuzz targets (fuzz_yaml.cpp, fuzz_onnx.cpp) check once a frontend has
// answered: a failure has an error and a success has none, and an accepted graph goes through
// the printer, the inference pass pipeline with --verify-each, the memory plan at both element
// sizes and lower-to-target for an NHWC fp16 and an NCHW fp32 target with side streams, each
// step keeping the same promises, every plan fitting its arena and every lowering verifying.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "compiler/driver/model_loader.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verify.h"
#include "compiler/lower/lower_to_target.h"
#include "compiler/lower/memory_plan.h"
#include "compiler/passes/pipeline.h"
#include "compiler/support/diagnostics.h"
#include "tests/fuzz/fuzz_support.h"

namespace zoc::fuzz {

inline void check_plan(const ir::Graph& g, int64_t element_bytes) {
  lower::MemoryPlanOptions opts;
  opts.element_bytes = element_bytes;
  const lower::MemoryPlan plan = lower::plan_memory(g, opts);
  check(plan.arena_bytes_per_sample >= 0, "negative arena size");
  for (const lower::MemoryPlan::Slot& s : plan.slots) {
    if (s.offset < 0) continue;
    check(s.bytes >= 0 && s.offset % lower::MemoryPlan::kAlignment == 0,
          "memory plan slot misaligned or of negative size");
    check(s.bytes <= plan.arena_bytes_per_sample - s.offset,
          "memory plan slot ends past the arena");
  }
  (void)plan.summary();
}

// The optimized graph lowered for two targets like the cuDNN backend's (the fuzz targets do not
// link a backend): refused with an error, or lowered into a graph the verifier accepts.
inline void check_lowering(const ir::Graph& optimized) {
  lower::TargetDesc half;
  half.name = "the fuzz target";
  half.precision = "fp16";
  half.dtype = ir::DType::F16;
  half.layout = ir::Layout::NHWC;
  half.graph_api = true;
  half.graph_epilogue = [](act::Kind k) { return act::cudnn_pointwise(k); };
  half.nhwc_global_pool_kernel = true;
  half.pad_input_channels = 4;
  lower::TargetDesc single = half;
  single.precision = "fp32";
  single.dtype = ir::DType::F32;
  single.layout = ir::Layout::NCHW;
  single.graph_api = false;
  single.side_stream = true;
  for (const lower::TargetDesc& t : {half, single}) {
    ir::Graph g = optimized;
    Diagnostics diags;
    if (!lower::lower_to_target(g, t, diags)) {
      check(diags.has_errors(), "lowering failed without an error", diags.render());
      continue;
    }
    check(ir::verify(g, diags), "a lowered graph fails verification", diags.render());
    (void)ir::print_graph(g);
  }
}

// The loader's answer `graph` with its `diags`, then everything `zoc compile` runs on it
// before emitting code.
inline void check_loaded(std::optional<ir::Graph>& graph, Diagnostics& diags) {
  check_escaped(diags);
  if (!graph) {
    check(diags.has_errors(), "model rejected without an error", diags.render());
    return;
  }
  check(!diags.has_errors(), "model accepted with errors", diags.render());
  (void)ir::print_graph(*graph);
  passes::PassOptions popts;
  popts.verify_each = true;
  if (!passes::run_pipeline(*graph, diags, popts)) {
    check(diags.has_errors(), "pass pipeline failed without an error", diags.render());
    return;
  }
  check(!diags.has_errors(), "pass pipeline succeeded with errors", diags.render());
  check_escaped(diags);
  (void)ir::print_graph(*graph);
  check_plan(*graph, 4);
  check_plan(*graph, 2);
  check_lowering(*graph);
}

// One fuzz input as the model file at `path` (its extension picks the frontend), loaded as
// `zoc ir` loads it, then checked as above. ZOC_FUZZ_VERBOSE=1 prints the answer (to debug seeds).
inline void fuzz_model_file(const std::string& path, const uint8_t* data, size_t size) {
  static const bool verbose = std::getenv("ZOC_FUZZ_VERBOSE") != nullptr;
  write_file(path, data, size);
  Diagnostics diags;
  std::optional<ir::Graph> graph = load_verified_model(path, diags);
  if (verbose) {
    std::fprintf(stderr, "%s%s\n", diags.render().c_str(),
                 graph ? "model accepted" : "model rejected");
  }
  check_loaded(graph, diags);
}

}  // namespace zoc::fuzz
