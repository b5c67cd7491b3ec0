#!/usr/bin/env python3
"""Which GPU kernels PyTorch eager runs for a zoo model, and how long each takes.

Why: the harness times whole forwards. Where zoc loses a row, the question is what PyTorch
does differently in the layers that cost zoc the most: which cuDNN algorithm `cudnn.benchmark`
picked (the kernel names say implicit GEMM, Winograd, FFT), and how the time splits between
convolutions and the elementwise kernels around them. This prints PyTorch's profiler table of
GPU kernels, grouped by name and sorted by total time, for the same model (models/zoo.py's
seeded weights) and configuration as the harness's eager row.

Usage (on the GPU): torch_kernels.py MODEL [--precision fp32|fp16] [--batch N] [--res R]
                    [--rows K]
fp32 means TF32 off, as in the harness; fp16 runs channels-last, as the harness's fp16 rows.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "models"))
import zoo  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--precision", choices=("fp32", "fp16"), default="fp32")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--res", type=int, default=520)
    p.add_argument("--rows", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main():
    a = parse()
    if not torch.cuda.is_available():
        raise SystemExit("torch_kernels.py: no CUDA device")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    model = zoo.build(a.model, a.seed).cuda()
    x = torch.randn(a.batch, 3, a.res, a.res, device="cuda")
    if a.precision == "fp16":
        model = model.half().to(memory_format=torch.channels_last)
        x = x.half().contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        for _ in range(5):  # cudnn.benchmark measures its algorithms on the first calls
            zoo.main_output(model(x))
        torch.cuda.synchronize()
        acts = [torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(3):
                zoo.main_output(model(x))
            torch.cuda.synchronize()
    print("# %s %s batch %d %dx%d, %s, torch %s, cuDNN %s: GPU kernels of 3 forwards"
          % (a.model, a.precision, a.batch, a.res, a.res, torch.cuda.get_device_name(),
             torch.__version__, torch.backends.cudnn.version()))
    table = prof.key_averages()
    for key in ("device_time_total", "cuda_time_total"):  # torch >= 2.4 names it "device"
        try:
            print(table.table(sort_by=key, row_limit=a.rows, max_name_column_width=110))
            return
        except (AttributeError, KeyError, ValueError):
            continue
    raise SystemExit("torch_kernels.py: this torch's profiler sorts by neither device nor cuda "
                     "time")


if __name__ == "__main__":
    main()
