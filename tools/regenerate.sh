#!/usr/bin/env bash
# Regenerates the checked-in generated/ folders, or with --check proves they are up to date:
# the same commands run in a scratch folder (so the command stamped in each file is the same)
# and any byte difference fails.  Usage: tools/regenerate.sh [--check] [ZOC_BINARY]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")

# model, precision -> generated/<name>
targets=(
  "resnet50 fp16"
  "lenet fp32"
)

generate() {  # into $1 (a folder holding models/ or a link to it)
  local root=$1
  for t in "${targets[@]}"; do
    set -- $t
    (cd "$root" && "$zoc" compile "models/$1.yaml" -o "generated/$1" --precision "$2" >/dev/null)
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
  if ! diff -r "$repo/generated/$1" "$scratch/generated/$1" >"$scratch/diff.txt"; then
    echo "generated/$1 is stale (run tools/regenerate.sh):"
    head -40 "$scratch/diff.txt"
    status=1
  fi
done
[ $status -eq 0 ] && echo "generated/ is up to date (${#targets[@]} folders, byte-identical)"
exit $status
