#!/usr/bin/env python3
"""Write TorchScript archives whose pickles reference every kind of global torch.jit.save uses.

zoc's archive check (compiler/frontend/torchscript/pickle_scan.cpp) refuses a pickle that names
any Python global outside an allow-list; these archives are where that list comes from, and the
unit tests check that every one of them passes. The modules hold what a pickle can refer to:
tensors of many dtypes (one Storage global each), a view, quantized and sparse tensors, lists of
ints, floats, bools and tensors, dicts, tuples, None, a complex number, a device, an enum, a
NamedTuple, nested modules, a frozen module (tensors in constants.pkl), an optimized one, a
traced one (torch 2.x writes traced_inputs.pkl) and one with an extra file.

Usage: make_attribute_archives.py --out DIR. Needs torch; runs on torch 1.13 and 2.x. The
archives in tests/torchscript/torch1.13/attributes/ were written by Debian's torch 1.13.1, those
in tests/torchscript/torch2.11/attributes/ by torch 2.11 on the GPU machine; both are checked in
(about 60 KB each), so CI reads archives of both without either PyTorch.
"""

import argparse
import enum
import os
import warnings
from typing import Dict, List, NamedTuple, Optional, Tuple

import torch
import torch.nn as nn


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Pair(NamedTuple):
    a: int
    b: float


class Attributes(nn.Module):
    ints: List[int]
    floats: List[float]
    bools: List[bool]
    tensors: List[torch.Tensor]
    d: Dict[str, int]
    dt: Dict[str, torch.Tensor]
    t: Tuple[int, str]
    o: Optional[int]

    def __init__(self):
        super().__init__()
        self.ints = [1, 2]
        self.floats = [1.5]
        self.bools = [True]
        self.tensors = [torch.ones(2)]
        self.d = {"a": 1}
        self.dt = {"w": torch.zeros(3, dtype=torch.float16)}
        self.t = (1, "x")
        self.o = None
        self.c = 1 + 2j
        self.s = "hello"
        self.dev = torch.device("cpu")
        self.p = Pair(1, 2.0)
        self.col = Color.RED
        for name, dtype in [("h", torch.half), ("bf", torch.bfloat16), ("i8", torch.int8),
                            ("u8", torch.uint8), ("b", torch.bool), ("f64", torch.float64),
                            ("i32", torch.int32), ("i16", torch.int16), ("cf", torch.complex64)]:
            self.register_buffer(name, torch.ones(2, dtype=dtype))
        self.register_buffer("view", torch.arange(10.0)[2:6])
        self.conv = nn.Conv2d(3, 4, 3)
        self.lin = nn.Linear(4, 2)
        self.seq = nn.Sequential(nn.ReLU(), nn.BatchNorm2d(4))
        self.ml = nn.ModuleList([nn.Identity()])
        self.md = nn.ModuleDict({"x": nn.Identity()})

    def forward(self, x):
        if self.col == Color.RED:
            x = x + 1
        return self.seq(self.conv(x)) * self.h.float().sum() + len(self.ints)


class Sparse(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("sp", torch.eye(3).to_sparse())

    def forward(self, x):
        return x


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    out = p.parse_args().out
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(Attributes())
        scripted.save(os.path.join(out, "attrs.pt"))
        torch.jit.freeze(scripted.eval()).save(os.path.join(out, "attrs_frozen.pt"))
        conv_relu = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
        torch.jit.trace(conv_relu, torch.randn(1, 3, 8, 8)).save(os.path.join(out, "traced.pt"))
        conv_bn = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).eval()
        torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(conv_bn))).save(
            os.path.join(out, "optimized.pt"))
        quant = torch.quantization.quantize_dynamic(nn.Sequential(nn.Linear(4, 4)), {nn.Linear},
                                                    dtype=torch.qint8)
        torch.jit.script(quant).save(os.path.join(out, "quant.pt"))
        torch.jit.script(nn.Sequential(nn.Conv2d(3, 4, 3))).save(
            os.path.join(out, "extra.pt"), _extra_files={"notes.txt": "hi"})
        torch.jit.script(Sparse()).save(os.path.join(out, "sparse.pt"))
    print("make_attribute_archives: wrote 7 archives to %s (torch %s)" % (out, torch.__version__))


if __name__ == "__main__":
    main()
