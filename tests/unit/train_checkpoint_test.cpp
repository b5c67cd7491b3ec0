// Tests that a trainer's checkpoint survives its writer being killed at any moment (issue 17):
// a child process writes checkpoint pairs in a loop and is killed with SIGKILL after a varying
// delay; every time, the pair on disk must open as one epoch's weights and optimizer state with
// intact data, and a truncated file must give a clear error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/unit/test_util.h"
#include "zoc/train/checkpoint.h"

namespace zoc {
namespace {

namespace fs = std::filesystem;
constexpr size_t kFloats = size_t(1) << 19;  // 2 MiB per tensor: a write cycle takes
                                             // tens of ms, so kills land all over it

Status write_epoch(const std::string& path, int epoch, std::vector<float>& buf) {
  std::fill(buf.begin(), buf.end(), float(epoch));
  const std::vector<st::TensorToWrite> w = {
      {"w", st::DType::F32, {int64_t(kFloats)}, buf.data(), kFloats * sizeof(float)}};
  std::vector<float> m(kFloats, 2.0f * float(epoch));
  const std::vector<st::TensorToWrite> o = {
      {"momentum.w", st::DType::F32, {int64_t(kFloats)}, m.data(), kFloats * sizeof(float)}};
  const std::string e = std::to_string(epoch);
  return write_checkpoint_pair(path, w, {{"epochs_done", e}}, o, {{"epochs_done", e}});
}

// The pair opens as one epoch, and every element says so.
void expect_consistent(const std::string& path, int trial) {
  auto pair = open_checkpoint_pair(path);
  ASSERT_TRUE(pair.ok()) << "trial " << trial << ": " << pair.error().message;
  const float epoch = std::stof(pair->epochs_done);
  const st::TensorView* w = pair->weights.find("w");
  const st::TensorView* m = pair->optim.find("momentum.w");
  ASSERT_TRUE(w && m) << "trial " << trial;
  const float* wd = reinterpret_cast<const float*>(w->data);
  const float* md = reinterpret_cast<const float*>(m->data);
  for (size_t i = 0; i < kFloats; i += 1021) {
    ASSERT_EQ(wd[i], epoch) << "trial " << trial;
    ASSERT_EQ(md[i], 2 * epoch) << "trial " << trial;
  }
}

TEST(TrainCheckpoint, KillingTheWriterAtAnyMomentLeavesAConsistentPair) {
  test::TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  std::vector<float> buf(kFloats);
  ASSERT_TRUE(write_epoch(path, 1, buf).ok());  // a first pair, complete
  int killed_mid_write = 0;
  for (int trial = 0; trial < 32; ++trial) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // the writer: epochs from 2 on, as fast as it can
      for (int epoch = 2;; ++epoch) {
        if (!write_epoch(path, epoch, buf).ok()) _exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(3000 + 9000 * trial));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself (status " << status << ")";
    for (const auto& e : fs::directory_iterator(dir.file(""))) {
      killed_mid_write += e.path().string().find(".tmp.") != std::string::npos;
    }
    expect_consistent(path, trial);
  }
  // The delays cover whole write cycles: some kills must have hit a write in flight.
  EXPECT_GT(killed_mid_write, 0);
  // The next write settles what a kill left and the pair stays consistent.
  ASSERT_TRUE(write_epoch(path, 1000, buf).ok());
  expect_consistent(path, 1000);
  EXPECT_FALSE(fs::exists(path + ".optim.safetensors.next"));
}

TEST(TrainCheckpoint, ACommittedNextFileIsUsedThenSettled) {
  test::TempDir dir;
  const std::string path = dir.file("c.safetensors");
  std::vector<float> buf(kFloats);
  ASSERT_TRUE(write_epoch(path, 1, buf).ok());
  // As if killed between the commit point and the last rename: epoch 2's weights, epoch 1's
  // optimizer file, epoch 2's in .next.
  const std::string optim = optim_path_for(path);
  fs::copy_file(optim, dir.file("epoch1.optim"));
  ASSERT_TRUE(write_epoch(path, 2, buf).ok());
  fs::rename(optim, optim + ".next");
  fs::copy_file(dir.file("epoch1.optim"), optim);
  auto pair = open_checkpoint_pair(path);
  ASSERT_TRUE(pair.ok()) << pair.error().message;
  EXPECT_EQ(pair->epochs_done, "2");
  ASSERT_TRUE(settle_checkpoint(path).ok());
  EXPECT_FALSE(fs::exists(optim + ".next"));
  expect_consistent(path, 2);
}

TEST(TrainCheckpoint, TruncatedOrMismatchedFilesAreRefusedClearly) {
  test::TempDir dir;
  const std::string path = dir.file("c.safetensors");
  std::vector<float> buf(kFloats);
  ASSERT_TRUE(write_epoch(path, 3, buf).ok());
  fs::resize_file(path, fs::file_size(path) / 2);
  auto truncated = open_checkpoint_pair(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("checkpoint: "), std::string::npos);
  EXPECT_NE(truncated.error().message.find("truncated"), std::string::npos)
      << truncated.error().message;

  ASSERT_TRUE(write_epoch(path, 3, buf).ok());
  fs::remove(optim_path_for(path));
  auto alone = open_checkpoint_pair(path);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message.find("holds the weights after epoch 3 but no optimizer state of "
                                       "that epoch was found beside it"),
            std::string::npos)
      << alone.error().message;
}

}  // namespace
}  // namespace zoc
