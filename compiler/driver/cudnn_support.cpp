// The cuDNN backend's gaps, checked before it runs (see cudnn_support.h).
#include "compiler/driver/cudnn_support.h"

#include <fmt/format.h>

#include "compiler/support/sanitize.h"

namespace zoc {
namespace {

// What about node `n` the backend lacks ("" if nothing): the op itself, or a form of it.
std::string missing_form(const ir::Graph& g, const ir::Node& n) {
  const auto rank = [&](size_t k) { return g.type(n.inputs[k]).dims.size(); };
  const auto dims = [&](size_t k) { return g.type(n.inputs[k]).dims; };
  // The backend's add and mul read two tensors of one shape; mul also an image and its channel
  // vector, given second.
  const bool same_shape = n.inputs.size() == 2 && dims(0) == dims(1);
  const bool channel_vector =
      n.inputs.size() == 2 && rank(0) == 3 && dims(1) == std::vector<int64_t>{dims(0)[0], 1, 1};
  const bool constant = n.inputs.size() == 1;
  switch (n.op) {
    case ir::OpKind::Add:
      if (same_shape) return "";
      return constant ? "add with a constant operand" : "add with broadcasting";
    case ir::OpKind::Mul:
      if (same_shape || channel_vector) return "";
      return constant ? "mul with a constant operand"
                      : "mul with broadcasting other than an image by its channel vector";
    case ir::OpKind::Sub:
    case ir::OpKind::Div:
    case ir::OpKind::Reshape:
    case ir::OpKind::UpsampleNearest:
    case ir::OpKind::UpsampleBilinear:
    case ir::OpKind::ConvTranspose2d:
    case ir::OpKind::Argmax:
    case ir::OpKind::LogSoftmax:
    case ir::OpKind::Pad:
      return std::string(ir::op_info(n.op).name);
    case ir::OpKind::Softmax:
      return rank(0) == 1 ? "" : "softmax over the channels of an image";
    case ir::OpKind::LeakyRelu:
    case ir::OpKind::Elu:
      return std::string(ir::op_info(n.op).name);
    default:
      return "";
  }
}

}  // namespace

bool check_cudnn_support(const ir::Graph& g, Diagnostics& diags) {
  bool ok = true;
  for (const ir::Node& n : g.nodes) {
    const std::string what = missing_form(g, n);
    if (what.empty()) continue;
    diags.error(n.loc, fmt::format("layer '{}' ({}): the cuDNN backend does not support {} yet",
                                   shown_text(n.name), ir::op_info(n.op).name, what));
    ok = false;
  }
  if (g.outputs.size() > 1) {
    diags.error(SourceLoc{g.name, 0, 0},
                fmt::format("model '{}' has {} outputs: the cuDNN backend does not support "
                            "several model outputs yet",
                            shown_text(g.name), g.outputs.size()));
    ok = false;
  }
  return ok;
}

}  // namespace zoc
