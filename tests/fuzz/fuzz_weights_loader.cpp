// libFuzzer target: bytes as the weights file of a generated model, through its host-side
// packing (generated/<model>/<model>_weights.h: zoc::WeightSource, zoc/weights/pack.h,
// zoc/weights/fold.h).
//
// The generated constructor is the last reader of a user's weights file, and it runs on the GPU
// machine where a crash is hardest to debug. Its packing is CUDA-free, so it is fuzzed here:
// each input is written to a scratch file, opened with WeightSource (which reads only paths)
// and packed for LeNet (fp32 NCHW; lenient and --strict) and ResNet-50 (fp16 NHWC, BN folded)
// into staging buffers of exactly kWeightBytes, where ASan sees any write past the end. A
// rejected file must say why, naming the file.
//
// Valid files are too large to arise from mutation (LeNet needs 3.2M values), so the target
// first proves the success path once per process: the compiler's seeded weights
// (zoc::init_weights, saved as safetensors) packed from the file give the same bytes as the
// generated code's own seeded source (WeightSource::seeded), for both models.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/driver/model_loader.h"
#include "compiler/weights/weights.h"
#include "lenet_weights.h"
#include "resnet50_weights.h"
#include "tests/fuzz/fuzz_support.h"
#include "zoc/weights/weight_source.h"

namespace {

using zoc::fuzz::check;

using PackFn = zoc::Status (*)(zoc::WeightSource&, uint8_t*);

struct Model {
  const char* yaml;
  PackFn pack;
  std::vector<uint8_t> staging;
};

std::string message(const zoc::Status& s) { return s.ok() ? "" : s.error().message; }

// Packing from a file of seeded weights gives the bytes of packing from the seeded source.
void check_seeded_file_packs_like_seeded_source(Model& m) {
  constexpr uint64_t kSeed = 7;
  zoc::Diagnostics diags;
  auto g = zoc::load_verified_model(std::string(ZOC_SOURCE_DIR) + "/" + m.yaml, diags);
  check(g.has_value(), "cannot load a model the target needs", diags.render());
  const std::string path = zoc::fuzz::scratch_dir() + "/seeded.safetensors";
  zoc::Status saved = zoc::save_weights(*g, zoc::init_weights(*g, kSeed), path);
  check(saved.ok(), "cannot write seeded weights", message(saved));

  auto file = zoc::WeightSource::open(path, true);
  check(file.ok(), "cannot open seeded weights", file.ok() ? "" : file.error().message);
  zoc::Status s = m.pack(*file, m.staging.data());
  check(s.ok(), "seeded weights do not pack", message(s));
  const std::vector<uint8_t> from_file = m.staging;

  zoc::WeightSource seeded = zoc::WeightSource::seeded(kSeed);
  s = m.pack(seeded, m.staging.data());
  check(s.ok(), "the seeded source does not pack", message(s));
  check(m.staging == from_file, "seeded file and seeded source pack differently", m.yaml);
  std::remove(path.c_str());
}

void pack_input(Model& m, const std::string& path, bool strict) {
  auto source = zoc::WeightSource::open(path, strict);
  if (!source) {
    check(source.error().message.rfind(path + ": ", 0) == 0, "error does not name the file",
          source.error().message);
    return;
  }
  const zoc::Status s = m.pack(*source, m.staging.data());
  if (!s.ok()) {
    check(s.error().message.rfind(path + ": ", 0) == 0, "error does not name the file",
          s.error().message);
    return;
  }
  check(!strict || source->warnings().empty(), "--strict packed with warnings");
}

std::vector<Model>& models() {
  static std::vector<Model> all = [] {
    std::vector<Model> v;
    v.push_back({"models/lenet.yaml", zoc_model::lenet_weights::pack,
                 std::vector<uint8_t>(zoc_model::lenet_weights::kWeightBytes)});
    v.push_back({"models/resnet50.yaml", zoc_model::resnet50_weights::pack,
                 std::vector<uint8_t>(zoc_model::resnet50_weights::kWeightBytes)});
    for (Model& m : v) check_seeded_file_packs_like_seeded_source(m);
    return v;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Model>& all = models();
  static const std::string path = zoc::fuzz::scratch_dir() + "/input.safetensors";
  zoc::fuzz::write_file(path, data, size);
  pack_input(all[0], path, false);
  pack_input(all[0], path, true);
  pack_input(all[1], path, false);
  return 0;
}
