#!/usr/bin/python3
"""Generates the TorchScript models in this folder that pass zoc's archive check, load in LibTorch,
and must then be refused, each beside the error it must give (tests/bad_inputs/README.md).

They are what a hostile or careless model can do once LibTorch has loaded it: make zoc's constant
folding read a file (aten::from_file) or compute without bound (a string doubled 40 times, in a
loop or in 40 lines of code LibTorch folds itself while compiling), print terminal escapes (an
exception's message, an attribute's name, a source file's name from the debug records), or reach
one of LibTorch's internal checks; or use a dict of tensors in a way zoc cannot follow exactly;
or, issue 36, train a layer called twice, or use adaptive max pooling where it is no max pool or
read its indices. Each model is scripted with torch 1.13 (Debian's python3-torch)
from source text given here under a fixed file name, so that the locations in the messages do not
depend on where this script lives; archives that torch.jit.save cannot write are edited after it,
record by record. `zoc ir NAME.pt --input 3x8x8` must fail with the expected message.

Run from anywhere:  /usr/bin/python3 tests/bad_inputs/torchscript_loaded/make_cases.py
"""

import glob
import io
import linecache
import os
import sys
import types
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REL = "tests/bad_inputs/torchscript_loaded"
CASES = {}  # name -> (archive bytes, description, [expected messages after "NAME.pt"], args)


def module_from_source(source, filename="model.py"):
    """The module `source` defines, with `filename` as its file for TorchScript's debug records:
    the source is given to linecache, where inspect finds it without a file."""
    module = types.ModuleType("zoc_case_" + str(len(CASES)))
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[module.__name__] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def scripted(source, filename="model.py"):
    """torch.jit.script(M()).save() of the class M that `source` defines, as bytes."""
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(module_from_source(source, filename).M()), buf)
    return buf.getvalue()


def edited(archive, edit):
    """`archive` with each record's bytes passed through edit(name, data) (None drops it); the
    records keep their order, names and compression."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = edit(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info, data)
    return out.getvalue()


def case(name, archive, description, *messages, args="--input 3x8x8"):
    CASES[name] = (archive, description, list(messages), args)


HEADER = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
NOT_PURE = ("is not evaluated at compile time: zoc evaluates only the number, string, list and "
            "shape operations it knows to be pure on a model's constants (a model file must not "
            "make zoc read or write files)")
PER_VALUE = "zoc computes at most 1 MiB per value while compiling a model"

# Constant folding runs only ops known to be pure: reading /etc/passwd into the exception message
# (the attack) is refused before the file is opened.
case("fold_from_file", scripted(HEADER + """\
        t = torch.from_file("/etc/passwd", False, 32, dtype=torch.uint8)
        s = ""
        for i in range(32):
            s = s + chr(int(t[i]))
        raise RuntimeError(s)
"""), "forward reads /etc/passwd with torch.from_file and raises it as its message",
     "(top-level module): aten::from_file " + NOT_PURE + " at model.py:6:13")

# Folding is bounded: a string doubled 40 times in a loop stops at 1 MiB.
case("fold_string_doubling", scripted(HEADER + """\
        s = "ab"
        for i in range(40):
            s = s + s
        return x * len(s)
"""), "forward doubles a string 40 times in a loop (2 TiB)",
     "model.py:8:17: error: aten::add on constants gives a value of more than 1 MiB; " + PER_VALUE)

# LibTorch folds straight-line constant code itself while compiling the file's code; zoc's guard
# on its string operators stops it at 1 MiB and leaves the rest to zoc, which refuses it.
UNROLLED = ("    s = \"ab\"\n" + "    s = torch.add(s, s)\n" * 40
            + "    return torch.mul(x, torch.len(s))\n")


def unrolled(name, data):
    if name.endswith(".debug_pkl"):
        return None  # its source ranges are the scripted code's, not this one's
    if name.endswith(".py") and b"    s = " in data:  # the code record of forward
        code = data.decode()
        return (code[:code.index("    s = ")] + UNROLLED).encode()
    return data


case("fold_string_doubling_unrolled", edited(scripted(HEADER + """\
        s = "ab"
        for i in range(1):
            s = s + s
        return x * len(s)
"""), unrolled),
     "the code record doubles a string in 40 lines, which LibTorch folds while it compiles",
     "code/__torch__/zoc_case_2.py:28:9: error: aten::add on constants would give a value of "
     "about 2097152 bytes; " + PER_VALUE)

# Text from the file is printed escaped: an exception's message that would retitle and clear the
# terminal and forge a diagnostic line of its own.
case("raise_escape_sequences", scripted(HEADER + """\
        raise RuntimeError("\\x1b]0;owned\\x07\\x1b[2J\\nmodel.pt:1:1: note: all checks passed")
"""), "forward raises a message with terminal escapes and a newline",
     "model.py:6:9: error: forward raises an exception for this input: \\x1b]0;owned\\x07\\x1b[2J"
     "\\x0amodel.pt:1:1: note: all checks passed")

# An attribute whose name holds an escape sequence names no layer zoc accepts.
case("attribute_name_escape", scripted("""\
import collections
import torch


class M(torch.nn.Sequential):
    def __init__(self):
        super().__init__(collections.OrderedDict([("relu\\x1b[2J", torch.nn.ReLU())]))
"""), "a Sequential whose layer is named with a terminal escape sequence",
     REL + "/attribute_name_escape.pt: error: attribute 'relu\\x1b[2J' has a name that zoc "
     "cannot print as it is, so it is no layer or tensor name zoc accepts")

# The debug records' source file names are printed escaped.
case("source_file_name_escape", scripted(HEADER + """\
        return torch.sort(x)[0]
""", filename="model\x1b[2J\n.py"), "an unsupported op in code from a file whose name holds an "
     "escape sequence and a newline",
     "(top-level module): aten::sort at model\\x1b[2J\\x0a.py:6:16")

# `1.0 - x` is torch.rsub, which TorchScript inlines as aten::neg then aten::add from its own
# builtin source ("<string>:11:9" was the whole message): the user's form and line are named.
case("rsub_constant", scripted(HEADER + """\
        return 1.0 - torch.sigmoid(x)
"""), "forward subtracts an activation from a constant",
     "(top-level module): aten::neg (-x, or `c - x` with a constant c, which TorchScript writes "
     "as aten::neg then aten::add: zoc has no op that negates or subtracts from a constant) at "
     "model.py:6:16")

# A model saved in training mode is compiled in that mode, where its batch statistics are refused
# as in a traced model, with the cause said once (zoc ran such models in eval mode, silently).
case("train_mode", scripted("""\
import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(self.conv(x))
"""), "a scripted Conv2d and BatchNorm2d saved without model.eval()",
     "bn: aten::batch_norm (batch statistics (training mode): call model.eval() before saving) "
     "at model.py:11:16",
     REL + "/train_mode.pt: note: the model was saved in training mode: call model.eval() before "
     "saving")

# LibTorch's internal checks are reported in the user's terms: data.pkl holds a tuple, not the
# module object.
case("internal_assert", edited(scripted(HEADER + "        return x\n"),
                               lambda name, data: b"\x80\x02)." if name.endswith("/data.pkl")
                               else data),
     "data.pkl holds an empty tuple where LibTorch expects the module object",
     "error: LibTorch 1.13.0 cannot read this TorchScript file format version 3: the file holds "
     "something LibTorch's loader does not expect there (its internal check isObject() failed: "
     "Expected Object but got Tuple)")

# Dicts of tensors (issue 37, compiler/frontend/torchscript/dicts.cpp) are followed only where
# their keys are strings known while compiling and every op on them is one zoc follows exactly.
DICT_HEADER = ("import torch\nfrom typing import Dict, List\n\n\nclass M(torch.nn.Module):\n"
               "    def forward(self, x):\n")
DICT_OPS = ("zoc follows dicts of tensors through d[k] = v, d[k], k in d, len, keys, values, items, "
            "get and copy")
case("dict_int_keys", scripted(DICT_HEADER + """\
        d = {0: x.relu()}
        return d[0]
"""), "a dict of tensors whose keys are ints",
     "(top-level module): prim::DictConstruct (a dict of tensors with keys of type int; zoc follows dicts "
     "whose keys are strings known when it compiles the model) at model.py:8:16")
case("dict_pop", scripted(DICT_HEADER + """\
        d = {"out": x.relu()}
        return d.pop("out")
"""), "d.pop(k) on a dict of tensors",
     "(top-level module): aten::pop (" + DICT_OPS + ") at model.py:8:16")
case("dict_missing_key", scripted(DICT_HEADER + """\
        d = {"out": x.relu()}
        return d["aux"]
"""), "reads a key the dict of tensors does not hold",
     "model.py:8:16: error: forward reads the key 'aux' of a dict that holds 'out' (TorchScript "
     "raises a KeyError)")
case("dict_of_lists_returned", scripted(DICT_HEADER + """\
        return {"out": [x.relu()]}
"""), "returns a dict whose value is a list of tensors",
     "error: forward returns a dict whose value for 'out' is not a tensor; zoc compiles models "
     "that return a dict of tensors")
case("dict_empty_returned", scripted(DICT_HEADER + """\
        d: Dict[str, torch.Tensor] = {}
        if x.dim() == 3:
            d["out"] = x
        return d
"""), "returns a dict of tensors that nothing was set in",
     "error: forward returns an empty dict; zoc compiles models that return tensors")
case("dict_attribute_write", scripted("""\
import torch
from typing import Dict


class M(torch.nn.Module):
    cache: Dict[str, torch.Tensor]

    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        self.cache["last"] = x
        return x.relu()
"""), "writes an activation into a dict attribute of the module",
     "(top-level module): aten::_set_item (it writes an activation into a dict that is not made "
     "by forward (a module attribute?); zoc does not change a module's values) at model.py:13:9")

# Issue 36. A layer called twice compiles for inference on one set of weights, but the trainer
# does not sum its calls' gradients and refuses it, at the second call.
case("shared_layer_train", scripted("""\
import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.twice = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.fc = torch.nn.Linear(3 * 8 * 8, 10)

    def forward(self, x):
        x = self.twice(torch.relu(self.twice(x)))
        return self.fc(torch.flatten(x, 1))
"""), "a convolution called twice, compiled for training",
     "model.py:11:13: error: layer 'twice_1' (conv2d) runs layer 'twice' a second time, on the "
     "same weights; zoc's trainer does not sum a shared layer's gradients over its calls, so "
     "training refuses shared layers (inference compiles them)",
     args="--input 3x8x8 --train")
# Adaptive max pooling maps to a max pool where the output size divides the input; its indices
# (return_indices=True) are not computed, so a use of them is refused by name.
POOL_HEADER = ("import torch\nimport torch.nn.functional as F\n\n\nclass M(torch.nn.Module):\n"
               "    def forward(self, x):\n")
INDICES = "the indices of adaptive_max_pool2d (return_indices=True)"
case("adaptive_max_pool_not_dividing", scripted(POOL_HEADER + """\
        return F.adaptive_max_pool2d(x, (3, 4))
"""), "adaptive max pooling of an 8x8 image to 3x4",
     "aten::adaptive_max_pool2d (output size 3x4 does not divide the 8x8 input; zoc maps "
     "adaptive max pooling only where it is a max pool with kernel = stride = input / output) at "
     "model.py:7:16")
case("adaptive_max_pool_indices_used", scripted(POOL_HEADER + """\
        y, i = F.adaptive_max_pool2d(x, 4, return_indices=True)
        return y + i.float()
"""), "adds adaptive max pooling's indices to its values",
     "(top-level module): aten::to (it reads " + INDICES + ", which zoc does not compute) at "
     "model.py:8:20")
case("adaptive_max_pool_indices_returned", scripted(POOL_HEADER + """\
        return F.adaptive_max_pool2d(x, 4, return_indices=True)
"""), "returns adaptive max pooling's values and indices",
     "error: forward returns " + INDICES + ", which zoc does not compute")

# ECA attention's expand_as maps only into the mul that broadcasts it (issue 36); added instead,
# it is refused by name.
case("expand_as_into_add", scripted("""\
import torch


class M(torch.nn.Module):
    def forward(self, x):
        return x + x.mean((2, 3), keepdim=True).expand_as(x)
"""), "adds a pooled image expanded to the image's shape",
     "(top-level module): aten::expand_as (an expand_as of [N, 3, 1, 1] to [N, 3, 8, 8] read by "
     "something other than a mul by that tensor; zoc maps expand_as only into a mul by the "
     "tensor it expands to (the mul broadcasts)) at model.py:6:20")

# Split attention's sum, stack and softmax over the radix (issue 36) map over dim 1 of a
# [N, R, C, H, W] view; over another dim they are refused by name.
case("radix_sum_keepdim", scripted(HEADER + """\
        y = torch.cat([x, x], 1)
        return y.view(y.shape[0], 2, 3, 8, 8).sum(1, keepdim=True)
"""), "sums the radix of a [N, R, C, H, W] view keeping the dim",
     "(top-level module): aten::sum (a sum over dims [1] (keepdim) of a 5-D [N, g, C/g, H, W] "
     "view of an image [N, 2, 3, 8, 8]; zoc sums over dim 1 of a [N, R, C, H, W] view of an "
     "image (split attention's radix)) at model.py:7:16")
case("stack_along_dim2", scripted(HEADER + """\
        return torch.stack([x, x], 2)
"""), "stacks two images along dim 2",
     "(top-level module): aten::stack (a stack along dim 2 of [N, 3, 8, 8]; zoc stacks images "
     "along dim 1 (SKNet's paths: [N, R, C, H, W])) at model.py:6:16")
case("radix_softmax_dim2", scripted(HEADER + """\
        y = torch.cat([x, x], 1)
        return torch.softmax(y.view(y.shape[0], 2, 3, 8, 8), 2).sum(1)
"""), "a softmax over dim 2 of a [N, R, C, H, W] view",
     "(top-level module): aten::softmax (a softmax over dim 2 of a 5-D [N, g, C/g, H, W] view of "
     "an image; zoc takes it over dim 1 (the radix)) at model.py:7:16")


def main():
    for pattern in ("*.pt", "*.expect"):
        for path in glob.glob(os.path.join(HERE, pattern)):
            if not os.path.basename(path).startswith("alias_"):  # make_aliasing.py writes those
                os.remove(path)
    for name, (data, description, messages, args) in sorted(CASES.items()):
        with open(os.path.join(HERE, name + ".pt"), "wb") as f:
            f.write(data)
        lines = ["# " + description, "model: %s/%s.pt" % (REL, name), "args: " + args]
        lines += ["expect: " + m for m in messages]
        with open(os.path.join(HERE, name + ".expect"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("make_cases: wrote %d cases to %s" % (len(CASES), REL))


if __name__ == "__main__":
    main()
