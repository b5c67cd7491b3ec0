// Tests that generated folders are written atomically (complete, or the previous output intact)
// and that zoc never deletes a file it did not write.
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

TEST(WriteFolder, CreatesMissingParentsAndRefusesAFile) {
  test::TempDir dir;
  ASSERT_TRUE(write_folder_atomically(dir.file("no/such/parent/gen"), {{"a", "b"}}).ok());
  EXPECT_EQ(slurp(dir.file("no/such/parent/gen/a")), "b");
  const std::string file = dir.write("plain", "x");
  for (bool force : {false, true}) {
    const Status s = write_folder_atomically(file, {{"a", "b"}}, {force});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("exists and is not a folder"), std::string::npos);
    EXPECT_EQ(slurp(file), "x");
  }
}

TEST(WriteFolder, FailureRemovesTheParentsItCreated) {
  test::TempDir dir;
  const Status s = write_folder_atomically(dir.file("new/parent/gen"), {{"../../x", "y"}});
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(fs::exists(dir.file("new")));
}

// The data-loss bug of issue 17: an existing folder of the user's is never replaced.
TEST(WriteFolder, RefusesAFolderZocDidNotWrite) {
  test::TempDir dir;
  const std::string user = dir.file("userdir");
  fs::create_directories(user);
  std::ofstream(fs::path(user) / "thesis.txt") << "years of work";
  const Status s = write_folder_atomically(user, {{"a.h", "one"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "refusing to replace this folder: zoc did not write it (it has no .zoc-generated "
            "stamp) and it holds 1 entry ('thesis.txt'); name a new folder, or pass --force to "
            "replace it with everything in it");
  EXPECT_EQ(slurp(fs::path(user) / "thesis.txt"), "years of work");
  EXPECT_FALSE(fs::exists(fs::path(user) / "a.h"));
  // --force replaces it as a whole.
  ASSERT_TRUE(write_folder_atomically(user, {{"a.h", "one"}}, {true}).ok());
  EXPECT_FALSE(fs::exists(fs::path(user) / "thesis.txt"));
  EXPECT_EQ(slurp(fs::path(user) / "a.h"), "one");
}

TEST(WriteFolder, AnEmptyFolderIsFine) {
  test::TempDir dir;
  fs::create_directories(dir.file("empty"));
  ASSERT_TRUE(write_folder_atomically(dir.file("empty"), {{"a.h", "one"}}).ok());
  EXPECT_EQ(slurp(dir.file("empty/a.h")), "one");
}

TEST(WriteFolder, KeepsWhatTheStampDoesNotList) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "one"}, {"zoc/b.h", "two"}}).ok());
  EXPECT_NE(slurp(out / ".zoc-generated").find("\na.h\nzoc/b.h\n"), std::string::npos);
  fs::create_directories(out / "build/sub");
  std::ofstream(out / "build/sub/obj.o") << "obj";
  std::ofstream(out / "zoc/mine.h") << "mine";
  std::ofstream(out / "notes.txt") << "notes";
  ASSERT_TRUE(write_folder_atomically(out, {{"c.h", "three"}, {"zoc/b.h", "new"}}).ok());
  EXPECT_FALSE(fs::exists(out / "a.h"));  // zoc wrote it, the new output lacks it
  EXPECT_EQ(slurp(out / "c.h"), "three");
  EXPECT_EQ(slurp(out / "zoc/b.h"), "new");
  EXPECT_EQ(slurp(out / "build/sub/obj.o"), "obj");
  EXPECT_EQ(slurp(out / "zoc/mine.h"), "mine");
  EXPECT_EQ(slurp(out / "notes.txt"), "notes");
  // A kept file whose name the new output needs is refused, and nothing changes.
  const Status s = write_folder_atomically(out, {{"notes.txt", "generated"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "refusing to replace 'notes.txt': zoc did not write it and the new output needs its "
            "name; move it away, or pass --force to replace it");
  EXPECT_EQ(slurp(out / "notes.txt"), "notes");
  EXPECT_EQ(slurp(out / "c.h"), "three");
  for (const auto& e : fs::directory_iterator(dir.file(""))) {
    EXPECT_EQ(e.path().filename(), "gen") << "left behind: " << e.path();
  }
}

TEST(WriteFolder, RefusesTheCurrentFolderItsParentsAndLinks) {
  test::TempDir dir;
  const fs::path here = fs::current_path();
  fs::create_directories(dir.file("cwd/sub"));
  fs::current_path(dir.file("cwd/sub"));
  for (const char* p : {".", "..", "./", "../.."}) {
    const Status s = write_folder_atomically(p, {{"a.h", "one"}}, {true});
    ASSERT_FALSE(s.ok()) << p;
    EXPECT_NE(s.error().message.find("is the current folder or contains it"), std::string::npos);
  }
  fs::current_path(here);
  EXPECT_TRUE(fs::exists(dir.file("cwd/sub")));
  fs::create_directories(dir.file("real"));
  std::ofstream(dir.file("real/keep.txt")) << "keep";
  fs::create_directory_symlink(dir.file("real"), dir.file("link"));
  const Status s = write_folder_atomically(dir.file("link"), {{"a.h", "one"}}, {true});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("is a symbolic link (to '"), std::string::npos);
  EXPECT_EQ(slurp(dir.file("real/keep.txt")), "keep");
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
}

}  // namespace
}  // namespace zoc
