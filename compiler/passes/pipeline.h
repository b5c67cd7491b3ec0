// The pass pipeline: which passes run, in which order, and why there.
//
// Passes are free functions over the graph, one per file. The list in pipeline.cpp is the only
// place their order is decided; `--print-ir-after=NAME` and `--verify-each` work for every pass
// without the pass knowing.
#pragma once

#include <optional>
#include <ostream>
#include <span>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/lower/target_desc.h"
#include "compiler/support/diagnostics.h"

namespace zoc::passes {

struct PassOptions {
  bool verify_each = false;  // run the IR verifier after every pass
  std::string print_after;   // pass name, or "all"
  std::ostream* print_to = nullptr;
  // The target to lower the optimized graph to (lower-to-target, compiler/lower/); null: the
  // pipeline stops before that step, at the target-independent optimized graph.
  const lower::TargetDesc* target = nullptr;
};

using PassFn = bool (*)(ir::Graph&, Diagnostics&);
using TargetPassFn = bool (*)(ir::Graph&, const lower::TargetDesc&, Diagnostics&);

struct Pass {
  const char* name;
  PassFn run;                             // a rewrite of the graph; null for the target step
  const char* why;                        // why it runs at this point of the pipeline
  TargetPassFn run_for_target = nullptr;  // the target step: runs when PassOptions::target is set
};

// The inference pipeline, in order: the optimization passes, then lower-to-target.
std::span<const Pass> inference_pipeline();
// The training pipeline: the model as the frontend wrote it becomes its training graph
// (`zoc ir --train`; the trainer emitter and `zoc grad` start from that graph).
std::span<const Pass> training_pipeline();

// Runs a pipeline; false (with diagnostics) if a pass or a verification failed, or if
// `print_after` names no pass of it.
bool run_pipeline(ir::Graph& graph, Diagnostics& diags, const PassOptions& options = {},
                  std::span<const Pass> pipeline = inference_pipeline());

struct TrainingGraphOptions {
  bool optimizer = true;  // end with one sgd node per trainable parameter
};

// The training graph of `model` (as the frontend wrote it, shape-inferred): see
// build_training_graph.cpp for what it holds. nullopt, with located errors, for a model that
// cannot be trained (fused layers, several outputs, no [classes] logits).
std::optional<ir::Graph> build_training_graph(const ir::Graph& model,
                                              const TrainingGraphOptions& options,
                                              Diagnostics& diags);

// The passes (each in its own file).
bool remove_dropout(ir::Graph& g, Diagnostics& diags);
bool lower_conv(ir::Graph& g, Diagnostics& diags);
bool fold_batchnorm(ir::Graph& g, Diagnostics& diags);
bool fuse_residual_add(ir::Graph& g, Diagnostics& diags);
bool fuse_activation(ir::Graph& g, Diagnostics& diags);
bool eliminate_dead_code(ir::Graph& g, Diagnostics& diags);
bool build_training_graph_pass(ir::Graph& g, Diagnostics& diags);  // with the optimizer

}  // namespace zoc::passes
