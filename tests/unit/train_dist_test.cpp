// Tests the CUDA-free half of data-parallel training (zoc/train/dist.h, issue 21): the launch
// environment with its errors, each rank's share of the data order (together exactly the
// single-process batches), and the TCP rendezvous that hands NCCL's id to every rank.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <set>

#include "zoc/train/datasets.h"
#include "zoc/train/dist.h"

namespace zoc::train {
namespace {

Expected<DistEnv> env_of(std::map<std::string, std::string> vars) {
  return dist_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(TrainDist, EnvironmentAndItsErrors) {
  auto single = env_of({});
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(single->distributed());
  auto two = env_of({{"WORLD_SIZE", "2"},
                     {"RANK", "1"},
                     {"LOCAL_RANK", "1"},
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->rank, 1);
  EXPECT_EQ(two->world, 2);
  EXPECT_EQ(two->local_rank, 1);
  const std::map<std::string, std::string> base = {
      {"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto without = [&](const std::string& k) {
    auto v = base;
    v.erase(k);
    return v;
  };
  auto with = [&](const std::string& k, const std::string& x) {
    auto v = base;
    v[k] = x;
    return v;
  };
  const std::pair<std::map<std::string, std::string>, std::string> bad[] = {
      {without("RANK"), "RANK is not set (WORLD_SIZE is: a distributed launch)"},
      {with("RANK", "2"), "RANK='2' is not an integer in 0..1"},
      {with("WORLD_SIZE", "0"), "WORLD_SIZE='0' is not an integer in 1..4096"},
      {with("WORLD_SIZE", "two"), "WORLD_SIZE='two' is not an integer in 1..4096"},
      {without("MASTER_ADDR"), "MASTER_ADDR is not set (the address rank 0 listens on)"},
      {with("MASTER_PORT", "70000"), "MASTER_PORT='70000' is not an integer in 1..65535"},
  };
  for (const auto& [vars, message] : bad) {
    auto e = env_of(vars);
    ASSERT_FALSE(e.ok()) << message;
    EXPECT_EQ(e.error().message, message);
  }
}

// Step k of all ranks together is exactly the single-process batch k, as with
// DistributedSampler over the same order.
TEST(TrainDist, RankShardsTogetherAreTheSingleProcessBatches) {
  const std::vector<int64_t> order = data::shuffled_order(60000, 7, 3);
  const int batch = 128;
  for (int world : {1, 2, 4, 8}) {
    const int local = batch / world;
    std::vector<std::vector<int64_t>> shards;
    for (int r = 0; r < world; ++r) shards.push_back(rank_order(order, r, world));
    for (int k = 0; k < 60000 / batch; ++k) {
      std::multiset<int64_t> together,
          single(order.begin() + k * batch, order.begin() + (k + 1) * batch);
      for (const auto& s : shards)
        together.insert(s.begin() + k * local, s.begin() + (k + 1) * local);
      ASSERT_EQ(together, single) << "world " << world << ", step " << k;
    }
  }
}

TEST(TrainDist, RendezvousHandsRankZerosBytesToEveryRank) {
  const int world = 3;
  const std::string port = std::to_string(20000 + getpid() % 20000);
  const char secret[16] = "nccl unique id";
  std::vector<pid_t> children;
  for (int r = 1; r < world; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DistEnv e{r, world, r, "127.0.0.1", port};
      char got[16] = {};
      const Status s = rendezvous(e, got, sizeof got, 20);
      _exit(s.ok() && std::string(got) == secret ? 0 : 1);
    }
    children.push_back(pid);
  }
  DistEnv e0{0, world, 0, "127.0.0.1", port};
  char bytes[16];
  std::copy(secret, secret + 16, bytes);
  const Status s = rendezvous(e0, bytes, sizeof bytes, 20);
  EXPECT_TRUE(s.ok()) << s.error().message;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a rank did not get the bytes";
  }
  // Rank 0 alone times out with a message naming how many ranks it heard from.
  const Status alone = rendezvous(DistEnv{0, 2, 0, "127.0.0.1", port}, bytes, sizeof bytes, 1);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message.find("rank 0 heard from 0 of 1 ranks within 1 s"),
            std::string::npos)
      << alone.error().message;
}

}  // namespace
}  // namespace zoc::train
