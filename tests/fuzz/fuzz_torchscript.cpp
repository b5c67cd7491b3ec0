// libFuzzer target: bytes as a TorchScript `.pt` file, through what `zoc ir` runs on one. A `.pt` file from the internet is the input most likely to be hostile, and the archive check
// (compiler/frontend/torchscript/archive.h) is what stands between it and LibTorch. This feeds
// the bytes to inspect_archive and then to load_verified_model, as `zoc ir FILE --input 3x16x16`
// does, and turns every broken promise into a crash: a refusal without a message, an accepted
// archive whose summary does not match the file, load_verified_model disagreeing with the
// archive check, a refused file that loaded the LibTorch plugin anyway, a failure without an
// error or a success with one. Sanitizer reports, hangs and memory blow-ups (zip bombs) are
// libFuzzer's. The fuzz build has no LibTorch (tools/dev/fuzz.sh), so there an accepted archive
// ends in "not supported by this build"; the replay test of the normal build loads every seed and
// kept crash through LibTorch itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/driver/model_loader.h"
#include "compiler/frontend/torchscript/archive.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/ir/printer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = zoc::fuzz::scratch_dir() + "/model.pt";
  static const bool verbose = std::getenv("ZOC_FUZZ_VERBOSE") != nullptr;  // to debug seeds
  zoc::fuzz::write_file(path, data, size);

  const auto archive = zoc::torchscript::inspect_archive(path);
  if (archive) {
    zoc::fuzz::check(archive->records > 0 && !archive->root.empty(),
                     "archive accepted without records or a root folder");
    zoc::fuzz::check(archive->file_size == static_cast<int64_t>(size),
                     "archive size differs from the file's");
  } else {
    zoc::fuzz::check(!archive.error().message.empty(), "archive refused without a message");
  }

  const bool loaded_before = zoc::torchscript::plugin_load_attempted();
  zoc::Diagnostics diags;
  zoc::LoadOptions opts;
  opts.input_dims = std::array<int64_t, 3>{3, 16, 16};
  const std::optional<zoc::ir::Graph> graph = zoc::load_verified_model(path, diags, opts);
  const std::string rendered = diags.render();
  if (verbose) std::fprintf(stderr, "%s%s\n", rendered.c_str(), graph ? "accepted" : "rejected");
  if (!archive) {
    zoc::fuzz::check(!graph && rendered.find(archive.error().message) != std::string::npos,
                     "the model loader disagrees with the archive check", rendered);
    zoc::fuzz::check(loaded_before || !zoc::torchscript::plugin_load_attempted(),
                     "a refused archive loaded the LibTorch plugin");
  }
  if (!graph) {
    zoc::fuzz::check(diags.has_errors(), "model rejected without an error", rendered);
    return 0;
  }
  zoc::fuzz::check(!diags.has_errors(), "model accepted with errors", rendered);
  (void)zoc::ir::print_graph(*graph);
  return 0;
}
