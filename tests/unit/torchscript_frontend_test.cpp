// The TorchScript frontend's handling of files that are not (complete) TorchScript, with files
// built here byte by byte, so that these tests need neither Python nor the reference data. They
// build and run with and without LibTorch: where the answer depends on the build (a newer file
// format version, a corrupt record), each build's message is checked. Real models, traced and
// scripted, are tested in tests/numeric/torchscript_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/frontend/torchscript/archive.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "tests/unit/test_util.h"
#include "tests/unit/zip_builder.h"

namespace zoc {
namespace {

using test::make_zip;
using test::Records;

// Laid out like torch.jit.save's archives, with pickles that pass the archive check (an empty
// tuple) and code LibTorch cannot use.
Records torchscript_like(const std::string& version) {
  return {{"archive/data.pkl", test::kEmptyTuplePickle},
          {"archive/code/__torch__/m.py", "class M: pass"},
          {"archive/constants.pkl", test::kEmptyTuplePickle},
          {"archive/version", version + "\n"}};
}

std::string load_error(const std::string& path, bool with_input = true) {
  Diagnostics d;
  LoadOptions opts;
  if (with_input) opts.input_dims = std::array<int64_t, 3>{3, 8, 8};
  EXPECT_FALSE(load_verified_model(path, d, opts)) << path;
  EXPECT_EQ(d.error_count(), 1u) << d.render();
  return d.render();
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "expected \"" << part << "\" in:\n" << text;
}

TEST(TorchScriptArchive, TextFileIsNotTorchScript) {
  test::TempDir dir;
  const std::string path = dir.write("model.pt", "zoc: 1\nname: x\n");
  const std::string e = load_error(path);
  expect_has(e, path +
                    ": error: not a TorchScript file: TorchScript models are zip archives "
                    "written by torch.jit.save, and this file is not a zip archive (it starts "
                    "with \"zoc: 1\")");
}

TEST(TorchScriptArchive, EmptyFileAndMissingFile) {
  test::TempDir dir;
  expect_has(load_error(dir.write("empty.pt", "")), "empty.pt: error: the file is empty");
  expect_has(load_error(dir.file("missing.pt")), "missing.pt: error: cannot open the file");
}

TEST(TorchScriptArchive, ZipThatIsNotTorchScript) {
  test::TempDir dir;
  expect_has(load_error(dir.write("a.pt", make_zip({{"hello.txt", "hi"}}))),
             "a zip archive that is not a TorchScript model: its records are not in one folder");
  expect_has(load_error(dir.write("b.pt", make_zip({{"archive/hello.txt", "hi"}}))),
             "it has no 'archive/data.pkl' record");
  expect_has(load_error(dir.write("sd.pt", make_zip({{"archive/data.pkl", "p"},
                                                     {"archive/data/0", "0123"},
                                                     {"archive/version", "3\n"}}))),
             "a torch.save file (a pickled object such as a state_dict), not TorchScript");
  expect_has(load_error(dir.write("pickle.pt", std::string("\x80\x02}q\x00.", 6))),
             "a Python pickle (torch.save with the legacy format)");
}

TEST(TorchScriptArchive, TruncatedArchive) {
  test::TempDir dir;
  const std::string zip = make_zip(torchscript_like("3"));
  for (size_t keep : {zip.size() / 2, zip.size() - 3, size_t{10}}) {
    const std::string e = load_error(dir.write("cut.pt", zip.substr(0, keep)));
    expect_has(e, "cut.pt: error: truncated: the file (" + std::to_string(keep) +
                      " bytes) starts like a TorchScript zip archive but its end, the zip "
                      "directory, is missing");
  }
}

TEST(TorchScriptArchive, ReadsTheVersionRecord) {
  test::TempDir dir;
  auto info = torchscript::inspect_archive(dir.write("m.pt", make_zip(torchscript_like("7"))));
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->root, "archive");
  EXPECT_EQ(info->format_version, 7);
  EXPECT_EQ(info->describe(), "TorchScript file format version 7");
  // Newer PyTorch writes the version to .data/version once it is 6 or more.
  Records records = torchscript_like("3");
  records.back() = {"archive/.data/version", "9\n"};
  info = torchscript::inspect_archive(dir.write("n.pt", make_zip(records)));
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->format_version, 9);
}

TEST(TorchScriptArchive, VersionNewerThanLibTorchReads) {
  test::TempDir dir;
  const std::string path = dir.write("new.pt", make_zip(torchscript_like("99")));
  const std::string e = load_error(path);
  if (torchscript::built_with_libtorch()) {
    expect_has(e, path +
                      ": error: TorchScript file format version 99 is newer than this zoc's "
                      "LibTorch ");
    expect_has(e, "reads (versions 1 to ");
  } else {
    expect_has(e, path +
                      ": error: TorchScript input is not supported by this build of zoc: "
                      "LibTorch was not found");
    expect_has(e, "(the file is a TorchScript file format version 99)");
  }
}

TEST(TorchScriptArchive, CorruptRecordsAreLibTorchErrorsNamingTheVersion) {
  test::TempDir dir;
  const std::string path = dir.write("bad.pt", make_zip(torchscript_like("3")));
  const std::string e = load_error(path);
  if (torchscript::built_with_libtorch()) {
    expect_has(e, path + ": error: LibTorch ");
    expect_has(e, " cannot read this TorchScript file format version 3: ");
  } else {
    expect_has(e, "not supported by this build of zoc");
  }
}

TEST(TorchScriptArchive, NeedsTheInputShape) {
  if (!torchscript::built_with_libtorch()) GTEST_SKIP() << "built without LibTorch";
  test::TempDir dir;
  const std::string path = dir.write("m.pt", make_zip(torchscript_like("3")));
  expect_has(load_error(path, /*with_input=*/false),
             path +
                 ": error: a TorchScript model has no static input shape: give it with "
                 "--input CxHxW");
}

TEST(TorchScriptArchive, SetAppliesToYamlOnly) {
  test::TempDir dir;
  Diagnostics d;
  LoadOptions opts;
  opts.yaml.overrides = {{"resolution", "64"}};
  opts.input_dims = std::array<int64_t, 3>{3, 8, 8};
  EXPECT_FALSE(load_verified_model(dir.write("m.pt", make_zip(torchscript_like("3"))), d, opts));
  expect_has(d.render(), "--set: error: --set applies to YAML models; a .pt file has no params");
}

TEST(TorchScriptArchive, ExtractWeightsChecksTheFileToo) {
  test::TempDir dir;
  Diagnostics d;
  EXPECT_FALSE(torchscript::read_state_dict(dir.write("w.pt", "hello"), d));
  expect_has(d.render(), "w.pt: error: not a TorchScript file");
}

}  // namespace
}  // namespace zoc
