#!/usr/bin/env bash
# The trainers of the zoo's layers (tests/train/zoo_ops.yaml), of arithmetic
# (tests/train/arith_ops.yaml) and of a decoder's ops (tests/train/decoder_ops.yaml) compiled by
# zoc and built with the local CUDA toolkit and cuDNN under -Werror (no GPU needed): their call
# constants, steps and kernel wrappers type-check and link; zoo_ops's .cu defines the six layer
# gradients and the six inference kernels its forward runs for float, arith_ops's the const_op,
# binary, channel_mul and pad kernels and operand_grad (its parameters' operands), decoder_ops's
# upsampling forward and backward, and nothing a LeNet trainer does not need is added to one. Then the
# reference steps of the GPU check are made (tests/train/make_zoo_ops_case.py), so that
# tests/train/gpu_zoo_train_check.sh keeps working. Usage: run_zoo_ops_build.sh ZOC SCRATCH
set -euo pipefail
zoc=$1 scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$scratch" && mkdir -p "$scratch"
"$zoc" compile "$here/zoo_ops.yaml" --train -o "$scratch/src" >/dev/null
cu=$scratch/src/zoo_ops_train_kernels.cu
for f in mul_grad operand_grad layernorm_grad adaptive_avgpool_grad pool_grad channel_conv_grad \
         channel_mul layernorm pool channel_shuffle adaptive_avgpool channel_conv; do
  grep -q "^cudaError_t $f(" "$cu" || { echo "zoo_ops_train_kernels.cu lacks $f"; exit 1; }
done
"$zoc" compile "$here/../../models/lenet.yaml" --train -o "$scratch/lenet" >/dev/null
! grep -q "layer_grad_kernels\|model_kernels {" "$scratch/lenet/lenet_train_kernels.cu" ||
  { echo "a LeNet trainer's .cu has the zoo layers' kernels"; exit 1; }
"$zoc" compile "$here/arith_ops.yaml" --train -o "$scratch/arith" >/dev/null
cu=$scratch/arith/arith_ops_train_kernels.cu
for f in const_op binary channel_mul pad operand_grad; do  # div's gradient multiplies two tensors
  grep -q "^cudaError_t $f(" "$cu" || { echo "arith_ops_train_kernels.cu lacks $f"; exit 1; }
done
"$zoc" compile "$here/decoder_ops.yaml" --train -o "$scratch/decoder" >/dev/null
for f in upsample upsample_grad; do
  grep -q "^cudaError_t $f(" "$scratch/decoder/decoder_ops_train_kernels.cu" ||
    { echo "decoder_ops_train_kernels.cu lacks $f"; exit 1; }
done
for m in src:zoo_ops arith:arith_ops decoder:decoder_ops; do
  cmake -S "$scratch/${m%%:*}" -B "$scratch/build_${m#*:}" -G Ninja \
        -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDNN_ROOT="${CUDNN_ROOT:-$cuda}" \
        -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -Wall -Wextra -Werror" >/dev/null
  cmake --build "$scratch/build_${m#*:}" -j "$(nproc)" >/dev/null
  [ -x "$scratch/build_${m#*:}/${m#*:}_train_main" ] || { echo "no ${m#*:}_train_main"; exit 1; }
done
/usr/bin/python3 "$here/make_zoo_ops_case.py" "$zoc" "$scratch/case"
/usr/bin/python3 "$here/make_zoo_ops_case.py" "$zoc" "$scratch/arith_case" arith_ops
/usr/bin/python3 "$here/make_zoo_ops_case.py" "$zoc" "$scratch/decoder_case" decoder_ops
echo "zoo_ops, arith_ops and decoder_ops trainers: compiled and built; their GPU check's references made"
