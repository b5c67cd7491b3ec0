#!/usr/bin/env python3
"""The epoch-loop half of the fine-tuning check (tests/train/gpu_zoo_train_check.sh): two runs of
one trainer from the same weights, SGD inside the backward pass and after it, must leave
bit-identical checkpoints (weights and optimizer state), every frozen tensor (the list
test_train.py's script-frozen case writes beside the network) exactly as it started, and every
other parameter moved (else the check would pass on a trainer that trains nothing).

  compare_frozen.py INIT FUSED UNFUSED FROZEN_LIST   exit status 1 on any difference
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_io  # noqa: E402


def optim_of(path):
    return path[:-len(".safetensors")] + ".optim.safetensors"


def main():
    init_path, fused_path, unfused_path, frozen_path = sys.argv[1:5]
    init, _ = safetensors_io.load_file(init_path)
    frozen = set(open(frozen_path).read().split())
    problems = []
    for a, b in ((fused_path, unfused_path), (optim_of(fused_path), optim_of(unfused_path))):
        x, _ = safetensors_io.load_file(a)
        y, _ = safetensors_io.load_file(b)
        for k in sorted(set(x) | set(y)):
            if k not in x or k not in y or not np.array_equal(x[k], y[k]):
                problems.append("%s differs between %s and %s" % (k, a, b))
    got, _ = safetensors_io.load_file(fused_path)
    moved = 0
    for k, v in init.items():
        if v.dtype.kind != "f" or "running" in k:
            continue
        same = k in got and np.array_equal(got[k], v)
        if k in frozen and not same:
            problems.append("frozen %s moved" % k)
        if k not in frozen:
            moved += 0 if same else 1
            if same:
                problems.append("%s, which trains, did not move" % k)
    missing = frozen - set(init)
    if missing:
        problems.append("frozen tensors %s are not in %s" % (sorted(missing), init_path))
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print("PASS: fused and unfused checkpoints bit-identical; %d frozen tensors unchanged, "
              "%d trained ones moved" % (len(frozen), moved))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
