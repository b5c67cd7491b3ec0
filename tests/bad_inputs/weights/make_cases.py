#!/usr/bin/env python3
"""Generates the weights bad-input cases in this folder.

Each case is NAME.expect (see tests/bad_inputs/README.md), which runs
`zoc ir tests/bad_inputs/weights/tiny.yaml --weights tests/bad_inputs/weights/FILE.safetensors`
and lists text the diagnostics must contain. Most cases have their own NAME.safetensors; a case
may reuse another's file with different flags (nan_values_strict uses nan_values.safetensors).
The files are committed; this script documents how each was made and regenerates them byte for
byte (python3 standard library only, no randomness, no torch).

Run from anywhere:  python3 tests/bad_inputs/weights/make_cases.py
"""

import glob
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
REL = "tests/bad_inputs/weights"

# What tiny.yaml declares: state_dict name -> (dtype, shape).
TINY = [
    ("conv.weight", "F32", [4, 3, 3, 3]),
    ("conv.bias", "F32", [4]),
    ("bn.weight", "F32", [4]),
    ("bn.bias", "F32", [4]),
    ("bn.running_mean", "F32", [4]),
    ("bn.running_var", "F32", [4]),
    ("bn.num_batches_tracked", "I64", []),
    ("fc.weight", "F32", [2, 4]),
    ("fc.bias", "F32", [2]),
]

FORMATS = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i", "U8": "B"}
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U8": 1, "F8_E4M3": 1}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def values(name, count):
    """Deterministic, finite, positive-variance values for a tensor."""
    if name.endswith("running_var"):
        return [1.0 + 0.25 * i for i in range(count)]
    if name.endswith("num_batches_tracked"):
        return [7] * count
    return [((i * 37 + len(name)) % 17 - 8) / 16.0 for i in range(count)]


def encode(dtype, vals):
    if dtype == "BF16":  # the top half of the float32 pattern
        return b"".join(struct.pack("<f", v)[2:] for v in vals)
    if dtype == "F8_E4M3":
        return bytes(0x38 for _ in vals)  # 1.0
    if dtype.startswith("I") or dtype == "U8":
        vals = [int(v) for v in vals]
    return struct.pack("<%d%s" % (len(vals), FORMATS[dtype]), *vals)


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, data bytes); metadata: the optional __metadata__
    map. Returns the file's bytes."""
    header, data = ({"__metadata__": metadata} if metadata else {}), b""
    for name, dtype, shape, raw in tensors:
        offsets = [len(data), len(data) + len(raw)]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": offsets}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # align the data section, as the reference writer does
    return struct.pack("<Q", len(text)) + text + data


def tiny(drop=(), change=None, extra=(), metadata=None):
    """tiny.yaml's tensors, minus `drop`, with change(name, dtype, shape) -> (dtype, shape, vals)
    overriding some, plus `extra` (name, dtype, shape) tensors."""
    out = []
    for name, dtype, shape in TINY:
        if name in drop:
            continue
        vals = values(name, numel(shape))
        if change:
            got = change(name, dtype, shape)
            if got:
                dtype, shape = got[0], got[1]
                vals = got[2] if len(got) > 2 else values(name, numel(shape))
        out.append((name, dtype, shape, encode(dtype, vals)))
    for name, dtype, shape in extra:
        out.append((name, dtype, shape, encode(dtype, values(name, numel(shape)))))
    return safetensors(out, metadata)


def only(target, result):
    return lambda name, dtype, shape: result(dtype, shape) if name == target else None


def conv_weight_with(bad):
    def change(name, dtype, shape):
        if name != "conv.weight":
            return None
        vals = values(name, numel(shape))
        for i, v in bad:
            vals[i] = v
        return dtype, shape, vals
    return change


NAN, INF = float("nan"), float("inf")

# name -> (file bytes or None to reuse another case's file, weights file stem, extra args,
#          exit code, expected lines). Expected lines name the file as the CLI sees it.
CASES = {}


def case(name, data, expect, args="", exit_code=1, weights=None):
    CASES[name] = (data, weights or name, args, exit_code, expect)


def at(stem):
    return "%s/%s.safetensors: " % (REL, stem)


case("good", tiny(), [], exit_code=0)
case("good_without_num_batches_tracked", tiny(drop={"bn.num_batches_tracked"}), [], exit_code=0)
case("good_other_float_dtypes",
     tiny(change=lambda n, d, s: {"conv.weight": ("F64", s), "fc.weight": ("F16", s),
                                  "bn.weight": ("BF16", s)}.get(n)), [], exit_code=0)
case("missing_tensor", tiny(drop={"bn.running_var"}),
     [at("missing_tensor") + "error: missing tensor 'bn.running_var' needed by layer 'bn' "
      "(batchnorm2d) with shape [4]"])
case("missing_several", tiny(drop={"conv.bias", "fc.weight"}),
     [at("missing_several") + "error: missing tensor 'conv.bias' needed by layer 'conv' (conv2d) "
      "with shape [4]",
      at("missing_several") + "error: missing tensor 'fc.weight' needed by layer 'fc' (linear) "
      "with shape [2, 4]"])
case("extra_tensor", tiny(extra=[("fc2.weight", "F32", [2, 2])]),
     [at("extra_tensor") + "error: unexpected tensor 'fc2.weight': no layer of model 'tiny' uses "
      "it"])
# A module's whole state_dict ("format": "pt", what `zoc extract-weights` writes from a .pt) may
# hold layers the outputs do not use (an auxiliary head, issue 32): one note, not an error...
case("state_dict_extra_tensors",
     tiny(extra=[("aux.conv.weight", "F32", [2, 2]), ("aux.fc.weight", "F32", [2])],
          metadata={"format": "pt"}),
     [at("state_dict_extra_tensors") + "note: 2 tensors of this state_dict no layer of model "
      "'tiny' uses, ignored (an unused layer or an auxiliary head): 'aux.conv.weight', "
      "'aux.fc.weight'"], exit_code=0)
# ... unless a tensor is missing too: then an unused name may be the misnamed one.
case("state_dict_extra_and_missing",
     tiny(drop={"fc.bias"}, extra=[("fc.bias_", "F32", [2])], metadata={"format": "pt"}),
     [at("state_dict_extra_and_missing") + "error: missing tensor 'fc.bias' needed by layer 'fc' "
      "(linear) with shape [2]",
      at("state_dict_extra_and_missing") + "error: unexpected tensor 'fc.bias_': no layer of "
      "model 'tiny' uses it"])
# A tensor name with a terminal escape (ESC [ 2 J clears the screen) and a newline that would
# start a forged diagnostic line (issue 31): escaped in the message.
case("name_with_escape", tiny(extra=[("fc2\x1b[2J\nforged: error: x", "F32", [2])]),
     [at("name_with_escape") + "error: unexpected tensor 'fc2\\x1b[2J\\x0aforged: error: x': no "
      "layer of model 'tiny' uses it"])
case("wrong_dtype_conv_i32", tiny(change=only("conv.weight", lambda d, s: ("I32", s))),
     [at("wrong_dtype_conv_i32") + "error: tensor 'conv.weight' has dtype I32, but layer 'conv' "
      "(conv2d) expects floating point (F32, F16, BF16 or F64)"])
case("wrong_dtype_conv_f8", tiny(change=only("conv.weight", lambda d, s: ("F8_E4M3", s))),
     [at("wrong_dtype_conv_f8") + "error: tensor 'conv.weight' has dtype F8_E4M3, but layer 'conv' "
      "(conv2d) expects floating point (F32, F16, BF16 or F64)"])
case("wrong_dtype_num_batches_tracked_f32",
     tiny(change=only("bn.num_batches_tracked", lambda d, s: ("F32", s))),
     [at("wrong_dtype_num_batches_tracked_f32") + "error: tensor 'bn.num_batches_tracked' has "
      "dtype F32, but layer 'bn' (batchnorm2d) expects I64"])
case("wrong_shape_transposed", tiny(change=only("fc.weight", lambda d, s: (d, [4, 2]))),
     [at("wrong_shape_transposed") + "error: tensor 'fc.weight' has shape [4, 2], but layer 'fc' "
      "(linear) expects [2, 4]"])
case("wrong_shape_rank", tiny(change=only("conv.weight", lambda d, s: (d, [4, 27]))),
     [at("wrong_shape_rank") + "error: tensor 'conv.weight' has shape [4, 27], but layer 'conv' "
      "(conv2d) expects [4, 3, 3, 3]"])
case("many_problems",
     tiny(drop={"fc.bias"}, change=only("bn.bias", lambda d, s: (d, [5])),
          extra=[("conv.weight_orig", "F32", [1])]),
     [at("many_problems") + "error: tensor 'bn.bias' has shape [5], but layer 'bn' (batchnorm2d) "
      "expects [4]",
      at("many_problems") + "error: missing tensor 'fc.bias' needed by layer 'fc' (linear) with "
      "shape [2]",
      at("many_problems") + "error: unexpected tensor 'conv.weight_orig': no layer of model 'tiny' "
      "uses it"])
case("nan_values", tiny(change=conv_weight_with([(0, NAN), (5, INF), (9, -INF)])),
     [at("nan_values") + "warning: tensor 'conv.weight' holds 3 NaN or infinite values (an error "
      "with --strict)"], exit_code=0)
case("nan_values_strict", None,
     [at("nan_values") + "error: tensor 'conv.weight' holds 3 NaN or infinite values"],
     args="--strict", weights="nan_values")
case("nan_in_bf16", tiny(change=lambda n, d, s: ("BF16", s, [NAN] + values(n, numel(s))[1:])
                         if n == "bn.weight" else None),
     [at("nan_in_bf16") + "warning: tensor 'bn.weight' holds 1 NaN or infinite value (an error "
      "with --strict)"], exit_code=0)
case("f64_overflows_float32",
     tiny(change=lambda n, d, s: ("F64", s, [1e300] + values(n, numel(s))[1:])
          if n == "fc.weight" else None),
     [at("f64_overflows_float32") + "warning: tensor 'fc.weight' holds 1 value too large for "
      "float32 (an error with --strict)"], exit_code=0)
case("f64_overflows_float32_strict", None,
     [at("f64_overflows_float32") + "error: tensor 'fc.weight' holds 1 value too large for "
      "float32"], args="--strict", weights="f64_overflows_float32")
case("truncated", tiny()[:-10],
     [at("truncated") + "error: tensor 'fc.weight': data offsets [520, 552) end past the 550-byte "
      "data section (truncated file?)"])
case("not_safetensors", b"PK\x03\x04 this is a zip archive, not safetensors\n",
     [at("not_safetensors") + "error: header length 7595448452415441744 exceeds the limit of "
      "100000000 bytes"])
case("missing_file", None, [at("no_such_file") + "error: cannot open: No such file or directory"],
     weights="no_such_file")


def main():
    for pattern in ("*.safetensors", "*.expect"):
        for old in glob.glob(os.path.join(HERE, pattern)):
            os.remove(old)
    for name, (data, weights, args, exit_code, expect) in sorted(CASES.items()):
        if data is not None:
            with open(os.path.join(HERE, weights + ".safetensors"), "wb") as f:
                f.write(data)
        lines = ["model: %s/tiny.yaml" % REL,
                 "args: --weights %s/%s.safetensors%s" % (REL, weights, " " + args if args else "")]
        if exit_code != 1:
            lines.append("exit: %d" % exit_code)
        lines += ["expect: " + e for e in expect]
        with open(os.path.join(HERE, name + ".expect"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (len(CASES), HERE))


if __name__ == "__main__":
    main()
