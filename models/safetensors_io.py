"""Minimal, dependency-free safetensors writer and reader (stdlib + numpy).

zoc's reference data must be writable on machines without the `safetensors` Python package, and
the files must be byte-for-byte reproducible so that two exports of the same model can be diffed.
The writer therefore fixes every choice the format leaves open: tensors are stored in sorted name
order with no gaps, the JSON header has sorted keys and no whitespace, and it is padded with spaces
to a multiple of 8 bytes. The reader validates the same things zoc's C++ runtime validates (header
bounds, JSON, dtypes, contiguous non-overlapping offsets, sizes) and is used by export.py --check.

Format: 8-byte little-endian u64 header length N, N bytes of JSON
`{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {str: str}}`,
then the data buffer; offsets are relative to the start of the data buffer.
"""

import json
import os
import struct

import numpy as np

# safetensors dtype name -> little-endian numpy dtype.
DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NAME_OF = {dt: name for name, dt in DTYPES.items()}

MAX_HEADER_BYTES = 100 * 1024 * 1024  # same limit as the C++ runtime reader
METADATA_KEY = "__metadata__"


class SafetensorsError(ValueError):
    """Raised for any malformed safetensors file; the message names the file and the problem."""


def _dtype_name(array):
    name = _NAME_OF.get(array.dtype.newbyteorder("<"))
    if name is None:
        raise TypeError("unsupported dtype for safetensors: %s" % array.dtype)
    return name


def build_header(tensors, metadata=None):
    """Return (header_bytes, ordered [(name, le_array)]) for a {name: np.ndarray} dict."""
    header = {}
    ordered = []
    offset = 0
    for name in sorted(tensors):
        if not isinstance(name, str) or not name or name == METADATA_KEY:
            raise ValueError("bad tensor name: %r" % (name,))
        array = np.asarray(tensors[name])
        dtype = _dtype_name(array)
        array = np.asarray(array, dtype=DTYPES[dtype])  # not ascontiguousarray: keeps 0-d shape
        size = array.nbytes
        header[name] = {"dtype": dtype, "shape": [int(d) for d in array.shape],
                        "data_offsets": [offset, offset + size]}
        ordered.append((name, array))
        offset += size
    if metadata:
        bad = [k for k, v in metadata.items() if not isinstance(k, str) or not isinstance(v, str)]
        if bad:
            raise ValueError("metadata keys and values must be strings: %r" % bad)
        header[METADATA_KEY] = dict(metadata)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    raw = text.encode("ascii")
    raw += b" " * (-len(raw) % 8)
    return raw, ordered


def save_file(tensors, path, metadata=None):
    """Write {name: np.ndarray} to `path` atomically (temp file in the same folder, then rename)."""
    raw, ordered = build_header(tensors, metadata)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(raw)))
            f.write(raw)
            for _, array in ordered:
                f.write(array.tobytes(order="C"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _reject_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise SafetensorsError("duplicate key in header: %r" % key)
        seen[key] = value
    return seen


def parse_header(blob, where="<bytes>"):
    """Validate a whole file's bytes; return (entries {name: (dtype, shape, begin, end)},
    metadata, data_start)."""
    if len(blob) < 8:
        raise SafetensorsError("%s: file too short (%d bytes) for the header length" % (where, len(blob)))
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER_BYTES:
        raise SafetensorsError("%s: header length %d exceeds %d" % (where, n, MAX_HEADER_BYTES))
    if 8 + n > len(blob):
        raise SafetensorsError("%s: header length %d runs past end of file (%d bytes)" % (where, n, len(blob)))
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=_reject_duplicates)
    except SafetensorsError as e:
        raise SafetensorsError("%s: %s" % (where, e))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError("%s: header is not valid JSON: %s" % (where, e))
    if not isinstance(header, dict):
        raise SafetensorsError("%s: header is not a JSON object" % where)
    metadata = header.pop(METADATA_KEY, {}) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError("%s: __metadata__ must map strings to strings" % where)
    entries = {}
    for name, info in header.items():
        entries[name] = _parse_entry(name, info, where)
    _check_layout(entries, len(blob) - 8 - n, where)
    return entries, metadata, 8 + n


def _parse_entry(name, info, where):
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise SafetensorsError("%s: tensor %r: entry must have exactly dtype, shape, data_offsets" % (where, name))
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if dtype not in DTYPES:
        raise SafetensorsError("%s: tensor %r: unknown dtype %r" % (where, name, dtype))
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise SafetensorsError("%s: tensor %r: bad shape %r" % (where, name, shape))
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)
            or offsets[0] > offsets[1]):
        raise SafetensorsError("%s: tensor %r: bad data_offsets %r" % (where, name, offsets))
    numel = 1
    for d in shape:
        numel *= d
    if numel * DTYPES[dtype].itemsize != offsets[1] - offsets[0]:
        raise SafetensorsError("%s: tensor %r: %d bytes for shape %r of %s" % (
            where, name, offsets[1] - offsets[0], shape, dtype))
    return dtype, tuple(shape), offsets[0], offsets[1]


def _check_layout(entries, data_len, where):
    """Offsets must tile [0, data_len) exactly: no gaps, no overlaps, nothing out of bounds."""
    pos = 0
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if begin != pos:
            kind = "overlaps the previous tensor" if begin < pos else "leaves a gap"
            raise SafetensorsError("%s: tensor %r at offset %d %s (expected %d)" % (where, name, begin, kind, pos))
        pos = end
    if pos != data_len:
        raise SafetensorsError("%s: tensors cover %d data bytes but the file holds %d" % (where, pos, data_len))


def load_file(path):
    """Read and validate `path`; return ({name: np.ndarray (writable copy)}, metadata)."""
    with open(path, "rb") as f:
        blob = f.read()
    entries, metadata, start = parse_header(blob, where=path)
    tensors = {}
    for name, (dtype, shape, begin, end) in entries.items():
        flat = np.frombuffer(blob, dtype=DTYPES[dtype], count=(end - begin) // DTYPES[dtype].itemsize,
                             offset=start + begin)
        tensors[name] = flat.reshape(shape).copy()
    return tensors, metadata
