// zoc-verify: the shared types of the checker that proves generated code has no dynamic dispatch.
//
// zoc's claim is that the C++ it emits is a straight line of library calls: no virtual calls,
// no calls through pointers, no allocation and no descriptor churn per forward pass. A claim
// like that rots silently as the emitter and the runtime grow, so this tool re-proves it on
// every generated folder in CI by parsing the host sources with Clang and walking the AST. This
// header holds what the parts exchange: the configuration, the findings (each one a located
// `file:line:col: error: [rule] message`), and the per-model inventory. The parts are
// sources.cpp (finding and parsing the files), rules.cpp (the rules that apply to all generated
// code), reach.cpp (the rules that apply to what `forward` reaches, and the inventory), and
// report.cpp (printing). Errors are values (zoc::Expected); only main.cpp exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "zoc/core/expected.h"

namespace clang {
class ASTUnit;
}

namespace zoc_verify {

struct Config {
  std::string target;                      // a generated folder, or one .cpp file
  std::vector<std::string> cuda_includes;  // CUDA/cuDNN/cuBLAS headers: the allowed C APIs
  std::vector<std::string> runtime_roots;  // extra include dirs whose files count as generated
  std::string resource_dir;                // Clang's builtin headers; empty: the built-in guess
};

// What was parsed: the ASTs, and which directories hold "generated" and "library" code.
struct Sources {
  std::string folder;                        // real path of the generated folder
  std::vector<std::string> generated_roots;  // folder + runtime roots (real paths)
  std::vector<std::string> library_roots;    // CUDA include dirs (real paths)
  std::vector<std::string> cu_texts;         // contents of the folder's .cu files
  std::vector<std::unique_ptr<clang::ASTUnit>> asts;
  ~Sources();
  Sources();
  Sources(Sources&&) noexcept;
  Sources& operator=(Sources&&) noexcept;
};

zoc::Expected<Sources> parse_sources(const Config& config);

// The rule names, as printed in brackets and written in the tests' `// expect:` lines.
namespace rule {
inline constexpr const char* kVirtualDecl = "virtual-decl";
inline constexpr const char* kVirtualCall = "virtual-call";
inline constexpr const char* kFunctionPointerCall = "function-pointer-call";
inline constexpr const char* kMemberPointerCall = "member-pointer-call";
inline constexpr const char* kStdFunctionCall = "std-function-call";
inline constexpr const char* kDynamicCast = "dynamic-cast";
inline constexpr const char* kTypeid = "typeid";
inline constexpr const char* kHeapAllocation = "heap-allocation";
inline constexpr const char* kDescriptorLifetime = "descriptor-create-destroy";
inline constexpr const char* kException = "exception-thrown";
inline constexpr const char* kExternalCall = "external-call";
}  // namespace rule

struct Finding {
  std::string file;  // as printed (relative to the working directory when below it)
  unsigned line = 0, col = 0;
  std::string rule;
  std::string message;
};

// A call that allocates or creates/destroys a plan but sits on a line marked
// `// zoc-verify: one-time` (or is reached only through such a line): listed, not an error.
struct OneTime {
  std::string where;  // file:line:col
  std::string what;   // "cudaGraphInstantiate (descriptor-create-destroy)"
};

// Call-site counts by callee name (static counts: each call site once per call of its caller).
using Counts = std::map<std::string, int64_t>;

struct Inventory {
  std::string model;                 // qualified class name
  std::vector<std::string> reached;  // generated functions forward reaches
  std::string straight_line;         // the function the per-pass counts come from
  Counts library_calls;              // cudnn*/cublas*/cuda* calls per forward pass
  Counts kernel_launches;            // kernel-wrapper calls per forward pass
  bool has_arena = false, has_weights = false;
  uint64_t arena_bytes_per_sample = 0, weight_bytes = 0;
  Counts bundles;  // the model's zoc::*Layer members, by type
  Counts created;  // cudnnCreate*/cublasCreate*/cudaMalloc* at construction
  std::vector<OneTime> one_time;
  // Functions outside generated code and the C APIs (std::vector, std::string, ...) reached
  // only through one-time lines, e.g. building graph-API plans for a new batch size.
  std::set<std::string> one_time_external;
};

struct Report {
  std::vector<Finding> findings;
  std::vector<Inventory> models;
};

// Rules over all generated code (rules.cpp): virtual, indirect calls, dynamic_cast, typeid.
void check_everywhere(const Sources& sources, std::vector<Finding>* findings);

// Rules over what each model's forward reaches, plus its inventory (reach.cpp).
zoc::Status check_forward(const Sources& sources, Report* report);

// Location helpers shared by the rule files (sources.cpp).
bool path_below(const std::string& path, const std::vector<std::string>& roots);
std::string display_path(const std::string& real_path);

// Sorts, removes duplicates and prints findings then inventories; returns the text (report.cpp).
void finish(Report* report);
std::string format_report(const Report& report, const std::string& target);

}  // namespace zoc_verify
