#!/usr/bin/python3
"""Write the aliasing corpus of issue 32: small models whose in-place ops change a tensor that
is held under another name, so that zoc must read the written value or refuse the model.

A scripted model in which nn.ReLU(inplace=True) in a submodule rewrote a tensor its caller kept
as `identity` was read with the old value (a wrong number, no warning). Every form here is one
way PyTorch code shares storage: submodule and function calls, nested calls, views, list
elements, chunks, tuples, branches, the model's input, augmented assignment.

  --out DIR      for each form zoc must compute, DIR/NAME/{model.pt, model_traced.pt,
                 input.npy, output.npy} (PyTorch's output, fp32) and DIR/cases.txt listing them;
                 the reference_data fixture writes it, tests/numeric/torchscript_aliasing_test
                 checks zoc's interpreter within 1e-5 relative L2.
  --refused DIR  for each form zoc must refuse, DIR/alias_NAME.pt (scripted): checked in under
                 tests/bad_inputs/torchscript_loaded/ beside alias_NAME.expect.

The classes are scripted from SOURCE under the fixed file name aliasing.py, so the locations in
zoc's messages do not depend on where this script lives. Seeded; torch 1.13 (/usr/bin/python3).
"""

import argparse
import linecache
import os
import sys
import types
import warnings

import numpy as np
import torch

SOURCE = '''\
from typing import List
import torch
import torch.nn as nn
import torch.nn.functional as F


class Convs(nn.Module):
    # what most forms below compute with; `form` picks a variant of a form
    def __init__(self, form: int = 0):
        super().__init__()
        self.form = form
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1)
        self.conv2 = nn.Conv2d(8, 8, 3, 1, 1)
        self.relu = nn.ReLU(inplace=True)


class Residual(nn.Module):
    # issue 32's minimal case: the in-place activation rewrites `identity` too
    def __init__(self, act: nn.Module):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1)
        self.act = act
        self.conv2 = nn.Conv2d(8, 8, 3, 1, 1)

    def forward(self, x):
        out = self.conv1(x)
        identity = out
        out = self.act(out)
        return self.conv2(out) + identity


class FunctionalRelu(nn.Module):
    def forward(self, x):
        return F.relu(x, inplace=True)


class AddInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, 1, 1)

    def forward(self, x):
        x += self.conv(x)
        return x


class PreActivation(nn.Module):
    # Xception's block: its first ReLU is in place, so the skip path reads the ReLU'd input
    def __init__(self):
        super().__init__()
        self.rep = nn.Sequential(nn.ReLU(inplace=True), nn.Conv2d(8, 8, 3, 1, 1),
                                 nn.BatchNorm2d(8))

    def forward(self, inp):
        x = self.rep(inp)
        return x + inp


class Xception(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.block1 = PreActivation()
        self.block2 = PreActivation()

    def forward(self, x):
        return self.block2(self.block1(self.stem(x)))


class Wrap(nn.Module):
    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


@torch.jit.script
def relu_in_place(x):
    return x.relu_()


class CallsFunction(Convs):
    def forward(self, x):
        out = self.conv1(x)
        identity = out
        y = relu_in_place(out)  # y, out and identity: one tensor
        return self.conv2(out) + identity


class Updates(Convs):
    # `out.add_(y)`, `out += y` and an out= argument write `identity` too; `out = out + y`
    # makes a new tensor
    def forward(self, x):
        out = self.conv1(x)
        identity = out
        y = self.conv2(out)
        if self.form == 0:
            out.add_(y)
        elif self.form == 1:
            out += y
        elif self.form == 2:
            torch.add(out, y, out=out)
        else:
            out = out + y
        return torch.cat([out, identity], 1)


class InputInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1)
        self.conv2 = nn.Conv2d(3, 8, 3, 1, 1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.conv1(x)
        self.relu(x)
        return y + self.conv2(x)


class ReturnsAlias(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.conv(x)
        identity = out
        out = self.relu(out)
        return identity


class ListElement(Convs):
    # a list holds the tensor: writing it (form 0), or writing the list's element, changes both
    def forward(self, x):
        a = self.conv1(x)
        feats: List[torch.Tensor] = [a, self.conv2(a)]
        if self.form == 1:
            feats[0].relu_()
            return torch.cat([a, feats[1]], 1)
        self.relu(a)
        return torch.cat(feats, 1)


class TupleElement(Convs):
    def forward(self, x):
        out = self.conv1(x)
        pair = (out, out)
        self.relu(pair[0])
        return self.conv2(pair[1]) + out


class Branch(Convs):
    # `identity` is `out` (form 0) through a branch whose condition is a module constant
    def forward(self, x):
        out = self.conv1(x)
        if self.form == 0:
            identity = out
        else:
            identity = torch.sigmoid(out)
        self.relu(out)
        return self.conv2(out) + identity


class LoopWrite(Convs):
    # writes in a loop, each reading the tensor the last one wrote, under both names
    def forward(self, x):
        out = self.conv1(x)
        identity = out
        for _ in range(2):
            out.mul_(torch.sigmoid(identity))
        return self.conv2(out) + identity


class DetachAlias(Convs):
    # detach() is a view of the whole tensor: the write through it changes `out`
    def forward(self, x):
        out = self.conv1(x)
        d = out.detach()
        d.relu_()
        return self.conv2(out) + d


class ChunkThenWrite(nn.Module):
    # a chunk written in place and read after, its sibling read before the write
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)

    def forward(self, x):
        a, b = self.conv(x).chunk(2, 1)
        b = torch.sigmoid(b)
        a.relu_()
        return torch.cat([a, b], 1)


class WriteThenRead(nn.Module):
    # refused: a view made before the write, read after it
    def __init__(self, form: int):
        super().__init__()
        self.form = form
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.fc = nn.Linear(8 * 8 * 8, 4)

    def forward(self, x):
        out = self.conv(x)
        if self.form == 0:
            flat = out.flatten(1)
            out.relu_()
            return self.fc(flat)
        a, b = out.chunk(2, 1)
        out.relu_()
        return torch.cat([b, a], 1)


class WriteIntoView(Convs):
    # refused: a write through a view that is part, or another shape, of a tensor read later
    def forward(self, x):
        out = self.conv1(x)
        if self.form == 0:
            a, b = out.chunk(2, 1)
            a.relu_()
        elif self.form == 1:
            y = out.view(out.size(0), -1)
            y.relu_()
        elif self.form == 2:
            out[:, :4].relu_()
        else:
            a, b = out.chunk(2, 1)
            a.relu_()
            return torch.sigmoid(b)  # PyTorch's b is unchanged; zoc does not know the parts
        return torch.sigmoid(out)


class CloneNoAlias(Convs):
    # clone() copies: the write leaves `identity` as it was
    def forward(self, x):
        out = self.conv1(x)
        identity = out.clone()
        self.relu(out)
        return self.conv2(out) + identity
'''


def module_from_source(source, filename="aliasing.py"):
    """The module `source` defines, with `filename` as its file for TorchScript's debug records
    (given to linecache, where inspect finds it)."""
    module = types.ModuleType("zoc_aliasing")
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[module.__name__] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def cases(m):
    """name -> (module, routes zoc must compute: "scripted", "traced"); the forms zoc refuses
    have no route here and are written by --refused."""
    nn = torch.nn
    both = ("scripted", "traced")
    return {
        "minimal_relu": (m.Residual(nn.ReLU(inplace=True)), both),
        "relu6": (m.Residual(nn.ReLU6(inplace=True)), both),
        "hardswish": (m.Residual(nn.Hardswish(inplace=True)), both),
        "silu": (m.Residual(nn.SiLU(inplace=True)), both),
        "functional_relu": (m.Residual(m.FunctionalRelu()), both),
        "submodule_iadd": (m.Residual(m.AddInPlace()), both),
        "xception_preact": (m.Xception(), both),
        "nested_two_levels": (m.Residual(m.Wrap(m.Wrap(nn.ReLU(inplace=True)))), both),
        "script_function": (m.CallsFunction(), both),
        "add_": (m.Updates(0), both),
        "iadd": (m.Updates(1), both),
        "out_argument": (m.Updates(2), both),
        "rebind_no_alias": (m.Updates(3), both),
        "model_input": (m.InputInPlace(), both),
        "returns_alias": (m.ReturnsAlias(), both),
        "list_holds_alias": (m.ListElement(0), both),
        "list_element_written": (m.ListElement(1), both),
        "tuple_element": (m.TupleElement(), both),
        "branch_alias": (m.Branch(0), both),
        "branch_no_alias": (m.Branch(1), both),
        "loop": (m.LoopWrite(), both),
        "detach_view": (m.DetachAlias(), both),
        "clone_no_alias": (m.CloneNoAlias(), both),
        "chunk_then_write": (m.ChunkThenWrite(), both),
    }


def refused(m):
    """name -> module zoc must refuse, scripted (the .expect beside it says with what)."""
    return {
        "flatten_then_write": m.WriteThenRead(0),
        "chunk_then_write_whole": m.WriteThenRead(1),
        "write_into_chunk": m.WriteIntoView(0),
        "write_into_view": m.WriteIntoView(1),
        "write_into_slice": m.WriteIntoView(2),
        "read_sibling_chunk": m.WriteIntoView(3),
    }


def seeded(module):
    """Seeded weights and non-trivial BatchNorm statistics, in eval mode."""
    with torch.no_grad():
        for mod in module.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.5, 0.5)
    return module.eval()


def save(module, routes, x, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        y = module(x.clone())  # in place on the input: every run gets its own copy
        if "scripted" in routes:
            s = torch.jit.script(module)
            assert torch.equal(s(x.clone()), y)
            s.save(os.path.join(out_dir, "model.pt"))
        if "traced" in routes:
            t = torch.jit.trace(module, x.clone(), check_trace=False)
            assert torch.equal(t(x.clone()), y)
            t.save(os.path.join(out_dir, "model_traced.pt"))
    np.save(os.path.join(out_dir, "input.npy"), x.numpy())
    np.save(os.path.join(out_dir, "output.npy"), y.numpy())


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":  # TorchScript's code lists sets: same bytes
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  dict(os.environ, PYTHONHASHSEED="0"))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out")
    p.add_argument("--refused")
    args = p.parse_args()
    m = module_from_source(SOURCE)
    torch.manual_seed(0)
    if args.out:
        names = []
        for name, (module, routes) in cases(m).items():
            save(seeded(module), routes, torch.randn(2, 3, 8, 8), os.path.join(args.out, name))
            names.append(name)
        with open(os.path.join(args.out, "cases.txt"), "w") as f:  # written last: "done"
            f.write("\n".join(names) + "\n")
        print("make_aliasing: wrote %d forms to %s" % (len(names), args.out))
    if args.refused:
        for name, module in refused(m).items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.jit.script(seeded(module)).save(
                    os.path.join(args.refused, "alias_%s.pt" % name))
        print("make_aliasing: wrote %d refused forms to %s" % (len(refused(m)), args.refused))


if __name__ == "__main__":
    main()
