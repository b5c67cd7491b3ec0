#!/usr/bin/env bash
# The README's main command: set up, build zoc, compile ResNet-50, and show the result.
#
# Today zoc's back half is the reference CPU interpreter (the cuDNN backend is issue 3), so
# "the result" is: the verified IR summary of ResNet-50, then the same seeded weights and input
# run through PyTorch (Debian's CPU build) and through zoc's interpreter, and the difference.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build-main -G Ninja -DZOC_BUILD_TESTS=OFF >/dev/null
cmake --build build-main --target zoc -j "$(nproc)"
zoc=build-main/compiler/zoc

echo "== zoc ir models/resnet50.yaml (summary)"
$zoc ir models/resnet50.yaml --no-locations | grep -E '^graph|%conv1 =|%fc =|^# '

res=${RESOLUTION:-224}
data=build-main/data/resnet50_$res
echo "== PyTorch reference (torchvision ResNet-50, seeded weights, batch 2, ${res}x${res})"
/usr/bin/python3 models/export.py --model resnet50 --resolution "$res" --batch 2 --seed 0 \
  --torchscript none --out "$data"
echo "== zoc reference interpreter on the same weights and input"
$zoc run models/resnet50.yaml --set resolution="$res" --weights "$data/weights.safetensors" \
  --strict --input "$data/input.npy" --output "$data/zoc_output.npy"
/usr/bin/python3 - "$data" <<'PY'
import sys, numpy as np
d = sys.argv[1]
ref, out = np.load(f"{d}/output.npy"), np.load(f"{d}/zoc_output.npy")
rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
print(f"PyTorch top-1 {ref.argmax(1).tolist()}  zoc top-1 {out.argmax(1).tolist()}")
print(f"relative L2 error {rel:.2e}, max abs error {np.abs(out - ref).max():.2e} (band: 1e-5)")
sys.exit(0 if rel <= 1e-5 else 1)
PY
