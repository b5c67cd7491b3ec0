#!/usr/bin/env bash
# Compiles and links the checked-in generated/ folders with the local CUDA toolkit and cuDNN
# (no GPU needed), as CI does.  Usage: tools/dev/build_generated.sh [BUILD_ROOT]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$repo/build/generated}
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ]; then
  echo "nvcc not found under $cuda: cannot compile the generated code here" >&2
  exit 1
fi
for dir in "$repo"/generated/*/; do
  name=$(basename "$dir")
  cmake -S "$dir" -B "$out/$name" -G Ninja -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
        -DCUDNN_ROOT="${CUDNN_ROOT:-$cuda}" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
  cmake --build "$out/$name" -j "$(nproc)"
  echo "built generated/$name -> $out/$name/${name}_main"
done
