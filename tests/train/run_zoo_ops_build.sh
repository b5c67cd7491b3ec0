#!/usr/bin/env bash
# The trainer of the zoo's layers (tests/train/zoo_ops.yaml) compiled by zoc and built with the
# local CUDA toolkit and cuDNN under -Werror (no GPU needed): its call constants, steps and kernel
# wrappers type-check and link; its .cu defines the five layer gradients and the five inference
# kernels its forward runs for float, and nothing a LeNet trainer does not need is added to
# one. Then the reference step of the GPU check is made (tests/train/make_zoo_ops_case.py), so
# that tests/train/gpu_zoo_train_check.sh keeps working. Usage: run_zoo_ops_build.sh ZOC SCRATCH
set -euo pipefail
zoc=$1 scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$scratch" && mkdir -p "$scratch"
"$zoc" compile "$here/zoo_ops.yaml" --train -o "$scratch/src" >/dev/null
cu=$scratch/src/zoo_ops_train_kernels.cu
for f in mul_grad layer_scale_grad layernorm_grad adaptive_avgpool_grad pool_grad channel_mul layernorm pool \
         channel_shuffle adaptive_avgpool; do
  grep -q "^cudaError_t $f(" "$cu" || { echo "zoo_ops_train_kernels.cu lacks $f"; exit 1; }
done
"$zoc" compile "$here/../../models/lenet.yaml" --train -o "$scratch/lenet" >/dev/null
! grep -q "layer_grad_kernels\|model_kernels {" "$scratch/lenet/lenet_train_kernels.cu" ||
  { echo "a LeNet trainer's .cu has the zoo layers' kernels"; exit 1; }
cmake -S "$scratch/src" -B "$scratch/build" -G Ninja -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
      -DCUDNN_ROOT="${CUDNN_ROOT:-$cuda}" -DCMAKE_BUILD_TYPE=None \
      -DCMAKE_CXX_FLAGS="-O1 -Wall -Wextra -Werror" >/dev/null
cmake --build "$scratch/build" -j "$(nproc)" >/dev/null
[ -x "$scratch/build/zoo_ops_train_main" ] || { echo "no zoo_ops_train_main"; exit 1; }
/usr/bin/python3 "$here/make_zoo_ops_case.py" "$zoc" "$scratch/case"
echo "zoo_ops trainer: compiled and built; its GPU check's reference made"
