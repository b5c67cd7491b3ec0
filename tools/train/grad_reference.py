#!/usr/bin/env python3
"""One training step's parameter gradients by PyTorch autograd: the oracle for issue 8's first
criterion (the generated trainer's gradients within relative L2 error 1e-3 of these, fp32).

The step is the trainers' (tools/train/README.md) without the optimizer: the initial weights
from --init-weights, a batch of --batch images, BatchNorm in training mode (batch statistics;
running averages updated with momentum 0.1), softmax cross-entropy averaged over the batch, then
backward. Weight decay is not part of the gradient (SGD adds it in the update), and dropout is
the identity, since no other implementation can draw PyTorch's masks. fp32 with TF32 off and
deterministic cuDNN algorithms.

The output file (safetensors, written with models/safetensors_io.py) holds `input` (F32
[B, C, H, W], normalized), `labels` (I32 [B], as zoc::data::normalized_batch gives them),
`logits` (F32 [B, classes]), `loss` (F32 [1]), `grad.<name>` for every parameter under its
state_dict name, and `after.<name>` for every buffer after the step (BatchNorm running
statistics and num_batches_tracked); the metadata records model, seed, device and versions.

  grad_reference.py --model lenet --init-weights W --data DIR --batch-from-epoch0 --batch 8
                    --seed 0 --out grads.safetensors [--device cuda]
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import idx_data  # noqa: E402
import mt19937_64  # noqa: E402
import nets  # noqa: E402

def make_batch(args):
    """(input float32 [B, 1, 28, 28], labels int64 [B]): the first B images of epoch 0's order,
    or, with --random-input, seeded N(0, 1) images and uniform labels (no data needed)."""
    if args.batch_from_epoch0:
        pixels, labels = idx_data.read_split(args.data, "train")
        if args.batch > pixels.shape[0]:
            raise ValueError("%s: --batch %d is more than the %d training images"
                             % (args.data, args.batch, pixels.shape[0]))
        idx = np.asarray(mt19937_64.shuffled_order(pixels.shape[0], args.seed, 0)[:args.batch])
        return (torch.from_numpy(idx_data.normalize(pixels[idx])),
                torch.from_numpy(labels[idx].astype(np.int64)))
    g = torch.Generator().manual_seed(args.seed * 16 + 5)
    x = torch.randn((args.batch, args.in_channels, args.resolution, args.resolution), generator=g,
                    dtype=torch.float32)
    y = torch.randint(0, 10, (args.batch,), generator=g, dtype=torch.int64)
    return x, y


def gradients(args):
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda but torch.cuda.is_available() is False")
    net = nets.build(args.model, in_channels=args.in_channels, resolution=args.resolution)
    nets.load(net, args.init_weights)
    net.train()
    for m in net.modules():
        if isinstance(m, nn.Dropout):
            m.eval()  # identity: see the docstring
    device = torch.device(args.device)
    net.to(device)
    x, y = make_batch(args)
    if args.float64:  # the exact answer, up to float64 rounding (saved as float32 all the same)
        net.double()
        logits = net(x.to(device).double())
    elif args.autocast:  # PyTorch AMP: bf16/fp16 convolutions and linear layers, fp32 weights, loss
        net.to(memory_format=torch.channels_last)
        dtype = torch.bfloat16 if args.autocast == "bf16" else torch.float16
        with torch.autocast(device_type=args.device, dtype=dtype):
            logits = net(x.to(device).contiguous(memory_format=torch.channels_last))
    else:
        logits = net(x.to(device))
    # (under autocast too: cross_entropy is one of autocast's fp32 ops)
    loss = F.cross_entropy(logits.float(), y.to(device), label_smoothing=args.label_smoothing)
    if args.autocast == "fp16":  # as GradScaler's first step: the loss scaled, then unscaled
        (loss * args.loss_scale).backward()
        for p in net.parameters():
            p.grad.mul_(1.0 / args.loss_scale)
    else:
        loss.backward()
    out = {"input": x.numpy(), "labels": y.numpy().astype(np.int32),
           "logits": logits.detach().cpu().float().numpy(),
           "loss": loss.detach().cpu().float().reshape(1).numpy()}
    for name, p in net.named_parameters():
        if p.grad is None:
            raise ValueError("parameter %s received no gradient" % name)
        out["grad." + name] = p.grad.detach().cpu().float().numpy().copy()
    for name, b in net.named_buffers():  # copies: later --steps update the buffers in place
        t = b.detach().cpu()
        out["after." + name] = (t.float() if t.is_floating_point() else t).numpy().copy()
    if args.steps > 0:  # then --steps optimizer steps on the same batch, as the trainer's
        xs = x.to(device)
        take_steps(args, net, xs.double() if args.float64 else xs, y.to(device))
    return out, float(loss)


def take_steps(args, net, x, y):
    """The gradients in place are the first step's; each later step recomputes them. Writes the
    weights (state_dict) after the last step to --weights-out."""
    if args.optimizer == "adamw":  # torch.optim.AdamW's defaults where not given
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3 if args.lr is None else args.lr,
                                betas=tuple(args.betas),
                                eps=args.eps, weight_decay=(1e-2 if args.weight_decay is None
                                                            else args.weight_decay))
    else:
        opt = torch.optim.SGD(net.parameters(), lr=0.1 if args.lr is None else args.lr,
                              momentum=args.momentum,
                              weight_decay=(5e-4 if args.weight_decay is None
                                            else args.weight_decay))
    for s in range(args.steps):
        if s > 0:
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(net(x), y, label_smoothing=args.label_smoothing).backward()
        opt.step()
    nets.save(net.float().cpu(), args.weights_out,
              {"optimizer": args.optimizer, "steps": args.steps})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=nets.MODELS)
    p.add_argument("--init-weights", required=True,
                   help="safetensors (train_pytorch.py --init-out)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--batch-from-epoch0", action="store_true",
                        help="the first --batch images of epoch 0's order of --data")
    source.add_argument("--random-input", action="store_true",
                        help="seeded N(0,1) images and random labels instead")
    p.add_argument("--data", help="folder of the idx files (raw or .gz)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--in-channels", type=int, default=1, help="the model's and random input's")
    p.add_argument("--resolution", type=int, default=28, help="the random input's height = width")
    p.add_argument("--tf32", action="store_true",
                   help="let cuDNN and cuBLAS round fp32 to TF32 (zoc's --precision tf32)")
    p.add_argument("--autocast", nargs="?", const="bf16", choices=("bf16", "fp16"),
                   help="the step under torch.autocast in bf16 (the default) or fp16, "
                        "channels-last (zoc's --precision bf16 / fp16); fp16 scales the loss by "
                        "--loss-scale and unscales the gradients")
    p.add_argument("--loss-scale", type=float, default=65536.0,
                   help="--autocast fp16's loss scale (GradScaler's init_scale, and the zoc fp16 "
                        "trainer's first, 65536; the trainer's --loss-scale)")
    p.add_argument("--seed", type=int, default=0, help="the order's seed (or the random input's)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--float64", action="store_true",
                   help="compute in float64: the exact gradient, to judge fp32 implementations "
                        "by (ResNet-50's training-mode gradient is ill-conditioned: PyTorch's own "
                        "fp32 differs from it by about 1%%)")
    p.add_argument("--label-smoothing", type=float, default=0.0,
                   help="cross_entropy's label_smoothing (the trainer's --label-smoothing)")
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=0,
                   help="then this many optimizer steps on the batch (the first uses the "
                        "gradients above), the weights after them to --weights-out")
    p.add_argument("--weights-out")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    p.add_argument("--lr", type=float, help="default: the optimizer's (0.1 SGD, 1e-3 AdamW)")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, help="default: 5e-4 SGD, 1e-2 AdamW")
    p.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.999))
    p.add_argument("--eps", type=float, default=1e-8)
    args = p.parse_args(argv)
    if args.batch_from_epoch0 and not args.data:
        p.error("--batch-from-epoch0 needs --data")
    if args.steps > 0 and not args.weights_out:
        p.error("--steps needs --weights-out")
    if args.batch < 2:
        p.error("--batch must be >= 2 (training-mode BatchNorm needs two samples)")
    try:
        tensors, loss = gradients(args)
        meta = {"model": args.model, "seed": str(args.seed), "batch": str(args.batch),
                "device": args.device, "init_weights": os.path.basename(args.init_weights),
                "batch_source": "epoch0" if args.batch_from_epoch0 else "random",
                "dropout": "identity", "batchnorm": "train (momentum 0.1, eps 1e-5)",
                "loss": "cross_entropy mean, label_smoothing %g" % args.label_smoothing,
                "tf32": "on" if args.tf32 else "off", "torch": torch.__version__,
                "dtype": "float64" if args.float64 else "float32",
                "autocast": args.autocast or "off",
                "loss_scale": "%g" % args.loss_scale if args.autocast == "fp16" else "none"}
        nets.safetensors_io.save_file(tensors, args.out, metadata=meta)
    except (idx_data.DataError, ValueError, OSError) as e:
        raise SystemExit("grad_reference.py: error: %s" % e)
    grads = sum(1 for k in tensors if k.startswith("grad."))
    print("grad_reference: %s batch %d loss %.6f, %d gradients -> %s"
          % (args.model, args.batch, loss, grads, args.out))


if __name__ == "__main__":
    main()
