// `zoc extract-weights` (extract_weights.h).
#include "compiler/driver/extract_weights.h"

#include <iostream>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/weights/weights.h"

namespace zoc {
namespace {

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

bool extract_onnx_weights(const std::string& model, const std::string& output,
                          const LoadOptions& opts, Diagnostics& diags) {
  auto m = load_model_and_weights(model, diags, opts);
  if (!m) return false;
  if (Status s = save_weights(m->graph, *m->weights, output); !s) {
    diags.file_error(output, s.error().message);
    return false;
  }
  size_t bytes = 0;
  for (const auto& [name, values] : m->weights->tensors) bytes += values.size() * sizeof(float);
  std::cout << fmt::format("wrote {} ({} tensors, {:.1f} MiB, the layers' parameter names)\n",
                           output, m->weights->tensors.size(), mib(bytes));
  return true;
}

bool extract_state_dict(const std::string& model, const std::string& output, Diagnostics& diags) {
  auto tensors = torchscript::read_state_dict(model, diags);
  if (!tensors) return false;
  if (Status s = torchscript::write_state_dict(*tensors, output); !s) {
    diags.file_error(output, s.error().message);
    return false;
  }
  size_t bytes = 0;
  for (const auto& t : *tensors) bytes += t.data.size();
  std::cout << fmt::format("wrote {} ({} tensors, {:.1f} MiB, state_dict names)\n", output,
                           tensors->size(), mib(bytes));
  return true;
}

}  // namespace zoc
