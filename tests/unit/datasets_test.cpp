// Training-data readers (runtime/zoc/train/datasets.h): MNIST idx and CIFAR-10 binary files built
// byte by byte here, every malformed variant rejected with the file and the reason, and the
// seeded shuffle and normalization pinned to their stated rules.
#include "zoc/train/datasets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"

namespace zoc {
namespace {

void put32(std::vector<uint8_t>* b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b->push_back(static_cast<uint8_t>(v >> s));
}

std::string write(const test::TempDir& dir, const std::string& name,
                  const std::vector<uint8_t>& b) {
  const std::string p = dir.file(name);
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return p;
}

// n images of h x w with pixel value (i * 7 + p) % 256, labels i % 10.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> idx_files(uint32_t n, uint32_t h,
                                                                uint32_t w) {
  std::vector<uint8_t> img, lab;
  put32(&img, 0x803);
  put32(&img, n);
  put32(&img, h);
  put32(&img, w);
  put32(&lab, 0x801);
  put32(&lab, n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < h * w; ++p) img.push_back(static_cast<uint8_t>((i * 7 + p) % 256));
    lab.push_back(static_cast<uint8_t>(i % 10));
  }
  return {img, lab};
}

std::string idx_error(const test::TempDir& dir, const std::vector<uint8_t>& img,
                      const std::vector<uint8_t>& lab) {
  auto set = data::read_idx(write(dir, "i", img), write(dir, "l", lab), 10);
  return set.ok() ? "" : set.error().message.substr(dir.file("").size());
}

TEST(Datasets, ReadsIdxImagesAndLabels) {
  test::TempDir dir;
  auto [img, lab] = idx_files(12, 4, 3);
  auto set = data::read_idx(write(dir, "i", img), write(dir, "l", lab), 10);
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->count, 12);
  EXPECT_EQ(set->channels, 1);
  EXPECT_EQ(set->height, 4);
  EXPECT_EQ(set->width, 3);
  EXPECT_EQ(set->pixels[5 * 12 + 2], (5 * 7 + 2) % 256);
  EXPECT_EQ(set->labels[11], 1);
}

TEST(Datasets, RejectsMalformedIdxFiles) {
  test::TempDir dir;
  auto [img, lab] = idx_files(3, 2, 2);
  auto bad = img;
  bad[3] = 0x01;
  EXPECT_NE(idx_error(dir, bad, lab).find("i: not an idx image file"), std::string::npos);
  EXPECT_NE(idx_error(dir, {0x1f, 0x8b, 8, 0}, lab).find("gunzip -k"), std::string::npos);
  EXPECT_NE(idx_error(dir, img, {0, 0, 8, 3}).find("l: not an idx label file"), std::string::npos);
  bad = img;
  bad.pop_back();
  EXPECT_EQ(
      idx_error(dir, bad, lab),
      "i: 27 bytes, but its header says 3 images of 2x2 (truncated, padded or a bad header?)");
  bad = img;
  bad[4] = 0xff;  // a huge count, in both files: the sizes give it away
  auto bad_lab = lab;
  bad_lab[4] = 0xff;
  EXPECT_NE(idx_error(dir, bad, bad_lab).find("images of 2x2 (truncated, padded or a bad header?)"),
            std::string::npos);
  EXPECT_NE(idx_error(dir, bad, lab).find("3 labels for the 4278190083 images"), std::string::npos);
  auto [img4, lab4] = idx_files(4, 2, 2);
  EXPECT_EQ(idx_error(dir, img, lab4), "l: 4 labels for the 3 images of " + dir.file("i"));
  auto short_lab = lab;
  short_lab.pop_back();
  EXPECT_EQ(idx_error(dir, img, short_lab).substr(0, 3), "l: ");
  auto big_label = lab;
  big_label.back() = 10;
  EXPECT_EQ(idx_error(dir, img, big_label), "l: label 10 of image 2 is not below the 10 classes");
  auto zero = img;
  zero[11] = 0;  // height 0
  EXPECT_NE(idx_error(dir, zero, lab).find("each must be at least 1"), std::string::npos);
  auto missing = data::read_idx(dir.file("nope"), dir.file("nope2"), 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir.file("nope") + ": cannot open");
}

TEST(Datasets, ReadsAndChecksCifar10Records) {
  test::TempDir dir;
  std::vector<uint8_t> a, b;
  for (int r = 0; r < 3; ++r) {
    a.push_back(static_cast<uint8_t>(r));
    for (int p = 0; p < 3072; ++p) a.push_back(static_cast<uint8_t>(p % 251));
  }
  b.push_back(9);
  for (int p = 0; p < 3072; ++p) b.push_back(7);
  auto set = data::read_cifar10({write(dir, "a.bin", a), write(dir, "b.bin", b)});
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->count, 4);
  EXPECT_EQ(set->labels, (std::vector<uint8_t>{0, 1, 2, 9}));
  EXPECT_EQ(set->pixels[3 * 3072 + 100], 7);
  EXPECT_EQ(set->pixels[1 * 3072 + 1024 + 5], (1024 + 5) % 251);  // channel-major kept
  auto cut = a;
  cut.pop_back();
  auto e = data::read_cifar10({write(dir, "c.bin", cut)});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message, dir.file("c.bin") +
                                   ": 9218 bytes is not a whole number of 3073-byte "
                                   "CIFAR-10 records");
  auto bad = a;
  bad[3073] = 10;
  e = data::read_cifar10({write(dir, "d.bin", bad)});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message,
            dir.file("d.bin") + ": record 1 has label 10 (CIFAR-10 labels are 0..9)");
  EXPECT_FALSE(data::read_cifar10({}).ok());
}

TEST(Datasets, ShuffleIsASeededPermutationThatChangesPerEpoch) {
  const auto a = data::shuffled_order(1000, 7, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_EQ(a, data::shuffled_order(1000, 7, 0));
  EXPECT_NE(a, data::shuffled_order(1000, 7, 1));
  EXPECT_NE(a, data::shuffled_order(1000, 8, 0));
  // Pinned: the rule (mt19937_64(seed * 16 + 3 + epoch), Fisher-Yates from the end, j = r % (i+1))
  // must not drift, since other implementations reproduce it to see the same data order.
  std::mt19937_64 rng(7 * 16 + 3);
  std::vector<int64_t> want = {0, 1, 2, 3, 4};
  for (int64_t i = 4; i > 0; --i) std::swap(want[i], want[rng() % (i + 1)]);
  EXPECT_EQ(data::shuffled_order(5, 7, 0), want);
  EXPECT_TRUE(data::shuffled_order(0, 1, 0).empty());
}

TEST(Datasets, NormalizesWithTheGivenMeanAndDeviation) {
  data::ImageSet set;
  set.count = 2;
  set.channels = 1;
  set.height = 1;
  set.width = 2;
  set.pixels = {0, 255, 51, 102};
  set.labels = {3, 4};
  const float mean[] = {0.2860f}, stddev[] = {0.3530f};  // Fashion-MNIST's, as an example
  float out[4];
  int32_t labels[2];
  data::normalized_batch(set, {1, 0}, 0, 2, mean, stddev, out, labels);
  EXPECT_FLOAT_EQ(out[0], (51 / 255.0f - 0.2860f) / 0.3530f);
  EXPECT_FLOAT_EQ(out[3], (1.0f - 0.2860f) / 0.3530f);
  EXPECT_EQ(labels[0], 4);
  EXPECT_EQ(labels[1], 3);
}

// PyTorch's interpolate(bilinear, align_corners=False) gives, for the 2x2 image at 4x4, the
// rows 0 25 75 100 / 50 72.1875 116.5625 138.75 / 150 166.5625 199.6875 216.25 / 200 213.75
// 241.25 255; the resize rounds them half up. Shrinking 4x4 to 2x2 averages the centre taps.
TEST(Datasets, ResizesBilinearlyAndRoundsHalfUp) {
  data::ImageSet set;
  set.count = 1;
  set.channels = 1;
  set.height = set.width = 2;
  set.pixels = {0, 100, 200, 255};
  set.labels = {0};
  ASSERT_TRUE(data::resize_bilinear(set, 4, 4).ok());
  EXPECT_EQ(set.pixels, (std::vector<uint8_t>{0, 25, 75, 100, 50, 72, 117, 139, 150, 167, 200, 216,
                                              200, 214, 241, 255}));
  ASSERT_TRUE(data::replicate_channels(set, 3).ok());
  EXPECT_EQ(set.channels, 3);
  EXPECT_TRUE(std::equal(set.pixels.begin(), set.pixels.begin() + 16, set.pixels.begin() + 32));
  data::ImageSet small;
  small.count = 1;
  small.channels = 1;
  small.height = small.width = 4;
  for (int p = 0; p < 16; ++p) small.pixels.push_back(static_cast<uint8_t>(10 * p));
  small.labels = {0};
  ASSERT_TRUE(data::resize_bilinear(small, 2, 2).ok());
  EXPECT_EQ(small.pixels, (std::vector<uint8_t>{25, 45, 105, 125}));
  EXPECT_EQ(data::resize_bilinear(small, 0, 2).error().message,
            "--resize: sides must be in 1..4096");
  EXPECT_EQ(data::replicate_channels(set, 2).error().message,
            "--channels 2: only a one-channel data set is replicated (it has 3), to 1..16 "
            "channels");
}

}  // namespace
}  // namespace zoc
