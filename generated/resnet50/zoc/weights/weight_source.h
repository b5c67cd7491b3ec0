// Where the generated constructor's weights come from: a validated safetensors file, or seeded
// PyTorch-default initialization (zoc/weights/init.h).
//
// The generated code asks for each tensor by its PyTorch name and expected shape; this checks
// the file's tensor exists, is floating point, has exactly that shape and (optionally) only
// finite values, converts it to float32, and at the end reports tensors nobody asked for. Every
// message names the tensor and the file. Dependency-free C++17.
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/io/safetensors.h"
#include "zoc/weights/init.h"

namespace zoc {

class WeightSource {
 public:
  static Expected<WeightSource> open(const std::string& path, bool strict) {
    auto file = st::File::open(path);
    if (!file) return file.error();
    WeightSource s;
    s.file_ = std::make_unique<st::File>(std::move(*file));
    s.strict_ = strict;
    return s;
  }
  static WeightSource seeded(uint64_t seed) {
    WeightSource s;
    s.seed_ = seed;
    return s;
  }

  // The float32 values of `name`, which must have exactly `shape`. `rule` and `fan_in` say how
  // to initialize it when there is no file. `optional`: absent from the file is not an error
  // (returns an empty vector).
  Expected<std::vector<float>> get(const std::string& name, const std::vector<int64_t>& shape,
                                   InitRule rule, int64_t fan_in, bool optional = false) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<float> out(static_cast<size_t>(count));
    if (!file_) {
      init_tensor(seed_, name, rule, fan_in, out.data(), count);
      return out;
    }
    requested_.insert(name);
    const st::TensorView* t = file_->find(name);
    if (!t) {
      if (optional) return std::vector<float>{};
      return Error{file_->path() + ": missing tensor '" + name + "' with shape " +
                   st::detail::shape_string(shape)};
    }
    if (t->shape != shape) {
      return Error{file_->path() + ": tensor '" + name + "' has shape " +
                   st::detail::shape_string(t->shape) + ", expected " +
                   st::detail::shape_string(shape)};
    }
    if (!st::is_float_dtype(t->dtype)) {
      return Error{file_->path() + ": tensor '" + name + "' has dtype " + st::dtype_name(t->dtype) +
                   ", expected a floating-point dtype"};
    }
    if (const size_t bad = st::count_non_finite(*t); bad > 0) {
      const std::string msg = file_->path() + ": tensor '" + name + "' holds " +
                              std::to_string(bad) + " NaN or infinite values";
      if (strict_) return Error{msg};
      warnings_.push_back(msg);
    }
    if (Status s = st::to_float32(*t, out.data(), out.size()); !s) return s.error();
    return out;
  }

  // get() into `dst` (the tensor's element count of floats), for trainers that keep
  // parameters in PyTorch's own layout.
  Status fill(const std::string& name, const std::vector<int64_t>& shape, InitRule rule,
              int64_t fan_in, float* dst) {
    auto v = get(name, shape, rule, fan_in);
    if (!v) return v.error();
    std::copy(v->begin(), v->end(), dst);
    return Status::success();
  }

  // A one-element parameter that zoc compiled into a layer as the constant `value` (timm's
  // LearnableAffineBlock scale and bias): the file need not hold it, but where it does, it must
  // hold that value, else the model would run new weights with an old constant.
  Status check_constant(const std::string& name, float value) {
    if (!file_) return Status::success();
    requested_.insert(name);
    const st::TensorView* t = file_->find(name);
    if (!t) return Status::success();
    float held = 0;
    const bool one =
        t->numel() == 1 && st::is_float_dtype(t->dtype) && st::to_float32(*t, &held, 1).ok();
    if (one && held == value) return Status::success();
    auto text = [](float f) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
      return std::string(buf);
    };
    const std::string what = one ? "holds " + text(held)
                                 : "has shape " + st::detail::shape_string(t->shape) +
                                       " and dtype " + st::dtype_name(t->dtype);
    return Error{file_->path() + ": tensor '" + name + "' " + what + ", but the value " +
                 text(value) +
                 " is compiled into the model as a constant: compile a model file that holds "
                 "these weights instead"};
  }

  // Marks a tensor as known but unused by inference (e.g. num_batches_tracked).
  void ignore(const std::string& name) { requested_.insert(name); }

  // After all get() calls: error if the file holds tensors no layer asked for.
  Status finish() const {
    if (!file_) return Status::success();
    std::string extra;
    int count = 0;
    for (const st::TensorView& t : file_->tensors()) {
      if (requested_.count(t.name)) continue;
      if (count++ < 8) extra += (extra.empty() ? "'" : ", '") + t.name + "'";
    }
    if (count == 0) return Status::success();
    return Error{file_->path() + ": " + std::to_string(count) +
                 " unexpected tensor(s) that no layer uses: " + extra + (count > 8 ? ", ..." : "")};
  }

  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  WeightSource() = default;
  std::unique_ptr<st::File> file_;
  uint64_t seed_ = 0;
  bool strict_ = false;
  std::set<std::string> requested_;
  std::vector<std::string> warnings_;
};

}  // namespace zoc
