// The static memory plan: every intermediate tensor gets a fixed offset in one arena.
//
// Lifetimes come from the node order (a value lives from its producer to its last reader);
// values whose lifetimes do not overlap share bytes. Offsets are computed per sample and
// scaled by the maximum batch at construction time, so one plan serves every batch size: a
// value at per-sample offset o with per-sample size s occupies [o*B, (o+s)*B) for max batch B,
// and disjoint per-sample intervals stay disjoint when scaled.
//
// A training graph also has non-batched values (a parameter's gradient, BatchNorm's saved
// statistics, the loss): they share a second, fixed-size region by the same rule, with offsets
// in bytes that no batch scales, except those the caller pins in its own buffers (parameter
// gradients where its optimizer reads them, say).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace zoc::lower {

struct MemoryPlan {
  static constexpr int64_t kAlignment = 256;  // bytes, per sample (cuDNN likes 128+)

  struct Slot {
    // Batched values: the per-sample byte offset in the arena. Fixed or pinned values: a byte
    // offset in the fixed region or the caller's buffer. -1: not planned (the external input).
    int64_t offset = -1;
    int64_t bytes = 0;  // per-sample bytes (aligned); fixed: of the whole tensor (aligned)
    ir::ValueId alias_of = ir::kNoValue;  // a view of another value (flatten, flatten_grad)
    bool fixed = false;                   // non-batched: never scaled by the batch
    bool pinned = false;  // placed by the caller (MemoryPlanOptions::pinned); bytes unaligned
  };
  std::vector<Slot> slots;  // indexed by ValueId
  int64_t arena_bytes_per_sample = 0;
  int64_t unplanned_bytes_per_sample = 0;  // sum of all planned values, for the report
  int64_t fixed_bytes = 0;                 // the fixed region
  int64_t unplanned_fixed_bytes = 0;

  // "activation arena 1.531 MiB per sample (unshared: 12.1 MiB per sample)", and the fixed
  // region's where there is one.
  std::string summary() const;
};

struct MemoryPlanOptions {
  int64_t element_bytes = 4;          // of float values: 4 for fp32/tf32, 2 for fp16/bf16
  bool external_input = true;         // the graph input (and labels) live in the caller's buffers
  int64_t input_channels_stored = 0;  // the input's channels as stored (padded); 0: the graph's
  // Values that must stay live until a later node index than their last reader: the input of a
  // node running on a second stream is read at any time until that stream joins.
  std::vector<std::pair<ir::ValueId, int64_t>> live_until;
  // Values the caller places itself: ValueId -> byte offset in a buffer it owns (per sample
  // for a batched value). The planner leaves them there, outside both regions.
  std::map<ir::ValueId, int64_t> pinned;
  // Values no node writes (a trainer's add that the activation after it does): no slot.
  std::set<ir::ValueId> unstored;
};

MemoryPlan plan_memory(const ir::Graph& g, const MemoryPlanOptions& options);

// MemoryPlan::summary()'s text for these sizes (a lowered graph's TargetInfo keeps them).
std::string arena_summary(int64_t arena_bytes_per_sample, int64_t unplanned_bytes_per_sample,
                          int64_t fixed_bytes = 0, int64_t unplanned_fixed_bytes = 0);

}  // namespace zoc::lower
