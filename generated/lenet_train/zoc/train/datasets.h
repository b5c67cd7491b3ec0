// Training data for the generated trainer (issue 8): the MNIST idx format (MNIST, Fashion-MNIST;
// Debian's dataset-fashion-mnist ships it gzip-compressed: `gunzip -k` first) and the CIFAR-10
// binary format, read into memory and validated completely before any training starts, then
// visited in a seeded shuffled order and normalized with stated constants; and one batch read
// from a safetensors file (read_batch, at the end: `zoc grad` and the trainer's one-step mode).
//
// Every default is explicit, as in the rest of zoc: the shuffle is Fisher-Yates driven by
// std::mt19937_64 (whose output the C++ standard fixes) seeded with seed * 16 + 3 + epoch, so the
// same seed gives the same order on every platform and in every implementation that copies
// this rule; normalization is (pixel / 255 - mean[c]) / std[c], with the means and deviations
// passed in, never implied. Errors name the file and what is wrong. Dependency-free C++17.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/io/safetensors.h"

namespace zoc::data {

// Images as stored: uint8, [count, channels, height, width]; one uint8 label per image.
struct ImageSet {
  int64_t count = 0;
  int channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;
  int64_t image_bytes() const { return int64_t{channels} * height * width; }
};

namespace detail {

inline Expected<std::vector<uint8_t>> read_all(const std::string& path, uint64_t max_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Error{path + ": cannot open"};
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    if (bytes.size() + got > max_bytes) {
      std::fclose(f);
      return Error{path + ": larger than " + std::to_string(max_bytes) + " bytes"};
    }
    bytes.insert(bytes.end(), buf, buf + got);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Error{path + ": read error"};
  return bytes;
}

inline uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace detail

constexpr uint64_t kMaxFileBytes = uint64_t{4} << 30;  // 4 GiB: far above any of these sets

// MNIST idx: images (magic 0x00000803, then count, rows, columns, big-endian) and labels (magic
// 0x00000801, then count); counts must agree, sizes must be exact, labels below num_classes.
inline Expected<ImageSet> read_idx(const std::string& images_path, const std::string& labels_path,
                                   int num_classes) {
  auto images = detail::read_all(images_path, kMaxFileBytes);
  if (!images) return images.error();
  auto labels = detail::read_all(labels_path, kMaxFileBytes);
  if (!labels) return labels.error();
  if (images->size() < 16 || detail::big_endian32(images->data()) != 0x00000803u) {
    return Error{images_path +
                 ": not an idx image file (expected magic 0x00000803 and a 16-byte "
                 "header; gzip-compressed files need `gunzip -k` first)"};
  }
  if (labels->size() < 8 || detail::big_endian32(labels->data()) != 0x00000801u) {
    return Error{labels_path +
                 ": not an idx label file (expected magic 0x00000801 and an 8-byte "
                 "header)"};
  }
  const uint64_t n = detail::big_endian32(images->data() + 4);
  const uint64_t h = detail::big_endian32(images->data() + 8);
  const uint64_t w = detail::big_endian32(images->data() + 12);
  const uint64_t nl = detail::big_endian32(labels->data() + 4);
  if (n == 0 || h == 0 || w == 0 || h > 65536 || w > 65536) {
    return Error{images_path + ": header says " + std::to_string(n) + " images of " +
                 std::to_string(h) + "x" + std::to_string(w) +
                 " (each must be at least 1, sides "
                 "at most 65536)"};
  }
  if (nl != n) {
    return Error{labels_path + ": " + std::to_string(nl) + " labels for the " + std::to_string(n) +
                 " images of " + images_path};
  }
  const uint64_t per_image = h * w;  // <= 2^32
  if (n > kMaxFileBytes / per_image || images->size() != 16 + n * per_image) {
    return Error{images_path + ": " + std::to_string(images->size()) +
                 " bytes, but its header "
                 "says " +
                 std::to_string(n) + " images of " + std::to_string(h) + "x" + std::to_string(w) +
                 " (truncated, padded or a bad header?)"};
  }
  if (labels->size() != 8 + n) {
    return Error{labels_path + ": " + std::to_string(labels->size()) +
                 " bytes, but its header "
                 "needs exactly " +
                 std::to_string(8 + n) + " (truncated or padded?)"};
  }
  ImageSet set;
  set.count = static_cast<int64_t>(n);
  set.channels = 1;
  set.height = static_cast<int>(h);
  set.width = static_cast<int>(w);
  set.pixels.assign(images->begin() + 16, images->end());
  set.labels.assign(labels->begin() + 8, labels->end());
  for (uint64_t i = 0; i < n; ++i) {
    if (set.labels[i] >= num_classes) {
      return Error{labels_path + ": label " + std::to_string(set.labels[i]) + " of image " +
                   std::to_string(i) + " is not below the " + std::to_string(num_classes) +
                   " classes"};
    }
  }
  return set;
}

// CIFAR-10 binary: records of one label byte and 3072 pixel bytes (3 x 32 x 32, channel-major),
// concatenated over the given files (data_batch_1..5.bin, or test_batch.bin).
inline Expected<ImageSet> read_cifar10(const std::vector<std::string>& paths) {
  constexpr int64_t kRecord = 1 + 3 * 32 * 32;
  ImageSet set;
  set.channels = 3;
  set.height = 32;
  set.width = 32;
  if (paths.empty()) return Error{"CIFAR-10: no files given"};
  for (const std::string& path : paths) {
    auto bytes = detail::read_all(path, kMaxFileBytes);
    if (!bytes) return bytes.error();
    const auto size = static_cast<int64_t>(bytes->size());
    if (size == 0 || size % kRecord != 0) {
      return Error{path + ": " + std::to_string(size) + " bytes is not a whole number of " +
                   std::to_string(kRecord) + "-byte CIFAR-10 records"};
    }
    for (int64_t r = 0; r < size / kRecord; ++r) {
      const uint8_t* rec = bytes->data() + r * kRecord;
      if (rec[0] >= 10) {
        return Error{path + ": record " + std::to_string(r) + " has label " +
                     std::to_string(rec[0]) + " (CIFAR-10 labels are 0..9)"};
      }
      set.labels.push_back(rec[0]);
      set.pixels.insert(set.pixels.end(), rec + 1, rec + kRecord);
    }
  }
  set.count = static_cast<int64_t>(set.labels.size());
  return set;
}

// Resizes every image to `height` x `width` by bilinear interpolation with half-pixel centres,
// as PyTorch's interpolate(mode="bilinear", align_corners=False, antialias=False): output
// coordinate o samples the source at (o + 0.5) * in / out - 0.5 (clamped at 0), between pixels
// i0 and min(i0 + 1, in - 1). Computed exactly in integers (each weight is a multiple of
// 1 / (2 out)) and rounded half up to uint8, so tools/train/idx_data.py's resize gives the same
// bytes. (Shrinking also samples without antialiasing.) Sides 1..4096.
struct Taps {
  std::vector<int> i0, i1, w0, w1;  // per output coordinate; w0 + w1 = 2 * out
};

inline Taps bilinear_taps(int in, int out) {
  Taps t;
  for (int o = 0; o < out; ++o) {
    const int64_t num = std::max<int64_t>(0, int64_t{2 * o + 1} * in - out);  // source * 2 out
    const int i0 = static_cast<int>(num / (2 * int64_t{out}));
    const int f = static_cast<int>(num - int64_t{i0} * 2 * out);
    t.i0.push_back(i0);
    t.i1.push_back(std::min(i0 + 1, in - 1));
    t.w0.push_back(2 * out - f);
    t.w1.push_back(f);
  }
  return t;
}

inline Status resize_bilinear(ImageSet& set, int height, int width) {
  if (height < 1 || height > 4096 || width < 1 || width > 4096) {
    return Error{"--resize: sides must be in 1..4096"};
  }
  if (height == set.height && width == set.width) return Status::success();
  const Taps ty = bilinear_taps(set.height, height), tx = bilinear_taps(set.width, width);
  const int64_t denom = int64_t{4} * height * width;
  const int64_t planes = set.count * set.channels;
  std::vector<uint8_t> out(static_cast<size_t>(planes * height * width));
  for (int64_t p = 0; p < planes; ++p) {
    const uint8_t* src = set.pixels.data() + p * set.height * set.width;
    uint8_t* dst = out.data() + p * height * width;
    for (int y = 0; y < height; ++y) {
      const uint8_t* r0 = src + int64_t{ty.i0[size_t(y)]} * set.width;
      const uint8_t* r1 = src + int64_t{ty.i1[size_t(y)]} * set.width;
      for (int x = 0; x < width; ++x) {
        const int a = tx.i0[size_t(x)], b = tx.i1[size_t(x)];
        const int64_t top = int64_t{tx.w0[size_t(x)]} * r0[a] + int64_t{tx.w1[size_t(x)]} * r0[b];
        const int64_t bot = int64_t{tx.w0[size_t(x)]} * r1[a] + int64_t{tx.w1[size_t(x)]} * r1[b];
        const int64_t v = ty.w0[size_t(y)] * top + ty.w1[size_t(y)] * bot;
        dst[int64_t{y} * width + x] = static_cast<uint8_t>((v + denom / 2) / denom);
      }
    }
  }
  set.pixels = std::move(out);
  set.height = height;
  set.width = width;
  return Status::success();
}

// A one-channel set as `channels` identical channels (grey images for a 3-channel network).
inline Status replicate_channels(ImageSet& set, int channels) {
  if (channels == set.channels) return Status::success();
  if (set.channels != 1 || channels < 1 || channels > 16) {
    return Error{"--channels " + std::to_string(channels) +
                 ": only a one-channel data set is "
                 "replicated (it has " +
                 std::to_string(set.channels) + "), to 1..16 channels"};
  }
  const int64_t plane = int64_t{set.height} * set.width;
  std::vector<uint8_t> out(static_cast<size_t>(set.count * channels * plane));
  for (int64_t i = 0; i < set.count; ++i) {
    for (int c = 0; c < channels; ++c) {
      std::copy_n(set.pixels.data() + i * plane, plane, out.data() + (i * channels + c) * plane);
    }
  }
  set.pixels = std::move(out);
  set.channels = channels;
  return Status::success();
}

// The visiting order of one epoch: Fisher-Yates over 0..count-1, drawing j uniformly in [0, i]
// as rng() % (i + 1) from std::mt19937_64(seed * 16 + 3 + epoch). (The modulo's bias is below
// 2^-40 for any real dataset, and it keeps the rule simple to reproduce elsewhere.)
inline std::vector<int64_t> shuffled_order(int64_t count, uint64_t seed, uint64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(count > 0 ? count : 0));
  for (int64_t i = 0; i < count; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(seed * 16 + 3 + epoch);
  for (int64_t i = count - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

// Writes images order[first .. first+n) as float NCHW: (pixel / 255 - mean[c]) / stddev[c], and
// their labels. The caller checks that the range lies inside `order`.
inline void normalized_batch(const ImageSet& set, const std::vector<int64_t>& order, int64_t first,
                             int n, const float* mean, const float* stddev, float* out,
                             int32_t* labels) {
  const int64_t hw = int64_t{set.height} * set.width;
  for (int b = 0; b < n; ++b) {
    const int64_t i = order[static_cast<size_t>(first + b)];
    const uint8_t* src = set.pixels.data() + i * set.image_bytes();
    float* dst = out + b * set.image_bytes();
    for (int c = 0; c < set.channels; ++c) {
      for (int64_t p = 0; p < hw; ++p) {
        dst[c * hw + p] = (static_cast<float>(src[c * hw + p]) / 255.0f - mean[c]) / stddev[c];
      }
    }
    labels[b] = set.labels[static_cast<size_t>(i)];
  }
}

}  // namespace zoc::data

// One training batch from a safetensors file: `input` [N, C, H, W] (float) and `labels` [N] (I32
// or I64), the layout tools/train/grad_reference.py writes, checked against the model's input
// and class count. Read by generated trainers' runner (zoc/train/main.h) and by `zoc grad`, so
// that both accept exactly the same files.
namespace zoc {

// The batch: input [N, C, H, W] float32 and labels [N] (I32 or I64), checked against the model.
struct HostBatch {
  std::vector<int64_t> shape;
  std::vector<float> input;
  std::vector<int32_t> labels;
};

inline Expected<HostBatch> read_batch(const std::string& path, int c, int h, int w, int classes) {
  auto file = st::File::open(path);
  if (!file) return file.error();
  const st::TensorView* x = file->find("input");
  const st::TensorView* y = file->find("labels");
  if (!x || !y) return Error{path + ": needs tensors 'input' [N, C, H, W] and 'labels' [N]"};
  if (x->shape.size() != 4 || x->shape[1] != c || x->shape[2] != h || x->shape[3] != w ||
      x->shape[0] < 1 || x->shape[0] > 65536) {
    return Error{path + ": 'input' must be [N, " + std::to_string(c) + ", " + std::to_string(h) +
                 ", " + std::to_string(w) + "] with N in 1..65536"};
  }
  HostBatch b;
  b.shape = x->shape;
  b.input.resize(x->numel());
  ZOC_TRY(st::to_float32(*x, b.input.data(), b.input.size()));
  const int64_t n = x->shape[0];
  if (y->shape.size() != 1 || y->shape[0] != n ||
      (y->dtype != st::DType::I32 && y->dtype != st::DType::I64)) {
    return Error{path + ": 'labels' must be I32 or I64 of shape [" + std::to_string(n) + "]"};
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = 0;
    if (y->dtype == st::DType::I32) {
      int32_t v32 = 0;
      std::memcpy(&v32, y->data + 4 * i, 4);
      v = v32;
    } else {
      std::memcpy(&v, y->data + 8 * i, 8);
    }
    if (v < 0 || v >= classes) {
      return Error{path + ": label " + std::to_string(v) + " of sample " + std::to_string(i) +
                   " is outside 0.." + std::to_string(classes - 1)};
    }
    b.labels.push_back(static_cast<int32_t>(v));
  }
  return b;
}

}  // namespace zoc
