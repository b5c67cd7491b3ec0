#!/usr/bin/env python3
"""The PyTorch eager (Python) baseline of issue 8: Fashion-MNIST training under zoc's conventions.

zoc's generated trainer must match PyTorch's accuracy and beat its time per step; this is the
PyTorch side of that comparison, and train_libtorch.cpp the LibTorch side. Both follow
tools/train/README.md to the letter: the data order of runtime/zoc/train/datasets.h (reproduced by
mt19937_64.py), the normalization table of idx_data.py, initial weights from one safetensors file
(nets.py), SGD with the stated hyperparameters and schedule, fp32 with TF32 off, and the same
per-epoch CSV. The whole normalized training set is kept on the device and each batch gathered
there, the fastest input path a framework has, so the baseline's step time is a lower bound.

With --ddp it is the PyTorch DistributedDataParallel baseline of issue 21, one process per GPU
as torchrun starts them: NCCL, DDP's defaults (25 MB buckets overlapping the backward pass,
rank 0's buffers broadcast before each forward) with gradient_as_bucket_view, --batch the global
batch split evenly, each rank taking positions rank, rank + W, ... of the same seeded order (what
DistributedSampler does with an order; zoc's trainer shards the same way), metrics summed over
the ranks, evaluation and the CSV on rank 0.

  train_pytorch.py --model lenet --data DIR --epochs 5 --seed 0 --csv out.csv
  train_pytorch.py --model resnet50 --seed 0 --init torchvision --init-out init.safetensors
  torchrun --standalone --nproc_per_node 2 train_pytorch.py --ddp --model resnet50 --data DIR ...

Mixed precision and compilation, as users train today (issue 38): --precision bf16 or fp16 runs
the forward pass and loss under torch.autocast (fp16 with a GradScaler), weights and optimizer
state in fp32; tf32 lets cuDNN and cuBLAS round fp32 to TF32; fp32 keeps TF32 off.
--channels-last stores the model and its inputs NHWC; --compile MODE wraps the
model in torch.compile, whose compilation (the first step's wall time beyond a compiled step) is
reported apart as compile_s. --resize S and --channels C resize the images (idx_data.resize,
the zoc trainer's rule) and replicate them to C channels: Fashion-MNIST at 64x64x3.

  train_pytorch.py --model mobilenet_v2 --resize 64 --channels 3 --precision bf16 \
      --channels-last --compile max-autotune --data DIR --init-weights init.safetensors
"""

import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import idx_data  # noqa: E402
import mt19937_64  # noqa: E402
import nets  # noqa: E402

IMPL = "pytorch-eager"
IMPL_COMPILE = {"default": "pytorch-compile", "reduce-overhead": "pytorch-compile-reduce-overhead",
                "max-autotune": "pytorch-compile-max-autotune"}
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}
IMPL_DDP = "pytorch-ddp"
CSV_FIELDS = ("impl", "model", "dataset", "seed", "epoch", "train_loss", "train_acc", "test_acc",
              "step_ms", "epoch_s", "peak_mem_mb", "world_size", "img_per_s")
DEFAULT_LR = {"lenet": 0.05, "resnet50": 0.1, "mobilenet_v2": 0.05}


def learning_rate(schedule, base, epoch, epochs, step, steps_per_epoch):
    """The rate of one step (train_libtorch.cpp has the same function):
    constant: base; step: base * 0.1 ** (epochs passed of ceil(E/2), ceil(3E/4));
    cosine: base * (1 + cos(pi * t / T)) / 2 with t the global step, T all steps."""
    if schedule == "constant":
        return base
    if schedule == "step":
        milestones = ((epochs + 1) // 2, (3 * epochs + 3) // 4)
        return base * 0.1 ** sum(1 for m in milestones if epoch >= m)
    t = epoch * steps_per_epoch + step
    return base * 0.5 * (1.0 + math.cos(math.pi * t / (epochs * steps_per_epoch)))


def format_row(row):
    """One CSV line; train_libtorch.cpp prints the same formats."""
    return "%s,%s,%s,%d,%d,%.6f,%.6f,%.6f,%.4f,%.3f,%.1f,%d,%.1f" % tuple(row[k] for k in CSV_FIELDS)


def set_backend_flags(precision):
    """fp32: TF32 off everywhere; tf32: on for cuDNN and cuBLAS; bf16/fp16 (autocast): PyTorch's
    defaults for what stays fp32 (cuDNN TF32 on, cuBLAS off)."""
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision != "fp32"
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = False


class StepTimer:
    """Per-step times: CUDA events on the GPU (read once per epoch), the host clock on the CPU."""

    def __init__(self, cuda):
        self.cuda, self.pairs = cuda, []

    def start(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.pairs.append([e, None])
        else:
            self.pairs.append([time.perf_counter(), None])

    def stop(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.pairs[-1][1] = e
        else:
            self.pairs[-1][1] = time.perf_counter()

    def median_ms(self):
        if self.cuda:
            torch.cuda.synchronize()
            times = [a.elapsed_time(b) for a, b in self.pairs]
        else:
            times = [(b - a) * 1e3 for a, b in self.pairs]
        self.pairs = []
        return statistics.median(times) if times else float("nan")


def peak_mem_mb(cuda):
    """GPU: the caching allocator's peak since the epoch began; CPU: the process's peak RSS."""
    if cuda:
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def autocast(args):
    """The forward pass's precision context: torch.autocast for bf16/fp16, else nothing."""
    on = args.precision in AUTOCAST
    return torch.autocast(device_type=args.device, dtype=AUTOCAST.get(args.precision),
                          enabled=on)


def grad_scaler(args):
    """fp16's dynamic loss scaling (PyTorch's defaults); a pass-through otherwise."""
    on = args.precision == "fp16"
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):  # torch >= 2.3
        return torch.amp.GradScaler(args.device, enabled=on)
    return torch.cuda.amp.GradScaler(enabled=on)


def evaluate(net, x, y, batch, args):
    """Top-1 accuracy over every sample, eval mode (running statistics, no dropout)."""
    net.eval()
    correct = torch.zeros((), dtype=torch.int64, device=x.device)
    with torch.no_grad(), autocast(args):
        for first in range(0, x.shape[0], batch):
            logits = net(x[first:first + batch])
            correct += (logits.float().argmax(1) == y[first:first + batch]).sum()
    net.train()
    return int(correct) / x.shape[0]


def pipeline(pixels, args):
    """The images as the model takes them: --resize, then --channels (idx_data's rules)."""
    if args.resize:
        pixels = idx_data.resize(pixels, args.resize)
    if args.channels:
        pixels = idx_data.replicate_channels(pixels, args.channels)
    return pixels


def make_net(args):
    net = nets.build(args.model, num_classes=10, in_channels=args.channels or 1,
                     resolution=args.resize or 28)
    if args.init_weights:
        nets.load(net, args.init_weights)
    else:
        nets.initialize(net, args.init, args.seed, args.zero_init_residual)
    return net


class Dist:
    """The process group of a --ddp run (torchrun's environment), or one process."""

    def __init__(self, args):
        self.on = args.ddp
        self.rank, self.world = 0, 1
        if not self.on:
            return
        import torch.distributed as dist
        self.dist = dist
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if args.device == "cuda":
            torch.cuda.set_device(local)
        dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        if args.batch % self.world:
            raise SystemExit("train_pytorch.py: --batch %d is not divisible by %d processes"
                             % (args.batch, self.world))

    def wrap(self, net, device):
        if not self.on:
            return net
        from torch.nn.parallel import DistributedDataParallel
        ids = [device.index] if device.type == "cuda" else None
        return DistributedDataParallel(net, device_ids=ids, gradient_as_bucket_view=True)

    def shard(self, order):
        """Positions rank, rank + W, ... of the global order, in whole rounds."""
        if not self.on:
            return order
        rounds = order.shape[0] // self.world
        return order[self.rank:rounds * self.world:self.world]

    def sum(self, t):
        if self.on:
            self.dist.all_reduce(t)
        return t


def train(args):
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("train_pytorch.py: --device cuda but torch.cuda.is_available() is False")
    set_backend_flags(args.precision)
    if args.threads:
        torch.set_num_threads(args.threads)
    dist = Dist(args)
    device = torch.device(args.device, int(os.environ.get("LOCAL_RANK", "0"))) \
        if cuda and args.ddp else torch.device(args.device)
    train_px, train_y = idx_data.read_split(args.data, "train")
    test_px, test_y = idx_data.read_split(args.data, "test")
    if train_px.shape[1:] != (1, 28, 28) or test_px.shape[1:] != (1, 28, 28):
        raise SystemExit("train_pytorch.py: %s: images must be 1x28x28, got %s / %s"
                         % (args.data, train_px.shape[1:], test_px.shape[1:]))
    memory = torch.channels_last if args.channels_last else torch.contiguous_format
    xs = torch.from_numpy(idx_data.normalize(pipeline(train_px, args))).to(device)
    xs = xs.contiguous(memory_format=memory)
    ys = torch.from_numpy(train_y.astype("int64")).to(device)
    xt = torch.from_numpy(idx_data.normalize(pipeline(test_px, args))).to(device)
    xt = xt.contiguous(memory_format=memory)
    yt = torch.from_numpy(test_y.astype("int64")).to(device)
    count = xs.shape[0]
    steps = count // args.batch  # the last partial batch is dropped
    if args.max_steps:
        steps = min(steps, args.max_steps)
    if steps < 1:
        raise SystemExit("train_pytorch.py: %d training images make no batch of %d"
                         % (count, args.batch))

    local = args.batch // dist.world
    net = make_net(args).to(device, memory_format=memory).train()
    if args.no_dropout:  # as zoc's --no-dropout: dropout layers become the identity
        for m in net.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
    model = dist.wrap(net, device)
    if args.compile != "none":
        model = torch.compile(model, mode=args.compile)
    scaler = grad_scaler(args)
    compile_s = None
    if args.optimizer == "adamw":  # PyTorch's defaults but where given (the zoc trainer's too)
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=tuple(args.betas),
                                eps=args.eps, weight_decay=args.weight_decay)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                              dampening=0.0, weight_decay=args.weight_decay, nesterov=False)
    torch.manual_seed(args.seed)  # dropout masks: the same stream as LibTorch's torch::manual_seed
    timer = StepTimer(cuda)
    csv = open(args.csv, "w") if args.csv and dist.rank == 0 else None
    if csv:
        csv.write(",".join(CSV_FIELDS) + "\n")
    for epoch in range(args.epochs):
        order = dist.shard(torch.tensor(mt19937_64.shuffled_order(count, args.seed, epoch),
                                        dtype=torch.int64)).to(device)
        loss_sum = torch.zeros((), dtype=torch.float32, device=device)
        correct = torch.zeros((), dtype=torch.int64, device=device)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        for step in range(steps):
            lr = learning_rate(args.schedule, args.lr, epoch, args.epochs, step, steps)
            for group in opt.param_groups:
                group["lr"] = lr
            first = compile_s is None
            if first and cuda:
                torch.cuda.synchronize()
            wall = time.perf_counter()
            timer.start()
            idx = order[step * local:(step + 1) * local]
            x, y = xs.index_select(0, idx), ys.index_select(0, idx)
            with autocast(args):
                logits = model(x)
                loss = F.cross_entropy(logits, y, label_smoothing=args.label_smoothing)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            loss_sum += loss.detach().float()
            correct += (logits.detach().float().argmax(1) == y).sum()
            timer.stop()
            if step == 0 and cuda:  # the first step's peak: cuDNN's algorithm search, compiling
                torch.cuda.synchronize()
                first_peak_mb = peak_mem_mb(cuda)
                torch.cuda.reset_peak_memory_stats()
            if first:  # the first step's wall time: compilation (torch.compile) and warm-up
                compile_s = time.perf_counter() - wall
        if cuda:
            torch.cuda.synchronize()
        epoch_s = time.perf_counter() - t0
        step_ms, steady_mb = timer.median_ms(), peak_mem_mb(cuda)  # before the evaluation
        peak_mb = max(first_peak_mb, steady_mb) if cuda else steady_mb
        loss_sum, correct = dist.sum(loss_sum), dist.sum(correct)
        if dist.rank != 0:
            continue
        impl = IMPL_DDP if args.ddp else IMPL_COMPILE.get(args.compile, IMPL)
        row = {"impl": impl, "model": args.model,
               "dataset": args.dataset, "seed": args.seed, "epoch": epoch + 1,
               "train_loss": float(loss_sum) / (steps * dist.world),
               "train_acc": int(correct) / (steps * args.batch),
               "test_acc": evaluate(net, xt, yt, args.eval_batch, args), "step_ms": step_ms,
               "epoch_s": epoch_s, "peak_mem_mb": peak_mb, "world_size": dist.world,
               "img_per_s": 1000.0 * args.batch / step_ms}
        if csv:
            csv.write(format_row(row) + "\n")
            csv.flush()
        # The resident data sets (normalized, on the device) are part of the allocator's peak;
        # model_peak_mb is the peak of the steps after the first (whose algorithm search and
        # compilation are transient) without them: zoc's trainer_mem_mb's counterpart.
        data_mb = sum(t.numel() * t.element_size() for t in (xs, ys, xt, yt)) / 2**20
        print(json.dumps(dict(row, steps=steps, lr_last=lr, device=args.device,
                              precision=args.precision, channels_last=args.channels_last,
                              first_step_s=compile_s, data_mb=data_mb,
                              model_peak_mb=steady_mb - data_mb)), flush=True)
    if csv:
        csv.close()
    if args.save_weights and dist.rank == 0:
        nets.save(net.cpu(), args.save_weights, {"impl": IMPL, "model": args.model,
                                                 "seed": args.seed, "epochs": args.epochs})


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=nets.MODELS)
    p.add_argument("--data", help="folder of the four idx files (raw or .gz)")
    p.add_argument("--dataset", default="fashion-mnist", help="name written to the CSV")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float,
                   help="base learning rate (default: lenet 0.05, resnet50 0.1)")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float,
                   help="default: 5e-4 for SGD, 1e-2 (torch.optim.AdamW's) for AdamW")
    p.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.999), help="AdamW's")
    p.add_argument("--eps", type=float, default=1e-8, help="AdamW's")
    p.add_argument("--label-smoothing", type=float, default=0.0,
                   help="cross_entropy's label_smoothing (the zoc trainer's --label-smoothing)")
    p.add_argument("--schedule", choices=("cosine", "step", "constant"), default="cosine")
    p.add_argument("--seed", type=int, default=0, help="data order, dropout and (without "
                   "--init-weights) the initial weights")
    p.add_argument("--init", choices=nets.INITS, default="pytorch")
    p.add_argument("--zero-init-residual", action="store_true")
    p.add_argument("--init-weights", help="start from this safetensors file")
    p.add_argument("--init-out", help="write the initial weights to this file and exit")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--csv", help="per-epoch CSV")
    p.add_argument("--save-weights", help="final weights (safetensors, state_dict names)")
    p.add_argument("--max-steps", type=int, default=0, help="steps per epoch (0: all)")
    p.add_argument("--eval-batch", type=int, default=1000)
    p.add_argument("--no-dropout", action="store_true", help="dropout as the identity")
    p.add_argument("--precision", choices=("fp32", "tf32", "bf16", "fp16"), default="fp32",
                   help="fp32 (TF32 off), tf32, or autocast bf16/fp16 (fp16 with GradScaler)")
    p.add_argument("--channels-last", action="store_true", help="model and inputs NHWC")
    p.add_argument("--compile", choices=("none",) + tuple(IMPL_COMPILE), default="none",
                   help="torch.compile mode (reduce-overhead and max-autotune: CUDA graphs)")
    p.add_argument("--resize", type=int, default=0, help="images resized to S x S (bilinear)")
    p.add_argument("--channels", type=int, default=0,
                   help="one-channel images replicated to C channels")
    p.add_argument("--script-out", help="write the model (initial weights) as TorchScript, exit")
    p.add_argument("--ddp", action="store_true",
                   help="DistributedDataParallel, one process per GPU (launch with torchrun)")
    args = p.parse_args(argv)
    if args.lr is None:
        args.lr = 1e-3 if args.optimizer == "adamw" else DEFAULT_LR[args.model]
    if args.weight_decay is None:
        args.weight_decay = 1e-2 if args.optimizer == "adamw" else 5e-4
    for flag in ("epochs", "batch", "eval_batch"):
        if getattr(args, flag) < 1:
            p.error("--%s must be >= 1" % flag.replace("_", "-"))
    if args.seed < 0 or args.max_steps < 0 or args.threads < 0:
        p.error("--seed, --max-steps and --threads must be >= 0")
    if args.init_out is None and args.script_out is None and not args.data:
        p.error("--data is required (unless --init-out or --script-out)")
    if not 0 <= args.resize <= 4096 or not 0 <= args.channels <= 16:
        p.error("--resize must be in 1..4096 and --channels in 1..16")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.script_out:  # zoc compiles this file (its weights are replaced by --weights)
            torch.jit.script(make_net(args).eval()).save(args.script_out)
            print("script: %s -> %s" % (args.model, args.script_out))
            return
        if args.init_out:
            net = make_net(args)
            nets.save(net, args.init_out, {"model": args.model, "seed": args.seed,
                                           "init": args.init,
                                           "zero_init_residual": int(args.zero_init_residual),
                                           "torch": torch.__version__})
            print("init: %s seed %d (%s%s) -> %s" % (args.model, args.seed, args.init,
                  ", zero-init-residual" if args.zero_init_residual else "", args.init_out))
            return
        train(args)
    except (idx_data.DataError, ValueError) as e:
        raise SystemExit("train_pytorch.py: error: %s" % e)


if __name__ == "__main__":
    main()
