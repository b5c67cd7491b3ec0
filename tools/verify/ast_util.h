// Small AST helpers shared by the rule files: where a node is, and what a declaration is called.
//
// Every rule needs the same two questions answered the same way: is this node in generated code
// (a file below the generated folder or a runtime root), and which `file:line:col` names it. A
// node inside a macro expansion (ZOC_CUDNN(...), ZOC_TRY(...)) is reported at the file position
// the user can find: the macro argument's spelling, or else the macro's use. Internal to the
// tool; needs Clang's AST headers.
#pragma once

#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/Basic/SourceManager.h>

#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include "verify.h"

namespace zoc_verify {

struct Place {
  std::string path;  // real path; empty when the node has no file position
  unsigned line = 0, col = 0;
  clang::FileID file;
  bool valid() const { return !path.empty(); }
};

// Resolves locations to real paths, caching per file entry.
class Locator {
 public:
  explicit Locator(const Sources& sources) : sources_(sources) {}

  Place place(const clang::SourceManager& sm, clang::SourceLocation loc) {
    if (loc.isInvalid()) return {};
    const clang::SourceLocation file_loc = sm.getFileLoc(loc);
    const clang::FileID id = sm.getFileID(file_loc);
    const clang::FileEntry* entry = sm.getFileEntryForID(id);
    if (!entry) return {};
    Place p;
    p.path = real_path(entry);
    p.line = sm.getSpellingLineNumber(file_loc);
    p.col = sm.getSpellingColumnNumber(file_loc);
    p.file = id;
    return p;
  }
  bool generated(const Place& p) const {
    return p.valid() && below(p.path, sources_.generated_roots);
  }
  bool library(const Place& p) const { return p.valid() && below(p.path, sources_.library_roots); }
  const Sources& sources() const { return sources_; }

  std::string where(const Place& p) const {
    return display_path(p.path) + ":" + std::to_string(p.line) + ":" + std::to_string(p.col);
  }
  Finding finding(const Place& p, const char* rule_name, std::string message) const {
    return Finding{display_path(p.path), p.line, p.col, rule_name, std::move(message)};
  }

 private:
  static bool below(const std::string& path, const std::vector<std::string>& roots) {
    return path_below(path, roots);
  }
  std::string real_path(const clang::FileEntry* entry) {
    auto it = cache_.find(entry);
    if (it != cache_.end()) return it->second;
    std::string path = entry->tryGetRealPathName().str();
    if (path.empty()) {
      std::error_code ec;
      path = std::filesystem::weakly_canonical(entry->getName().str(), ec).string();
    }
    cache_.emplace(entry, path);
    return path;
  }

  const Sources& sources_;
  std::map<const clang::FileEntry*, std::string> cache_;
};

// The text of the source line `line` (1-based) of `file`.
inline llvm::StringRef line_text(const clang::SourceManager& sm, clang::FileID file,
                                 unsigned line) {
  bool invalid = false;
  const llvm::StringRef buffer = sm.getBufferData(file, &invalid);
  if (invalid || line == 0) return {};
  const unsigned offset = sm.getFileOffset(sm.translateLineCol(file, line, 1));
  const llvm::StringRef rest = buffer.substr(offset);
  return rest.substr(0, rest.find('\n'));
}

inline std::string qualified_name(const clang::NamedDecl* decl) {
  return decl ? decl->getQualifiedNameAsString() : std::string("<unknown>");
}

// The class of a member function (constructor, destructor, operator), or null.
inline const clang::CXXRecordDecl* parent_class(const clang::FunctionDecl* fn) {
  const auto* method = llvm::dyn_cast_or_null<clang::CXXMethodDecl>(fn);
  return method ? method->getParent() : nullptr;
}

inline std::string class_name(clang::QualType type) {
  const auto* record = type.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl();
  return record ? record->getQualifiedNameAsString() : std::string();
}

}  // namespace zoc_verify
