// One training batch from a safetensors file: `input` [N, C, H, W] (float) and `labels` [N] (I32
// or I64), the layout tools/train/grad_reference.py writes, checked against the model's input
// and class count. Read by generated trainers' runner (zoc/train/main.h) and by `zoc grad`, so
// that both accept exactly the same files. Dependency-free C++17.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/io/safetensors.h"

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
