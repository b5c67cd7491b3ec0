// Data-parallel training across processes, one GPU each (issue 21), as PyTorch's
// DistributedDataParallel does it: every process holds the whole model, takes its shard of each
// global batch, and the gradients are averaged over the processes with NCCL before SGD, so all
// replicas apply the same update.
//
//   launch    one process per GPU with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
//             set, as torchrun or tools/train/launch.sh set them; rank 0 listens on
//             MASTER_ADDR:MASTER_PORT and hands every other rank NCCL's unique id over TCP (its
//             own small exchange: torchrun's store already occupies MASTER_PORT on its agent, so
//             zoc trainers are launched with launch.sh, not torchrun);
//   data      the global batch's order is the single-process one; rank r takes positions
//             r, r + W, r + 2W, ... of it (DistributedSampler's interleaving), so step k of all
//             ranks together visits exactly the single-process batch k;
//   gradients GradSync all-reduces (average) the gradient buffer in buckets of about 25 MB in
//             the order the backward pass completes them: the generated step() calls
//             bucket_ready() right after the last layer writing into a bucket, which enqueues the
//             all-reduce on a communication stream that waits only for that point, so it overlaps
//             the rest of the backward pass; finish() makes the step's stream wait for the last
//             one. All of it is captured in the step's CUDA graph like the rest;
//   batchnorm statistics per process from each one's shard, as DDP's default; before evaluation
//             and checkpoints, rank 0's running statistics are broadcast (DDP broadcasts rank 0's
//             buffers before every forward, so rank 0's statistics are the model's).
//
// The environment and the shard order are CUDA-free and unit-tested; GradSync needs NCCL
// (ZOC_WITH_NCCL, set by the generated CMakeLists when it finds NCCL). Built without it, a
// single process works as before and WORLD_SIZE > 1 is refused with an error saying why.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "zoc/core/expected.h"

#if ZOC_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include "zoc/core/cuda_check.h"
#endif

namespace zoc::train {

struct DistEnv {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr, master_port;
  bool distributed() const { return world > 1; }
};

// The launch environment; `get` is std::getenv (tests pass their own). Without WORLD_SIZE, one
// process.
template <class Get>
Expected<DistEnv> dist_env(Get get) {
  DistEnv e;
  auto number = [&](const char* name, int lo, int hi, int* out) -> Status {
    const char* v = get(name);
    if (!v) return Error{std::string(name) + " is not set (WORLD_SIZE is: a distributed launch)"};
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
      return Error{std::string(name) + "='" + v + "' is not an integer in " + std::to_string(lo) +
                   ".." + std::to_string(hi)};
    }
    *out = int(x);
    return Status::success();
  };
  if (!get("WORLD_SIZE")) return e;
  ZOC_TRY(number("WORLD_SIZE", 1, 4096, &e.world));
  ZOC_TRY(number("RANK", 0, e.world - 1, &e.rank));
  const char* local = get("LOCAL_RANK");
  if (local) {
    ZOC_TRY(number("LOCAL_RANK", 0, 1023, &e.local_rank));
  } else {
    e.local_rank = e.rank;
  }
  if (e.world > 1) {
    const char* addr = get("MASTER_ADDR");
    const char* port = get("MASTER_PORT");
    if (!addr || !*addr) return Error{"MASTER_ADDR is not set (the address rank 0 listens on)"};
    int p = 0;
    ZOC_TRY(number("MASTER_PORT", 1, 65535, &p));
    e.master_addr = addr;
    e.master_port = port;
  }
  return e;
}

inline Expected<DistEnv> dist_env() {
  return dist_env([](const char* n) { return std::getenv(n); });
}

// Rank r's share of a global order: positions r, r + W, r + 2W, ... (DistributedSampler's
// interleaving), cut to whole rounds of W so every rank has as many.
inline std::vector<int64_t> rank_order(const std::vector<int64_t>& order, int rank, int world) {
  std::vector<int64_t> mine;
  const size_t rounds = order.size() / size_t(world);
  mine.reserve(rounds);
  for (size_t i = 0; i < rounds; ++i) mine.push_back(order[i * size_t(world) + size_t(rank)]);
  return mine;
}

namespace detail {

struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

inline Status send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return Error{std::string("rendezvous: send failed: ") + std::strerror(errno)};
    p += k;
    n -= size_t(k);
  }
  return Status::success();
}

inline Status recv_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0) return Error{"rendezvous: rank 0 closed the connection early"};
    p += k;
    n -= size_t(k);
  }
  return Status::success();
}

}  // namespace detail

// Rank 0 sends `bytes` (NCCL's unique id) to every other rank over TCP; the others receive it.
// Every wait is bounded by `timeout_s`, and each failure names the address and what went wrong.
inline Status rendezvous(const DistEnv& e, void* bytes, size_t n, int timeout_s = 300) {
  const std::string where = e.master_addr + ":" + e.master_port;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = e.rank == 0 ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(e.master_addr.c_str(), e.master_port.c_str(), &hints, &found)) {
    return Error{"rendezvous: cannot resolve " + where + ": " + ::gai_strerror(rc)};
  }
  struct Freed {
    addrinfo* a;
    ~Freed() { ::freeaddrinfo(a); }
  } guard{found};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  if (e.rank != 0) {  // connect, retrying until rank 0 listens
    for (;;) {
      detail::Socket s;
      s.fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
      if (s.fd >= 0 && ::connect(s.fd, found->ai_addr, found->ai_addrlen) == 0) {
        return detail::recv_all(s.fd, bytes, n);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Error{"rendezvous: rank " + std::to_string(e.rank) + " could not reach rank 0 at " +
                     where + " within " + std::to_string(timeout_s) + " s"};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  detail::Socket listener;
  listener.fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  const int one = 1;
  if (listener.fd < 0 ||
      ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(listener.fd, found->ai_addr, found->ai_addrlen) != 0 ||
      ::listen(listener.fd, e.world) != 0) {
    return Error{"rendezvous: rank 0 cannot listen on " + where + ": " + std::strerror(errno) +
                 " (is the port in use, e.g. by torchrun's own store?)"};
  }
  for (int served = 1; served < e.world; ++served) {
    pollfd p{listener.fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) <= 0) {
      return Error{"rendezvous: rank 0 heard from " + std::to_string(served - 1) + " of " +
                   std::to_string(e.world - 1) + " ranks within " + std::to_string(timeout_s) +
                   " s on " + where};
    }
    detail::Socket peer;
    peer.fd = ::accept(listener.fd, nullptr, nullptr);
    if (peer.fd < 0)
      return Error{std::string("rendezvous: accept failed: ") + std::strerror(errno)};
    ZOC_TRY(detail::send_all(peer.fd, bytes, n));
  }
  return Status::success();
}

#if ZOC_WITH_NCCL

#define ZOC_NCCL(call, what)                                                          \
  do {                                                                                \
    const ncclResult_t zoc_nccl_rc_ = (call);                                         \
    if (zoc_nccl_rc_ != ncclSuccess) {                                                \
      return ::zoc::Error{std::string(what) +                                         \
                          ": " #call " failed: " + ncclGetErrorString(zoc_nccl_rc_)}; \
    }                                                                                 \
  } while (0)

// The processes' NCCL communicator and the gradient all-reduce of a step, in buckets.
class GradSync {
 public:
  static Expected<std::unique_ptr<GradSync>> create(const DistEnv& e, int buckets) {
    std::unique_ptr<GradSync> s(new GradSync());
    s->env_ = e;
    ncclUniqueId id{};
    if (e.rank == 0) ZOC_NCCL(ncclGetUniqueId(&id), "NCCL");
    ZOC_TRY(rendezvous(e, &id, sizeof id));
    ZOC_NCCL(ncclCommInitRank(&s->comm_, e.world, id, e.rank), "NCCL");
    ZOC_CUDA(cudaStreamCreateWithFlags(&s->stream_, cudaStreamNonBlocking), "NCCL stream");
    s->ready_.resize(size_t(buckets) + 1, nullptr);
    for (cudaEvent_t& ev : s->ready_) {
      ZOC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "NCCL events");
    }
    return s;
  }
  ~GradSync() {
    for (cudaEvent_t ev : ready_) {
      if (ev) cudaEventDestroy(ev);
    }
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  const DistEnv& env() const { return env_; }

  // The backward pass has written every gradient of bucket `b` ([data, data + count)) on
  // `stream`: average it over the processes on the communication stream, from that point on.
  Status bucket_ready(int b, float* data, size_t count, cudaStream_t stream) {
    ZOC_CUDA(cudaEventRecord(ready_[size_t(b)], stream), "gradient all-reduce");
    ZOC_CUDA(cudaStreamWaitEvent(stream_, ready_[size_t(b)], 0), "gradient all-reduce");
    ZOC_NCCL(ncclAllReduce(data, data, count, ncclFloat, ncclAvg, comm_, stream_),
             "gradient all-reduce");
    return Status::success();
  }
  // `stream` waits until every bucket's all-reduce is done.
  Status finish(cudaStream_t stream) {
    ZOC_CUDA(cudaEventRecord(ready_.back(), stream_), "gradient all-reduce");
    ZOC_CUDA(cudaStreamWaitEvent(stream, ready_.back(), 0), "gradient all-reduce");
    return Status::success();
  }
  // Sums over the processes, in place, on `stream` (the epoch's metrics).
  Status sum(double* data, size_t count, cudaStream_t stream) {
    ZOC_NCCL(ncclAllReduce(data, data, count, ncclDouble, ncclSum, comm_, stream), "metrics");
    return Status::success();
  }
  Status sum(unsigned long long* data, size_t count, cudaStream_t stream) {
    ZOC_NCCL(ncclAllReduce(data, data, count, ncclUint64, ncclSum, comm_, stream), "metrics");
    return Status::success();
  }
  // Rank 0's values everywhere (initial weights, BatchNorm running statistics).
  Status broadcast(float* data, size_t count, cudaStream_t stream) {
    ZOC_NCCL(ncclBroadcast(data, data, count, ncclFloat, 0, comm_, stream), "broadcast");
    return Status::success();
  }

 private:
  GradSync() = default;
  DistEnv env_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> ready_;  // per bucket, and one for finish()
};

#else  // built without NCCL: one process only

class GradSync {
 public:
  static Expected<std::unique_ptr<GradSync>> create(const DistEnv& e, int) {
    return Error{"WORLD_SIZE=" + std::to_string(e.world) +
                 ": this trainer was built without "
                 "NCCL, so it runs in one process only (configure it with NCCL_ROOT pointing at "
                 "an NCCL installation)"};
  }
  const DistEnv& env() const { return env_; }
  template <class S>
  Status bucket_ready(int, float*, size_t, S) {
    return Error{"built without NCCL"};
  }
  template <class S>
  Status finish(S) {
    return Error{"built without NCCL"};
  }
  template <class T, class S>
  Status sum(T*, size_t, S) {
    return Error{"built without NCCL"};
  }
  template <class S>
  Status broadcast(float*, size_t, S) {
    return Error{"built without NCCL"};
  }

 private:
  DistEnv env_;
};

#endif

}  // namespace zoc::train
