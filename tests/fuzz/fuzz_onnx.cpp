// libFuzzer target: bytes as an ONNX model file, through everything `zoc compile` runs before
// emitting code (issue 19).
//
// ONNX files come from every exporter and tool in the ecosystem, so the loader must meet any of
// them, however broken, with located diagnostics and nothing worse. This writes the bytes as
// model.onnx into the fuzz scratch folder (which also holds the external-data files the seeds
// name, so that the external-data path is reached: only files beside the model may be read) and
// runs load_verified_model as `zoc ir` does (libonnx parsing, zoc's pre-checker checks, ONNX's
// checker, translation, shape inference, the verifier), then the printer, the pass pipeline with
// --verify-each and the memory plan (fuzz_pipeline.h): a failure must carry an error and a
// success none. Sanitizer reports, hangs and memory blow-ups are libFuzzer's.
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_pipeline.h"

namespace {

std::string setup() {
  const std::string src = ZOC_SOURCE_DIR;
  for (const char* f : {"external_data_beside.bin", "external_data_short.bin"}) {
    zoc::fuzz::copy_into_scratch(src + "/tests/bad_inputs/onnx/" + f, f);
  }
  return zoc::fuzz::scratch_dir() + "/model.onnx";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = setup();
  zoc::fuzz::fuzz_model_file(path, data, size);
  return 0;
}
