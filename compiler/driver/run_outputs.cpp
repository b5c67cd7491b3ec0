// `zoc run`'s output file names (see run_outputs.h).
#include "compiler/driver/run_outputs.h"

#include <fmt/format.h>

#include <map>

namespace zoc {
namespace {

// Letters, digits, '.', '_' and '-' kept; anything else (a '/' of an ONNX name) becomes '_'.
std::string file_safe(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return out.empty() || out[0] == '.' ? "_" + out : out;
}

}  // namespace

Expected<std::vector<std::string>> output_files(const ir::Graph& g, const std::string& base) {
  if (g.outputs.size() == 1) return std::vector<std::string>{base};
  const bool npy = base.size() > 4 && base.compare(base.size() - 4, 4, ".npy") == 0;
  const std::string stem = npy ? base.substr(0, base.size() - 4) : base;
  std::vector<std::string> files;
  std::map<std::string, std::string> taken;  // file -> the output that has it
  for (ir::ValueId v : g.outputs) {
    const std::string& name = g.value_name(v);
    std::string file = fmt::format("{}_{}.npy", stem, file_safe(name));
    if (auto [it, fresh] = taken.emplace(file, name); !fresh) {
      return Error{
          fmt::format("outputs '{}' and '{}' would both be written to {}", it->second, name, file)};
    }
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace zoc
