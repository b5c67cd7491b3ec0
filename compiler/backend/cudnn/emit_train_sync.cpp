// The trainer's data-parallel hooks (issue 21): where in the backward pass each bucket of the
// gradient buffer is complete, so that its all-reduce starts there and overlaps the rest of the
// backward pass (zoc/train/dist.h runs them), and the CMake section that finds NCCL.
//
// Buckets follow PyTorch DDP's defaults: gradients are grouped, from the last parameter (the
// first the backward pass finishes) towards the first, into about 25 MB per bucket, the first
// bucket about 1 MB so that communication starts early; a tensor is never split. Trainable
// parameters lie in model order in one buffer, so a bucket is one contiguous range and its last
// writer is the earliest layer owning a tensor in it: the hook goes right after that layer's
// backward call.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/backend/cudnn/train_emitter.h"

namespace zoc::cudnn::train {
namespace {
constexpr int64_t kFirstBucketBytes = int64_t(1) << 20;
constexpr int64_t kBucketBytes = int64_t(25) << 20;
}  // namespace

void TrainerEmitter::plan_buckets() {
  // The node owning each trainable tensor, by offset.
  std::vector<std::pair<const ParamSlot*, size_t>> owned;
  for (size_t k = 0; k < g_.nodes.size(); ++k) {
    for (const ir::ParamSpec& p : g_.nodes[k].params) {
      auto it = param_index_.find(p.name);
      if (it != param_index_.end() && params_[it->second].trainable) {
        owned.emplace_back(&params_[it->second], k);
      }
    }
  }
  std::sort(owned.begin(), owned.end(),
            [](const auto& a, const auto& b) { return a.first->offset > b.first->offset; });
  buckets_.clear();
  GradBucket open;
  bool any = false;
  for (const auto& [slot, node] : owned) {
    if (!any) open = {slot->offset + slot->count, 0, node};
    open.offset = slot->offset;
    open.count += slot->count;
    open.last_node = std::min(open.last_node, node);
    any = true;
    const int64_t cap = buckets_.empty() ? kFirstBucketBytes : kBucketBytes;
    if (open.count * 4 >= cap) {
      buckets_.push_back(open);
      any = false;
    }
  }
  if (any) buckets_.push_back(open);
}

void TrainerEmitter::emit_bucket_hooks(size_t k) {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b].last_node != k) continue;
    backward_.line("if (sync_) ZOC_TRY(sync_->bucket_ready({}, g + {}, {}, stream));  // complete: average",
                   b, buckets_[b].offset, buckets_[b].count);
  }
}

void TrainerEmitter::emit_sync_members(CodeWriter& h) const {
  h.line("// Gradient buckets for data-parallel training (zoc/train/dist.h), in the order the");
  h.line("// backward pass completes them: [offset, offset + count) of grads().");
  h.line("struct Bucket {{");
  h.line("  size_t offset, count;");
  h.line("}};");
  h.line("static constexpr int kBuckets = {};", buckets_.size());
  h.line("static const Bucket kBucketTable[kBuckets];");
  h.line("// Data parallel: step() averages each bucket over the processes as soon as the");
  h.line("// backward pass completes it (nullptr: one process). Dropout masks then differ per");
  h.line("// process through set_dropout_seed().");
  h.line("void set_grad_sync(zoc::train::GradSync* sync) {{ sync_ = sync; }}");
  h.line("void set_dropout_seed(uint64_t seed) {{ dropout_seed_ = seed; }}");
}

void TrainerEmitter::emit_bucket_table(CodeWriter& c, const std::string& cls) const {
  auto t = c.block(fmt::format("const {0}::Bucket {0}::kBucketTable[{0}::kBuckets] =", cls), "};");
  for (const GradBucket& b : buckets_) c.line("{{{}, {}}},", b.offset, b.count);
}

std::string TrainerEmitter::nccl_cmake(const std::string& base) const {
  CodeWriter cm;
  cm.line("# Data-parallel training (zoc/train/dist.h) needs NCCL, from NCCL_ROOT or the CUDA");
  cm.line("# toolkit; without it the trainer runs in one process (WORLD_SIZE > 1 is refused).");
  cm.line("find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${{NCCL_ROOT}}/include ${{CUDAToolkit_INCLUDE_DIRS}})");
  cm.line("find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2");
  cm.line("             HINTS ${{NCCL_ROOT}}/lib ${{NCCL_ROOT}}/lib64 ${{CUDAToolkit_LIBRARY_DIR}})");
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

}  // namespace zoc::cudnn::train
