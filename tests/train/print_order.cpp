// Prints what runtime/zoc/train/datasets.h computes, so that tests/train/test_train.py can check
// the Python baselines' pure-Python copies (tools/train/mt19937_64.py, idx_data.py) against it bit
// for bit: the data order and normalization must be identical in every implementation of a
// training run, and C++ is where they are defined.
//
//   train_print_order mt SEED N              first N outputs of std::mt19937_64(SEED)
//   train_print_order order COUNT SEED EPOCH zoc::data::shuffled_order(COUNT, SEED, EPOCH)
//   train_print_order table                  bits of the 256 normalized pixel values
//   train_print_order split DIR SPLIT        count and FNV-1a 64 of train::read_split's floats
//                                            and int32 labels (SPLIT: train or t10k)
//   train_print_order resize DIR SPLIT S C   count and FNV-1a 64 of the split's pixels resized
//                                            to S x S and replicated to C channels
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "train_data.h"
#include "zoc/train/datasets.h"

namespace {

uint64_t to_u64(const char* text) { return std::strtoull(text, nullptr, 10); }

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

int usage() {
  std::fprintf(stderr,
               "usage: train_print_order mt SEED N | order COUNT SEED EPOCH | table | "
               "split DIR SPLIT | resize DIR SPLIT S C\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "mt" && argc == 4) {
    std::mt19937_64 rng(to_u64(argv[2]));
    for (uint64_t i = 0, n = to_u64(argv[3]); i < n; ++i) {
      std::printf("%llu\n", static_cast<unsigned long long>(rng()));
    }
    return 0;
  }
  if (what == "order" && argc == 5) {
    const auto order = zoc::data::shuffled_order(static_cast<int64_t>(to_u64(argv[2])),
                                                 to_u64(argv[3]), to_u64(argv[4]));
    for (size_t i = 0; i < order.size(); ++i) {
      std::printf("%s%lld", i ? " " : "", static_cast<long long>(order[i]));
    }
    std::printf("\n");
    return 0;
  }
  if (what == "table" && argc == 2) {
    zoc::data::ImageSet set;
    set.count = 256;
    set.channels = set.height = set.width = 1;
    for (int p = 0; p < 256; ++p) set.pixels.push_back(static_cast<uint8_t>(p));
    set.labels.assign(256, 0);
    const train::NormalizedSplit s = train::normalize_all(set);
    for (float v : s.images) {
      uint32_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      std::printf("%08x\n", bits);
    }
    return 0;
  }
  if (what == "split" && argc == 4) {
    auto s = train::read_split(argv[2], argv[3], 10);
    if (!s.ok()) {
      std::fprintf(stderr, "train_print_order: error: %s\n", s.error().message.c_str());
      return 1;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, s->images.data(), s->images.size() * sizeof(float));
    h = fnv1a(h, s->labels.data(), s->labels.size() * sizeof(int32_t));
    std::printf("%lld %016llx\n", static_cast<long long>(s->count),
                static_cast<unsigned long long>(h));
    return 0;
  }
  if (what == "resize" && argc == 6) {
    const std::string dir = argv[2], split = argv[3];
    auto set = zoc::data::read_idx(dir + "/" + split + "-images-idx3-ubyte",
                                   dir + "/" + split + "-labels-idx1-ubyte", 10);
    const int size = std::atoi(argv[4]), channels = std::atoi(argv[5]);
    zoc::Status st = set.ok() ? zoc::data::resize_bilinear(*set, size, size) : set.error();
    if (st.ok()) st = zoc::data::replicate_channels(*set, channels);
    if (!st.ok()) {
      std::fprintf(stderr, "train_print_order: error: %s\n", st.error().message.c_str());
      return 1;
    }
    const uint64_t h = fnv1a(0xcbf29ce484222325ull, set->pixels.data(), set->pixels.size());
    std::printf("%lld %016llx\n", static_cast<long long>(set->count),
                static_cast<unsigned long long>(h));
    return 0;
  }
  return usage();
}
