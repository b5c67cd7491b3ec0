// Graph surgery helpers (see rewrite.h).
#include "compiler/ir/rewrite.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace zoc::ir {

UseIndex::UseIndex(Graph& g) : g_(g), uses_(g.values.size()) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const std::vector<ValueId>& in = g.nodes[i].inputs;
    for (size_t k = 0; k < in.size(); ++k) {
      uses_[static_cast<size_t>(in[k])].push_back(
          {static_cast<int32_t>(i), static_cast<int32_t>(k)});
    }
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    uses_[static_cast<size_t>(g.outputs[k])].push_back({kGraphOutput, static_cast<int32_t>(k)});
  }
}

void UseIndex::replace(ValueId from, ValueId to) {
  if (from == to) return;
  std::vector<Use>& moved = uses_[static_cast<size_t>(from)];
  for (const Use& u : moved) {
    const auto slot = static_cast<size_t>(u.slot);
    ValueId& v = u.node == kGraphOutput ? g_.outputs[slot]
                                        : g_.nodes[static_cast<size_t>(u.node)].inputs[slot];
    v = to;
  }
  // The shorter list joins the longer (order does not matter), so a use moves O(log n) times
  // however the rewrites chain.
  std::vector<Use>& target = uses_[static_cast<size_t>(to)];
  if (moved.size() > target.size()) moved.swap(target);
  target.insert(target.end(), moved.begin(), moved.end());
  moved.clear();
}

int use_count(const Graph& g, ValueId v) {
  int count = 0;
  for (const Node& n : g.nodes) {
    for (ValueId in : n.inputs) count += in == v;
  }
  for (ValueId out : g.outputs) count += out == v;
  return count;
}

std::vector<int> stable_topological_order(const std::vector<std::vector<int>>& deps) {
  const size_t n = deps.size();
  std::vector<std::vector<int>> users(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int d : deps[i]) users[d].push_back(static_cast<int>(i));
    pending[i] = deps[i].size();
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(static_cast<int>(i));
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  return order;
}

bool compact_and_sort(Graph& g, const std::vector<bool>& remove) {
  const size_t n = g.nodes.size();
  std::vector<int> producer_of(g.values.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    if (remove[i]) continue;
    for (ValueId v : Graph::results(g.nodes[i])) producer_of[v] = static_cast<int>(i);
  }
  std::vector<std::vector<int>> deps(n);  // removed nodes keep none and are dropped below
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (remove[i]) continue;
    ++kept;
    for (ValueId v : g.nodes[i].inputs) {
      const int p = producer_of[v];
      if (p < 0) return false;  // reads a removed or unknown value
      deps[i].push_back(p);
    }
  }
  std::vector<int> order = stable_topological_order(deps);
  order.erase(std::remove_if(order.begin(), order.end(), [&](int i) { return remove[i]; }),
              order.end());
  if (order.size() != kept) return false;
  apply_order(g, order);
  return true;
}

void apply_order(Graph& g, const std::vector<int>& order) {
  Graph out;
  out.name = g.name;
  std::vector<ValueId> new_value(g.values.size(), kNoValue);
  for (int i : order) {
    Node node = std::move(g.nodes[i]);
    for (ValueId& v : node.inputs) v = new_value[v];
    const auto index = static_cast<int32_t>(out.nodes.size());
    auto renumber = [&](ValueId& v) {
      const ValueId old = v;
      v = static_cast<ValueId>(out.values.size());
      out.values.push_back(Value{g.values[old].type, index, g.values[old].name, std::nullopt});
      new_value[old] = v;
    };
    renumber(node.output);
    for (ValueId& v : node.extra_outputs) renumber(v);
    out.nodes.push_back(std::move(node));
  }
  for (ValueId v : g.outputs) out.outputs.push_back(new_value[v]);
  g = std::move(out);
}

}  // namespace zoc::ir
