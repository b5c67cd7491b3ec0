// Tests that a write into an output folder can be killed at any instant without losing a user
// file, and that the next write recovers what the killed one left (issue 31, items 10 and 11).
//
// Instead of killing at random (tests/run_output_folder_kills.py does that to the real binary),
// these stop the write after k file-system changes for every k, which is exactly what SIGKILL
// between two system calls leaves, then check the folder, then stop the recovering write at
// every instant too, then let a write finish. Also: temporaries of zoc's older design and
// staging folders holding unknown files are left alone; two writers at once take turns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "compiler/driver/write_folder.h"
#include "tests/unit/test_util.h"

namespace zoc {
namespace {

namespace fs = std::filesystem;
using Files = std::vector<cudnn::GeneratedFile>;
using Tree = std::map<std::string, std::string>;  // relative path -> "d", "l:TARGET" or "f:TEXT"

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Tree tree(const fs::path& root) {
  Tree t;
  if (!fs::exists(fs::symlink_status(root))) return t;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::end(it); ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    const fs::file_status st = it->symlink_status();
    t[rel] = fs::is_symlink(st)     ? "l:" + fs::read_symlink(it->path()).string()
             : fs::is_directory(st) ? "d"
                                    : "f:" + slurp(it->path());
  }
  return t;
}

// The regular files of `t` that are not under `skip` and not the user's.
Tree zoc_files(const Tree& t, const Tree& user) {
  Tree out;
  for (const auto& [path, what] : t) {
    if (what[0] == 'f' && !user.count(path) && path.rfind(".zoc-staging", 0) != 0) {
      out[path] = what;
    }
  }
  return out;
}

// A scratch folder on tmpfs where the machine has one: the walk below makes about 1,800
// folders of 20 entries, 4 s on /dev/shm and 40 s on this project's CI disk.
class ScratchDir {
 public:
  ScratchDir() {
    const fs::path shm = "/dev/shm";
    const fs::path base = ::access(shm.c_str(), W_OK | X_OK) == 0 && fs::is_directory(shm)
                              ? shm
                              : fs::temp_directory_path();
    path_ = base /
            fmt::format("zoc_write_folder_kill_{}_{}", getpid(), reinterpret_cast<uintptr_t>(this));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

const Files kOld = {{"a.h", "old a"},
                    {"zoc/b.h", "same b"},
                    {"stale.h", "stale"},
                    {"edited.h", "zoc's"},
                    {"zoc/old/x.h", "old x"}};
const Files kNew = {
    {"a.h", "new a"}, {"zoc/b.h", "same b"}, {"zoc/c/d.h", "new d"}, {"main.cpp", "new main"}};

// A folder holding kOld's output and the user's files: some unlisted (one inside zoc's own
// subfolder), one listed file the user edited, a forged stamp line for the thesis.
Tree make_old_output(const fs::path& out) {
  EXPECT_TRUE(write_folder_atomically(out.string(), kOld).ok());
  fs::create_directories(out / "build/sub");
  std::ofstream(out / "build/sub/obj.o") << "obj";
  std::ofstream(out / "thesis.txt") << "years of work";
  std::ofstream(out / "zoc/mine.h") << "mine";
  std::ofstream(out / "edited.h", std::ios::app) << ", then the user's";
  std::ofstream(out / ".zoc-generated", std::ios::app)
      << "0000000000000000000000000000000000000000000000000000000000000000 13 thesis.txt\n";
  Tree user;
  for (const char* p :
       {"build", "build/sub", "build/sub/obj.o", "thesis.txt", "zoc/mine.h", "edited.h"}) {
    user[p] = tree(out)[p];
  }
  return user;
}

struct Refs {
  Tree old_files, new_files, final_tree;
};

Refs references(const ScratchDir& dir) {
  const fs::path ref = dir.file("ref/gen");
  const Tree user = make_old_output(ref);
  Refs r;
  r.old_files = zoc_files(tree(ref), user);
  EXPECT_TRUE(write_folder_atomically(ref.string(), kNew).ok());
  r.final_tree = tree(ref);
  r.new_files = zoc_files(r.final_tree, user);
  return r;
}

void expect_user_files(const fs::path& out, const Tree& user, const std::string& when) {
  const Tree now = tree(out);
  for (const auto& [path, what] : user) {
    const auto it = now.find(path);
    EXPECT_TRUE(it != now.end() && it->second == what) << path << " lost or changed " << when;
  }
}

// Right after a kill: the old or the new output, complete, unless the journal says the write was
// committed: then each file is zoc's old or new version, and the next write finishes the move.
void expect_old_or_new(const fs::path& out, const Tree& user, const Refs& refs,
                       const std::string& when) {
  const Tree files = zoc_files(tree(out), user);
  const std::string journal = slurp(out / ".zoc-staging/journal");
  if (!fs::exists(out / ".zoc-staging") || journal.find("state committed") == std::string::npos) {
    EXPECT_TRUE(files == refs.old_files || files == refs.new_files)
        << "neither the old nor the new output " << when;
    return;
  }
  for (const auto& [path, what] : files) {
    const auto o = refs.old_files.find(path), n = refs.new_files.find(path);
    EXPECT_TRUE((o != refs.old_files.end() && o->second == what) ||
                (n != refs.new_files.end() && n->second == what))
        << path << " is neither zoc's old nor its new version " << when;
  }
}

// The write after a kill finishes or removes what the killed one left: the folder is then
// exactly as an uninterrupted write leaves it, with no staging folder anywhere.
void expect_final(const fs::path& out, const Refs& refs, const std::string& when) {
  EXPECT_EQ(tree(out), refs.final_tree) << when;
  for (const auto& e : fs::directory_iterator(out.parent_path())) {
    EXPECT_EQ(e.path().filename(), out.filename()) << "left behind " << when << ": " << e.path();
  }
}

bool stopped(const Expected<WriteFolderReport>& r) {
  if (r.ok()) return false;
  EXPECT_EQ(r.error().message, folder::kStoppedMessage);
  return true;
}

TEST(WriteFolderKill, EveryInstantIntoAFolderWithUserFiles) {
  ScratchDir dir;
  const Refs refs = references(dir);
  int instants = 0, nested = 0;
  for (long k = 0;; ++k) {
    const fs::path out = dir.file(fmt::format("k{}/gen", k));
    const Tree user = make_old_output(out);
    const auto r = write_folder_atomically(out.string(), kNew, {false, k});
    const std::string when = fmt::format("after {} changes", k);
    expect_user_files(out, user, when);
    if (!stopped(r)) {
      ASSERT_TRUE(r.ok()) << r.error().message;
      expect_final(out, refs, when);
      break;
    }
    ++instants;
    expect_old_or_new(out, user, refs, when);
    // The recovering write, killed at every instant too, then once more to the end.
    for (long j = 0;; ++j) {
      const fs::path again = dir.file(fmt::format("k{}j{}/gen", k, j));
      fs::create_directories(again.parent_path());
      fs::copy(out.parent_path(), again.parent_path(),
               fs::copy_options::recursive | fs::copy_options::copy_symlinks);
      const auto r2 = write_folder_atomically(again.string(), kNew, {false, j});
      const std::string when2 = fmt::format("{}, then after {} more", when, j);
      expect_user_files(again, user, when2);
      if (stopped(r2)) {
        ++nested;
        ASSERT_TRUE(write_folder_atomically(again.string(), kNew).ok()) << when2;
      } else {
        ASSERT_TRUE(r2.ok()) << when2 << ": " << r2.error().message;
      }
      expect_final(again, refs, when2);
      fs::remove_all(again.parent_path());
      if (!stopped(r2)) break;
    }
    fs::remove_all(out.parent_path());
  }
  EXPECT_GT(instants, 30);  // the write really is stopped in its staging, commit and clean-up
  EXPECT_GT(nested, 300);
}

TEST(WriteFolderKill, EveryInstantIntoANewFolder) {
  ScratchDir dir;
  for (long k = 0;; ++k) {
    const fs::path out = dir.file(fmt::format("k{}/p/q/gen", k));
    const auto r = write_folder_atomically(out.string(), kNew, {false, k});
    const bool complete = fs::exists(out / ".zoc-generated");
    EXPECT_TRUE(!fs::exists(out) || complete) << "a partial folder after " << k << " changes";
    if (!stopped(r)) {
      ASSERT_TRUE(r.ok()) << r.error().message;
      break;
    }
    ASSERT_TRUE(write_folder_atomically(out.string(), kNew).ok()) << k;
    EXPECT_EQ(slurp(out / "zoc/c/d.h"), "new d");
    for (const auto& e : fs::directory_iterator(out.parent_path())) {
      EXPECT_EQ(e.path().filename(), "gen") << "left behind after " << k << ": " << e.path();
    }
  }
}

// Issue 31, item 10: with PID reuse the old design deleted `.<name>.tmp.<pid>`, the user's files
// inside. zoc's temporary names no longer hold a PID, and it never touches those folders.
TEST(WriteFolderKill, TemporariesOfTheOlderDesignAreLeftAlone) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out.string(), kOld).ok());
  for (const char* kind : {"tmp", "old"}) {
    const fs::path t = dir.file(fmt::format(".gen.{}.{}", kind, getpid()));
    fs::create_directories(t);
    std::ofstream(t / "thesis.txt") << "years of work";
  }
  ASSERT_TRUE(write_folder_atomically(out.string(), kNew).ok());
  EXPECT_EQ(slurp(dir.file(fmt::format(".gen.tmp.{}/thesis.txt", getpid()))), "years of work");
  EXPECT_EQ(slurp(dir.file(fmt::format(".gen.old.{}/thesis.txt", getpid()))), "years of work");
}

TEST(WriteFolderKill, AStagingFolderHoldingUnknownFilesIsLeftAlone) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out.string(), kOld).ok());
  fs::create_directories(out / ".zoc-staging/files");
  std::ofstream(out / ".zoc-staging/files/mine.txt") << "mine";
  auto r = write_folder_atomically(out.string(), kNew);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            fmt::format("'{}' holds files zoc did not put there, so zoc leaves it as it is; it is "
                        "the staging folder of an interrupted zoc compile: move your files out of "
                        "it (or move it away)",
                        (out / ".zoc-staging").string()));
  EXPECT_EQ(slurp(out / ".zoc-staging/files/mine.txt"), "mine");
  EXPECT_EQ(slurp(out / "a.h"), "old a");
  // A journal that is not zoc's (torn, or written by someone else) stops the write too.
  std::ofstream(out / ".zoc-staging/journal") << "zoc-journal 1\nowner x\n";
  r = write_folder_atomically(out.string(), kNew);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("its journal is unreadable (line 2 is not one zoc writes)"),
            std::string::npos);
  EXPECT_EQ(slurp(out / ".zoc-staging/files/mine.txt"), "mine");
  // Beside a new folder likewise: the staged file its journal lists goes, the user's stays.
  const fs::path fresh = dir.file("fresh");
  ASSERT_FALSE(write_folder_atomically(fresh.string(), kNew, {false, 12}).ok());
  fs::path beside;
  for (const auto& e : fs::directory_iterator(dir.file(""))) {
    if (e.path().filename().string().rfind(".zoc-", 0) == 0) beside = e.path();
  }
  ASSERT_FALSE(beside.empty());
  std::ofstream(beside / "files/zoc/mine.txt") << "mine";
  r = write_folder_atomically(fresh.string(), kNew);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(slurp(beside / "files/zoc/mine.txt"), "mine");
  EXPECT_FALSE(fs::exists(beside / "files/a.h"));
}

TEST(WriteFolderKill, ConcurrentWritersTakeTurns) {
  test::TempDir dir;
  const fs::path out = dir.file("gen");
  ASSERT_TRUE(write_folder_atomically(out.string(), kOld).ok());
  std::ofstream(out / "thesis.txt") << "years of work";
  const Files other = {{"a.h", "other a"}, {"other.h", "other"}};
  std::vector<std::string> errors[2];
  std::thread writers[2];
  for (int w = 0; w < 2; ++w) {
    writers[w] = std::thread([&, w] {
      for (int i = 0; i < 20; ++i) {
        const auto r = write_folder_atomically(out.string(), w ? other : kNew);
        if (!r.ok()) errors[w].push_back(r.error().message);
      }
    });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_TRUE(errors[0].empty() && errors[1].empty())
      << (errors[0].empty() ? errors[1] : errors[0]).front();
  EXPECT_EQ(slurp(out / "thesis.txt"), "years of work");
  const bool is_new = slurp(out / "a.h") == "new a";
  EXPECT_EQ(fs::exists(out / "main.cpp"), is_new);
  EXPECT_EQ(fs::exists(out / "other.h"), !is_new);
  EXPECT_FALSE(fs::exists(out / ".zoc-staging"));
}

}  // namespace
}  // namespace zoc
