#!/usr/bin/env bash
# `zoc run --output y.npy` writes each output of a model with several to y_<layer>.npy (a class
# map as float32 indices), and a model with one output to y.npy itself.
# Usage: tests/run_zoc_run_outputs.sh ZOC SCRATCH
set -uo pipefail
zoc=$1 scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch"
fail=0
cat >"$scratch/m.yaml" <<'YAML'
zoc: 1
input: {channels: 3, height: 6, width: 5}
layers:
  - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}
  - aux: {op: conv2d, out_channels: 2, kernel: 1, input: conv}
  - out: {op: upsample_nearest, scale_h: 2, scale_w: 2, input: conv}
  - classes: {op: argmax, input: out}
output: [out, aux, classes]
YAML
has_shape() {  # file shape
  [ -f "$1" ] || { echo "missing $1"; fail=1; return; }
  head -c 128 "$1" | grep -aqF "'shape': ($2)" || { echo "$1: not of shape ($2)"; fail=1; }
  head -c 128 "$1" | grep -aqF "'descr': '<f4'" || { echo "$1: not float32"; fail=1; }
}
"$zoc" run "$scratch/m.yaml" --batch 2 --output "$scratch/y.npy" >"$scratch/stdout" ||
  { echo "zoc run failed"; fail=1; }
has_shape "$scratch/y_out.npy" "2, 4, 12, 10"
has_shape "$scratch/y_aux.npy" "2, 2, 6, 5"
has_shape "$scratch/y_classes.npy" "2, 12, 10"
[ ! -e "$scratch/y.npy" ] || { echo "y.npy written for a model with several outputs"; fail=1; }
for line in "output 'out': Nx4x12x10 f32" "output 'aux': Nx2x6x5 f32" \
            "output 'classes': Nx12x10 i64"; do
  grep -qF "$line" "$scratch/stdout" || { echo "stdout lacks '$line'"; fail=1; }
done
sed -i -e 's/^output: .*/output: aux/' -e '/^  - out:/d' -e '/^  - classes:/d' "$scratch/m.yaml"
"$zoc" run "$scratch/m.yaml" --batch 2 --output "$scratch/y.npy" >/dev/null ||
  { echo "zoc run of one output failed"; fail=1; }
has_shape "$scratch/y.npy" "2, 2, 6, 5"
[ $fail -eq 0 ] && echo "zoc run wrote each output, named"
exit $fail
