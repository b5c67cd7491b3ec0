// A zoc-written INT8 1x1 convolution (stride 1, NHWC) with the requantizing epilogue, to measure
// whether zoc's own kernel beats cuDNN's where cuDNN's int8 engines are slow (issue 35):
//   y_i8[m, n] = sat_rne([relu]( (sum_k x[m, k] * w[n, k]) * scale[n] + bias[n] [+ z[m, n]] ))
// A 1x1 convolution over NHWC is a GEMM: M = N*H*W rows of C bytes, the filter [K][C].
//
// Why: int8_layers.cu found cuDNN 9.19's int8 engines (runtime-compiled, 128x128x128 tiles)
// at 22-31% of HBM bandwidth on ResNet-50's memory-bound 1x1 layers, where the fp16 engines
// reach 57-85%; those layers hold the int8 network at 1.03x fp16. This kernel is the simplest
// design that streams: Ampere-style mma.sync m16n8k32 s8 tensor-core instructions (which
// Hopper runs, at a fraction of wgmma's peak: these layers are bound by bytes, not ops),
// a 128 x BN tile per 256-thread block, 64-deep k steps in a 2- or 4-stage cp.async pipeline, z
// streamed into shared memory with the last step, and the int8 result staged through shared
// memory so that y is written in coalesced 16-byte chunks. The epilogue rounds each step to float
// as the CPU reference does (runtime/zoc/math/requant.h): no fused multiply-add. Requirements: C %
// 64 == 0, K % BN == 0, 16-byte aligned pointers; any M.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace probe {

constexpr int kI8Bm = 128, kI8Bk = 64, kI8Stride = kI8Bk + 16;  // smem row: 80 bytes

__device__ inline void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;  // 0: zero-fill (rows past M)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

// One 128 x BN x 64 stage of x rows and filter rows into shared memory.
template <int BN>
__device__ inline void load_stage(int8_t* as, int8_t* bs, const int8_t* x, const int8_t* w, int m0,
                                  int n0, int k0, int M, int K) {
  for (int c = threadIdx.x; c < kI8Bm * 4; c += 256) {
    const int r = c >> 2, col = (c & 3) * 16, m = m0 + r;
    cp_async16(as + r * kI8Stride + col, x + int64_t(m < M ? m : 0) * K + k0 + col, m < M);
  }
  for (int c = threadIdx.x; c < BN * 4; c += 256) {
    const int r = c >> 2, col = (c & 3) * 16;
    cp_async16(bs + r * kI8Stride + col, w + int64_t(n0 + r) * K + k0 + col, true);
  }
}

// The block's 128 x BN tile of z (rows past M zero-filled), row stride BN + 16 bytes.
template <int BN>
__device__ inline void load_z(int8_t* zs, const int8_t* z, int m0, int n0, int M, int N) {
  for (int c = threadIdx.x; c < kI8Bm * BN / 16; c += 256) {
    const int r = c / (BN / 16), col = (c % (BN / 16)) * 16, m = m0 + r;
    cp_async16(zs + r * (BN + 16) + col, z + int64_t(m < M ? m : 0) * N + n0 + col, m < M);
  }
}

__device__ inline void mma_s8(int* c, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One 64-deep step of a warp's 32 x BN/2 tile from shared memory: 2 x BN/16 mma tiles, twice.
template <int BN>
__device__ inline void mma_step(int (*acc)[BN / 16][4], const int8_t* a_s, const int8_t* b_s,
                                int wm, int wn, int g, int t) {
#pragma unroll
  for (int kk = 0; kk < kI8Bk; kk += 32) {
    unsigned a[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int8_t* p = a_s + (wm + i * 16 + g) * kI8Stride + kk + t * 4;
      a[i][0] = *reinterpret_cast<const unsigned*>(p);
      a[i][1] = *reinterpret_cast<const unsigned*>(p + 8 * kI8Stride);
      a[i][2] = *reinterpret_cast<const unsigned*>(p + 16);
      a[i][3] = *reinterpret_cast<const unsigned*>(p + 8 * kI8Stride + 16);
    }
#pragma unroll
    for (int j = 0; j < BN / 16; ++j) {
      const int8_t* p = b_s + (wn + j * 8 + g) * kI8Stride + kk + t * 4;
      const unsigned b0 = *reinterpret_cast<const unsigned*>(p);
      const unsigned b1 = *reinterpret_cast<const unsigned*>(p + 16);
      mma_s8(acc[0][j], a[0], b0, b1);
      mma_s8(acc[1][j], a[1], b0, b1);
    }
  }
}

// 8 warps as 4 (rows) x 2 (columns); a warp owns 32 x BN/2. Shared memory: kI8Stages stages
// (the cp.async pipeline depth, launch_conv1x1_int8 says which) of
// x and filter rows, then the z tile; the int8 result reuses the stages before its stores.
template <int BN, int kI8Stages>
__global__ void __launch_bounds__(256)
    conv1x1_int8(const int8_t* __restrict__ x, const int8_t* __restrict__ w,
                 const float* __restrict__ scale, const float* __restrict__ bias,
                 const int8_t* __restrict__ z, int8_t* __restrict__ y, int M, int N, int K,
                 bool relu) {
  constexpr int kA = kI8Bm * kI8Stride, kB = BN * kI8Stride, kStage = kA + kB, kOs = BN + 16;
  extern __shared__ __align__(16) int8_t smem[];
  int8_t* zs = smem + kI8Stages * kStage;
  const int n0 = blockIdx.x * BN, m0 = blockIdx.y * kI8Bm;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * (BN / 2);
  int acc[2][BN / 16][4] = {};
  const int steps = K / kI8Bk;
  // Prologue: stages 0 .. kI8Stages - 2, one commit group each (empty past the last step); z
  // goes with the last step's group, so it streams in while earlier steps compute.
  for (int s = 0; s < kI8Stages - 1; ++s) {
    if (s < steps) {
      load_stage<BN>(smem + s * kStage, smem + s * kStage + kA, x, w, m0, n0, s * kI8Bk, M, K);
      if (z && s == steps - 1) load_z<BN>(zs, z, m0, n0, M, N);
    }
    asm volatile("cp.async.commit_group;\n");
  }
  for (int s = 0; s < steps; ++s) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kI8Stages - 2));
    __syncthreads();
    const int8_t* st = smem + (s % kI8Stages) * kStage;
    mma_step<BN>(acc, st, st + kA, wm, wn, g, t);
    const int next = s + kI8Stages - 1;  // into the stage computed one step ago
    if (next < steps) {
      int8_t* nx = smem + (next % kI8Stages) * kStage;
      load_stage<BN>(nx, nx + kA, x, w, m0, n0, next * kI8Bk, M, K);
      if (z && next == steps - 1) load_z<BN>(zs, z, m0, n0, M, N);
    }
    asm volatile("cp.async.commit_group;\n");
  }
  asm volatile("cp.async.wait_group 0;\n");
  __syncthreads();  // every warp done with the stages; z in shared memory
  // Epilogue in registers, each step rounded to float as the CPU reference; int8 into smem.
  int8_t* os = smem;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < BN / 16; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = wm + i * 16 + g + (e >> 1) * 8, c = wn + j * 8 + t * 2 + (e & 1);
        float v = __fadd_rn(__fmul_rn(float(acc[i][j][e]), scale[n0 + c]), bias[n0 + c]);
        if (z) v = __fadd_rn(v, float(zs[r * kOs + c]));
        if (relu) v = fmaxf(v, 0.0f);
        os[r * kOs + c] = int8_t(fmaxf(-128.0f, fminf(127.0f, rintf(v))));
      }
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < kI8Bm * BN / 16; c += 256) {
    const int r = c / (BN / 16), col = (c % (BN / 16)) * 16, m = m0 + r;
    if (m < M) {
      *reinterpret_cast<uint4*>(y + int64_t(m) * N + n0 + col) =
          *reinterpret_cast<const uint4*>(os + r * kOs + col);
    }
  }
}

inline size_t conv1x1_int8_smem(int bn, int stages) {
  return size_t(stages) * (kI8Bm + bn) * kI8Stride + size_t(kI8Bm) * (bn + 16);
}

// Launches one instantiation, raising its shared-memory limit once (no per-launch cost).
template <int BN, int S>
zoc::Status launch_conv1x1_int8_as(const int8_t* x, const int8_t* w, const float* scale,
                                   const float* bias, const int8_t* z, int8_t* y, int M, int N,
                                   int K, bool relu, cudaStream_t stream) {
  static bool smem_set = false;
  const size_t smem = conv1x1_int8_smem(BN, S);
  if (!smem_set) {
    ZOC_CUDA(cudaFuncSetAttribute(conv1x1_int8<BN, S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(smem)),
             "conv1x1_int8 smem");
    smem_set = true;
  }
  const dim3 grid(unsigned(N / BN), unsigned((M + kI8Bm - 1) / kI8Bm));
  conv1x1_int8<BN, S><<<grid, 256, smem, stream>>>(x, w, scale, bias, z, y, M, N, K, relu);
  ZOC_CUDA(cudaGetLastError(), "conv1x1_int8 launch");
  return zoc::Status();
}

// Launches the kernel for M x N x K, in the shape measured fastest (2026-11-30, H200):
// K <= 128 (one or two k steps, nothing to pipeline): 128 x 64 tiles, 2 stages, the smaller
// footprint letting 4 blocks share an SM; deeper K: 128 x 128 tiles (when N allows, and not
// `bn64`), 4 stages.
inline zoc::Status launch_conv1x1_int8(const int8_t* x, const int8_t* w, const float* scale,
                                       const float* bias, const int8_t* z, int8_t* y, int M, int N,
                                       int K, bool relu, cudaStream_t stream, bool bn64 = false) {
  if (K % kI8Bk != 0 || N % 64 != 0) return zoc::Error{"conv1x1_int8: C % 64 or K % 64 != 0"};
  if (K <= 128)
    return launch_conv1x1_int8_as<64, 2>(x, w, scale, bias, z, y, M, N, K, relu, stream);
  if (N % 128 == 0 && !bn64) {
    return launch_conv1x1_int8_as<128, 4>(x, w, scale, bias, z, y, M, N, K, relu, stream);
  }
  return launch_conv1x1_int8_as<64, 4>(x, w, scale, bias, z, y, M, N, K, relu, stream);
}

}  // namespace probe
