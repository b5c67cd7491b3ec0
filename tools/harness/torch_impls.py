#!/usr/bin/env python3
"""The PyTorch rows of the benchmark harness, measured in Python.

zoc's claim is measured against what a PyTorch user would run: eager mode, frozen TorchScript
(plain and optimize_for_inference'd, with and without a CUDA graph) and torch.compile, each in a
stated precision, TF32 setting and memory layout, up to the strongest configurations. This
script runs the variants bench.py hands it (a plan file, see plan.py) on the same
weights.safetensors and the same seeded input as every other implementation, and for each
batch size records the per-iteration CUDA-event times after warm-up, the host CPU time inside
each forward call, the allocator's peak memory, the input copy from pageable and pinned memory,
the first output rows (judged later against the fp32 reference), and for torch.compile the
compile time. cuDNN autotuning is on for every row (the frameworks' best case). An
out-of-memory error gives an "oom" record and ends that variant's batch sweep; the plan's
deadline turns the remaining points into "skipped" records. Records are appended to a JSON-lines
file as they are made, so a run cut short keeps what it measured.

Runs on torch 2.x with CUDA (the GPU machine) and, for a dry run of the plumbing, on Debian's
CPU torch 1.13 (--device cpu in the plan: CPU timing, no CUDA graph, torch.compile skipped).

Usage: torch_impls.py PLAN.json   (written by bench.py)
"""

import argparse
import contextlib
import gc
import os
import sys
import time
import traceback
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, HERE)
import common  # noqa: E402
import export  # noqa: E402  (models/export.py: the same network definitions)
import safetensors_io  # noqa: E402
import zoo  # noqa: E402  (models/zoo.py: the zoo's torchvision networks)

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
          "bf16": torch.bfloat16}
COMPILE_MIN_LEFT_S = 60  # do not start a torch.compile with less time than this left


def is_oom(e):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom_type is not None and isinstance(e, oom_type)) or "out of memory" in str(e)


@contextlib.contextmanager
def quiet_jit():
    """torch >= 2.10 deprecates torch.jit; the rows are measured anyway (the study used it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        yield


def set_flags(v):
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = bool(v["tf32"])
    torch.backends.cuda.matmul.allow_tf32 = bool(v["tf32"])


def build_model(g, v, device):
    """The network of group g with the file's weights, in v's precision and layout. A zoo
    network (a segmentation network of the seg sweep too) is built bare (zoo.build):
    export.build_model would also calibrate its BatchNorm statistics on a forward pass, which the
    file's weights then replace anyway."""
    if g["model"] in export.ZOO:
        model = zoo.build(g["model"], 0)
    else:
        kind = "lenet" if g["model"] == "lenet" else "resnet"
        classes, channels, _ = export.DEFAULTS[kind]
        spec = argparse.Namespace(model=g["model"], in_channels=channels, num_classes=classes,
                                  resolution=g["resolution"])
        model = export.build_model(spec, 0)
    tensors, _ = safetensors_io.load_file(g["weights"])
    model.load_state_dict({k: torch.from_numpy(a) for k, a in tensors.items()}, strict=True)
    model = model.to(device).eval()
    if DTYPES[v["precision"]] != torch.float32:
        model = model.to(DTYPES[v["precision"]])
    if v["layout"] == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    return model


class Eager:
    def __init__(self, model, v, device):
        self.model = model

    def setup(self, x):
        return lambda: self.model(x), {}


class Frozen:
    """Frozen TorchScript, optionally passed through torch.jit.optimize_for_inference (PyTorch's
    documented deployment step: BN folded, and on CUDA conv + add + ReLU rewritten into cuDNN's
    fused kernels), and optionally replayed from a CUDA graph captured per batch size."""

    def __init__(self, model, v, device):
        t0 = time.time()
        with quiet_jit(), torch.no_grad():
            self.frozen = torch.jit.freeze(torch.jit.script(model))
            if v.get("optimize"):
                self.frozen = torch.jit.optimize_for_inference(self.frozen)
        self.setup_s = time.time() - t0
        # What the passes made of the graph, for the record (e.g. 16 cudnn_convolution_add_relu).
        kinds = {}
        for node in self.frozen.graph.nodes():
            kinds[node.kind()] = kinds.get(node.kind(), 0) + 1
        self.graph_ops = ", ".join("%d %s" % (n, k.split("::")[-1]) for k, n in sorted(kinds.items())
                                   if k.startswith("aten::") and ("conv" in k or "relu" in k))
        self.graph = v["graph"] and device == "cuda"
        self.note = "cpu: no CUDA graph" if v["graph"] and device != "cuda" else None

    def setup(self, x):
        info = {"setup_s": self.setup_s, "graph_ops": self.graph_ops}
        if self.note:
            info["note"] = self.note
        if not self.graph:
            return lambda: self.frozen(x), info
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # the profiling executor and cuDNN autotuning settle here
            for _ in range(5):
                self.frozen(x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = self.frozen(x)

        def replay():
            graph.replay()
            return y
        return replay, info


class Compiled:
    """torch.compile, compiled afresh for each batch size (dynamic=False); compile time timed."""

    def __init__(self, model, v, device):
        if not hasattr(torch, "compile"):
            raise Skip("torch.compile needs torch >= 2.0 (this is %s)" % torch.__version__)
        if device != "cuda":
            raise Skip("torch.compile rows are measured on the GPU only")
        self.model, self.mode = model, v.get("compile_mode", "default")

    def setup(self, x):
        import torch._dynamo  # noqa: F401  (not imported by `import torch` on every version)
        torch._dynamo.reset()
        mode = None if self.mode == "default" else self.mode
        compiled = torch.compile(self.model, mode=mode, dynamic=False)
        mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)

        def run():
            if mark is not None and self.mode != "default":
                mark()  # inductor's CUDA graphs: each call is a new step
            return compiled(x)
        t0 = time.time()
        run()
        torch.cuda.synchronize()
        return run, {"compile_s": time.time() - t0}


class Skip(Exception):
    pass


RUNNERS = {"eager": Eager, "torchscript": Frozen, "compile": Compiled}


def time_forward(fn, cuda, t):
    """Warm-up, then CUDA events around each forward (bench_common.h and zoc do the same)."""
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    w0 = time.perf_counter()
    for i in range(t["warmup"]):
        fn()
        sync()
        if t["max_time_ms"] and i >= 2 and (time.perf_counter() - w0) * 2000 >= t["max_time_ms"]:
            break
    if cuda:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms, cpu_us, wall_us, total = [], [], [], 0.0
    t_start = time.time()
    for i in range(t["iters"]):
        if t["max_time_ms"] and i >= min(t["iters"], 5) and total >= t["max_time_ms"]:
            break
        if cuda:
            start.record()
        c0, w = time.thread_time(), time.perf_counter()
        fn()
        c1, w1 = time.thread_time(), time.perf_counter()
        if cuda:
            stop.record()
            stop.synchronize()
            ms.append(start.elapsed_time(stop))
        else:
            ms.append((w1 - w) * 1000.0)
        cpu_us.append((c1 - c0) * 1e6)
        wall_us.append((w1 - w) * 1e6)
        total += ms[-1]
    return ms, cpu_us, wall_us, t_start, time.time()


def time_h2d(x_host, reps):
    """Median ms of copying the fp32 batch to the GPU from pageable and from pinned memory."""
    pinned = x_host.pin_memory()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = {"pageable": [], "pinned": []}
    for i in range(reps + 1):  # the first of each is untimed
        for kind, src in (("pageable", x_host), ("pinned", pinned)):
            start.record()
            src.to("cuda", non_blocking=kind == "pinned")
            stop.record()
            stop.synchronize()
            if i > 0:
                times[kind].append(start.elapsed_time(stop))
    return {"bytes": x_host.numel() * x_host.element_size(), "reps": reps,
            "pageable_ms": float(np.median(times["pageable"])),
            "pinned_ms": float(np.median(times["pinned"]))}


def measure_point(runner, v, g, batch, samples, plan, rec):
    device, t = plan["device"], plan["timing"]
    cuda = device == "cuda"
    x_host = torch.from_numpy(common.tile_samples(samples, batch))
    x = x_host.to(device).to(DTYPES[v["precision"]])
    if v["layout"] == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    fn, info = runner.setup(x)
    rec.update(info)
    y = zoo.main_output(fn())  # a segmentation network's {"out": map}: the map
    rows = min(batch, samples.shape[0])
    out = y[:rows].float().cpu().numpy()
    path = os.path.join(plan["outputs"], "%s_%s_r%d_b%d.npy" % (v["name"], g["model"],
                                                                 g["resolution"], batch))
    np.save(path, out)
    rec["output_npy"] = path
    del y
    ms, cpu_us, wall_us, t_start, t_end = time_forward(fn, cuda, t)
    common.fill_timing(rec, ms, cpu_us, wall_us)
    rec.update(t_start=t_start, t_end=t_end, status="ok")
    if cuda:
        rec["torch_alloc_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
        rec["torch_reserved_peak_mb"] = torch.cuda.max_memory_reserved() / 2**20
        if t.get("h2d_reps"):
            common.fill_h2d(rec, time_h2d(x_host, t["h2d_reps"]))


def run_variant(plan, v, groups):
    device = plan["device"]
    set_flags(v)
    cls = RUNNERS[v["kind"]]
    runners = {}  # ResNet-50 serves every resolution (its weights files are byte-identical;
    for g in groups:  # LeNet's fc1 and the zoo's calibrated BatchNorm depend on it)
        samples = np.load(g["input"])
        key = (g["model"], None if g["model"] == "resnet50" else g["resolution"])
        runner, setup_error = runners.get(key), None
        left = plan["deadline"] - time.time()
        if v["kind"] == "compile" and left < COMPILE_MIN_LEFT_S:
            setup_error = ("skipped", "not started: %.0fs left, torch.compile needs about %ds"
                           % (left, COMPILE_MIN_LEFT_S))
        elif runner is None:
            try:
                runner = runners[key] = cls(build_model(g, v, device), v, device)
            except Skip as e:
                setup_error = ("skipped", str(e))
            except Exception as e:  # noqa: BLE001 - recorded as an error row
                setup_error = ("oom" if is_oom(e) else "error", common.describe(e))
                print(traceback.format_exc(limit=6), flush=True)
        stop = None
        for batch in g["batches"]:
            rec = common.new_record(v, g, batch, plan["step"])
            rec["t_point_start"] = time.time()
            if setup_error or stop:
                status, why = setup_error or stop
                rec.update(status=status, error=why)
            elif plan["deadline"] - time.time() < (COMPILE_MIN_LEFT_S if v["kind"] == "compile"
                                                   else 0):
                rec.update(status="skipped", error="time budget")
            else:
                try:
                    with torch.no_grad():
                        measure_point(runner, v, g, batch, samples, plan, rec)
                except Exception as e:  # noqa: BLE001
                    rec.update(status="oom" if is_oom(e) else "error", error=common.describe(e))
                    print(traceback.format_exc(limit=6), flush=True)
                    stop = ("skipped", "after %s at batch %d" % (rec["status"], batch))
            common.emit_record(plan, rec)
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
    runners.clear()
    gc.collect()


def main(argv=None):
    plan = common.load_plan(__doc__.split("\n\n")[0], argv)
    if plan["device"] == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_impls.py: the plan asks for cuda but torch sees no GPU")
    print("torch %s on %s: %d variants" % (torch.__version__, plan["device"], len(plan["runs"])),
          flush=True)
    for run in plan["runs"]:
        run_variant(plan, run["variant"], run["groups"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
