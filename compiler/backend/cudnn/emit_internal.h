// Shared state of the cuDNN emitter's files: per-layer identifiers, the memory plan, the
// weight layout, and the sections of generated code each layer contributes to.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/backend/cudnn/code_writer.h"
#include "compiler/backend/cudnn/target.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/memory_plan.h"
#include "compiler/support/diagnostics.h"

namespace zoc::cudnn {

// Where a layer's packed weights live in the single device weight buffer (bytes).
struct WeightSlot {
  int64_t weight = -1, bias = -1;  // -1: none
  int64_t bytes = 0;
};

// Everything a layer's snippet writes into. Each op's snippet is one function (emit_layers.cpp)
// that fills the sections it needs.
struct Sections {
  CodeWriter constants;  // anonymous-namespace constexpr shapes and offsets (.cpp)
  CodeWriter weight_offsets;  // inline constexpr packed-weight offsets (<model>_weights.h)
  CodeWriter members;    // descriptor members (header)
  CodeWriter create;     // descriptor creation (init)
  CodeWriter pack;       // weight packing (<model>_weights.h, host-only)
  CodeWriter describe;   // batch-dependent descriptor setup (set_batch)
  CodeWriter bind;       // binding device pointers into graph-API plans (bind_layers)
  CodeWriter forward;    // the library calls (run_layers)
  CodeWriter describe_side;  // side-branch layers' descriptors (set_batch, own workspace)
  CodeWriter tune;       // timing each convolution's candidate algorithms (tune)
  CodeWriter destroy;    // descriptor destruction (destructor)
  CodeWriter kernels;    // custom-kernel wrappers (.cu)
  CodeWriter kernel_decls;  // their declarations (private header)
};

struct EmitContext {
  const ir::Graph& g;
  const Target& t;
  passes::MemoryPlan plan;
  std::vector<std::string> ids;          // per node: a unique C++ identifier
  std::vector<WeightSlot> weights;       // per node
  int64_t weight_bytes = 0;
  bool graph_api = false;                // fused convs through cuDNN's graph API
  int64_t input_c_stored = 0;            // the graph input's channels as stored (0: unpadded)
  std::vector<int> side_of;              // per node: its side-branch index, or -1
  std::vector<std::vector<int>> joins_at;  // per node: side branches to wait for before it
  int side_branches = 0;
  Diagnostics& diags;
  Sections s;

  // Channels of value v as stored in memory (the padded input's, or its type's).
  int64_t stored_channels(ir::ValueId v) const;
  // Expression for the device address of value v inside run_layers().
  std::string ptr(ir::ValueId v) const;
  // The layer names a node stands for ("layer1.0.conv1 + layer1.0.bn1 + layer1.0.relu1").
  std::string title(const ir::Node& n) const;
  // A string literal of the node's name (for error messages).
  std::string name_literal(const ir::Node& n) const;
};

// Fills ctx.weights and ctx.weight_bytes.
void plan_weights(EmitContext& ctx);
// Emits one layer into the sections; false after reporting an unsupported construct.
bool emit_layer(EmitContext& ctx, const ir::Node& node);

}  // namespace zoc::cudnn
