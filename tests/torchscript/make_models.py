#!/usr/bin/env python3
"""Write the small TorchScript models that zoc's TorchScript frontend tests read.

The torchvision ResNets (models/export.py --torchscript both) cover what real CNNs use; these
cover the rest of the ops the frontend maps, in the spellings people write, and the errors:

  opzoo/      every mapped op family once: conv with bias, padding='same' with dilation and
              groups, BatchNorm, sigmoid, tanh, cat, avg/max pooling (module and functional),
              adaptive_avg_pool2d to 2x2, x.view(x.size(0), -1), addmm and matmul + bias as
              hand-written linear layers, relu, dropout, softmax. Scripted and traced, with a
              seeded input and PyTorch's output (fp32), like export.py writes for the ResNets.
  unsupported/ a model that calls torch.nn.functional.softplus (inside submodule `act`) and
              torch.sort (at the top level): loading it must fail with one error naming both.

Usage: make_models.py --out DIR. Needs torch and numpy; runs on torch 1.13 and 2.x.
The reference_data fixture (tests/make_reference_data.sh) runs it with Debian's torch 1.13;
torch2.11/ beside it holds the same models written by torch 2.11 / torchvision 0.26 on the GPU
machine (`python3 tests/torchscript/make_models.py --out DIR` there; 100 KB, checked in), so CI
also reads archives of a current PyTorch.
"""

import argparse
import os
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class AddmmLinear(nn.Module):
    """nn.Linear as older tracers recorded it: addmm(bias, x, weight.t())."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) / n_in ** 0.5)
        self.bias = nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight.t())


class MatmulLinear(nn.Module):
    """A linear layer written as x @ W^T + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) / n_in ** 0.5)
        self.bias = nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        return x.matmul(self.weight.t()) + self.bias


class OpZoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.same = nn.Conv2d(8, 8, 3, padding="same", dilation=2, groups=2, bias=False)
        self.pool = nn.AvgPool2d(2)
        self.head = AddmmLinear(16 * 2 * 2, 32)
        self.drop = nn.Dropout(0.25)
        self.fc = MatmulLinear(32, 10)

    def forward(self, x):
        x = torch.sigmoid(self.bn(self.conv(x)))
        y = torch.tanh(self.same(x))
        x = torch.cat([x, y], 1)
        x = self.pool(x)
        x = F.max_pool2d(x, 2, 2)
        x = F.adaptive_avg_pool2d(x, (2, 2))
        x = x.view(x.size(0), -1)
        x = F.relu(self.head(x))
        x = self.fc(self.drop(x))
        return F.softmax(x, dim=1)


class Act(nn.Module):
    def forward(self, x):
        return F.softplus(x)


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = Act()

    def forward(self, x):
        x = self.act(self.conv(x))
        x, _ = torch.sort(x, dim=1)
        return torch.flatten(x, 1)


def save(module, x, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*torch.jit.*")
        torch.jit.script(module).save(os.path.join(out_dir, "model.pt"))
        torch.jit.trace(module, x).save(os.path.join(out_dir, "model_traced.pt"))
        y = module(x)
    np.save(os.path.join(out_dir, "input.npy"), x.numpy())
    np.save(os.path.join(out_dir, "output.npy"), y.numpy())  # written last: the "done" marker


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = False
    zoo = OpZoo().eval()
    with torch.no_grad():  # non-trivial running statistics, so BatchNorm matters
        zoo.bn.running_mean.uniform_(-0.5, 0.5)
        zoo.bn.running_var.uniform_(0.5, 1.5)
        zoo.bn.weight.uniform_(0.5, 1.5)
        zoo.bn.bias.uniform_(-0.5, 0.5)
    save(zoo, torch.randn(2, 3, 16, 16), os.path.join(args.out, "opzoo"))
    save(Unsupported().eval(), torch.randn(1, 3, 8, 8), os.path.join(args.out, "unsupported"))
    print("make_models: wrote opzoo and unsupported to %s" % args.out)


if __name__ == "__main__":
    main()
