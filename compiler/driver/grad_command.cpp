// `zoc grad` (see grad_command.h): file handling around ref::run_training.
#include "compiler/driver/grad_command.h"

#include <fmt/format.h>

#include "compiler/backend/reference/interpreter.h"
#include "zoc/io/safetensors.h"
#include "zoc/train/datasets.h"

namespace zoc {

Expected<std::string> run_grad_command(const ir::Graph& training, const Weights& weights,
                                       const std::string& batch_path, const std::string& out_path) {
  const ir::Node* in_node = nullptr;
  for (const ir::Node& n : training.nodes) {
    if (n.op == ir::OpKind::Input) in_node = &n;
  }
  // The training graph's outputs: the loss, then the logits.
  if (!in_node || training.type(in_node->output).dims.size() != 3 || training.outputs.size() < 2 ||
      training.type(training.outputs[1]).dims.size() != 1) {
    return Error{
        fmt::format("zoc grad: model '{}' must take a C x H x W image and end in "
                    "[classes] logits",
                    training.name)};
  }
  const std::vector<int64_t>& d = training.type(in_node->output).dims;
  auto batch =
      read_batch(batch_path, static_cast<int>(d[0]), static_cast<int>(d[1]), static_cast<int>(d[2]),
                 static_cast<int>(training.type(training.outputs[1]).dims[0]));
  if (!batch) return batch.error();
  ref::Tensor input;
  input.shape = batch->shape;
  input.data = std::move(batch->input);

  auto step = ref::run_training(training, weights, input, batch->labels);
  if (!step) return step.error();

  // Shapes of the parameters, from the graph's declarations; the frozen ones (requires_grad=False)
  // are written after the step too, as the trainer writes them: unchanged.
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, const std::vector<float>*> frozen;
  for (const ir::Node& n : training.nodes) {
    for (const ir::ParamSpec& p : n.params) {
      shapes[p.name] = p.shape;
      if (!p.frozen) continue;
      if (const std::vector<float>* w = weights.find(p.name)) frozen[p.name] = w;
    }
  }
  const float loss = static_cast<float>(step->loss);
  std::vector<st::TensorToWrite> out;
  out.push_back({"loss", st::DType::F32, {1}, &loss, sizeof loss});
  out.push_back({"logits", st::DType::F32, step->logits.shape, step->logits.data.data(),
                 step->logits.data.size() * sizeof(float)});
  for (const auto& [name, g] : step->grads) {
    out.push_back(
        {"grad." + name, st::DType::F32, shapes[name], g.data(), g.size() * sizeof(float)});
  }
  for (const auto& [name, b] : step->buffers) {
    out.push_back(
        {"after." + name, st::DType::F32, shapes[name], b.data(), b.size() * sizeof(float)});
  }
  for (const auto& [name, w] : frozen) {
    out.push_back(
        {"after." + name, st::DType::F32, shapes[name], w->data(), w->size() * sizeof(float)});
  }
  if (Status s = st::write_file(out_path, out, {{"producer", "zoc grad"}}); !s) return s.error();
  return fmt::format("wrote {}: loss {:.6f}, {} gradients, batch {}", out_path, step->loss,
                     step->grads.size(), input.shape[0]);
}

}  // namespace zoc
