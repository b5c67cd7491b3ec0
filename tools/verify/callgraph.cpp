// Collecting and classifying the call sites of generated functions (see callgraph.h).
//
// The walk is a RecursiveASTVisitor over one function definition. It records explicit calls
// and the calls C++ inserts (non-trivial constructors, destructors of temporaries and locals,
// new/delete), skipping unevaluated operands (sizeof, decltype, noexcept). Two kinds of path
// are told apart from the normal one: the error path, where a function is already failing and
// builds the message of the zoc::Error it returns (strings allocate there, by design), and
// lines marked `// zoc-verify: one-time`, which the emitter uses to say "this runs once per
// batch size, not per forward pass" (CUDA-graph capture). Both are visible in the output: the
// error path is documented as unproven, and one-time calls are listed in the inventory.
#include "callgraph.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Index/USRGeneration.h>

#include <set>

namespace zoc_verify {

namespace {

constexpr const char* kOneTimeMarker = "zoc-verify: one-time";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool is_error_value_type(const std::string& qualified) {
  return qualified == "zoc::Status" || qualified == "zoc::Expected" || qualified == "zoc::Error";
}

// `return <expr>` whose value, looking through implicit conversions and the converting
// constructors of zoc::Status / zoc::Expected, is a zoc::Error.
bool returns_error(const clang::ReturnStmt* ret) {
  const clang::Expr* e = ret ? ret->getRetValue() : nullptr;
  while (e) {
    e = e->IgnoreImplicit();
    const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(e);
    if (!construct || construct->getNumArgs() == 0) break;
    const std::string cls = class_name(construct->getType());
    if (cls != "zoc::Status" && cls != "zoc::Expected") break;
    e = construct->getArg(0);
  }
  return e && class_name(e->getType()) == "zoc::Error";
}

// A branch that ends by returning a zoc::Error runs only when the function fails.
bool error_branch(const clang::Stmt* s) {
  if (const auto* block = llvm::dyn_cast_or_null<clang::CompoundStmt>(s)) {
    return !block->body_empty() && error_branch(block->body_back());
  }
  return returns_error(llvm::dyn_cast_or_null<clang::ReturnStmt>(s));
}

class SiteCollector : public clang::RecursiveASTVisitor<SiteCollector> {
  using Base = clang::RecursiveASTVisitor<SiteCollector>;

 public:
  // `owner` is the function whose body is walked: implicit code without a position of its own
  // is reported there rather than dropped.
  SiteCollector(CallGraph* graph, const clang::FunctionDecl* owner, std::vector<Site>* out)
      : graph_(graph),
        sm_(owner->getASTContext().getSourceManager()),
        out_(out),
        owner_(owner->getLocation()) {}

  bool shouldVisitImplicitCode() const { return true; }
  bool shouldVisitTemplateInstantiations() const { return true; }

  // Paths.
  bool TraverseReturnStmt(clang::ReturnStmt* s) {
    const Mode saved = mode_;
    if (returns_error(s)) mode_ = Mode::kError;
    const bool ok = Base::TraverseReturnStmt(s);
    mode_ = saved;
    return ok;
  }
  bool TraverseIfStmt(clang::IfStmt* s) {
    if (s->getInit()) TraverseStmt(s->getInit());
    if (s->getConditionVariableDeclStmt()) TraverseStmt(s->getConditionVariableDeclStmt());
    TraverseStmt(s->getCond());
    branch(s->getThen());
    branch(s->getElse());
    return true;
  }

  // Unevaluated operands make no calls.
  bool TraverseUnaryExprOrTypeTraitExpr(clang::UnaryExprOrTypeTraitExpr*) { return true; }
  bool TraverseCXXNoexceptExpr(clang::CXXNoexceptExpr*) { return true; }
  bool TraverseDecltypeTypeLoc(clang::DecltypeTypeLoc) { return true; }
  bool TraverseStaticAssertDecl(clang::StaticAssertDecl*) { return true; }

  // Calls, explicit and implicit.
  bool VisitCallExpr(clang::CallExpr* e) {
    if (const clang::FunctionDecl* fn = e->getDirectCallee()) {
      add(Site::Kind::kCall, fn, e->getBeginLoc(), e->getEndLoc());
    }
    return true;
  }
  bool VisitCXXConstructExpr(clang::CXXConstructExpr* e) {
    const clang::CXXConstructorDecl* ctor = e->getConstructor();
    if (ctor && !ctor->isTrivial())
      add(Site::Kind::kConstruct, ctor, e->getBeginLoc(), e->getEndLoc());
    return true;
  }
  // Default arguments and default member initializers run where they are used; their calls
  // are reported there, not in the (library) header that spells them.
  bool TraverseCXXDefaultArgExpr(clang::CXXDefaultArgExpr* e) {
    return traverse_used_at(e->getExpr(), e->getUsedLocation());
  }
  bool TraverseCXXDefaultInitExpr(clang::CXXDefaultInitExpr* e) {
    return traverse_used_at(e->getExpr(), e->getUsedLocation());
  }
  bool VisitCXXBindTemporaryExpr(clang::CXXBindTemporaryExpr* e) {
    destroy(e->getTemporary()->getDestructor(), e->getBeginLoc());
    return true;
  }
  bool VisitVarDecl(clang::VarDecl* v) {
    if (!v->hasLocalStorage() || v->getType()->isReferenceType()) return true;
    const clang::Type* base = v->getType()->getBaseElementTypeUnsafe();
    if (const clang::CXXRecordDecl* record = base ? base->getAsCXXRecordDecl() : nullptr) {
      if (record->hasDefinition() && !record->hasTrivialDestructor()) {
        destroy(record->getDestructor(), v->getLocation());
      }
    }
    return true;
  }
  bool VisitCXXNewExpr(clang::CXXNewExpr* e) {
    const clang::FunctionDecl* op = e->getOperatorNew();
    if (op && op->isReservedGlobalPlacementOperator()) return true;  // new (p) T: no allocation
    Site& s = add(Site::Kind::kNew, op, e->getBeginLoc(), e->getEndLoc());
    s.heap = true;
    s.name = e->isArray() ? "new[]" : "new";
    return true;
  }
  bool VisitCXXDeleteExpr(clang::CXXDeleteExpr* e) {
    Site& s = add(Site::Kind::kDelete, e->getOperatorDelete(), e->getBeginLoc(), e->getEndLoc());
    s.heap = true;
    s.name = e->isArrayForm() ? "delete[]" : "delete";
    if (const auto* record = e->getDestroyedType()->getAsCXXRecordDecl()) {
      if (record->hasDefinition() && !record->hasTrivialDestructor()) {
        destroy(record->getDestructor(), e->getBeginLoc());
      }
    }
    return true;
  }
  bool VisitCXXThrowExpr(clang::CXXThrowExpr* e) {
    Site& s = add(Site::Kind::kThrow, nullptr, e->getBeginLoc(), e->getEndLoc());
    s.name = "throw";
    return true;
  }

  // A destructor also destroys the members and bases it holds.
  void destructor_parts(const clang::CXXDestructorDecl* dtor) {
    const clang::CXXRecordDecl* record = dtor->getParent();
    for (const clang::FieldDecl* field : record->fields()) {
      const clang::Type* base = field->getType()->getBaseElementTypeUnsafe();
      const clang::CXXRecordDecl* member = base ? base->getAsCXXRecordDecl() : nullptr;
      if (member && member->hasDefinition() && !member->hasTrivialDestructor()) {
        destroy(member->getDestructor(), field->getLocation());
      }
    }
    for (const clang::CXXBaseSpecifier& b : record->bases()) {
      const clang::CXXRecordDecl* base = b.getType()->getAsCXXRecordDecl();
      if (base && base->hasDefinition() && !base->hasTrivialDestructor()) {
        destroy(base->getDestructor(), b.getBeginLoc());
      }
    }
  }

 private:
  void branch(clang::Stmt* s) {
    if (!s) return;
    const Mode saved = mode_;
    if (error_branch(s)) mode_ = Mode::kError;
    TraverseStmt(s);
    mode_ = saved;
  }
  bool traverse_used_at(clang::Expr* e, clang::SourceLocation used) {
    const clang::SourceLocation saved = used_at_;
    if (used_at_.isInvalid()) used_at_ = used;
    const bool ok = TraverseStmt(e);
    used_at_ = saved;
    return ok;
  }
  void destroy(const clang::CXXDestructorDecl* dtor, clang::SourceLocation loc) {
    if (dtor && !dtor->isTrivial()) add(Site::Kind::kDestroy, dtor, loc, loc);
  }
  bool marked(clang::SourceLocation loc) {
    const Place p = graph_->locator().place(sm_, loc);
    return p.valid() && line_text(sm_, p.file, p.line).contains(kOneTimeMarker);
  }
  Site& add(Site::Kind kind, const clang::FunctionDecl* fn, clang::SourceLocation begin,
            clang::SourceLocation end) {
    if (used_at_.isValid()) begin = end = used_at_;
    Site s;
    s.kind = kind;
    s.callee = fn;
    s.place = graph_->locator().place(sm_, begin);
    if (!s.place.valid()) s.place = graph_->locator().place(sm_, owner_);
    s.mode = mode_;
    if (s.mode == Mode::kNormal && (marked(begin) || marked(end))) s.mode = Mode::kOneTime;
    if (fn && kind != Site::Kind::kNew && kind != Site::Kind::kDelete) graph_->classify(fn, &s);
    out_->push_back(std::move(s));
    return out_->back();
  }

  CallGraph* graph_;
  const clang::SourceManager& sm_;
  std::vector<Site>* out_;
  Mode mode_ = Mode::kNormal;
  clang::SourceLocation used_at_;  // inside a default argument: where it is used
  clang::SourceLocation owner_;
};

// Every generated function definition, by USR, so that a call in one translation unit can be
// followed into a definition in another.
class DefinitionIndex : public clang::RecursiveASTVisitor<DefinitionIndex> {
 public:
  DefinitionIndex(Locator* locator, std::map<std::string, const clang::FunctionDecl*>* out)
      : locator_(locator), out_(out) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitFunctionDecl(clang::FunctionDecl* fn) {
    if (!fn->doesThisDeclarationHaveABody()) return true;
    const clang::SourceManager& sm = fn->getASTContext().getSourceManager();
    if (!locator_->generated(locator_->place(sm, fn->getLocation()))) return true;
    llvm::SmallString<128> usr;
    if (!clang::index::generateUSRForDecl(fn, usr)) out_->emplace(usr.str().str(), fn);
    return true;
  }

 private:
  Locator* locator_;
  std::map<std::string, const clang::FunctionDecl*>* out_;
};

}  // namespace

bool is_heap_api(const std::string& name) {
  static const std::set<std::string> c_heap = {
      "malloc",   "calloc", "realloc", "free",   "aligned_alloc", "posix_memalign",
      "memalign", "valloc", "pvalloc", "strdup", "strndup"};
  return c_heap.count(name) > 0 || starts_with(name, "cudaMalloc") ||
         starts_with(name, "cudaFree") || name == "cudaHostAlloc" ||
         starts_with(name, "cuMemAlloc") || starts_with(name, "cuMemFree") ||
         starts_with(name, "cuMemHostAlloc");
}

// Descriptors, handles, plans and graphs: creating or destroying one is set-up work that does
// not belong in a forward pass. Setting an existing descriptor (cudnnSet*) is not creation.
bool is_lifetime_api(const std::string& name) {
  if (starts_with(name, "cudnn") || starts_with(name, "cublas")) {
    return contains(name, "Create") || contains(name, "Destroy") || name == "cudnnBackendFinalize";
  }
  if (starts_with(name, "cu") && name != "cudaCreateChannelDesc") {
    return contains(name, "Create") || contains(name, "Destroy") || contains(name, "Instantiate") ||
           starts_with(name, "cudaStreamEndCapture") || starts_with(name, "cudaGraphAdd") ||
           starts_with(name, "cudaGraphClone");
  }
  return false;
}

bool is_creation_api(const std::string& name) {
  return (is_heap_api(name) && !contains(name, "Free") && name != "free") ||
         (is_lifetime_api(name) && !contains(name, "Destroy"));
}

CallGraph::CallGraph(const Sources& sources, Locator* locator)
    : sources_(sources), locator_(locator) {}

const clang::FunctionDecl* CallGraph::definition(const clang::FunctionDecl* fn) {
  const clang::FunctionDecl* def = nullptr;
  if (fn->hasBody(def)) return def;
  if (generated_by_usr_.empty()) {
    DefinitionIndex index(locator_, &generated_by_usr_);
    for (const auto& ast : sources_.asts) index.TraverseAST(ast->getASTContext());
  }
  llvm::SmallString<128> usr;
  if (clang::index::generateUSRForDecl(fn, usr)) return nullptr;
  auto it = generated_by_usr_.find(usr.str().str());
  return it == generated_by_usr_.end() ? nullptr : it->second;
}

void CallGraph::classify(const clang::FunctionDecl* fn, Site* site) {
  const std::string simple = fn->getNameAsString();
  site->name = qualified_name(fn);
  const clang::DeclContext* context = fn->getDeclContext()->getRedeclContext();
  const bool c_level = context->isTranslationUnit() || context->isStdNamespace() || fn->isExternC();
  const clang::OverloadedOperatorKind op = fn->getOverloadedOperator();
  if (op == clang::OO_New || op == clang::OO_Array_New || op == clang::OO_Delete ||
      op == clang::OO_Array_Delete) {
    site->heap = !fn->isReservedGlobalPlacementOperator();
  }
  if (c_level && is_heap_api(simple)) site->heap = true;

  // Compiler builtins (__builtin_expect, ...); not the C library functions Clang also knows
  // as builtins (printf, memcpy, malloc), which are judged like any other call.
  if (fn->getBuiltinID() != 0 && llvm::StringRef(simple).startswith("__builtin")) {
    site->target = Target::kBuiltin;
    return;
  }
  if (const clang::CXXRecordDecl* record = parent_class(fn)) {
    if (is_error_value_type(record->getQualifiedNameAsString())) {
      site->target = Target::kErrorValue;
      return;
    }
  }
  const clang::SourceManager& sm = fn->getASTContext().getSourceManager();
  const Place declared = locator_->place(sm, fn->getLocation());
  if (locator_->generated(declared) ||
      (fn->isImplicit() && parent_class(fn) &&
       locator_->generated(locator_->place(sm, parent_class(fn)->getLocation())))) {
    const clang::FunctionDecl* def = definition(fn);
    if (!def && fn->isImplicit()) def = fn;  // an implicit member Clang did not need to define
    if (def) {
      site->target = Target::kGenerated;
      site->body = def;
      return;
    }
    const bool in_kernels_header = llvm::StringRef(declared.path).endswith("_kernels.h");
    for (const std::string& cu : sources_.cu_texts) {
      if (in_kernels_header && cu.find(simple + "(") != std::string::npos) {
        site->target = Target::kKernelWrapper;
        site->name = simple;
        return;
      }
    }
    site->target = Target::kUndefined;
    return;
  }
  if (locator_->library(declared)) {
    site->target = Target::kLibrary;
    site->name = simple;
    site->heap = site->heap || is_heap_api(simple);
    site->lifetime = is_lifetime_api(simple);
    return;
  }
  static const std::set<std::string> std_utilities = {
      "std::max",     "std::min",      "std::clamp",    "std::move",
      "std::forward", "std::exchange", "std::addressof"};
  site->target = std_utilities.count(site->name) ? Target::kStdUtility : Target::kExternal;
}

const std::vector<Site>& CallGraph::sites(const clang::FunctionDecl* definition) {
  auto it = sites_.find(definition);
  if (it != sites_.end()) return it->second;
  std::vector<Site> collected;
  SiteCollector collector(this, definition, &collected);
  collector.TraverseDecl(const_cast<clang::FunctionDecl*>(definition));
  if (const auto* dtor = llvm::dyn_cast<clang::CXXDestructorDecl>(definition)) {
    collector.destructor_parts(dtor);
  }
  return sites_.emplace(definition, std::move(collected)).first->second;
}

}  // namespace zoc_verify
