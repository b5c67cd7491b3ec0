#!/usr/bin/env bash
# The CTest fixture of the dynamo samples: unpacks every model folder of SRC (tests/onnx/dynamo)
# into DST as the corpus layout tools/corpus/check_corpus.py reads (meta.json, output.npy and the
# route files, decompressed). Usage: unpack.sh SRC DST
set -euo pipefail
src=${1:?usage: unpack.sh SRC DST}
dst=${2:?usage: unpack.sh SRC DST}
rm -rf "${dst:?}"
for dir in "$src"/*/; do
  m=$(basename "$dir")
  mkdir -p "$dst/$m"
  cp "$dir/meta.json" "$dir"/output*.npy "$dst/$m/"
  for f in "$dir"/*.xz; do xz -dc "$f" > "$dst/$m/$(basename "$f" .xz)"; done
done
echo "unpacked $(ls "$dst" | wc -l) models into $dst"
