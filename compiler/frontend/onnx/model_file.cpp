// Reading an ONNX file and everything checked before the graph is walked.
//
// ONNX's checker (libonnx) is the authority on what a valid model is, but it is not where a
// user should meet a broken file: given bytes that are not protobuf it never runs, on a file cut
// short it cannot say so, it checks neither the IR version nor opsets against what it knows in
// words that name both, it reads external data relative to the process's working directory, and
// it reports an input nothing produces as an ordering problem. So this file, in order: reads
// the bytes (a regular file, bounded), explains a protobuf parse failure (not protobuf, or where
// the file ends), checks the versions, loads external data from beside the model only, checks
// every tensor's data against its dims, checks that every node input has a producer and that
// nodes come in topological order (naming a cycle), and only then runs the checker, or, for a
// file newer than the checker knows (IR 9 and 10, opsets 18 to 21), zoc's own checks.
#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/support/checked_math.h"

namespace zoc::onnx {
namespace detail {
namespace {

namespace fs = std::filesystem;
using google::protobuf::internal::WireFormatLite;

constexpr int64_t kMaxExternalBytes = int64_t{8} << 30;  // all external data of one model
constexpr size_t kMaxCheckerBytes = 1000;                // of ONNX's checker's message, as shown

// ModelProto's fields (onnx.proto), to tell a truncated model from bytes that are not one.
const char* model_field_name(int field) {
  switch (field) {
    case 1:
      return "ir_version";
    case 2:
      return "producer_name";
    case 3:
      return "producer_version";
    case 4:
      return "domain";
    case 5:
      return "model_version";
    case 6:
      return "doc_string";
    case 7:
      return "graph";
    case 8:
      return "opset_import";
    case 14:
      return "metadata_props";
    case 20:
      return "training_info";
    case 25:
      return "functions";
    default:
      return nullptr;
  }
}

std::string first_bytes(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    out += fmt::format("{}{:02x}", i ? " " : "", static_cast<unsigned char>(bytes[i]));
  }
  return out;
}

// Whether the messages of the ModelProto in `bytes` nest deeper than `limit` levels: protobuf
// refuses such a file with nothing but a parse failure (issue 31 found it called "corrupt"). A
// walk of the wire format along ModelProto's descriptor, with a stack instead of recursion.
bool nests_deeper_than(const std::string& bytes, size_t limit) {
  namespace gp = google::protobuf;
  gp::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                              static_cast<int>(bytes.size()));
  const gp::Descriptor* d = pb::ModelProto::descriptor();
  std::vector<std::pair<const gp::Descriptor*, gp::io::CodedInputStream::Limit>> outer;
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {  // the end of the file or of a submessage (or bytes that are not protobuf)
      if (outer.empty()) return false;
      in.PopLimit(outer.back().second);
      d = outer.back().first;
      outer.pop_back();
      continue;
    }
    const gp::FieldDescriptor* f =
        d->FindFieldByNumber(static_cast<int>(WireFormatLite::GetTagFieldNumber(tag)));
    uint32_t length = 0;
    if (f && f->type() == gp::FieldDescriptor::TYPE_MESSAGE &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!in.ReadVarint32(&length)) return false;
      if (outer.size() + 1 >= limit) return true;
      outer.emplace_back(d, in.PushLimit(static_cast<int>(length)));
      d = f->message_type();
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
}

// Why protobuf could not parse `bytes` as a ModelProto: walks the top-level fields with
// protobuf's own wire-format reader. A field a ModelProto does not have, or of another wire type,
// means the bytes are not a model; a field whose length runs past the end, a file cut short.
std::string explain_parse_failure(const std::string& bytes) {
  if (bytes.rfind("PK\x03\x04", 0) == 0) {
    return "not an ONNX model but a zip archive (a TorchScript .pt file?)";
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  for (;;) {
    const int at = in.CurrentPosition();
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    const int field = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    const auto wire = WireFormatLite::GetTagWireType(tag);
    const char* name = model_field_name(field);
    const bool varint = field == 1 || field == 5;  // ir_version, model_version
    if (!name || wire != (varint ? WireFormatLite::WIRETYPE_VARINT
                                 : WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      return fmt::format(
          "not an ONNX model: protobuf cannot parse it as a ModelProto (the file "
          "is {} bytes and starts with {})",
          bytes.size(), first_bytes(bytes));
    }
    uint64_t value = 0;
    uint32_t length = 0;
    if (varint ? !in.ReadVarint64(&value)
               : !in.ReadVarint32(&length) ||
                     length > static_cast<uint32_t>(bytes.size() - in.CurrentPosition())) {
      return fmt::format(
          "truncated: the model's field '{}' starts at byte {} and {}, but the "
          "file ends at byte {}",
          name, at,
          varint ? std::string("is cut short")
                 : fmt::format("needs {} bytes after its header", length),
          bytes.size());
    }
    if (!varint) in.Skip(static_cast<int>(length));
  }
  const int depth = google::protobuf::io::CodedInputStream::GetDefaultRecursionLimit();
  if (nests_deeper_than(bytes, static_cast<size_t>(depth))) {
    return fmt::format(
        "the model's messages nest more than {} levels deep (graphs inside the "
        "attributes of nodes of graphs...), deeper than protobuf reads",
        depth);
  }
  return fmt::format(
      "corrupt: the model's top-level fields are intact, but protobuf cannot parse "
      "what they hold (the file is {} bytes)",
      bytes.size());
}

// The opset of the default domain ("" or "ai.onnx"), or an error naming the versions.
Expected<int64_t> default_opset(const pb::ModelProto& m) {
  std::optional<int64_t> found;
  for (const pb::OperatorSetIdProto& o : m.opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx") continue;
    // Two imports of the one domain leave its ops' meaning open (ONNX's checker takes one of
    // them and zoc the other); issue 31 found them accepted.
    if (found && *found != o.version()) {
      return Error{
          fmt::format("the model imports the default ONNX domain twice, as opsets {} and "
                      "{}: a model imports each domain once",
                      *found, o.version())};
    }
    found = o.version();
  }
  if (!found) {
    return Error{
        "the model imports no opset of the default ONNX domain (opset_import has no "
        "entry with domain \"\")"};
  }
  if (*found > kMaxOpset) {
    return Error{
        fmt::format("the model uses opset {} of the ONNX domain, newer than opset {}, "
                    "the newest zoc reads: export it with opset_version={} or older",
                    *found, kMaxOpset, kMaxOpset)};
  }
  if (*found < kMinOpset) {
    return Error{
        fmt::format("the model imports opset {} of the ONNX domain, which does not exist", *found)};
  }
  return *found;
}

Status check_ir_version(const pb::ModelProto& m) {
  const int64_t newest = kMaxIrVersion;
  if (!m.has_ir_version() || m.ir_version() <= 0) {
    return Error{"the model has no ir_version: not an ONNX model, or an empty one"};
  }
  if (m.ir_version() > newest) {
    return Error{
        fmt::format("the model's ir_version is {}, newer than {}, the newest zoc reads: "
                    "export it with an older ONNX",
                    m.ir_version(), newest)};
  }
  if (m.ir_version() < 3) {
    return Error{
        fmt::format("the model's ir_version is {}; zoc reads ONNX IR versions 3 to {} "
                    "(opset imports begin with version 3)",
                    m.ir_version(), newest)};
  }
  return Status::success();
}

std::optional<int64_t> parse_count(const std::string& s) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// Where `t`'s external data lies, checked: a regular file beside the model (or below it) that
// holds the bytes its dims and type need, within the model's budget.
Expected<ExternalData> locate_external(const pb::TensorProto& t, const fs::path& dir,
                                       int64_t& budget) {
  std::string location;
  std::optional<int64_t> offset = 0, length;
  for (const pb::StringStringEntryProto& e : t.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset") {
      offset = parse_count(e.value());
      if (!offset) {
        return Error{
            fmt::format("its external data offset '{}' is not a count", shown_text(e.value()))};
      }
    } else if (e.key() == "length") {
      length = parse_count(e.value());
      if (!length) {
        return Error{
            fmt::format("its external data length '{}' is not a count", shown_text(e.value()))};
      }
    }
  }
  if (location.empty()) return Error{"its data is external but names no location"};
  const fs::path rel(location);
  if (rel.is_absolute()) {
    return Error{
        fmt::format("its external data location '{}' is an absolute path; zoc reads "
                    "external data only from files beside the model",
                    shown_text(location))};
  }
  for (const fs::path& part : rel) {
    if (part == "..") {
      return Error{
          fmt::format("its external data location '{}' leads out of the model's "
                      "folder ('..'); zoc reads external data only from beside the model",
                      shown_text(location))};
    }
  }
  std::error_code ec;
  const fs::path file = fs::weakly_canonical(dir / rel, ec);
  const fs::path base = fs::weakly_canonical(dir, ec);
  const std::string prefix = base.string() + "/";
  if (ec || file.string().rfind(prefix, 0) != 0) {
    return Error{
        fmt::format("its external data location '{}' resolves outside the model's "
                    "folder",
                    shown_text(location))};
  }
  if (!fs::is_regular_file(file, ec)) {
    return Error{
        fmt::format("its external data file '{}' does not exist beside the model or is "
                    "not a regular file",
                    shown_text(location))};
  }
  const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const auto numel = checked_numel(dims);
  const int64_t size = elem_size(t.data_type());
  const auto need = numel && size ? checked_mul(*numel, size) : std::nullopt;
  if (!need) return Error{"its dims or type give no byte size for its external data"};
  if (length && *length != *need) {
    return Error{
        fmt::format("its external data length {} differs from the {} bytes its dims "
                    "and type need",
                    *length, *need)};
  }
  const auto file_size = static_cast<int64_t>(fs::file_size(file, ec));
  if (ec || *offset > file_size || *need > file_size - *offset) {
    return Error{
        fmt::format("its external data ({} bytes at offset {}) lies past the end of "
                    "'{}' ({} bytes)",
                    *need, *offset, shown_text(location), file_size)};
  }
  if (*need > budget) return Error{"the model's external data exceeds 8 GiB"};
  budget -= *need;
  return ExternalData{file.string(), *offset, *need};
}

// `data.bytes` bytes of `data.file` from `data.offset` into `out`.
Status read_external(const ExternalData& data, char* out) {
  std::ifstream in(data.file, std::ios::binary);
  in.seekg(data.offset);
  in.read(out, static_cast<std::streamsize>(data.bytes));
  if (!in) {
    return Error{fmt::format("cannot read external data file '{}'",
                             shown_text(fs::path(data.file).filename().string()))};
  }
  return Status::success();
}

// Replaces `t`'s external data by the bytes it names in a file beside the model.
Status load_external(pb::TensorProto& t, const fs::path& dir, int64_t& budget) {
  auto data = locate_external(t, dir, budget);
  if (!data) return data.error();
  std::string bytes(static_cast<size_t>(data->bytes), '\0');
  ZOC_TRY(read_external(*data, bytes.data()));
  t.clear_external_data();
  t.set_data_location(pb::TensorProto::DEFAULT);
  *t.mutable_raw_data() = std::move(bytes);
  return Status::success();
}

// Every tensor of a graph and its subgraphs, with what holds it ("initializer 'w'").
template <class F>
void for_each_tensor(pb::GraphProto& g, F&& f) {
  for (pb::TensorProto& t : *g.mutable_initializer()) f(t, "initializer");
  for (pb::SparseTensorProto& s : *g.mutable_sparse_initializer()) {
    f(*s.mutable_values(), "sparse initializer");
    f(*s.mutable_indices(), "sparse initializer");
  }
  for (pb::NodeProto& n : *g.mutable_node()) {
    for (pb::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_t()) f(*a.mutable_t(), "attribute");
      for (pb::TensorProto& t : *a.mutable_tensors()) f(t, "attribute");
      if (a.has_sparse_tensor()) {
        f(*a.mutable_sparse_tensor()->mutable_values(), "attribute");
        f(*a.mutable_sparse_tensor()->mutable_indices(), "attribute");
      }
      if (a.has_g()) for_each_tensor(*a.mutable_g(), f);
      for (pb::GraphProto& sub : *a.mutable_graphs()) for_each_tensor(sub, f);
    }
  }
}

// External data checked and loaded (that of the main graph's float32 initializers only checked,
// noted in `out`), then every tensor's size checked against its data.
bool check_tensors(ModelFile& out, const std::string& path, Diagnostics& diags) {
  const fs::path dir =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  int64_t budget = kMaxExternalBytes;
  const size_t before = diags.error_count();
  auto& initializers = *out.proto.mutable_graph()->mutable_initializer();
  out.external_initializers.assign(static_cast<size_t>(initializers.size()), std::nullopt);
  std::unordered_set<const pb::TensorProto*> handled;  // external float32 initializers
  for (int k = 0; k < initializers.size(); ++k) {
    const pb::TensorProto& t = initializers[k];
    if (t.data_location() != pb::TensorProto::EXTERNAL || t.data_type() != pb::TensorProto::FLOAT) {
      continue;
    }
    handled.insert(&t);
    auto data = locate_external(t, dir, budget);
    const bool inline_too = t.has_raw_data() || t.float_data_size() > 0 ||
                            t.int32_data_size() > 0 || t.int64_data_size() > 0 ||
                            t.double_data_size() > 0 || t.uint64_data_size() > 0 ||
                            t.string_data_size() > 0;
    if (data && inline_too) data = Error{"it holds data both in an external file and inline"};
    if (!data) {
      diags.error(SourceLoc{path, 0, 0}, fmt::format("initializer tensor '{}': {}",
                                                     shown_text(t.name()), data.error().message));
      continue;
    }
    out.external_initializers[static_cast<size_t>(k)] = *data;
  }
  for_each_tensor(*out.proto.mutable_graph(), [&](pb::TensorProto& t, const char* holder) {
    if (handled.count(&t)) return;
    Status s = t.data_location() == pb::TensorProto::EXTERNAL ? load_external(t, dir, budget)
                                                              : Status::success();
    if (s) s = check_tensor_data(t);
    if (!s) {
      diags.error(SourceLoc{path, 0, 0}, fmt::format("{} tensor '{}': {}", holder,
                                                     shown_text(t.name()), s.error().message));
    }
  });
  return diags.error_count() == before;
}

}  // namespace

Expected<std::string> read_bytes(const std::string& path, int64_t limit) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Error{"no such file"};
  if (!fs::is_regular_file(st)) return Error{"not a regular file"};
  const auto size = fs::file_size(path, ec);
  if (ec) return Error{fmt::format("cannot read: {}", ec.message())};
  if (static_cast<int64_t>(size) > limit) {
    return Error{fmt::format("the file is {} bytes, over the limit of {}", size, limit)};
  }
  std::string bytes(size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (!in) return Error{"cannot read"};
  return bytes;
}

std::optional<ModelFile> read_model(const std::string& path, Diagnostics& diags) {
  const SourceLoc at{path, 0, 0};
  auto fail = [&](const std::string& message) -> std::optional<ModelFile> {
    diags.error(at, message);
    return std::nullopt;
  };
  auto bytes = read_bytes(path, kMaxModelBytes);
  if (!bytes) {
    diags.error(at, bytes.error().message);
    return std::nullopt;
  }
  if (bytes->empty()) return fail("empty file: not an ONNX model");
  ModelFile out;
  if (!out.proto.ParseFromString(*bytes)) return fail(explain_parse_failure(*bytes));
  std::string().swap(*bytes);  // parsed: the file's bytes are not held beside the model
  if (Status s = check_ir_version(out.proto); !s) return fail(s.error().message);
  auto opset = default_opset(out.proto);
  if (!opset) return fail(opset.error().message);
  out.opset = *opset;
  if (!out.proto.has_graph()) return fail("the model has no graph");
  if (!check_tensors(out, path, diags)) return std::nullopt;
  if (!check_graph_structure(out.proto.graph(), path, diags)) return std::nullopt;
  if (!checker_knows(out)) {
    if (!check_newer_model(out, path, diags)) return std::nullopt;
    return out;
  }
  try {
    // Data left in its file is checked by the checker that reads the model from its path, which
    // resolves external files against the model's folder (zoc has checked them already).
    const bool deferred =
        std::any_of(out.external_initializers.begin(), out.external_initializers.end(),
                    [](const auto& e) { return e.has_value(); });
    if (deferred) {
      pb::checker::check_model(path);
    } else {
      pb::checker::check_model(out.proto);
    }
  } catch (const std::exception& e) {
    return fail(fmt::format("ONNX's checker (libonnx {}) rejects the model: {}", libonnx_version(),
                            checker_message(e)));
  }
  return out;
}

std::string checker_message(const std::exception& e) {
  // Its message ends with "\n\n==> Context: ..."; one line reads better in a diagnostic.
  std::string what;
  for (const char* p = e.what(); *p; ++p) {
    if (*p != '\n') {
      what += *p;
    } else if (what.empty() || what.back() != ' ') {
      what += ' ';
    }
  }
  // It quotes the model's names and strings: escaped like every name from the file.
  return shown_text(what, kMaxCheckerBytes);
}

Expected<Constant> read_external_floats(const pb::TensorProto& t, const ExternalData& data) {
  Constant c;
  c.name = t.name();
  c.dims.assign(t.dims().begin(), t.dims().end());
  c.f.resize(static_cast<size_t>(data.bytes) / sizeof(float));  // little-endian, as zoc assumes
  ZOC_TRY(read_external(data, reinterpret_cast<char*>(c.f.data())));
  return c;
}

}  // namespace detail

int64_t max_opset() { return kMaxOpset; }

std::string_view libonnx_version() { return ::onnx::LAST_RELEASE_VERSION; }

}  // namespace zoc::onnx
