#!/usr/bin/env bash
# One planted-violation test of zoc-verify. Usage: run_case.sh ZOC_VERIFY CASE [options...]
# CASE is a .cpp file or a folder. Its `// expect: LINE:COL RULE` lines (in the file, or in any
# file of the folder, with that file's name) must be exactly the findings zoc-verify prints,
# and every `// expect-output: TEXT` line must appear verbatim in its output. The exit code
# must be 1 when findings are expected and 0 when none are.
set -uo pipefail
tool=$1 case=$2
shift 2

if [ -d "$case" ]; then files=("$case"/*.cpp "$case"/*.h); else files=("$case"); fi
expected=$(for f in "${files[@]}"; do
  sed -n 's|^// expect: \([0-9]*:[0-9]* [a-z-]*\)$|\1|p' "$f" | sed "s|^|$(basename "$f"):|"
done | sort)

output=$("$tool" "$@" "$case")
status=$?
actual=$(printf '%s\n' "$output" |
  sed -n 's|^\(.*\):\([0-9]*\):\([0-9]*\): error: \[\([a-z-]*\)\].*|\1 \2:\3 \4|p' |
  while read -r path position rule; do echo "$(basename "$path"):$position $rule"; done | sort)

fail=0
if [ "$expected" != "$actual" ]; then
  echo "FAIL: findings differ from the // expect: lines of $case"
  diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") | sed 's/^</  expected but missing:/; s/^>/  reported but unexpected:/' | grep expected\\\|reported
  fail=1
fi
want_status=0
[ -n "$expected" ] && want_status=1
if [ "$status" -ne "$want_status" ]; then
  echo "FAIL: exit code $status, expected $want_status"
  fail=1
fi
for f in "${files[@]}"; do
  while IFS= read -r text; do
    if ! grep -qF -- "$text" <<<"$output"; then
      echo "FAIL: output lacks the text of an // expect-output: line of $(basename "$f"): $text"
      fail=1
    fi
  done < <(sed -n 's|^// expect-output: ||p' "$f")
done
if [ $fail -ne 0 ]; then
  echo "--- zoc-verify output:"
  printf '%s\n' "$output"
  exit 1
fi
echo "ok: $case: $(printf '%s' "$expected" | grep -c .) finding(s), as expected"
