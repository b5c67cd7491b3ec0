// Runs every bad-input case under tests/bad_inputs/{yaml,shapes,weights,onnx,torchscript,
// torchscript_loaded}/
// through the compiler libraries the way `zoc ir` does, and checks the diagnostics each case
// says it must produce (and, for a refused TorchScript archive, that LibTorch's plugin was not
// loaded).
//
// DESIGN.md asks for a clear, located error and nothing lost on bad input, and STYLE.md for bad
// inputs to live as files beside the error text they must produce; tests/bad_inputs/README.md
// describes the case files. Each case is its own test, named after its folder and file, so a
// regression names the input that broke. Running in-process keeps the cases fast and puts them
// under the sanitizers of the build; tests/run_bad_inputs.sh checks the same cases through the
// real binary (exit code, empty stdout, no signal).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/model_loader.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/passes/pipeline.h"
#include "compiler/weights/weights.h"

namespace fs = std::filesystem;

namespace {

const char* const kFolders[] = {"yaml", "shapes",      "weights",
                                "onnx", "torchscript", "torchscript_loaded"};

fs::path cases_root() { return fs::path(ZOC_SOURCE_DIR) / "tests" / "bad_inputs"; }

struct Case {
  std::string folder;  // "yaml"
  std::string name;    // file stem: "unknown_op"
  std::string file;    // the file holding the directives, relative to the source dir
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

// A case is every NAME.expect, and every NAME.yaml that has no NAME.expect beside it.
std::vector<Case> cases_in(const std::string& folder) {
  std::vector<Case> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cases_root() / folder, ec)) {
    if (!e.is_regular_file()) continue;  // include/ holds helpers, not cases
    const fs::path p = e.path();
    const std::string ext = p.extension().string();
    if (ext == ".yaml" && fs::exists(fs::path(p).replace_extension(".expect"))) continue;
    if (ext != ".yaml" && ext != ".expect") continue;
    const std::string rel = "tests/bad_inputs/" + folder + "/" + p.filename().string();
    out.push_back(Case{folder, p.stem().string(), rel});
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.file < b.file; });
  return out;
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const char* folder : kFolders) {
    auto more = cases_in(folder);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

// What a case file asks for (see tests/bad_inputs/README.md).
struct Directives {
  std::string model;  // relative to the source dir
  std::vector<std::string> expects;
  std::vector<std::string> args;
  int exit_code = 1;
  std::string problem;  // set when the case file itself is malformed
};

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

// Applies one `key: value` directive; false if the key is unknown.
bool apply_directive(Directives& d, const std::string& line) {
  const size_t colon = line.find(": ");
  if (colon == std::string::npos) return false;
  const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
  if (key == "expect") {
    d.expects.push_back(value);
  } else if (key == "args") {
    d.args = split_words(value);
  } else if (key == "exit") {
    d.exit_code = std::stoi(value);
  } else if (key == "model") {
    d.model = value;
  } else {
    return false;
  }
  return true;
}

Directives read_directives(const Case& c) {
  Directives d;
  std::ifstream in(fs::path(ZOC_SOURCE_DIR) / c.file, std::ios::binary);
  std::string line;
  if (c.file.ends_with(".yaml")) {
    // The leading comment block of the model; other comment lines are description.
    d.model = c.file;
    while (std::getline(in, line) && line.rfind("#", 0) == 0) {
      for (const char* key : {"# expect: ", "# args: ", "# exit: ", "# model: "}) {
        if (line.rfind(key, 0) == 0) apply_directive(d, line.substr(2));
      }
    }
  } else {
    // Every line of a .expect file is a directive (or a # comment).
    d.model = c.file.substr(0, c.file.size() - 7) + ".yaml";
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      if (!apply_directive(d, line)) d.problem = "unknown directive: " + line;
    }
  }
  if (d.expects.empty() && d.exit_code != 0) {
    d.problem = "a failing case needs at least one 'expect:' line";
  }
  return d;
}

// Switches to the source dir for one case, so that paths (and so messages) are the ones the
// case files spell, as when `zoc` runs from the repository root.
class InSourceDir {
 public:
  InSourceDir() : saved_(fs::current_path()) { fs::current_path(ZOC_SOURCE_DIR); }
  ~InSourceDir() { fs::current_path(saved_); }

 private:
  fs::path saved_;
};

struct Outcome {
  int exit_code = 0;
  std::string diagnostics;
  std::string printed;  // anything the libraries wrote to stdout themselves
};

// `zoc ir MODEL [--set k=v]... [--input CxHxW] [--weights W] [--strict] [--train]`, minus the
// printing of the IR (--train: the training graph is built, as `zoc ir --train` does).
Outcome run_case(const Directives& d) {
  zoc::LoadOptions opts;
  std::string weights;
  zoc::LoadWeightsOptions wopts;
  bool train = false;
  for (size_t i = 0; i < d.args.size(); ++i) {
    const std::string& a = d.args[i];
    if (a == "--set" && i + 1 < d.args.size()) {
      const std::string& kv = d.args[++i];
      const size_t eq = kv.find('=');
      opts.yaml.overrides.emplace_back(kv.substr(0, eq),
                                       eq == std::string::npos ? "" : kv.substr(eq + 1));
    } else if (a == "--weights" && i + 1 < d.args.size()) {
      weights = d.args[++i];
    } else if (a == "--input" && i + 1 < d.args.size()) {
      std::array<int64_t, 3> dims{};
      char x1 = 0, x2 = 0;
      if (std::sscanf(d.args[++i].c_str(), "%ld%c%ld%c%ld", &dims[0], &x1, &dims[1], &x2,
                      &dims[2]) != 5) {
        ADD_FAILURE() << "bad --input in 'args:': " << d.args[i];
      }
      opts.input_dims = dims;
    } else if (a == "--strict") {
      wopts.strict = true;
    } else if (a == "--train") {
      train = true;
    } else {
      ADD_FAILURE() << "unsupported argument in 'args:': " << a;
    }
  }

  InSourceDir cd;
  zoc::Diagnostics diags;
  // Only stdout: a sanitizer report on stderr must stay visible.
  testing::internal::CaptureStdout();
  auto graph = zoc::load_verified_model(d.model, diags, opts);
  bool ok = graph.has_value();
  if (graph && !weights.empty()) ok = zoc::load_weights(*graph, weights, diags, wopts).has_value();
  if (ok && train) ok = zoc::passes::build_training_graph(*graph, {}, diags).has_value();
  Outcome out;
  out.printed = testing::internal::GetCapturedStdout();
  out.diagnostics = diags.render();
  out.exit_code = diags.has_errors() ? 1 : 0;
  // A failure must explain itself, and errors must mean failure.
  EXPECT_EQ(ok, !diags.has_errors()) << out.diagnostics;
  return out;
}

class BadInput : public testing::TestWithParam<Case> {};

TEST_P(BadInput, GivesItsDiagnostics) {
  const Case& c = GetParam();
  const Directives d = read_directives(c);
  ASSERT_TRUE(d.problem.empty()) << c.file << ": " << d.problem;
  ASSERT_TRUE(fs::exists(fs::path(ZOC_SOURCE_DIR) / d.model)) << d.model << " is missing";

  // A refused archive must not load the plugin, and so LibTorch (gtest_discover_tests runs each
  // case in a process of its own, where nothing has loaded it before).
  const bool loaded_before = zoc::torchscript::plugin_load_attempted();
  const Outcome out = run_case(d);
  if (c.folder == "torchscript" && d.exit_code != 0 && !loaded_before) {
    EXPECT_FALSE(zoc::torchscript::plugin_load_attempted())
        << "the LibTorch plugin was loaded for a refused archive";
  }
  EXPECT_EQ(out.exit_code, d.exit_code) << "diagnostics:\n" << out.diagnostics;
  for (const std::string& e : d.expects) {
    EXPECT_TRUE(out.diagnostics.find(e) != std::string::npos)
        << "missing from the diagnostics: " << e << "\ndiagnostics:\n"
        << out.diagnostics;
  }
  EXPECT_EQ(out.printed, "") << "library code printed instead of reporting diagnostics";
  // Names from hostile files are escaped (issue 31): no control byte but the line breaks, and no
  // line that starts with anything but a location or a list's indentation.
  for (size_t i = 0; i < out.diagnostics.size(); ++i) {
    const auto ch = static_cast<unsigned char>(out.diagnostics[i]);
    EXPECT_TRUE(ch == '\n' || (ch >= 0x20 && ch != 0x7f))
        << "raw control byte " << static_cast<int>(ch) << " at " << i << " of:\n"
        << out.diagnostics;
  }
}

std::string case_test_name(const testing::TestParamInfo<Case>& info) {
  std::string s = info.param.folder + "_" + info.param.name;
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Files, BadInput, testing::ValuesIn(all_cases()), case_test_name);

TEST(BadInputs, EveryFolderHasCases) {
  for (const char* folder : kFolders) {
    EXPECT_FALSE(cases_in(folder).empty()) << "no bad-input cases in " << cases_root() / folder;
  }
}

// Every weights file and every archive is used by some case, so none is silently left unchecked.
TEST(BadInputs, EveryInputFileIsUsed) {
  std::set<std::string> used;
  for (const char* folder : {"weights", "torchscript", "torchscript_loaded"}) {
    for (const Case& c : cases_in(folder)) {
      const Directives d = read_directives(c);
      used.insert(d.model);
      for (size_t i = 0; i + 1 < d.args.size(); ++i) {
        if (d.args[i] == "--weights") used.insert(d.args[i + 1]);
      }
    }
  }
  for (const auto& [folder, ext] : {std::pair{"weights", ".safetensors"},
                                    {"torchscript", ".pt"},
                                    {"torchscript_loaded", ".pt"}}) {
    for (const auto& e : fs::directory_iterator(cases_root() / folder)) {
      if (e.path().extension() != ext) continue;
      const std::string rel =
          std::string("tests/bad_inputs/") + folder + "/" + e.path().filename().string();
      EXPECT_TRUE(used.count(rel)) << rel << " is used by no case (run make_cases.py)";
    }
  }
}

// Every ONNX file is some case's model.
TEST(BadInputs, EveryOnnxFileIsUsed) {
  std::set<std::string> used;
  for (const Case& c : cases_in("onnx")) used.insert(read_directives(c).model);
  for (const auto& e : fs::directory_iterator(cases_root() / "onnx")) {
    if (e.path().extension() != ".onnx") continue;
    const std::string rel = "tests/bad_inputs/onnx/" + e.path().filename().string();
    EXPECT_TRUE(used.count(rel)) << rel << " is used by no case (run make_cases.py)";
  }
}

}  // namespace
