// Where in the backward pass gradients are complete, for the trainer's hooks there: each bucket
// of the gradient buffer, so that its all-reduce starts there and overlaps the rest of the
// backward pass (issue 21; zoc/train/dist.h runs them); each node's own gradients, so that a
// one-process SGD run updates their tensors right there and needs no gradient buffer (issue 38;
// zoc/train/trainer.h's use_fused_sgd); and the CMake section that finds NCCL.
//
// Buckets follow PyTorch DDP's defaults: gradients are grouped, from the last parameter (the
// first the backward pass finishes) towards the first, into about 25 MB per bucket, the first
// bucket about 1 MB so that communication starts early; a tensor is never split. Trainable
// parameters lie in model order in one buffer, so a bucket is one contiguous range and its last
// writer is the backward node of the earliest layer owning a tensor in it: the hook goes right
// after that node.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/backend/cudnn/train_emitter.h"

namespace zoc::cudnn {
namespace {
constexpr int64_t kFirstBucketBytes = int64_t(1) << 20;
constexpr int64_t kBucketBytes = int64_t(25) << 20;
}  // namespace

std::vector<GradBucket> plan_buckets(const ir::Graph& g, const TrainInfo& info) {
  // The node of the training graph that writes each trainable tensor's gradient, by offset.
  std::vector<std::pair<const ParamSlot*, size_t>> owned;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (ir::ValueId v : g.nodes[k].extra_outputs) {
      const std::string& name = g.value_name(v);
      if (name.rfind("grad.", 0) != 0) continue;
      auto it = info.param_index.find(name.substr(5));
      if (it != info.param_index.end() && info.params[it->second].trainable) {
        owned.emplace_back(&info.params[it->second], k);
      }
    }
  }
  std::sort(owned.begin(), owned.end(),
            [](const auto& a, const auto& b) { return a.first->offset > b.first->offset; });
  std::vector<GradBucket> buckets;
  GradBucket open;
  bool any = false;
  int64_t end = 0;  // of the open bucket's first (highest) tensor
  for (const auto& [slot, node] : owned) {
    if (!any) open = {0, 0, node}, end = slot->offset + slot->count;
    open.offset = slot->offset;
    open.count = end - slot->offset;  // with the gaps a bf16 trainer's alignment leaves (zeros)
    open.last_node = std::max(open.last_node, node);  // the backward pass runs in graph order
    any = true;
    const int64_t cap = buckets.empty() ? kFirstBucketBytes : kBucketBytes;
    if (open.count * 4 >= cap) {
      buckets.push_back(open);
      any = false;
    }
  }
  if (any) buckets.push_back(open);
  return buckets;
}

// A tensor's update may follow the node that writes its gradient only when no later node of the
// backward pass reads the tensor: a later node whose origin is a layer owning it would (the
// layers a tensor belongs to: those listing it among their parameters). SGD over one node's
// tensors reads their gradients from a window as wide as the node's span of the layout; runs
// stop at the gaps a bf16 trainer's alignment leaves, which no gradient writes. A frozen
// parameter has no gradient (its layer's backward call skips it), so frozen layers keep this.
void plan_updates(const ir::Graph& model, const ir::Graph& g, TrainInfo& info) {
  std::map<std::string, std::set<std::string>> owners;  // tensor -> layers listing it
  for (const ir::Node& n : model.nodes) {
    for (const ir::ParamSpec& p : n.params) owners[p.name].insert(n.name);
  }
  std::map<std::string, size_t> written;  // tensor -> the node writing its gradient
  std::vector<GradUpdate> updates;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].op == ir::OpKind::Sgd) continue;
    std::vector<const ParamSlot*> slots;
    for (ir::ValueId v : g.nodes[k].extra_outputs) {
      const std::string& name = g.value_name(v);
      if (name.rfind("grad.", 0) != 0) continue;
      auto it = info.param_index.find(name.substr(5));
      if (it == info.param_index.end()) continue;
      if (!written.emplace(it->first, k).second) return;  // two writers
      slots.push_back(&info.params[it->second]);
    }
    if (slots.empty()) continue;
    std::sort(slots.begin(), slots.end(),
              [](const ParamSlot* a, const ParamSlot* b) { return a->offset < b->offset; });
    GradUpdate u{k, slots.front()->offset, {}};
    for (const ParamSlot* s : slots) {
      if (!u.runs.empty() && u.runs.back().first + u.runs.back().second == s->offset) {
        u.runs.back().second += s->count;
      } else {
        u.runs.emplace_back(s->offset, s->count);
      }
    }
    updates.push_back(std::move(u));
  }
  std::map<std::string, size_t> last_read;  // layer -> the last backward node reading its tensors
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    if (g.nodes[j].op != ir::OpKind::Sgd && !g.nodes[j].origin.empty()) {
      last_read[g.nodes[j].origin] = j;
    }
  }
  for (const ParamSlot& p : info.params) {
    if (!p.trainable) continue;
    auto w = written.find(p.name);
    if (w == written.end()) return;  // no gradient: SGD's weight decay still moves it
    for (const std::string& layer : owners[p.name]) {
      auto r = last_read.find(layer);
      if (r != last_read.end() && r->second > w->second) return;
    }
  }
  info.updates = std::move(updates);
  for (const GradUpdate& u : info.updates) {
    // A bf16 convolution's weight gradient goes from cuDNN's bf16 buffer straight into its
    // update (zoc/train_layers/run_step.h's conv_grad): it needs no window.
    const ir::Node& n = g.nodes[u.node];
    if (info.mixed() && n.op == ir::OpKind::Conv2dGrad &&
        !trains_own_depthwise(g, g.nodes[info.node_index.at(n.origin)])) {
      continue;
    }
    const auto& last = u.runs.back();
    info.grad_window_elements =
        std::max(info.grad_window_elements, last.first + last.second - u.origin);
  }
  if (!info.updates.empty())
    info.grad_window_elements = std::max<int64_t>(info.grad_window_elements, 1);
}

std::string nccl_cmake(const std::string& base) {
  CodeWriter cm;
  cm.line("# Data-parallel training (zoc/train/dist.h) needs NCCL, from NCCL_ROOT or the CUDA");
  cm.line("# toolkit; without it the trainer runs in one process (WORLD_SIZE > 1 is refused).");
  cm.line(
      "find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${{NCCL_ROOT}}/include "
      "${{CUDAToolkit_INCLUDE_DIRS}})");
  cm.line("find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2");
  cm.line(
      "             HINTS ${{NCCL_ROOT}}/lib ${{NCCL_ROOT}}/lib64 ${{CUDAToolkit_LIBRARY_DIR}})");
  cm.line("if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)");
  cm.line("  target_include_directories({} PUBLIC ${{NCCL_INCLUDE_DIR}})", base);
  cm.line("  target_link_libraries({} PUBLIC ${{NCCL_LIBRARY}})", base);
  cm.line("  target_compile_definitions({} PUBLIC ZOC_WITH_NCCL=1)", base);
  cm.line("  message(STATUS \"NCCL: ${{NCCL_LIBRARY}} (data-parallel training)\")");
  cm.line("else()");
  cm.line("  message(STATUS \"NCCL not found (set NCCL_ROOT): one process only\")");
  cm.line("endif()");
  return cm.str();
}

}  // namespace zoc::cudnn
