#!/usr/bin/env python3
"""Writes corrupted copies of a safetensors weights file, one per failure the generated loader
must report (tests/gpu/gpu_reliability.sh): truncated data, broken header JSON, a header length past
the end, a NaN (a warning; an error with --strict), and a renamed tensor.

Usage: corrupt_weights.py WEIGHTS OUT_DIR
"""

import json, struct, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
open(out + "/truncated.safetensors", "wb").write(data[: len(data) - 4096])
bad = bytearray(data); bad[8] = ord("[")  # header JSON broken
open(out + "/bad_header.safetensors", "wb").write(bytes(bad))
open(out + "/header_past_end.safetensors", "wb").write(struct.pack("<Q", len(data) * 2) + data[8:])
# NaN in the first float32 tensor's first element: a warning, an error with --strict
name = next(k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")
off = 8 + n + header[name]["data_offsets"][0]
nan = bytearray(data); nan[off:off + 4] = struct.pack("<f", float("nan"))
open(out + "/nan.safetensors", "wb").write(bytes(nan))
# A tensor renamed: the model's tensor is missing and an unknown one is present
h2 = dict(header); h2[name + "_renamed"] = h2.pop(name)
hb = json.dumps(h2).encode(); hb += b" " * ((8 - len(hb) % 8) % 8)
open(out + "/renamed.safetensors", "wb").write(struct.pack("<Q", len(hb)) + hb + data[8 + n:])
