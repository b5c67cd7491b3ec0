// Runs the safetensors reader over every file in tests/bad_inputs/safetensors/ and over damaged
// copies of valid files.
//
// DESIGN.md asks that bad inputs live as files beside the error text they must produce, so that
// a reviewer can read the case list and a regression names the case that broke. Each
// NAME.safetensors there has a NAME.safetensors.expect holding text its error must contain, or
// "OK" if it must open (make_cases.py in that folder generates both). Every case is one test. The
// truncation and byte-mutation tests check the other half of the promise: whatever the bytes,
// the reader returns an error naming the file, and never crashes or reads out of bounds (run
// them under ASan/UBSan).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "zoc/io/safetensors.h"

namespace fs = std::filesystem;

namespace {

fs::path cases_dir() { return fs::path(ZOC_SOURCE_DIR) / "tests" / "bad_inputs" / "safetensors"; }

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string read_expect(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// Case names (file stems), sorted.
std::vector<std::string> case_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cases_dir(), ec)) {
    if (e.path().extension() == ".safetensors") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class SafetensorsBadInput : public testing::TestWithParam<std::string> {};

TEST_P(SafetensorsBadInput, GivesItsError) {
  const fs::path file = cases_dir() / (GetParam() + ".safetensors");
  const fs::path expect_file = cases_dir() / (GetParam() + ".safetensors.expect");
  ASSERT_TRUE(fs::exists(expect_file)) << expect_file << " is missing";
  const std::string expect = read_expect(expect_file);
  ASSERT_FALSE(expect.empty()) << expect_file << " is empty";

  auto f = zoc::st::File::open(file.string());
  if (expect == "OK") {
    ASSERT_TRUE(f.ok()) << f.error().message;
  } else {
    ASSERT_FALSE(f.ok()) << file << " opened but should fail with: " << expect;
    const std::string& msg = f.error().message;
    EXPECT_NE(msg.find(expect), std::string::npos)
        << "message: " << msg << "\nexpected to contain: " << expect;
    EXPECT_EQ(msg.rfind(file.string() + ": ", 0), 0u) << "message does not start with the path";
  }

  // The in-memory path must agree with the mmap path, message included.
  auto m = zoc::st::File::from_bytes(read_bytes(file), file.string());
  ASSERT_EQ(m.ok(), f.ok());
  if (!m.ok()) {
    EXPECT_EQ(m.error().message, f.error().message);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, SafetensorsBadInput, testing::ValuesIn(case_names()),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(SafetensorsBadInputs, FolderHoldsTheCases) {
  const auto names = case_names();
  ASSERT_GE(names.size(), 40u) << "bad-input cases missing from " << cases_dir()
                               << " (run make_cases.py there)";
  // Every .expect belongs to a case, so none is silently skipped.
  for (const auto& e : fs::directory_iterator(cases_dir())) {
    const std::string name = e.path().filename().string();
    const std::string suffix = ".safetensors.expect";
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      EXPECT_TRUE(fs::exists(cases_dir() / name.substr(0, name.size() - 7))) << "orphan " << name;
    }
  }
}

TEST(SafetensorsBadInputs, NanValuesAreReadAndCounted) {
  auto f = zoc::st::File::open((cases_dir() / "nan_values.safetensors").string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  const zoc::st::TensorView* w = f->find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(zoc::st::count_non_finite(*w), 3u);  // NaN, +inf, -inf; 1.0 is finite
}

// A valid file cut at every length must fail cleanly: with every tensor non-empty, no strict
// prefix can be valid (the header is cut, or the last tensor ends past the data).
TEST(SafetensorsBadInputs, EveryTruncationFailsCleanly) {
  for (const char* name : {"good_simple", "good_all_dtypes", "good_unicode_names", "nan_values"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> full =
        read_bytes(cases_dir() / (std::string(name) + ".safetensors"));
    ASSERT_GT(full.size(), 8u);
    ASSERT_TRUE(zoc::st::File::from_bytes(full).ok());
    for (size_t len = 0; len < full.size(); ++len) {
      auto f =
          zoc::st::File::from_bytes(std::vector<uint8_t>(full.begin(), full.begin() + len), "cut");
      ASSERT_FALSE(f.ok()) << "prefix of " << len << " bytes opened";
      ASSERT_EQ(f.error().message.rfind("cut: ", 0), 0u) << f.error().message;
    }
  }
}

// The same through the mmap path, on disk.
TEST(SafetensorsBadInputs, TruncatedFilesOnDiskFailCleanly) {
  const std::vector<uint8_t> full = read_bytes(cases_dir() / "good_simple.safetensors");
  const fs::path tmp = fs::temp_directory_path() / ("zoc_st_trunc_" + std::to_string(::getpid()));
  for (size_t len = 0; len < full.size(); ++len) {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(full.data()), static_cast<std::streamsize>(len));
    }
    auto f = zoc::st::File::open(tmp.string());
    ASSERT_FALSE(f.ok()) << "prefix of " << len << " bytes opened";
    EXPECT_EQ(f.error().message.rfind(tmp.string() + ": ", 0), 0u) << f.error().message;
  }
  fs::remove(tmp);
}

// Every single-byte change to a valid file either still opens, with views that stay inside the
// buffer and tile the data section, or fails with a message naming the input.
TEST(SafetensorsBadInputs, SingleByteMutationsNeverCrash) {
  const std::vector<uint8_t> full = read_bytes(cases_dir() / "good_all_dtypes.safetensors");
  ASSERT_GT(full.size(), 8u);
  const uint8_t values[] = {0x00, 0x01, 0x20, '"', ',', '-',  '0',  '9',  '[',
                            ']',  '{',  '}',  'e', '.', 0x7F, 0x80, 0xC3, 0xFF};
  size_t opened = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t v : values) {
      if (full[i] == v) continue;
      std::vector<uint8_t> bytes = full;
      bytes[i] = v;
      auto f = zoc::st::File::from_bytes(bytes, "mut");
      if (!f.ok()) {
        ASSERT_EQ(f.error().message.rfind("mut: ", 0), 0u) << f.error().message;
        continue;
      }
      ++opened;
      size_t covered = 0;
      for (const auto& t : f->tensors()) covered += t.nbytes;
      const uint64_t header = zoc::st::detail::load_le(bytes.data(), 8);
      ASSERT_EQ(covered, bytes.size() - 8 - header) << "byte " << i << " = " << int(v);
    }
  }
  EXPECT_GT(opened, 0u);  // mutations inside tensor data leave the file valid
}

}  // namespace
