// The ONNX frontend: a `.onnx` model (what torch.onnx.export, tf2onnx and most deployment tools
// write) to the same IR the YAML and TorchScript frontends build, with the initializers the file
// carries as the model's weights.
//
// The file is parsed with libonnx (Debian's libonnx-dev, ONNX 1.12: its protobuf classes and its
// checker), never by hand. Before ONNX's checker sees it, zoc checks what the checker either
// does not check or reports without saying where: the IR and opset versions, every tensor's size
// against its data, external data (read only from files beside the model), node inputs that
// nothing produces, and cycles. A file newer than this libonnx's checker knows (IR 9 and 10,
// opsets 18 to 21: the dynamo exporter's) is checked by zoc itself instead (own_checks.cpp). The
// graph is then walked in topological order and every node is mapped by the op table of ops_*.cpp;
// all unsupported nodes are reported in one error, each named with its op type and position. Layers
// are named after the state_dict prefix of their initializers ("layer1.0.conv1"), so that one
// weights file serves the YAML, TorchScript and ONNX routes; README.md, "ONNX input", lists what
// maps.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/support/diagnostics.h"
#include "compiler/weights/weights.h"

namespace zoc::onnx {

struct Options {
  // Channels, height and width of the input (`--input CxHxW`): needed where the model leaves a
  // dimension other than the batch dynamic; where it fixes one, the two must agree.
  std::optional<std::array<int64_t, 3>> input_dims;
  // Graph inputs other than the image to be bound to constants, as serialized TensorProtos
  // (ONNX's `input_*.pb` files): what the conformance test does with a test case's inputs
  // after the first. A bound input becomes an initializer in all but name.
  std::vector<std::pair<std::string, std::string>> bound_inputs;
};

// A model read from an ONNX file: the untyped graph (run ir::infer_shapes next) and the
// initializers its layers take as parameters, under the IR's names for them ("conv1.weight").
struct Model {
  ir::Graph graph;
  Weights weights;
  // A QDQ model's activation scales (QuantizeLinear -> DequantizeLinear pairs), by the name of
  // the value each pair quantizes; empty for a float model. The pairs themselves are the
  // identity in `graph` (ops_qdq.cpp).
  std::map<std::string, float> int8_scales;
};

// Reads, checks and translates `path`; nullopt with every problem in `diags`.
std::optional<Model> load_model(const std::string& path, const Options& options,
                                Diagnostics& diags);

// The ONNX op types the op table maps (for messages, the conformance test and the README).
std::vector<std::string_view> mapped_op_types();

// The opsets of the default ONNX domain and the IR versions zoc reads: from the first (the
// mapped ops' semantics are the same since, and handlers read the node's opset where attributes
// moved) to opset 21 and IR version 10, which covers what torch.onnx.export's default (dynamo)
// exporter writes since PyTorch 2.9 (IR 10, opset 18 to 20). ONNX's checker (libonnx) judges the
// files it knows, up to checker_max_opset() and checker_max_ir_version(); zoc checks a newer one
// itself (own_checks.cpp) and says so in a note.
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 21;
inline constexpr int64_t kMaxIrVersion = 10;
int64_t max_opset();  // kMaxOpset
int64_t checker_max_opset();
int64_t checker_max_ir_version();
// The libonnx release zoc was built with ("1.12.0").
std::string_view libonnx_version();
// For `zoc --version`: the opsets and IR versions read, and up to where libonnx's checker
// judges them.
std::string versions_read();

// A tensor of an ONNX file read on its own (a test case's `input_0.pb` or `output_0.pb`):
// floating types as float32.
struct HostTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;
};
Expected<HostTensor> read_tensor_file(const std::string& path);

}  // namespace zoc::onnx
