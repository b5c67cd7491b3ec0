// Small helpers shared by the unit tests: temporary model files and model loading.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/driver/model_loader.h"

namespace zoc::test {

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string("zoc_test_") + (info ? info->name() : "x") + "_" +
             std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string repo_path(const std::string& rel) {
  return std::string(ZOC_SOURCE_DIR) + "/" + rel;
}

inline std::optional<ir::Graph> load(const std::string& path, Diagnostics& d,
                                     std::vector<std::pair<std::string, std::string>> sets = {}) {
  LoadOptions opts;
  opts.yaml.overrides = std::move(sets);
  return load_verified_model(path, d, opts);
}

}  // namespace zoc::test
