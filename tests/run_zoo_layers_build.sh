#!/usr/bin/env bash
# The zoo's layers (tests/backend/zoo_layers.yaml) and zoc's depthwise kernel in all its forms
# (tests/backend/depthwise_layers.yaml) compiled by zoc in fp32 (NCHW) and fp16 (NHWC) and built with the local CUDA toolkit and cuDNN under -Werror: the generated constants, steps
# and kernel wrappers type-check and link for both layouts (no GPU needed; tests/gpu/zoo_check.sh
# runs them). Usage: tests/run_zoo_layers_build.sh ZOC SCRATCH
set -euo pipefail
zoc=$1 scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$scratch" && mkdir -p "$scratch"
for m in zoo_layers depthwise_layers; do
  for p in fp32 fp16; do
    "$zoc" compile "$here/backend/$m.yaml" --precision "$p" -o "$scratch/${m}_src_$p" >/dev/null
    cmake -S "$scratch/${m}_src_$p" -B "$scratch/${m}_build_$p" -G Ninja \
          -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDNN_ROOT="${CUDNN_ROOT:-$cuda}" \
          -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
    cmake --build "$scratch/${m}_build_$p" -j "$(nproc)" >/dev/null
    [ -x "$scratch/${m}_build_$p/${m}_main" ] || { echo "no ${m}_main for $p"; exit 1; }
    echo "$m $p: compiled and built"
  done
done
