#!/usr/bin/env python3
"""A small seeded Fashion-MNIST look-alike for the training tests: CI has no data set package.

Writes the four idx files (raw, and the training images also gzip-compressed in a second folder
to exercise that path) with 28x28 images whose class shows as a bright bar at a class-dependent
row on noise, so a few SGD steps already move the loss. Usage: make_synthetic.py OUT_DIR
[--train N] [--test N] [--gz-copy DIR].
"""

import argparse
import gzip
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "train"))
import idx_data  # noqa: E402


def make_split(rng, n):
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    pixels = rng.integers(0, 96, size=(n, 28, 28), dtype=np.uint8)
    for i, c in enumerate(labels):
        row = 2 + int(c) * 2
        pixels[i, row:row + 3, 4:24] = 200 + rng.integers(0, 56)
    return pixels, labels


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--train", type=int, default=96)
    p.add_argument("--test", type=int, default=40)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--gz-copy", help="also write the set gzip-compressed into this folder")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out, exist_ok=True)
    paths = []
    for split, n in (("train", a.train), ("test", a.test)):
        paths += idx_data.write_idx(a.out, split, *make_split(rng, n))
    if a.gz_copy:
        os.makedirs(a.gz_copy, exist_ok=True)
        for path in paths:
            target = os.path.join(a.gz_copy, os.path.basename(path) + ".gz")
            with open(path, "rb") as src, gzip.open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
    print("synthetic idx set: %d train, %d test -> %s" % (a.train, a.test, a.out))


if __name__ == "__main__":
    main()
