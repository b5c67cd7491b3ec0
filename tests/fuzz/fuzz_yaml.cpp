// libFuzzer target: bytes as a YAML model file, through everything `zoc compile` runs before
// emitting code.
//
// Model files come from users, and DESIGN.md promises that any of them, however broken or
// hostile, gets located diagnostics and nothing worse. This feeds the bytes to the same library
// entry points the driver chains (load_verified_model: YAML frontend, shape inference and the
// verifier; then the printer, the inference pass pipeline with --verify-each, and the memory
// plan at both element sizes) and turns every broken promise into a crash: a failure without
// an error diagnostic, a success with one, or a memory plan that does not fit its arena.
// Sanitizer reports, hangs (-timeout) and memory blow-ups (-rss_limit_mb) are libFuzzer's.
//
// Includes: the input is written as model.yaml into a private scratch folder that also holds
// the include files the seeds use (models/resnet_blocks.yaml, tests/bad_inputs/yaml/include/),
// so relative includes resolve there; an absolute or `..` include reads whatever it names, which
// the frontend must bound (regular files of limited size only).
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_pipeline.h"

namespace {

std::string setup() {
  const std::string src = ZOC_SOURCE_DIR;
  zoc::fuzz::copy_into_scratch(src + "/models/resnet_blocks.yaml", "resnet_blocks.yaml");
  for (const char* f : {"bad_library.yaml", "cycle_a.yaml", "cycle_b.yaml", "relu_block.yaml"}) {
    zoc::fuzz::copy_into_scratch(src + "/tests/bad_inputs/yaml/include/" + f,
                                 std::string("include/") + f);
  }
  return zoc::fuzz::scratch_dir() + "/model.yaml";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = setup();
  zoc::fuzz::fuzz_model_file(path, data, size);
  return 0;
}
