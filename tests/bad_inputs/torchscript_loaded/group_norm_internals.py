#!/usr/bin/env python3
"""Writes group_norm_internals.pt beside this file: a scripted GroupNorm, which zoc refuses as
aten::group_norm alone, not also as the batch-size arithmetic F.group_norm inlines to check its
argument (issue 32). The class is scripted from SOURCE under the file name group_norm.py
(tests/torchscript/make_aliasing.py's module_from_source), so the error's location is stable."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "torchscript"))

import torch  # noqa: E402
from make_aliasing import module_from_source  # noqa: E402

SOURCE = '''
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        return self.gn(self.conv(x))
'''

if __name__ == "__main__":
    torch.manual_seed(0)
    m = module_from_source(SOURCE, "group_norm.py")
    torch.jit.script(m.M().eval()).save(os.path.join(HERE, "group_norm_internals.pt"))
