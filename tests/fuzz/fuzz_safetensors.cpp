// libFuzzer target: bytes as a safetensors file, through both of zoc's readers.
//
// Weights files are untrusted (DESIGN.md lists the ways they break), and two programs read them:
// the compiler (`zoc run/ir --weights`, compiler/weights) and every generated model, through the
// dependency-free runtime reader (runtime/zoc/io/safetensors.h). This drives:
// - the runtime reader from memory (st::File::from_bytes) and from a file (st::File::open, the
//   mmap path), which must agree; for a file both accept, every tensor view must lie inside the
//   input and match its shape and dtype, every float tensor is converted (to_float32) and
//   scanned (count_non_finite), fp16/bf16 values must survive float32 and back, and writing the
//   tensors back out (st::write_file) and reading them again must give the same tensors;
// - the compiler's loader (load_weights) against two models, tests/bad_inputs/weights/tiny.yaml
//   (non-strict) and models/lenet.yaml (--strict), which must fail with an error diagnostic or
//   return exactly the model's float tensors.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/driver/model_loader.h"
#include "compiler/weights/weights.h"
#include "tests/fuzz/fuzz_support.h"
#include "zoc/io/safetensors.h"

namespace {

namespace st = zoc::st;
using zoc::fuzz::check;

struct Models {
  zoc::ir::Graph tiny, lenet;
};

zoc::ir::Graph load(const std::string& rel) {
  zoc::Diagnostics diags;
  auto g = zoc::load_verified_model(std::string(ZOC_SOURCE_DIR) + "/" + rel, diags);
  check(g.has_value(), "cannot load a model the target needs", diags.render());
  return std::move(*g);
}

bool same_tensors(const st::File& a, const st::File& b) {
  if (a.tensors().size() != b.tensors().size()) return false;
  for (const st::TensorView& t : a.tensors()) {
    const st::TensorView* u = b.find(t.name);
    if (!u || u->dtype != t.dtype || u->shape != t.shape || u->nbytes != t.nbytes ||
        (t.nbytes && std::memcmp(u->data, t.data, t.nbytes) != 0)) {
      return false;
    }
  }
  return a.metadata().size() == b.metadata().size();
}

// Every view of a file parsed from `data[0, size)`: views come in data-offset order and tile
// the data section, so the i-th view holds the bytes after those of the views before it.
void check_views(const st::File& f, const uint8_t* data, size_t size) {
  const uint8_t* section = data + 8 + st::detail::load_le(data, 8);
  size_t total = 0;
  for (const st::TensorView& t : f.tensors()) {
    check(f.find(t.name) == &t, "find() does not return the tensor", t.name);
    const size_t numel = t.numel();
    check(numel != SIZE_MAX && numel * st::dtype_size(t.dtype) == t.nbytes,
          "view size does not match its shape and dtype", t.name);
    check(t.nbytes <= static_cast<size_t>(data + size - section) - total, "view runs past the file",
          t.name);
    check(t.nbytes == 0 || std::memcmp(t.data, section + total, t.nbytes) == 0,
          "view does not hold its bytes of the file", t.name);
    total += t.nbytes;
    const size_t bad = st::count_non_finite(t);
    check(bad <= numel, "more non-finite values than elements", t.name);
    if (t.dtype != st::DType::F64 && t.dtype != st::DType::F32 && t.dtype != st::DType::F16 &&
        t.dtype != st::DType::BF16) {
      std::vector<float> out(numel);
      check(!st::to_float32(t, out.data(), out.size()).ok(), "a non-float tensor converted",
            t.name);
      continue;
    }
    std::vector<float> out(numel);
    zoc::Status s = st::to_float32(t, out.data(), out.size());
    check(s.ok(), "a valid float tensor does not convert", s.ok() ? t.name : s.error().message);
    for (size_t i = 0; i < numel; ++i) {
      if (std::isnan(out[i])) continue;
      if (t.dtype == st::DType::F16) {
        const auto h = static_cast<uint16_t>(st::detail::load_le(t.data + 2 * i, 2));
        check(st::float_to_half(out[i]) == h, "fp16 -> float32 -> fp16 changed a value", t.name);
      } else if (t.dtype == st::DType::BF16) {
        const auto b = static_cast<uint16_t>(st::detail::load_le(t.data + 2 * i, 2));
        check(st::float_to_bf16(out[i]) == b, "bf16 -> float32 -> bf16 changed a value", t.name);
      }
    }
  }
  check(total == size - 8 - st::detail::load_le(data, 8), "tensors do not tile the data");
  for (const auto& [key, value] : f.metadata()) (void)(key.size() + value.size());
}

// Writes the tensors of `f` back out and reads them again.
void check_round_trip(const st::File& f) {
  std::vector<st::TensorToWrite> tensors;
  for (const st::TensorView& t : f.tensors()) {
    tensors.push_back(st::TensorToWrite{t.name, t.dtype, t.shape, t.data, t.nbytes});
  }
  const std::string path = zoc::fuzz::scratch_dir() + "/round_trip.safetensors";
  zoc::Status s = st::write_file(path, tensors, f.metadata());
  check(s.ok(), "cannot write back a file the reader accepted", s.ok() ? "" : s.error().message);
  auto again = st::File::open(path);
  check(again.ok(), "cannot read back a written file", again.ok() ? "" : again.error().message);
  check(same_tensors(f, *again), "written file reads back different tensors");
}

void check_loader(const zoc::ir::Graph& g, const std::string& path, bool strict) {
  zoc::Diagnostics diags;
  zoc::LoadWeightsOptions opts;
  opts.strict = strict;
  std::optional<zoc::Weights> w = zoc::load_weights(g, path, diags, opts);
  zoc::fuzz::check_escaped(diags);
  if (!w) {
    check(diags.has_errors(), "weights rejected without an error", diags.render());
    return;
  }
  check(!diags.has_errors(), "weights accepted with errors", diags.render());
  for (const zoc::ir::Node& n : g.nodes) {
    for (const zoc::ir::ParamSpec& p : n.params) {
      const std::vector<float>* v = w->find(p.name);
      if (p.dtype == zoc::ir::DType::I64 || (!v && p.optional)) continue;
      check(v != nullptr, "accepted weights lack a tensor", p.name);
      size_t numel = 1;
      for (int64_t d : p.shape) numel *= static_cast<size_t>(d);
      check(v->size() == numel, "a loaded tensor has the wrong size", p.name);
      if (strict) {
        for (float x : *v) check(std::isfinite(x), "--strict let a non-finite value through");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Models models{load("tests/bad_inputs/weights/tiny.yaml"), load("models/lenet.yaml")};
  static const std::string path = zoc::fuzz::scratch_dir() + "/input.safetensors";

  auto mem = st::File::from_bytes(std::vector<uint8_t>(data, data + size));
  zoc::fuzz::write_file(path, data, size);
  auto file = st::File::open(path);
  if (mem.ok() != file.ok()) {
    zoc::fuzz::fail("from_bytes and open disagree",
                    mem.ok() ? file.error().message : mem.error().message);
  }
  if (mem.ok()) {
    check_views(*mem, data, size);
    check(same_tensors(*mem, *file), "from_bytes and open read different tensors");
    check_round_trip(*mem);
  } else {
    check(mem.error().message.rfind("<memory>: ", 0) == 0, "message does not name the file",
          mem.error().message);
    check(file.error().message.rfind(path + ": ", 0) == 0, "message does not name the file",
          file.error().message);
  }
  check_loader(models.tiny, path, false);
  check_loader(models.lenet, path, true);
  return 0;
}
