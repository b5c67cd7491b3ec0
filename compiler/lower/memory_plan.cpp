// Liveness-based first-fit placement of values in the arena and the fixed region (see
// memory_plan.h).
#include "compiler/lower/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

namespace zoc::lower {
namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// The input whose storage a view's result shares, or -1 for ops that are not views. A flatten
// or reshape lowered to a copy between stored orders (ir::LayerKind::Relayout) is not one; an
// unlowered one (a trainer's graph, NCHW throughout) is.
int viewed_input(const ir::Node& n) {
  const bool lowered_view = n.lowered && n.lowered->kind == ir::LayerKind::View;
  if (n.op == ir::OpKind::Flatten || n.op == ir::OpKind::Reshape) {
    return !n.lowered || lowered_view ? 0 : -1;
  }
  if (n.op == ir::OpKind::FlattenGrad) return 1;  // dy in x's shape
  return -1;
}

bool is_external(const ir::Node& n, const MemoryPlanOptions& options) {
  return options.external_input && (n.op == ir::OpKind::Input || n.op == ir::OpKind::Labels);
}

// The values placed so far, by lifetime, so that placing a value visits only those alive at the
// same time: a lifetime [f, l] overlaps [a, b] iff it holds a (a segment tree over node indices
// answers that) or starts within (a, b] (an ordered map of starts). Scanning every placed value
// instead made planning quadratic: 100,000 convolutions took seconds (issue 31).
class PlacedLifetimes {
 public:
  explicit PlacedLifetimes(int64_t horizon) {
    while (leaves_ < horizon) leaves_ <<= 1;
    holding_.resize(static_cast<size_t>(2 * leaves_));
  }

  void add(ir::ValueId v, int64_t first, int64_t last) {
    starts_.emplace(first, v);
    for (int64_t lo = first + leaves_, hi = last + 1 + leaves_; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) holding_[static_cast<size_t>(lo++)].push_back(v);
      if (hi & 1) holding_[static_cast<size_t>(--hi)].push_back(v);
    }
  }

  // Calls f(v) once for every added value whose lifetime overlaps [a, b].
  template <class F>
  void overlapping(int64_t a, int64_t b, F&& f) const {
    for (int64_t i = a + leaves_; i >= 1; i >>= 1) {
      for (ir::ValueId v : holding_[static_cast<size_t>(i)]) f(v);
    }
    for (auto it = starts_.upper_bound(a); it != starts_.end() && it->first <= b; ++it) {
      f(it->second);
    }
  }

 private:
  int64_t leaves_ = 1;
  std::vector<std::vector<ir::ValueId>> holding_;  // segment tree nodes: lifetimes covering them
  std::multimap<int64_t, ir::ValueId> starts_;
};

// Largest first, then first fit against the already placed values alive at the same time.
// Returns the region's size.
int64_t place(std::vector<ir::ValueId> order, const std::vector<int64_t>& first,
              const std::vector<int64_t>& last, std::vector<MemoryPlan::Slot>& slots) {
  std::stable_sort(order.begin(), order.end(),
                   [&](ir::ValueId a, ir::ValueId b) { return slots[a].bytes > slots[b].bytes; });
  int64_t horizon = 1;
  for (ir::ValueId v : order) horizon = std::max(horizon, last[v] + 1);
  PlacedLifetimes placed(horizon);
  int64_t size = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of overlapping lifetimes
  for (ir::ValueId v : order) {
    busy.clear();
    placed.overlapping(first[v], last[v], [&](ir::ValueId p) {
      busy.emplace_back(slots[p].offset, slots[p].offset + slots[p].bytes);
    });
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + slots[v].bytes <= b) break;
      offset = std::max(offset, e);
    }
    slots[v].offset = offset;
    size = std::max(size, offset + slots[v].bytes);
    placed.add(v, first[v], last[v]);
  }
  return size;
}

}  // namespace

std::string arena_summary(int64_t arena_bytes_per_sample, int64_t unplanned_bytes_per_sample,
                          int64_t fixed_bytes, int64_t unplanned_fixed_bytes) {
  auto mib = [](int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  std::string s =
      fmt::format("activation arena {:.3f} MiB per sample (unshared: {:.3f} MiB per sample)",
                  mib(arena_bytes_per_sample), mib(unplanned_bytes_per_sample));
  if (unplanned_fixed_bytes > 0) {
    s += fmt::format("; fixed region {:.3f} MiB (unshared: {:.3f} MiB)", mib(fixed_bytes),
                     mib(unplanned_fixed_bytes));
  }
  return s;
}

std::string MemoryPlan::summary() const {
  return arena_summary(arena_bytes_per_sample, unplanned_bytes_per_sample, fixed_bytes,
                       unplanned_fixed_bytes);
}

MemoryPlan plan_memory(const ir::Graph& g, const MemoryPlanOptions& options) {
  MemoryPlan plan;
  const size_t nv = g.values.size();
  plan.slots.resize(nv);
  // Views share their source's storage; resolve chains to the root value.
  std::vector<ir::ValueId> root(nv);
  std::iota(root.begin(), root.end(), 0);
  for (const ir::Node& n : g.nodes) {
    if (const int k = viewed_input(n); k >= 0) {
      root[n.output] = root[n.inputs[k]];
      plan.slots[n.output].alias_of = root[n.inputs[k]];
    }
  }
  // Lifetime of each root: [first def, last use] in node indices; outputs live to the end.
  std::vector<int64_t> first(nv, -1), last(nv, -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const auto at = static_cast<int64_t>(i);
    for (ir::ValueId v : ir::Graph::results(n)) {
      if (first[root[v]] < 0) first[root[v]] = at;
      last[root[v]] = std::max(last[root[v]], at);
    }
    for (ir::ValueId v : n.inputs) last[root[v]] = std::max(last[root[v]], at);
  }
  for (ir::ValueId v : g.outputs) last[root[v]] = static_cast<int64_t>(g.nodes.size());
  for (const auto& [v, until] : options.live_until) last[root[v]] = std::max(last[root[v]], until);

  std::vector<ir::ValueId> batched, fixed;
  for (const ir::Node& n : g.nodes) {
    for (ir::ValueId v : ir::Graph::results(n)) {
      if (root[v] != v || is_external(n, options) || options.unstored.count(v)) continue;
      const ir::TensorType& t = g.type(v);
      MemoryPlan::Slot& slot = plan.slots[v];
      slot.fixed = !t.batched;
      int64_t numel = t.sample_numel();
      if (n.op == ir::OpKind::Input && options.input_channels_stored > 0) {  // padded channels
        numel = numel / t.dims[0] * options.input_channels_stored;
      }
      const bool is_float = t.dtype != ir::DType::I32 && t.dtype != ir::DType::I64;
      // A 16-bit float value takes its own size (a bf16 trainer's activations); other float
      // values the target's element size.
      const bool half = t.dtype == ir::DType::F16 || t.dtype == ir::DType::BF16;
      const int64_t bytes =
          numel * (is_float && !half ? options.element_bytes : ir::dtype_size(t.dtype));
      if (auto pin = options.pinned.find(v); pin != options.pinned.end()) {
        slot.pinned = true;
        slot.offset = pin->second;
        slot.bytes = bytes;
        continue;
      }
      slot.bytes = align_up(bytes, MemoryPlan::kAlignment);
      (slot.fixed ? plan.unplanned_fixed_bytes : plan.unplanned_bytes_per_sample) += slot.bytes;
      (slot.fixed ? fixed : batched).push_back(v);
    }
  }
  plan.arena_bytes_per_sample = place(batched, first, last, plan.slots);
  plan.fixed_bytes = place(fixed, first, last, plan.slots);
  for (size_t v = 0; v < nv; ++v) {
    if (plan.slots[v].alias_of != ir::kNoValue) {
      const MemoryPlan::Slot& source = plan.slots[plan.slots[v].alias_of];
      plan.slots[v].offset = source.offset;
      plan.slots[v].bytes = source.bytes;
      plan.slots[v].fixed = source.fixed;
      plan.slots[v].pinned = source.pinned;
    }
  }
  return plan;
}

}  // namespace zoc::lower
