#!/usr/bin/env bash
# The forms test (tests/forms/check_forms.py says what it judges): writes the forms with
# PyTorch into OUT, then runs zoc on each per route against tests/forms/expected.txt.
# Usage: run_forms.sh PYTHON ZOC OUT [make_forms.py arguments, e.g. --forms unet]
set -euo pipefail
python=$1 zoc=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
"$python" "$here/make_forms.py" --out "$out" "$@"
"$python" "$here/check_forms.py" --zoc "$zoc" --dir "$out" --expected "$here/expected.txt"
