// libFuzzer target: bytes as a TorchScript `.pt` file, through what `zoc ir` runs on one. A `.pt`
// file from the internet is the input most likely to be hostile, and the archive check
// (compiler/frontend/torchscript/archive.h) is what stands between it and LibTorch. This feeds
// the bytes to inspect_archive and then to load_verified_model, as `zoc ir FILE --input 3x16x16`
// does, and turns every broken promise into a crash: a refusal without a message, an accepted
// archive whose summary does not match the file, load_verified_model disagreeing with the
// archive check, a refused file that loaded the LibTorch plugin anyway, a failure without an
// error or a success with one. Sanitizer reports, hangs and memory blow-ups (zip bombs) are
// libFuzzer's.
//
// The mutator (LLVMFuzzerCustomMutator, libFuzzer builds only) mutates the archive's records as
// well as its bytes: it reads the records (zip_records.h), mutates the contents of one, most
// often a code record (TorchScript source) or a pickle, and writes the archive again with its
// sizes and CRCs right, so that mutated code and constants get past the zip layer to the code
// check and, where the fuzz build has LibTorch (tools/dev/fuzz.sh builds it with), to LibTorch's
// compiler and zoc's translator and constant folding. The replay test of the normal build loads
// every seed and kept crash through LibTorch too.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/driver/model_loader.h"
#include "compiler/frontend/torchscript/archive.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/ir/printer.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/zip_records.h"

#ifdef ZOC_LIBFUZZER
#include <cstring>
#include <random>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

// One mutation: of the raw bytes one time in four (the zip layer), else of one record's contents,
// chosen among the code records and pickles nine times in ten.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  std::minstd_rand rng(seed);
  auto records = rng() % 4 == 0 ? std::nullopt : zoc::fuzz::read_zip_records(data, size, max_size);
  if (!records || records->empty()) return LLVMFuzzerMutate(data, size, max_size);
  std::vector<size_t> interesting;
  for (size_t i = 0; i < records->size(); ++i) {
    const std::string& name = (*records)[i].name;
    const bool code = name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0;
    const bool pickle = name.size() > 4 && name.compare(name.size() - 4, 4, ".pkl") == 0;
    if (code || pickle) interesting.push_back(i);
  }
  const size_t pick = !interesting.empty() && rng() % 10 != 0
                          ? interesting[rng() % interesting.size()]
                          : rng() % records->size();
  std::string& content = (*records)[pick].data;
  const size_t used = content.size();
  content.resize(used + 256 + used / 2);
  content.resize(
      LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(content.data()), used, content.size()));
  const std::string out = zoc::fuzz::write_zip_records(*records);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
#endif

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
