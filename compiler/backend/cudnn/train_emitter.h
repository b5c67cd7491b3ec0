// The trainer emitter's state, shared by its two files: emit_trainer.cpp (the plan: values,
// parameters, aliases; and the generated files) and emit_train_layers.cpp (each layer's
// forward and backward calls). See emit_trainer.cpp for what the trainer is.
#pragma once

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/cudnn/emit_internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn::train {

// A range of the gradient buffer all-reduced as one (data-parallel training), complete after the
// backward call of node `last_node`.
struct GradBucket {
  int64_t offset = 0, count = 0;
  size_t last_node = 0;
};

struct ParamSlot {
  std::string name;
  int64_t offset = 0, count = 0;
  std::vector<int64_t> shape;
  bool trainable = true;
  std::string rule;  // zoc::InitRule used when no weights file is given
  int64_t fan = 0;   // its fan: fan_in (uniform) or fan_out (normal)
};

class TrainerEmitter {
 public:
  TrainerEmitter(const ir::Graph& g, const EmitOptions& o, Diagnostics& d)
      : g_(g), o_(o), diags_(d) {}
  std::optional<Generated> run();

 private:
  bool plan();
  void plan_gradients();
  // Data-parallel hooks (emit_train_sync.cpp).
  void plan_buckets();
  void emit_bucket_hooks(size_t k);
  void emit_sync_members(CodeWriter& h) const;
  void emit_bucket_table(CodeWriter& c, const std::string& cls) const;
  std::string nccl_cmake(const std::string& base) const;
  bool emit_node(const ir::Node& n);
  void emit_backward(const ir::Node& n);
  ir::ValueId root(ir::ValueId v) const { return alias_[static_cast<size_t>(v)]; }
  std::string A(ir::ValueId v) const {  // activation of v
    return fmt::format("a + size_t({}) * B", act_off_.at(root(v)));
  }
  std::string D(ir::ValueId v) const {  // gradient of v
    return fmt::format("d + size_t({}) * B", grad_off_.at(root(v)));
  }
  std::string P(const std::string& name) const { return fmt::format("p + {}", slot(name).offset); }
  std::string G(const std::string& name) const { return fmt::format("g + {}", slot(name).offset); }
  const ParamSlot& slot(const std::string& name) const { return params_[param_index_.at(name)]; }
  std::string lit(const ir::Node& n) const { return fmt::format("\"{}\"", sanitize_comment(n.name)); }
  std::string id(const ir::Node& n) const { return ids_.at(&n); }
  // The node's place in the graph: each dropout layer's masks differ by it.
  int64_t node_index(const ir::Node& n) const { return &n - g_.nodes.data(); }
  void comment(CodeWriter& w, const ir::Node& n, const std::string& what) const {
    w.line("// {}: {}{}", sanitize_comment(n.name), what,
           n.loc.known() ? fmt::format("  ({})", sanitize_comment(n.loc.str())) : "");
  }
  bool unsupported(const ir::Node& n, const std::string& why) {
    diags_.error(n.loc, fmt::format("layer '{}' ({}): the trainer does not support {}", n.name,
                                    ir::op_info(n.op).name, why));
    return false;
  }

  const ir::Graph& g_;
  const EmitOptions& o_;
  Diagnostics& diags_;
  std::vector<ir::ValueId> alias_;           // per value: the value whose buffer it uses
  std::map<ir::ValueId, int64_t> act_off_;   // per root value: elements per sample before it
  int64_t act_per_sample_ = 0;
  std::map<ir::ValueId, int64_t> grad_off_;  // per root value with a gradient: its offset
  int64_t grad_per_sample_ = 0;
  std::map<int64_t, std::vector<ir::ValueId>> zero_at_;  // per node: gradients zeroed before
                                                         // its backward call
  std::vector<ParamSlot> params_;
  std::map<std::string, size_t> param_index_;
  int64_t param_elements_ = 0, trainable_elements_ = 0;
  std::vector<GradBucket> buckets_;
  bool has_dropout_ = false;
  std::map<const ir::Node*, std::string> ids_;
  std::map<const ir::Node*, int64_t> bn_save_;  // per BN: offset of its saved statistics
  int64_t bn_save_elements_ = 0;
  std::vector<bool> needs_grad_;  // per value: on the path from a parameter to the loss
  ir::ValueId input_ = ir::kNoValue, logits_ = ir::kNoValue;
  int64_t classes_ = 0;
  CodeWriter members_, create_, describe_, backward_, destroy_;
  // Forward: emit_node writes one node's training-mode calls into forward_ and, where evaluation
  // differs (batch norm, dropout), its evaluation calls into eval_node_ with eval_only_ set; run()
  // collects them into train_forward_ and eval_forward_.
  CodeWriter forward_, eval_node_, train_forward_, eval_forward_;
  bool eval_only_ = false;
};


}  // namespace zoc::cudnn::train
