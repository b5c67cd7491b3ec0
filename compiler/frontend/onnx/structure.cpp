// The graph's wiring, checked before ONNX's checker runs: every value has exactly one producer
// (a graph input, an initializer or one node), every node input and graph output has one, and
// nodes come in topological order; when they do not, whether that is a cycle, named node by
// node. ONNX's checker reports all of these as "not topologically sorted" without telling a
// dangling name from a cycle, and a user fixing an exporter needs to know which it is.
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/frontend/onnx/internal.h"

namespace zoc::onnx::detail {
namespace {

constexpr int kGraphValue = -1;  // produced by a graph input or an initializer

// One cycle among the nodes Kahn's algorithm could not order, as "a -> b -> a".
std::string find_cycle(const pb::GraphProto& g, const std::vector<std::vector<int>>& deps,
                       const std::vector<bool>& ordered) {
  std::vector<int> pos(static_cast<size_t>(g.node_size()), -1), path;
  int cur = 0;
  while (ordered[static_cast<size_t>(cur)]) ++cur;
  while (pos[static_cast<size_t>(cur)] < 0) {
    pos[static_cast<size_t>(cur)] = static_cast<int>(path.size());
    path.push_back(cur);
    int next = -1;
    for (int d : deps[static_cast<size_t>(cur)]) {
      if (!ordered[static_cast<size_t>(d)]) {
        next = d;
        break;
      }
    }
    if (next < 0) break;  // cannot happen: every unordered node waits on another
    cur = next;
  }
  // path[k] reads path[k + 1] and the last reads `cur`: data flows from `cur` backwards.
  std::string chain = describe_node(g.node(cur), cur);
  for (size_t i = path.size(); i-- > static_cast<size_t>(pos[static_cast<size_t>(cur)]);) {
    chain += " -> " + describe_node(g.node(path[i]), path[i]);
  }
  return chain;
}

// Kahn's algorithm over node indices; true if every node could be ordered.
bool orderable(const pb::GraphProto& g, const std::vector<std::vector<int>>& deps,
               std::vector<bool>& ordered) {
  const size_t n = static_cast<size_t>(g.node_size());
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i) {
    for (int d : deps[i]) {
      ++waiting[i];
      users[static_cast<size_t>(d)].push_back(static_cast<int>(i));
    }
  }
  std::vector<int> ready;
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push_back(static_cast<int>(i));
  }
  size_t done = 0;
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    ordered[static_cast<size_t>(i)] = true;
    ++done;
    for (int u : users[static_cast<size_t>(i)]) {
      if (--waiting[static_cast<size_t>(u)] == 0) ready.push_back(u);
    }
  }
  return done == n;
}

}  // namespace

std::string describe_node(const pb::NodeProto& n, int index) {
  if (n.name().empty()) return fmt::format("node #{} ({})", index, shown_text(n.op_type()));
  return fmt::format("node '{}' ({}, #{})", shown_text(n.name()), shown_text(n.op_type()), index);
}

SourceLoc node_loc(const std::string& path, const pb::NodeProto& n, int index) {
  return SourceLoc{fmt::format("{}: {}", path, describe_node(n, index)), 0, 0};
}

bool check_graph_structure(const pb::GraphProto& g, const std::string& path, Diagnostics& diags) {
  const size_t before = diags.error_count();
  std::unordered_map<std::string, int> producer;
  for (const pb::ValueInfoProto& v : g.input()) producer.emplace(v.name(), kGraphValue);
  for (const pb::TensorProto& t : g.initializer()) producer.emplace(t.name(), kGraphValue);
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& out : g.node(i).output()) {
      if (out.empty()) continue;
      auto [it, fresh] = producer.emplace(out, i);
      if (!fresh) {
        diags.error(
            node_loc(path, g.node(i), i),
            fmt::format("its output '{}' is also produced by {}", shown_text(out),
                        it->second == kGraphValue ? std::string("a graph input or initializer")
                                                  : describe_node(g.node(it->second), it->second)));
      }
    }
  }
  std::vector<std::vector<int>> deps(static_cast<size_t>(g.node_size()));
  int first_late = -1;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& in : g.node(i).input()) {
      if (in.empty()) continue;  // an omitted optional input
      auto it = producer.find(in);
      if (it == producer.end()) {
        diags.error(node_loc(path, g.node(i), i),
                    fmt::format("its input '{}' is produced by no node, initializer or graph "
                                "input",
                                shown_text(in)));
      } else if (it->second != kGraphValue) {
        deps[static_cast<size_t>(i)].push_back(it->second);
        if (it->second >= i && first_late < 0) first_late = i;
      }
    }
  }
  for (const pb::ValueInfoProto& v : g.output()) {
    if (!producer.count(v.name())) {
      diags.error(SourceLoc{path, 0, 0},
                  fmt::format("graph output '{}' is produced by no node", shown_text(v.name())));
    }
  }
  if (diags.error_count() != before || first_late < 0) return diags.error_count() == before;
  std::vector<bool> ordered(static_cast<size_t>(g.node_size()), false);
  if (!orderable(g, deps, ordered)) {
    diags.error(SourceLoc{path, 0, 0},
                fmt::format("nodes form a cycle: {}", find_cycle(g, deps, ordered)));
    return false;
  }
  diags.error(node_loc(path, g.node(first_late), first_late),
              "it reads a value produced by a node after it; ONNX requires the nodes of a graph "
              "in topological order");
  return false;
}

}  // namespace zoc::onnx::detail
