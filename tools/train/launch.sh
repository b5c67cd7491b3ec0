#!/usr/bin/env bash
# Starts a data-parallel zoc trainer as N processes on this machine, one GPU each, with the
# environment torchrun gives its workers (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
# MASTER_PORT; zoc/train/dist.h reads it). zoc's rank 0 listens on MASTER_PORT itself, which
# torchrun's own store would occupy, hence this launcher. All processes share stdout/stderr
# (only rank 0 logs); if one fails, the others are stopped and its exit status is returned.
# Usage: tools/train/launch.sh N COMMAND [ARGS...]   (MASTER_PORT: default 29500 + a random 0..999)
set -u
if [ $# -lt 2 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N COMMAND [ARGS...]" >&2
  exit 2
fi
n=$1
shift
port=${MASTER_PORT:-$((29500 + RANDOM % 1000))}
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=$port \
    "$@" &
  pids+=($!)
done
status=0
for ((left = n; left > 0; left--)); do
  wait -n
  rc=$?
  if [ $rc -ne 0 ] && [ $status -eq 0 ]; then
    status=$rc
    echo "launch.sh: a process exited with status $rc; stopping the others" >&2
    kill "${pids[@]}" 2>/dev/null
  fi
done
exit $status
