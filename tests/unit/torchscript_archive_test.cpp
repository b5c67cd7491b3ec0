// The archive checks that stand between a `.pt` file and LibTorch (zip_archive.h, pickle_scan.h):
// every archive torch 1.13 and 2.11 wrote for the allow-list passes, the pickle scan finds
// globals however a pickle spells them (GLOBAL, INST, STACK_GLOBAL with strings pushed directly
// or through the memo, every protocol), refuses what it cannot see through, and the zip layer
// accepts the forms real writers use. The hostile archives themselves are bad-input files
// (tests/bad_inputs/torchscript/), each with its message; these tests cover what lies between.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <map>
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
  const Status s = check_pickle("p.pkl", pickle);  // not data.pkl: tensors are not checked
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
  expect_refused("(" + unicode("nt") + "p0\n" + unicode("system") + "p1\n0g0\ng1\n\x93.",
                 "'nt.system'");
  expect_refused("\x80\x04" + unicode("x") + "r\x00\x00\x00\x00"s + unicode("builtins") + "q\x01" +
                     unicode("eval") + "0j\x01\x00\x00\x00"s + unicode("eval") + "\x93.",
                 "'builtins.eval'");
  // Quoted protocol 0 strings and Python 2 strings feed STACK_GLOBAL too.
  expect_refused("S'os'\nU\x06system\x93.", "'os.system'");
  // A later PUT would replace a memo entry for Python but not for LibTorch, which stores entries
  // in order: the two would read different names, so the pickle is refused.
  expect_refused("\x80\x04" + unicode("collections") + "q\x00"s + unicode("OrderedDict") + "q\x01" +
                     unicode("os") + "q\x00"s + unicode("system") + "q\x01" + "00h\x00h\x01\x93."s,
                 "stores memo entry 0 (BINPUT at byte 36) where entry 2 comes next");
}

TEST(TorchScriptArchive, PickleScanRefusesWhatItCannotSeeThrough) {
  const std::string computed = "cannot tell what it would run";
  // One string is not enough, and a popped string is no name.
  expect_refused("\x80\x04" + unicode("system") + "\x93.", computed);
  expect_refused("\x80\x04" + unicode("os") + unicode("x") + "0" + unicode("system") + "\x93.",
                 computed);
  // Escapes and non-ASCII bytes in text strings are not decoded, so not trusted.
  expect_refused("S'o\\x73'\nS'system'\n\x93.", computed);
  // A memo entry that was never stored is no name either.
  expect_refused("\x80\x04h\x09" + unicode("system") + "\x93.",
                 "reads memo entry 9 (BINGET at byte 2), which it never stored");
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

// Nesting is bounded at 1000 levels, counted however a pickle builds it.
TEST(TorchScriptArchive, PickleNestingIsBounded) {
  const auto nested = [](int levels) {
    return "\x80\x02)" + std::string(levels - 1, '\x85') + ".";
  };
  EXPECT_EQ(scan_error(nested(1000)), "");
  expect_refused(nested(1001), "nests values more than 1000 deep (at byte 1002)");
  // Lists filled with APPEND nest as deep as tuples.
  std::string lists = "\x80\x02]";
  for (int i = 0; i < 1000; ++i) lists += "]\x94";  // 1001 lists on the stack, each memoized
  for (int i = 0; i < 1000; ++i) lists += "a";      // each appended to the one below
  expect_refused(lists + ".", "nests values more than 1000 deep (at byte 3002)");
}

// A container is filled before it goes into another and never after, so that its depth is known
// when it is placed and no cycle can form; an opcode never reaches below the last MARK.
TEST(TorchScriptArchive, PickleContainersAreFilledBeforeTheyArePlaced) {
  // [] memoized, placed into a second list, then fetched from the memo and appended to.
  expect_refused(
      "\x80\x02]\x94]\x94h\x00"
      "ah\x00"
      "Na."s,
      "adds to a container already placed inside another (APPEND at byte 12)");
  expect_refused(
      "\x80\x02]\x94h\x00"
      "a."s,
      "puts a container inside itself (APPEND at byte 6)");
  expect_refused("\x80\x02)(0.",
                 "has fewer values than its POP opcode at byte 4 takes after the "
                 "last MARK");
  expect_refused("\x80\x02NNa.", "adds to something that is not a list, dict, set or object");
  EXPECT_EQ(scan_error("\x80\x02](K\x01K\x02"
                       "e}(K\x01NK\x02]\x94u."),
            "");
}

TEST(TorchScriptArchive, PickleValuesAliveAtOnceAreBounded) {
  const std::string many((uint64_t{1} << 23) + 1, 'N');
  expect_refused("\x80\x02" + many + ".", "holds more than 8388608 values at once (at byte");
}

// A module `M` whose attribute `conv` is a module `C` with one float tensor `weight` of the given
// view on a storage of `numel` elements, the record archive/data/0.
std::string module_with_tensor(int numel, int offset, const std::string& size_stride) {
  const auto binunicode = [](const std::string& s) {
    std::string out = "X";
    test::put_le(out, s.size(), 4);
    return out + s;
  };
  const auto k = [](int v) { return "K" + std::string(1, static_cast<char>(v)); };
  return "\x80\x02" + global("__torch__", "M") + ")\x81}(" + binunicode("conv") +
         global("__torch__", "C") + ")\x81}(" + binunicode("weight") +
         global("torch._utils", "_rebuild_tensor_v2") + "((" + binunicode("storage") +
         global("torch", "FloatStorage") + binunicode("0") + binunicode("cpu") + k(numel) + "tQ" +
         k(offset) + size_stride + "\x89" + global("collections", "OrderedDict") + ")RtRubub.";
}

std::string tensor_error(const std::string& pickle, uint64_t record_bytes,
                         const std::string& record = "archive/data.pkl") {
  const std::map<std::string, uint64_t> sizes = {{"archive/data/0", record_bytes}};
  const Status s = check_pickle(record, pickle, &sizes);
  return s.ok() ? "" : s.error().message;
}

// Every tensor view of data.pkl and constants.pkl lies inside its storage, and every storage
// inside its record; errors name the tensor by the attributes that lead to it.
TEST(TorchScriptArchive, PickleTensorViewsLieInsideTheirStorage) {
  const std::string fits = module_with_tensor(16, 1, "(K\x03K\x05t(K\x05K\x01t");  // last: 15
  EXPECT_EQ(tensor_error(fits, 64), "");
  EXPECT_NE(tensor_error(fits, 63).find("gives storage 'archive/data/0' 16 Float elements (64 "
                                        "bytes; BINPERSID at byte"),
            std::string::npos);
  const std::string past = module_with_tensor(16, 2, "(K\x03K\x05t(K\x05K\x01t");  // last: 16
  EXPECT_NE(tensor_error(past, 64).find("builds tensor 'conv.weight' (sizes [3, 5], strides [5, "
                                        "1], storage offset 2; REDUCE at byte"),
            std::string::npos)
      << tensor_error(past, 64);
  // Empty views read nothing; sizes and strides must pair up; a storage needs its record.
  EXPECT_EQ(tensor_error(module_with_tensor(16, 99, "(K\x00K\x05t(K\x05K\x01t"s), 64), "");
  EXPECT_NE(
      tensor_error(module_with_tensor(16, 0, "(K\x03t(K\x05K\x01t"), 64)
          .find("from arguments other than a storage, an offset and as many sizes as strides"),
      std::string::npos);
  const std::map<std::string, uint64_t> none;
  const Status missing = check_pickle("archive/data.pkl", fits, &none);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(
                "names storage 'archive/data/0' (BINPERSID at byte 140), which is no record"),
            std::string::npos)
      << missing.error().message;
  // Pickles whose tensors LibTorch does not build are not checked: torch 2.x writes the records
  // of traced_inputs.pkl's storages empty.
  EXPECT_EQ(scan_error(past), "");
}

// LibTorch reads a .debug_pkl's sources (text indices, file name index, line) by indexing its
// string table unchecked: every index must be inside it.
TEST(TorchScriptArchive, DebugPickleSourcesStayInsideTheirStringTable) {
  const auto debug_pkl = [](const std::string& indices, const std::string& name) {
    return "\x80\x02" + unicode("FORMAT_WITH_STRING_TABLE") + "(" + unicode("") + unicode("f.py") +
           "t" + global("torch.jit._pickle", "build_intlist") + "(](" + indices + "etR" + name +
           "K\x07\x87\x86.";
  };
  const auto error = [](const std::string& pickle) {
    const Status s = check_pickle("archive/code/__torch__.py.debug_pkl", pickle);
    return s.ok() ? std::string() : s.error().message;
  };
  EXPECT_EQ(error(debug_pkl("K\x00K\x01"s, "K\x01")), "");
  EXPECT_NE(error(debug_pkl("K\x00K\x02"s, "K\x01"))
                .find("refers to entries past its string "
                      "table of 2"),
            std::string::npos);
  EXPECT_NE(error(debug_pkl("K\x00"s, "K\x09")).find("past its string table"), std::string::npos);
}

// A named pipe or a device would block open() or never end: refused before anything is read.
TEST(TorchScriptArchive, OnlyRegularFilesAreRead) {
  test::TempDir dir;
  const std::string fifo = dir.file("pipe.pt");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto info = torchscript::inspect_archive(fifo);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().message.find("it is a named pipe (FIFO), not a regular file"),
            std::string::npos)
      << info.error().message;
  info = torchscript::inspect_archive(dir.file(""));
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().message.find("it is a directory, not a regular file"), std::string::npos);
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
