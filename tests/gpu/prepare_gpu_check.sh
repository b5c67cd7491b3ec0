#!/usr/bin/env bash
# Generates every model x precision folder the GPU check needs into gpu_check/ (git-ignored;
# it travels to the GPU machine with the device tool's `carry`). Run on the CPU machine, where
# zoc builds; the GPU machine only needs the CUDA toolkit, cuDNN and PyTorch.
#
# FROM=onnx takes the ONNX route instead (issue 19): ResNet-50 and LeNet exported here by
# Debian's torch (models/export.py --onnx 17: BatchNorm kept, state_dict names, dynamic batch),
# compiled from the .onnx files in fp32 and fp16 into gpu_check_onnx/. The generated code reads
# its weights at run time, so tests/gpu/gpu_check.sh gpu_check_onnx judges it on the GPU exactly as
# the YAML route's folders, on the weights it exports there.
# Usage: [CONV_API=legacy|graph] [FROM=yaml|onnx] tests/gpu/prepare_gpu_check.sh [ZOC_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")
from=${FROM:-yaml}
cd "$repo"
if [ "$from" = onnx ]; then
  out=$repo/gpu_check_onnx
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  rm -rf "$out" && mkdir -p "$out"
  for m in resnet50 lenet; do
    /usr/bin/python3 models/export.py --model "$m" --seed 0 --batch 2 --torchscript none \
      --onnx 17 --out "$scratch/$m" | tail -1
    # Named after the model, so the generated class and files are the YAML route's (Resnet50,
    # resnet50.h), which the GPU check's wrong-call program includes by that name.
    cp "$scratch/$m/model_opset17.onnx" "$scratch/$m.onnx"
    for p in fp32 fp16; do
      "$zoc" compile "$scratch/$m.onnx" -o "$out/${m}_$p" --precision "$p" \
        ${CONV_API:+--conv-api "$CONV_API"} | head -1
    done
  done
  du -sh "$out"
  exit 0
fi
out=$repo/gpu_check
rm -rf "$out"
mkdir -p "$out"
for p in fp32 tf32 fp16 bf16; do
  "$zoc" compile models/resnet50.yaml -o "gpu_check/resnet50_$p" --precision "$p" ${CONV_API:+--conv-api "$CONV_API"} | head -1
  "$zoc" compile models/lenet.yaml -o "gpu_check/lenet_$p" --precision "$p" ${CONV_API:+--conv-api "$CONV_API"} | head -1
done
du -sh "$out"
