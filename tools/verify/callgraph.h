// The call graph the forward-pass rules walk: every call site of a function, classified.
//
// "forward allocates nothing" is a property of everything forward can reach, so the tool needs
// each function's outgoing calls, including the ones C++ makes implicitly (constructors of
// temporaries and locals, their destructors, operator calls), each labelled with where its
// callee lives (generated code to follow, a CUDA/cuDNN/cuBLAS entry point, a kernel wrapper
// defined in the .cu file, the error-value types, something else) and with the path it sits
// on: the error path (a branch that ends by returning a zoc::Error, or the returned
// expression itself), a line marked `// zoc-verify: one-time`, or the normal path. Collecting
// that is here; judging it is reach.cpp's job.
#pragma once

#include <clang/AST/Decl.h>

#include <map>
#include <string>
#include <vector>

#include "ast_util.h"
#include "verify.h"

namespace zoc_verify {

// Ordered: a call on an error path inside a one-time call is on the error path.
enum class Mode { kNormal = 0, kOneTime = 1, kError = 2 };

inline Mode combine(Mode a, Mode b) { return a > b ? a : b; }

// Where a callee lives, which decides what the rules make of a call to it.
enum class Target {
  kGenerated,      // defined in generated code: followed
  kLibrary,        // declared in the CUDA/cuDNN/cuBLAS headers: a leaf, allowed unless it
                   // allocates or creates/destroys (see the flags)
  kKernelWrapper,  // declared in generated code, defined in the folder's .cu (a kernel launch)
  kErrorValue,     // a member of zoc::Status, zoc::Expected or zoc::Error: trusted
  kStdUtility,     // std::max, std::min, std::move, ...: header-only, no allocation
  kBuiltin,        // a compiler builtin
  kUndefined,      // declared in generated code but defined nowhere the tool can see
  kExternal,       // anything else: not allowed from forward
  kNone,           // no callee (throw, delete of a trivial type)
};

struct Site {
  enum class Kind { kCall, kConstruct, kDestroy, kNew, kDelete, kThrow };
  Kind kind = Kind::kCall;
  const clang::FunctionDecl* callee = nullptr;  // the function called, if any
  const clang::FunctionDecl* body = nullptr;    // its definition (kGenerated only)
  Target target = Target::kNone;
  bool heap = false;      // allocates or releases memory
  bool lifetime = false;  // creates or destroys a descriptor, handle, graph or plan
  Mode mode = Mode::kNormal;
  Place place;
  std::string name;  // the callee as printed: qualified, or the C API name
};

class CallGraph {
 public:
  CallGraph(const Sources& sources, Locator* locator);

  // The call sites of a function definition (collected once).
  const std::vector<Site>& sites(const clang::FunctionDecl* definition);

  // The definition of a generated function, looked up across all parsed files; or null.
  const clang::FunctionDecl* definition(const clang::FunctionDecl* fn);

  Locator& locator() { return *locator_; }

  // Classifies a callee (public for the inventory's own look-ups).
  void classify(const clang::FunctionDecl* fn, Site* site);

 private:
  const Sources& sources_;
  Locator* locator_;
  std::map<std::string, const clang::FunctionDecl*> generated_by_usr_;
  std::map<const clang::FunctionDecl*, std::vector<Site>> sites_;
};

// Name tests of the C APIs (exposed for the inventory).
bool is_heap_api(const std::string& name);
bool is_lifetime_api(const std::string& name);
bool is_creation_api(const std::string& name);

}  // namespace zoc_verify
