#!/usr/bin/env bash
# Issue 35's accuracy check of int8 on a trained network, on the CPU reference interpreter (whose
# int8 convolution is the GPU's semantics, docs/int8.md): the Fashion-MNIST ResNet-50 of
# tools/int8/train_fashion_resnet50.sh, calibrated on 512 training images (a seeded choice),
# evaluated on the 10,000 test images in fp32 and in int8 with each calibration method.
# Writes OUT_DIR/accuracy.csv (model, precision, test_acc, top1_agree: agreement with fp32's
# top-1, per image) and the logs.
# Usage: tools/int8/eval_fashion_int8.sh ZOC WEIGHTS DATA_DIR OUT_DIR [METHODS] [JOBS] [IMAGES]
#   METHODS: default "entropy percentile max"; METHOD@E also keeps the convolutions float that
#     `zoc calibrate --max-error E` chooses (a mixed plan), row "int8-METHOD-maxerr-E";
#   JOBS: parallel interpreter runs (default: nproc);
#   IMAGES: test images (default 10000; fewer for a quick look).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
zoc=$1 weights=$2 data=$3 out=$4 methods=${5:-entropy percentile max} jobs=${6:-$(nproc)}
images=${7:-10000}
py=${ZOC_PYTHON:-/usr/bin/python3}
model=(models/resnet50.yaml --set in_channels=1 --set resolution=28 --set num_classes=10)
mkdir -p "$out/calib" "$out/test" "$out/y"
cd "$ROOT"
"$py" - "$data" "$out" "$images" <<'PY'
import sys
sys.path.insert(0, "tools/train")
import numpy as np
import idx_data
data, out, images = sys.argv[1], sys.argv[2], int(sys.argv[3])
train_x, _ = idx_data.read_split(data, "train")
test_x, test_y = idx_data.read_split(data, "test")
pick = np.random.default_rng(35).permutation(len(train_x))[:512]  # 512 calibration images
np.save(f"{out}/calib/train512.npy", idx_data.normalize(train_x[pick]))
x = idx_data.normalize(test_x[:images])
for k, at in enumerate(range(0, len(x), 250)):
    np.save(f"{out}/test/{k:03d}.npy", x[at:at + 250])
np.save(f"{out}/labels.npy", test_y[:images].astype(np.int64))
PY
tag_of() { case $1 in *@*) echo "${1%@*}-maxerr-${1#*@}" ;; *) echo "$1" ;; esac; }
tags=
for m in $methods; do
  flags=(--method "${m%@*}")
  case $m in *@*) flags+=(--max-error "${m#*@}") ;; esac
  t=$(tag_of "$m")
  tags="$tags $t"
  "$zoc" calibrate "${model[@]}" --weights "$weights" --samples "$out/calib" "${flags[@]}" \
    -o "$out/scales_$t.safetensors" >"$out/calibrate_$t.log" 2>&1 &
  while [ "$(jobs -r | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
# One interpreter run per shard and precision, `jobs` at a time.
run() {  # shard tag [zoc run options]
  local shard=$1 tag=$2; shift 2
  "$zoc" run "${model[@]}" --weights "$weights" --input "$shard" --optimize "$@" --top 1 \
    --output "$out/y/${tag}_$(basename "$shard")" >/dev/null 2>>"$out/run_$tag.log"
}
for shard in "$out"/test/*.npy; do
  run "$shard" fp32 &
  while [ "$(jobs -r | wc -l)" -ge "$jobs" ]; do wait -n; done
  for m in $tags; do
    run "$shard" "int8_$m" --int8-scales "$out/scales_$m.safetensors" &
    while [ "$(jobs -r | wc -l)" -ge "$jobs" ]; do wait -n; done
  done
done
wait
"$py" - "$out" $tags <<'PY'
import glob, os, sys
import numpy as np
out, methods = sys.argv[1], sys.argv[2:]
labels = np.load(f"{out}/labels.npy")
def logits(tag):
    files = sorted(glob.glob(f"{out}/y/{tag}_*.npy"))
    return np.concatenate([np.load(f) for f in files])
fp32 = logits("fp32").argmax(1)
rows = [("resnet50_fmnist", "fp32", float(np.mean(fp32 == labels)), 1.0)]
for m in methods:
    top1 = logits(f"int8_{m}").argmax(1)
    rows.append(("resnet50_fmnist", f"int8-{m}", float(np.mean(top1 == labels)),
                 float(np.mean(top1 == fp32))))
with open(f"{out}/accuracy.csv", "w") as f:
    f.write("model,precision,test_acc,top1_agree\n")
    for r in rows:
        f.write(f"{r[0]},{r[1]},{r[2]:.4f},{r[3]:.4f}\n")
print(open(f"{out}/accuracy.csv").read(), end="")
print(f"{len(labels)} test images")
PY
