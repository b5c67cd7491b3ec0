#!/usr/bin/env bash
# Generates the zoc folders a benchmark-harness sweep needs (tools/harness/plan.py lists them),
# on this CPU machine: zoc builds only here, and the input resolution is fixed at compile time,
# so the resolution sweep needs one folder per resolution and precision. The result is a small
# git-ignored folder (about 300 KB per model folder) that travels to the GPU machine with the
# device tool's `carry`, where tools/harness/run.sh builds and measures it.
#
# A model with a YAML description (models/<model>.yaml: ResNet-50, LeNet) is compiled from it;
# the zoo's torchvision models (MobileNetV2, EfficientNet-B0) have none and go through zoc's
# TorchScript route, as tests/gpu/prepare_zoo_check.sh does: models/script_zoo.sh scripts the
# network with Debian's torch into <model>.pt (the generated class and binary are named after
# the file: <model>_main), and zoc compiles it with the input shape given. The weights the
# archive holds do not matter: the generated code reads weights.safetensors at run time, which
# run.sh exports on the GPU machine. The seg sweep's segmentation networks (DeepLabV3-MobileNetV3-
# Large, FCN-ResNet50) are traced instead (models/export.py --torchscript trace, at the sweep's
# resolution, as a trace may record sizes): scripted, they build their output dict with
# aten::_set_item, which zoc's TorchScript frontend refuses (docs/corpus.md), where their traces
# pass zoc's interpreter. zoc compiles them for the cuDNN target only with its upsampling,
# transposed-convolution and dict-output support (issue 37); where that is missing this script
# says so and stops.
#
# zoc is built (or brought up to date) in its own folder, build-harness/, so that the runtime
# headers it embeds into every generated folder (runtime/zoc/runner/main_harness.h among them) are the
# current ones; ZOC=/path/to/zoc uses another binary instead. GEN_DIR is emptied first; zoc
# writes each folder atomically, and any failure stops this script with a non-zero status.
# ZOC_COMPILE_FLAGS adds options to every `zoc compile` (e.g. "--conv-api legacy": rows then
# measure that API, under the same row names).
#
# Usage: tools/harness/prepare.sh [MODE] [GEN_DIR]   (default: quick, harness_gen; MODE is any
#        mode of tools/harness/plan.py: quick, full, a part such as batch-zoc, zoo, or seg)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-quick}
out=${2:-harness_gen}
cd "$repo"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
folders=$("$py" tools/harness/plan.py folders "$mode")  # fails on an unknown mode
seg_models=" $("$py" tools/harness/plan.py seg-models) "

if [ -z "${ZOC:-}" ]; then
  build=build-harness
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S . -B "$build" -G Ninja -DZOC_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  nice ninja -C "$build" zoc
  ZOC=$build/compiler/zoc
fi

rm -rf "$out"
mkdir -p "$out"
scripted=$(mktemp -d)
trap 'rm -rf "$scripted"' EXIT
count=0
while read -r name model res prec; do  # each folder is written atomically by zoc
  [ -n "$name" ] || continue
  if [ -f "models/$model.yaml" ]; then
    src=(models/"$model".yaml --set resolution="$res")
  elif [[ "$seg_models" == *" $model "* ]]; then  # traced here at the sweep's resolution
    pt=$scripted/r$res/$model.pt
    if [ ! -f "$pt" ]; then
      "$py" models/export.py --model "$model" --resolution "$res" --batch 1 --torchscript trace \
        --out "$scripted/r$res/export_$model" | tail -1
      cp "$scripted/r$res/export_$model/model_traced.pt" "$pt"
    fi
    src=("$pt" --input "3x${res}x${res}")
  else  # the zoo: TorchScript scripted here by Debian's torch
    [ -f "$scripted/$model.pt" ] || models/script_zoo.sh "$model" "$scripted/$model.pt"
    src=("$scripted/$model.pt" --input "3x${res}x${res}")
  fi
  # shellcheck disable=SC2086  # ZOC_COMPILE_FLAGS: extra zoc compile options, word-split
  if ! log=$("$ZOC" compile "${src[@]}" -o "$out/$name" --precision "$prec" \
      ${ZOC_COMPILE_FLAGS:-} 2>&1); then
    echo "$log" >&2
    if [[ "$seg_models" == *" $model "* ]]; then
      echo "prepare: zoc ($ZOC) refused the segmentation network $model for $name (above)." \
           "The seg sweep needs zoc's cuDNN backend to compile upsampling, transposed" \
           "convolution and dict outputs (issue 37, branch seg-backend); build a zoc that" \
           "has them (ZOC=/path/to/zoc) and run prepare.sh again." >&2
    fi
    exit 1
  fi
  echo "${log%%$'\n'*}"
  count=$((count + 1))
done <<<"$folders"
echo "prepare: $count folders for '$mode' in $out ($(du -sh "$out" | cut -f1)); pass it to the" \
     "device tool with carry [\"$out\"] and run: tools/harness/run.sh $mode $out"
