// The pass pipeline: which passes run, in which order, and why there.
//
// Passes are free functions over the graph, one per file. The list in pipeline.cpp is the only
// place their order is decided; `--print-ir-after=NAME` and `--verify-each` work for every pass
// without the pass knowing.
#pragma once

#include <ostream>
#include <span>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"

namespace zoc::passes {

struct PassOptions {
  bool verify_each = false;       // run the IR verifier after every pass
  std::string print_after;        // pass name, or "all"
  std::ostream* print_to = nullptr;
};

using PassFn = bool (*)(ir::Graph&, Diagnostics&);

struct Pass {
  const char* name;
  PassFn run;
  const char* why;  // why it runs at this point of the pipeline
};

// The inference pipeline, in order.
std::span<const Pass> inference_pipeline();

// Runs the pipeline; false (with diagnostics) if a pass or a verification failed, or if
// `print_after` names no pass.
bool run_pipeline(ir::Graph& graph, Diagnostics& diags, const PassOptions& options = {});

// The passes (each in its own file).
bool remove_dropout(ir::Graph& g, Diagnostics& diags);
bool lower_conv(ir::Graph& g, Diagnostics& diags);
bool fold_batchnorm(ir::Graph& g, Diagnostics& diags);
bool fuse_residual_add(ir::Graph& g, Diagnostics& diags);
bool fuse_activation(ir::Graph& g, Diagnostics& diags);
bool eliminate_dead_code(ir::Graph& g, Diagnostics& diags);

}  // namespace zoc::passes
