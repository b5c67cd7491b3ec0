#!/usr/bin/env bash
# Generates every model x precision folder the GPU check needs into gpu_check/ (git-ignored;
# it travels to the GPU machine with the device tool's `carry`). Run on the CPU machine, where
# zoc builds; the GPU machine only needs the CUDA toolkit, cuDNN and PyTorch.
# Usage: [CONV_API=legacy|graph] tools/prepare_gpu_check.sh [ZOC_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")
out=$repo/gpu_check
rm -rf "$out"
mkdir -p "$out"
cd "$repo"
for p in fp32 tf32 fp16 bf16; do
  "$zoc" compile models/resnet50.yaml -o "gpu_check/resnet50_$p" --precision "$p" ${CONV_API:+--conv-api "$CONV_API"} | head -1
  "$zoc" compile models/lenet.yaml -o "gpu_check/lenet_$p" --precision "$p" ${CONV_API:+--conv-api "$CONV_API"} | head -1
done
du -sh "$out"
