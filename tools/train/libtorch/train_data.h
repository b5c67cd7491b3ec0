// The training-data conventions of tools/train/README.md in C++: file names, normalization
// constants, and the whole split normalized in memory.
//
// The LibTorch baseline and the tests' order printer share this header so that the constants
// the Python side uses (idx_data.py) exist once on the C++ side too; everything else is
// runtime/zoc/train/datasets.h, the reader the generated trainer will use. Dependency-free C++17.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/train/datasets.h"

namespace train {

// Fashion-MNIST: mean and population standard deviation of the 60000 training images' pixels /
// 255, measured 0.28604060 and 0.35302424, stated rounded. The float values are the doubles
// converted to float, as numpy's np.float32(0.2860) in idx_data.py.
constexpr double kFashionMnistMean = 0.2860;
constexpr double kFashionMnistStd = 0.3530;

// One split, normalized: float [count, 1, 28, 28] in file order and int32 labels.
struct NormalizedSplit {
  int64_t count = 0;
  int channels = 0, height = 0, width = 0;
  std::vector<float> images;
  std::vector<int32_t> labels;
};

inline NormalizedSplit normalize_all(const zoc::data::ImageSet& set) {
  const float mean = static_cast<float>(kFashionMnistMean);
  const float stddev = static_cast<float>(kFashionMnistStd);
  NormalizedSplit out;
  out.count = set.count;
  out.channels = set.channels;
  out.height = set.height;
  out.width = set.width;
  out.images.resize(static_cast<size_t>(set.count * set.image_bytes()));
  out.labels.resize(static_cast<size_t>(set.count));
  std::vector<int64_t> identity(static_cast<size_t>(set.count));
  for (int64_t i = 0; i < set.count; ++i) identity[static_cast<size_t>(i)] = i;
  for (int64_t first = 0; first < set.count; first += 4096) {  // int-sized chunks
    const int n = static_cast<int>(std::min<int64_t>(4096, set.count - first));
    zoc::data::normalized_batch(set, identity, first, n, &mean, &stddev,
                                out.images.data() + first * set.image_bytes(),
                                out.labels.data() + first);
  }
  return out;
}

// `split` is "train" or "t10k": DIR/<split>-images-idx3-ubyte and -labels-idx1-ubyte, raw idx
// (gzip-compressed files need `gunzip -k` first, as datasets.h says).
inline zoc::Expected<NormalizedSplit> read_split(const std::string& dir, const std::string& split,
                                                 int num_classes) {
  const std::string images = dir + "/" + split + "-images-idx3-ubyte";
  auto set = zoc::data::read_idx(images, dir + "/" + split + "-labels-idx1-ubyte", num_classes);
  if (!set.ok()) {
    if (std::FILE* gz = std::fopen((images + ".gz").c_str(), "rb")) {
      std::fclose(gz);
      return zoc::Error{set.error().message + " (" + images +
                        ".gz is there: `gunzip -k` the "
                        "four files first; the C++ reader takes raw idx)"};
    }
    return set.error();
  }
  return normalize_all(*set);
}

}  // namespace train
