// `zoc grad` (see grad_command.h): file handling around ref::train_step.
#include "compiler/driver/grad_command.h"

#include <fmt/format.h>

#include <cstring>

#include "compiler/backend/reference/train_step.h"
#include "zoc/safetensors.h"

namespace zoc {
namespace {

Expected<std::vector<int32_t>> read_labels(const st::TensorView& t, int64_t batch) {
  const std::string where = t.source + ": tensor 'labels'";
  if (t.shape.size() != 1 || t.shape[0] != batch) {
    return Error{fmt::format("{}: expected shape [{}] (one label per input image)", where, batch)};
  }
  std::vector<int32_t> out(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    if (t.dtype == st::DType::I32) {
      std::memcpy(&out[i], t.data + 4 * i, 4);
    } else if (t.dtype == st::DType::I64) {
      int64_t v = 0;
      std::memcpy(&v, t.data + 8 * i, 8);
      if (v < 0 || v > INT32_MAX) return Error{fmt::format("{}: label {} out of range", where, v)};
      out[i] = static_cast<int32_t>(v);
    } else {
      return Error{fmt::format("{}: dtype {}, expected I32 or I64", where, st::dtype_name(t.dtype))};
    }
  }
  return out;
}

}  // namespace

Expected<std::string> run_grad_command(const ir::Graph& graph, const Weights& weights,
                                       const std::string& batch_path,
                                       const std::string& out_path) {
  auto file = st::File::open(batch_path);
  if (!file) return file.error();
  const st::TensorView* x = file->find("input");
  const st::TensorView* y = file->find("labels");
  if (!x || !y) {
    return Error{fmt::format("{}: needs tensors 'input' [N, C, H, W] and 'labels' [N]",
                             batch_path)};
  }
  if (x->shape.size() != 4 || x->shape[0] < 1 || x->shape[0] > 4096) {
    return Error{fmt::format("{}: tensor 'input' must be [N, C, H, W] with N in 1..4096",
                             batch_path)};
  }
  ref::Tensor input;
  input.shape = x->shape;
  input.data.resize(x->numel());
  if (Status s = st::to_float32(*x, input.data.data(), input.data.size()); !s) return s.error();
  auto labels = read_labels(*y, x->shape[0]);
  if (!labels) return labels.error();

  auto step = ref::train_step(graph, weights, input, *labels);
  if (!step) return step.error();

  // Shapes of the parameters, from the graph's declarations.
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ir::Node& n : graph.nodes) {
    for (const ir::ParamSpec& p : n.params) shapes[p.name] = p.shape;
  }
  const float loss = static_cast<float>(step->loss);
  std::vector<st::TensorToWrite> out;
  out.push_back({"loss", st::DType::F32, {1}, &loss, sizeof loss});
  out.push_back({"logits", st::DType::F32, step->logits.shape, step->logits.data.data(),
                 step->logits.data.size() * sizeof(float)});
  for (const auto& [name, g] : step->grads) {
    out.push_back({"grad." + name, st::DType::F32, shapes[name], g.data(), g.size() * sizeof(float)});
  }
  for (const auto& [name, b] : step->buffers) {
    out.push_back({"after." + name, st::DType::F32, shapes[name], b.data(), b.size() * sizeof(float)});
  }
  if (Status s = st::write_file(out_path, out, {{"producer", "zoc grad"}}); !s) return s.error();
  return fmt::format("wrote {}: loss {:.6f}, {} gradients, batch {}", out_path, step->loss,
                     step->grads.size(), x->shape[0]);
}

}  // namespace zoc
