#!/usr/bin/env python3
"""Generates the safetensors bad-input cases in this folder.

Each case is NAME.safetensors plus NAME.safetensors.expect, one line holding text that the
error message of zoc::st::File::open must contain, or "OK" for files that must open (a few
well-formed files keep the reader honest about what it must accept). The files are committed;
this script documents how each was made and regenerates them byte for byte (python3 standard
library only, no randomness). tests/unit/safetensors_bad_inputs_test.cpp checks every one.

Run from anywhere:  python3 tests/bad_inputs/safetensors/make_cases.py
"""

import glob
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def ent(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def st(header, data=b"", header_len=None):
    """A safetensors file: u64 header length, header, data.

    header is a dict (serialized compactly, keys in insertion order), a str (raw JSON text, for
    malformed headers) or bytes (for invalid UTF-8). header_len overrides the length field.
    """
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    if isinstance(header, str):
        header = header.encode("utf-8")
    n = len(header) if header_len is None else header_len
    return struct.pack("<Q", n) + header + data


GOOD_A = ent("F32", [2], 0, 8)  # tensor "a": two floats at the start of the data
EIGHT = f32(1.0, 2.0)
ALL_DTYPES = [("F64", 8), ("F32", 4), ("F16", 2), ("BF16", 2), ("I64", 8), ("I32", 4),
              ("I16", 2), ("I8", 1), ("U8", 1), ("BOOL", 1), ("F8_E4M3", 1), ("F8_E5M2", 1)]


def all_dtypes():
    header, data = {}, b""
    for i, (name, size) in enumerate(ALL_DTYPES):
        chunk = bytes((i * 7 + k) % 251 for k in range(3 * size))  # shape [3]
        if name == "BOOL":
            chunk = bytes([0, 1, 1])
        header["t_" + name.lower()] = ent(name, [3], len(data), len(data) + len(chunk))
        data += chunk
    return st(header, data)


def padded():
    text = json.dumps({"__metadata__": {"format": "pt"}, "a": GOOD_A}, separators=(",", ":"))
    return st(text + " " * (-len(text) % 8 + 8), EIGHT)


CASES = [
    # --- files that must open -----------------------------------------------------------------
    ("good_simple", st({"a": GOOD_A, "b": ent("I64", [1], 8, 16)}, EIGHT + struct.pack("<q", 7)),
     "OK"),
    ("good_all_dtypes", all_dtypes(), "OK"),
    ("good_padded_header", padded(), "OK"),
    ("good_empty", st("{}"), "OK"),
    ("good_scalar", st({"s": ent("F32", [], 0, 4)}, f32(3.5)), "OK"),
    ("good_zero_size", st({"z": ent("F32", [0, 3], 0, 0), "a": GOOD_A, "y": ent("U8", [0], 8, 8)},
                          EIGHT), "OK"),
    ("good_unicode_names", st('{"caf\\u00e9.w":' + json.dumps(GOOD_A) +
                              ',"\\ud83d\\ude00 \\"q\\" \\/":' + json.dumps(ent("U8", [1], 8, 9)) +
                              ',"\u00fcml":' + json.dumps(ent("U8", [1], 9, 10)) + "}",
                              EIGHT + b"\x01\x02"), "OK"),
    # NaN and infinities are valid data; count_non_finite() must report them (tested apart).
    ("nan_values", st({"w": ent("F32", [4], 0, 16)},
                      f32(1.0, float("nan"), float("inf"), float("-inf"))), "OK"),

    # --- the length field ---------------------------------------------------------------------
    ("empty", b"", "file is 0 bytes, shorter than 8 bytes"),
    ("too_short", b"\x10\x00\x00\x00\x00\x00\x00", "file is 7 bytes, shorter than 8 bytes"),
    ("header_len_zero", st("", EIGHT, header_len=0), "header length is 0"),
    ("header_too_large", st({"a": GOOD_A}, EIGHT, header_len=100_000_001),
     "header length 100000001 exceeds the limit of 100000000 bytes"),
    ("header_len_max_u64", st({"a": GOOD_A}, EIGHT, header_len=2**64 - 1),
     "header length 18446744073709551615 exceeds the limit"),
    ("header_past_eof", st({"a": GOOD_A}, EIGHT, header_len=200),
     "header length 200 runs past the end of the file"),

    # --- JSON syntax --------------------------------------------------------------------------
    ("json_whitespace_only", st("        "),
     "header is not valid JSON: unexpected end of header, expected a value at header byte 8"),
    ("json_truncated", st('{"a":'), "header is not valid JSON: unexpected end of header"),
    ("json_missing_colon", st('{"a" {}}'),
     "header is not valid JSON: expected ':' after an object key at header byte 5"),
    ("json_unquoted_key", st("{a:1}"), "expected a string key at header byte 1"),
    ("json_single_quotes", st("{'a':1}"), "expected a string key at header byte 1"),
    ("json_trailing_comma", st('{"a":' + json.dumps(GOOD_A) + ",}", EIGHT),
     "trailing comma before '}'"),
    ("json_trailing_comma_array", st('{"a":{"dtype":"F32","shape":[2,],"data_offsets":[0,8]}}',
                                     EIGHT), "trailing comma before ']'"),
    ("json_garbage_after", st("{} x"), "unexpected 'x' after the end of the JSON value"),
    ("json_nul_padding", st("{}" + "\0" * 6), "unexpected byte 0x00 after the end of the JSON value"),
    ("json_bad_literal", st('{"__metadata__":tru}'), "invalid literal (expected 'true')"),
    ("json_bad_escape", st('{"a\\q":1}'), "invalid escape '\\q' in string"),
    ("json_bad_unicode_escape", st('{"a\\u12G4":1}'), "invalid \\u escape"),
    ("json_lone_high_surrogate", st('{"\\ud800x":1}'), "unpaired high surrogate"),
    ("json_lone_low_surrogate", st('{"\\udc00":1}'), "unpaired low surrogate"),
    ("json_control_char", st('{"a\nb":1}'), "control character 0x0A in string"),
    ("json_invalid_utf8", st(b'{"a\xffb":1}'), "invalid UTF-8 byte 0xFF in string"),
    ("json_overlong_utf8", st(b'{"\xc0\xaf":1}'), "invalid UTF-8 byte 0xC0 in string"),
    ("json_utf8_surrogate", st(b'{"\xed\xa0\x80":1}'), "invalid UTF-8 byte 0xED in string"),
    ("json_unterminated_string", st('{"abc'), "unterminated string"),
    ("json_leading_zero", st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[00,8]}}', EIGHT),
     "leading zeros are not allowed in numbers"),
    ("json_bad_number", st('{"a":{"dtype":"F32","shape":[-],"data_offsets":[0,8]}}', EIGHT),
     "expected a digit after '-'"),
    ("json_too_deep", st('{"__metadata__":' + "[" * 100 + "]" * 100 + "}"),
     "nesting deeper than 64 levels"),

    # --- structure ----------------------------------------------------------------------------
    ("top_level_array", st("[]"), "header is an array, not a JSON object"),
    ("top_level_string", st('"a"'), "header is a string, not a JSON object"),
    ("duplicate_tensor_name", st('{"a":' + json.dumps(GOOD_A) + ',"a":' + json.dumps(GOOD_A) + "}",
                                 EIGHT), "duplicate tensor name 'a'"),
    ("duplicate_metadata", st('{"__metadata__":{},"__metadata__":{}}'),
     "duplicate key '__metadata__'"),
    ("duplicate_field", st('{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
                           EIGHT), "tensor 'a': duplicate field 'dtype'"),
    ("empty_tensor_name", st({"": GOOD_A}, EIGHT), "tensor name is empty"),
    ("entry_not_object", st({"a": [1]}), "tensor 'a': entry is an array, not an object"),
    ("missing_dtype", st({"a": {"shape": [2], "data_offsets": [0, 8]}}, EIGHT),
     "tensor 'a': missing field 'dtype'"),
    ("missing_shape", st({"a": {"dtype": "F32", "data_offsets": [0, 8]}}, EIGHT),
     "tensor 'a': missing field 'shape'"),
    ("missing_data_offsets", st({"a": {"dtype": "F32", "shape": [2]}}, EIGHT),
     "tensor 'a': missing field 'data_offsets'"),
    ("extra_field", st({"a": dict(GOOD_A, foo=1)}, EIGHT), "tensor 'a': unexpected field 'foo'"),
    ("metadata_not_object", st({"__metadata__": ["x"]}),
     "__metadata__ is an array, not an object of strings"),
    ("metadata_value_not_string", st({"__metadata__": {"epoch": 3}}),
     "__metadata__ value of 'epoch' is a number, not a string"),
    ("metadata_duplicate_key", st('{"__metadata__":{"k":"1","k":"2"}}'),
     "__metadata__ has duplicate key 'k'"),

    # --- dtype --------------------------------------------------------------------------------
    ("unknown_dtype", st({"a": dict(GOOD_A, dtype="F31")}, EIGHT), "tensor 'a': unknown dtype 'F31'"),
    ("dtype_lowercase", st({"a": dict(GOOD_A, dtype="f32")}, EIGHT), "unknown dtype 'f32'"),
    ("dtype_not_string", st({"a": dict(GOOD_A, dtype=32)}, EIGHT),
     "tensor 'a': dtype is a number, not a string"),

    # --- shape --------------------------------------------------------------------------------
    ("shape_not_array", st({"a": dict(GOOD_A, shape=2)}, EIGHT),
     "tensor 'a': shape is a number, not an array of integers"),
    ("shape_negative", st({"a": dict(GOOD_A, shape=[-1, 2])}, EIGHT),
     "tensor 'a': shape[0] = -1 is negative"),
    ("shape_float", st({"a": dict(GOOD_A, shape=[2.5])}, EIGHT), "tensor 'a': shape[0] = 2.5 is not an integer"),
    ("shape_exponent", st('{"a":{"dtype":"F32","shape":[1,2e0],"data_offsets":[0,8]}}', EIGHT),
     "tensor 'a': shape[1] = 2e0 is not an integer"),
    ("shape_string_entry", st({"a": dict(GOOD_A, shape=["2"])}, EIGHT),
     "tensor 'a': shape[0] is a string, not an integer"),
    ("shape_entry_too_large", st({"a": dict(GOOD_A, shape=[2**63])}, EIGHT),
     "tensor 'a': shape[0] = 9223372036854775808 is too large"),
    ("shape_entry_huge", st({"a": dict(GOOD_A, shape=[10**30])}, EIGHT),
     "shape[0] = 1000000000000000000000000000000 is too large"),
    ("numel_overflow", st({"a": dict(GOOD_A, shape=[2**32, 2**32])}, EIGHT),
     "tensor 'a': element count of shape [4294967296, 4294967296] overflows 64 bits"),
    ("nbytes_overflow", st({"a": ent("F64", [2**61], 0, 8)}, EIGHT),
     "tensor 'a': byte size of shape [2305843009213693952] of F64 overflows 64 bits"),

    # --- data offsets -------------------------------------------------------------------------
    ("offsets_not_array", st({"a": dict(GOOD_A, data_offsets=0)}, EIGHT),
     "tensor 'a': data_offsets is a number, not an array of integers"),
    ("offsets_one_entry", st({"a": dict(GOOD_A, data_offsets=[8])}, EIGHT),
     "tensor 'a': data_offsets must be two integers [begin, end], but it has 1 entry"),
    ("offsets_three_entries", st({"a": dict(GOOD_A, data_offsets=[0, 8, 16])}, EIGHT),
     "data_offsets must be two integers [begin, end], but it has 3 entries"),
    ("offsets_float", st({"a": dict(GOOD_A, data_offsets=[0, 8.0])}, EIGHT),
     "tensor 'a': data_offsets[1] = 8.0 is not an integer"),
    ("offsets_negative", st({"a": dict(GOOD_A, data_offsets=[-8, 0])}, EIGHT),
     "tensor 'a': data_offsets[0] = -8 is negative"),
    ("offsets_null", st({"a": dict(GOOD_A, data_offsets=[None, 8])}, EIGHT),
     "tensor 'a': data_offsets[0] is null, not an integer"),
    ("offsets_too_large", st({"a": dict(GOOD_A, data_offsets=[0, 2**64])}, EIGHT),
     "tensor 'a': data_offsets[1] = 18446744073709551616 is too large"),
    ("offsets_begin_after_end", st({"a": dict(GOOD_A, data_offsets=[8, 0])}, EIGHT),
     "tensor 'a': data offsets [8, 0) have begin > end"),
    ("size_mismatch", st({"conv1.weight": ent("F32", [64, 3, 7, 7], 0, 100)}, bytes(100)),
     "tensor 'conv1.weight': data offsets [0, 100) hold 100 bytes but shape [64, 3, 7, 7] of F32 "
     "needs 37632"),
    ("size_mismatch_dtype", st({"a": dict(GOOD_A, dtype="F16")}, EIGHT),
     "tensor 'a': data offsets [0, 8) hold 8 bytes but shape [2] of F16 needs 4"),
    ("truncated_data", st({"a": ent("F32", [4], 0, 16)}, f32(1.0, 2.0) + b"\0\0"),
     "tensor 'a': data offsets [0, 16) end past the 10-byte data section (truncated file?)"),
    ("offsets_end_huge", st({"a": ent("U8", [2**62, 2], 0, 2**63)}, EIGHT),
     "tensor 'a': data offsets [0, 9223372036854775808) end past the 8-byte data section"),
    ("overlap", st({"a": GOOD_A, "b": ent("F32", [2], 4, 12)}, EIGHT + f32(3.0)),
     "tensor 'b': data offsets [4, 12) overlap tensor 'a' at [0, 8)"),
    ("overlap_identical", st({"a": GOOD_A, "b": GOOD_A}, EIGHT),
     "tensor 'b': data offsets [0, 8) overlap tensor 'a' at [0, 8)"),
    ("overlap_zero_size_inside", st({"a": GOOD_A, "z": ent("F32", [0], 4, 4)}, EIGHT),
     "tensor 'z': data offsets [4, 4) overlap tensor 'a' at [0, 8)"),
    ("gap", st({"a": GOOD_A, "b": ent("F32", [2], 12, 20)}, EIGHT + f32(0.0, 3.0, 4.0)),
     "gap in the data section: bytes [8, 12) belong to no tensor (next is tensor 'b' at [12, 20))"),
    ("gap_at_start", st({"a": ent("F32", [2], 4, 12)}, f32(0.0) + EIGHT),
     "gap in the data section: bytes [0, 4) belong to no tensor"),
    ("trailing_bytes", st({"a": GOOD_A}, EIGHT + b"\0\0\0\0"),
     "trailing bytes: the data section holds 12 bytes but the tensors cover only 8"),
    ("trailing_bytes_no_tensors", st("{}", b"\0"),
     "trailing bytes: the data section holds 1 bytes but the tensors cover only 0"),
]


def main():
    for old in glob.glob(os.path.join(HERE, "*.safetensors")) + \
            glob.glob(os.path.join(HERE, "*.safetensors.expect")):
        os.remove(old)
    names = set()
    for name, data, expect in CASES:
        assert name not in names, name
        names.add(name)
        with open(os.path.join(HERE, name + ".safetensors"), "wb") as f:
            f.write(data)
        with open(os.path.join(HERE, name + ".safetensors.expect"), "w", encoding="utf-8") as f:
            f.write(expect + "\n")
    print("wrote %d cases to %s" % (len(CASES), HERE))


if __name__ == "__main__":
    main()
