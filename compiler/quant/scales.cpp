// The int8 scales file: scales.h says why it is a safetensors file.
#include "compiler/quant/scales.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "zoc/io/safetensors.h"

namespace zoc::quant {

namespace {

std::string meta(const st::File& f, std::string_view key) {
  for (const auto& [k, v] : f.metadata()) {
    if (k == key) return v;
  }
  return "";
}

Expected<float> read_scale(const st::TensorView& t, const std::string& path) {
  const bool scalar = t.shape.empty() || (t.shape.size() == 1 && t.shape[0] == 1);
  if (t.dtype != st::DType::F32 || !scalar) {
    return Error{fmt::format("{}: scale '{}' must be one float32 ([] or [1])", path, t.name)};
  }
  float v = 0.0f;
  std::memcpy(&v, t.data, sizeof v);
  if (!usable_scale(v)) {
    return Error{fmt::format("{}: scale '{}' is {}: {}", path, t.name, v, kScaleRange)};
  }
  return v;
}

}  // namespace

Expected<Int8Scales> read_scales(const std::string& path) {
  Expected<st::File> f = st::File::open(path);
  if (!f.ok()) return f.error();
  if (meta(*f, "format") != kScalesFormat) {
    return Error{
        fmt::format("{}: not an int8 scales file (its __metadata__ lacks \"format\": "
                    "\"{}\"; write one with zoc calibrate)",
                    path, kScalesFormat)};
  }
  Int8Scales s;
  s.method = meta(*f, "method");
  s.model = meta(*f, "model");
  const std::string floats = meta(*f, "float_layers");
  for (size_t at = 0; at < floats.size();) {
    size_t end = floats.find('\n', at);
    if (end == std::string::npos) end = floats.size();
    if (end > at) s.float_layers.push_back(floats.substr(at, end - at));
    at = end + 1;
  }
  for (const st::TensorView& t : f->tensors()) {
    Expected<float> v = read_scale(t, path);
    if (!v.ok()) return v.error();
    s.scales.emplace(t.name, *v);
  }
  return s;
}

Status write_scales(const Int8Scales& s, const std::string& path) {
  std::vector<st::TensorToWrite> out;
  out.reserve(s.scales.size());
  for (const auto& [name, v] : s.scales) {
    out.push_back({name, st::DType::F32, {}, &v, sizeof v});
  }
  std::string floats;
  for (const std::string& name : s.float_layers) {
    if (name.find('\n') != std::string::npos) {
      return Error{fmt::format("{}: layer name '{}' holds a line break", path, name)};
    }
    floats += (floats.empty() ? "" : "\n") + name;
  }
  std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", kScalesFormat}, {"method", s.method}, {"model", s.model}};
  if (!floats.empty()) metadata.emplace_back("float_layers", floats);
  return st::write_file(path, out, metadata);
}

}  // namespace zoc::quant
