// Where the TorchScript frontend's symbolic interpreter (translate.cpp) reports from, and the
// names it gives: the origin of a node (its module and the most useful source position), the
// located errors and the one list of unsupported operations, the names of parameter-free layers,
// and the final check that every tensor a layer declares is in the module's state_dict. Apart
// from the walk because these decide what the user reads, not what the graph computes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/torchscript/internal.h"
#include "compiler/ir/shapes.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript::detail {
namespace {

constexpr size_t kMaxListedProblems = 40;

// PyTorch's own Python files: a position there says less than the user's line that called in.
bool inside_pytorch(const std::string& file) {
  return file.find("-packages/torch/") != std::string::npos ||
         file.rfind("code/__torch__/torch/", 0) == 0;
}

// The file name of TorchScript's own builtin functions (torch.rsub's body, for one).
constexpr const char* kBuiltinSource = "<string>";

}  // namespace

// One error listing every unsupported operation, each where it happens.
void Translator::report_problems(const SourceLoc& at) {
  // Arithmetic on sizes at the call site of an unsupported tensor op is that op's own argument
  // check, inlined from PyTorch (F.group_norm multiplies the batch size by the channels to
  // verify it): listing it beside the op would name something the user never wrote.
  auto same_call = [](const Origin& a, const Origin& b) {
    return a.module_path == b.module_path && a.loc.str() == b.loc.str();
  };
  auto inside_other = [&](const Problem& p) {
    return p.on_numbers && std::any_of(problems_.begin(), problems_.end(), [&](const Problem& q) {
             return !q.on_numbers && same_call(p.origin, q.origin);
           });
  };
  std::vector<std::pair<std::string, int>> lines;
  for (const Problem& p : problems_) {
    if (inside_other(p)) continue;
    std::string line = fmt::format(
        "{}: {} at {}",
        p.origin.module_path.empty() ? "(top-level module)" : shown_text(p.origin.module_path),
        p.what, p.origin.loc.str());
    auto it =
        std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == line; });
    if (it == lines.end()) {
      lines.emplace_back(std::move(line), 1);
    } else {
      ++it->second;
    }
  }
  std::string list;
  for (size_t i = 0; i < lines.size() && i < kMaxListedProblems; ++i) {
    list += "\n  " + lines[i].first +
            (lines[i].second > 1 ? fmt::format(" ({} times)", lines[i].second) : "");
  }
  if (lines.size() > kMaxListedProblems) {
    list += fmt::format("\n  ... and {} more", lines.size() - kMaxListedProblems);
  }
  diags_.error(at, fmt::format("{} unsupported operation{} (zoc maps {}):{}", lines.size(),
                               lines.size() == 1 ? "" : "s", mapped_ops_summary(), list));
}

// Every tensor a layer declares must be in the state_dict with the same shape, so that the
// weights `zoc extract-weights` writes always load. A parameter the module keeps fixed in
// training (requires_grad=False) is noted on its layer (Node::frozen) for the trainer.
void Translator::check_parameters() {
  Diagnostics scratch;
  if (!ir::infer_shapes(graph_, scratch)) return;  // the loader reports it, located
  auto shape_str = [](const std::vector<int64_t>& s) {
    return fmt::format("[{}]", fmt::join(s, ", "));
  };
  for (ir::Node& node : graph_.nodes) {
    for (ir::ParamSpec& p : node.params) {
      // Shape inference marks ParamSpec::frozen from this list (the loader runs it next).
      if (p.trainable && frozen_.count(p.name)) node.frozen.push_back(p.name);
      auto it = state_.find(p.name);
      if (it == state_.end()) {
        if (!p.optional) {
          diags_.error(node.loc, fmt::format("layer '{}' needs tensor '{}', which is not in the "
                                             "module's state_dict",
                                             shown_text(node.name), shown_text(p.name)));
        }
        continue;
      }
      const std::vector<int64_t> shape(it->second.sizes().begin(), it->second.sizes().end());
      if (shape != p.shape) {
        diags_.error(node.loc, fmt::format("layer '{}': tensor '{}' has shape {} in the module, "
                                           "but the layer as called needs {}",
                                           shown_text(node.name), shown_text(p.name),
                                           shape_str(shape), shape_str(p.shape)));
      }
    }
  }
}

Origin Translator::origin(jit::Node* n) const {
  Origin o;
  o.module_path = frames_.back().module_path;
  o.leaf = frames_.back().leaf;
  std::optional<SourceLoc> user, any;
  auto consider = [&](const jit::SourceRange& r) {
    auto loc = to_loc(r);
    if (!loc) return;
    any = loc;
    if (!inside_pytorch(loc->file) && loc->file != kBuiltinSource) user = loc;
  };
  for (size_t i = 1; i < frames_.size(); ++i) consider(frames_[i].call_site);
  consider(n->sourceRange());
  // TorchScript's builtins (torch.rsub's `other - self`, compiled from "<string>") are inlined
  // with their own positions; the constants the user wrote beside them keep the user's. A list
  // built for a call (prim::ListConstruct) has no position, nor has a dict literal: its user's
  // is where it is written.
  const bool builtin = !user && any && any->file == kBuiltinSource;
  const bool list = n->kind() == c10::prim::ListConstruct ||
                    n->kind() == c10::prim::TupleConstruct || n->kind() == c10::prim::DictConstruct;
  if (builtin || (!any && list)) {
    for (jit::Value* out : n->outputs()) {
      for (const jit::Use& u : out->uses()) {
        if (!builtin) consider(u.user->sourceRange());
        for (jit::Value* in : u.user->inputs()) {
          if (builtin && in->node()->kind() == c10::prim::Constant) {
            consider(in->node()->sourceRange());
          }
        }
      }
    }
  }
  o.loc = user ? *user : any ? *any : SourceLoc{path_, 0, 0};
  return o;
}

// The position in the original Python file where the archive has it (its .debug_pkl records),
// else in the archive's serialized code.
std::optional<SourceLoc> Translator::to_loc(const jit::SourceRange& r) const {
  try {
    if (!r.source()) return std::nullopt;
    jit::SourceRange use = r;
    if (auto original = r.findSourceRangeThatGenerated()) use = *original;
    auto flc = use.file_line_col();
    if (!flc || std::get<0>(*flc).empty() || std::get<1>(*flc) == 0) return std::nullopt;
    // Column 0 is what the tracer records for "somewhere on this line": leave it out.
    const int col = static_cast<int>(std::get<2>(*flc));
    // The file name comes from the archive's debug records: printed, so escaped.
    return SourceLoc{shown_text(std::get<0>(*flc)), static_cast<int>(std::get<1>(*flc)),
                     col > 0 ? col + 1 : 0};
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable debug records: report without a position
  }
}

void Translator::unsupported(jit::Node* n, const std::string& why) {
  std::string what = shown_text(n->kind().toQualString());
  if (!why.empty()) what += " (" + why + ")";
  const bool on_numbers = std::none_of(n->inputs().begin(), n->inputs().end(), [](jit::Value* v) {
    return v->type()->kind() == c10::TypeKind::TensorType;
  });
  problems_.push_back({std::move(what), origin(n), on_numbers});
  poison_outputs(n);
}

void Translator::not_folded(jit::Node* n, const std::string& why) {
  problems_.push_back(
      {shown_text(n->kind().toQualString()) + " is not evaluated at compile time: " + why,
       origin(n)});
  poison_outputs(n);
}

void Translator::error(jit::Node* n, const std::string& message) {
  const Origin o = origin(n);
  diags_.error(o.loc, o.module_path.empty()
                          ? message
                          : fmt::format("in '{}': {}", shown_text(o.module_path), message));
  fatal_ = true;
  poison_outputs(n);
}

std::string Translator::fresh_name(const Origin& o, ir::OpKind op) const {
  const std::string base = o.leaf && !o.module_path.empty()
                               ? o.module_path
                               : join_path(o.module_path, std::string(ir::op_info(op).name));
  auto taken = [&](const std::string& s) {
    return used_names_.count(s) > 0 || reserved_names_.count(s) > 0;
  };
  if (!taken(base)) return base;
  for (int k = 1;; ++k) {
    std::string s = fmt::format("{}_{}", base, k);
    if (!taken(s)) return s;
  }
}

}  // namespace zoc::torchscript::detail
