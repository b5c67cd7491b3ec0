#!/usr/bin/env bash
# Regenerates the checked-in generated/ folders, or with --check proves they are up to date:
# the same commands run in a scratch folder (so the command stamped in each file is the same)
# and any byte difference fails.  Usage: tools/dev/regenerate.sh [--check] [ZOC_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")

# folder under generated/, model, precision, more zoc compile options
targets=(
  "resnet50 resnet50 fp16"
  "lenet lenet fp32"
  "lenet_train lenet fp32 --train"
)

generate() {  # into $1 (a folder holding models/ or a link to it)
  local root=$1
  for t in "${targets[@]}"; do
    set -- $t
    local dir=$1 model=$2 precision=$3
    shift 3
    (cd "$root" && "$zoc" compile "models/$model.yaml" -o "generated/$dir" --precision "$precision" \
       "$@" >/dev/null)
  done
}

if [ $check -eq 0 ]; then
  generate "$repo"
  echo "regenerated: ${targets[*]}"
  exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ln -s "$repo/models" "$scratch/models"
mkdir "$scratch/generated"
generate "$scratch"
status=0
for t in "${targets[@]}"; do
  set -- $t
  if [ ! -d "$repo/generated/$1" ] ||
     ! diff -r "$repo/generated/$1" "$scratch/generated/$1" >"$scratch/diff.txt"; then
    echo "generated/$1 is stale (run tools/dev/regenerate.sh):"
    head -40 "$scratch/diff.txt"
    status=1
  fi
done
[ $status -eq 0 ] && echo "generated/ is up to date (${#targets[@]} folders, byte-identical)"
exit $status
