// Liveness-based first-fit placement of values in one arena (see memory_plan.h).
#include "compiler/passes/memory_plan.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace zoc::passes {
namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

bool is_view(const ir::Node& n) { return n.op == ir::OpKind::Flatten; }

}  // namespace

std::string MemoryPlan::summary() const {
  auto mib = [](int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  return fmt::format("activation arena {:.3f} MiB per sample (unshared: {:.3f} MiB per sample)",
                     mib(arena_bytes_per_sample), mib(unplanned_bytes_per_sample));
}

MemoryPlan plan_memory(const ir::Graph& g, const MemoryPlanOptions& options) {
  MemoryPlan plan;
  const size_t nv = g.values.size();
  plan.slots.resize(nv);
  // Views share their source's storage; resolve chains to the root value.
  std::vector<ir::ValueId> root(nv);
  std::iota(root.begin(), root.end(), 0);
  for (const ir::Node& n : g.nodes) {
    if (is_view(n)) {
      root[n.output] = root[n.inputs[0]];
      plan.slots[n.output].alias_of = root[n.inputs[0]];
    }
  }
  // Lifetime of each root: [first def, last use] in node indices; outputs live to the end.
  std::vector<int64_t> first(nv, -1), last(nv, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const ir::ValueId r = root[n.output];
    if (first[r] < 0) first[r] = static_cast<int64_t>(i);
    last[r] = std::max(last[r], static_cast<int64_t>(i));
    for (ir::ValueId v : n.inputs) last[root[v]] = std::max(last[root[v]], static_cast<int64_t>(i));
  }
  for (ir::ValueId v : g.outputs) last[root[v]] = static_cast<int64_t>(g.nodes.size());
  for (const auto& [v, until] : options.live_until) last[root[v]] = std::max(last[root[v]], until);

  std::vector<ir::ValueId> order;
  for (const ir::Node& n : g.nodes) {
    const ir::ValueId v = n.output;
    if (root[v] != v) continue;
    if (n.op == ir::OpKind::Input && options.external_input) continue;
    int64_t numel = g.type(v).sample_numel();
    if (n.op == ir::OpKind::Input && options.input_channels_stored > 0) {  // padded channels
      numel = numel / g.type(v).dims[0] * options.input_channels_stored;
    }
    plan.slots[v].bytes = align_up(numel * options.element_bytes, MemoryPlan::kAlignment);
    plan.unplanned_bytes_per_sample += plan.slots[v].bytes;
    order.push_back(v);
  }
  // Largest first, then first fit against the already placed values alive at the same time.
  std::stable_sort(order.begin(), order.end(), [&](ir::ValueId a, ir::ValueId b) {
    return plan.slots[a].bytes > plan.slots[b].bytes;
  });
  std::vector<ir::ValueId> placed;
  for (ir::ValueId v : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of overlapping lifetimes
    for (ir::ValueId p : placed) {
      if (first[p] <= last[v] && first[v] <= last[p]) {
        busy.emplace_back(plan.slots[p].offset, plan.slots[p].offset + plan.slots[p].bytes);
      }
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + plan.slots[v].bytes <= b) break;
      offset = std::max(offset, e);
    }
    plan.slots[v].offset = offset;
    plan.arena_bytes_per_sample =
        std::max(plan.arena_bytes_per_sample, offset + plan.slots[v].bytes);
    placed.push_back(v);
  }
  for (size_t v = 0; v < nv; ++v) {
    if (plan.slots[v].alias_of != ir::kNoValue) {
      plan.slots[v].offset = plan.slots[plan.slots[v].alias_of].offset;
      plan.slots[v].bytes = plan.slots[plan.slots[v].alias_of].bytes;
    }
  }
  return plan;
}

}  // namespace zoc::passes
