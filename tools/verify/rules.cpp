// The rules that hold everywhere in generated code, whether forward reaches it or not.
//
// Dynamic dispatch has four spellings in C++: a virtual function, a call through a function
// pointer (or reference), a call through a member-function pointer, and std::function (a
// function pointer in a type-erased wrapper); dynamic_cast and typeid are the run-time type
// information that only polymorphic code needs. None of them belongs in zoc's output, so these
// AST matchers look for all of them in every node whose position is in a generated file (the
// folder's .cpp files and the headers they include from the folder: the model header and the
// zoc/ runtime copy). Library headers may do as they please; what this proves is that the code
// zoc writes and ships never asks for dispatch.
#include <clang/AST/ASTContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Frontend/ASTUnit.h>

#include "ast_util.h"
#include "verify.h"

namespace zoc_verify {

namespace {

using namespace clang::ast_matchers;

// Clang 14 has no matcher for typeid; this is how its own node matchers are declared.
const internal::VariadicDynCastAllOfMatcher<clang::Stmt, clang::CXXTypeidExpr> cxxTypeidExpr;

class GlobalRules : public MatchFinder::MatchCallback {
 public:
  GlobalRules(Locator* locator, std::vector<Finding>* findings)
      : locator_(locator), findings_(findings) {}

  void run(const MatchFinder::MatchResult& result) override {
    const clang::SourceManager& sm = *result.SourceManager;
    if (const auto* method = result.Nodes.getNodeAs<clang::CXXMethodDecl>("virtual")) {
      report(sm, method->getBeginLoc(), rule::kVirtualDecl,
             "virtual function '" + qualified_name(method) +
                 "' declared; generated code must dispatch statically");
    }
    if (const auto* cast = result.Nodes.getNodeAs<clang::CXXDynamicCastExpr>("dynamic_cast")) {
      report(sm, cast->getBeginLoc(), rule::kDynamicCast,
             "dynamic_cast needs run-time type information");
    }
    if (const auto* id = result.Nodes.getNodeAs<clang::CXXTypeidExpr>("typeid")) {
      report(sm, id->getBeginLoc(), rule::kTypeid, "typeid needs run-time type information");
    }
    if (const auto* call = result.Nodes.getNodeAs<clang::CallExpr>("call")) check_call(sm, call);
  }

 private:
  void check_call(const clang::SourceManager& sm, const clang::CallExpr* call) {
    if (call->isTypeDependent() || call->isValueDependent()) return;  // uninstantiated template
    const clang::Expr* callee = call->getCallee()->IgnoreParenImpCasts();
    if (callee->isTypeDependent()) return;
    if (const auto* op = llvm::dyn_cast<clang::BinaryOperator>(callee); op && op->isPtrMemOp()) {
      report(sm, call->getBeginLoc(), rule::kMemberPointerCall,
             "call through a member-function pointer");
      return;
    }
    const clang::FunctionDecl* fn = call->getDirectCallee();
    if (fn) {
      const auto* method = llvm::dyn_cast<clang::CXXMethodDecl>(fn);
      if (method && method->isVirtual()) {
        report(sm, call->getBeginLoc(), rule::kVirtualCall,
               "call to virtual function '" + qualified_name(method) + "'");
      }
      if (method && method->getOverloadedOperator() == clang::OO_Call &&
          method->getParent()->getQualifiedNameAsString() == "std::function") {
        report(sm, call->getBeginLoc(), rule::kStdFunctionCall,
               "call through std::function (a type-erased function pointer)");
      }
      return;
    }
    if (llvm::isa<clang::CXXPseudoDestructorExpr>(callee)) return;  // p->~int(): no call
    report(sm, call->getBeginLoc(), rule::kFunctionPointerCall,
           "call through a function pointer or reference of type '" +
               callee->getType().getAsString() + "'");
  }

  void report(const clang::SourceManager& sm, clang::SourceLocation loc, const char* rule_name,
              std::string message) {
    const Place p = locator_->place(sm, loc);
    if (!locator_->generated(p)) return;
    findings_->push_back(locator_->finding(p, rule_name, std::move(message)));
  }

  Locator* locator_;
  std::vector<Finding>* findings_;
};

}  // namespace

void check_everywhere(const Sources& sources, std::vector<Finding>* findings) {
  Locator locator(sources);
  GlobalRules rules(&locator, findings);
  MatchFinder finder;
  finder.addMatcher(cxxMethodDecl(isVirtual(), unless(isImplicit())).bind("virtual"), &rules);
  finder.addMatcher(cxxDynamicCastExpr().bind("dynamic_cast"), &rules);
  finder.addMatcher(cxxTypeidExpr().bind("typeid"), &rules);
  finder.addMatcher(callExpr().bind("call"), &rules);
  for (const auto& ast : sources.asts) finder.matchAST(ast->getASTContext());
}

}  // namespace zoc_verify
