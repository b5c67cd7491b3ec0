#!/usr/bin/env bash
# Checkpoint and resume of zoc's generated trainer on the GPU machine: LeNet (with dropout),
# constant learning rate, K steps per epoch, deterministic convolution algorithms: 2 epochs
# straight, the same again, and 1 epoch + --resume for the second; the three final weights must
# be bit-identical; then the resumed checkpoint loaded by PyTorch's load_state_dict. Then a run of 3
# epochs killed (SIGKILL) as it writes epoch 2's checkpoint, resumed from whatever pair survived,
# must end bit-identical to 3 epochs straight (issue 17). The straight, again and resumed runs
# are made with SGD and with AdamW (--lr 1e-3, its defaults otherwise: the checkpoint carries both
# moments and the step count). Reuses the build and raw data of tools/train/gpu_train.sh (run it
# first with the same TRAIN_WORK).
# Usage: tests/train/gpu_resume_check.sh [STEPS]   (environment: TRAIN_WORK, OUT)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=${TRAIN_WORK:-/tmp/zoc_train} OUT=${OUT:-$ROOT/train_out} K=${1:-100}
BIN=$W/zoc_build/lenet_train_main
. "$ROOT/tools/gpu_env.sh"
gpu_env "${TRAIN_PYTHON:-}"
mkdir -p "$OUT"
common=(--data "$W/data" --seed 3 --lr 0.05 --schedule constant --max-steps "$K" --deterministic)
# straight_again_resumed PREFIX OPTION...: 2 epochs straight, again, and 1 + --resume.
straight_again_resumed() {
  local p=$1; shift
  "$BIN" "${common[@]}" "$@" --epochs 2 --checkpoint "$W/${p}straight.safetensors" > "$OUT/resume_${p}straight.txt" 2>&1 &&
  "$BIN" "${common[@]}" "$@" --epochs 2 --checkpoint "$W/${p}again.safetensors" > "$OUT/resume_${p}again.txt" 2>&1 &&
  "$BIN" "${common[@]}" "$@" --epochs 1 --checkpoint "$W/${p}half.safetensors" > "$OUT/resume_${p}half.txt" 2>&1 &&
  "$BIN" "${common[@]}" "$@" --epochs 2 --resume "$W/${p}half.safetensors" --checkpoint "$W/${p}resumed.safetensors" \
    > "$OUT/resume_${p}resumed.txt" 2>&1 || { echo "resume check ($p): a run failed"; tail -n 3 "$OUT"/resume_${p}*.txt; exit 1; }
}
straight_again_resumed ""
straight_again_resumed adamw_ --optimizer adamw --lr 1e-3
# Killed while checkpointing: the log line of epoch 2 is printed just before its checkpoint is
# written, so a kill as soon as it appears lands in (or right before) that write.
"$BIN" "${common[@]}" --epochs 3 --checkpoint "$W/straight3.safetensors" > "$OUT/resume_straight3.txt" 2>&1
"$BIN" "${common[@]}" --epochs 3 --checkpoint "$W/killed.safetensors" > "$OUT/resume_killed.txt" 2>&1 &
victim=$!
until grep -q '"epoch": 2,' "$OUT/resume_killed.txt" 2>/dev/null || ! kill -0 $victim 2>/dev/null; do
  sleep 0.005
done
kill -9 $victim 2>/dev/null
wait $victim 2>/dev/null
echo "killed run: left $(ls "$W" | grep -c '^killed') files: $(cd "$W" && ls killed* | tr '\n' ' ')"
"$BIN" "${common[@]}" --epochs 3 --resume "$W/killed.safetensors" --checkpoint "$W/killed_resumed.safetensors" \
  > "$OUT/resume_killed_resumed.txt" 2>&1 || { echo "resume after the kill failed:"; tail -n 3 "$OUT/resume_killed_resumed.txt"; exit 1; }
echo "resumed after the kill from epoch $(grep -o '"epoch": [0-9]*' "$OUT/resume_killed_resumed.txt" | head -1 | grep -o '[0-9]*$')"
echo "epoch 2, straight: $(tail -n 1 "$OUT/resume_straight.txt")"
echo "epoch 2, again:    $(tail -n 1 "$OUT/resume_again.txt")"
echo "epoch 2, resumed:  $(tail -n 1 "$OUT/resume_resumed.txt")"
echo "epoch 2, AdamW, resumed: $(tail -n 1 "$OUT/resume_adamw_resumed.txt")"
# The same run twice bounds what nondeterministic cuDNN/cuBLAS reductions alone change.
"$PY" - "$W/straight.safetensors" "$W/resumed.safetensors" "$ROOT/tools/train" "$W/again.safetensors" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[3])
import numpy as np
import nets
import safetensors_io
def diff(x, y, what):
    a, b = safetensors_io.load_file(x)[0], safetensors_io.load_file(y)[0]
    rel = {k: float(np.linalg.norm(a[k].astype(np.float64) - b[k]) /
                    (np.linalg.norm(a[k].astype(np.float64)) + 1e-30)) for k in a}
    print("weights after 2 epochs, %s: %s" % (what, ", ".join("%s %.3g" % kv for kv in sorted(rel.items()))))
    same = all(np.array_equal(a[k], b[k]) for k in a)
    print("  bit-identical: %s" % ("yes" if same else "NO"))
    return same
ok = diff(sys.argv[1], sys.argv[4], "straight vs the same run again (relative L2)")
ok = diff(sys.argv[1], sys.argv[2], "straight vs resumed (relative L2)") and ok
w = sys.argv[1].rsplit("/", 1)[0]
ok = diff(w + "/straight3.safetensors", w + "/killed_resumed.safetensors",
          "3 epochs straight vs killed while checkpointing and resumed") and ok
ok = diff(w + "/adamw_straight.safetensors", w + "/adamw_again.safetensors",
          "AdamW, straight vs the same run again") and ok
ok = diff(w + "/adamw_straight.safetensors", w + "/adamw_resumed.safetensors",
          "AdamW, straight vs resumed") and ok
n = nets.build("lenet"); nets.load(n, sys.argv[2]); print("resumed checkpoint loads into PyTorch")
sys.exit(0 if ok else 1)
PYEOF
status=$?
# The checkpoint in zoc's inference code: generated/lenet (fp32) on 256 test images, against
# PyTorch's evaluation-mode forward of the same checkpoint.
if cmake -S "$ROOT/generated/lenet" -B "$W/lenet_infer" "${GPU_CMAKE_ARGS[@]}" \
     > "$OUT/infer_build.log" 2>&1 &&
   cmake --build "$W/lenet_infer" -j 16 >> "$OUT/infer_build.log" 2>&1; then
  "$PY" - "$W" "$ROOT" <<'PYEOF'
import subprocess, sys
sys.path.insert(0, sys.argv[2] + "/tools/train")
import numpy as np, torch, idx_data, nets
w = sys.argv[1]
px, labels = idx_data.read_split(w + "/data", "test")
x = idx_data.normalize(px[:256])
np.save(w + "/x.npy", x)
subprocess.run([w + "/lenet_infer/lenet_main", "--weights", w + "/resumed.safetensors", "--input",
                w + "/x.npy", "--batch", "256", "--output", w + "/y.npy", "--iters", "0"],
               check=True, stdout=subprocess.DEVNULL)
y = np.load(w + "/y.npy").astype(np.float64)
net = nets.build("lenet"); nets.load(net, w + "/resumed.safetensors"); net.eval()
with torch.no_grad():
    ref = net(torch.from_numpy(x)).double().numpy()
err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
agree = (y.argmax(1) == ref.argmax(1)).mean()
print("zoc inference (generated/lenet) on the resumed checkpoint vs PyTorch: relative L2 %.2e, "
      "top-1 agreement %.4f, accuracy %.4f" % (err, agree, (y.argmax(1) == labels[:256]).mean()))
sys.exit(0 if err < 1e-4 else 1)
PYEOF
  status=$((status | $?))
else
  echo "generated/lenet did not build (infer_build.log)"; status=1
fi
exit $status
