// Weight packing for linear layers (runtime/zoc/weights/pack.h): the column permutation that
// matches an NHWC flatten, and the bias a linear layer run as a cuDNN convolution (--linear cudnn)
// always needs: the layer's own, or zeros when it has none. And the tap-major filter of zoc's
// depthwise kernel. And a constant compiled in from a parameter, checked against the file.
#include "zoc/weights/pack.h"
#include "tests/unit/test_util.h"
#include "zoc/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST(PackLinear, ColumnsFollowTheNhwcFlattenOrder) {
  // Features flattened from c=3, h=2, w=2: PyTorch's column (c, h, w) lands at (h, w, c).
  const int64_t out = 2, c = 3, h = 2, w = 2, in = c * h * w;
  zoc::WeightSource src = zoc::WeightSource::seeded(7);
  std::vector<uint8_t> plain(out * in * 4), perm(out * in * 4);
  ASSERT_TRUE(zoc::pack_linear(src,
                               {"fc.weight", nullptr, out, in, 0, 0, 0, zoc::DeviceDType::kF32},
                               plain.data(), nullptr));
  ASSERT_TRUE(zoc::pack_linear(
      src, {"fc.weight", nullptr, out, in, c, h, w, zoc::DeviceDType::kF32}, perm.data(), nullptr));
  const std::vector<float> a = as_floats(plain), b = as_floats(perm);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          EXPECT_EQ(b[o * in + (y * w + x) * c + ci], a[o * in + (ci * h + y) * w + x]);
}

TEST(PackLinear, MissingBiasIsZerosWhenASlotIsGiven) {
  zoc::WeightSource src = zoc::WeightSource::seeded(1);
  std::vector<uint8_t> weight(3 * 4 * 4);
  std::vector<uint8_t> bias(3 * 4, 0xAB);
  ASSERT_TRUE(zoc::pack_linear(src, {"fc.weight", nullptr, 3, 4, 0, 0, 0, zoc::DeviceDType::kF32},
                               weight.data(), bias.data()));
  for (float v : as_floats(bias)) EXPECT_EQ(v, 0.0f);
  // The cuBLAS path passes no slot (and has none to write).
  EXPECT_TRUE(zoc::pack_linear(src, {"fc.weight", nullptr, 3, 4, 0, 0, 0, zoc::DeviceDType::kF32},
                               weight.data(), nullptr));
}

TEST(PackLinear, OwnBiasIsKept) {
  zoc::WeightSource src = zoc::WeightSource::seeded(3);
  std::vector<uint8_t> weight(2 * 5 * 4), bias(2 * 4);
  ASSERT_TRUE(zoc::pack_linear(src, {"fc.weight", "fc.bias", 2, 5, 0, 0, 0, zoc::DeviceDType::kF32},
                               weight.data(), bias.data()));
  const std::vector<float> b = as_floats(bias);
  EXPECT_TRUE(b[0] != 0.0f || b[1] != 0.0f);  // seeded uniform init, not zeros
}

// A depthwise filter [k, 1, r, s] packed for zoc's NHWC kernel: [r, s, k], the same numbers.
TEST(PackConv, DepthwiseTapMajor) {
  const int64_t k = 5, r = 3, s = 2;
  zoc::WeightSource src = zoc::WeightSource::seeded(9);
  std::vector<uint8_t> krsc(k * r * s * 4), taps(k * r * s * 4), b1(k * 4), b2(k * 4);
  zoc::ConvPackSpec spec{"dw.weight",           "dw.bias", nullptr, 0.0, k, 1, r, s, true, 1,
                         zoc::DeviceDType::kF32};
  ASSERT_TRUE(zoc::pack_conv(src, spec, krsc.data(), b1.data()));
  spec.taps_major = true;
  ASSERT_TRUE(zoc::pack_conv(src, spec, taps.data(), b2.data()));
  const std::vector<float> a = as_floats(krsc), t = as_floats(taps);
  for (int64_t ki = 0; ki < k; ++ki)
    for (int64_t tap = 0; tap < r * s; ++tap) EXPECT_EQ(t[tap * k + ki], a[ki * r * s + tap]);
  EXPECT_EQ(b1, b2);
  spec.c = 2;  // not depthwise: refused, not scrambled
  spec.c_padded = 2;
  std::vector<uint8_t> big(k * 2 * r * s * 4);
  EXPECT_FALSE(zoc::pack_conv(src, spec, big.data(), b2.data()));
}

}  // namespace

namespace {

// A constant compiled in from a one-element parameter (WeightSource::check_constant): absent,
// or the same value in any float dtype, passes and counts as used; another value or shape is
// refused with both values named; a seeded source never looks.
TEST(CompiledConstant, FileMustHoldTheCompiledValue) {
  zoc::test::TempDir dir;
  const float same = 0.75f, other = 0.5f, pair[2] = {0.75f, 0.75f};
  const std::string path = dir.file("w.safetensors");
  ASSERT_TRUE(zoc::st::write_file(path, {{"same", zoc::st::DType::F32, {1}, &same, 4},
                                         {"other", zoc::st::DType::F32, {}, &other, 4},
                                         {"pair", zoc::st::DType::F32, {2}, pair, 8}})
                  .ok());
  auto src = zoc::WeightSource::open(path, true);
  ASSERT_TRUE(src.ok());
  EXPECT_TRUE(src->check_constant("same", 0.75f).ok());
  EXPECT_TRUE(src->check_constant("absent", 0.75f).ok());
  const zoc::Status bad = src->check_constant("other", 0.75f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("tensor 'other' holds 0.5, but the value 0.75 is compiled "
                                     "into the model as a constant"),
            std::string::npos)
      << bad.error().message;
  const zoc::Status shape = src->check_constant("pair", 0.75f);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.error().message.find("tensor 'pair' has shape [2] and dtype F32"),
            std::string::npos)
      << shape.error().message;
  EXPECT_TRUE(src->finish().ok());  // every tensor was asked for
  EXPECT_TRUE(zoc::WeightSource::seeded(1).check_constant("same", 2.0f).ok());
}

}  // namespace
