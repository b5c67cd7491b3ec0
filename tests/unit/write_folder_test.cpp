// Tests that generated folders are written atomically (complete, or the previous output intact)
// and that zoc never replaces or deletes what it did not write: files the stamp does not list,
// listed files that changed, folders and links at listed paths, names a forged stamp lists
// (issue 31, item 12). write_folder_kill_test.cpp stops the write at every instant.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/driver/write_folder.h"
#include "compiler/support/sha256.h"
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
  const auto s = write_folder_atomically(out, {{"new.h", "new"}, {"../escape.h", "x"}});
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
    const auto s = write_folder_atomically(file, {{"a", "b"}}, {force});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("exists and is not a folder"), std::string::npos);
    EXPECT_EQ(slurp(file), "x");
  }
}

TEST(WriteFolder, FailureRemovesTheParentsItCreated) {
  test::TempDir dir;
  const auto s = write_folder_atomically(dir.file("new/parent/gen"), {{"../../x", "y"}});
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(fs::exists(dir.file("new")));
}

// The data-loss bug of issue 17: an existing folder of the user's is never replaced.
TEST(WriteFolder, RefusesAFolderZocDidNotWrite) {
  test::TempDir dir;
  const std::string user = dir.file("userdir");
  fs::create_directories(user);
  std::ofstream(fs::path(user) / "thesis.txt") << "years of work";
  const auto s = write_folder_atomically(user, {{"a.h", "one"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "refusing to write into this folder: zoc did not write it (it has no .zoc-generated "
            "stamp) and it holds 1 entry ('thesis.txt'); name a new folder, or pass --force to "
            "write into it (zoc then replaces the files at the names it writes and keeps "
            "everything else)");
  EXPECT_EQ(slurp(fs::path(user) / "thesis.txt"), "years of work");
  EXPECT_FALSE(fs::exists(fs::path(user) / "a.h"));
  // --force writes zoc's files beside the user's and deletes nothing.
  ASSERT_TRUE(write_folder_atomically(user, {{"a.h", "one"}}, {true}).ok());
  EXPECT_EQ(slurp(fs::path(user) / "thesis.txt"), "years of work");
  EXPECT_EQ(slurp(fs::path(user) / "a.h"), "one");
  // From then on the folder is zoc's, the thesis still the user's.
  ASSERT_TRUE(write_folder_atomically(user, {{"b.h", "two"}}).ok());
  EXPECT_FALSE(fs::exists(fs::path(user) / "a.h"));
  EXPECT_EQ(slurp(fs::path(user) / "thesis.txt"), "years of work");
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
  EXPECT_NE(slurp(out / ".zoc-generated")
                .find("\n7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed 3 a.h\n"
                      "3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3 3 "
                      "zoc/b.h\n"),
            std::string::npos);
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
  const auto s = write_folder_atomically(out, {{"notes.txt", "generated"}});
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
    const auto s = write_folder_atomically(p, {{"a.h", "one"}}, {true});
    ASSERT_FALSE(s.ok()) << p;
    EXPECT_NE(s.error().message.find("is the current folder or contains it"), std::string::npos);
  }
  fs::current_path(here);
  EXPECT_TRUE(fs::exists(dir.file("cwd/sub")));
  fs::create_directories(dir.file("real"));
  std::ofstream(dir.file("real/keep.txt")) << "keep";
  fs::create_directory_symlink(dir.file("real"), dir.file("link"));
  const auto s = write_folder_atomically(dir.file("link"), {{"a.h", "one"}}, {true});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("is a symbolic link (to '"), std::string::npos);
  EXPECT_EQ(slurp(dir.file("real/keep.txt")), "keep");
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
}

// A stamp line as zoc writes it, for stamps the tests forge.
std::string stamp_line(const std::string& content, const std::string& path) {
  return fmt::format("{} {} {}\n", sha256_hex(content), content.size(), path);
}

std::string joined(const std::vector<std::string>& notes) {
  std::string s;
  for (const std::string& n : notes) s += n + "\n";
  return s;
}

// Issue 31, item 12: a copied or forged stamp listing the user's files, a user folder at a listed
// path, and an older zoc's stamp without hashes delete nothing; the write says what it kept.
TEST(WriteFolder, ListedPathsThatAreNotZocsOwnAreKept) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "one"}}).ok());
  std::ofstream(out / "thesis.txt") << "years of work";
  std::ofstream(out / "notes.txt") << "notes";
  fs::create_directories(out / "build/sub");
  std::ofstream(out / "build/sub/obj.o") << "obj";
  std::ofstream(out / ".zoc-generated", std::ios::app)
      << stamp_line("what a copied stamp says", "thesis.txt") << stamp_line("obj", "build")
      << "notes.txt\n"
      << stamp_line("x", "../outside.txt");
  std::ofstream(dir.file("outside.txt")) << "x";
  const auto r = write_folder_atomically(out, {{"b.h", "two"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(slurp(out / "thesis.txt"), "years of work");
  EXPECT_EQ(slurp(out / "notes.txt"), "notes");
  EXPECT_EQ(slurp(out / "build/sub/obj.o"), "obj");
  EXPECT_EQ(slurp(dir.file("outside.txt")), "x");
  EXPECT_FALSE(fs::exists(out / "a.h"));  // zoc's, unchanged: replaced by b.h
  EXPECT_EQ(joined(r->notes),
            "kept 'thesis.txt': the stamp lists it, but it does not hold what zoc wrote there, "
            "so it is yours now\n"
            "kept 'notes.txt': the stamp lists it without a content hash (an older zoc's stamp), "
            "so zoc cannot tell it from yours\n"
            "kept 'build': the stamp lists it, but it is not a file zoc wrote\n");
  // The new stamp lists only zoc's own file: the user's are unlisted from now on.
  EXPECT_EQ(slurp(out / ".zoc-generated").find("thesis"), std::string::npos);
}

TEST(WriteFolder, AChangedFileIsRefusedOrReplacedOnlyWithForce) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "one"}, {"b.h", "two"}}).ok());
  std::ofstream(out / "a.h", std::ios::app) << " edited";
  const auto refused = write_folder_atomically(out, {{"a.h", "new"}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "refusing to replace 'a.h': it changed since zoc wrote it and the new output needs "
            "its name; move it away, or pass --force to replace it");
  EXPECT_EQ(slurp(out / "a.h"), "one edited");
  EXPECT_EQ(slurp(out / "b.h"), "two");
  // Not needed by the new output: kept, whatever --force says.
  for (bool force : {false, true}) {
    const auto r = write_folder_atomically(out, {{"c.h", "three"}}, {force});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(slurp(out / "a.h"), "one edited");
  }
  std::ofstream(out / "c.h", std::ios::app) << " edited";
  ASSERT_TRUE(write_folder_atomically(out, {{"c.h", "new"}}, {true}).ok());
  EXPECT_EQ(slurp(out / "c.h"), "new");
}

TEST(WriteFolder, AFolderInTheWayIsNeverDeleted) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "one"}, {"zoc/b.h", "two"}}).ok());
  fs::remove(out / "a.h");
  fs::create_directories(out / "a.h");
  std::ofstream(out / "a.h/mine") << "mine";
  fs::remove_all(out / "zoc");
  std::ofstream(out / "zoc") << "a file where zoc needs a folder";
  for (bool force : {false, true}) {
    const auto r = write_folder_atomically(out, {{"a.h", "one"}, {"zoc/b.h", "two"}}, {force});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message,
              "cannot write the new output: 'a.h' (it is a folder where the new output needs a "
              "file), 'zoc/b.h' (it is not a folder where the new output needs one); zoc never "
              "deletes a folder or what is in the way of one: move them away");
    EXPECT_EQ(slurp(out / "a.h/mine"), "mine");
    EXPECT_EQ(slurp(out / "zoc"), "a file where zoc needs a folder");
  }
}

// A stamp's hash proves what zoc wrote only inside the folder: a listed link, or a listed path
// through a linked folder, is not followed, even when the file it reaches holds that content.
TEST(WriteFolder, LinksAtListedPathsAreNotFollowed) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "one"}}).ok());
  fs::create_directories(dir.file("elsewhere"));
  std::ofstream(dir.file("elsewhere/x.h")) << "same";
  fs::create_symlink(dir.file("elsewhere/x.h"), out / "x.h");
  fs::create_directory_symlink(dir.file("elsewhere"), out / "lnk");
  std::ofstream(out / ".zoc-generated", std::ios::app)
      << stamp_line("same", "x.h") << stamp_line("same", "lnk/x.h");
  const auto r = write_folder_atomically(out, {{"b.h", "two"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(fs::is_symlink(out / "x.h"));
  EXPECT_TRUE(fs::is_symlink(out / "lnk"));
  EXPECT_EQ(slurp(dir.file("elsewhere/x.h")), "same");
  // Where the new output needs a file, a link is the user's: refused, or replaced (the link
  // itself, never its target) with --force.
  const auto refused = write_folder_atomically(out, {{"x.h", "new"}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("'x.h': it is not a regular file"), std::string::npos);
  ASSERT_TRUE(write_folder_atomically(out, {{"x.h", "new"}}, {true}).ok());
  EXPECT_FALSE(fs::is_symlink(out / "x.h"));
  EXPECT_EQ(slurp(out / "x.h"), "new");
  EXPECT_EQ(slurp(dir.file("elsewhere/x.h")), "same");
}

// A folder an older zoc wrote lists names without hashes: a listed file that already holds the
// new text is left as it is and gains its hash; one that differs cannot be told from the user's
// edit, so it is refused without --force.
TEST(WriteFolder, AnOlderZocsStampUpgradesWithoutLoss) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  fs::create_directories(out);
  std::ofstream(out / "a.h") << "same";
  std::ofstream(out / "b.h") << "older zoc's";
  std::ofstream(out / ".zoc-generated") << "# an older zoc's stamp\na.h\nb.h\n";
  const auto refused = write_folder_atomically(out, {{"a.h", "same"}, {"b.h", "new"}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "refusing to replace 'b.h': an older zoc's stamp lists it without a content hash, so "
            "zoc cannot tell whether it changed and the new output needs its name; move it away, "
            "or pass --force to replace it");
  EXPECT_EQ(slurp(out / "b.h"), "older zoc's");
  ASSERT_TRUE(write_folder_atomically(out, {{"a.h", "same"}}).ok());
  EXPECT_EQ(slurp(out / ".zoc-generated").find("b.h"), std::string::npos);
  EXPECT_EQ(slurp(out / "b.h"), "older zoc's");  // listed without a hash: kept
  ASSERT_TRUE(write_folder_atomically(out, {{"c.h", "new"}}).ok());
  EXPECT_FALSE(fs::exists(out / "a.h"));  // its hash is known now
}

// Issue 31: a valid 250-byte name was refused ("File name too long") because the temporary
// folder's name added to it; zoc's temporary names are short and fixed.
TEST(WriteFolder, AnyValidNameFits) {
  test::TempDir dir;
  const fs::path out = dir.file(std::string(250, 'n'));
  for (const char* text : {"one", "two"}) {
    const auto r = write_folder_atomically(out, {{"a.h", text}});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(slurp(out / "a.h"), text);
  }
}

}  // namespace
}  // namespace zoc
