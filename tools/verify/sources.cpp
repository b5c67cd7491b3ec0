// Finding and parsing the generated host sources, with the include paths they build with.
//
// The proof is only as good as the parse: the tool must see the same declarations the real
// build sees, so it parses each host .cpp of the folder as C++20 with the folder itself on the
// include path (for zoc/ and <model>_kernels.h) and the CUDA/cuDNN/cuBLAS headers as system
// headers, exactly as the folder's CMakeLists.txt does. Any parse error fails the run rather
// than letting a half-parsed file pass. The .cu files are nvcc's business and are not parsed;
// their text is kept only to recognise the kernel wrappers the host code calls.
#include <clang/Frontend/ASTUnit.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/Tooling.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "verify.h"

#ifndef ZOC_VERIFY_RESOURCE_DIR
#define ZOC_VERIFY_RESOURCE_DIR ""
#endif

namespace zoc_verify {

namespace fs = std::filesystem;

Sources::Sources() = default;
Sources::~Sources() = default;
Sources::Sources(Sources&&) noexcept = default;
Sources& Sources::operator=(Sources&&) noexcept = default;

namespace {

zoc::Expected<std::string> real_dir(const std::string& path, const char* what) {
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (ec || !fs::is_directory(real, ec)) {
    return zoc::Error{std::string(what) + " '" + path + "' is not a directory"};
  }
  return real.string();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Clang's own headers (stddef.h, the intrinsics) live in its "resource directory", which a
// libTooling program would otherwise guess from its own location and get wrong.
zoc::Expected<std::string> resource_dir(const Config& config) {
  std::vector<std::string> candidates;
  if (!config.resource_dir.empty()) {
    candidates.push_back(config.resource_dir);
  } else {
    // The directory of the Clang this tool was built against, else any version beside it
    // (a point-release upgrade renames lib/clang/14.0.6).
    candidates.push_back(ZOC_VERIFY_RESOURCE_DIR);
    std::error_code ec;
    const fs::path versions = fs::path(ZOC_VERIFY_RESOURCE_DIR).parent_path();
    if (!versions.empty() && fs::is_directory(versions, ec)) {
      for (const fs::directory_entry& entry : fs::directory_iterator(versions, ec)) {
        candidates.push_back(entry.path().string());
      }
    }
  }
  for (const std::string& dir : candidates) {
    std::error_code ec;
    if (!dir.empty() && fs::exists(fs::path(dir) / "include" / "stddef.h", ec)) return dir;
  }
  return zoc::Error{"Clang's resource directory (with include/stddef.h) not found at '" +
                    candidates.front() + "'; give it with --resource-dir DIR"};
}

}  // namespace

bool path_below(const std::string& path, const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
        path[root.size()] == '/') {
      return true;
    }
  }
  return false;
}

std::string display_path(const std::string& real_path) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec) {
    const std::string base = fs::canonical(cwd, ec).string();
    if (!ec && path_below(real_path, {base})) return real_path.substr(base.size() + 1);
  }
  return real_path;
}

zoc::Expected<Sources> parse_sources(const Config& config) {
  Sources sources;
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path target = fs::canonical(config.target, ec);
  if (ec) return zoc::Error{"'" + config.target + "': no such file or folder"};
  if (fs::is_directory(target, ec)) {
    sources.folder = target.string();
    for (const fs::directory_entry& entry : fs::directory_iterator(target, ec)) {
      if (entry.path().extension() == ".cpp") files.push_back(entry.path().string());
    }
    if (files.empty()) return zoc::Error{"'" + config.target + "' holds no .cpp host sources"};
  } else if (target.extension() == ".cpp") {
    sources.folder = target.parent_path().string();
    files.push_back(target.string());
  } else {
    return zoc::Error{"'" + config.target + "' is neither a generated folder nor a .cpp file"};
  }
  std::sort(files.begin(), files.end());
  for (const fs::directory_entry& entry : fs::directory_iterator(sources.folder, ec)) {
    if (entry.path().extension() == ".cu") sources.cu_texts.push_back(read_text(entry.path()));
  }

  sources.generated_roots.push_back(sources.folder);
  for (const std::string& root : config.runtime_roots) {
    auto dir = real_dir(root, "runtime include directory");
    if (!dir) return dir.error();
    sources.generated_roots.push_back(*dir);
  }
  for (const std::string& include : config.cuda_includes) {
    auto dir = real_dir(include, "CUDA include directory");
    if (!dir)
      return zoc::Error{dir.error().message + " (give the CUDA headers with --cuda-include DIR)"};
    if (!fs::exists(fs::path(*dir) / "cuda_runtime.h", ec) &&
        !fs::exists(fs::path(*dir) / "cudnn.h", ec)) {
      return zoc::Error{"CUDA include directory '" + include +
                        "' holds neither cuda_runtime.h nor cudnn.h"};
    }
    sources.library_roots.push_back(*dir);
  }
  auto resources = resource_dir(config);
  if (!resources) return resources.error();

  // The flags of the folder's CMakeLists.txt: C++20, the folder on the include path, CUDA and
  // cuDNN as system headers. Warnings are the real build's business, not this tool's.
  std::vector<std::string> args = {"-xc++", "-std=c++20", "-w", "-resource-dir=" + *resources,
                                   "-I" + sources.folder};
  for (size_t i = 1; i < sources.generated_roots.size(); ++i) {
    args.push_back("-I" + sources.generated_roots[i]);
  }
  for (const std::string& dir : sources.library_roots) args.push_back("-isystem" + dir);
  clang::tooling::FixedCompilationDatabase database(sources.folder, args);
  clang::tooling::ClangTool tool(database, files);
  const int failed = tool.buildASTs(sources.asts);
  bool errors = failed != 0 || sources.asts.size() != files.size();
  for (const auto& ast : sources.asts) {
    errors = errors || ast->getDiagnostics().hasErrorOccurred();
  }
  if (errors) {
    return zoc::Error{"cannot parse the host sources of '" + config.target +
                      "' (Clang's diagnostics above); check --cuda-include"};
  }
  return zoc::Expected<Sources>(std::move(sources));
}

}  // namespace zoc_verify
