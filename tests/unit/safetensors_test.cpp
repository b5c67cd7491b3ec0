// Unit tests of runtime/zoc/io/safetensors.h: writer/reader round trips, the exact file layout,
// fp16/bf16 conversions, to_float32 and the writer's own validation.
//
// The reader's error paths are covered file by file in safetensors_bad_inputs_test.cpp; here we
// check that what zoc writes is what the safetensors format (and so PyTorch) expects, byte for
// byte, and that the float conversions the generated constructors rely on are exactly IEEE:
// every fp16/bf16 value round-trips, and float -> fp16/bf16 rounds to nearest even, checked
// against an independent reference at every tie between adjacent representable values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "zoc/io/safetensors.h"

namespace fs = std::filesystem;
using zoc::Status;
using zoc::st::DType;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

// A per-test scratch directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("zoc_st_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(path_), {}));
  }

 private:
  fs::path path_;
};

std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

bool is_nan_bits(float f) { return f != f; }

// ---------------------------------------------------------------------------------------------
// dtypes

TEST(SafetensorsDType, NamesSizesAndParsing) {
  const std::pair<DType, size_t> all[] = {
      {DType::F64, 8}, {DType::F32, 4},  {DType::F16, 2},     {DType::BF16, 2},
      {DType::I64, 8}, {DType::I32, 4},  {DType::I16, 2},     {DType::I8, 1},
      {DType::U8, 1},  {DType::BOOL, 1}, {DType::F8_E4M3, 1}, {DType::F8_E5M2, 1}};
  for (auto [t, size] : all) {
    EXPECT_EQ(zoc::st::dtype_size(t), size) << zoc::st::dtype_name(t);
    EXPECT_EQ(zoc::st::parse_dtype(zoc::st::dtype_name(t)), t);
  }
  EXPECT_STREQ(zoc::st::dtype_name(DType::F8_E4M3), "F8_E4M3");
  EXPECT_FALSE(zoc::st::parse_dtype("f32").has_value());
  EXPECT_FALSE(zoc::st::parse_dtype("F32 ").has_value());
  EXPECT_FALSE(zoc::st::parse_dtype("").has_value());
}

// ---------------------------------------------------------------------------------------------
// fp16 / bf16

// Independent reference: round |x| to the nearest multiple of the format's spacing at its
// magnitude (std::nearbyint rounds ties to even), in double, where every step is exact.
double reference_round(float x, int mantissa_bits, int min_exp, double max_finite) {
  double a = std::fabs(static_cast<double>(x));
  if (a == 0) return 0;
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  int ulp_exp = std::max(e - 1 - mantissa_bits, min_exp - mantissa_bits);
  double r = std::ldexp(std::nearbyint(std::ldexp(a, -ulp_exp)), ulp_exp);
  return r > max_finite ? std::numeric_limits<double>::infinity() : r;
}

void check_half(float x) {
  uint16_t h = zoc::st::float_to_half(x);
  double want = reference_round(x, 10, -14, 65504.0);
  double got = std::fabs(static_cast<double>(zoc::st::half_to_float(h)));
  ASSERT_EQ(got, want) << "x = " << x << " (bits " << std::hex << zoc::st::float_bits(x) << ")";
  ASSERT_EQ(h >> 15, zoc::st::float_bits(x) >> 31) << "sign of " << x;
}

void check_bf16(float x) {
  uint16_t b = zoc::st::float_to_bf16(x);
  const double max_bf16 = static_cast<double>(zoc::st::bf16_to_float(0x7F7F));
  double want = reference_round(x, 7, -126, max_bf16);
  double got = std::fabs(static_cast<double>(zoc::st::bf16_to_float(b)));
  ASSERT_EQ(got, want) << "x = " << x << " (bits " << std::hex << zoc::st::float_bits(x) << ")";
  ASSERT_EQ(b >> 15, zoc::st::float_bits(x) >> 31) << "sign of " << x;
}

TEST(SafetensorsHalf, EdgeValues) {
  using zoc::st::float_to_half;
  using zoc::st::half_to_float;
  EXPECT_EQ(half_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x7C00), kInf);
  EXPECT_EQ(half_to_float(0xFC00), -kInf);
  EXPECT_TRUE(is_nan_bits(half_to_float(0x7E00)));
  EXPECT_TRUE(is_nan_bits(half_to_float(0x7C01)));  // signalling NaN stays NaN

  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65519.996f), 0x7BFF);  // below the tie at 65520
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);    // tie rounds to even: 2^16, i.e. infinity
  EXPECT_EQ(float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half(-kInf), 0xFC00);
  EXPECT_EQ(float_to_half(std::nanf("")) & 0x7C00, 0x7C00);
  EXPECT_NE(float_to_half(std::nanf("")) & 0x03FF, 0);
  EXPECT_EQ(float_to_half(-std::nanf("")) & 0x8000, 0x8000);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24 -> 0
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie -> even
  EXPECT_EQ(float_to_half(std::ldexp(1023.5f, -24)), 0x0400);   // subnormal tie rounds into normal
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(SafetensorsHalf, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = zoc::st::half_to_float(static_cast<uint16_t>(h));
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) {
      ASSERT_TRUE(is_nan_bits(f)) << h;
      ASSERT_EQ(zoc::st::float_to_half(f), h | 0x200) << h;  // payload kept, made quiet
    } else {
      ASSERT_EQ(zoc::st::float_to_half(f), h) << h;
    }
  }
}

TEST(SafetensorsHalf, RoundsToNearestEvenAtEveryTie) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // every finite non-negative half and its neighbour
    double lo = zoc::st::half_to_float(static_cast<uint16_t>(h));
    double hi = h + 1 == 0x7C00 ? 65536.0 : zoc::st::half_to_float(static_cast<uint16_t>(h + 1));
    auto mid = static_cast<float>((lo + hi) / 2);  // exact in float
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, kInf), -mid}) check_half(x);
  }
  for (uint64_t bits = 0; bits < 0x100000000ull; bits += 4093) {  // a sweep of all floats
    float x = zoc::st::bits_float(static_cast<uint32_t>(bits));
    if (x == x) check_half(x);
  }
}

TEST(SafetensorsBf16, EdgeValuesAndTies) {
  using zoc::st::bf16_to_float;
  using zoc::st::float_to_bf16;
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0x7F80), kInf);
  EXPECT_EQ(bf16_to_float(0x0001), std::ldexp(1.0f, -133));  // subnormal
  EXPECT_TRUE(is_nan_bits(bf16_to_float(0x7FC0)));
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);        // tie -> even (down)
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);    // tie -> even (up)
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf
  EXPECT_EQ(float_to_bf16(zoc::st::bits_float(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(float_to_bf16(zoc::st::bits_float(0x7F800001)) & 0x7FC0, 0x7FC0);  // sNaN -> qNaN
  EXPECT_EQ(float_to_bf16(zoc::st::bits_float(0xFFC00000)), 0xFFC0);
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    float f = bf16_to_float(static_cast<uint16_t>(b));
    if (f == f) {
      ASSERT_EQ(float_to_bf16(f), b) << b;
    }
  }
  for (uint32_t b = 0; b < 0x7F80; ++b) {
    float lo = bf16_to_float(static_cast<uint16_t>(b));
    double hi =
        b + 1 == 0x7F80 ? std::ldexp(1.0, 128) : bf16_to_float(static_cast<uint16_t>(b + 1));
    auto mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    if (!std::isfinite(mid)) continue;  // the tie above FLT_MAX is not a float
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, kInf), -mid}) check_bf16(x);
  }
}

// ---------------------------------------------------------------------------------------------
// Writing and reading

TEST(SafetensorsRoundTrip, EveryDTypeAndShape) {
  TempDir dir;
  struct Case {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"f64", DType::F64, {2, 3}},
      {"f32", DType::F32, {4}},
      {"f16", DType::F16, {3, 1}},
      {"bf16", DType::BF16, {5}},
      {"i64", DType::I64, {2}},
      {"i32", DType::I32, {1, 1, 3}},
      {"i16", DType::I16, {7}},
      {"i8", DType::I8, {3}},
      {"u8", DType::U8, {1}},
      {"bool", DType::BOOL, {2, 2}},
      {"f8e4m3", DType::F8_E4M3, {6}},
      {"f8e5m2", DType::F8_E5M2, {2, 3}},
      {"scalar", DType::F32, {}},
      {"empty", DType::F32, {0, 64}},
      {"layer1.0.conv1.weight", DType::F32, {8, 4, 3, 3}},
  };
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<zoc::st::TensorToWrite> tensors;
  uint32_t seed = 12345;
  for (const auto& c : cases) {
    size_t n = zoc::st::dtype_size(c.dtype);
    for (int64_t d : c.shape) n *= static_cast<size_t>(d);
    std::vector<uint8_t> bytes(n);
    for (auto& b : bytes) b = static_cast<uint8_t>((seed = seed * 1664525u + 1013904223u) >> 24);
    if (c.dtype == DType::BOOL)
      for (auto& b : bytes) b &= 1;
    payloads.push_back(std::move(bytes));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    tensors.push_back(
        {cases[i].name, cases[i].dtype, cases[i].shape, payloads[i].data(), payloads[i].size()});
  }
  const std::vector<std::pair<std::string, std::string>> meta = {{"format", "pt"},
                                                                 {"note", "\"q\"\n\u00e9"}};
  const std::string path = dir.file("w.safetensors");
  ASSERT_TRUE(zoc::st::write_file(path, tensors, meta).ok());
  EXPECT_EQ(dir.entries(), 1u);  // no temporary file left behind

  auto f = zoc::st::File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->tensors().size(), cases.size());
  for (size_t i = 0; i + 1 < f->tensors().size(); ++i) {  // laid out in name order
    EXPECT_LT(f->tensors()[i].name, f->tensors()[i + 1].name);
    EXPECT_EQ(f->tensors()[i].data + f->tensors()[i].nbytes, f->tensors()[i + 1].data);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const zoc::st::TensorView* t = f->find(cases[i].name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, cases[i].dtype);
    EXPECT_EQ(t->shape, cases[i].shape);
    EXPECT_EQ(t->source, path);
    ASSERT_EQ(t->nbytes, payloads[i].size());
    EXPECT_EQ(t->numel() * zoc::st::dtype_size(t->dtype), t->nbytes);
    EXPECT_TRUE(std::equal(payloads[i].begin(), payloads[i].end(), t->data));
  }
  EXPECT_EQ(f->find("missing"), nullptr);
  EXPECT_EQ(f->find(""), nullptr);
  EXPECT_EQ(f->metadata(), meta);
  EXPECT_EQ(f->path(), path);

  // Deterministic: the same tensors in another order give the same bytes.
  std::vector<zoc::st::TensorToWrite> reversed(tensors.rbegin(), tensors.rend());
  const std::string path2 = dir.file("w2.safetensors");
  ASSERT_TRUE(zoc::st::write_file(path2, reversed, {meta[1], meta[0]}).ok());
  EXPECT_EQ(read_bytes(path), read_bytes(path2));

  // Moving the File keeps its views valid.
  zoc::st::File moved = std::move(f).value();
  zoc::st::File again = std::move(moved);
  EXPECT_TRUE(std::equal(payloads[0].begin(), payloads[0].end(), again.find("f64")->data));
}

TEST(SafetensorsRoundTrip, ExactLayout) {
  TempDir dir;
  const uint8_t u8[3] = {1, 2, 3};
  const float f32[2] = {1.0f, -2.0f};
  const std::string path = dir.file("small.safetensors");
  ASSERT_TRUE(zoc::st::write_file(path,
                                  {{"b", DType::F32, {2}, f32, 8}, {"a", DType::U8, {3}, u8, 3}},
                                  {{"format", "pt"}})
                  .ok());
  const std::vector<uint8_t> bytes = read_bytes(path);
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"data_offsets":[0,3],"dtype":"U8","shape":[3]},)"
      R"("b":{"data_offsets":[3,11],"dtype":"F32","shape":[2]}})";
  const size_t header_len = (json.size() + 7) / 8 * 8;  // padded with spaces to 8 bytes
  ASSERT_EQ(bytes.size(), 8 + header_len + 11);
  EXPECT_EQ(zoc::st::detail::load_le(bytes.data(), 8), header_len);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(header_len));
  EXPECT_EQ(header, json + std::string(header_len - json.size(), ' '));
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 8 + static_cast<long>(header_len),
                                 bytes.begin() + 11 + static_cast<long>(header_len)),
            std::vector<uint8_t>(u8, u8 + 3));
  float back[2];
  std::memcpy(back, bytes.data() + 8 + header_len + 3, 8);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.0f);
}

// encode() is the same bytes in memory (a module's state_dict read as weights); its errors name
// the label, as write_file's name the path.
TEST(SafetensorsRoundTrip, EncodeGivesTheFilesBytes) {
  TempDir dir;
  const uint8_t u8[3] = {1, 2, 3};
  const float f32[2] = {1.0f, -2.0f};
  const std::vector<zoc::st::TensorToWrite> t = {{"b", DType::F32, {2}, f32, 8},
                                                 {"a", DType::U8, {3}, u8, 3}};
  const std::string path = dir.file("small.safetensors");
  ASSERT_TRUE(zoc::st::write_file(path, t, {{"format", "pt"}}).ok());
  auto bytes = zoc::st::encode("m.pt", t, {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  EXPECT_EQ(*bytes, read_bytes(path));
  auto f = zoc::st::File::from_bytes(std::move(*bytes), "m.pt");
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_NE(f->find("b"), nullptr);
  EXPECT_EQ(f->find("b")->shape, (std::vector<int64_t>{2}));
  auto bad = zoc::st::encode("m.pt", {{"x", DType::F32, {3}, f32, 8}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "m.pt: tensor 'x': has 8 bytes but shape [3] of F32 needs 12");
}

TEST(SafetensorsRoundTrip, EmptyFileAndOverwrite) {
  TempDir dir;
  const std::string path = dir.file("e.safetensors");
  ASSERT_TRUE(zoc::st::write_file(path, {}).ok());
  EXPECT_EQ(read_bytes(path),
            (std::vector<uint8_t>{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}));
  auto f = zoc::st::File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE(f->tensors().empty());
  const int32_t v[1] = {42};
  ASSERT_TRUE(zoc::st::write_file(path, {{"x", DType::I32, {1}, v, 4}}).ok());  // replaces it
  auto g = zoc::st::File::open(path);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->tensors().size(), 1u);
  EXPECT_EQ(dir.entries(), 1u);
}

TEST(SafetensorsWrite, RejectsBadTensorsAndLeavesNothing) {
  TempDir dir;
  const std::string p = dir.file("bad.safetensors");
  const float d[4] = {};
  auto err = [&](std::vector<zoc::st::TensorToWrite> t,
                 std::vector<std::pair<std::string, std::string>> meta = {}) {
    Status s = zoc::st::write_file(p, t, meta);
    return s.ok() ? std::string("OK") : s.error().message;
  };
  EXPECT_EQ(err({{"a", DType::F32, {2}, d, 12}}),
            p + ": tensor 'a': has 12 bytes but shape [2] of F32 needs 8");
  EXPECT_EQ(err({{"a", DType::F32, {2}, d, 8}, {"a", DType::F32, {2}, d, 8}}),
            p + ": duplicate tensor name 'a'");
  EXPECT_EQ(err({{"", DType::F32, {2}, d, 8}}), p + ": tensor name is empty");
  EXPECT_EQ(err({{"__metadata__", DType::F32, {2}, d, 8}}),
            p + ": tensor name '__metadata__' is reserved");
  EXPECT_EQ(err({{"a", DType::F32, {-1, 2}, d, 8}}),
            p + ": tensor 'a': shape [-1, 2] has a negative dimension");
  EXPECT_EQ(err({{"a", DType::F32, {1 << 30, 1 << 30, 1 << 30}, d, 8}}),
            p + ": tensor 'a': byte size of shape [1073741824, 1073741824, 1073741824] overflows "
                "64 bits");
  EXPECT_EQ(err({{"a", DType::F32, {2}, nullptr, 8}}), p + ": tensor 'a': data is null");
  EXPECT_EQ(err({{"a\xff", DType::F32, {2}, d, 8}}),
            p + ": tensor 'a\\xff': name is not valid UTF-8");
  EXPECT_EQ(err({}, {{"k", "1"}, {"k", "2"}}), p + ": __metadata__ has duplicate key 'k'");
  EXPECT_EQ(dir.entries(), 0u);
  EXPECT_EQ(err({{"a", DType::F32, {0}, nullptr, 0}}), "OK");  // empty tensors need no data

  const std::string missing = dir.file("no/such/dir/w.safetensors");
  Status s = zoc::st::write_file(missing, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.rfind(missing + ": cannot create " + missing + ".tmp.", 0), 0u)
      << s.error().message;
}

TEST(SafetensorsOpen, FileSystemErrors) {
  TempDir dir;
  auto f = zoc::st::File::open(dir.file("absent.safetensors"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message,
            dir.file("absent.safetensors") + ": cannot open: No such file or directory");
  auto g = zoc::st::File::open(dir.file(""));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find(": not a regular file"), std::string::npos) << g.error().message;
  auto h = zoc::st::File::from_bytes({1, 2, 3});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().message,
            "<memory>: file is 3 bytes, shorter than 8 bytes (the header length field)");
}

// ---------------------------------------------------------------------------------------------
// Conversion

// A view over bytes placed at an odd address, as tensors after a U8 tensor are.
struct Unaligned {
  std::vector<uint8_t> storage;
  zoc::st::TensorView view;
  Unaligned(DType t, const void* src, size_t n, std::vector<int64_t> shape) : storage(n + 1) {
    if (n) std::memcpy(storage.data() + 1, src, n);
    view.name = "t";
    view.dtype = t;
    view.shape = std::move(shape);
    view.data = storage.data() + 1;
    view.nbytes = n;
    view.source = "w.safetensors";
  }
};

TEST(SafetensorsConvert, ToFloat32EveryFloatDType) {
  const double f64[] = {1.5, -0.1, 1e-45, 3.0e38, 1e39, -1e300, 0x1.fffffefffffffp127, -0.0};
  Unaligned a(DType::F64, f64, sizeof f64, {8});
  float out[8];
  ASSERT_TRUE(zoc::st::to_float32(a.view, out, 8).ok());
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -0.1f);
  EXPECT_EQ(out[2], std::numeric_limits<float>::denorm_min());  // 1e-45 rounds to 2^-149
  EXPECT_EQ(out[3], 3.0e38f);
  EXPECT_EQ(out[4], kInf);
  EXPECT_EQ(out[5], -kInf);
  EXPECT_EQ(out[6], std::numeric_limits<float>::max());  // just below the tie rounds down
  EXPECT_TRUE(std::signbit(out[7]));

  const float f32[] = {1.0f, -kInf, 7.25f};
  Unaligned b(DType::F32, f32, sizeof f32, {3});
  ASSERT_TRUE(zoc::st::to_float32(b.view, out, 3).ok());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -kInf);
  EXPECT_EQ(out[2], 7.25f);

  const uint16_t f16[] = {0x3C00, 0x0001, 0xFC00, 0x7BFF};
  Unaligned c(DType::F16, f16, sizeof f16, {2, 2});
  ASSERT_TRUE(zoc::st::to_float32(c.view, out, 4).ok());
  EXPECT_EQ(out[1], std::ldexp(1.0f, -24));
  EXPECT_EQ(out[2], -kInf);
  EXPECT_EQ(out[3], 65504.0f);

  const uint16_t bf16[] = {0x3F80, 0xC040};
  Unaligned d(DType::BF16, bf16, sizeof bf16, {2});
  ASSERT_TRUE(zoc::st::to_float32(d.view, out, 2).ok());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.0f);
}

TEST(SafetensorsConvert, ToFloat32Errors) {
  const int32_t i32[] = {1, 2};
  Unaligned a(DType::I32, i32, sizeof i32, {2});
  float out[4];
  Status s = zoc::st::to_float32(a.view, out, 2);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "w.safetensors: tensor 't': cannot convert I32 to float32 (only F64, F32, F16 and BF16 "
            "convert)");
  const float f[] = {1, 2};
  Unaligned b(DType::F32, f, sizeof f, {2});
  s = zoc::st::to_float32(b.view, out, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.error().message,
      "w.safetensors: tensor 't': output has room for 3 floats but the tensor has 2 elements");
  b.view.shape = {3};
  s = zoc::st::to_float32(b.view, out, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "w.safetensors: tensor 't': holds 8 bytes, which does not match shape [3] of F32");
  EXPECT_FALSE(zoc::st::to_float32(Unaligned(DType::F8_E5M2, f, 2, {2}).view, out, 2).ok());
}

TEST(SafetensorsConvert, CountNonFinite) {
  const float f32[] = {1.0f, std::nanf(""), kInf, -kInf, 0.0f};
  EXPECT_EQ(zoc::st::count_non_finite(Unaligned(DType::F32, f32, sizeof f32, {5}).view), 3u);
  const double f64[] = {std::nan(""), 1e308};
  EXPECT_EQ(zoc::st::count_non_finite(Unaligned(DType::F64, f64, sizeof f64, {2}).view), 1u);
  const uint16_t f16[] = {0x7C00, 0x7BFF, 0xFE00};
  EXPECT_EQ(zoc::st::count_non_finite(Unaligned(DType::F16, f16, sizeof f16, {3}).view), 2u);
  const uint16_t bf16[] = {0x7F80, 0x7F7F, 0xFFC1};
  EXPECT_EQ(zoc::st::count_non_finite(Unaligned(DType::BF16, bf16, sizeof bf16, {3}).view), 2u);
  const uint8_t e4m3[] = {0x7F, 0xFF, 0x7E, 0x78};  // only S.1111.111 is NaN
  EXPECT_EQ(zoc::st::count_non_finite(Unaligned(DType::F8_E4M3, e4m3, 4, {4}).view), 2u);
  const uint8_t e5m2[] = {0x7C, 0xFD, 0x7B, 0x00};  // inf, NaN, max finite, zero
  EXPECT_EQ(zoc::st::count_non_finite(Unaligned(DType::F8_E5M2, e5m2, 4, {4}).view), 2u);
  const int32_t i32[] = {-1, 0x7F800000};
  EXPECT_EQ(zoc::st::count_non_finite(Unaligned(DType::I32, i32, sizeof i32, {2}).view), 0u);
}

}  // namespace
