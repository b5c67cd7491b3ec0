// Linking expanded layers into a graph: slot resolution, topological order, cycle and dead
// layer detection.
//
// Layers may reference later siblings, so a file can describe a cycle; and a layer whose
// result never reaches the output is almost always a wiring mistake (a forgotten `inputs:`),
// so both are errors that name the layers involved rather than silently dropped.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "compiler/frontend/yaml/internal.h"
#include "compiler/ir/rewrite.h"

namespace zoc::yaml {
namespace {

// Follows aliases from `slot` to the layer that produces it; -1 if unbound or cyclic.
int resolve_slot(Expansion& ex, int slot, Diagnostics& diags) {
  std::set<int> seen;
  int s = slot;
  while (s >= 0) {
    if (!seen.insert(s).second) {
      diags.error(ex.slots[slot].loc,
                  fmt::format("layer '{}' is defined in terms of itself", ex.slots[slot].name));
      return -1;
    }
    if (ex.slots[s].layer >= 0) return ex.slots[s].layer;
    s = ex.slots[s].alias;
  }
  return -1;
}

// Finds and reports one cycle among the layers not ordered by Kahn's algorithm.
void report_cycle(const Expansion& ex, const std::vector<std::vector<int>>& deps,
                  const std::vector<int>& remaining, Diagnostics& diags) {
  const std::set<int> rest(remaining.begin(), remaining.end());
  // Walk dependencies inside the remaining set until a layer repeats; every remaining layer
  // lies on or behind a cycle, so this terminates on one.
  std::vector<int> path;
  std::vector<int> pos(ex.layers.size(), -1);
  int cur = remaining.front();
  while (pos[cur] < 0) {
    pos[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    int next = -1;
    for (int d : deps[cur]) {
      if (rest.count(d)) {
        next = d;
        break;
      }
    }
    if (next < 0) break;
    cur = next;
  }
  std::string chain;
  for (size_t i = pos[cur]; i < path.size(); ++i) chain += ex.layers[path[i]].name + " <- ";
  chain += ex.layers[cur].name;
  diags.error(ex.layers[cur].loc, fmt::format("layers form a cycle: {}", chain));
}

}  // namespace

std::optional<ir::Graph> link_graph(Expansion& ex, const std::string& model_name,
                                    const std::vector<int>& output_slots, Diagnostics& diags) {
  const size_t n = ex.layers.size();
  std::vector<std::vector<int>> deps(n);
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    for (int s : ex.layers[i].input_slots) {
      const int d = resolve_slot(ex, s, diags);
      if (d < 0) {
        ok = false;
        continue;
      }
      deps[i].push_back(d);
    }
  }
  std::vector<int> out_layers;
  for (int slot : output_slots) {
    const int layer = resolve_slot(ex, slot, diags);
    if (layer == 0) {
      diags.error(ex.slots[slot].loc, "the model output is its input: no layer computes it");
      ok = false;
    } else if (std::find(out_layers.begin(), out_layers.end(), layer) != out_layers.end()) {
      diags.error(ex.slots[slot].loc,
                  fmt::format("output '{}' is layer '{}', which is already an output",
                              ex.slots[slot].name, ex.layers[layer].name));
      ok = false;
    }
    ok = ok && layer >= 0;
    out_layers.push_back(layer);
  }
  if (!ok) {
    if (!diags.has_errors()) diags.error(SourceLoc{}, "internal error: unresolved layer");
    return std::nullopt;
  }

  // The earliest-defined ready layer first, so the order follows the file wherever the
  // dependencies allow.
  const std::vector<int> order = ir::stable_topological_order(deps);
  if (order.size() != n) {
    std::vector<bool> placed(n, false);
    for (int i : order) placed[i] = true;
    std::vector<int> remaining;
    for (size_t i = 0; i < n; ++i) {
      if (!placed[i]) remaining.push_back(static_cast<int>(i));
    }
    report_cycle(ex, deps, remaining, diags);
    return std::nullopt;
  }

  // Every layer must contribute to an output.
  std::vector<bool> live(n, false);
  std::vector<int> stack = out_layers;
  for (int layer : out_layers) live[layer] = true;
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    for (int d : deps[i]) {
      if (!live[d]) {
        live[d] = true;
        stack.push_back(d);
      }
    }
  }
  const std::string outputs =
      out_layers.size() == 1 ? fmt::format("the model output '{}'", ex.layers[out_layers[0]].name)
                             : std::string("any model output");
  for (size_t i = 1; i < n; ++i) {
    if (!live[i]) {
      diags.error(ex.layers[i].loc,
                  fmt::format("layer '{}' does not contribute to {}", ex.layers[i].name, outputs));
      ok = false;
    }
  }
  if (!ok) return std::nullopt;

  ir::Graph g;
  g.name = model_name;
  std::vector<ir::ValueId> value_of(n, ir::kNoValue);
  for (int i : order) {
    LayerInst& l = ex.layers[i];
    std::vector<ir::ValueId> inputs;
    for (int d : deps[i]) inputs.push_back(value_of[d]);
    const int32_t node = g.add_node(l.op, l.name, std::move(inputs), std::move(l.attrs), l.loc);
    g.nodes[node].operand_tensor = l.operand_tensor;
    g.nodes[node].operand_role = l.operand_role;
    value_of[i] = g.nodes[node].output;
  }
  for (int layer : out_layers) g.outputs.push_back(value_of[layer]);
  return g;
}

}  // namespace zoc::yaml
