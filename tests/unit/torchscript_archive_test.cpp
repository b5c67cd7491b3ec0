// The archive checks that stand between a `.pt` file and LibTorch (zip_archive.h, pickle_scan.h):
// every archive torch 1.13 and 2.11 wrote for the allow-list passes, the pickle scan finds
// globals however a pickle spells them (GLOBAL, INST, STACK_GLOBAL with strings pushed directly
// or through the memo, every protocol), refuses what it cannot see through, and the zip layer
// accepts the forms real writers use. The hostile archives themselves are bad-input files
// (tests/bad_inputs/torchscript/), each with its message; these tests cover what lies between.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "compiler/frontend/torchscript/archive.h"
#include "compiler/frontend/torchscript/pickle_scan.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "tests/unit/test_util.h"
#include "tests/unit/zip_builder.h"

namespace zoc {
namespace {

using namespace std::string_literals;  // pickles hold NUL bytes
using torchscript::allowed_pickle_global;
using torchscript::check_pickle;

std::string scan_error(const std::string& pickle) {
  const Status s = check_pickle("p.pkl", pickle);
  return s.ok() ? "" : s.error().message;
}

void expect_refused(const std::string& pickle, const std::string& part) {
  const std::string e = scan_error(pickle);
  EXPECT_NE(e.find(part), std::string::npos) << "expected \"" << part << "\" in: " << e;
}

std::string global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
std::string unicode(const std::string& s) {  // SHORT_BINUNICODE
  return "\x8c" + std::string(1, static_cast<char>(s.size())) + s;
}

// Every archive written by make_attribute_archives.py (the allow-list's source) and the op zoo.
TEST(TorchScriptArchive, RealArchivesOfTorch113And211Pass) {
  int checked = 0;
  for (const char* dir : {"tests/torchscript/torch1.13", "tests/torchscript/torch2.11"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(test::repo_path(dir))) {
      if (e.path().extension() != ".pt") continue;
      auto info = torchscript::inspect_archive(e.path().string());
      EXPECT_TRUE(info.ok()) << e.path() << ": " << info.error().message;
      if (info.ok()) {
        EXPECT_TRUE(info->format_version.has_value()) << e.path();
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 18);  // 7 attribute archives each, the op zoo and its unsupported model
}

TEST(TorchScriptArchive, AllowListHoldsWhatTorchWrites) {
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"torch._utils", "_rebuild_tensor_v2"},
           {"torch._utils", "_rebuild_qtensor"},
           {"torch._utils", "_rebuild_sparse_tensor"},
           {"torch.jit._pickle", "restore_type_tag"},
           {"torch.jit._pickle", "build_intlist"},
           {"collections", "OrderedDict"},
           {"builtins", "complex"},
           {"torch", "device"},
           {"torch", "FloatStorage"},
           {"torch", "BFloat16Storage"},
           {"torch", "Float8_e4m3fnStorage"},
           {"torch", "per_channel_affine"},
           {"__torch__", "M"},
           {"__torch__.torch.nn.modules.conv.___torch_mangle_3", "Conv2d"},
           {"__torch__.torch.classes.quantized", "LinearPackedParamsBase"}}) {
    EXPECT_TRUE(allowed_pickle_global(module, name)) << module << "." << name;
  }
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"os", "system"},
           {"torch", "load"},
           {"torch", "Storage"},
           {"torch", "UntypedStorage"},
           {"torch._utils", "_rebuild_tensor_v2.__globals__"},
           {"torch.jit._pickle", "build_intlist.__code__"},
           {"__torch__x", "M"},
           {"__torch__.", "M"},
           {"__torch__..os", "M"},
           {"__torch__.os", "system.x"},
           {"__torch__.a-b", "M"},
           {"__main__", "TensorID"},
           {"builtins", "getattr"},
           {"collections", "OrderedDict "}}) {
    EXPECT_FALSE(allowed_pickle_global(module, name)) << module << "." << name;
  }
}

TEST(TorchScriptArchive, PickleScanFindsEverySpellingOfAGlobal) {
  // Protocol 2 as torch writes it: allowed.
  EXPECT_EQ(scan_error("\x80\x02" + global("collections", "OrderedDict") + ")R."), "");
  // Protocol 0 and 1 text and binary forms.
  expect_refused("(S'x'\nios\nsystem\n.", "'os.system' (INST at byte 6)");
  expect_refused("\x80\x04" + unicode("os") + unicode("system") + "\x93.",
                 "'os.system' (STACK_GLOBAL at byte 14)");
  // STACK_GLOBAL names from the memo: MEMOIZE counts the memo's entries, PUT/GET name them.
  expect_refused(
      "\x80\x04" + unicode("posix") + "\x94" + unicode("system") + "\x94N0h\x00h\x01\x93."s,
      "'posix.system'");
  expect_refused("(" + unicode("nt") + "p7\n" + unicode("system") + "p8\n0g7\ng8\n\x93.",
                 "'nt.system'");
  expect_refused("\x80\x04" + unicode("x") + "r\x05\x00\x00\x00"s + unicode("builtins") + "q\x05" +
                     unicode("eval") + "0j\x05\x00\x00\x00"s + unicode("eval") + "\x93.",
                 "'builtins.eval'");
  // Quoted protocol 0 strings and Python 2 strings feed STACK_GLOBAL too.
  expect_refused("S'os'\nU\x06system\x93.", "'os.system'");
  // A later PUT replaces a memo entry: the scan must not keep the old, harmless name.
  expect_refused("\x80\x04" + unicode("collections") + "q\x01" + unicode("OrderedDict") + "q\x02" +
                     unicode("os") + "q\x01" + unicode("system") + "q\x02" + "00h\x01h\x02\x93.",
                 "'os.system'");
}

TEST(TorchScriptArchive, PickleScanRefusesWhatItCannotSeeThrough) {
  const std::string computed = "cannot tell what it would run";
  // One string is not enough, and an unknown memo entry or a popped string is no name.
  expect_refused("\x80\x04" + unicode("system") + "\x93.", computed);
  expect_refused("\x80\x04h\x09" + unicode("system") + "\x93.", computed);
  expect_refused("\x80\x04" + unicode("os") + unicode("x") + "0" + unicode("system") + "\x93.",
                 computed);
  // Escapes and non-ASCII bytes in text strings are not decoded, so not trusted.
  expect_refused("S'o\\x73'\nS'system'\n\x93.", computed);
  // A name put into the memo after it overflowed its bound is unknown.
  std::string many = "\x80\x04" + unicode("os");
  for (uint32_t i = 0; i <= (1u << 16); ++i) {
    many += 'r';
    test::put_le(many, i, 4);
  }
  expect_refused(many + "0" + unicode("os") + "r\x00\x00\x02\x00"s + unicode("system") +
                     "j\x00\x00\x02\x00\x93."s,
                 computed);
  expect_refused("\x80\x02\x83\x01\x00)R."s, "copyreg extension registry (EXT2 at byte 2)");
}

TEST(TorchScriptArchive, PickleScanNeedsACompleteStream) {
  expect_refused("", "is empty");
  expect_refused("\x80\x02)", "ends at byte 3 without the STOP opcode");
  expect_refused("\x80", "ends inside its PROTO opcode at byte 0");
  expect_refused("\x80\x02" + std::string("c") + "os\n", "ends inside its GLOBAL opcode at byte 2");
  expect_refused("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff.",
                 "ends inside its BINUNICODE8 opcode at byte 2");
  expect_refused("\x80\x02gx\n.", "has no memo index after its GET opcode at byte 2");
  expect_refused(std::string("\x80\x02\xff.", 4), "byte 2 is 0xff, which is no pickle opcode");
  // What follows STOP is not read, as by Python and LibTorch.
  EXPECT_EQ(scan_error("\x80\x02)." + global("os", "system")), "");
}

// Folder records (as `zip -r` writes them) and records outside the model's folder are allowed;
// their names are checked like any other.
TEST(TorchScriptArchive, FolderRecordsPass) {
  test::TempDir dir;
  const std::string path =
      dir.write("m.pt", test::make_zip({{"archive/", ""},
                                        {"archive/data.pkl", test::kEmptyTuplePickle},
                                        {"archive/code/", ""},
                                        {"archive/code/__torch__/m.py", "class M: pass"},
                                        {"archive/constants.pkl", test::kEmptyTuplePickle},
                                        {"archive/version", "3\n"}}));
  auto info = torchscript::inspect_archive(path);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->root, "archive");
  EXPECT_EQ(info->records, 6);
}

// The directory is read whole, so its size is bounded (a file this large is its own test input).
TEST(TorchScriptArchive, DirectoryOverItsBoundIsRefused) {
  std::string zip = "PK\x03\x04";
  zip.resize((uint64_t{64} << 20) + 64, '\0');
  const uint64_t dir_size = zip.size();
  test::put_le(zip, 0x06054b50, 4);
  test::put_le(zip, 0, 4);
  test::put_le(zip, 1, 2);
  test::put_le(zip, 1, 2);
  test::put_le(zip, dir_size, 4);
  test::put_le(zip, 0, 4);
  test::put_le(zip, 0, 2);
  test::TempDir dir;
  auto info = torchscript::inspect_archive(dir.write("big.pt", zip));
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().message.find("its zip directory is 67108928 bytes long, more than the 64 "
                                      "MiB zoc reads"),
            std::string::npos)
      << info.error().message;
}

// The positive control for the bad-input tests' "the plugin was not loaded": loading an archive
// that passes the checks does load it.
TEST(TorchScriptArchive, AnAcceptedArchiveLoadsThePlugin) {
  if (!torchscript::built_with_libtorch()) GTEST_SKIP() << "built without LibTorch";
  Diagnostics d;
  LoadOptions opts;
  opts.input_dims = std::array<int64_t, 3>{3, 16, 16};
  EXPECT_TRUE(
      load_verified_model(test::repo_path("tests/torchscript/torch2.11/opzoo/model.pt"), d, opts))
      << d.render();
  EXPECT_TRUE(torchscript::plugin_load_attempted());
}

}  // namespace
}  // namespace zoc
