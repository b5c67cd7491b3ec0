#!/usr/bin/env bash
# Prepares everything the GPU training runs of issue 8 need into train_check/ (git-ignored; it
# travels to the GPU machine with the device tool's carry):
#   train_check/lenet, train_check/resnet50  the generated trainers: LeNet, and ResNet-50 with 1
#                                             input channel, 10 classes at 28x28 (the issue's)
#   train_check/fmnist                        Debian's dataset-fashion-mnist (.gz idx files, 30 MB;
#                                             installed with tools/setup.sh when missing)
# Then on the GPU machine: tests/train/gpu_train_check.sh train_check (one step against autograd)
# and tools/train/gpu_train.sh train_check/fmnist MODEL EPOCHS SEEDS (training against the baselines).
# Usage: tests/train/prepare_train_check.sh [ZOC_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")
"$repo/tools/setup.sh" dataset-fashion-mnist
rm -rf "$repo/train_check" && mkdir -p "$repo/train_check/fmnist"
cd "$repo"
"$zoc" compile models/lenet.yaml --train -o train_check/lenet | head -1
"$zoc" compile models/resnet50.yaml --set num_classes=10 --set in_channels=1 --set resolution=28 \
  --train -o train_check/resnet50 | head -1
cp /usr/share/datasets/fashion-mnist/*-ubyte.gz train_check/fmnist/
du -sh train_check
