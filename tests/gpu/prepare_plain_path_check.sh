#!/usr/bin/env bash
# Generates the folders tests/gpu/plain_path_check.sh measures into plain_check/ (git-ignored;
# it travels to the GPU machine with the device tool's `carry`): ResNet-50 in every precision
# with zoc's defaults, ResNet-50 fp16 through the legacy fused call (--conv-api legacy, the
# comparison), LeNet in fp32 and fp16, and a grouped-convolution network (torchvision's
# ResNeXt-50 32x4d, scripted here by Debian's torch) in fp16, whose grouped convolutions now
# go through the graph API too.
# Usage: tests/gpu/prepare_plain_path_check.sh [ZOC_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")
cd "$repo"
out=plain_check
rm -rf "$out" && mkdir -p "$out"
for p in fp32 tf32 fp16 bf16; do
  "$zoc" compile models/resnet50.yaml -o "$out/resnet50_$p" --precision "$p" | head -1
done
"$zoc" compile models/resnet50.yaml -o "$out/resnet50_fp16legacy" --precision fp16 \
  --conv-api legacy | head -1
for p in fp32 fp16; do
  "$zoc" compile models/lenet.yaml -o "$out/lenet_$p" --precision "$p" | head -1
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
models/script_zoo.sh resnext50_32x4d "$scratch/resnext50_32x4d.pt"
"$zoc" compile "$scratch/resnext50_32x4d.pt" --input 3x224x224 -o "$out/resnext50_32x4d_fp16" \
  --precision fp16 | head -1
du -sh "$out"
