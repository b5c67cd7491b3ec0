#!/usr/bin/env bash
# Generates the trainers the GPU trainer check needs into train_check/ (git-ignored; it travels to
# the GPU machine with the device tool's carry): LeNet, and ResNet-50 with 1 input channel, 10
# classes at 28x28 (issue 8's configuration). Usage: tools/prepare_train_check.sh [ZOC_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")
rm -rf "$repo/train_check" && mkdir -p "$repo/train_check"
cd "$repo"
"$zoc" compile models/lenet.yaml --train -o train_check/lenet | head -1
"$zoc" compile models/resnet50.yaml --set num_classes=10 --set in_channels=1 --set resolution=28 \
  --train -o train_check/resnet50 | head -1
du -sh train_check
