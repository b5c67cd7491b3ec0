// TensorProto to values: initializers, Constant nodes, bound inputs and test data files.
//
// A TensorProto says its shape in `dims` and holds its data in one of several fields (raw
// little-endian bytes, or a typed repeated field whose element type depends on the data type).
// Nothing ties the two together but convention, so a hostile or truncated file can claim a
// billion elements and hold ten. Everything here checks the claim against the data before
// allocating for it, so a tensor costs at most what the file holds; ONNX's checker runs only
// after these checks (model_file.cpp), and the frontend reads values only through them.
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/support/checked_math.h"
#include "zoc/io/safetensors_util.h"

namespace zoc::onnx {
namespace detail {
namespace {

using TP = pb::TensorProto;

std::string dims_str(const std::vector<int64_t>& d) {
  return fmt::format("[{}]", fmt::join(d, ", "));
}

template <class T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // x86-64 and aarch64 Linux are little-endian, as ONNX's raw data
  return v;
}

// One element of raw data at `p` as float32 (floating types) or int64 (the others).
void decode_raw(int32_t type, const char* p, Constant& c) {
  switch (type) {
    case TP::FLOAT:
      c.f.push_back(load_le<float>(p));
      break;
    case TP::DOUBLE:
      c.f.push_back(static_cast<float>(load_le<double>(p)));
      break;
    case TP::FLOAT16:
      c.f.push_back(st::half_to_float(load_le<uint16_t>(p)));
      break;
    case TP::BFLOAT16:
      c.f.push_back(st::bf16_to_float(load_le<uint16_t>(p)));
      break;
    case TP::INT8:
      c.i.push_back(load_le<int8_t>(p));
      break;
    case TP::UINT8:
    case TP::BOOL:
      c.i.push_back(load_le<uint8_t>(p));
      break;
    case TP::INT16:
      c.i.push_back(load_le<int16_t>(p));
      break;
    case TP::UINT16:
      c.i.push_back(load_le<uint16_t>(p));
      break;
    case TP::INT32:
      c.i.push_back(load_le<int32_t>(p));
      break;
    case TP::UINT32:
      c.i.push_back(load_le<uint32_t>(p));
      break;
    case TP::INT64:
      c.i.push_back(load_le<int64_t>(p));
      break;
    case TP::UINT64:
      c.i.push_back(static_cast<int64_t>(load_le<uint64_t>(p)));
      break;
    default:
      break;
  }
}

// The typed field that holds `type`'s elements, its length, and a reader of element k.
struct TypedField {
  const char* name = "";
  int64_t size = 0;
};

TypedField typed_field(const TP& t) {
  switch (t.data_type()) {
    case TP::FLOAT:
      return {"float_data", t.float_data_size()};
    case TP::DOUBLE:
      return {"double_data", t.double_data_size()};
    case TP::INT64:
      return {"int64_data", t.int64_data_size()};
    case TP::UINT32:
    case TP::UINT64:
      return {"uint64_data", t.uint64_data_size()};
    default:
      return {"int32_data", t.int32_data_size()};
  }
}

void decode_typed(const TP& t, int k, Constant& c) {
  switch (t.data_type()) {
    case TP::FLOAT:
      c.f.push_back(t.float_data(k));
      break;
    case TP::DOUBLE:
      c.f.push_back(static_cast<float>(t.double_data(k)));
      break;
    case TP::FLOAT16:  // the 16 bits of each element sit in the low half of an int32
      c.f.push_back(st::half_to_float(static_cast<uint16_t>(t.int32_data(k))));
      break;
    case TP::BFLOAT16:
      c.f.push_back(st::bf16_to_float(static_cast<uint16_t>(t.int32_data(k))));
      break;
    case TP::INT64:
      c.i.push_back(t.int64_data(k));
      break;
    case TP::UINT32:
    case TP::UINT64:
      c.i.push_back(static_cast<int64_t>(t.uint64_data(k)));
      break;
    default:
      c.i.push_back(t.int32_data(k));
      break;
  }
}

// How many typed fields other than the one of the tensor's type hold data.
int other_fields(const TP& t, const char* own) {
  const std::pair<const char*, int> fields[] = {
      {"float_data", t.float_data_size()},   {"int32_data", t.int32_data_size()},
      {"int64_data", t.int64_data_size()},   {"double_data", t.double_data_size()},
      {"uint64_data", t.uint64_data_size()}, {"string_data", t.string_data_size()}};
  int n = 0;
  for (const auto& [name, size] : fields) n += (size > 0 && std::strcmp(name, own) != 0);
  return n;
}

}  // namespace

std::string elem_type_name(int32_t elem_type) {
  if (TP::DataType_IsValid(elem_type)) {
    return TP::DataType_Name(static_cast<TP::DataType>(elem_type));
  }
  return fmt::format("type {}", elem_type);
}

bool is_floating(int32_t t) {
  return t == TP::FLOAT || t == TP::DOUBLE || t == TP::FLOAT16 || t == TP::BFLOAT16;
}

int64_t elem_size(int32_t t) {
  switch (t) {
    case TP::INT8:
    case TP::UINT8:
    case TP::BOOL:
      return 1;
    case TP::FLOAT16:
    case TP::BFLOAT16:
    case TP::INT16:
    case TP::UINT16:
      return 2;
    case TP::FLOAT:
    case TP::INT32:
    case TP::UINT32:
      return 4;
    case TP::DOUBLE:
    case TP::INT64:
    case TP::UINT64:
      return 8;
    default:
      return 0;
  }
}

std::optional<int64_t> checked_numel(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
  }
  return checked_product_of(dims);
}

Status check_tensor_data(const TP& t) {
  const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const std::string type = elem_type_name(t.data_type());
  const auto numel = checked_numel(dims);
  if (!numel) {
    return Error{fmt::format("its dims {} {}", dims_str(dims),
                             checked_product_of(dims) ? "hold a negative size" : "overflow")};
  }
  if (t.data_location() == TP::EXTERNAL) return Error{"its data is stored externally"};
  const int64_t size = elem_size(t.data_type());
  if (size == 0) return Error{fmt::format("it is of type {}; zoc reads numeric tensors", type)};
  if (t.has_raw_data()) {
    const auto bytes = checked_mul(*numel, size);
    if (!bytes || static_cast<int64_t>(t.raw_data().size()) != *bytes) {
      return Error{
          fmt::format("its raw_data holds {} bytes, but {} elements of {} ({} bytes "
                      "each) need {}",
                      t.raw_data().size(), *numel, type, size,
                      bytes ? std::to_string(*bytes) : std::string("more than 2^63"))};
    }
    if (other_fields(t, "") > 0) return Error{"it holds its data both raw and in a typed field"};
    return Status::success();
  }
  const TypedField field = typed_field(t);
  if (other_fields(t, field.name) > 0) {
    return Error{
        fmt::format("it is of type {} but holds data in a field other than {}", type, field.name)};
  }
  if (field.size != *numel) {
    return Error{fmt::format("it has dims {} ({} elements) but its {} holds {}", dims_str(dims),
                             *numel, field.name, field.size)};
  }
  return Status::success();
}

Expected<Constant> decode_tensor(const TP& t) {
  if (Status s = check_tensor_data(t); !s) return s.error();
  Constant c;
  c.name = t.name();
  c.dims.assign(t.dims().begin(), t.dims().end());
  c.floating = is_floating(t.data_type());
  c.elem_type = t.data_type();
  const auto numel = static_cast<size_t>(*checked_numel(c.dims));
  if (c.floating) {
    c.f.reserve(numel);
  } else {
    c.i.reserve(numel);
  }
  if (t.has_raw_data()) {
    const int64_t size = elem_size(t.data_type());
    for (size_t k = 0; k < numel; ++k) {
      decode_raw(t.data_type(), t.raw_data().data() + static_cast<int64_t>(k) * size, c);
    }
  } else {
    for (size_t k = 0; k < numel; ++k) decode_typed(t, static_cast<int>(k), c);
  }
  return c;
}

}  // namespace detail

Expected<HostTensor> read_tensor_file(const std::string& path) {
  auto bytes = detail::read_bytes(path, detail::kMaxModelBytes);
  if (!bytes) return Error{fmt::format("{}: {}", path, bytes.error().message)};
  detail::pb::TensorProto proto;
  if (!proto.ParseFromString(*bytes)) {
    return Error{fmt::format("{}: not a serialized ONNX TensorProto", path)};
  }
  auto c = detail::decode_tensor(proto);
  if (!c) {
    return Error{
        fmt::format("{}: tensor '{}': {}", path, shown_text(proto.name()), c.error().message)};
  }
  if (!c->floating) {
    return Error{fmt::format("{}: tensor '{}' is of type {}; zoc's inputs and outputs are float32",
                             path, shown_text(proto.name()),
                             detail::elem_type_name(proto.data_type()))};
  }
  return HostTensor{c->name, std::move(c->dims), std::move(c->f)};
}

}  // namespace zoc::onnx
