// The static memory plan: every intermediate tensor gets a fixed offset in one arena.
//
// Lifetimes come from the node order (a value lives from its producer to its last reader);
// values whose lifetimes do not overlap share bytes. Offsets are computed per sample and
// scaled by the maximum batch at construction time, so one plan serves every batch size: a
// value at per-sample offset o with per-sample size s occupies [o*B, (o+s)*B) for max batch B,
// and disjoint per-sample intervals stay disjoint when scaled.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace zoc::passes {

struct MemoryPlan {
  static constexpr int64_t kAlignment = 256;  // bytes, per sample (cuDNN likes 128+)

  struct Slot {
    int64_t offset = -1;  // per-sample byte offset in the arena; -1: not in the arena
    int64_t bytes = 0;    // per-sample bytes (aligned)
    ir::ValueId alias_of = ir::kNoValue;  // a view of another value (flatten)
  };
  std::vector<Slot> slots;       // indexed by ValueId
  int64_t arena_bytes_per_sample = 0;
  int64_t unplanned_bytes_per_sample = 0;  // sum of all planned values, for the report

  std::string summary() const;  // "arena 1.53 MiB/sample (from 12.1 MiB/sample unshared)"
};

struct MemoryPlanOptions {
  int64_t element_bytes = 4;     // 4 for fp32/tf32, 2 for fp16/bf16
  bool external_input = true;    // the graph input lives in the caller's buffer
  int64_t input_channels_stored = 0;  // the input's channels as stored (padded); 0: the graph's
  // Values that must stay live until a later node index than their last reader: the input of a
  // node running on a second stream is read at any time until that stream joins.
  std::vector<std::pair<ir::ValueId, int64_t>> live_until;
};

MemoryPlan plan_memory(const ir::Graph& g, const MemoryPlanOptions& options);

}  // namespace zoc::passes
