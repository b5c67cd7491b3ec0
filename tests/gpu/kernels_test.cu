// GPU test of runtime/zoc/kernels/kernels.cuh (and layer_kernels.cuh's channel_mul, const_op.cuh)
// computations.
//
// The custom kernels sit between cuDNN calls in every generated model, where a wrong index or a
// missed tail element corrupts results silently; this program checks each launcher for float,
// __half and __nv_bfloat16 on seeded random data with odd sizes (tails of grid-stride loops, every
// vector width of the pooling kernel, a misaligned pointer) and one case past 2^31 elements for the
// 64-bit indexing. Outputs are poisoned before each launch so unwritten elements show. Conversions
// and elementwise results must match the CPU bit for bit (the CPU uses the same float arithmetic
// and rounding); pooling, which adds in an order of its own, must lie within float summation's
// error bound of the exact mean. No test framework: the last line is "N passed, M failed", the exit
// status non-zero on any failure. Runs on the GPU machine only (see tests/gpu/gpu_check.sh).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "zoc/kernels/const_op.cuh"
#include "zoc/kernels/kernels.cuh"
#include "zoc/kernels/layer_kernels.cuh"

namespace {

using zoc::kernels::from_float;
using zoc::kernels::to_float;

int g_passed = 0, g_failed = 0;

void report(bool ok, const std::string& name, const std::string& detail = "") {
  (ok ? g_passed : g_failed) += 1;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.empty() ? "" : ": ",
              detail.c_str());
}

template <class T>
const char* type_name();
template <>
const char* type_name<float>() {
  return "float";
}
template <>
const char* type_name<__half>() {
  return "half";
}
template <>
const char* type_name<__nv_bfloat16>() {
  return "bf16";
}

// Relative precision of T, for the one comparison that allows rounding differences.
template <class T>
double epsilon() {
  return sizeof(T) == 4 ? 0x1.0p-23 : std::is_same_v<T, __half> ? 0x1.0p-10 : 0x1.0p-7;
}

// Values exactly representable in T, so host and device start from the same numbers.
template <class T>
std::vector<T> random_values(size_t count, uint64_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937_64 rng(seed);
  std::vector<T> out(count);
  for (auto& v : out) {
    const float u = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53);
    v = from_float<T>(lo + (hi - lo) * u);
  }
  return out;
}

// A device copy of a host vector, freed on destruction; the poison fills every byte with 0xFF
// (NaN for float, half and bf16).
template <class T>
struct Device {
  T* ptr = nullptr;
  size_t count = 0;
  explicit Device(size_t n) : count(n) {
    if (cudaMalloc(&ptr, n * sizeof(T) + 64) != cudaSuccess) ptr = nullptr;
  }
  explicit Device(const std::vector<T>& host) : Device(host.size()) {
    if (ptr) cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~Device() { cudaFree(ptr); }
  Device(const Device&) = delete;
  void poison() { cudaMemset(ptr, 0xFF, count * sizeof(T) + 64); }
  std::vector<T> read(size_t n, size_t offset = 0) const {
    std::vector<T> host(n);
    cudaMemcpy(host.data(), ptr + offset, n * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }
};

// Bitwise equality of storage values; describes the first mismatch.
template <class T>
std::string compare_exact(const std::vector<T>& got, const std::vector<T>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      return "index " + std::to_string(i) + ": got " + std::to_string(to_float(got[i])) +
             ", want " + std::to_string(to_float(want[i]));
    }
  }
  return "";
}

// The launch and the whole stream must succeed; returns the error text otherwise.
std::string run_status(cudaError_t launch) {
  if (launch != cudaSuccess) return std::string("launch: ") + cudaGetErrorName(launch);
  cudaError_t sync = cudaStreamSynchronize(nullptr);
  return sync == cudaSuccess ? "" : std::string("sync: ") + cudaGetErrorName(sync);
}

template <class T>
void test_nchw_to_nhwc(int n, int c, int h, int w, int c_padded) {
  const std::string name = std::string("nchw_to_nhwc<") + type_name<T>() + "> n" +
                           std::to_string(n) + " c" + std::to_string(c) + "->" +
                           std::to_string(c_padded) + " " + std::to_string(h) + "x" +
                           std::to_string(w);
  const size_t hw = static_cast<size_t>(h) * w;
  std::vector<float> in = random_values<float>(n * c * hw, 11);
  std::vector<T> want(n * hw * c_padded);
  for (int b = 0; b < n; ++b)
    for (size_t p = 0; p < hw; ++p)
      for (int k = 0; k < c_padded; ++k)
        want[(b * hw + p) * c_padded + k] = from_float<T>(k < c ? in[(b * c + k) * hw + p] : 0.0f);
  Device<float> d_in(in);
  Device<T> d_out(want.size());
  d_out.poison();
  std::string err = run_status(
      zoc::kernels::launch_nchw_to_nhwc<T>(d_in.ptr, d_out.ptr, n, c, h, w, c_padded, nullptr));
  if (err.empty()) err = compare_exact(d_out.read(want.size()), want);
  report(err.empty(), name, err);
}

template <class T>
void test_conversions(int64_t count) {
  const std::string suffix = std::string("<") + type_name<T>() + "> " + std::to_string(count);
  std::vector<float> f = random_values<float>(count, 12, -70000.0f, 70000.0f);  // half overflows
  std::vector<T> want(count);
  for (int64_t i = 0; i < count; ++i) want[i] = from_float<T>(f[i]);
  Device<float> d_f(f);
  Device<T> d_t(count);
  d_t.poison();
  std::string err =
      run_status(zoc::kernels::launch_from_float<T>(d_f.ptr, d_t.ptr, count, nullptr));
  if (err.empty()) err = compare_exact(d_t.read(count), want);
  report(err.empty(), "from_float" + suffix, err);

  std::vector<T> t = random_values<T>(count, 13);
  std::vector<float> want_f(count);
  for (int64_t i = 0; i < count; ++i) want_f[i] = to_float(t[i]);
  Device<T> d_t2(t);
  d_f.poison();
  err = run_status(zoc::kernels::launch_to_float<T>(d_t2.ptr, d_f.ptr, count, nullptr));
  if (err.empty()) err = compare_exact(d_f.read(count), want_f);
  report(err.empty(), "to_float" + suffix, err);
}

template <class T>
void test_bias_rows(int rows, int cols) {
  std::vector<T> bias = random_values<T>(cols, 14);
  std::vector<T> want(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < want.size(); ++i) want[i] = bias[i % cols];
  Device<T> d_bias(bias), d_y(want.size());
  d_y.poison();
  std::string err =
      run_status(zoc::kernels::launch_bias_rows<T>(d_y.ptr, d_bias.ptr, rows, cols, nullptr));
  if (err.empty()) err = compare_exact(d_y.read(want.size()), want);
  report(err.empty(),
         std::string("bias_rows<") + type_name<T>() + "> " + std::to_string(rows) + "x" +
             std::to_string(cols),
         err);
}

template <class T>
void test_add(int64_t count, bool relu, bool in_place) {
  std::vector<T> a = random_values<T>(count, 15), b = random_values<T>(count, 16);
  std::vector<T> want(count);
  for (int64_t i = 0; i < count; ++i) {
    float v = to_float(a[i]) + to_float(b[i]);
    want[i] = from_float<T>(relu && v < 0.0f ? 0.0f : v);
  }
  Device<T> d_a(a), d_b(b), d_y(count);
  d_y.poison();
  T* y = in_place ? d_a.ptr : d_y.ptr;
  std::string err =
      run_status(zoc::kernels::launch_add<T>(d_a.ptr, d_b.ptr, y, count, relu, nullptr));
  if (err.empty()) err = compare_exact(in_place ? d_a.read(count) : d_y.read(count), want);
  report(err.empty(),
         std::string("add<") + type_name<T>() + "> " + std::to_string(count) +
             (relu ? " relu" : "") + (in_place ? " in-place" : ""),
         err);
}

// y = x * s per channel (zoc/kernels/layer_kernels.cuh): s per sample ([n, c]) or shared ([c]), in
// either layout; every element is one float product rounded once, so the result is exact.
// Sizes pick the vector kernel (c or hw a multiple of 16 bytes' worth) or the general one.
template <class T>
void test_channel_mul(int n, int c, int hw, bool nhwc, bool per_sample, int offset) {
  const std::string name = std::string("channel_mul<") + type_name<T>() + "> n" +
                           std::to_string(n) + " c" + std::to_string(c) + " hw" +
                           std::to_string(hw) + (nhwc ? " nhwc" : " nchw") +
                           (per_sample ? " per-sample" : " shared") + (offset ? " misaligned" : "");
  const size_t count = static_cast<size_t>(n) * c * hw;
  std::vector<T> x = random_values<T>(count + offset, 19);
  std::vector<T> s = random_values<T>(static_cast<size_t>(per_sample ? n : 1) * c, 20);
  std::vector<T> want(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t b = i / (static_cast<size_t>(c) * hw);
    const size_t k = nhwc ? i % c : (i / hw) % c;
    want[i] = from_float<T>(to_float(x[offset + i]) * to_float(s[(per_sample ? b * c : 0) + k]));
  }
  Device<T> d_x(x), d_s(s), d_y(count + offset);
  d_y.poison();
  const zoc::ChannelMulShape m{c, hw, nhwc, per_sample, false};
  std::string err = run_status(zoc::kernels::launch_channel_mul<T, T>(
      d_x.ptr + offset, d_s.ptr, d_y.ptr + offset, static_cast<int64_t>(count), m, nullptr));
  if (err.empty()) err = compare_exact(d_y.read(count, offset), want);
  report(err.empty(), name, err);
}

// a op b in plain host float arithmetic (one IEEE operation, nothing to contract), operands
// swapped for `reverse`: the reference for const_op's __fadd_rn and friends.
float const_op_reference(float x, float k, zoc::ConstOpKind op, bool reverse) {
  const float a = reverse ? k : x, b = reverse ? x : k;
  switch (op) {
    case zoc::ConstOpKind::kSub:
      return a - b;
    case zoc::ConstOpKind::kMul:
      return a * b;
    case zoc::ConstOpKind::kDiv:
      return a / b;
    default:
      return a + b;
  }
}

// Values of magnitude 0.5 to 2 with either sign, exactly representable in T: every quotient,
// x / k or k / x, is well conditioned.
template <class T>
std::vector<T> signed_values(size_t count, uint64_t seed) {
  std::vector<T> out = random_values<T>(count, seed, 0.5f, 2.0f);
  std::mt19937_64 rng(seed + 1000);
  for (auto& v : out)
    if (rng() & 1) v = from_float<T>(-to_float(v));
  return out;
}

// y = x op k and k op x (zoc/kernels/const_op.cuh) for add, sub, mul and div with k a scalar, one
// fp32 weight or one per channel, bit-exact against the CPU (one float operation rounded once).
// Sizes pick the vector kernel or the general one; `offset` misaligns x and y.
template <class T>
void test_const_op(int n, int c, int hw, bool nhwc, int offset) {
  static const char* const kOps[] = {"add", "sub", "mul", "div"};
  static const char* const kConstants[] = {"scalar", "one value", "per-channel"};
  const std::string base = std::string("const_op<") + type_name<T>() + "> n" + std::to_string(n) +
                           " c" + std::to_string(c) + " hw" + std::to_string(hw) +
                           (nhwc ? " nhwc" : " nchw") + (offset ? " misaligned" : "");
  const size_t count = static_cast<size_t>(n) * c * hw;
  const std::vector<T> x = signed_values<T>(count + offset, 21);
  // Full fp32 weights and scalar (not representable in half or bf16): k is never rounded to T.
  const std::vector<float> v = signed_values<float>(static_cast<size_t>(c), 22);
  const float scalar = -1.3f;
  Device<T> d_x(x), d_y(count + offset);
  Device<float> d_v(v);
  std::vector<T> want(count);
  int failed = 0;
  std::string first;  // the first failing case and its mismatch
  for (int op = 0; op < 4; ++op)
    for (int reverse = 0; reverse < 2; ++reverse)
      for (int constant = 0; constant < 3; ++constant) {
        zoc::ConstOpShape m;
        m.c = c;
        m.hw = hw;
        m.nhwc = nhwc;
        m.op = static_cast<zoc::ConstOpKind>(op);
        m.reverse = reverse != 0;
        m.per_channel = constant == 2;
        m.scalar = scalar;  // set in every case: with v given it must be ignored
        for (size_t i = 0; i < count; ++i) {
          const size_t k = nhwc ? i % c : (i / hw) % c;
          const float kv = constant == 0 ? scalar : v[constant == 1 ? 0 : k];
          want[i] = from_float<T>(const_op_reference(to_float(x[offset + i]), kv, m.op, m.reverse));
        }
        d_y.poison();
        std::string err = run_status(zoc::kernels::launch_const_op<T>(
            d_x.ptr + offset, constant == 0 ? nullptr : d_v.ptr, d_y.ptr + offset,
            static_cast<int64_t>(count), m, nullptr));
        if (err.empty()) err = compare_exact(d_y.read(count, offset), want);
        if (!err.empty() && failed++ == 0)
          first = std::string(kOps[op]) + (reverse ? " reverse " : " ") + kConstants[constant] +
                  ": " + err;
      }
  report(failed == 0, base + " (4 ops x 2 orders x 3 constants)",
         failed ? std::to_string(failed) + " of 24 cases failed, first " + first : "");
}

// `offset` elements past an aligned allocation for x and y: forces narrower vectors.
template <class T>
void test_avgpool(int n, int hw, int c, int offset) {
  const std::string name = std::string("global_avgpool_nhwc<") + type_name<T>() + "> n" +
                           std::to_string(n) + " hw" + std::to_string(hw) + " c" +
                           std::to_string(c) + (offset ? " misaligned" : "");
  std::vector<T> x = random_values<T>(static_cast<size_t>(n) * hw * c + offset, 17);
  // The kernel adds in float in an order of its own (pixel lanes, then a tree): the reference
  // is the exact mean, and the bound is float summation's worst case over hw terms plus T's
  // rounding of the result. An index error is off by whole values, far outside it.
  std::vector<double> want(static_cast<size_t>(n) * c), bound(want.size());
  for (int b = 0; b < n; ++b)
    for (int k = 0; k < c; ++k) {
      double sum = 0.0, magnitude = 0.0;
      for (int p = 0; p < hw; ++p) {
        const double v = to_float(x[offset + (static_cast<size_t>(b) * hw + p) * c + k]);
        sum += v;
        magnitude += std::fabs(v);
      }
      const size_t at = static_cast<size_t>(b) * c + k;
      want[at] = sum / hw;
      bound[at] = epsilon<T>() * std::fabs(want[at]) + 0x1.0p-24 * magnitude + 1e-7;
    }
  Device<T> d_x(x), d_y(want.size() + offset);
  d_y.poison();
  std::string err = run_status(zoc::kernels::launch_global_avgpool_nhwc<T>(
      d_x.ptr + offset, d_y.ptr + offset, n, hw, c, nullptr));
  if (err.empty()) {
    std::vector<T> got = d_y.read(want.size(), offset);
    for (size_t i = 0; i < want.size() && err.empty(); ++i) {
      const double g = to_float(got[i]);
      if (!(std::fabs(g - want[i]) <= bound[i])) {
        err = "index " + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
              std::to_string(want[i]);
      }
    }
  }
  report(err.empty(), name, err);
}

// Past 2^31 elements: bias_rows fills [rows, 1024] with rows*1024 > 2^31, then the same memory
// read as [n, hw, c] NHWC must pool back to the bias (sums of 2048 equal halves are exact).
void test_large() {
  const int cols = 1024, rows = (1 << 21) + 2048;
  const size_t total = static_cast<size_t>(rows) * cols;
  Device<__half> d_x(total);
  if (!d_x.ptr) {
    (void)cudaGetLastError();
    std::printf("skip large (64-bit indexing): cannot allocate %zu bytes\n", total * 2);
    return;
  }
  std::vector<__half> bias = random_values<__half>(cols, 18);
  Device<__half> d_bias(bias);
  std::string err =
      run_status(zoc::kernels::launch_bias_rows<__half>(d_x.ptr, d_bias.ptr, rows, cols, nullptr));
  if (err.empty()) {
    std::vector<__half> tail = d_x.read(2 * cols, total - 2 * cols);
    std::vector<__half> want(2 * cols);
    for (int i = 0; i < 2 * cols; ++i) want[i] = bias[i % cols];
    err = compare_exact(tail, want);
  }
  report(err.empty(), "bias_rows<half> past 2^31 elements", err);

  const int hw = 2048, n = rows / hw;  // 1025 images of 2^21 elements: 2^31 + 2^21 in all
  Device<__half> d_y(static_cast<size_t>(n) * cols);
  d_y.poison();
  err = run_status(
      zoc::kernels::launch_global_avgpool_nhwc<__half>(d_x.ptr, d_y.ptr, n, hw, cols, nullptr));
  if (err.empty()) {
    std::vector<__half> last = d_y.read(cols, static_cast<size_t>(n - 1) * cols);
    err = compare_exact(last, bias);
  }
  report(err.empty(), "global_avgpool_nhwc<half> past 2^31 elements", err);
}

template <class T>
void test_type() {
  test_nchw_to_nhwc<T>(3, 3, 7, 5, 4);
  test_nchw_to_nhwc<T>(2, 3, 224, 224, 8);
  test_nchw_to_nhwc<T>(5, 1, 28, 28, 1);
  test_conversions<T>(1);
  test_conversions<T>(1000003);
  test_bias_rows<T>(37, 1001);
  test_bias_rows<T>(1, 10);
  test_add<T>(100003, false, false);
  test_add<T>(100003, true, false);
  test_add<T>(7, true, true);
  test_avgpool<T>(64, 49, 2048, 0);               // widest vectors
  test_avgpool<T>(64, 49, 2052, 0);               // c % 8 != 0
  test_avgpool<T>(64, 49, 2050, 0);               // c % 4 != 0
  test_avgpool<T>(64, 49, 2048, 1);               // misaligned pointers
  test_avgpool<T>(1, 49, 2048, 0);                // batch 1: few threads
  test_avgpool<T>(3, 13, 1001, 0);                // odd everything
  test_avgpool<T>(2, 1, 5, 0);                    // hw 1
  test_avgpool<T>(1, 12544, 32, 0);               // one narrow map of many pixels (a block's lanes)
  test_avgpool<T>(3, 49, 1152, 0);                // many channel tiles
  test_channel_mul<T>(4, 96, 49, true, true, 0);  // NHWC vectors
  test_channel_mul<T>(4, 96, 49, true, false, 0);    // NHWC vectors, one scale vector
  test_channel_mul<T>(3, 20, 64, false, true, 0);    // NCHW vectors along the pixels
  test_channel_mul<T>(3, 7, 13, true, true, 0);      // general kernel (c, hw odd)
  test_channel_mul<T>(2, 96, 49, true, true, 1);     // misaligned: general kernel
  test_channel_mul<T>(1, 32, 12544, true, true, 0);  // batch 1, a large map
  test_const_op<T>(2, 16, 64, false, 0);             // vectors along the pixels (NCHW)
  test_const_op<T>(2, 16, 64, true, 0);              // vectors along the channels (NHWC)
  test_const_op<T>(3, 8, 5, true, 0);                // NHWC vectors, c one or two vectors wide
  test_const_op<T>(2, 6, 9, false, 0);               // general kernel per channel (hw 9)
  test_const_op<T>(2, 6, 9, true, 0);                // general kernel per channel (c 6)
  test_const_op<T>(1, 3, 35, true, 0);               // odd count: general kernel throughout
  test_const_op<T>(1, 3, 35, false, 0);
  test_const_op<T>(2, 16, 64, true, 1);  // misaligned x and y: general kernel
  test_const_op<T>(2, 16, 64, false, 1);
}

// Invalid arguments are refused without a launch, empty work launches nothing.
void test_arguments() {
  bool ok = zoc::kernels::launch_add<float>(nullptr, nullptr, nullptr, 0, false, nullptr) ==
                cudaSuccess &&
            zoc::kernels::launch_add<float>(nullptr, nullptr, nullptr, -1, false, nullptr) ==
                cudaErrorInvalidValue &&
            zoc::kernels::launch_nchw_to_nhwc<float>(nullptr, nullptr, 1, 4, 2, 2, 3, nullptr) ==
                cudaErrorInvalidValue &&
            zoc::kernels::launch_global_avgpool_nhwc<float>(nullptr, nullptr, 1, 0, 8, nullptr) ==
                cudaErrorInvalidValue &&
            zoc::kernels::launch_bias_rows<float>(nullptr, nullptr, 0, 5, nullptr) == cudaSuccess;
  report(ok, "argument checks and empty launches");
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n0 passed, 1 failed\n");
    return 1;
  }
  test_arguments();
  test_type<float>();
  test_type<__half>();
  test_type<__nv_bfloat16>();
  test_large();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
