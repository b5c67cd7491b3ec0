// The pass pipelines as commented lists (see pipeline.h).
#include "compiler/passes/pipeline.h"

#include <fmt/format.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/shapes.h"
#include "compiler/ir/verify.h"
#include "compiler/lower/lower_to_target.h"

namespace zoc::passes {
namespace {

constexpr Pass kInference[] = {
    {"remove-dropout", remove_dropout,
     "dropout is the identity at inference; removing it first lets later patterns see through"},
    {"lower-conv", lower_conv,
     "every conv becomes a fused_conv2d (bias, BN, residual and ReLU slots empty), so the "
     "backends have one convolution form and the fusions below have one pattern to grow"},
    {"fold-batchnorm", fold_batchnorm,
     "BN after a conv is an affine map per output channel; folded into the conv's weights at "
     "load time it costs nothing at run time. Before the add/ReLU fusions, which need the BN gone"},
    {"fuse-residual-add", fuse_residual_add,
     "conv + bias + residual in one call (cuDNN's z input); before ReLU fusion because the ReLU "
     "of a residual block follows the add"},
    {"fuse-activation", fuse_activation,
     "ReLU applied in the conv's epilogue instead of a separate pass over memory"},
    {"dce", eliminate_dead_code, "drops whatever the rewrites left unused"},
    {"lower-to-target", nullptr,
     "last, and only for a target: the graph is what runs; the target's storage, layers, "
     "schedule and placement are decided on it, where printing and verification see them, "
     "and a backend only prints the result (compiler/lower/lower_to_target.h)",
     lower::lower_to_target},
};

constexpr Pass kTraining[] = {
    {"build-training-graph", build_training_graph_pass,
     "first and alone: training needs the layers as written (BatchNorm with batch statistics "
     "cannot be folded, dropout is not the identity on a GPU), and the backward and optimizer "
     "nodes it appends are what the trainer runs"},
};

}  // namespace

std::span<const Pass> inference_pipeline() { return kInference; }

std::span<const Pass> training_pipeline() { return kTraining; }

bool run_pipeline(ir::Graph& graph, Diagnostics& diags, const PassOptions& options,
                  std::span<const Pass> pipeline) {
  bool known = options.print_after.empty() || options.print_after == "all";
  for (const Pass& p : pipeline) {
    const bool runs = p.run || options.target;
    known = known || (runs && options.print_after == p.name);
  }
  if (!known) {
    std::string names;
    for (const Pass& p : pipeline) names += fmt::format(" {}", p.name);
    diags.error(SourceLoc{"--print-ir-after", 0, 0},
                fmt::format("no pass named '{}' runs here (a target's step runs only for a "
                            "target); passes:{}",
                            options.print_after, names));
    return false;
  }
  for (const Pass& p : pipeline) {
    if (!p.run) {
      if (!options.target) break;
      // The lowering keeps every shape; it sets dtypes and layouts, which shape inference
      // would reset, so the verifier (which checks the lowering) proves it instead.
      if (!p.run_for_target(graph, *options.target, diags)) return false;
    } else {
      if (!p.run(graph, diags)) return false;
      // Passes keep types consistent; re-inferring proves it and refreshes derived params.
      if (!ir::infer_shapes(graph, diags)) return false;
    }
    if (options.verify_each && !ir::verify(graph, diags)) {
      diags.note(SourceLoc{graph.name, 0, 0}, fmt::format("after pass '{}'", p.name));
      return false;
    }
    if (options.print_to && (options.print_after == "all" || options.print_after == p.name)) {
      *options.print_to << fmt::format("// ----- IR after {} -----\n", p.name)
                        << ir::print_graph(graph);
    }
  }
  return ir::verify(graph, diags);
}

}  // namespace zoc::passes
