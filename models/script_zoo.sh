#!/usr/bin/env bash
# Writes a TorchScript file of one of the CNN zoo's torchvision classifiers (models/zoo.py),
# scripted by this machine's torch (Debian's 1.13), for zoc's TorchScript route: the GPU zoo
# check (tests/gpu/prepare_zoo_check.sh) and the harness (tools/harness/prepare.sh) compile it.
# The file is the same at any resolution; the export's own check runs at the smallest size the
# model takes (64x64; Inception v3's stem needs at least 75x75: 96x96). The generated class and
# binary are named after OUT.pt's stem, so name it after the model.
# Usage: models/script_zoo.sh MODEL OUT.pt
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 MODEL OUT.pt" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
res=64; [ "$1" = inception_v3 ] && res=96
"$py" "$repo/models/export.py" --model "$1" --resolution $res --batch 1 --torchscript script \
  --out "$scratch/out" | tail -1
cp "$scratch/out/model.pt" "$2"
