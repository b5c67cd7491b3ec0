// zoc-verify: proves that a generated folder's host code has no dynamic dispatch.
//
// The command CI runs on every checked-in generated/ folder and on the planted-violation cases.
// It exists as a separate program (not a zoc subcommand) because it needs Clang's libTooling,
// which the compiler itself must not depend on; it is built only where libTooling is found.
// This file only parses the command line, runs the checks and decides the exit code: 0 when a
// target has no findings, 1 when any has findings, 2 when a target cannot be checked at all.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "verify.h"

namespace {

constexpr const char* kUsage =
    "usage: zoc-verify [options] TARGET...\n"
    "  TARGET                 a generated folder (its .cpp host sources are parsed), or one .cpp\n"
    "  --cuda-include DIR     CUDA/cuDNN/cuBLAS headers: the C APIs forward may call (repeatable;\n"
    "                         default /usr/local/cuda/include)\n"
    "  --runtime-include DIR  an include directory whose headers count as generated code, like\n"
    "                         the folder's zoc/ copy of the runtime (repeatable)\n"
    "  --resource-dir DIR     Clang's resource directory (default: the one zoc-verify was built "
    "with)\n";

struct Command {
  zoc_verify::Config base;
  std::vector<std::string> targets;
};

zoc::Expected<Command> parse_command(int argc, char** argv) {
  Command command;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> zoc::Expected<std::string> {
      if (i + 1 >= argc) return zoc::Error{arg + " needs a value"};
      return std::string(argv[++i]);
    };
    if (arg == "--cuda-include" || arg == "--runtime-include" || arg == "--resource-dir") {
      auto v = value();
      if (!v) return v.error();
      if (arg == "--cuda-include") command.base.cuda_includes.push_back(*v);
      if (arg == "--runtime-include") command.base.runtime_roots.push_back(*v);
      if (arg == "--resource-dir") command.base.resource_dir = *v;
    } else if (arg == "-h" || arg == "--help") {
      return zoc::Error{""};
    } else if (!arg.empty() && arg[0] == '-') {
      return zoc::Error{"unknown option '" + arg + "'"};
    } else {
      command.targets.push_back(arg);
    }
  }
  if (command.targets.empty()) return zoc::Error{"no target given"};
  if (command.base.cuda_includes.empty()) {
    command.base.cuda_includes.push_back("/usr/local/cuda/include");
  }
  return command;
}

// Checks one target; the report's findings decide pass or fail.
zoc::Expected<zoc_verify::Report> verify(const zoc_verify::Config& config) {
  auto sources = zoc_verify::parse_sources(config);
  if (!sources) return sources.error();
  zoc_verify::Report report;
  zoc_verify::check_everywhere(*sources, &report.findings);
  zoc::Status forward = zoc_verify::check_forward(*sources, &report);
  if (!forward.ok()) return forward.error();
  zoc_verify::finish(&report);
  return report;
}

}  // namespace

int main(int argc, char** argv) {
  auto command = parse_command(argc, argv);
  if (!command) {
    if (!command.error().message.empty()) {
      std::fprintf(stderr, "zoc-verify: error: %s\n", command.error().message.c_str());
    }
    std::fputs(kUsage, stderr);
    return 2;
  }
  int exit_code = 0;
  for (const std::string& target : command->targets) {
    zoc_verify::Config config = command->base;
    config.target = target;
    auto report = verify(config);
    if (!report) {
      std::fprintf(stderr, "zoc-verify: error: %s\n", report.error().message.c_str());
      exit_code = 2;
      continue;
    }
    const std::string text = zoc_verify::format_report(*report, target);
    std::fputs(text.c_str(), stdout);
    if (!report->findings.empty() && exit_code == 0) exit_code = 1;
  }
  return exit_code;
}
