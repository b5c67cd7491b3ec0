#!/usr/bin/env bash
# Runs zoc's libFuzzer targets (tests/fuzz/README.md) for a set time each and keeps what they
# find: builds them with clang-14 (ASan + UBSan + libFuzzer, build-fuzz/), seeds a working
# corpus per target (build-fuzz/corpus/TARGET, git-ignored) from tests/fuzz/seed_sources.txt,
# runs each target, copies every crash, timeout or OOM input into tests/fuzz/regressions/TARGET/
# (minimized where libFuzzer can), where the replay tests of the normal build run it from then
# on, prints a summary per target and appends one line per run to results/fuzz/fuzz-log.tsv.
#
# Usage: tools/dev/fuzz.sh [--time SECONDS] [--parallel N] [TARGET...]
#        tools/dev/fuzz.sh --totals          (sums results/fuzz/fuzz-log.tsv per target)
# TARGET: yaml, safetensors, weights_loader, torchscript, onnx (default: all). --parallel: targets at once (1).
# Exit status 1 if any run found a crash.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=build-fuzz
log_tsv=results/fuzz/fuzz-log.tsv
all_targets=(yaml safetensors weights_loader torchscript onnx)

usage() { sed -n '2,13s/^# \{0,1\}//p' "$0"; exit "${1:-0}"; }

totals() {
  [ -f "$log_tsv" ] || { echo "no runs logged yet ($log_tsv)"; return; }
  awk -F'\t' 'NR > 1 { s[$2] += $3; e[$2] += $4; c[$2] += $8; cov[$2] = $5; ft[$2] = $6;
                       corp[$2] = $7; n[$2]++ }
              END { printf "%-15s %5s %9s %12s %7s %7s %7s %8s\n", "target", "runs", "seconds",
                           "executions", "cov", "ft", "corpus", "crashes";
                    for (t in s) printf "%-15s %5d %9d %12d %7s %7s %7s %8d\n", t, n[t], s[t],
                                        e[t], cov[t], ft[t], corp[t], c[t] }' "$log_tsv"
}

seconds=60
parallel=1
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --time) seconds=$2; shift 2 ;;
    --time=*) seconds=${1#*=}; shift ;;
    --parallel) parallel=$2; shift 2 ;;
    --parallel=*) parallel=${1#*=}; shift ;;
    --totals) totals; exit 0 ;;
    -h|--help) usage ;;
    -*) echo "fuzz: unknown option $1" >&2; usage 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t'" >&2; exit 2; }
done
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz: --time takes seconds" >&2; exit 2; }

# Everything the build needs, plus Clang and its libFuzzer/sanitizer runtimes.
tools/setup.sh clang-14 libclang-rt-14-dev

# Coverage-instrumented, sanitized build of the targets only (no zoc-verify). The LibTorch plugin
# is built (instrumented too) only for the torchscript target, whose mutated code records then
# reach LibTorch's compiler and zoc's translator; it costs the build some minutes.
torch=-DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON
[[ " ${targets[*]} " == *" torchscript "* ]] && torch=-DCMAKE_DISABLE_FIND_PACKAGE_Torch=OFF
nice -n 10 cmake -S . -B "$build" -G Ninja -DZOC_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
  "$torch" -DCMAKE_DISABLE_FIND_PACKAGE_Clang=ON >/dev/null
nice -n 10 cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

max_len() {
  case $1 in
    yaml) echo 65536 ;;
    safetensors) echo 262144 ;;
    weights_loader) echo 8388608 ;;  # room for the complete LeNet seed (6.5 MB)
    torchscript) echo 131072 ;;  # room for every seed archive (the largest, a zip bomb: 78 KB)
    onnx) echo 65536 ;;  # the seed models are 0.4 to 2 KB
  esac
}

# Copies the target's seeds into its working corpus, named by content like libFuzzer's own.
seed_corpus() {
  local t=$1 corpus=$build/corpus/$1 target dir suffix f
  mkdir -p "$corpus"
  local files=()
  while read -r target dir suffix; do
    [ "$target" = "$t" ] || continue
    while IFS= read -r -d '' f; do files+=("$f"); done \
      < <(find "$dir" -type f -name "*${suffix:-}" ! -name .gitkeep -print0)
  done < <(grep -E '^[a-z_]+ ' tests/fuzz/seed_sources.txt)
  if [ "$t" = weights_loader ]; then
    /usr/bin/python3 tests/fuzz/make_seeds.py --large "$build/large-seeds"
    files+=("$build/large-seeds/lenet_full_bf16.safetensors")
  fi
  for f in "${files[@]}"; do
    local name
    name=$(sha1sum "$f" | cut -c1-40)
    [ -e "$corpus/$name" ] || cp "$f" "$corpus/$name"
  done
}

# Scratch folders (tests/fuzz/fuzz_support.h) of fuzzer processes that died without cleaning up.
clean_scratch() {
  local d
  for d in /dev/shm/zoc-fuzz-* "${TMPDIR:-/tmp}"/zoc-fuzz-*; do
    [ -d "$d" ] && [ ! -d "/proc/${d##*-}" ] && rm -rf "$d"
  done
  return 0
}

# Runs one target; prints its summary line and appends it to the log.
run_target() {
  local t=$1 bin=$build/tests/fuzz/fuzz_$1 stamp
  stamp=$(date +%Y%m%d-%H%M%S)
  local corpus=$build/corpus/$t art=$build/artifacts/$t/$stamp/ log=$build/logs/$t-$stamp.log
  local regressions=tests/fuzz/regressions/$t
  mkdir -p "$art" "$(dirname "$log")" "$regressions"
  local flags=(-max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -max_len="$(max_len "$t")"
               -artifact_prefix="$art" -print_final_stats=1)
  [ -f "tests/fuzz/$t.dict" ] && flags+=(-dict="tests/fuzz/$t.dict")
  # LibTorch 1.13 leaks on many of its error paths (a compilation unit and its class types keep
  # each other alive when compiling the code fails): a leak report there names no zoc code, and
  # stops the run at once. zoc's own code is checked for leaks by the replay test under ASan.
  [ "$t" = torchscript ] && flags+=(-detect_leaks=0)
  local start rc=0
  start=$(date +%s)
  nice -n 10 "$bin" "${flags[@]}" "$corpus" "$regressions" >"$log" 2>&1 || rc=$?
  local elapsed=$(( $(date +%s) - start ))

  local execs stats cov ft corp crashes=0 f kind kept
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  if [ -z "$execs" ]; then  # killed before the final stats: the last status line's count
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  fi
  stats=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$stats")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$stats")
  corp=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$stats")  # units libFuzzer keeps
  [ -n "$corp" ] || corp=$(find "$corpus" -type f | wc -l)
  for f in "$art"*; do
    [ -f "$f" ] || continue
    kind=$(basename "$f" | cut -d- -f1)
    case $kind in crash|timeout|oom|leak) ;; *) continue ;; esac
    crashes=$((crashes + 1))
    kept=$regressions/$kind-$(sha1sum "$f" | cut -c1-12)
    cp "$f" "$kept"
    if [ "$kind" = crash ] || [ "$kind" = leak ]; then
      if nice -n 10 "$bin" -minimize_crash=1 -runs=20000 -timeout=10 -rss_limit_mb=4096 \
          -exact_artifact_path="$kept.min" "$f" >"$log.minimize" 2>&1 && [ -s "$kept.min" ]; then
        mv "$kept.min" "$kept"
      fi
      rm -f "$kept.min"
    fi
    echo "fuzz: $t: kept $kind input as $kept (log: $log)"
  done
  clean_scratch
  printf 'fuzz: %-15s %6ss  %10s execs  cov %-6s ft %-6s corpus %-6s crashes %s%s\n' "$t" \
    "$elapsed" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corp" "$crashes" \
    "$([ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && echo "  (exit $rc, see $log)")"
  mkdir -p "$(dirname "$log_tsv")"
  [ -f "$log_tsv" ] ||
    printf 'date\ttarget\tseconds\texecutions\tcov\tft\tcorpus\tcrashes\tcommit\n' >"$log_tsv"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$t" \
    "$elapsed" "${execs:-0}" "${cov:-}" "${ft:-}" "$corp" "$crashes" \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo -)" >>"$log_tsv"
  [ "$crashes" -eq 0 ]
}

for t in "${targets[@]}"; do seed_corpus "$t"; done
clean_scratch
status=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
