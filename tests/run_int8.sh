#!/usr/bin/env bash
# INT8 on the reference interpreter from the command line (issue 35): `zoc calibrate` writes a
# scale per convolution input of ResNet-18 (at 32x32) with each method, `zoc run --int8-scales`
# prints the mixed plan and stays close to fp32, and `zoc ir --int8-scales` shows the int8
# attributes and quantize layers; `zoc calibrate --max-error` keeps the convolutions it measures
# most sensitive float. Refused, with a message and no output: a scales file of
# another model, a weights file as a scales file, int8 with a GPU target, an unknown method.
# Usage: tests/run_int8.sh ZOC SCRATCH [PYTHON with numpy]
set -uo pipefail
zoc=$1 scratch=$2 py=${3:-/usr/bin/python3}
rm -rf "$scratch" && mkdir -p "$scratch/calib"
fail=0
model=models/resnet18.yaml
set_args=(--set resolution=32 --set num_classes=10)
"$py" - "$scratch" <<'PY' || { echo "cannot write the samples"; exit 1; }
import sys, numpy as np
rng = np.random.default_rng(5)
for k in range(2):
    np.save(f"{sys.argv[1]}/calib/{k}.npy", rng.standard_normal((3, 3, 32, 32), dtype=np.float32))
np.save(f"{sys.argv[1]}/eval.npy", rng.standard_normal((4, 3, 32, 32), dtype=np.float32))
PY
for method in max percentile entropy; do
  "$zoc" calibrate $model "${set_args[@]}" --samples "$scratch/calib" --method $method \
    -o "$scratch/$method.safetensors" >"$scratch/cal_$method.out" 2>&1 ||
    { echo "calibrate --method $method failed:"; cat "$scratch/cal_$method.out"; fail=1; }
  # The values convolutions read: the model input, the stem's pooled output, each block's first
  # convolution's output (8) and output (7 read by the next block), the 3 downsamples' outputs.
  grep -qF "wrote $scratch/$method.safetensors: 20 scales ($method" "$scratch/cal_$method.out" ||
    { echo "calibrate --method $method: unexpected summary:"; cat "$scratch/cal_$method.out"; fail=1; }
done
"$zoc" run $model "${set_args[@]}" --input "$scratch/eval.npy" --optimize \
  --output "$scratch/fp32.npy" >/dev/null || { echo "fp32 run failed"; fail=1; }
for method in max entropy; do
  "$zoc" run $model "${set_args[@]}" --input "$scratch/eval.npy" \
    --int8-scales "$scratch/$method.safetensors" --output "$scratch/int8_$method.npy" \
    >"$scratch/run_$method.out" 2>"$scratch/run_$method.err" ||
    { echo "int8 run ($method) failed:"; cat "$scratch/run_$method.err"; fail=1; }
  grep -qF "int8 plan: 19 of 20 convolutions int8 (18 with an int8 output), 1 quantize layer" "$scratch/run_$method.err" &&
    grep -qF "float: conv1 (reads the model input)" "$scratch/run_$method.err" ||
    { echo "int8 run ($method): no plan printed:"; cat "$scratch/run_$method.err"; fail=1; }
  "$py" - "$scratch/fp32.npy" "$scratch/int8_$method.npy" <<'PY' || fail=1
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
rel = float(np.linalg.norm(b - a) / np.linalg.norm(a))
print(f"{sys.argv[2]}: relative L2 error against fp32 {rel:.4f}")
sys.exit(0 if 0 < rel < 0.1 else 1)  # 0.025-0.03 measured
PY
done
"$zoc" ir $model "${set_args[@]}" --int8-scales "$scratch/max.safetensors" --no-locations \
  >"$scratch/ir.txt" 2>/dev/null || { echo "zoc ir --int8-scales failed"; fail=1; }
grep -qE '%maxpool.quantize = quantize\(%maxpool\) \{scale=0\.0' "$scratch/ir.txt" &&
  grep -qE '^ *%layer1.0.conv2 = fused_conv2d\(%layer1.0.conv1, %maxpool.quantize\) .*int8_in=.*int8_res=.*int8_out=' "$scratch/ir.txt" ||
  { echo "zoc ir --int8-scales: no quantize layer or int8 attribute:"; head -20 "$scratch/ir.txt"; fail=1; }

# The measured mixed plan: --max-error keeps the most sensitive convolutions float (a tiny
# bound: at least one), written in the scales file and kept float by zoc run, which says why.
# Two sensitivity images (the samples have 6): the same search on a third of the runs (this command
# was most of the script's time under the sanitizers).
# The model after --samples is the positional model, not a second sample.
"$zoc" calibrate --samples "$scratch/calib" $model "${set_args[@]}" --method max --max-error 0.001 \
  --sensitivity-images 2 -o "$scratch/mixed.safetensors" >"$scratch/cal_mixed.out" 2>&1 ||
  { echo "calibrate --max-error failed:"; cat "$scratch/cal_mixed.out"; fail=1; }
kept=$(sed -n 's/^kept float: \([0-9]*\) of 19 .*/\1/p' "$scratch/cal_mixed.out")
chosen=$(sed -n 's/^kept float: .*, error \([0-9.]*\) (at most 0.001)$/\1/p' "$scratch/cal_mixed.out")
"$py" -c "import sys; sys.exit(0 if float('${chosen:-nan}') <= 0.001 else 1)" ||
  { echo "calibrate --max-error: the chosen plan's error '${chosen}' is not <= 0.001"; fail=1; }
grep -qF "sensitivity on 2 images" "$scratch/cal_mixed.out" && [ "${kept:-0}" -ge 1 ] ||
  { echo "calibrate --max-error: no sensitivity or float layer:"; cat "$scratch/cal_mixed.out"; fail=1; }
"$zoc" run $model "${set_args[@]}" --input "$scratch/eval.npy" \
  --int8-scales "$scratch/mixed.safetensors" >/dev/null 2>"$scratch/run_mixed.err" ||
  { echo "int8 run (mixed) failed:"; cat "$scratch/run_mixed.err"; fail=1; }
[ "$(grep -c "(calibration measured it sensitive (--max-error))" "$scratch/run_mixed.err")" = \
  "${kept:-x}" ] || { echo "int8 run (mixed): not $kept layers kept float:"; cat "$scratch/run_mixed.err"; fail=1; }

# A QDQ model onnxruntime's quantize_static wrote (tools/int8/make_qdq_models.py): zoc runs it
# in int8 with the model's own scales, near onnxruntime's own int8 execution and its fp32.
qdq=tests/onnx/qdq/small_resnet
"$zoc" run ${qdq}_qdq.onnx --input ${qdq}_x.npy --output "$scratch/qdq.npy" >/dev/null \
  2>"$scratch/qdq.err" || { echo "the QDQ model did not run:"; cat "$scratch/qdq.err"; fail=1; }
grep -qF "int8 plan: 7 of 8 convolutions int8 (6 with an int8 output), 1 quantize layer" \
  "$scratch/qdq.err" || { echo "the QDQ model: unexpected plan:"; cat "$scratch/qdq.err"; fail=1; }
"$py" - "$scratch/qdq.npy" ${qdq}_ort_qdq.npy ${qdq}_fp32.npy <<'PY' || fail=1
import sys, numpy as np
zoc, ort_q, ort_f = (np.load(f) for f in sys.argv[1:])
rel = lambda a, b: float(np.linalg.norm(a - b) / np.linalg.norm(b))
agree = float(np.mean(zoc.argmax(1) == ort_q.argmax(1)))
print(f"QDQ model: zoc int8 vs onnxruntime int8 {rel(zoc, ort_q):.4f}, vs fp32 {rel(zoc, ort_f):.4f}"
      f" (onnxruntime int8 vs fp32 {rel(ort_q, ort_f):.4f}); top-1 agreement {agree:.3f}")
sys.exit(0 if 0 < rel(zoc, ort_q) < 0.02 and rel(zoc, ort_f) < 0.03 and agree == 1.0 else 1)
PY

refused() {  # expected-message command...
  local want=$1; shift
  if "$@" >"$scratch/refused.out" 2>"$scratch/refused.err"; then
    echo "accepted: $*"; fail=1; return
  fi
  [ ! -s "$scratch/refused.out" ] || { echo "wrote to stdout: $*"; fail=1; }
  grep -qF -- "$want" "$scratch/refused.err" || { echo "'$*' did not say '$want':"; cat "$scratch/refused.err"; fail=1; }
}
refused "no int8 scale for %layer1.2.conv1, which int8 layer 'layer1.2.conv2' reads, nor for 15 other values" \
  "$zoc" run models/resnet34.yaml "${set_args[@]}" --int8-scales "$scratch/max.safetensors"
"$zoc" init-weights $model "${set_args[@]}" -o "$scratch/w.safetensors" >/dev/null
refused "not an int8 scales file" \
  "$zoc" run $model "${set_args[@]}" --int8-scales "$scratch/w.safetensors"
refused "an int8 graph runs on the reference interpreter only" \
  "$zoc" ir $model "${set_args[@]}" --int8-scales "$scratch/max.safetensors" --precision fp16
refused "--method: kl not in" \
  "$zoc" calibrate $model --samples "$scratch/calib" --method kl -o "$scratch/kl.safetensors"
[ ! -e "$scratch/kl.safetensors" ] || { echo "a refused calibrate wrote its output"; fail=1; }
refused "--max-error: Value -1 not in range" \
  "$zoc" calibrate $model --samples "$scratch/calib" --max-error -1 -o "$scratch/neg.safetensors"
refused "--sensitivity-images requires --max-error" \
  "$zoc" calibrate $model --samples "$scratch/calib" --sensitivity-images 8 -o "$scratch/s.safetensors"

[ $fail -eq 0 ] && echo "int8: calibrate, run and ir behave"
exit $fail
