// Tests that generated folders are written atomically: complete, or the previous output intact.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/driver/write_folder.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(WriteFolder, ReplacesWholeFolderAndLeavesNoTemporaries) {
  test::TempDir dir;
  const std::string out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "one"}, {"zoc/b.h", "two"}}).ok());
  EXPECT_EQ(slurp(fs::path(out) / "zoc/b.h"), "two");
  // A second write replaces everything: files the new output lacks are gone.
  ASSERT_TRUE(write_folder_atomically(out, {{"c.h", "three"}}).ok());
  EXPECT_FALSE(fs::exists(fs::path(out) / "a.h"));
  EXPECT_EQ(slurp(fs::path(out) / "c.h"), "three");
  for (const auto& e : fs::directory_iterator(dir.file(""))) {
    EXPECT_EQ(e.path().filename(), "gen") << "left behind: " << e.path();
  }
}

TEST(WriteFolder, FailureLeavesPreviousOutputIntact) {
  test::TempDir dir;
  const std::string out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "old"}}).ok());
  // A file that would escape the folder aborts the write half way through.
  const Status s = write_folder_atomically(out, {{"new.h", "new"}, {"../escape.h", "x"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("refusing to write outside the folder"), std::string::npos);
  EXPECT_EQ(slurp(fs::path(out) / "a.h"), "old");
  EXPECT_FALSE(fs::exists(fs::path(out) / "new.h"));
  EXPECT_FALSE(fs::exists(dir.file("escape.h")));
  for (const auto& e : fs::directory_iterator(dir.file(""))) {
    EXPECT_EQ(e.path().filename(), "gen") << "left behind: " << e.path();
  }
}

TEST(WriteFolder, RejectsMissingParentAndNonFolderTarget) {
  test::TempDir dir;
  EXPECT_FALSE(write_folder_atomically(dir.file("no/such/parent/gen"), {{"a", "b"}}).ok());
  const std::string file = dir.write("plain", "x");
  const Status s = write_folder_atomically(file, {{"a", "b"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("exists and is not a folder"), std::string::npos);
  EXPECT_EQ(slurp(file), "x");
}

}  // namespace
}  // namespace zoc
