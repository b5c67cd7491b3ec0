#!/usr/bin/env python3
"""Writes the safetensors seeds of the fuzz targets (tests/fuzz/README.md).

The weight-loader target packs LeNet and ResNet-50, whose complete weights files are megabytes:
too big to check in, and too big for mutation to reach. The checked-in seeds are therefore
valid files holding the first layers of each model, so that packing gets past its first
tensors (conversion, BN folding, NHWC reordering) before it fails on a missing or wrong one,
plus a few files with special values for the reader's conversions. `--large DIR` also writes a
complete LeNet file in bf16 (6.5 MB), which tools/dev/fuzz.sh puts into the working corpus only.

Pure standard library, deterministic: the same bytes on every run.

Usage: make_seeds.py [--large DIR]   (writes into tests/fuzz/seeds/ beside this file)
"""

import argparse
import json
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def bf16_bits(v):
    """Round to nearest even, as zoc's float_to_bf16; NaN stays a quiet NaN."""
    w = f32_bits(v)
    if (w & 0x7FFFFFFF) > 0x7F800000:
        return (w >> 16) | 0x40
    return ((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF


def f16_bits(v):
    try:
        return struct.unpack("<H", struct.pack("<e", v))[0]
    except OverflowError:  # beyond fp16's range: infinity of the same sign
        return 0xFC00 if v < 0 else 0x7C00


def encode(dtype, values):
    n = len(values)
    if dtype == "F64":
        return struct.pack("<%dd" % n, *values)
    if dtype == "F32":
        return struct.pack("<%df" % n, *values)
    if dtype == "F16":
        return struct.pack("<%dH" % n, *map(f16_bits, values))
    if dtype == "BF16":
        return struct.pack("<%dH" % n, *map(bf16_bits, values))
    if dtype == "I64":
        return struct.pack("<%dq" % n, *values)
    raise ValueError(dtype)


def write(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, values), stored in that order."""
    header, blobs, offset = {}, [], 0
    for name, dtype, shape, values in tensors:
        blob = encode(dtype, values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def randoms(rng, shape, scale=0.1):
    return [rng.uniform(-scale, scale) for _ in range(numel(shape))]


def tensor(rng, name, dtype, shape, scale=0.1):
    return (name, dtype, shape, randoms(rng, shape, scale))


LENET = [("conv1", [32, 1, 5, 5]), ("conv2", [64, 32, 5, 5]), ("fc1", [1024, 3136]),
         ("fc2", [10, 1024])]


def lenet(rng, dtype, layers):
    out = []
    for name, shape in LENET[:layers]:
        out.append(tensor(rng, name + ".weight", dtype, shape))
        out.append(tensor(rng, name + ".bias", dtype, shape[:1]))
    return out


def bn(rng, name, c, dtype="F32", var=None):
    return [tensor(rng, name + ".weight", dtype, [c], 1.0),
            tensor(rng, name + ".bias", dtype, [c]),
            tensor(rng, name + ".running_mean", dtype, [c]),
            (name + ".running_var", dtype, [c], var or [rng.uniform(0.5, 2.0) for _ in range(c)]),
            (name + ".num_batches_tracked", "I64", [], [0])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", metavar="DIR", help="also write the complete LeNet file here")
    args = ap.parse_args()
    rng = random.Random(9)
    special = [0.0, -0.0, 1.0, -2.5, 65504.0, 1e-8, 6e-5, 3.0e38, float("inf"), float("-inf"),
               float("nan"), 5.96e-8]

    wl = os.path.join(HERE, "seeds", "weights_loader")
    write(os.path.join(wl, "lenet_conv1_f32.safetensors"), lenet(rng, "F32", 1))
    write(os.path.join(wl, "lenet_conv1_conv2_bf16.safetensors"), lenet(rng, "BF16", 2),
          {"format": "pt"})
    write(os.path.join(wl, "lenet_fc1_wrong_shape_f16.safetensors"),
          lenet(rng, "F16", 2) + [tensor(rng, "fc1.weight", "F16", [1024, 3])])
    write(os.path.join(wl, "lenet_conv1_special_f64.safetensors"),
          [("conv1.weight", "F64", [32, 1, 5, 5], (special * 67)[:800]),
           tensor(rng, "conv1.bias", "F64", [32])])
    stem = [tensor(rng, "conv1.weight", "F16", [64, 3, 7, 7])]
    write(os.path.join(wl, "resnet50_stem_f16.safetensors"), stem + bn(rng, "bn1", 64))
    write(os.path.join(wl, "resnet50_stem_bn_bf16_negative_var.safetensors"),
          stem + bn(rng, "bn1", 64, "BF16", [-1.0] * 64))

    sf = os.path.join(HERE, "seeds", "safetensors")
    write(os.path.join(sf, "special_values.safetensors"),
          [("a", "F16", [12], special), ("b", "BF16", [3, 4], special),
           ("c", "F64", [2, 6], special), ("d", "F32", [12], special)],
          {"format": "pt", "note": "special values"})
    write(os.path.join(sf, "lenet_conv1_f16.safetensors"), lenet(rng, "F16", 1))

    if args.large:
        os.makedirs(args.large, exist_ok=True)
        write(os.path.join(args.large, "lenet_full_bf16.safetensors"), lenet(rng, "BF16", 4))


if __name__ == "__main__":
    main()
