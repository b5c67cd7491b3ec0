// Unit tests of runtime/zoc/io/npy.h: numpy-identical output, round trips, float conversion, and
// every error path of the reader.
//
// .npy files carry inputs and reference outputs between PyTorch and zoc, so the writer must
// produce exactly what numpy.save produces (checked against bytes numpy 1.24 wrote) and the
// reader must accept what numpy writes in any of its format versions while rejecting, with a
// message naming the file and the problem, anything it cannot represent faithfully.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "zoc/io/npy.h"

namespace fs = std::filesystem;

namespace {

// A .npy file: magic, version, little-endian header length, header, data.
std::vector<uint8_t> npy(const std::string& header, const std::vector<uint8_t>& data,
                         int major = 1) {
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) b.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::vector<uint8_t> floats(std::initializer_list<float> v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.begin(), b.size());
  return b;
}

// The error message for bytes, or "OK".
std::string parse_error(const std::vector<uint8_t>& bytes) {
  auto a = zoc::npy::parse(bytes.data(), bytes.size(), "x.npy");
  return a.ok() ? "OK" : a.error().message;
}

std::string dict(const std::string& descr, const std::string& shape,
                 const char* fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

class NpyFiles : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("zoc_npy_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) +
         "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  static void write_bytes(const std::string& p, const std::vector<uint8_t>& b) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  static std::vector<uint8_t> bytes_of(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

TEST_F(NpyFiles, WritesExactlyWhatNumpySaves) {
  // numpy 1.24: np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3))
  const std::string numpy_header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + std::string(58, ' ') + "\n";
  std::vector<uint8_t> want = npy(numpy_header, floats({0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(want.size(), 128u + 24u);
  const float data[6] = {0, 1, 2, 3, 4, 5};
  ASSERT_TRUE(zoc::npy::write_float32(file("a.npy"), data, {2, 3}).ok());
  EXPECT_EQ(bytes_of(file("a.npy")), want);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 1);  // no temporary left
}

TEST_F(NpyFiles, RoundTripsEveryRank) {
  std::vector<float> v(600);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i)) * 1000.0f;
  v[7] = std::numeric_limits<float>::quiet_NaN();
  v[8] = -std::numeric_limits<float>::infinity();
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{},
                                         {1},
                                         {600},
                                         {2, 300},
                                         {1, 3, 10, 20},
                                         {0},
                                         {4, 0, 9},
                                         {1, 1, 1, 1, 1, 1, 1, 1, 1, 2}}) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    const std::string p = file("r.npy");
    ASSERT_TRUE(zoc::npy::write_float32(p, v.data(), shape).ok());
    ASSERT_EQ(bytes_of(p).size() % 64, (n * 4) % 64);  // data starts 64-byte aligned
    std::vector<int64_t> got_shape = {99};
    auto r = zoc::npy::read_float32(p, &got_shape);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(got_shape, shape);
    ASSERT_EQ(r->size(), n);
    EXPECT_TRUE(std::equal(r->begin(), r->end(), v.begin(), [](float x, float y) {
      return zoc::st::float_bits(x) == zoc::st::float_bits(y);
    }));
    auto a = zoc::npy::read(p);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->descr, "<f4");
    EXPECT_EQ(a->numel(), n);
  }
}

TEST_F(NpyFiles, ReadFloat32ConvertsF8AndF2) {
  const double d[4] = {1.5, -1e300, 1e-50, 0.1};
  std::vector<uint8_t> data(sizeof d);
  std::memcpy(data.data(), d, sizeof d);
  write_bytes(file("d.npy"), npy(dict("<f8", "(4,)"), data));
  auto r = zoc::npy::read_float32(file("d.npy"), nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)[0], 1.5f);
  EXPECT_EQ((*r)[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ((*r)[2], 0.0f);
  EXPECT_EQ((*r)[3], 0.1f);

  // numpy: np.array([1.5, -2, 65504, 1e-7], dtype=np.float16)
  const std::vector<uint8_t> h = {0x00, 0x3E, 0x00, 0xC0, 0xFF, 0x7B, 0x02, 0x00};
  write_bytes(file("h.npy"), npy(dict("<f2", "(2, 2)"), h));
  std::vector<int64_t> shape;
  r = zoc::npy::read_float32(file("h.npy"), &shape);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(*r, (std::vector<float>{1.5f, -2.0f, 65504.0f, std::ldexp(2.0f, -24)}));

  write_bytes(file("i.npy"), npy(dict("<i4", "(1,)"), {1, 0, 0, 0}));
  r = zoc::npy::read_float32(file("i.npy"), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            file("i.npy") +
                ": dtype '<i4' is not a float type (read_float32 accepts '<f4', '<f8' and '<f2')");
}

TEST_F(NpyFiles, FileSystemErrors) {
  auto a = zoc::npy::read(file("absent.npy"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, file("absent.npy") + ": cannot open: No such file or directory");
  a = zoc::npy::read(dir_.string());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, dir_.string() + ": not a regular file");
  const float f[1] = {1};
  auto s = zoc::npy::write_float32(file("no/dir/x.npy"), f, {1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.rfind(file("no/dir/x.npy") + ": cannot create ", 0), 0u)
      << s.error().message;
  s = zoc::npy::write_float32(file("x.npy"), f, {-1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            file("x.npy") + ": shape (-1,) is negative or its byte size overflows 64 bits");
  s = zoc::npy::write_float32(file("x.npy"), nullptr, {1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, file("x.npy") + ": data is null");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 0);
}

TEST(NpyParse, AcceptsWhatNumpyWrites) {
  // Every accepted descr, keys in any order, double quotes, no trailing comma, versions 2 and 3.
  const std::pair<const char*, size_t> descrs[] = {{"<f4", 4}, {"<f8", 8}, {"<f2", 2}, {"<i8", 8},
                                                   {"<i4", 4}, {"|u1", 1}, {"|b1", 1}};
  for (auto [descr, size] : descrs) {
    auto bytes = npy(dict(descr, "(3,)"), std::vector<uint8_t>(3 * size, 1));
    auto a = zoc::npy::parse(bytes.data(), bytes.size());
    ASSERT_TRUE(a.ok()) << descr << ": " << a.error().message;
    EXPECT_EQ(a->descr, descr);
    EXPECT_EQ(a->shape, std::vector<int64_t>{3});
    EXPECT_EQ(a->data.size(), 3 * size);
  }
  const auto f2 = floats({1, 2});
  EXPECT_EQ(parse_error(npy("{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}", f2)), "OK");
  EXPECT_EQ(
      parse_error(npy("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}  \n", f2)),
      "OK");
  EXPECT_EQ(parse_error(npy("{'descr':'<f4','fortran_order':False,'shape':(2,)}", f2)), "OK");
  EXPECT_EQ(parse_error(npy(
                "{ 'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 1 , 2 , ) , }", f2)),
            "OK");
  EXPECT_EQ(parse_error(npy(dict("<f4", "(2,)"), f2, 2)), "OK");
  EXPECT_EQ(parse_error(npy(dict("<f4", "(2,)"), f2, 3)), "OK");
  EXPECT_EQ(parse_error(npy(dict("<f4", "()"), floats({1}))), "OK");
  EXPECT_EQ(parse_error(npy(dict("<f4", "(0, 5)"), {})), "OK");
}

TEST(NpyParse, EveryErrorPath) {
  const auto f2 = floats({1, 2});
  const std::string ok = dict("<f4", "(2,)");
  auto with_version = [&](uint8_t major, uint8_t minor) {
    auto b = npy(ok, f2);
    b[6] = major;
    b[7] = minor;
    return b;
  };
  const std::vector<std::pair<std::vector<uint8_t>, std::string>> cases = {
      {{}, "file is 0 bytes, too short for a .npy header (at least 10)"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0}, "file is 9 bytes, too short for a .npy header"},
      {{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0},
       "not a .npy file (it does not start with \\x93NUMPY)"},
      {with_version(0, 0), "unsupported .npy format version 0.0 (supported: 1.0, 2.0, 3.0)"},
      {with_version(4, 0), "unsupported .npy format version 4.0"},
      {with_version(1, 1), "unsupported .npy format version 1.1"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0},
       "too short for a version 2.0 header (at least 12)"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xFF, 0x00, '{'},
       "header length 255 runs past the end of the file (only 1 bytes follow)"},
      {npy("", {}), "header dict: expected '{' at header byte 0 (found end of header)"},
      {npy("['descr']", {}), "header dict: expected '{' at header byte 0 (found '[')"},
      {npy("{'descr': '<f4', 'fortran_order': False}", {}), "header has no 'shape' key"},
      {npy("{'descr': '<f4', 'shape': (2,)}", f2), "header has no 'fortran_order' key"},
      {npy("{'fortran_order': False, 'shape': (2,)}", f2), "header has no 'descr' key"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", f2),
       "unexpected key 'extra' in header (expected 'descr', 'fortran_order' and 'shape')"},
      {npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", f2),
       "duplicate key 'descr' in header"},
      {npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", f2),
       "'descr' must be a string (structured dtypes are not supported) at header byte 10"},
      {npy("{'descr' '<f4'}", f2),
       "header dict: expected ':' after key 'descr' at header byte 9 (found ''')"},
      {npy("{'descr': '<f4' 'fortran_order': False}", f2), "expected ',' or '}' at header byte 16"},
      {npy("{'descr': '<f4", f2), "unterminated string"},
      {npy("{'descr': '<f\\4'}", f2), "unsupported character in string"},
      {npy("{descr: '<f4'}", f2), "expected a quoted string at header byte 1"},
      {npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", f2),
       "'fortran_order' must be True or False"},
      {npy(dict("<f4", "[2]"), f2), "'shape' must be a tuple of integers"},
      {npy(dict("<f4", "(2)"), f2), "'shape' (n) is not a tuple (a 1-d shape is written (n,))"},
      {npy(dict("<f4", "(-2,)"), f2), "shape entry is negative"},
      {npy(dict("<f4", "(2.0,)"), f2), "expected ',' or ')' in 'shape' at header byte"},
      {npy(dict("<f4", "(02,)"), f2), "leading zero in a 'shape' entry"},
      {npy(dict("<f4", "(2L,)"), f2), "expected ',' or ')' in 'shape'"},
      {npy(dict("<f4", "(,)"), f2), "expected a non-negative integer in 'shape'"},
      {npy(dict("<f4", "(9223372036854775808,)"), f2), "'shape' entry is too large"},
      {npy(dict("<f4", "(99999999999999999999999,)"), f2), "'shape' entry is too large"},
      {npy(dict("<f4", "(2,)") + "x", f2), "unexpected text after the header dict at header byte"},
      {npy(dict("<f4", "(2,)") + "\t", f2), "unexpected text after the header dict"},
      {npy(dict(">f4", "(2,)"), f2),
       "unsupported dtype '>f4' (supported: '<f4', '<f8', '<f2', '<i8', '<i4', '|u1', '|b1')"},
      {npy(dict("<u2", "(2,)"), f2), "unsupported dtype '<u2'"},
      {npy(dict("<c8", "(2,)"), f2), "unsupported dtype '<c8'"},
      {npy(dict("|O", "(2,)"), f2), "unsupported dtype '|O'"},
      {npy(dict("<f4", "(2,)", "True"), f2),
       "fortran_order True is not supported (save a C-contiguous array)"},
      {npy(dict("<f4", "(4294967296, 4294967296)"), f2),
       "element count of shape (4294967296, 4294967296) overflows 64 bits"},
      {npy(dict("<f8", "(2305843009213693952,)"), f2),
       "byte size of shape (2305843009213693952,) of '<f8' overflows 64 bits"},
      {npy(dict("<f4", "(3,)"), f2),
       "data is 8 bytes but shape (3,) of '<f4' needs 12 (truncated file?)"},
      {npy(dict("<f4", "(1,)"), f2),
       "4 trailing bytes after the 4 bytes of data of shape (1,) of '<f4'"},
      {npy(dict("<f4", "()"), {}), "data is 0 bytes but shape () of '<f4' needs 4"},
  };
  for (const auto& [bytes, expect] : cases) {
    SCOPED_TRACE(expect);
    std::string msg = parse_error(bytes);
    ASSERT_NE(msg, "OK");
    EXPECT_EQ(msg.rfind("x.npy: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(expect), std::string::npos) << msg;
  }
}

TEST(NpyParse, TruncationAndMutationNeverCrash) {
  const auto full = npy(dict("<f4", "(2, 3)") + "    ", floats({1, 2, 3, 4, 5, 6}));
  for (size_t len = 0; len < full.size(); ++len) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_NE(parse_error(cut), "OK") << len;
  }
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t v : {0x00, 0x20, 0x27, 0x28, 0x29, 0x2C, 0x30, 0x39, 0x7D, 0x80, 0xFF}) {
      auto b = full;
      b[i] = v;
      auto a = zoc::npy::parse(b.data(), b.size(), "m");
      if (a.ok()) {
        EXPECT_EQ(a->data.size(), a->numel() * zoc::npy::detail::descr_size(a->descr));
      } else {
        EXPECT_EQ(a.error().message.rfind("m: ", 0), 0u);
      }
    }
  }
  EXPECT_FALSE(zoc::npy::parse(nullptr, 0).ok());
}

}  // namespace
