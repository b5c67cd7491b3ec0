#!/usr/bin/env python3
"""The epoch-loop half of the fine-tuning check (tests/train/gpu_zoo_train_check.sh): a trainer's
checkpoint after some steps from INIT must hold every frozen tensor (the list test_frozen.py
writes beside the network) exactly as it started, every other parameter moved (else the check
would pass on a trainer that trains nothing), and no optimizer state for a frozen tensor; with a
second checkpoint (the same run, SGD inside the backward pass and after it), the two must be
bit-identical, weights and optimizer state.

  compare_frozen.py INIT FROZEN_LIST CHECKPOINT [SAME_RUN_CHECKPOINT]   exit status 1 on any
                                                                      problem
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_io  # noqa: E402


def optim_of(path):
    return path[:-len(".safetensors")] + ".optim.safetensors"


def tensor_of(key, names):
    """The tensor an optimizer-state entry belongs to (`momentum.layer1.conv.weight`)."""
    for i, c in enumerate(key):
        if c == "." and key[i + 1:] in names:
            return key[i + 1:]
    return None


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    init_path, frozen_path, ck_path = sys.argv[1:4]
    init, _ = safetensors_io.load_file(init_path)
    frozen = set(open(frozen_path).read().split())
    problems = ["frozen %s is not in %s" % (k, init_path) for k in sorted(frozen - set(init))]
    if len(sys.argv) == 5:
        for a, b in ((ck_path, sys.argv[4]), (optim_of(ck_path), optim_of(sys.argv[4]))):
            x, _ = safetensors_io.load_file(a)
            y, _ = safetensors_io.load_file(b)
            for k in sorted(set(x) | set(y)):
                if k not in x or k not in y or not np.array_equal(x[k], y[k]):
                    problems.append("%s differs between %s and %s" % (k, a, b))
    got, _ = safetensors_io.load_file(ck_path)
    moved = 0
    for k, v in init.items():
        if v.dtype.kind != "f" or "running" in k:
            continue
        same = k in got and np.array_equal(got[k], v)
        if k in frozen and not same:
            problems.append("frozen %s moved" % k)
        elif k not in frozen and same:
            problems.append("%s, which trains, did not move" % k)
        moved += 0 if same else 1
    optim, _ = safetensors_io.load_file(optim_of(ck_path))
    problems += ["optimizer state %s for frozen %s" % (k, tensor_of(k, set(init)))
                 for k in sorted(optim) if tensor_of(k, set(init)) in frozen]
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print("PASS: %s%d frozen tensors unchanged, %d trained ones moved, no optimizer state "
              "for a frozen one" % ("bit-identical to the same run's other checkpoint; "
                                    if len(sys.argv) == 5 else "", len(frozen), moved))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
