// The forward-pass rules and the per-model inventory.
//
// What a forward pass may do is decided by what it can reach, so this file finds each model
// class (a class in the generated folder with a `forward` member), walks the call graph from
// forward's definition through every generated function it can call, and judges each call
// site on the way: allocation or release, descriptor/handle/plan creation or destruction, a
// throw, or a call that leaves both the generated code and the CUDA/cuDNN/cuBLAS C APIs. Each
// finding names the chain of calls that reaches it, so the fix is obvious. The inventory then
// counts, statically, what one pass costs (library calls and kernel launches of the straight
// line), what construction builds (descriptor bundles, descriptors, handles, allocations) and
// the arena sizes the header declares.
#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Frontend/ASTUnit.h>

#include <deque>
#include <set>

#include "callgraph.h"

namespace zoc_verify {

namespace {

struct ModelClass {
  const clang::CXXRecordDecl* record = nullptr;
  const clang::CXXMethodDecl* forward = nullptr;  // its declaration
};

// A method named `name` declared by `record` or by one of its bases (a generated model derives
// forward() and the rest of its skeleton from zoc::Model<M>, a template in the runtime copy).
const clang::CXXMethodDecl* find_method(const clang::CXXRecordDecl* record, const char* name) {
  if (!record || !record->hasDefinition()) return nullptr;
  record = record->getDefinition();
  for (const clang::CXXMethodDecl* method : record->methods()) {
    if (method->getNameAsString() == name) return method;
  }
  for (const clang::CXXBaseSpecifier& base : record->bases()) {
    if (const clang::CXXMethodDecl* m = find_method(base.getType()->getAsCXXRecordDecl(), name)) {
      return m;
    }
  }
  return nullptr;
}

// Classes defined in a file directly in the generated folder (<model>.h; not the zoc/ runtime
// copy) that have `forward` (declared or inherited), or `step` (a generated trainer: its
// per-batch path is held to the same rules).
class ModelFinder : public clang::RecursiveASTVisitor<ModelFinder> {
 public:
  ModelFinder(Locator* locator, std::vector<ModelClass>* out) : locator_(locator), out_(out) {}
  bool VisitCXXRecordDecl(clang::CXXRecordDecl* record) {
    if (!record->isThisDeclarationADefinition() || record->isDependentContext()) return true;
    // zoc::Model<M> itself is instantiated in the folder but defined in the runtime copy.
    if (llvm::isa<clang::ClassTemplateSpecializationDecl>(record)) return true;
    const clang::SourceManager& sm = record->getASTContext().getSourceManager();
    const Place p = locator_->place(sm, record->getLocation());
    const std::string& folder = locator_->sources().folder;
    if (!p.valid() || !path_below(p.path, {folder}) ||
        p.path.find('/', folder.size() + 1) != std::string::npos) {
      return true;
    }
    // An inference model's forward, or a generated trainer's step: the per-batch paths.
    const clang::CXXMethodDecl* method = find_method(record, "forward");
    if (!method) method = find_method(record, "step");
    if (!method) return true;
    const std::string name = record->getQualifiedNameAsString();
    for (const ModelClass& known : *out_) {
      if (known.record->getQualifiedNameAsString() == name) return true;
    }
    out_->push_back({record, method});
    return true;
  }

 private:
  Locator* locator_;
  std::vector<ModelClass>* out_;
};

struct Key {
  const clang::FunctionDecl* fn;
  Mode mode;
  bool operator<(const Key& o) const { return fn != o.fn ? fn < o.fn : mode < o.mode; }
};

class ForwardWalk {
 public:
  ForwardWalk(CallGraph* graph, Report* report, Inventory* inventory)
      : graph_(graph), report_(report), inventory_(inventory) {}

  void run(const clang::FunctionDecl* forward) {
    const Key root{forward, Mode::kNormal};
    parent_.emplace(root, root);
    std::deque<Key> queue = {root};
    std::set<std::string> listed;
    while (!queue.empty()) {
      const Key at = queue.front();
      queue.pop_front();
      if (at.mode != Mode::kError && listed.insert(qualified_name(at.fn)).second) {
        inventory_->reached.push_back(qualified_name(at.fn));
      }
      for (const Site& site : graph_->sites(at.fn)) {
        const Mode mode = combine(at.mode, site.mode);
        judge(site, mode, at);
        if (site.target != Target::kGenerated || !site.body) continue;
        const Key next{site.body, mode};
        if (parent_.emplace(next, at).second) queue.push_back(next);
      }
    }
  }

 private:
  std::string chain(Key at) const {
    std::vector<std::string> names;
    for (;;) {
      names.push_back(qualified_name(at.fn));
      const Key up = parent_.at(at);
      if (up.fn == at.fn && up.mode == at.mode) break;
      at = up;
    }
    std::string text;
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
      text += (text.empty() ? "" : " -> ") + *it;
    }
    return text;
  }

  void add(const Site& site, const char* rule_name, const std::string& message, Key at) {
    report_->findings.push_back(graph_->locator().finding(
        site.place, rule_name, message + " (reached by " + chain(at) + ")"));
  }

  void judge(const Site& site, Mode mode, Key at) {
    if (!site.place.valid()) return;
    if (site.kind == Site::Kind::kThrow) {
      add(site, rule::kException, "exception thrown on forward's path", at);
      return;
    }
    if (site.heap || site.lifetime) {
      const char* rule_name = site.heap ? rule::kHeapAllocation : rule::kDescriptorLifetime;
      if (mode == Mode::kOneTime) {
        inventory_->one_time.push_back(
            {graph_->locator().where(site.place), site.name + " (" + rule_name + ")"});
      } else if (mode == Mode::kNormal) {
        std::string what;
        if (site.heap) {
          const bool release = site.kind == Site::Kind::kDelete || site.name == "free" ||
                               site.name.find("Free") != std::string::npos ||
                               site.name.find("delete") != std::string::npos;
          what = "'" + site.name + "' " + (release ? "releases" : "allocates") + " memory";
        } else {
          const bool destroy = site.name.find("Destroy") != std::string::npos;
          what = "'" + site.name + "' " + (destroy ? "destroys" : "creates") +
                 " a descriptor, handle, graph or plan";
        }
        add(site, rule_name, what + " on forward's path", at);
      }
      return;
    }
    if (mode == Mode::kError) return;  // building the returned error's message
    if (mode == Mode::kOneTime &&
        (site.target == Target::kExternal || site.target == Target::kUndefined)) {
      inventory_->one_time_external.insert(site.name);  // listed, not an error
      return;
    }
    if (site.target == Target::kExternal) {
      add(site, rule::kExternalCall,
          "call to '" + site.name +
              "', which is neither generated code nor a CUDA/cuDNN/cuBLAS C API function",
          at);
    } else if (site.target == Target::kUndefined) {
      add(site, rule::kExternalCall,
          "call to '" + site.name +
              "', declared in generated code but defined in no parsed host source or .cu file",
          at);
    }
  }

  CallGraph* graph_;
  Report* report_;
  Inventory* inventory_;
  std::map<Key, Key> parent_;
};

// Static call-site counts below a function, normal path only; keys "lib:", "kernel:", "fn:".
class Counter {
 public:
  explicit Counter(CallGraph* graph) : graph_(graph) {}
  Counts count(const clang::FunctionDecl* fn) {
    auto done = memo_.find(fn);
    if (done != memo_.end()) return done->second;
    if (!active_.insert(fn).second) return {};  // recursion: counted once
    Counts counts;
    for (const Site& site : graph_->sites(fn)) {
      if (site.mode != Mode::kNormal) continue;
      if (site.target == Target::kLibrary) ++counts["lib:" + site.name];
      if (site.target == Target::kKernelWrapper) ++counts["kernel:" + site.name];
      if (site.target != Target::kGenerated || !site.body) continue;
      if (site.kind == Site::Kind::kCall) ++counts["fn:" + site.name];
      for (const auto& [name, n] : count(site.body)) counts[name] += n;
    }
    active_.erase(fn);
    return memo_.emplace(fn, std::move(counts)).first->second;
  }

 private:
  CallGraph* graph_;
  std::set<const clang::FunctionDecl*> active_;
  std::map<const clang::FunctionDecl*, Counts> memo_;
};

Counts with_prefix(const Counts& all, const std::string& prefix) {
  Counts out;
  for (const auto& [name, n] : all) {
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = n;
  }
  return out;
}

// The definition of member `name` of `record` or a base: a method, or the first instantiation
// of a member template (run_layers<kProfile>: its first is the forward pass's, kProfile false).
const clang::FunctionDecl* member_definition(CallGraph* graph, const clang::CXXRecordDecl* record,
                                             const char* name) {
  if (const clang::CXXMethodDecl* method = find_method(record, name)) {
    return graph->definition(method);
  }
  if (!record || !record->hasDefinition()) return nullptr;
  record = record->getDefinition();
  for (const clang::Decl* decl : record->decls()) {
    const auto* tmpl = llvm::dyn_cast<clang::FunctionTemplateDecl>(decl);
    if (!tmpl || tmpl->getNameAsString() != name) continue;
    for (const clang::FunctionDecl* spec : tmpl->specializations()) {
      if (const clang::FunctionDecl* def = graph->definition(spec)) return def;
    }
  }
  for (const clang::CXXBaseSpecifier& base : record->bases()) {
    const clang::FunctionDecl* def =
        member_definition(graph, base.getType()->getAsCXXRecordDecl(), name);
    if (def) return def;
  }
  return nullptr;
}

bool constant(const clang::CXXRecordDecl* record, const char* name, uint64_t* value) {
  for (const clang::Decl* decl : record->decls()) {
    const auto* var = llvm::dyn_cast<clang::VarDecl>(decl);
    if (!var || var->getNameAsString() != name || !var->getAnyInitializer()) continue;
    clang::Expr::EvalResult result;
    if (!var->getAnyInitializer()->EvaluateAsInt(result, var->getASTContext())) return false;
    *value = result.Val.getInt().getZExtValue();
    return true;
  }
  return false;
}

void take_inventory(CallGraph* graph, const ModelClass& model, Inventory* inventory) {
  Counter counter(graph);
  const clang::FunctionDecl* line = member_definition(graph, model.record, "run_layers");
  if (!line) line = graph->definition(model.forward);
  inventory->straight_line = qualified_name(line);
  const Counts pass = counter.count(line);
  inventory->library_calls = with_prefix(pass, "lib:");
  inventory->kernel_launches = with_prefix(pass, "kernel:");

  inventory->has_arena =
      constant(model.record, "kArenaBytesPerSample", &inventory->arena_bytes_per_sample);
  inventory->has_weights = constant(model.record, "kWeightBytes", &inventory->weight_bytes);

  // Descriptor bundles: the model's zoc::ConvLayer, zoc::PoolLayer, ... members.
  for (const clang::FieldDecl* field : model.record->fields()) {
    const std::string type = class_name(field->getType());
    if (type.rfind("zoc::", 0) == 0 && type.size() > 10 &&
        type.compare(type.size() - 5, 5, "Layer") == 0) {
      ++inventory->bundles[type];
    }
  }
  if (const clang::FunctionDecl* create = member_definition(graph, model.record, "create")) {
    const Counts built = counter.count(create);
    for (const auto& [name, n] : with_prefix(built, "lib:")) {
      if (is_creation_api(name)) inventory->created[name] = n;
    }
  }
}

}  // namespace

zoc::Status check_forward(const Sources& sources, Report* report) {
  Locator locator(sources);
  CallGraph graph(sources, &locator);
  std::vector<ModelClass> models;
  ModelFinder finder(&locator, &models);
  for (const auto& ast : sources.asts) finder.TraverseAST(ast->getASTContext());
  if (models.empty()) {
    return zoc::Error{
        "no model class (a class with a 'forward' member, or a trainer's 'step') is defined in '" +
        display_path(sources.folder) + "'"};
  }
  for (const ModelClass& model : models) {
    Inventory inventory;
    inventory.model = model.record->getQualifiedNameAsString();
    const clang::FunctionDecl* forward = graph.definition(model.forward);
    if (!forward) {
      return zoc::Error{inventory.model + "::forward is declared but no parsed source defines it"};
    }
    ForwardWalk(&graph, report, &inventory).run(forward);
    take_inventory(&graph, model, &inventory);
    report->models.push_back(std::move(inventory));
  }
  return zoc::Status::success();
}

}  // namespace zoc_verify
