#!/usr/bin/env bash
# The README's main command: set up, build zoc, compile ResNet-50 to C++/cuDNN, build the
# generated code, and run it if this machine has a GPU; otherwise show the reference result.
#
# The reference result is the same seeded torchvision weights and input run through PyTorch
# (Debian's CPU build) and through zoc's reference interpreter on the optimized graph, with
# the difference printed. Environment: PRECISION (fp16), RESOLUTION (224), BATCH (2).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cmake -S . -B build-main -G Ninja -DZOC_BUILD_TESTS=OFF >/dev/null
cmake --build build-main --target zoc -j "$(nproc)"
zoc=build-main/compiler/zoc
precision=${PRECISION:-fp16}
res=${RESOLUTION:-224}
batch=${BATCH:-2}

echo "== zoc compile models/resnet50.yaml --precision $precision"
$zoc ir models/resnet50.yaml --optimize --no-locations | tail -1
gen=build-main/resnet50_$precision
$zoc compile models/resnet50.yaml -o "$gen" --precision "$precision" --set resolution="$res"

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -x "$cuda/bin/nvcc" ]; then
  echo "== building the generated code with $cuda/bin/nvcc"
  cmake -S "$gen" -B "$gen-build" -G Ninja -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
        -DCUDNN_ROOT="${CUDNN_ROOT:-$cuda}" >/dev/null
  cmake --build "$gen-build" -j "$(nproc)"
else
  echo "== no CUDA toolkit at $cuda: skipping the build of the generated code"
fi

data=build-main/data/resnet50_$res
echo "== PyTorch reference (torchvision ResNet-50, seeded weights, batch $batch, ${res}x${res})"
/usr/bin/python3 models/export.py --model resnet50 --resolution "$res" --batch "$batch" --seed 0 \
  --torchscript none --out "$data"

if [ -x "$gen-build/resnet50_main" ] && nvidia-smi >/dev/null 2>&1; then
  echo "== the generated ResNet-50 on the GPU ($precision)"
  "$gen-build/resnet50_main" --weights "$data/weights.safetensors" --input "$data/input.npy" \
    --batch "$batch" --output "$data/zoc_output.npy" --graph
else
  echo "== no GPU here: the reference result (zoc's CPU interpreter on the optimized graph)"
  $zoc run models/resnet50.yaml --optimize --set resolution="$res" \
    --weights "$data/weights.safetensors" --strict --input "$data/input.npy" \
    --output "$data/zoc_output.npy"
fi
/usr/bin/python3 - "$data" "$precision" <<'PY'
import sys, numpy as np
d, precision = sys.argv[1], sys.argv[2]
ref, out = np.load(f"{d}/output.npy"), np.load(f"{d}/zoc_output.npy")
rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
print(f"PyTorch top-1 {ref.argmax(1).tolist()}  zoc top-1 {out.argmax(1).tolist()}")
print(f"relative L2 error {rel:.2e}, max abs error {np.abs(out - ref).max():.2e}")
PY
